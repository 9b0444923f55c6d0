//! `x-kubernetes-list-type: set` and `map`: no two items the same (a set) or with the same
//! keys (a map), as apiextensions-apiserver's `ValidateListSetsAndMaps`
//! (`pkg/apiserver/schema/listtype/validation.go`) reports them: a `Duplicate value` at the
//! second of each repeated item.

use std::collections::HashMap;

use apfkit_runtime::field::{BadValue, FieldError, Path};
use serde_json::{Map, Value};

use crate::schema::Schema;

/// Checks every list under `schema` in `value`, appending errors.
pub fn validate(schema: &Schema, value: &Value, errors: &mut Vec<FieldError>) {
    walk(schema, &Path::root(), value, errors);
}

fn walk(schema: &Schema, path: &Path, value: &Value, errors: &mut Vec<FieldError>) {
    match value {
        Value::Array(items) => {
            match schema.list_type.as_deref() {
                Some("set") => {
                    for i in repeated(items) {
                        errors.push(FieldError::duplicate(
                            path.index(i),
                            BadValue::from_json(&items[i]),
                        ));
                    }
                }
                Some("map") => list_map(schema, path, items, errors),
                _ => {}
            }
            if let Some(item_schema) = &schema.items {
                for (i, item) in items.iter().enumerate() {
                    walk(item_schema, &path.index(i), item, errors);
                }
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                if let Some(property) = schema.properties.get(key) {
                    walk(property, &path.child_of_root(key), item, errors);
                } else if let Some(values) = &schema.additional_properties {
                    walk(values, &path.key(key), item, errors);
                }
            }
        }
        _ => {}
    }
}

/// The indexes of the second occurrence of each repeated value, in one pass: values are
/// told apart by their JSON text (keys sorted), as upstream tells compound values apart by
/// `json.Marshal` and scalars by Go's equality (`1` and `1.0` differ in both).
fn repeated(items: &[Value]) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(items.len());
    let mut found = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let times = seen.entry(item.to_string()).or_insert(0);
        *times += 1;
        if *times == 2 {
            found.push(i);
        }
    }
    found
}

fn list_map(schema: &Schema, path: &Path, items: &[Value], errors: &mut Vec<FieldError>) {
    for (i, item) in items.iter().enumerate() {
        if !item.is_null() && !item.is_object() {
            errors.push(FieldError::invalid(
                path.index(i),
                BadValue::from_json(item),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut key = Map::new();
            for name in &schema.list_map_keys {
                if let Some(k) = item.get(name) {
                    key.insert(name.clone(), k.clone());
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in repeated(&keys) {
        errors.push(FieldError::duplicate(
            path.index(i),
            BadValue::from_json(&keys[i]),
        ));
    }
}

/// The items of an old `x-kubernetes-list-type: map` list by their keys, to find the old item
/// of a new one (apiserver's `MapList`, which ratcheting and transition rules correlate by);
/// the items of any other list correlate with none.
pub(crate) struct OldItems<'a> {
    by_key: HashMap<String, &'a Value>,
    keys: &'a [String],
}

impl<'a> OldItems<'a> {
    /// `olds`, the old list, under `schema`, the list's schema.
    pub(crate) fn new(schema: &'a Schema, olds: Option<&'a Value>) -> Self {
        let keys: &[String] = if schema.list_type.as_deref() == Some("map") {
            &schema.list_map_keys
        } else {
            &[]
        };
        let mut by_key = HashMap::new();
        if !keys.is_empty() {
            for old in olds.and_then(Value::as_array).into_iter().flatten() {
                // The first of repeated keys.
                by_key.entry(key_of(keys, old)).or_insert(old);
            }
        }
        OldItems { by_key, keys }
    }

    /// The old item with `item`'s keys.
    pub(crate) fn get(&self, item: &Value) -> Option<&'a Value> {
        if self.keys.is_empty() {
            return None;
        }
        self.by_key.get(&key_of(self.keys, item)).copied()
    }
}

/// An item's values of `keys`, as one string (absent keys as `null`).
fn key_of(keys: &[String], item: &Value) -> String {
    let values: Vec<&Value> = keys
        .iter()
        .map(|k| item.get(k).unwrap_or(&Value::Null))
        .collect();
    serde_json::to_string(&values).unwrap_or_default()
}
