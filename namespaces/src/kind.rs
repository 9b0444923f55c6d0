//! core/v1 Namespaces as kube-apiserver serves them: read as their generated type reads
//! them (`apfkit_types::builtin`), defaulted as `SetDefaults_Namespace` and
//! `SetDefaults_NamespaceStatus` default them (`pkg/apis/core/v1/defaults.go`), prepared as `namespaceStrategy` prepares them and
//! deleted as the namespace `REST.Delete` deletes them (`pkg/registry/core/namespace`),
//! checked as `ValidateNamespace` checks them, and printed with `kubectl get namespaces`'
//! columns.

use std::borrow::Cow;

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::error::Cause;
use apfkit_apiserver::store::{Propagation, Strategy};
use apfkit_apiserver::table::{
    Column, Printer, age, column, creation_column, name_cell, name_column, now_seconds,
};
use apfkit_runtime::field::{BadValue, FieldError, Path, names};
use apfkit_runtime::scheme::{SchemeError, UnknownFields, Warning};
use apfkit_types::builtin::core::v1::Namespace;
use serde_json::{Value, json};

/// The finalizer of the namespace controller (`FinalizerKubernetes`), which every namespace
/// gets at create.
pub(crate) const FINALIZER: &str = "kubernetes";
/// The label every namespace carries with its name (`LabelMetadataName`).
const NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// The finalizers a name without a `/` may be (`standardFinalizers`).
const STANDARD_FINALIZERS: &[&str] = &[FINALIZER, "orphan", "foregroundDeletion"];
/// The namespaces kube-apiserver's `NamespaceLifecycle` admission never lets go.
const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];
/// A namespace's phase while it may hold objects.
pub(crate) const ACTIVE: &str = "Active";
/// A namespace's phase once deleted, until its content is gone.
pub(crate) const TERMINATING: &str = "Terminating";

/// A new Namespace as Go writes it: `spec` and `status` are structs.
pub(crate) fn zero() -> Value {
    json!({"spec": {}, "status": {}})
}

/// A Namespace read as kube-apiserver reads it: as k8s-openapi's type, defaulted (the name
/// label when it has a name, the phase `Active` when it has none), in the shape Go gives it
/// (empty lists left out: `omitempty`).
pub(crate) fn normalize(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    let mut kept = apfkit_apiextensions::json_kind::typed::<Namespace>(object, unknown, warnings)?;
    label_with_name(&mut kept);
    let status = kept
        .as_object_mut()
        .map(|fields| fields.entry("status").or_insert_with(|| json!({})));
    if let Some(status) = status.and_then(Value::as_object_mut) {
        status.entry("phase").or_insert_with(|| Value::from(ACTIVE));
    }
    apfkit_apiserver::go_shape::as_decoded(&mut kept);
    Ok(kept)
}

/// `SetDefaults_Namespace` and the strategy's `Canonicalize`: the label
/// `kubernetes.io/metadata.name` set to the name, when there is one.
fn label_with_name(namespace: &mut Value) {
    let Some(name) = namespace
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
    else {
        return;
    };
    let Some(metadata) = namespace.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let labels = metadata.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels[NAME_LABEL] = name.into();
}

