//! StorageVersionMigrations as kube-apiserver 1.37 serves them: read as its Go types read
//! them (`k8s.io/api/storagemigration/v1`), prepared and checked as its strategy and
//! `pkg/apis/storagemigration/validation` prepare and check them, and printed with
//! `printStorageVersionMigration`'s columns.

use std::borrow::Cow;

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::error::Cause;
use apfkit_apiserver::store::Strategy;
use apfkit_apiserver::table::{Column, OBJECT_META, Printer, column, field_doc, name_cell};
use apfkit_runtime::field::{BadValue, FieldError, names};
use apfkit_runtime::scheme::{SchemeError, UnknownFields, Warning};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::conditions::{FAILED, RUNNING, SUCCEEDED};

/// `StorageVersionMigration` as Go's decoder reads it: what a request's JSON keeps.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Migration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<ObjectMeta>,
    #[serde(default)]
    spec: Option<Spec>,
    #[serde(default)]
    status: Option<Status>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Spec {
    #[serde(default)]
    resource: Option<GroupResource>,
}

/// `metav1.GroupResource` (k8s-openapi has it only from its `v1_34` types).
#[derive(Debug, Default, Serialize, Deserialize)]
struct GroupResource {
    #[serde(default)]
    group: String,
    #[serde(default)]
    resource: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    conditions: Option<Vec<Condition>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource_version: Option<String>,
}

/// `metav1.Condition` with every field as given (a missing time is Go's zero time, which
/// validation requires).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Condition {
    #[serde(rename = "type", default)]
    type_: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
    #[serde(default)]
    last_transition_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// A new migration as Go writes it: `spec` and `status` are structs, the resource too.
pub(crate) fn zero() -> Value {
    json!({"spec": {"resource": {"group": "", "resource": ""}}, "status": {}})
}

/// A migration read as kube-apiserver reads it: as its Go type, in the shape Go gives it.
pub(crate) fn normalize(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    let mut kept = apfkit_apiextensions::json_kind::typed::<Migration>(object, unknown, warnings)?;
    apfkit_apiserver::go_shape::as_decoded(&mut kept);
    Ok(kept)
}

/// The strategy of StorageVersionMigrations (`pkg/registry/storagemigration`): the generic
/// store already clears the status on create and keeps it on an update of the object, and
/// resets the spec and metadata on a write to `/status`.
pub(crate) struct MigrationStrategy {
    pub(crate) printer: Printer,
}

