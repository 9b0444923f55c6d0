//! The `apiextensions.k8s.io/v1` CustomResourceDefinition resource: objects held as
//! [`CustomObject`]s, defaulted as kube-apiserver defaults v1 CRDs, checked as it checks them on
//! a write (apfkit-crd), stored as JSON under
//! `<prefix>/apiextensions.k8s.io/customresourcedefinitions/<name>`.

use std::sync::Arc;

use apfkit_apiserver::error::Cause;
use apfkit_apiserver::store::{
    Propagation, ResourceConfig, ResourceError, Served, SharedVersion, Strategy,
};
use apfkit_crd::{CustomResourceDefinition, DefinitionError};
use apfkit_runtime::identity::GroupVersion;
use apfkit_runtime::scheme::StorageEncoding;
use serde_json::{Map, Value, json};

use crate::json_kind::JsonVersion;
use crate::object::{CustomObject, ServedObject, not_this_kind};

/// The group of CustomResourceDefinitions.
pub const GROUP: &str = "apiextensions.k8s.io";
/// Their kind.
pub const KIND: &str = "CustomResourceDefinition";
/// Their one served version.
pub const VERSION: &str = "v1";
/// The served group-version.
pub const GROUP_VERSION: GroupVersion = GroupVersion::from_static(GROUP, VERSION);
/// Their resource.
pub const PLURAL: &str = "customresourcedefinitions";

/// The finalizer apiextensions-apiserver puts on a CRD when it is first deleted, and removes
/// once the CRD's custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Sets the condition `kind` of a CRD's `status` as apiextensions' `SetCRDCondition` does:
/// the one of that type replaced (its transition time kept when its status is the same),
/// or a new one appended.
pub(crate) fn set_condition(
    status: &mut Value,
    kind: &str,
    state: &str,
    reason: &str,
    message: &str,
) {
    if !status.is_object() {
        *status = json!({});
    }
    let Some(object) = status.as_object_mut() else {
        return;
    };
    let conditions = object.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let now = serde_json::to_value(apfkit_apiserver::store::now()).unwrap_or(Value::Null);
    let mut wanted = json!({
        "type": kind,
        "status": state,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    });
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
    {
        Some(existing) => {
            if existing.get("status").and_then(Value::as_str) == Some(state) {
                wanted["lastTransitionTime"] = existing
                    .get("lastTransitionTime")
                    .cloned()
                    .unwrap_or(Value::Null);
            }
            *existing = wanted;
        }
        None => list.push(wanted),
    }
}

/// The name of a CRD spec's storage version (the one version with `storage: true`).
pub(crate) fn storage_version(spec: &Value) -> Option<&Value> {
    spec.get("versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))?
        .get("name")
}

/// The CustomResourceDefinition resource, served in a server of [`ServedObject`]s.
///
/// # Errors
///
/// None in practice: its one version is its storage version.
pub fn resource<H: Send + Sync + 'static>() -> Result<Served<ServedObject<H>>, ResourceError> {
    // A built-in type: strategic merge patch applies (no field of the CRD's types has a
    // patch strategy, so it merges as a JSON merge patch but for ObjectMeta's lists).
    let config = ResourceConfig::builtin(GROUP_VERSION.with_kind(KIND), PLURAL, false)
        .with_short_names(["crd", "crds"])
        .with_categories(["api-extensions"])
        .with_status(true)
        .stored_at(format!("{GROUP}/{PLURAL}"), StorageEncoding::Json)
        .with_kube_openapi();
    let versions = vec![Arc::new(DEFINITION_VERSION) as SharedVersion<ServedObject<H>>];
    Ok(
        Served::with_versions(config, PLURAL.to_owned(), versions)?.with_strategy(
            DefinitionStrategy {
                printer: crate::printer::definitions_printer(),
            },
        ),
    )
}

/// `apiextensions.k8s.io/v1` CustomResourceDefinition, defaulted as kube-apiserver
/// defaults it, in the shape Go gives it decoded and stored (`preserveUnknownFields: false`
/// left out, as its `omitempty` says); its unknown fields are not reported (apfkit-crd's
/// checks name them).
const DEFINITION_VERSION: JsonVersion =
    JsonVersion::new(GROUP, VERSION, KIND, PLURAL, |mut object, _, _| {
        apply_defaults(&mut object);
        apfkit_apiserver::go_shape::as_decoded(&mut object);
        Ok(object)
    })
    .stored_as_kube_stores_it()
    .with_zero(zero)
    .with_protobuf(
        |object| {
            crate::protobuf::write(object)
                .unwrap_or_else(|| Err("not a CustomResourceDefinition".to_owned()))
        },
        crate::protobuf::read_stored,
    );

/// A new CRD as Go writes it: `spec`, its `names`, `status` and its `acceptedNames` are
/// structs, and their fields without `omitempty` are there empty.
fn zero() -> Value {
    json!({
        "spec": {"group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": null},
        "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null},
    })
}

