//! The metadata rules kube-apiserver applies to every custom resource: a name (or a
//! generateName), a DNS-1123 subdomain (apimachinery's `ValidateObjectMeta` with
//! `NameIsDNSSubdomain`).

use apfkit_runtime::field::names::dns1123_subdomain;
use apfkit_runtime::field::{BadValue, FieldError, Path};
use serde_json::Value;

/// Checks `metadata.name` and `metadata.generateName` of `object`.
pub fn validate(object: &Value, errors: &mut Vec<FieldError>) {
    let path = Path::new("metadata");
    let text = |key: &str| {
        object
            .get("metadata")
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let name = text("name");
    let generate_name = text("generateName");
    if !generate_name.is_empty() {
        // apimachinery checks a generateName with its trailing dash masked.
        let masked = match generate_name.strip_suffix('-') {
            Some(head) => format!("{head}a"),
            None => generate_name.to_owned(),
        };
        for message in dns1123_subdomain(&masked) {
            errors.push(FieldError::invalid(
                path.child("generateName"),
                BadValue::Str(generate_name.to_owned()),
                message,
            ));
        }
    }
    if name.is_empty() {
        if generate_name.is_empty() {
            errors.push(FieldError::required(
                path.child("name"),
                "name or generateName is required",
            ));
        }
    } else {
        for message in dns1123_subdomain(name) {
            errors.push(FieldError::invalid(
                path.child("name"),
                BadValue::Str(name.to_owned()),
                message,
            ));
        }
    }
}