impl<H> Strategy<ServedObject<H>> for MigrationStrategy {
    /// kube's strategy allows no update that names no `resourceVersion`.
    fn allows_unconditional_update(&self) -> bool {
        false
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

/// `ValidateStorageVersionMigration`, and on an update `ValidateStorageVersionMigrationUpdate`
/// (the spec immutable) with `ValidateStorageVersionMigrationStatusUpdate` (a write to the
/// object keeps the stored status, and one to `/status` the stored spec, so each finds
/// nothing wrong in what it did not change).
fn validate(migration: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let text = |pointer: &str| {
        migration
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let mut errors = names::object_name_of(migration, names::dns1123_subdomain);
    // A name that breaks `rule`: one error with every message joined by commas.
    let check = |path: &str, value: &str, rule: fn(&str) -> Vec<String>| {
        let broken = rule(value);
        (!broken.is_empty())
            .then(|| FieldError::invalid(path, BadValue::Str(value.to_owned()), broken.join(",")))
    };
    let resource = text("/spec/resource/resource");
    if resource.is_empty() {
        errors.push(FieldError::required(
            "spec.resource.resource",
            "resource is required to be set",
        ));
    } else {
        errors.extend(check(
            "spec.resource.resource",
            resource,
            names::dns1035_label,
        ));
    }
    let group = text("/spec/resource/group");
    if !group.is_empty() {
        errors.extend(check(
            "spec.resource.group",
            group,
            names::dns1123_subdomain,
        ));
    }
    let Some(old) = old else {
        return errors;
    };
    let spec = |object: &Value| {
        object
            .pointer("/spec/resource")
            .cloned()
            .unwrap_or_default()
    };
    if spec(migration) != spec(old) {
        let resource = spec(migration);
        let go = json!({"Resource": {
            "group": resource.get("group").cloned().unwrap_or_else(|| "".into()),
            "resource": resource.get("resource").cloned().unwrap_or_else(|| "".into()),
        }});
        errors.push(FieldError::invalid(
            "spec",
            BadValue::Go(go.to_string()),
            "field is immutable",
        ));
    }
    errors.extend(validate_status(migration, old));
    errors
}

/// `ValidateStorageVersionMigrationStatusUpdate`'s checks of the status.
fn validate_status(migration: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let resource_version = |object: &Value| {
        object
            .pointer("/status/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let version = resource_version(migration);
    if !version.is_empty() && !well_formed(&version) {
        errors.push(FieldError::invalid(
            "status.resourceVersion",
            BadValue::Str(version.clone()),
            format!("resource version is not well formed: {version}"),
        ));
    }
    let conditions: Vec<Value> = migration
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    errors.extend(conditions_errors(&conditions, "status.conditions"));
    let old_version = resource_version(old);
    if !old_version.is_empty() && old_version != version {
        errors.push(FieldError::invalid(
            "status.resourceVersion",
            BadValue::Str(version),
            "field is immutable",
        ));
    }
    let conditions_value = || BadValue::Go(go_conditions(&conditions));
    if holds(migration, SUCCEEDED) && holds(migration, FAILED) {
        errors.push(FieldError::invalid(
            "status.conditions",
            conditions_value(),
            "Both success and failed conditions cannot be true at the same time",
        ));
    }
    if holds(old, SUCCEEDED) && !holds(migration, SUCCEEDED) {
        errors.push(FieldError::invalid(
            "status.conditions",
            conditions_value(),
            "Success condition cannot be set to false once it is true",
        ));
    }
    if holds(old, FAILED) && !holds(migration, FAILED) {
        errors.push(FieldError::invalid(
            "status.conditions",
            conditions_value(),
            "Failed condition cannot be set to false once it is true",
        ));
    }
    errors
}

/// `resourceversion.isWellFormed`: digits without a leading zero.
fn well_formed(version: &str) -> bool {
    !version.is_empty() && !version.starts_with('0') && version.bytes().all(|b| b.is_ascii_digit())
}

/// Whether the first condition of `type_` (`meta.FindStatusCondition`) is `True`.
fn holds(migration: &Value, type_: &str) -> bool {
    migration
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == type_))
        .is_some_and(|condition| condition["status"] == "True")
}

/// Conditions as Go's JSON writes a `[]metav1.Condition`: fields in declaration order,
/// `observedGeneration` left out when zero, a zero time `null`.
fn go_conditions(conditions: &[Value]) -> String {
    let written: Vec<String> = conditions
        .iter()
        .map(|condition| {
            let text = |name: &str| {
                serde_json::to_string(condition[name].as_str().unwrap_or_default())
                    .unwrap_or_default()
            };
            let generation = condition["observedGeneration"].as_i64().unwrap_or_default();
            let time = match condition["lastTransitionTime"].as_str() {
                Some(time) => serde_json::to_string(time).unwrap_or_default(),
                None => "null".to_owned(),
            };
            let generation = if generation == 0 {
                String::new()
            } else {
                format!("\"observedGeneration\":{generation},")
            };
            format!(
                "{{\"type\":{},\"status\":{},{generation}\"lastTransitionTime\":{time},\"reason\":{},\"message\":{}}}",
                text("type"),
                text("status"),
                text("reason"),
                text("message")
            )
        })
        .collect();
    format!("[{}]", written.join(","))
}

/// apimachinery's `ValidateConditions`: each condition's type, status, generation, time,
/// reason and message, and no type twice.
fn conditions_errors(conditions: &[Value], path: &str) -> Vec<FieldError> {
    const REASON_FORMAT: &str = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?";
    let mut errors = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (index, condition) in conditions.iter().enumerate() {
        let at = format!("{path}[{index}]");
        let text = |name: &str| condition[name].as_str().unwrap_or_default();
        let type_ = text("type");
        if !seen.insert(type_.to_owned()) {
            errors.push(FieldError::duplicate(&at, BadValue::Str(type_.to_owned())));
        }
        if type_.is_empty() {
            errors.push(FieldError::required(format!("{at}.type"), "is required"));
        } else {
            for message in names::qualified_name(type_) {
                errors.push(FieldError::invalid(
                    format!("{at}.type"),
                    BadValue::Str(type_.to_owned()),
                    message,
                ));
            }
        }
        let status = text("status");
        if status.is_empty() {
            errors.push(FieldError::required(format!("{at}.status"), ""));
        } else if !matches!(status, "True" | "False" | "Unknown") {
            errors.push(FieldError::not_supported(
                format!("{at}.status"),
                BadValue::Str(status.to_owned()),
                &["False", "True", "Unknown"],
            ));
        }
        let generation = condition["observedGeneration"].as_i64().unwrap_or_default();
        if generation < 0 {
            errors.push(FieldError::invalid(
                format!("{at}.observedGeneration"),
                BadValue::Int(generation),
                "must be greater than or equal to zero",
            ));
        }
        if condition["lastTransitionTime"].as_str().is_none() {
            errors.push(FieldError::required(format!("{at}.lastTransitionTime"), ""));
        }
        let reason = text("reason");
        if reason.is_empty() {
            errors.push(FieldError::required(format!("{at}.reason"), ""));
        } else {
            if !reason_matches(reason) {
                errors.push(FieldError::invalid(
                    format!("{at}.reason"),
                    BadValue::Str(reason.to_owned()),
                    format!(
                        "a condition reason must start with alphabetic character, optionally \
                         followed by a string of alphanumeric characters or '_,:', and must end \
                         with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  \
                         or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used \
                         for validation is '{REASON_FORMAT}')"
                    ),
                ));
            }
            if reason.len() > 1024 {
                errors.push(FieldError::too_long(format!("{at}.reason"), 1024));
            }
        }
        if text("message").len() > 32 * 1024 {
            errors.push(FieldError::too_long(format!("{at}.message"), 32 * 1024));
        }
    }
    errors
}

/// `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`.
fn reason_matches(reason: &str) -> bool {
    let bytes = reason.as_bytes();
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b':');
    bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        && bytes.iter().all(inner)
}

/// `storageVersionMigrationColumnDefinitions`.
fn columns() -> Vec<Column> {
    vec![
        // Described as `metadata.name`, without the `name` format kube's other tables give it.
        column("Name", "string", 0, field_doc(OBJECT_META, "name")),
        column(
            "Resource",
            "string",
            0,
            Cow::Borrowed("GroupResource to migrate"),
        ),
        column(
            "Status",
            "string",
            0,
            Cow::Borrowed("Status of the migration"),
        ),
    ]
}

/// `printStorageVersionMigration`'s cells: the name, the resource as `GroupResource.String()`
/// writes it, and the last of `Running`, `Failed` and `Succeeded` that is true (`Unknown`
/// when none is).
fn cells(object: &Value) -> Vec<Value> {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let group = text("/spec/resource/group");
    let resource = text("/spec/resource/resource");
    let migrating = if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    };
    let status = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|condition| condition["status"] == "True")
        .filter_map(|condition| condition["type"].as_str())
        .rfind(|type_| [RUNNING, FAILED, SUCCEEDED].contains(type_))
        .unwrap_or("Unknown");
    vec![name_cell(object), migrating.into(), status.into()]
}

