//! The schema of a custom resource's version that server-side apply merges by, as
//! apiextensions-apiserver's OpenAPI builder writes it (`pkg/controller/openapi/builder/builder.go`):
//! the version's `openAPIV3Schema` with `apiVersion`, `kind` and ObjectMeta's `metadata` at its
//! root (`addTypeMetaProperties`) and in every object marked `x-kubernetes-embedded-resource`
//! (`addEmbeddedProperties`), named by its group, version and kind with the group's domain
//! reversed (kube-openapi's `ToRESTFriendlyName`), as a draft 2020-12 schema whose `$defs`
//! hold ObjectMeta. The OpenAPI documents publish the builder's own forms (`crate::openapi`).

use apfkit_runtime::identity::GroupVersionKind;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};

pub(crate) const API_VERSION: &str = "APIVersion defines the versioned schema of this representation of \
    an object. Servers should convert recognized schemas to the latest internal value, and may \
    reject unrecognized values. More info: \
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
pub(crate) const KIND: &str = "Kind is a string value representing the REST resource this object \
    represents. Servers may infer this from the endpoint the client submits requests to. Cannot \
    be updated. In CamelCase. More info: \
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
pub(crate) const METADATA: &str = "Standard object's metadata. More info: \
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Nesting past which embedded resources are not looked for (a structural schema is far
/// shallower; the CRD's own checks bound it).
const MAX_DEPTH: usize = 64;

/// The published schema of `schema`, the `openAPIV3Schema` of `kind`: a draft 2020-12 schema
/// whose `title` is its definition's name and whose `$defs` hold ObjectMeta and the
/// definitions it uses (k8s-openapi's).
pub(crate) fn published(schema: &Value, kind: &GroupVersionKind) -> Value {
    let mut generator = schemars::SchemaGenerator::default();
    let meta = generator.subschema_for::<ObjectMeta>().to_value();
    let definitions = generator.take_definitions(true);
    let mut published = schema.clone();
    add_type_meta(&mut published, &meta);
    embed(&mut published, &meta, 0);
    if let Value::Object(root) = &mut published {
        root.insert("title".into(), rest_friendly_name(kind).into());
        root.insert("$defs".into(), Value::Object(definitions));
    }
    published
}

/// kube-openapi's `ToRESTFriendlyName` of `group/version/kind`: `com.example.v1.Kind` for
/// `example.com`.
pub(crate) fn rest_friendly_name(kind: &GroupVersionKind) -> String {
    let reversed: Vec<&str> = kind.group.rsplit('.').collect();
    format!("{}.{}.{}", reversed.join("."), kind.version, kind.kind)
}

/// Gives an object schema `apiVersion`, `kind` and `metadata` (a reference to ObjectMeta).
fn add_type_meta(schema: &mut Value, meta: &Value) {
    let Value::Object(object) = schema else {
        return;
    };
    let properties = object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(properties) = properties else {
        return;
    };
    properties.insert(
        "apiVersion".into(),
        json!({"type": "string", "description": API_VERSION}),
    );
    properties.insert(
        "kind".into(),
        json!({"type": "string", "description": KIND}),
    );
    let mut metadata = meta.clone();
    if let Value::Object(metadata) = &mut metadata {
        metadata.insert("description".into(), METADATA.into());
    }
    properties.insert("metadata".into(), metadata);
}

/// Adds type meta to every object under `schema` marked `x-kubernetes-embedded-resource`.
fn embed(schema: &mut Value, meta: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let Value::Object(object) = schema else {
        return;
    };
    for key in ["properties", "patternProperties"] {
        if let Some(Value::Object(children)) = object.get_mut(key) {
            for child in children.values_mut() {
                embed_here(child, meta, depth);
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child @ Value::Object(_)) = object.get_mut(key) {
            embed_here(child, meta, depth);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(children)) = object.get_mut(key) {
            for child in children {
                embed(child, meta, depth + 1);
            }
        }
    }
}

fn embed_here(child: &mut Value, meta: &Value, depth: usize) {
    if child.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)) {
        add_type_meta(child, meta);
    }
    embed(child, meta, depth + 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_and_embedded_resources_get_type_meta_and_object_meta() {
        let schema = json!({
            "description": "Foo CRD for Testing",
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                             "x-kubernetes-preserve-unknown-fields": true},
                "plain": {"type": "object"},
            }}},
        });
        let out = published(
            &schema,
            &GroupVersionKind::from_static("crd-publish-openapi-test-foo.example.com", "v1", "Foo"),
        );
        assert_eq!(
            out["title"],
            "com.example.crd-publish-openapi-test-foo.v1.Foo"
        );
        assert_eq!(out["description"], "Foo CRD for Testing");
        let meta_ref = json!("#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        for object in [&out, &out["properties"]["spec"]["properties"]["template"]] {
            assert_eq!(object["properties"]["apiVersion"]["type"], "string");
            assert!(
                object["properties"]["kind"]["description"]
                    .as_str()
                    .unwrap()
                    .starts_with("Kind is a string value")
            );
            assert_eq!(object["properties"]["metadata"]["$ref"], meta_ref);
        }
        assert!(
            out["properties"]["spec"]["properties"]["plain"]
                .get("properties")
                .is_none()
        );
        let definitions = out["$defs"].as_object().unwrap();
        for name in ["ObjectMeta", "ManagedFieldsEntry", "OwnerReference", "Time"] {
            assert!(
                definitions.contains_key(&format!("io.k8s.apimachinery.pkg.apis.meta.v1.{name}")),
                "{name}"
            );
        }
        // The CRD's own schema is left as it was.
        assert_eq!(schema["properties"].as_object().unwrap().len(), 1);
    }
}
