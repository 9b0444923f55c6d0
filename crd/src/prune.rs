//! What kube-apiserver does to a custom resource before validating it: unknown fields pruned
//! (`pkg/apiserver/schema/pruning/algorithm.go`), nulls of non-nullable fields without a
//! default dropped, and defaults applied (`pkg/apiserver/schema/defaulting`).

use serde_json::Value;

use crate::schema::Schema;

/// The fields of an object's envelope, never pruned at a resource's root (or an embedded
/// resource's).
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Removes the fields `schema` does not declare (unless it preserves unknown fields) and
/// returns their paths, sorted (`spec.foo`, `spec.items[0].bar`), as kube-apiserver reports them in
/// its `unknown field` warnings and strict-decoding errors.
pub fn prune(schema: &Schema, value: &mut Value) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_node(Some(schema), value, "", true, &mut pruned);
    // kube-apiserver finds them in Go's random map order; sorted, they read the same each time.
    pruned.sort();
    pruned
}

/// Whether pruning `value` under `schema` (the envelope kept only where `schema` is an
/// embedded resource) would remove something: what kube-apiserver asks of a default.
pub(crate) fn has_unknown_fields(schema: &Schema, value: &Value) -> bool {
    let mut pruned = value.clone();
    let mut found = Vec::new();
    prune_node(
        Some(schema),
        &mut pruned,
        "",
        schema.embedded_resource,
        &mut found,
    );
    !found.is_empty()
}

fn prune_node(
    schema: Option<&Schema>,
    value: &mut Value,
    path: &str,
    root: bool,
    pruned: &mut Vec<String>,
) {
    // Under `x-kubernetes-preserve-unknown-fields` unknown fields stay, and are not walked;
    // declared ones are still pruned by their schemas (upstream's `skipPrune`).
    let preserve = schema.is_some_and(|s| s.preserve_unknown_fields);
    match value {
        Value::Object(map) => {
            // At a resource's root (and an embedded resource's) the envelope is kept as it
            // is: kube-apiserver coerces `metadata` on its own, never by the schema.
            let envelope = root || schema.is_some_and(|s| s.embedded_resource);
            let is_envelope = |key: &str| envelope && META_FIELDS.contains(&key);
            if !preserve {
                map.retain(|key, _| {
                    let known = is_envelope(key) || schema.is_some_and(|s| s.field(key).is_some());
                    if !known {
                        pruned.push(join(path, key));
                    }
                    known
                });
            }
            for (key, item) in map.iter_mut() {
                if let Some(child) = schema.and_then(|s| s.field(key))
                    && !is_envelope(key)
                {
                    prune_node(Some(child), item, &join(path, key), false, pruned);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            if preserve && item_schema.is_none() {
                return;
            }
            for (i, item) in items.iter_mut().enumerate() {
                prune_node(item_schema, item, &format!("{path}[{i}]"), false, pruned);
            }
        }
        _ => {}
    }
}

/// `path.key`, or `key` at the root: the path of a field in warnings and errors.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Drops the nulls of fields that are neither nullable nor defaulted
/// (`PruneNonNullableNullsWithoutDefaults`).
pub fn prune_nulls(schema: &Schema, value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|key, item| {
                let dropped = item.is_null()
                    && schema
                        .field(key)
                        .is_some_and(|s| !s.nullable && s.default.is_none());
                !dropped
            });
            for (key, item) in map.iter_mut() {
                if let Some(sub) = schema.field(key) {
                    prune_nulls(sub, item);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &schema.items {
                for item in items {
                    prune_nulls(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

fn non_nullable_null(value: &Value, schema: &Schema) -> bool {
    value.is_null() && !schema.nullable
}

/// Applies the schema's defaults: a missing field (or a null one that may not be null) takes
/// its default, then defaults apply inside it (`Default`).
pub fn apply_defaults(schema: &Schema, value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, property) in &schema.properties {
                if let Some(default) = &property.default {
                    let missing = map.get(key).is_none_or(|v| non_nullable_null(v, property));
                    if missing {
                        map.insert(key.clone(), default.clone());
                    }
                }
            }
            for (key, item) in map.iter_mut() {
                if let Some(property) = schema.properties.get(key) {
                    apply_defaults(property, item);
                } else if let Some(values) = &schema.additional_properties {
                    if non_nullable_null(item, values)
                        && let Some(default) = &values.default
                    {
                        *item = default.clone();
                    }
                    apply_defaults(values, item);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &schema.items {
                for item in items {
                    if non_nullable_null(item, item_schema)
                        && let Some(default) = &item_schema.default
                    {
                        *item = default.clone();
                    }
                    apply_defaults(item_schema, item);
                }
            }
        }
        _ => {}
    }
}
