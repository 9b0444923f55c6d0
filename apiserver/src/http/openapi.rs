//! OpenAPI v3 as kube-apiserver publishes it: an index at `/openapi/v3` and a document per
//! group-version with every operation and its parameters (kubectl's `--validate=strict` looks
//! for `fieldValidation` on the PATCH operation of the kind, cli-runtime
//! `resource/query_param_verifier_v3.go`) and the kinds' schemas with
//! `x-kubernetes-group-version-kind` (which `kubectl explain` finds them by).
//!
//! kube's own group-versions are published with kube-apiserver's documents, trimmed to the
//! resources served (`crate::kube_openapi`). Any other is made here: its schemas are the JSON
//! Schemas (draft 2020-12) the generated types describe themselves with, moved to
//! `components/schemas` and written in OpenAPI 3.0's dialect (`nullable` instead of a `null`
//! type).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::custom_openapi::CustomKind;
use super::discovery::Group;
use super::reviews::Review;
use crate::kube_openapi;
use crate::store::Served;
use apfkit_runtime::identity::{GroupVersion, GroupVersionKind};

/// One of the server's OpenAPI v3 documents: its root (`apis/GROUP/VERSION`, `api/v1`, ...),
/// its JSON, and its hash (SHA-512, upper-case hex), which the index and the document's
/// entity tag name: computed once, when the documents are made.
/// (Its JSON is shared, so that an answer does not copy it.)
pub(super) struct Document {
    pub(super) root: String,
    pub(super) json: bytes::Bytes,
    pub(super) hash: String,
}

impl Document {
    fn new(root: String, json: Vec<u8>) -> Self {
        let hash = super::entity_tag::sha512_hex(&json);
        Document {
            root,
            json: json.into(),
            hash,
        }
    }
}

