//! The `metadata` of a custom resource and of the embedded resources in it
//! (`x-kubernetes-embedded-resource`) coerced to an `ObjectMeta`, as apiextensions-apiserver
//! does when it decodes one (`pkg/apiserver/schema/objectmeta`, `GetObjectMetaWithOptions`
//! and `CoerceWithOptions`): fields `ObjectMeta` does not have are dropped and reported as
//! unknown fields (`embedded.metadata.foo`), and what is left is written as Go writes an
//! `ObjectMeta`.

use apfkit_runtime::scheme::decode_collecting;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value};

use crate::prune::join;
use crate::schema::Schema;

/// Coerces the `metadata` of the embedded resources of `value` under `schema` (not the
/// root's: [`coerce_root`] does that) and returns the paths of the unknown fields dropped,
/// sorted.
pub(crate) fn coerce_embedded(schema: &Schema, value: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    walk(schema, value, "", false, &mut unknown);
    unknown.sort();
    unknown
}

/// Coerces the root's `metadata` of `object` and returns the paths of the unknown fields
/// dropped (`metadata.foo`). Metadata that is not an object is left to the decoder, which
/// refuses it.
pub(crate) fn coerce_root(object: &mut Value) -> Vec<String> {
    match object.get_mut("metadata") {
        Some(metadata @ Value::Object(_)) => coerce(metadata, "metadata"),
        _ => Vec::new(),
    }
}

/// The walk follows the schema, so it goes no deeper than the schema does, however deep
/// the value.
fn walk(schema: &Schema, value: &mut Value, path: &str, embedded: bool, unknown: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if embedded && let Some(metadata @ Value::Object(_)) = map.get_mut("metadata") {
                unknown.extend(coerce(metadata, &join(path, "metadata")));
            }
            for (key, item) in map.iter_mut() {
                if let Some(property) = schema.properties.get(key) {
                    let path = join(path, key);
                    walk(property, item, &path, property.embedded_resource, unknown);
                } else if let Some(values) = schema.additional_properties.as_deref() {
                    let path = format!("{path}[{key}]");
                    walk(values, item, &path, values.embedded_resource, unknown);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in items.iter_mut().enumerate() {
                    let path = format!("{path}[{i}]");
                    walk(
                        item_schema,
                        item,
                        &path,
                        item_schema.embedded_resource,
                        unknown,
                    );
                }
            }
        }
        _ => {}
    }
}

/// `metadata` (an object) as an `ObjectMeta` writes it, the unknown fields dropped and
/// returned under `path`. Metadata with a field that does not decode is left as it is: a
/// request's is refused by the decoder after this (kube's request decoder does not drop
/// malformed fields; its storage decoder would, and apfkit stores none).
fn coerce(metadata: &mut Value, path: &str) -> Vec<String> {
    let Ok((meta, unknown)) = decode_collecting::<ObjectMeta>(metadata) else {
        return Vec::new();
    };
    *metadata = written(meta);
    unknown
        .into_iter()
        .map(|field| format!("{path}.{field}"))
        .collect()
}

/// An `ObjectMeta` as Go writes it: every field `omitempty`, empty lists and maps left out
/// as nil ones are.
fn written(mut meta: ObjectMeta) -> Value {
    fn drop_empty<T>(field: &mut Option<T>, empty: fn(&T) -> bool) {
        if field.as_ref().is_some_and(empty) {
            *field = None;
        }
    }
    drop_empty(&mut meta.finalizers, Vec::is_empty);
    drop_empty(&mut meta.owner_references, Vec::is_empty);
    drop_empty(&mut meta.managed_fields, Vec::is_empty);
    drop_empty(&mut meta.labels, std::collections::BTreeMap::is_empty);
    drop_empty(&mut meta.annotations, std::collections::BTreeMap::is_empty);
    serde_json::to_value(meta).unwrap_or_else(|_| Value::Object(Map::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> Schema {
        let props = serde_json::from_value(value).expect("a schema");
        Schema::compile(&props, apfkit_runtime::field::Path::new("openAPIV3Schema"))
            .expect("compiles")
    }

    #[test]
    fn embedded_metadata_keeps_what_object_meta_has() {
        let schema = schema(json!({"type": "object", "properties": {
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true},
            "plain": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "byName": {"type": "object", "additionalProperties": {"type": "object",
                "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true}},
            "list": {"type": "array", "items": {"type": "object",
                "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true}}}}));
        let mut object = json!({
            "metadata": {"name": "root", "rootOnly": 1},
            "embedded": {"metadata": {"name": "e", "unspecified": "x", "labels": {},
                "creationTimestamp": null}},
            "plain": {"metadata": {"name": "p", "unspecified": "x"}},
            "byName": {"a": {"metadata": {"other": true, "namespace": "n"}}},
            "list": [{"metadata": "not an object"}, {"metadata": {"finalizers": [], "z": 1}},
                {"metadata": {"generation": "one", "y": 1}}],
        });
        let unknown = coerce_embedded(&schema, &mut object);
        assert_eq!(
            unknown,
            [
                "byName[a].metadata.other",
                "embedded.metadata.unspecified",
                "list[1].metadata.z",
            ]
        );
        assert_eq!(object["embedded"]["metadata"], json!({"name": "e"}));
        assert_eq!(object["byName"]["a"]["metadata"], json!({"namespace": "n"}));
        assert_eq!(object["list"][0]["metadata"], json!("not an object"));
        assert_eq!(object["list"][1]["metadata"], json!({}));
        // A field that does not decode: left for the decoder to refuse.
        assert_eq!(
            object["list"][2]["metadata"],
            json!({"generation": "one", "y": 1})
        );
        // Not an embedded resource, and the root: left to others.
        assert_eq!(object["plain"]["metadata"]["unspecified"], json!("x"));
        assert_eq!(object["metadata"]["rootOnly"], json!(1));
        assert_eq!(coerce_root(&mut object), ["metadata.rootOnly"]);
        assert_eq!(object["metadata"], json!({"name": "root"}));
    }
}
