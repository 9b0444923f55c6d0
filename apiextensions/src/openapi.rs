//! The schemas a custom resource's version publishes in kube-apiserver's OpenAPI documents,
//! as apiextensions-apiserver's builder makes them (`pkg/controller/openapi/builder`): the
//! kind's and its list's, in OpenAPI v3's form (`/openapi/v3/apis/GROUP/VERSION`) and in
//! v2's (`/openapi/v2`, converted by `pkg/controller/openapi/v2`'s `ToStructuralOpenAPIV2`).
//! The paths beside them are the server's (`apfkit_apiserver`'s `http/custom_openapi.rs`).

use apfkit_apiserver::store::CustomOpenApi;
use apfkit_runtime::identity::GroupVersionKind;
use serde_json::{Map, Value, json};

use crate::published::{API_VERSION, KIND, METADATA, rest_friendly_name};

/// What `addEmbeddedProperties` writes of an embedded resource's `apiVersion` and `kind`.
const EMBEDDED_API_VERSION: &str = "apiVersion defines the versioned schema of this \
    representation of an object. More info: \
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND: &str = "kind is a string value representing the type of this object. In \
    CamelCase. More info: \
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
/// `PartialObjectMetadataList`'s description of `metadata`.
const LIST_METADATA: &str = "Standard list metadata. More info: \
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/// Nesting past which a schema is not walked (a structural schema is far shallower; the
/// CRD's own checks bound it).
const MAX_DEPTH: usize = 64;

/// One version of a custom resource as its CRD describes it, for [`custom_openapi`].
pub(crate) struct PublishedVersion<'a> {
    /// The group, the version and the kind.
    pub(crate) kind: &'a GroupVersionKind,
    pub(crate) list_kind: &'a str,
    pub(crate) plural: &'a str,
    /// The version's `openAPIV3Schema`, if it has one.
    pub(crate) schema: Option<&'a Value>,
    /// The CRD's `spec.preserveUnknownFields`.
    pub(crate) preserve_unknown_fields: bool,
    pub(crate) status: bool,
    pub(crate) scale: bool,
    /// The JSON paths of the version's `selectableFields`.
    pub(crate) selectable_fields: &'a [String],
}

/// The version's schemas as apiextensions-apiserver publishes them.
pub(crate) fn custom_openapi(version: &PublishedVersion<'_>) -> CustomOpenApi {
    let schema = version.schema.map(|schema| {
        let mut schema = schema.clone();
        integral_numbers(&mut schema, 0);
        schema
    });
    let version = &PublishedVersion {
        schema: schema.as_ref(),
        ..*version
    };
    CustomOpenApi {
        kind: kind_schema(version, false),
        list: list_schema(version, false),
        kind_v2: kind_schema(version, true),
        list_v2: list_schema(version, true),
        status: version.status,
        scale: version.scale,
    }
}

/// Every whole number of `schema` written as Go writes a float64 of it (`0`, not `0.0`):
/// the CRD's numbers (`minimum`, `maximum`, `multipleOf`) are read as floats.
fn integral_numbers(schema: &mut Value, depth: usize) {
    if depth > MAX_DEPTH * 4 {
        return;
    }
    match schema {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 1e15
            {
                // Below 2^53 the integer is the float; past it, Go writes the shortest
                // digits that read back, not the integer's: those are left as they are.
                #[allow(clippy::cast_possible_truncation)]
                let whole = f as i64;
                *schema = Value::from(whole);
            }
        }
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| integral_numbers(v, depth + 1)),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| integral_numbers(v, depth + 1)),
        _ => {}
    }
}

/// A reference to one of kube's definitions, in the document's form: v2 puts a reference
/// beside a description, v3 wraps it in `allOf` (kube-openapi's spec3 writing).
fn reference(name: &str, description: &str, v2: bool) -> Value {
    if v2 {
        json!({"description": description, "$ref": format!("#/definitions/{name}")})
    } else {
        json!({"description": description, "allOf": [{"$ref": format!("#/components/schemas/{name}")}]})
    }
}