/// The namespace's `spec.finalizers`.
pub(crate) fn finalizers(namespace: &Value) -> Vec<&str> {
    namespace
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The strategy of Namespaces.
pub(crate) struct NamespaceStrategy {
    pub(crate) printer: Printer,
}

impl<H> Strategy<ServedObject<H>> for NamespaceStrategy {
    /// `PrepareForCreate`: phase `Active`, the `kubernetes` finalizer added; `Canonicalize`.
    fn prepare_for_create(&self, stored: &mut Value) {
        stored["status"] = json!({"phase": ACTIVE});
        if !finalizers(stored).contains(&FINALIZER) {
            let spec = &mut stored["spec"];
            if !spec.is_object() {
                *spec = json!({});
            }
            match spec.get_mut("finalizers").and_then(Value::as_array_mut) {
                Some(list) => list.push(FINALIZER.into()),
                None => spec["finalizers"] = json!([FINALIZER]),
            }
        }
        label_with_name(stored);
    }

    /// `PrepareForUpdate`: the finalizers and the status stay as stored (only `/finalize`
    /// changes the finalizers, only `/status` the status); `Canonicalize`.
    fn prepare_for_update(&self, stored: &mut Value, old: &Value) {
        match old.pointer("/spec/finalizers") {
            Some(kept) => stored["spec"]["finalizers"] = kept.clone(),
            None => {
                if let Some(spec) = stored.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("finalizers");
                }
            }
        }
        label_with_name(stored);
    }

    /// `REST.Delete`'s first delete: the phase `Terminating` and the garbage collector's
    /// finalizers by the namespace storage's own rules; the namespace is kept, marked with
    /// `deletionTimestamp`, until the namespace controller has emptied and finalized it.
    fn prepare_for_first_delete(&self, stored: &mut Value, propagation: Propagation) -> bool {
        if !stored.get("status").is_some_and(Value::is_object) {
            stored["status"] = json!({});
        }
        stored["status"]["phase"] = TERMINATING.into();
        let finalizers: Vec<String> = stored
            .pointer("/metadata/finalizers")
            .and_then(|f| serde_json::from_value(f.clone()).ok())
            .unwrap_or_default();
        if let Some(wanted) = propagation.namespace_finalizers(&finalizers)
            && let Some(metadata) = stored.get_mut("metadata").and_then(Value::as_object_mut)
        {
            if wanted.is_empty() {
                metadata.remove("finalizers");
            } else {
                metadata.insert("finalizers".into(), json!(wanted));
            }
        }
        true
    }

    fn finalizing(&self, stored: &Value) -> bool {
        !finalizers(stored).is_empty()
    }

    /// `namespaceStatusStrategy` resets only the spec: a write to `/status` keeps what it
    /// changes of labels and annotations.
    fn status_writes_metadata(&self) -> bool {
        true
    }

    fn refuses_delete(&self, name: &str) -> Option<&str> {
        IMMORTAL
            .contains(&name)
            .then_some("this namespace may not be deleted")
    }

    fn validate(
        &self,
        object: &ServedObject<H>,
        old: Option<&ServedObject<H>>,
        _api_version: &str,
    ) -> Vec<Cause> {
        apfkit_apiextensions::json_kind::json_causes(object, old, validate)
    }

    fn printer(&self) -> Option<&Printer> {
        Some(&self.printer)
    }
}

