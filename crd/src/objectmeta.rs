//! The `metadata` of a custom resource and of the embedded resources in it
//! (`x-kubernetes-embedded-resource`) coerced to an `ObjectMeta`, as apiextensions-apiserver
//! does when it decodes one (`pkg/apiserver/schema/objectmeta`, `GetObjectMetaWithOptions`
//! and `CoerceWithOptions`): fields `ObjectMeta` does not have are dropped and reported as
//! unknown fields (`embedded.metadata.foo`), and what is left is written as Go writes an
//! `ObjectMeta`. A request's object with metadata that does not decode, or an embedded
//! resource's `apiVersion` or `kind` that is not a string, is refused ([`Malformed::Refuse`]);
//! a stored object's is left as it is.

use apfkit_runtime::field::{BadValue, FieldError, names};
use apfkit_runtime::object_meta;
use apfkit_runtime::scheme::decode_collecting;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value};

use crate::prune::join;
use crate::schema::Schema;

/// What to do with metadata that does not decode as an `ObjectMeta`.
#[derive(Clone, Copy)]
pub(crate) enum Malformed<'a> {
    /// Leave it as it is (a stored object, or a caller that refuses it later).
    Keep,
    /// Refuse it, as kube-apiserver's request decoder does: the function says what Go's
    /// decoder says of the metadata (`json: cannot unmarshal string into Go struct field
    /// ObjectMeta.generation of type int64`), `None` when it decodes.
    Refuse(&'a dyn Fn(&Value) -> Option<String>),
}

/// Coerces the `metadata` of the embedded resources of `value` under `schema` (not the
/// root's: [`coerce_root`] does that) and returns the paths of the unknown fields dropped,
/// sorted; or, when `malformed` refuses, the error of the first that does not decode:
/// `spec.template.metadata: Invalid value: {"generation":"one"}: json: cannot unmarshal …`.
pub(crate) fn coerce_embedded(
    schema: &Schema,
    value: &mut Value,
    malformed: Malformed<'_>,
) -> Result<Vec<String>, String> {
    let mut unknown = Vec::new();
    walk(schema, value, "", false, malformed, &mut unknown)?;
    unknown.sort();
    Ok(unknown)
}

/// Coerces the root's `metadata` of `object` and returns the paths of the unknown fields
/// dropped (`metadata.foo`); or, when `malformed` refuses, Go's words for metadata that does
/// not decode. Metadata that is not an object is otherwise left to the decoder, which refuses
/// it.
pub(crate) fn coerce_root(
    object: &mut Value,
    malformed: Malformed<'_>,
) -> Result<Vec<String>, String> {
    let Some(metadata) = object.get_mut("metadata") else {
        return Ok(Vec::new());
    };
    if let Malformed::Refuse(go_error) = malformed
        && let Some(error) = go_error(metadata)
    {
        return Err(error);
    }
    Ok(match metadata {
        Value::Object(_) => coerce(metadata, "metadata"),
        _ => Vec::new(),
    })
}

