//! CustomResourceDefinitions as generator input. Each version of an `apiextensions.k8s.io/v1`
//! CustomResourceDefinition becomes one OpenAPI document, shaped as kube-apiserver publishes a
//! CRD's group-version at `/openapi/v3/apis/<group>/<version>`: the kind (its
//! `openAPIV3Schema` with `apiVersion`, `kind` and `metadata` added), its list kind, the meta
//! types they use, and a read path that gives the plural and the scope. Definition names are
//! kube-apiserver's: the group's labels reversed, the version, the kind
//! (`com.example.stable.v1.CronTab` for `stable.example.com`).

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::load::{LoadedDocument, parse_document};

/// The meta/v1 definitions a kind and its list use (`ObjectMeta`, `ListMeta` and what they
/// reference), kept fresh by `cargo xtask codegen`.
const META: &str = include_str!("../data/meta-v1.json");

/// Prefix of the meta/v1 definitions.
const META_PREFIX: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

/// Limits of the YAML reader: CRDs are large (some over 1 MiB), but never this deep or big.
const MAX_DEPTH: usize = 64;
const MAX_NODES: usize = 5_000_000;

/// Refuses a CRD whose schemas kube-apiserver would refuse, with its message: an unknown
/// `type`, a pattern that does not compile, a CEL rule that does not parse or whose estimated
/// cost is over kube-apiserver's limit (feature `crd-checks`, on by default; `apfkit-crd`
/// compiles the schemas). Non-structural schemas and the rest of the definition are left to
/// the generator, which reads more than kube-apiserver takes.
pub(crate) fn check(origin: &str, index: usize, crd: &Value) -> Result<()> {
    #[cfg(feature = "crd-checks")]
    if let Err(err) = apfkit_crd::CustomResourceDefinition::compile_schemas(crd) {
        return Err(Error::Malformed {
            file: format!("{origin} (document {})", index + 1),
            pointer: "/spec".to_owned(),
            message: err.to_string(),
        });
    }
    #[cfg(not(feature = "crd-checks"))]
    let _ = (origin, index, crd);
    Ok(())
}

/// Whether `value` is an `apiextensions.k8s.io/v1` CustomResourceDefinition.
pub(crate) fn is_crd(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
}

/// Whether `value` is a `v1 List` (as `kubectl get crd -o yaml` prints).
pub(crate) fn is_list(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("List")
        && value.get("items").is_some_and(Value::is_array)
}

/// The objects of a document: the items of a `v1 List`, or the document itself.
pub(crate) fn items(value: &Value) -> Vec<&Value> {
    if is_list(value) {
        value["items"].as_array().into_iter().flatten().collect()
    } else {
        vec![value]
    }
}

/// Reads every document of a YAML or JSON stream; `origin` names the file in errors.
pub(crate) fn read_stream(origin: &str, bytes: &[u8]) -> Result<Vec<Value>> {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.max_nodes = MAX_NODES;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    let documents: Vec<Value> = serde_saphyr::from_slice_multiple_with_options(bytes, options)
        .map_err(|err| Error::Malformed {
            file: origin.to_owned(),
            pointer: "/".to_owned(),
            message: format!("not YAML or JSON: {err}"),
        })?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// One OpenAPI document per version of `crd`, the `index`-th document of `origin`.
pub(crate) fn documents(origin: &str, index: usize, crd: &Value) -> Result<Vec<LoadedDocument>> {
    let origin = format!("{origin} (document {})", index + 1);
    let field = |pointer: &str| -> Result<&str> {
        crd.pointer(pointer)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| malformed(&origin, pointer, "required string is missing"))
    };
    if crd.get("apiVersion").and_then(Value::as_str) != Some("apiextensions.k8s.io/v1") {
        return Err(Error::Unsupported {
            file: origin,
            pointer: "/apiVersion".to_owned(),
            message: "only apiextensions.k8s.io/v1 CustomResourceDefinitions are read".to_owned(),
        });
    }
    let group = field("/spec/group")?;
    let kind = field("/spec/names/kind")?;
    let plural = field("/spec/names/plural")?;
    let list_kind = crd
        .pointer("/spec/names/listKind")
        .and_then(Value::as_str)
        .map_or_else(|| format!("{kind}List"), str::to_owned);
    let namespaced = match crd.pointer("/spec/scope").and_then(Value::as_str) {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        _ => {
            return Err(malformed(
                &origin,
                "/spec/scope",
                "must be Namespaced or Cluster",
            ));
        }
    };
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| malformed(&origin, "/spec/versions", "must list at least one version"))?;
    let identity = Identity {
        group,
        kind,
        list_kind: &list_kind,
        plural,
        namespaced,
    };
    let mut out = Vec::new();
    for (at, version) in versions.iter().enumerate() {
        let pointer = format!("/spec/versions/{at}");
        let name = version
            .get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| malformed(&origin, &format!("{pointer}/name"), "required"))?;
        let schema = version
            .pointer("/schema/openAPIV3Schema")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                malformed(
                    &origin,
                    &format!("{pointer}/schema/openAPIV3Schema"),
                    "every version needs a schema to generate a type from",
                )
            })?;
        let schema_pointer = format!("{pointer}/schema/openAPIV3Schema");
        let subresources = version.get("subresources").and_then(Value::as_object);
        let document = identity.document(name, schema, subresources, &origin, &schema_pointer)?;
        let bytes = serde_json::to_vec(&document).map_err(|err| Error::Internal {
            module: "crd".to_owned(),
            message: err.to_string(),
        })?;
        let label = format!("{origin}, version {name}");
        out.push(parse_document(&label, &bytes)?);
    }
    Ok(out)
}