/// `ValidateNamespace`, and on an update the phase `ValidateNamespaceStatusUpdate` allows
/// (an update of the object or its finalizers keeps the stored status, which held already).
fn validate(namespace: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let text = |pointer: &str| {
        namespace
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let mut errors = names::object_name_of(namespace, names::dns1123_label);
    let path = Path::new("spec").child("finalizers");
    for finalizer in finalizers(namespace) {
        let bad = |message: String| {
            FieldError::invalid(&path, BadValue::Str(finalizer.to_owned()), message)
        };
        errors.extend(names::qualified_name(finalizer).into_iter().map(bad));
        if !finalizer.contains('/') && !STANDARD_FINALIZERS.contains(&finalizer) {
            errors.push(bad(
                "name is neither a standard finalizer name nor is it fully qualified".to_owned(),
            ));
        }
    }
    if old.is_some() {
        let phase = text("/status/phase");
        let (wanted, why) = if namespace.pointer("/metadata/deletionTimestamp").is_some() {
            (
                TERMINATING,
                "may only be 'Terminating' if `deletionTimestamp` is not empty",
            )
        } else {
            (
                ACTIVE,
                "may only be 'Active' if `deletionTimestamp` is empty",
            )
        };
        if phase != wanted {
            errors.push(FieldError::invalid(
                Path::new("status").child("Phase"),
                BadValue::Str(phase.to_owned()),
                why,
            ));
        }
    }
    errors
}

/// `namespaceColumnDefinitions`.
fn columns() -> Vec<Column> {
    vec![
        name_column(),
        column(
            "Status",
            "string",
            0,
            Cow::Borrowed("The status of the namespace"),
        ),
        creation_column("Age", "string"),
    ]
}

/// `printNamespace`'s cells.
fn cells(object: &Value) -> Vec<Value> {
    vec![
        name_cell(object),
        object
            .pointer("/status/phase")
            .cloned()
            .unwrap_or_else(|| "".into()),
        age(object, now_seconds()),
    ]
}

/// The columns of `kubectl get namespaces`.
pub(crate) fn printer() -> Printer {
    Printer::of("v1", columns(), cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(namespace: &Value, old: Option<&Value>) -> Vec<String> {
        validate(namespace, old)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_namespace_is_defaulted_and_prepared_as_kube_apiserver_does_it() {
        let read = normalize(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
            UnknownFields::Strict,
            &mut Vec::new(),
        )
        .unwrap();
        assert_eq!(read["metadata"]["labels"][NAME_LABEL], "team");
        assert_eq!(read["status"]["phase"], ACTIVE);
        // A generated name gets its label when it is prepared.
        let strategy = NamespaceStrategy { printer: printer() };
        let mut made = json!({"metadata": {"name": "team-x2b4k", "labels": {"a": "b"}},
                              "spec": {"finalizers": ["example.com/keep"]},
                              "status": {"phase": "Terminating"}});
        Strategy::<ServedObject<()>>::prepare_for_create(&strategy, &mut made);
        assert_eq!(
            made["spec"]["finalizers"],
            json!(["example.com/keep", "kubernetes"])
        );
        assert_eq!(made["status"], json!({"phase": "Active"}));
        assert_eq!(
            made["metadata"]["labels"],
            json!({"a": "b", NAME_LABEL: "team-x2b4k"})
        );
        // An update keeps the stored finalizers and puts the label back.
        let mut updated = json!({"metadata": {"name": "team-x2b4k"}, "spec": {}});
        Strategy::<ServedObject<()>>::prepare_for_update(&strategy, &mut updated, &made);
        assert_eq!(updated["spec"]["finalizers"], made["spec"]["finalizers"]);
        assert_eq!(updated["metadata"]["labels"][NAME_LABEL], "team-x2b4k");
        // Deleted: terminating, and kept while finalizers are left; the immortal ones stay.
        let orphan = Propagation {
            orphan_dependents: Some(true),
            policy: None,
        };
        assert!(Strategy::<ServedObject<()>>::prepare_for_first_delete(
            &strategy, &mut made, orphan
        ));
        assert_eq!(made["status"]["phase"], TERMINATING);
        assert_eq!(made["metadata"]["finalizers"], json!(["orphan"]));
        let background = Propagation::BACKGROUND;
        Strategy::<ServedObject<()>>::prepare_for_first_delete(&strategy, &mut made, background);
        assert_eq!(made["metadata"].get("finalizers"), None);
        assert!(Strategy::<ServedObject<()>>::finalizing(&strategy, &made));
        assert!(!Strategy::<ServedObject<()>>::finalizing(
            &strategy,
            &json!({"spec": {"finalizers": []}})
        ));
        for name in IMMORTAL {
            assert!(Strategy::<ServedObject<()>>::refuses_delete(&strategy, name).is_some());
        }
        assert!(
            Strategy::<ServedObject<()>>::refuses_delete(&strategy, "kube-node-lease").is_none()
        );
    }

    #[test]
    fn namespaces_are_checked_as_kube_apiserver_checks_them() {
        assert!(messages(&json!({"metadata": {"name": "ok-1"}}), None).is_empty());
        assert_eq!(
            messages(
                &json!({"metadata": {"name": "Not_OK"},
                             "spec": {"finalizers": ["kubernetes", "mine", "a/b/c"]}}),
                None
            ),
            [
                "metadata.name: Invalid value: \"Not_OK\": a lowercase RFC 1123 label must \
                 consist of lower case alphanumeric characters or '-', and must start and end \
                 with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for \
                 validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.finalizers: Invalid value: \"mine\": name is neither a standard \
                 finalizer name nor is it fully qualified",
                "spec.finalizers: Invalid value: \"a/b/c\": a valid label key must consist of \
                 alphanumeric characters, '-', '_' or '.', and must start and end with an \
                 alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex \
                 used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an \
                 optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            ]
        );
        let old = json!({"metadata": {"name": "ns"}});
        assert_eq!(
            messages(
                &json!({"metadata": {"name": "ns"}, "status": {"phase": "Terminating"}}),
                Some(&old)
            ),
            [
                "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if \
              `deletionTimestamp` is empty"
            ]
        );
        assert_eq!(
            messages(
                &json!({"metadata": {"name": "ns", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                        "status": {"phase": "Active"}}),
                Some(&old)
            ),
            [
                "status.Phase: Invalid value: \"Active\": may only be 'Terminating' if \
              `deletionTimestamp` is not empty"
            ]
        );
    }

    #[test]
    fn kubectl_get_namespaces_columns() {
        let cells = cells(&json!({"metadata": {"name": "team"}, "status": {"phase": "Active"}}));
        assert_eq!(cells[..2], [json!("team"), json!("Active")]);
        assert_eq!(printer().columns.len(), 3);
    }
}