/// The `/openapi/v3` index: a path per group-version, with the hash of its document.
pub(super) fn index(documents: &[Document]) -> Value {
    let mut paths = Map::new();
    for document in documents {
        let (root, hash) = (&document.root, &document.hash);
        paths.insert(
            root.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{root}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// The documents of the server, as (its root: `apis/GROUP/VERSION`, `api/v1`, `apis/GROUP`,
/// `api`, `apis`, `version`; JSON bytes). A group-version whose resources are all kube's own
/// ([`crate::store::ResourceConfig::with_kube_openapi`]; the reviews are) has kube-apiserver's
/// document, trimmed to what is served, and its group kube's group document; any other has
/// one made of its resources' schemas. The root documents are kube's. `release` is the
/// served release as kube writes it in kube's documents (`MAJOR.MINOR`), `git_version` the
/// server's version, written in the others.
pub(super) fn documents<H>(
    resources: &[std::sync::Arc<Served<H>>],
    groups: &[Group],
    reviews: &[&Review],
    release: &str,
    git_version: &str,
) -> Vec<Document> {
    let mut documents = Vec::new();
    let mut push = |root: String, document: &Value| {
        documents.push(Document::new(
            root,
            serde_json::to_vec(document).unwrap_or_default(),
        ));
    };
    let mut roots = vec!["apis", "version"];
    if groups.iter().any(|g| g.name.is_empty()) {
        roots.push("api");
    }
    for root in roots {
        if let Some(document) = kube_openapi::trimmed(root, &[], release) {
            push(root.to_owned(), &document);
        }
    }
    for group in groups {
        let kube = |version: Option<&str>| all_kube(resources, &group.name, version);
        if !group.name.is_empty()
            && kube(None)
            && let Some(document) =
                kube_openapi::trimmed(&format!("apis/{}", group.name), &[], release)
        {
            push(format!("apis/{}", group.name), &document);
        }
        for version_name in &group.versions {
            let root = GroupVersion::new(group.name.clone(), version_name.clone()).api_root();
            let published = kube(Some(version_name))
                .then(|| {
                    let served = served_paths(resources, reviews, &group.name, version_name);
                    kube_openapi::trimmed(&root, &served, release)
                })
                .flatten()
                .or_else(|| custom_document(resources, &group.name, version_name));
            let document = published
                .unwrap_or_else(|| document(resources, &group.name, version_name, git_version));
            push(root, &document);
        }
    }
    documents
}

/// Whether every resource of `group` (served in `version`, when given) is one of kube's own,
/// published with kube-apiserver's documents.
fn all_kube<H>(
    resources: &[std::sync::Arc<Served<H>>],
    group: &str,
    version: Option<&str>,
) -> bool {
    resources
        .iter()
        .filter(|s| s.config.group == group)
        .filter(|s| version.is_none_or(|v| s.version(v).is_some()))
        .all(|s| s.config.kube_openapi)
}

/// The custom resources of `group`/`version`, each with what it publishes there, if every
/// resource served there is one.
fn custom_kinds<'a, H>(
    resources: &'a [std::sync::Arc<Served<H>>],
    group: &'a str,
    version: &'a str,
) -> Option<Vec<CustomKind<'a>>> {
    let mut kinds = Vec::new();
    for served in resources
        .iter()
        .filter(|s| s.config.group == group && s.version(version).is_some())
    {
        let published = served.config.custom_openapi.as_ref()?.get(version)?;
        kinds.push(CustomKind {
            group,
            version,
            kind: &served.config.kind,
            plural: &served.plural,
            namespaced: served.config.namespaced,
            published,
        });
    }
    (!kinds.is_empty()).then_some(kinds)
}

/// The document of a group-version of custom resources, as apiextensions-apiserver builds
/// it: every CRD's paths and schemas of the version merged.
fn custom_document<H>(
    resources: &[std::sync::Arc<Served<H>>],
    group: &str,
    version: &str,
) -> Option<Value> {
    let kinds = custom_kinds(resources, group, version)?;
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for kind in &kinds {
        kind.add_v3(&mut paths, &mut schemas);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// The OpenAPI v2 document in the forms `/openapi/v2` answers.
pub(super) struct Swagger {
    pub(super) json: Vec<u8>,
    /// gnostic's `openapi.v2.Document`, as kube-openapi's `ToProtoBinary` makes it of the JSON.
    pub(super) protobuf: Vec<u8>,
    /// The entity tag of both (kube-openapi's: the SHA-512 of the JSON in upper-case hex;
    /// the protobuf shares it, the answer varying by `Accept`).
    pub(super) tag: String,
}

/// The OpenAPI v2 document of the server, `/openapi/v2`: kube-apiserver's, trimmed to the
/// resources of kube's kinds served, with every custom resource's version served added as
/// apiextensions-apiserver adds it. Kinds of neither (a generated scheme's) are in v3 only.
pub(super) fn swagger<H>(
    resources: &[std::sync::Arc<Served<H>>],
    groups: &[Group],
    reviews: &[&Review],
    release: &str,
) -> Option<Swagger> {
    let document = swagger_document(resources, groups, reviews, release)?;
    let json = serde_json::to_vec(&document).ok()?;
    // Operations name their kind from a Go struct (group, version, kind) in the aggregator's
    // paths, from a map (sorted) in kube-apiserver's and apiextensions-apiserver's.
    let protobuf = apfkit_wire::gnostic::encode(&document, |path| {
        path.starts_with("/apis/apiregistration.k8s.io/")
    });
    let tag = super::entity_tag::sha512_hex(&json);
    Some(Swagger {
        json,
        protobuf,
        tag,
    })
}

/// The v2 document as JSON.
fn swagger_document<H>(
    resources: &[std::sync::Arc<Served<H>>],
    groups: &[Group],
    reviews: &[&Review],
    release: &str,
) -> Option<Value> {
    let mut kube_served = Vec::new();
    let mut kube_groups = Vec::new();
    let mut custom = Vec::new();
    for group in groups {
        if !group.name.is_empty() && all_kube(resources, &group.name, None) {
            kube_groups.push(group.name.as_str());
        }
        for version in &group.versions {
            if all_kube(resources, &group.name, Some(version)) {
                let root = GroupVersion::new(group.name.clone(), version.clone()).api_root();
                kube_served.push((root, served_paths(resources, reviews, &group.name, version)));
            } else if let Some(kinds) = custom_kinds(resources, &group.name, version) {
                custom.extend(kinds);
            }
        }
    }
    let core = groups.iter().any(|g| g.name.is_empty());
    let mut document = kube_openapi::swagger_trimmed(&kube_served, &kube_groups, core, release)?;
    let mut paths = Map::new();
    let mut definitions = Map::new();
    let mut shared = BTreeSet::new();
    for kind in &custom {
        kind.add_v2(&mut paths, &mut definitions, &mut shared);
    }
    let parameters: Map<String, Value> = shared
        .into_iter()
        .filter_map(|name| {
            let parameter = kube_openapi::shared_parameter_named(&name)?.clone();
            Some((name, parameter))
        })
        .collect();
    // kube's definitions the custom resources reach (the trimmed document has those its own
    // paths reach).
    let mut added = json!({"paths": paths, "definitions": definitions, "parameters": parameters});
    let mut reached = BTreeSet::new();
    kube_openapi::reach_in(
        &added,
        kube_openapi::DEFINITIONS,
        kube_openapi::definition,
        &mut reached,
    );
    for key in ["paths", "definitions", "parameters"] {
        if let Value::Object(part) = added[key].take() {
            object(key, &mut document)?.extend(part);
        }
    }
    let definitions = object("definitions", &mut document)?;
    for name in reached {
        if let Some(definition) = kube_openapi::definition(&name) {
            definitions
                .entry(name)
                .or_insert_with(|| definition.clone());
        }
    }
    Some(document)
}

/// The object at `key` of `document`.
fn object<'a>(key: &str, document: &'a mut Value) -> Option<&'a mut Map<String, Value>> {
    document.get_mut(key)?.as_object_mut()
}

/// The resources of `group`/`version` and the subresources of each, as paths of kube's
/// documents name them.
fn served_paths<'a, H>(
    resources: &'a [std::sync::Arc<Served<H>>],
    reviews: &[&'a Review],
    group: &str,
    version: &str,
) -> Vec<kube_openapi::ServedPaths<'a>> {
    let mut served: Vec<_> = resources
        .iter()
        .filter(|s| s.config.group == group && s.version(version).is_some())
        .map(|s| kube_openapi::ServedPaths {
            plural: &s.plural,
            subresources: [
                s.config.status.then_some("status"),
                s.config.scale.is_some().then_some("scale"),
                s.config.finalize.then_some("finalize"),
            ]
            .into_iter()
            .flatten()
            .chain(
                s.config
                    .created_subresources
                    .iter()
                    .map(|(name, _)| name.as_str()),
            )
            .collect(),
        })
        .collect();
    served.extend(
        reviews
            .iter()
            .filter(|r| r.group == group && version == "v1")
            .map(|r| kube_openapi::ServedPaths {
                plural: r.plural,
                subresources: Vec::new(),
            }),
    );
    served
}