/// The walk follows the schema, so it goes no deeper than the schema does, however deep
/// the value.
fn walk(
    schema: &Schema,
    value: &mut Value,
    path: &str,
    embedded: bool,
    malformed: Malformed<'_>,
    unknown: &mut Vec<String>,
) -> Result<(), String> {
    match value {
        Value::Object(map) => {
            if embedded {
                if let Malformed::Refuse(go_error) = malformed {
                    refuse_malformed(map, path, go_error)?;
                }
                if let Some(metadata @ Value::Object(_)) = map.get_mut("metadata") {
                    unknown.extend(coerce(metadata, &join(path, "metadata")));
                }
            }
            for (key, item) in map.iter_mut() {
                if let Some(property) = schema.properties.get(key) {
                    let path = join(path, key);
                    walk(
                        property,
                        item,
                        &path,
                        property.embedded_resource,
                        malformed,
                        unknown,
                    )?;
                } else if let Some(values) = schema.additional_properties.as_deref() {
                    let path = format!("{path}[{key}]");
                    walk(
                        values,
                        item,
                        &path,
                        values.embedded_resource,
                        malformed,
                        unknown,
                    )?;
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
                        malformed,
                        unknown,
                    )?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// An embedded resource's `apiVersion` and `kind` that are not strings, or `metadata` that
/// does not decode, refused as kube's coercer refuses them, in the order of the object's keys.
fn refuse_malformed(
    map: &Map<String, Value>,
    path: &str,
    go_error: &dyn Fn(&Value) -> Option<String>,
) -> Result<(), String> {
    for (key, value) in map {
        let detail = match key.as_str() {
            "apiVersion" | "kind" if !value.is_string() => "must be a string".to_owned(),
            "metadata" => match go_error(value) {
                Some(error) => error,
                None => continue,
            },
            _ => continue,
        };
        let error = FieldError::invalid(join(path, key), BadValue::from_json(value), detail);
        return Err(error.to_string());
    }
    Ok(())
}

/// `metadata` (an object) as an `ObjectMeta` writes it, the unknown fields dropped and
/// returned under `path`. Metadata with a field that does not decode is left as it is (a
/// request's is refused before this; kube's storage decoder would drop the field, and apfkit
/// stores none).
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

/// The checks apiextensions-apiserver makes of every embedded resource of `object` under
/// `schema` (`objectmeta.Validate`, after the schema's own): `apiVersion` and `kind`
/// required, a group version and a DNS-1035 label in any case; the metadata held to
/// `ValidateObjectMeta`, any name a path segment allows (an empty one passes, as kube checks
/// `fakename` in its place). Metadata that does not decode was refused with the request.
pub(crate) fn validate_embedded(schema: &Schema, object: &Value, errors: &mut Vec<FieldError>) {
    validate_walk(schema, object, "", false, errors);
}

fn validate_walk(
    schema: &Schema,
    value: &Value,
    path: &str,
    embedded: bool,
    errors: &mut Vec<FieldError>,
) {
    match value {
        Value::Object(map) => {
            if embedded {
                validate_resource(map, path, errors);
            }
            for (key, item) in map {
                if let Some(property) = schema.properties.get(key) {
                    let path = join(path, key);
                    validate_walk(property, item, &path, property.embedded_resource, errors);
                } else if let Some(values) = schema.additional_properties.as_deref() {
                    let path = format!("{path}[{key}]");
                    validate_walk(values, item, &path, values.embedded_resource, errors);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    let path = format!("{path}[{i}]");
                    validate_walk(
                        item_schema,
                        item,
                        &path,
                        item_schema.embedded_resource,
                        errors,
                    );
                }
            }
        }
        _ => {}
    }
}

/// `validateEmbeddedResource`: one embedded resource (`map`, at `path`).
fn validate_resource(map: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    for field in ["apiVersion", "kind"] {
        if !map.contains_key(field) {
            errors.push(FieldError::required(join(path, field), ""));
        }
    }
    for (key, value) in map {
        let at = join(path, key);
        let text = value.as_str();
        match key.as_str() {
            "apiVersion" | "kind" if text.is_none() => errors.push(FieldError::invalid(
                at,
                BadValue::from_json(value),
                "must be a string",
            )),
            "apiVersion" | "kind" if text == Some("") => errors.push(FieldError::invalid(
                at,
                BadValue::Str(String::new()),
                "must not be empty",
            )),
            "apiVersion" => {
                let api_version = text.unwrap_or_default();
                if api_version.matches('/').count() > 1 {
                    errors.push(FieldError::invalid(
                        at,
                        BadValue::Str(api_version.to_owned()),
                        format!("unexpected GroupVersion string: {api_version}"),
                    ));
                }
            }
            "kind" => {
                let kind = text.unwrap_or_default();
                let problems = names::dns1035_label(&kind.to_lowercase());
                if !problems.is_empty() {
                    errors.push(FieldError::invalid(
                        at,
                        BadValue::Str(kind.to_owned()),
                        format!(
                            "may have mixed case, but should otherwise match: {}",
                            problems.join(",")
                        ),
                    ));
                }
            }
            "metadata" => {
                let Ok(mut meta) = serde_json::from_value::<ObjectMeta>(value.clone()) else {
                    continue;
                };
                if meta.name.as_deref().unwrap_or_default().is_empty() {
                    meta.name = Some("fakename".to_owned());
                }
                let namespaced = !meta.namespace.as_deref().unwrap_or_default().is_empty();
                errors.extend(object_meta::validate(
                    &meta,
                    &at,
                    namespaced,
                    object_meta::path_segment,
                ));
            }
            _ => {}
        }
    }
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
        let unknown = coerce_embedded(&schema, &mut object, Malformed::Keep).expect("kept");
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
        assert_eq!(
            coerce_root(&mut object, Malformed::Keep).expect("kept"),
            ["metadata.rootOnly"]
        );
        assert_eq!(object["metadata"], json!({"name": "root"}));
    }

    fn templates() -> Schema {
        let embedded = json!({"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true});
        schema(json!({"type": "object", "properties": {
            "template": embedded,
            "items": {"type": "array", "items": embedded}}}))
    }

    #[test]
    fn a_request_with_metadata_that_does_not_decode_is_refused() {
        // Stands for Go's decoder: a generation that is not a number does not decode.
        let go_error = |metadata: &Value| -> Option<String> {
            match metadata.get("generation") {
                Some(Value::String(_)) => Some("generation is not a number".to_owned()),
                _ if !metadata.is_object() && !metadata.is_null() => {
                    Some("not an object".to_owned())
                }
                _ => None,
            }
        };
        let schema = templates();
        let refused = |mut object: Value| -> String {
            coerce_root(&mut object, Malformed::Refuse(&go_error))
                .and_then(|_| coerce_embedded(&schema, &mut object, Malformed::Refuse(&go_error)))
                .expect_err("refused")
        };
        assert_eq!(
            refused(json!({"metadata": {"generation": "one"}})),
            "generation is not a number"
        );
        assert_eq!(
            refused(json!({"metadata": {}, "template": {"metadata": {"generation": "one"}}})),
            "template.metadata: Invalid value: {\"generation\":\"one\"}: generation is not a number"
        );
        assert_eq!(
            refused(json!({"items": [{"kind": "K"}, {"kind": 5}]})),
            "items[1].kind: Invalid value: 5: must be a string"
        );
        assert_eq!(
            refused(json!({"template": {"apiVersion": ["v1"], "metadata": "m"}})),
            "template.apiVersion: Invalid value: [\"v1\"]: must be a string"
        );
        // What decodes is coerced as before; a stored object's is kept.
        let mut fine = json!({"metadata": {"name": "a", "extra": 1},
            "template": {"metadata": {"name": "t", "extra": 1}}});
        assert_eq!(
            coerce_root(&mut fine, Malformed::Refuse(&go_error)),
            Ok(vec!["metadata.extra".to_owned()])
        );
        assert_eq!(
            coerce_embedded(&schema, &mut fine, Malformed::Refuse(&go_error)),
            Ok(vec!["template.metadata.extra".to_owned()])
        );
        let mut stored = json!({"template": {"kind": 5, "metadata": {"generation": "one"}}});
        assert_eq!(
            coerce_embedded(&schema, &mut stored, Malformed::Keep),
            Ok(vec![])
        );
        assert_eq!(stored["template"]["kind"], json!(5));
    }

    #[test]
    fn embedded_resources_are_validated_as_apiextensions_validates_them() {
        let schema = templates();
        let errors = |object: Value| -> Vec<String> {
            let mut errors = Vec::new();
            validate_embedded(&schema, &object, &mut errors);
            errors.iter().map(ToString::to_string).collect()
        };
        assert_eq!(
            errors(json!({"template": {}})),
            [
                "template.apiVersion: Required value",
                "template.kind: Required value"
            ]
        );
        assert_eq!(
            errors(json!({"template": {"apiVersion": "a/b/c", "kind": ""}})),
            [
                "template.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                "template.kind: Invalid value: \"\": must not be empty",
            ]
        );
        let kind = errors(json!({"template": {"apiVersion": "v1", "kind": "Bad_Kind"}}));
        assert!(
            kind[0].starts_with(
                "template.kind: Invalid value: \"Bad_Kind\": may have mixed case, but should \
                 otherwise match: a DNS-1035 label must consist of"
            ),
            "{kind:?}"
        );
        assert_eq!(
            errors(json!({"items": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "UPPER_ok"}},
                {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "a/b", "generation": -1}}]})),
            [
                "items[1].metadata.name: Invalid value: \"a/b\": may not contain '/'",
                "items[1].metadata.generation: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        // Not embedded, or embedded and fine: nothing.
        assert!(
            errors(json!({"other": {}, "template": {"apiVersion": "apps/v1",
            "kind": "Deployment", "metadata": {"namespace": "ns"}}}))
            .is_empty()
        );
    }
}