/// `buildKubeNative`: the version's schema with kube's `apiVersion`, `kind` and `metadata`,
/// embedded resources given theirs, and the kind named in `x-kubernetes-group-version-kind`.
fn kind_schema(version: &PublishedVersion<'_>, v2: bool) -> Value {
    let preserves = version.preserve_unknown_fields
        || version
            .schema
            .is_some_and(|s| s.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true)));
    let mut schema = match version.schema {
        // kubectl would take properties to forbid every other field.
        Some(_) if v2 && preserves => json!({"type": "object"}),
        None => json!({"type": "object"}),
        Some(schema) => {
            let mut schema = schema.clone();
            unfold(&mut schema, 0);
            if v2 {
                to_v2(&mut schema, 0);
            }
            add_type_meta(&mut schema, API_VERSION, KIND, v2);
            add_embedded_properties(&mut schema, v2, 0);
            schema
        }
    };
    let kind = version.kind;
    schema["x-kubernetes-group-version-kind"] =
        json!([{"group": kind.group, "version": kind.version, "kind": kind.kind}]);
    add_selectable_fields(&mut schema, version);
    schema
}

/// `buildListSchema`: the list of the kind.
fn list_schema(version: &PublishedVersion<'_>, v2: bool) -> Value {
    let kind = version.kind;
    let item = rest_friendly_name(kind);
    let item = if v2 {
        format!("#/definitions/{item}")
    } else {
        format!("#/components/schemas/{item}")
    };
    let mut schema = json!({
        "description": format!("{} is a list of {}", version.list_kind, kind.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": API_VERSION, "type": "string"},
            "items": {
                "description": format!(
                    "List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                    version.plural
                ),
                "type": "array",
                "items": {"$ref": item},
            },
            "kind": {"description": KIND, "type": "string"},
            "metadata": reference(LIST_META, LIST_METADATA, v2),
        },
        "x-kubernetes-group-version-kind": [{
            "group": kind.group, "version": kind.version, "kind": version.list_kind,
        }],
    });
    add_selectable_fields(&mut schema, version);
    schema
}

fn add_selectable_fields(schema: &mut Value, version: &PublishedVersion<'_>) {
    if version.selectable_fields.is_empty() {
        return;
    }
    let fields: Vec<Value> = version
        .selectable_fields
        .iter()
        .map(|path| json!({"fieldPath": path.strip_prefix('.').unwrap_or(path)}))
        .collect();
    schema["x-kubernetes-selectable-fields"] = Value::Array(fields);
}

/// Gives an object schema `apiVersion` and `kind` (strings described so) and `metadata`, a
/// reference to ObjectMeta (`addTypeMetaProperties`, and `addEmbeddedProperties`' own
/// descriptions for an embedded resource).
fn add_type_meta(schema: &mut Value, api_version: &str, kind: &str, v2: bool) {
    let properties = properties_of(schema);
    properties.insert(
        "apiVersion".into(),
        json!({"description": api_version, "type": "string"}),
    );
    properties.insert(
        "kind".into(),
        json!({"description": kind, "type": "string"}),
    );
    properties.insert("metadata".into(), reference(OBJECT_META, METADATA, v2));
}

/// The `properties` of an object schema, made if missing.
fn properties_of(schema: &mut Value) -> &mut Map<String, Value> {
    if !schema.is_object() {
        *schema = json!({});
    }
    let object = schema.as_object_mut().expect("an object");
    let properties = object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if !properties.is_object() {
        *properties = Value::Object(Map::new());
    }
    properties.as_object_mut().expect("an object")
}

