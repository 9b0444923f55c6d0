//! JSON Schemas (draft 2020-12) of every kind, as the `apfkit schema` command prints them and as
//! `cargo xtask codegen` commits them under `schemas/jsonschema`.
//!
//! ```
//! use apfkit_types::json_schema::{self, Variant};
//!
//! # use apfkit_runtime::identity::GroupVersionKind;
//! let schema = GroupVersionKind::from_static("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema");
//! let kind = apfkit_types::find_kind(&schema).unwrap();
//! let strict = json_schema::schema(kind, Variant::Strict);
//! assert_eq!(strict["additionalProperties"], false);
//! assert_eq!(strict["properties"]["kind"]["enum"][0], "FlowSchema");
//! ```

use std::collections::BTreeMap;

use serde_json::Value;

use crate::{KINDS, KindInfo};

/// Which form of a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Objects accept fields the schema does not name, as Kubernetes' own published schemas do.
    Open,
    /// Every object with `properties` refuses other fields (`additionalProperties: false`), as
    /// kubeconform's and kubernetes-json-schema's `-strict` schemas do. Maps and free-form
    /// objects stay open.
    Strict,
}

/// The schema of `kind`.
///
/// Like Kubernetes' own schemas, optional fields are left out rather than `null`: schemars
/// allows `null` for every `Option`, which is removed here.
pub fn schema(kind: &KindInfo, variant: Variant) -> Value {
    // apfkit-types is generated with schemars: every kind has its schema.
    let mut value = kind.json_schema().unwrap_or_default();
    without_null(&mut value);
    if variant == Variant::Strict {
        close_objects(&mut value);
    }
    value
}

/// The schema of `kind` as the committed files hold it: pretty-printed, with a final newline.
pub fn text(kind: &KindInfo, variant: Variant) -> String {
    // A `Value` always serializes; the fallback keeps this function total.
    serde_json::to_string_pretty(&schema(kind, variant)).unwrap_or_default() + "\n"
}

/// Every schema file of every kind, by path relative to `schemas/jsonschema`, pretty-printed:
/// `<group>/<version>/<Kind>.json`, and in kubeconform's flat layout
/// `standalone/<kind>-<group's first label>-<version>.json` (lower case) with its strict twin
/// under `standalone-strict/`.
pub fn files() -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for kind in KINDS {
        let open = text(kind, Variant::Open);
        let flat = standalone_name(kind);
        files.insert(
            format!("{}/{}/{}.json", kind.group, kind.version, kind.kind),
            open.clone(),
        );
        files.insert(format!("standalone/{flat}"), open);
        files.insert(
            format!("standalone-strict/{flat}"),
            text(kind, Variant::Strict),
        );
    }
    files
}

/// kubeconform's file name: `flowschema-flowcontrol-v1beta3.json`.
pub fn standalone_name(kind: &KindInfo) -> String {
    let group = kind.group.split('.').next().unwrap_or_default();
    format!("{}-{group}-{}.json", kind.kind, kind.version).to_lowercase()
}

/// `anyOf: [X, null]` becomes `X`, and `type: [T, "null"]` becomes `T`.
fn without_null(value: &mut Value) {
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t.as_str() != Some("null"));
                if let [single] = types.as_slice() {
                    let single = single.clone();
                    map.insert("type".to_owned(), single);
                }
            }
            if let Some(Value::Array(any_of)) = map.get("anyOf")
                && any_of.len() == 2
                && any_of.iter().any(is_null)
            {
                let kept = any_of.iter().find(|v| !is_null(v)).cloned();
                map.remove("anyOf");
                if let Some(Value::Object(kept)) = kept {
                    map.extend(kept);
                }
            }
            map.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

/// Adds `additionalProperties: false` to every object schema with `properties` and no
/// `additionalProperties` of its own.
fn close_objects(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}