/// What the CRD's names and scope say about its kind.
struct Identity<'a> {
    group: &'a str,
    kind: &'a str,
    list_kind: &'a str,
    plural: &'a str,
    namespaced: bool,
}

impl Identity<'_> {
    /// The OpenAPI document of one version.
    fn document(
        &self,
        version: &str,
        schema: &Map<String, Value>,
        subresources: Option<&Map<String, Value>>,
        origin: &str,
        schema_pointer: &str,
    ) -> Result<Value> {
        let namespace = format!("{}.{version}", reversed(self.group));
        let definition = format!("{namespace}.{}", self.kind);
        let gvk = |kind: &str| json!([{ "group": self.group, "version": version, "kind": kind }]);

        let mut object = schema.clone();
        object.insert("type".to_owned(), json!("object"));
        let properties = object
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| {
                malformed(
                    origin,
                    &format!("{schema_pointer}/properties"),
                    "must be an object",
                )
            })?;
        properties.insert(
            "apiVersion".to_owned(),
            string_property(
                "APIVersion defines the versioned schema of this representation of an object.",
            ),
        );
        properties.insert(
            "kind".to_owned(),
            string_property(
                "Kind is a string value representing the REST resource this object represents.",
            ),
        );
        properties.insert(
            "metadata".to_owned(),
            json!({
                "allOf": [{ "$ref": format!("#/components/schemas/{META_PREFIX}.ObjectMeta") }],
                "default": {},
                "description": "Standard object's metadata.",
            }),
        );
        object.insert("x-kubernetes-group-version-kind".to_owned(), gvk(self.kind));
        if let Some(scale) = subresources.and_then(|s| s.get("scale")) {
            object.insert("x-apfkit-scale".to_owned(), scale.clone());
        }

        let list = json!({
            "description": format!("{} is a list of {}.", self.list_kind, self.kind),
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": string_property("APIVersion defines the versioned schema of this representation of an object."),
                "kind": string_property("Kind is a string value representing the REST resource this object represents."),
                "items": {
                    "description": format!("List of {}.", self.plural),
                    "type": "array",
                    "items": { "$ref": format!("#/components/schemas/{definition}") },
                },
                "metadata": {
                    "allOf": [{ "$ref": format!("#/components/schemas/{META_PREFIX}.ListMeta") }],
                    "default": {},
                    "description": "Standard list metadata.",
                },
            },
            "x-kubernetes-group-version-kind": gvk(self.list_kind),
        });

        let mut schemas = meta_schemas()?.clone();
        schemas.insert(definition.clone(), Value::Object(object));
        schemas.insert(format!("{namespace}.{}", self.list_kind), list);

        let scope = if self.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let read = format!(
            "/apis/{}/{version}{scope}/{}/{{name}}",
            self.group, self.plural
        );
        let get = json!({
            "get": {
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": { "group": self.group, "version": version, "kind": self.kind },
            }
        });
        let mut paths = Map::new();
        for subresource in subresources.into_iter().flat_map(|s| s.keys()) {
            paths.insert(format!("{read}/{subresource}"), get.clone());
        }
        paths.insert(read, get);
        Ok(json!({
            "openapi": "3.0.0",
            "info": { "title": "CustomResourceDefinition", "version": format!("{}/{version}", self.group) },
            "paths": paths,
            "components": { "schemas": schemas },
        }))
    }
}

/// The embedded meta/v1 schemas, parsed once.
fn meta_schemas() -> Result<&'static Map<String, Value>> {
    static PARSED: OnceLock<Result<Map<String, Value>, String>> = OnceLock::new();
    PARSED
        .get_or_init(|| serde_json::from_str(META).map_err(|err| err.to_string()))
        .as_ref()
        .map_err(|err| Error::Internal {
            module: "crd".to_owned(),
            message: format!("the embedded meta/v1 schemas: {err}"),
        })
}

/// `stable.example.com` → `com.example.stable`, as kube-apiserver names CRD definitions.
fn reversed(group: &str) -> String {
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

fn string_property(description: &str) -> Value {
    json!({ "description": description, "type": "string" })
}

fn malformed(origin: &str, pointer: &str, message: &str) -> Error {
    Error::Malformed {
        file: origin.to_owned(),
        pointer: pointer.to_owned(),
        message: message.to_owned(),
    }
}