/// The subschemas a structural schema has: its properties, items and additional properties.
fn children(schema: &mut Value) -> Vec<&mut Value> {
    let Value::Object(object) = schema else {
        return Vec::new();
    };
    let mut children = Vec::new();
    for (key, value) in object.iter_mut() {
        match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => children.extend(properties.values_mut()),
            ("items" | "additionalProperties", child @ Value::Object(_)) => children.push(child),
            _ => {}
        }
    }
    children
}

fn is_true(schema: &Value, key: &str) -> bool {
    schema.get(key) == Some(&Value::Bool(true))
}

/// `Structural.Unfold`: an `x-kubernetes-int-or-string` field gets the `anyOf` of an integer
/// and a string, unless it has one already.
fn unfold(schema: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if is_true(schema, "x-kubernetes-int-or-string") && !has_int_or_string_pattern(schema) {
        let int_or_string = json!([{"type": "integer"}, {"type": "string"}]);
        let object = schema.as_object_mut().expect("checked");
        match object.get_mut("anyOf") {
            None => {
                object.insert("anyOf".into(), int_or_string);
            }
            Some(_) => {
                let all_of = object
                    .entry("allOf")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(all_of) = all_of {
                    all_of.insert(0, json!({"anyOf": int_or_string}));
                }
            }
        }
    }
    for child in children(schema) {
        unfold(child, depth + 1);
    }
}

/// Whether the schema already says "an integer or a string" the way `isIntOrStringAnyOfPattern`
/// and `isIntOrStringAllOfPattern` recognise.
fn has_int_or_string_pattern(schema: &Value) -> bool {
    let int_or_string = |any_of: Option<&Value>| {
        any_of.and_then(Value::as_array).is_some_and(|choices| {
            choices.len() == 2
                && choices[0].get("type") == Some(&json!("integer"))
                && choices[1].get("type") == Some(&json!("string"))
        })
    };
    int_or_string(schema.get("anyOf"))
        || schema
            .get("allOf")
            .and_then(Value::as_array)
            .and_then(|all_of| all_of.first())
            .is_some_and(|first| int_or_string(first.get("anyOf")))
}

/// `ToStructuralOpenAPIV2`: what OpenAPI v2 and kubectl cannot take, removed at every level.
fn to_v2(schema: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let Value::Object(object) = schema else {
        return;
    };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        object.remove(junctor);
    }
    // Not carried by kube's v2 document.
    object.remove("default");
    if object.remove("nullable") == Some(Value::Bool(true)) {
        object.remove("type");
        object.remove("items");
        object.remove("properties");
    }
    let preserves = object.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if preserves {
        object.remove("items");
        object.remove("properties");
    }
    if !object.contains_key("items") && object.get("type") == Some(&json!("array")) {
        object.remove("type");
    }
    if preserves && object.get("type") == Some(&json!("object")) {
        object.remove("type");
    }
    let nullable: Vec<String> = object
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .filter(|(_, p)| is_true(p, "nullable"))
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default();
    let additional_nullable = object
        .get("additionalProperties")
        .is_some_and(|a| is_true(a, "nullable"));
    if additional_nullable {
        object.remove("required");
    } else if !nullable.is_empty()
        && let Some(Value::Array(required)) = object.get_mut("required")
    {
        required.retain(|r| !r.as_str().is_some_and(|r| nullable.iter().any(|n| n == r)));
        if required.is_empty() {
            object.remove("required");
        }
    }
    for child in children(schema) {
        to_v2(child, depth + 1);
    }
}