fn document<H>(
    resources: &[std::sync::Arc<Served<H>>],
    group: &str,
    version: &str,
    server_version: &str,
) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for served in resources.iter().filter(|s| s.config.group == group) {
        if served.version(version).is_none() {
            continue;
        }
        let config = &served.config;
        let kind_ref = add_schema(&mut schemas, served, version, &config.kind);
        let list_ref = add_schema(&mut schemas, served, version, &served.list_kind());
        let gvk = json!({"group": group, "version": version, "kind": config.kind});
        let root = GroupVersion::new(group.to_owned(), version.to_owned()).api_root();
        let base = if config.namespaced {
            format!("/{root}/namespaces/{{namespace}}/{}", served.plural)
        } else {
            format!("/{root}/{}", served.plural)
        };
        let scope = if config.namespaced {
            vec![path_param("namespace")]
        } else {
            Vec::new()
        };
        let operation =
            |action: &str, id: &str, parameters: Vec<Value>, response: &Value, body: bool| {
                let mut op = json!({
                    "operationId": format!("{id}{}", config.kind),
                    "parameters": parameters,
                    "responses": {"200": {"description": "OK", "content": content(response)}},
                    "x-kubernetes-action": action,
                    "x-kubernetes-group-version-kind": gvk,
                });
                if body {
                    op["requestBody"] = json!({"content": content(&kind_ref), "required": true});
                }
                op
            };
        let mut collection = json!({
            "get": operation("list", "list", list_parameters(), &list_ref, false),
            "post": operation("post", "create", write_parameters(), &kind_ref, true),
            "delete": operation("deletecollection", "deleteCollection", list_parameters(), &json!({"type": "object"}), false),
            "parameters": [query_param("pretty", "string")],
        });
        collection["parameters"]
            .as_array_mut()
            .expect("an array")
            .extend(scope.clone());
        paths.insert(base.clone(), collection);
        let mut item_parameters = vec![path_param("name"), query_param("pretty", "string")];
        item_parameters.extend(scope.clone());
        let mut patch = operation("patch", "patch", patch_parameters(), &kind_ref, false);
        patch["requestBody"] = patch_body();
        paths.insert(
            format!("{base}/{{name}}"),
            json!({
                "get": operation("get", "read", Vec::new(), &kind_ref, false),
                "put": operation("put", "replace", write_parameters(), &kind_ref, true),
                "patch": patch,
                "delete": operation("delete", "delete", vec![query_param("dryRun", "string")], &json!({"type": "object"}), false),
                "parameters": item_parameters.clone(),
            }),
        );
        if config.status {
            let mut patch = operation("patch", "patchStatus", patch_parameters(), &kind_ref, false);
            patch["requestBody"] = patch_body();
            paths.insert(
                format!("{base}/{{name}}/status"),
                json!({
                    "get": operation("get", "readStatus", Vec::new(), &kind_ref, false),
                    "put": operation("put", "replaceStatus", write_parameters(), &kind_ref, true),
                    "patch": patch,
                    "parameters": item_parameters,
                }),
            );
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": server_version},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

fn content(schema: &Value) -> Value {
    json!({
        "application/json": {"schema": schema},
        "application/yaml": {"schema": schema},
        "application/vnd.kubernetes.protobuf": {"schema": schema},
    })
}

fn patch_body() -> Value {
    let object = json!({"schema": {"type": "object"}});
    json!({
        "content": {
            "application/apply-patch+yaml": object,
            "application/json-patch+json": object,
            "application/merge-patch+json": object,
            "application/strategic-merge-patch+json": object,
        },
        "required": true,
    })
}

fn query_param(name: &str, type_name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": type_name, "uniqueItems": true}})
}

fn path_param(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}})
}