/// kube-apiserver's defaults of a v1 CRD (`SetDefaults_CustomResourceDefinitionSpec`,
/// `SetDefaults_CustomResourceConversion` and `SetDefaults_ServiceReference`): the singular
/// and list kind from the kind, `None` conversion, port 443 for a webhook's service.
pub fn apply_defaults(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let empty = |names: &Map<String, Value>, field: &str| {
            names
                .get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        };
        if empty(names, "singular") {
            names.insert("singular".into(), kind.to_lowercase().into());
        }
        if empty(names, "listKind") && !kind.is_empty() {
            names.insert("listKind".into(), format!("{kind}List").into());
        }
    }
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    if let Value::Object(conversion) = conversion
        && conversion.get("strategy").is_none_or(Value::is_null)
    {
        conversion.insert("strategy".into(), "None".into());
    }
    // `SetDefaults_ServiceReference`: a webhook's service is called on 443 unless it says.
    if let Some(service) = conversion
        .pointer_mut("/webhook/clientConfig/service")
        .and_then(Value::as_object_mut)
        && service.get("port").is_none_or(Value::is_null)
    {
        service.insert("port".into(), 443.into());
    }
}

/// A CRD as the server serves it: read and compiled, checked as kube-apiserver checks it.
///
/// # Errors
///
/// The checks' errors, field by field.
pub fn compile(object: &CustomObject) -> Result<CustomResourceDefinition, DefinitionError> {
    CustomResourceDefinition::from_value(&object.to_value())
}

/// apiextensions-apiserver's strategy for CRDs (`pkg/registry/customresourcedefinition/
/// strategy.go`): a CRD is checked as a whole ([`apfkit_crd`]), and its
/// `status.storedVersions` written with it: a new CRD's is its storage version, and an update
/// that makes another version the storage version adds that one, at once, as the write is
/// stored (the controller writes the rest of the status after).
#[derive(Debug, Clone)]
struct DefinitionStrategy {
    /// apiextensions-apiserver's columns of CRDs.
    printer: apfkit_apiserver::table::Printer,
}

impl DefinitionStrategy {
    /// The storage version of the CRD about to be stored added to its stored versions: the
    /// only one on a create (`PrepareForCreate`), added to the list on an update
    /// (`PrepareForUpdate`).
    fn record_storage_version(stored: &mut Value, created: bool) {
        let storage = stored.get("spec").and_then(storage_version).cloned();
        let (Some(storage), Some(object)) = (storage, stored.as_object_mut()) else {
            return;
        };
        let status = object
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(status) = status.as_object_mut() else {
            return;
        };
        if created {
            status.insert("storedVersions".to_owned(), json!([storage]));
            return;
        }
        let stored_versions = status.entry("storedVersions").or_insert_with(|| json!([]));
        if let Some(list) = stored_versions.as_array_mut()
            && !list.contains(&storage)
        {
            list.push(storage);
        }
    }
}

impl<H> Strategy<ServedObject<H>> for DefinitionStrategy {
    fn prepare_for_create(&self, stored: &mut Value) {
        Self::record_storage_version(stored, true);
        // A new CRD's status as Go writes it before any controller: no conditions, empty
        // accepted names.
        if let Some(status) = stored.get_mut("status").and_then(Value::as_object_mut) {
            status
                .entry("acceptedNames")
                .or_insert_with(|| json!({"plural": "", "kind": ""}));
            status.entry("conditions").or_insert(Value::Null);
        }
    }
    fn prepare_for_update(&self, stored: &mut Value, _old: &Value) {
        Self::record_storage_version(stored, false);
    }
    fn allows_unconditional_update(&self) -> bool {
        false
    }
    fn printer(&self) -> Option<&apfkit_apiserver::table::Printer> {
        Some(&self.printer)
    }
    /// apiextensions-apiserver's `REST.Delete`: a CRD's first delete adds the cleanup
    /// finalizer and the `Terminating` condition; its custom resources are deleted next
    /// (the controller's finalizer), and the CRD once they are gone. What the delete asks for
    /// dependents is not looked at on this first delete, as there.
    fn prepare_for_first_delete(&self, stored: &mut Value, _propagation: Propagation) -> bool {
        let Some(object) = stored.as_object_mut() else {
            return false;
        };
        let metadata = object.entry("metadata").or_insert_with(|| json!({}));
        if let Some(metadata) = metadata.as_object_mut() {
            let finalizers = metadata.entry("finalizers").or_insert_with(|| json!([]));
            if let Some(list) = finalizers.as_array_mut()
                && !list.iter().any(|f| f == CLEANUP_FINALIZER)
            {
                list.push(json!(CLEANUP_FINALIZER));
            }
        }
        let status = object.entry("status").or_insert_with(|| json!({}));
        set_condition(
            status,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        );
        true
    }
    fn validate(
        &self,
        object: &ServedObject<H>,
        _old: Option<&ServedObject<H>>,
        _api_version: &str,
    ) -> Vec<Cause> {
        let ServedObject::Custom(object) = object else {
            return vec![Cause {
                reason: "FieldValueInvalid".to_owned(),
                message: not_this_kind(KIND).to_string(),
                field: String::new(),
            }];
        };
        match compile(object) {
            Ok(_) => Vec::new(),
            Err(DefinitionError::Invalid { errors, .. }) => {
                errors.iter().map(Cause::from).collect()
            }
            Err(DefinitionError::Malformed(message)) => vec![Cause {
                reason: "FieldValueInvalid".to_owned(),
                message,
                field: String::new(),
            }],
        }
    }
}
