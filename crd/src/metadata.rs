//! The metadata rules kube-apiserver applies to every custom resource: a name (or a
//! generateName), a DNS-1123 subdomain (apimachinery's `ValidateObjectMeta` with
//! `NameIsDNSSubdomain`).

use apfkit_runtime::field::FieldError;
use apfkit_runtime::field::names;
use serde_json::Value;

/// Checks `metadata.name` and `metadata.generateName` of `object`.
pub fn validate(object: &Value, errors: &mut Vec<FieldError>) {
    let text = |key: &str| {
        object
            .get("metadata")
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    errors.extend(names::object_name(
        text("name"),
        text("generateName"),
        names::dns1123_subdomain,
    ));
}
