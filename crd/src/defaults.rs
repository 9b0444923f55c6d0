//! The defaults of a CRD's schema checked as kube-apiserver checks them when the CRD is
//! written (apiextensions-apiserver's `pkg/apiserver/schema/defaulting/validation.go`): each
//! default has no field its schema would prune, and is valid against its schema and its
//! `x-kubernetes-validations` rules (with itself as the old value), the errors at
//! `<path>.default`. Defaults inside a resource's `metadata` are not checked here.

use apfkit_runtime::field::{BadValue, FieldError, Path};
use serde_json::Value;

use crate::schema::Schema;

/// Checks every default at or below `schema` (at `path`), appending errors.
pub fn check(schema: &Schema, path: &Path, errors: &mut Vec<FieldError>) {
    walk(schema, &path.to_string(), errors);
}

fn walk(schema: &Schema, path: &str, errors: &mut Vec<FieldError>) {
    if let Some(default) = &schema.default {
        errors.extend(default_errors(schema, default, &format!("{path}.default")));
    }
    for (name, property) in &schema.properties {
        walk(property, &format!("{path}.properties[{name}]"), errors);
    }
    if let Some(values) = &schema.additional_properties {
        walk(values, &format!("{path}.additionalProperties"), errors);
    }
    if let Some(items) = &schema.items {
        walk(items, &format!("{path}.items"), errors);
    }
}

fn default_errors(schema: &Schema, default: &Value, at: &str) -> Vec<FieldError> {
    if crate::prune::has_unknown_fields(schema, default) {
        return vec![FieldError::invalid(
            at,
            BadValue::from_json(default),
            "must not have unknown fields",
        )];
    }
    let mut found = Vec::new();
    crate::validate::validate(schema, default, &mut found);
    crate::listtype::validate(schema, default, &mut found);
    if found.is_empty() && schema.has_rules() {
        crate::cel::validate(schema, default, Some(default), &mut found);
    }
    found
        .into_iter()
        .map(|mut error| {
            error.path = if error.path.is_empty() {
                at.to_owned()
            } else {
                format!("{at}.{}", error.path)
            };
            error
        })
        .collect()
}