/// The columns of `kubectl get storageversionmigrations`.
pub(crate) fn printer() -> Printer {
    Printer::of("v1", columns(), cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(migration: &Value, old: Option<&Value>) -> Vec<String> {
        validate(migration, old)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn migration(resource: Value, status: Value) -> Value {
        json!({"metadata": {"name": "m"}, "spec": {"resource": resource}, "status": status})
    }

    fn condition(type_: &str, status: &str) -> Value {
        json!({"type": type_, "status": status, "lastTransitionTime": "2026-11-30T00:00:00Z",
            "reason": "R", "message": ""})
    }

    /// `TestValidateStorageVersionMigration` and its update cases (validation_test.go).
    #[test]
    fn migrations_are_checked_as_kubes_validation_checks_them() {
        assert!(messages(&migration(json!({"resource": "pods"}), json!({})), None).is_empty());
        assert_eq!(
            messages(&migration(json!({"group": "apps"}), json!({})), None),
            ["spec.resource.resource: Required value: resource is required to be set"]
        );
        assert_eq!(
            messages(
                &migration(
                    json!({"group": "Not_A_Group", "resource": "1pods"}),
                    json!({})
                ),
                None
            ),
            [
                "spec.resource.resource: Invalid value: \"1pods\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec.resource.group: Invalid value: \"Not_A_Group\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        let old = migration(json!({"resource": "pods"}), json!({"resourceVersion": "5"}));
        let changed = migration(
            json!({"group": "apps", "resource": "deployments"}),
            json!({"resourceVersion": "5"}),
        );
        assert_eq!(
            messages(&changed, Some(&old)),
            [
                "spec: Invalid value: {\"Resource\":{\"group\":\"apps\",\"resource\":\"deployments\"}}: field is immutable"
            ]
        );
        let moved = migration(json!({"resource": "pods"}), json!({"resourceVersion": "6"}));
        assert_eq!(
            messages(&moved, Some(&old)),
            ["status.resourceVersion: Invalid value: \"6\": field is immutable"]
        );
        let bad = migration(
            json!({"resource": "pods"}),
            json!({"resourceVersion": "007"}),
        );
        assert_eq!(
            messages(
                &bad,
                Some(&migration(json!({"resource": "pods"}), json!({})))
            ),
            [
                "status.resourceVersion: Invalid value: \"007\": resource version is not well formed: 007"
            ]
        );
    }

    #[test]
    fn conditions_are_checked_and_a_finished_migration_stays_finished() {
        let old = migration(json!({"resource": "pods"}), json!({}));
        let both = migration(
            json!({"resource": "pods"}),
            json!({"conditions": [condition(SUCCEEDED, "True"), condition(FAILED, "True")]}),
        );
        let found = messages(&both, Some(&old));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("status.conditions: Invalid value: [{\"type\":\"Succeeded\",\"status\":\"True\",\"lastTransitionTime\":\"2026-11-30T00:00:00Z\",\"reason\":\"R\",\"message\":\"\"},"), "{found:?}");
        assert!(
            found[0]
                .ends_with("Both success and failed conditions cannot be true at the same time")
        );
        let succeeded = migration(
            json!({"resource": "pods"}),
            json!({"conditions": [condition(SUCCEEDED, "True")]}),
        );
        let undone = migration(
            json!({"resource": "pods"}),
            json!({"conditions": [condition(SUCCEEDED, "False")]}),
        );
        assert!(
            messages(&undone, Some(&succeeded))[0]
                .ends_with("Success condition cannot be set to false once it is true")
        );
        let broken = migration(
            json!({"resource": "pods"}),
            json!({"conditions": [
                {"type": "", "status": "Maybe", "observedGeneration": -1, "reason": "1bad"},
                condition(RUNNING, "True"), condition(RUNNING, "False"),
            ]}),
        );
        assert_eq!(
            messages(&broken, Some(&old)),
            [
                "status.conditions[0].type: Required value: is required",
                "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"",
                "status.conditions[0].observedGeneration: Invalid value: -1: must be greater than or equal to zero",
                "status.conditions[0].lastTransitionTime: Required value",
                "status.conditions[0].reason: Invalid value: \"1bad\": a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
                "status.conditions[2]: Duplicate value: \"Running\"",
            ]
        );
    }

    #[test]
    fn the_columns_are_kubectls() {
        let object = json!({"metadata": {"name": "m"},
            "spec": {"resource": {"group": "apps", "resource": "deployments"}},
            "status": {"conditions": [condition(RUNNING, "True"), condition(SUCCEEDED, "True"),
                condition(FAILED, "False")]}});
        assert_eq!(
            cells(&object),
            [json!("m"), json!("deployments.apps"), json!("Succeeded")]
        );
        let core = json!({"metadata": {"name": "n"}, "spec": {"resource": {"group": "", "resource": "secrets"}}});
        assert_eq!(
            cells(&core),
            [json!("n"), json!("secrets"), json!("Unknown")]
        );
    }
}
