//! Small constructors for OpenAPI v3 schema values, in the shape Kubernetes serves them.

use serde_json::{Map, Value, json};

/// Prefix of the meta/v1 definitions.
pub const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

/// An object schema with `properties` (given in any order; serde_json sorts them) and `required`.
pub fn object(description: &str, properties: Vec<(&str, Value)>, required: &[&str]) -> Value {
    let mut schema = json!({ "description": description, "type": "object" });
    let props: Map<String, Value> = properties
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    if !props.is_empty() {
        schema["properties"] = Value::Object(props);
    }
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// A plain string property.
pub fn string(description: &str) -> Value {
    json!({ "description": description, "type": "string" })
}

/// A string property with a closed set of values.
pub fn string_enum(description: &str, values: &[&str]) -> Value {
    json!({ "description": description, "type": "string", "enum": values })
}

/// A 32-bit integer property.
pub fn int32(description: &str) -> Value {
    json!({ "description": description, "type": "integer", "format": "int32" })
}

/// A 64-bit integer property.
pub fn int64(description: &str) -> Value {
    json!({ "description": description, "type": "integer", "format": "int64" })
}

/// A boolean property.
pub fn boolean(description: &str) -> Value {
    json!({ "description": description, "type": "boolean" })
}

/// A property referring to another schema, wrapped in `allOf` so it can carry a description.
pub fn reference(description: &str, definition: &str) -> Value {
    json!({ "description": description, "allOf": [{ "$ref": format!("#/components/schemas/{definition}") }] })
}

/// A reference whose `default` is `{}`: a struct value that is always present on the wire.
pub fn struct_value(description: &str, definition: &str) -> Value {
    with(reference(description, definition), "default", json!({}))
}

/// An array of items; `list_type` is `atomic`, `set` or `map`.
pub fn array(description: &str, items: Value, list_type: Option<&str>) -> Value {
    let mut schema = json!({ "description": description, "type": "array", "items": items });
    if let Some(list_type) = list_type {
        schema["x-kubernetes-list-type"] = json!(list_type);
    }
    schema
}

/// Array items that refer to another schema.
pub fn item_ref(definition: &str) -> Value {
    json!({ "allOf": [{ "$ref": format!("#/components/schemas/{definition}") }], "default": {} })
}

/// Array items that are strings.
pub fn item_string() -> Value {
    json!({ "type": "string", "default": "" })
}

/// A `map` list keyed by `type`, merged by that key in strategic-merge patches when `patch` is set.
pub fn conditions(description: &str, definition: &str, patch: bool) -> Value {
    let mut schema = array(description, item_ref(definition), Some("map"));
    schema["x-kubernetes-list-map-keys"] = json!(["type"]);
    if patch {
        schema["x-kubernetes-patch-merge-key"] = json!("type");
        schema["x-kubernetes-patch-strategy"] = json!("merge");
    }
    schema
}

/// Adds one key to a schema.
pub fn with(mut schema: Value, key: &str, value: Value) -> Value {
    schema[key] = value;
    schema
}

/// A semantic default, as the API server applies it when the field is unset.
pub fn defaulted(schema: Value, default: Value) -> Value {
    with(schema, "default", default)
}

/// A semantic default that the API server also applies over the zero value, because the Go
/// field is not a pointer and cannot tell zero from unset.
pub fn defaulted_on_zero(schema: Value, default: Value) -> Value {
    with(
        defaulted(schema, default),
        "x-apfkit-default-on-zero",
        json!(true),
    )
}

/// The `x-kubernetes-group-version-kind` annotation.
pub fn gvk(schema: Value, group: &str, version: &str, kind: &str) -> Value {
    with(
        schema,
        "x-kubernetes-group-version-kind",
        json!([{ "group": group, "kind": kind, "version": version }]),
    )
}

/// The `x-kubernetes-unions` annotation of a discriminated union.
pub fn union(schema: Value, discriminator: &str, members: &[(&str, &str)]) -> Value {
    let fields: Map<String, Value> = members
        .iter()
        .map(|(f, v)| ((*f).to_owned(), json!(v)))
        .collect();
    with(
        schema,
        "x-kubernetes-unions",
        json!([{ "discriminator": discriminator, "fields-to-discriminateBy": fields }]),
    )
}

/// A status condition: `lastTransitionTime`, `message`, `reason`, `status` and `type`.
pub fn condition(what: &str, type_description: &str, required: &[&str]) -> Value {
    object(
        what,
        vec![
            (
                "lastTransitionTime",
                reference(
                    "When the condition last changed status.",
                    &format!("{META}.Time"),
                ),
            ),
            ("message", string("Human-readable explanation.")),
            (
                "reason",
                string("Machine-readable reason for the last change, in CamelCase."),
            ),
            (
                "status",
                string_enum(
                    "Whether the condition holds.",
                    &["True", "False", "Unknown"],
                ),
            ),
            ("type", string(type_description)),
        ],
        required,
    )
}