/// `addEmbeddedProperties`: every object marked `x-kubernetes-embedded-resource` gets
/// `apiVersion`, `kind` (both required) and `metadata`; in v2, not one that keeps unknown
/// fields.
fn add_embedded_properties(schema: &mut Value, v2: bool, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    for child in children(schema) {
        add_embedded_properties(child, v2, depth + 1);
    }
    if v2 && is_true(schema, "x-kubernetes-preserve-unknown-fields") {
        return;
    }
    if !is_true(schema, "x-kubernetes-embedded-resource") {
        return;
    }
    add_type_meta(schema, EMBEDDED_API_VERSION, EMBEDDED_KIND, v2);
    let required = schema
        .as_object_mut()
        .expect("an object")
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(required) = required {
        for name in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == name) {
                required.push(name.into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version<'a>(kind: &'a GroupVersionKind, schema: Option<&'a Value>) -> PublishedVersion<'a> {
        PublishedVersion {
            kind,
            list_kind: "FooList",
            plural: "foos",
            schema,
            preserve_unknown_fields: false,
            status: true,
            scale: false,
            selectable_fields: &[],
        }
    }

    #[test]
    fn v3_keeps_the_schema_and_adds_kubes_fields() {
        let kind = GroupVersionKind::from_static("e2e.example.com", "v1", "Foo");
        let schema = json!({"type": "object", "properties": {
            "q": {"x-kubernetes-int-or-string": true},
            "r": {"type": "integer", "default": 1},
            "e": {"type": "object", "x-kubernetes-embedded-resource": true,
                  "x-kubernetes-preserve-unknown-fields": true},
        }});
        let published = custom_openapi(&version(&kind, Some(&schema)));
        let properties = &published.kind["properties"];
        assert_eq!(
            properties["q"]["anyOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
        assert_eq!(properties["r"]["default"], 1);
        assert_eq!(
            properties["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(properties["e"]["required"], json!(["kind", "apiVersion"]));
        assert_eq!(
            published.kind["x-kubernetes-group-version-kind"],
            json!([{"group": "e2e.example.com", "version": "v1", "kind": "Foo"}])
        );
        assert_eq!(
            published.list["properties"]["items"]["items"]["$ref"],
            "#/components/schemas/com.example.e2e.v1.Foo"
        );
    }

    #[test]
    fn v2_drops_what_kubectl_cannot_take() {
        let kind = GroupVersionKind::from_static("e2e.example.com", "v1", "Foo");
        let schema = json!({"type": "object", "required": ["n", "s"], "properties": {
            "n": {"type": "string", "nullable": true},
            "s": {"type": "string", "default": "x"},
            "q": {"x-kubernetes-int-or-string": true},
            "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                  "properties": {"a": {"type": "string"}}},
            "e": {"type": "object", "x-kubernetes-embedded-resource": true,
                  "x-kubernetes-preserve-unknown-fields": true},
        }});
        let published = custom_openapi(&version(&kind, Some(&schema)));
        let v2 = &published.kind_v2;
        assert_eq!(v2["required"], json!(["s"]));
        assert_eq!(v2["properties"]["n"], json!({}));
        assert_eq!(v2["properties"]["s"], json!({"type": "string"}));
        assert_eq!(
            v2["properties"]["q"],
            json!({"x-kubernetes-int-or-string": true})
        );
        assert_eq!(
            v2["properties"]["p"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert!(v2["properties"]["e"].get("properties").is_none());
        assert_eq!(
            v2["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        // A root that keeps unknown fields is published as an open object.
        let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let published = custom_openapi(&version(&kind, Some(&open)));
        assert_eq!(
            published.kind_v2,
            json!({"type": "object", "x-kubernetes-group-version-kind":
                [{"group": "e2e.example.com", "version": "v1", "kind": "Foo"}]})
        );
    }

    #[test]
    fn a_deep_or_odd_schema_is_walked_within_bounds() {
        let kind = GroupVersionKind::from_static("g", "v1", "Foo");
        let mut deep = json!({"type": "string"});
        for _ in 0..500 {
            deep = json!({"type": "object", "properties": {"a": deep}});
        }
        let published = custom_openapi(&version(&kind, Some(&deep)));
        assert_eq!(published.kind["type"], "object");
        let odd = json!({"properties": 3, "items": [1], "required": "x"});
        let published = custom_openapi(&version(&kind, Some(&odd)));
        assert!(published.kind_v2["properties"]["metadata"].is_object());
    }
}