fn list_parameters() -> Vec<Value> {
    [
        ("allowWatchBookmarks", "boolean"),
        ("continue", "string"),
        ("fieldSelector", "string"),
        ("labelSelector", "string"),
        ("limit", "integer"),
        ("resourceVersion", "string"),
        ("resourceVersionMatch", "string"),
        ("timeoutSeconds", "integer"),
        ("watch", "boolean"),
    ]
    .iter()
    .map(|(name, type_name)| query_param(name, type_name))
    .collect()
}

fn write_parameters() -> Vec<Value> {
    ["dryRun", "fieldManager", "fieldValidation"]
        .iter()
        .map(|name| query_param(name, "string"))
        .collect()
}

fn patch_parameters() -> Vec<Value> {
    let mut parameters = write_parameters();
    parameters.push(query_param("force", "boolean"));
    parameters
}

/// Adds the schema of `kind` in `version` and the definitions it uses; answers a reference
/// to it (an open object when the resource has no schema for it).
fn add_schema<H>(
    schemas: &mut Map<String, Value>,
    served: &Served<H>,
    version: &str,
    kind: &str,
) -> Value {
    let gvk = GroupVersionKind::new(
        served.config.group.clone(),
        version.to_owned(),
        kind.to_owned(),
    );
    let Some(mut schema) = served.config.schema.as_ref().and_then(|f| f(&gvk)) else {
        return json!({"type": "object"});
    };
    let definitions = schema
        .as_object_mut()
        .and_then(|s| s.remove("$defs"))
        .and_then(|d| match d {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default();
    for (name, mut definition) in definitions {
        to_openapi_dialect(&mut definition);
        schemas.entry(name).or_insert(definition);
    }
    let name = schema
        .get("title")
        .and_then(Value::as_str)
        .map_or_else(|| format!("{}.{version}.{kind}", gvk.group), str::to_owned);
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
        map.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{"group": gvk.group, "version": version, "kind": kind}]),
        );
    }
    to_openapi_dialect(&mut schema);
    schemas.insert(name.clone(), schema);
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// Rewrites a draft 2020-12 schema in OpenAPI 3.0's dialect: `$defs` references point into
/// `components/schemas`, a reference beside other keywords (a description, a default) is
/// wrapped in `allOf` as kube-apiserver writes it (OpenAPI 3.0 ignores a `$ref`'s siblings),
/// `type: [T, "null"]` becomes `type: T` with `nullable`, and `const` an `enum` of one value.
fn to_openapi_dialect(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get_mut("$ref")
                && let Some(name) = reference.strip_prefix("#/$defs/")
            {
                *reference = format!("#/components/schemas/{name}");
            }
            // schemars writes an optional struct as `anyOf: [{$ref}, {type: null}]`.
            if let Some(Value::Array(choices)) = map.get("anyOf")
                && choices.len() == 2
                && let Some(null_at) = choices.iter().position(|c| *c == json!({"type": "null"}))
            {
                let only = choices[1 - null_at].clone();
                map.remove("anyOf");
                match only {
                    Value::Object(inner) if inner.len() == 1 && inner.contains_key("$ref") => {
                        map.insert("$ref".into(), inner["$ref"].clone());
                    }
                    other => {
                        map.insert("allOf".into(), json!([other]));
                    }
                }
                map.insert("nullable".into(), true.into());
            }
            if let Some(Value::String(reference)) = map.get_mut("$ref")
                && let Some(name) = reference.strip_prefix("#/$defs/")
            {
                *reference = format!("#/components/schemas/{name}");
            }
            if map.len() > 1
                && let Some(reference) = map.remove("$ref")
            {
                map.insert("allOf".into(), json!([{"$ref": reference}]));
            }
            if let Some(Value::Array(types)) = map.get("type") {
                let named: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                let nullable = named.len() < types.len();
                if let [only] = named.as_slice() {
                    map.insert("type".into(), only.clone());
                }
                if nullable {
                    map.insert("nullable".into(), true.into());
                }
            }
            if let Some(value) = map.remove("const") {
                map.insert("enum".into(), json!([value]));
            }
            for value in map.values_mut() {
                to_openapi_dialect(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(to_openapi_dialect),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draft_2020_12_is_rewritten_for_openapi_3_0() {
        let mut schema = json!({
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"$ref": "#/$defs/io.k8s.X"},
                "c": {"const": "v1"},
                "d": {"items": {"anyOf": [{"$ref": "#/$defs/Y"}, {"type": "null"}]}},
            }
        });
        to_openapi_dialect(&mut schema);
        assert_eq!(
            schema["properties"]["a"],
            json!({"type": "string", "nullable": true})
        );
        assert_eq!(
            schema["properties"]["b"]["$ref"],
            "#/components/schemas/io.k8s.X"
        );
        assert_eq!(schema["properties"]["c"], json!({"enum": ["v1"]}));
        assert_eq!(
            schema["properties"]["d"]["items"],
            json!({"allOf": [{"$ref": "#/components/schemas/Y"}], "nullable": true})
        );
    }

    #[test]
    fn the_index_names_each_document_with_its_hash() {
        let index = index(&[
            Document::new("apis/g/v1".to_owned(), b"{}".to_vec()),
            Document::new("api/v1".to_owned(), b"{}".to_vec()),
        ]);
        let url = index["paths"]["apis/g/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/apis/g/v1?hash="));
        assert_eq!(url.len(), "/openapi/v3/apis/g/v1?hash=".len() + 128);
        // The core group's document, as kube-apiserver names it.
        let core = index["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(core.starts_with("/openapi/v3/api/v1?hash="));
    }
}
