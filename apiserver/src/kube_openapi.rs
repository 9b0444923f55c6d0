//! kube-apiserver's own OpenAPI v3 documents (release 1.37, `data/openapi`, unmodified, as
//! the reference answers them at `/openapi/v3/<path>`): what `/openapi/v3` publishes for
//! kube's built-in groups, trimmed to the resources a server serves, and the schemas of kube's
//! kinds, by which strategic merge patch and server-side apply merge their lists and maps
//! (`x-kubernetes-patch-merge-key`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::OnceLock;

use serde_json::{Map, Value};

use apfkit_runtime::identity::GroupVersionKind;

/// One of kube-apiserver's documents: its root (`api/v1`, `apis/GROUP`, `version`) and text.
struct Document {
    root: &'static str,
    text: &'static str,
}

macro_rules! documents {
    ($($root:literal),* $(,)?) => {
        [$(Document {
            root: $root,
            text: include_str!(concat!("../data/openapi/1.37/", $root, ".json")),
        }),*]
    };
}

const DOCUMENTS: [Document; 24] = documents!(
    "api",
    "api/v1",
    "apis",
    "version",
    "apis/flowcontrol.apiserver.k8s.io",
    "apis/flowcontrol.apiserver.k8s.io/v1",
    "apis/apiregistration.k8s.io",
    "apis/apiregistration.k8s.io/v1",
    "apis/rbac.authorization.k8s.io",
    "apis/rbac.authorization.k8s.io/v1",
    "apis/discovery.k8s.io",
    "apis/discovery.k8s.io/v1",
    "apis/apiextensions.k8s.io",
    "apis/apiextensions.k8s.io/v1",
    "apis/authentication.k8s.io",
    "apis/authentication.k8s.io/v1",
    "apis/authorization.k8s.io",
    "apis/authorization.k8s.io/v1",
    "apis/storagemigration.k8s.io",
    "apis/storagemigration.k8s.io/v1",
    "apis/coordination.k8s.io",
    "apis/coordination.k8s.io/v1",
    "apis/events.k8s.io",
    "apis/events.k8s.io/v1",
);

/// Each document parsed on first use (`api/v1` is 1.6 MB).
static PARSED: [OnceLock<Option<Value>>; DOCUMENTS.len()] =
    [const { OnceLock::new() }; DOCUMENTS.len()];

/// kube-apiserver's OpenAPI v2 document, as `/openapi/v2` answers it before any CRD is made.
const SWAGGER: &str = include_str!("../data/openapi/1.37/swagger.json");
static SWAGGER_PARSED: OnceLock<Option<Value>> = OnceLock::new();

/// Where component references point.
const COMPONENTS: &str = "#/components/schemas/";

/// kube-apiserver's document at `root` (`api/v1`, `apis/GROUP/VERSION`, `apis/GROUP`, `api`,
/// `apis`, `version`), if it is one of those kept.
pub(crate) fn document(root: &str) -> Option<&'static Value> {
    let index = DOCUMENTS.iter().position(|d| d.root == root)?;
    parsed_once(&PARSED[index], DOCUMENTS[index].text, root)
}

/// kube-apiserver's OpenAPI v2 document.
fn swagger() -> Option<&'static Value> {
    parsed_once(&SWAGGER_PARSED, SWAGGER, "v2")
}

/// `text`, one of the documents kept, parsed on first use into `cell` (`None`, logged, if
/// it does not parse).
fn parsed_once(
    cell: &'static OnceLock<Option<Value>>,
    text: &str,
    name: &str,
) -> Option<&'static Value> {
    cell.get_or_init(|| match serde_json::from_str(text) {
        Ok(document) => Some(document),
        Err(error) => {
            tracing::error!("kube-apiserver's OpenAPI document {name}: {error}");
            None
        }
    })
    .as_ref()
}

/// Where a v2 document's definitions and shared parameters are referred to.
pub(crate) const DEFINITIONS: &str = "#/definitions/";
pub(crate) const PARAMETERS: &str = "#/parameters/";

/// The schema kube-apiserver's v3 documents give `name` (`io.k8s.apimachinery.pkg.apis.meta.v1.Status`).
pub(crate) fn component(name: &str) -> Option<&'static Value> {
    DOCUMENTS
        .iter()
        .filter_map(|d| document(d.root)?.pointer("/components/schemas"))
        .find_map(|components| components.get(name))
}

/// The definition kube-apiserver's v2 document gives `name`.
pub(crate) fn definition(name: &str) -> Option<&'static Value> {
    swagger()?.get("definitions")?.get(name)
}

/// The name under which kube-apiserver's v2 document shares `parameter` (v2's form), if it
/// shares one equal to it.
pub(crate) fn shared_parameter(parameter: &Value) -> Option<&'static str> {
    swagger()?
        .get("parameters")?
        .as_object()?
        .iter()
        .find(|(_, shared)| *shared == parameter)
        .map(|(name, _)| name.as_str())
}

/// The parameter kube-apiserver's v2 document shares as `name`.
pub(crate) fn shared_parameter_named(name: &str) -> Option<&'static Value> {
    swagger()?.get("parameters")?.get(name)
}

/// The query or path parameter `name` as kube-apiserver's v3 documents give it to an
/// operation whose `x-kubernetes-action` is `action` (the options' field documentation:
/// `fieldManager` reads differently for a patch), or to its path: the first found, from an
/// index of every document's made once.
pub(crate) fn parameter(action: &str, name: &str) -> Option<&'static Value> {
    static INDEX: OnceLock<HashMap<(&'static str, &'static str), &'static Value>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index = HashMap::new();
        let paths = DOCUMENTS
            .iter()
            .filter_map(|d| document(d.root)?.get("paths")?.as_object())
            .flat_map(|paths| paths.values())
            .filter_map(Value::as_object);
        for item in paths {
            for operation in item.values() {
                let Some(action) = operation.get("x-kubernetes-action").and_then(Value::as_str)
                else {
                    continue;
                };
                let own = operation.get("parameters").and_then(Value::as_array);
                let shared = item.get("parameters").and_then(Value::as_array);
                for parameter in own.into_iter().chain(shared).flatten() {
                    if let Some(name) = parameter.get("name").and_then(Value::as_str) {
                        index.entry((action, name)).or_insert(parameter);
                    }
                }
            }
        }
        index
    });
    index.get(&(action, name)).copied()
}

/// Adds to `reached` every name `prefix` refers to in `node` and in what those name in
/// `table`, transitively (a v2 document's definitions, or its parameters and definitions).
pub(crate) fn reach_in(
    node: &Value,
    prefix: &str,
    table: impl Fn(&str) -> Option<&'static Value>,
    reached: &mut BTreeSet<String>,
) {
    let mut pending = Vec::new();
    references_to(node, prefix, &mut pending);
    while let Some(name) = pending.pop() {
        if reached.insert(name.clone())
            && let Some(found) = table(&name)
        {
            references_to(found, prefix, &mut pending);
        }
    }
}

/// kube-apiserver's v2 document with only the paths of `served` (each a root, `api/v1` or
/// `apis/GROUP/VERSION`, and its resources), the roots of the groups given (`apis/GROUP`),
/// `/api/` when `core` says so, `/apis/` and `/version/`, with the definitions and shared
/// parameters those reach, and `info.version` set to `release`.
pub(crate) fn swagger_trimmed(
    served: &[(String, Vec<ServedPaths<'_>>)],
    groups: &[&str],
    core: bool,
    release: &str,
) -> Option<Value> {
    let original = swagger()?;
    let mut paths = Map::new();
    for (path, item) in original.get("paths")?.as_object()? {
        let kept = match path.as_str() {
            "/apis/" | "/version/" => true,
            "/api/" => core,
            _ => {
                groups.iter().any(|g| {
                    path.strip_prefix("/apis/").and_then(|p| p.strip_prefix(g)) == Some("/")
                }) || served.iter().any(|(root, resources)| {
                    path.strip_prefix('/')
                        .and_then(|p| p.strip_prefix(root.as_str()))
                        .and_then(|p| p.strip_prefix('/'))
                        .is_some_and(|rest| rest.is_empty() || serves(rest, resources))
                })
            }
        };
        if kept {
            paths.insert(path.clone(), item.clone());
        }
    }
    let mut parameters = BTreeSet::new();
    let mut definitions = BTreeSet::new();
    let paths = Value::Object(paths);
    reach_in(&paths, PARAMETERS, |_| None, &mut parameters);
    let shared = original.get("parameters").and_then(Value::as_object);
    let parameters: Map<String, Value> = shared
        .into_iter()
        .flatten()
        .filter(|(name, _)| parameters.contains(*name))
        .map(|(name, p)| (name.clone(), p.clone()))
        .collect();
    let parameters = Value::Object(parameters);
    for node in [&paths, &parameters] {
        reach_in(node, DEFINITIONS, definition, &mut definitions);
    }
    let kept: Map<String, Value> = original
        .get("definitions")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(name, _)| definitions.contains(*name))
        .map(|(name, d)| (name.clone(), d.clone()))
        .collect();
    let mut document = original.clone();
    document["info"]["version"] = Value::String(release.to_owned());
    document["paths"] = paths;
    document["definitions"] = Value::Object(kept);
    document["parameters"] = parameters;
    Some(document)
}

/// The JSON Schema of `kind` (or its list) as kube-apiserver publishes it, in the form
/// [`crate::store::SchemaFn`] answers: the kind's schema with every schema it reaches under
/// `$defs`, references pointing there, and `allOf: [{$ref}]` (how kube attaches a default or
/// a description to a reference) written as the `$ref` itself beside them.
pub(crate) fn schema(kind: &GroupVersionKind) -> Option<Value> {
    let root =
        apfkit_runtime::identity::GroupVersion::new(kind.group.clone(), kind.version.clone())
            .api_root();
    // A kind may be published in the core document rather than its group's: a
    // ServiceAccount's `token` subresource takes `authentication.k8s.io/v1` TokenRequests.
    let (components, name, found) = [root.as_str(), "api/v1"].into_iter().find_map(|root| {
        let components = document(root)?
            .pointer("/components/schemas")?
            .as_object()?;
        let (name, found) = components
            .iter()
            .find(|(_, schema)| declares(schema, kind))?;
        Some((components, name, found))
    })?;
    let mut reached = BTreeSet::from([name.clone()]);
    reach(found, components, &mut reached);
    let mut definitions = Map::new();
    for name in &reached {
        if let Some(schema) = components.get(name) {
            definitions.insert(name.clone(), as_json_schema(schema));
        }
    }
    let mut schema = as_json_schema(found);
    if let Value::Object(map) = &mut schema {
        map.insert("$defs".to_owned(), Value::Object(definitions));
    }
    Some(schema)
}

/// Whether `schema` carries `kind` in its `x-kubernetes-group-version-kind`.
fn declares(schema: &Value, kind: &GroupVersionKind) -> bool {
    schema
        .get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array)
        .is_some_and(|kinds| {
            kinds.iter().any(|k| {
                k.get("group").and_then(Value::as_str) == Some(&kind.group)
                    && k.get("version").and_then(Value::as_str) == Some(&kind.version)
                    && k.get("kind").and_then(Value::as_str) == Some(&kind.kind)
            })
        })
}

/// Adds to `reached` the name of every component `node` refers to, and theirs.
fn reach(node: &Value, components: &Map<String, Value>, reached: &mut BTreeSet<String>) {
    let mut pending = Vec::new();
    references(node, &mut pending);
    while let Some(name) = pending.pop() {
        if reached.insert(name.clone())
            && let Some(schema) = components.get(&name)
        {
            references(schema, &mut pending);
        }
    }
}

/// The component names of the references anywhere in `node`.
fn references(node: &Value, names: &mut Vec<String>) {
    references_to(node, COMPONENTS, names);
}

/// The names of the references to `prefix` anywhere in `node`.
fn references_to(node: &Value, prefix: &str, names: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(prefix))
            {
                names.push(name.to_owned());
            }
            map.values().for_each(|v| references_to(v, prefix, names));
        }
        Value::Array(items) => items.iter().for_each(|v| references_to(v, prefix, names)),
        _ => {}
    }
}

/// `schema` with references into `$defs` and `allOf` of one reference unwrapped.
fn as_json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", Value::String(reference)) => {
                        let name = reference.strip_prefix(COMPONENTS).unwrap_or(reference);
                        out.insert(key.clone(), Value::String(format!("#/$defs/{name}")));
                    }
                    ("allOf", Value::Array(items))
                        if items.len() == 1 && items[0].get("$ref").is_some() =>
                    {
                        if let Some(reference) = as_json_schema(&items[0]).get("$ref") {
                            out.insert("$ref".to_owned(), reference.clone());
                        }
                    }
                    _ => {
                        out.insert(key.clone(), as_json_schema(value));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(as_json_schema).collect()),
        other => other.clone(),
    }
}

/// A resource a server serves in a group-version: its plural and the subresources it serves.
#[derive(Debug)]
pub(crate) struct ServedPaths<'a> {
    pub(crate) plural: &'a str,
    pub(crate) subresources: Vec<&'a str>,
}

/// kube-apiserver's document at `root` with only the paths of `served` (and the
/// group-version's own path), the schemas those paths reach, and `info.version` set to
/// `release` (`MAJOR.MINOR`, as kube writes it).
pub(crate) fn trimmed(root: &str, served: &[ServedPaths<'_>], release: &str) -> Option<Value> {
    let original = document(root)?;
    let prefix = format!("/{root}/");
    let mut paths = Map::new();
    for (path, item) in original.get("paths")?.as_object()? {
        if path
            .strip_prefix(&prefix)
            .is_some_and(|rest| rest.is_empty() || serves(rest, served))
        {
            paths.insert(path.clone(), item.clone());
        }
    }
    let mut reached = BTreeSet::new();
    let components = original
        .pointer("/components/schemas")
        .and_then(Value::as_object);
    if let Some(components) = components {
        for item in paths.values() {
            reach(item, components, &mut reached);
        }
    }
    let wanted: HashSet<&String> = reached.iter().collect();
    let schemas: Map<String, Value> = components
        .into_iter()
        .flatten()
        .filter(|(name, _)| wanted.contains(name))
        .map(|(name, schema)| (name.clone(), schema.clone()))
        .collect();
    let mut document = original.clone();
    document["info"]["version"] = Value::String(release.to_owned());
    document["paths"] = Value::Object(paths);
    document["components"] = serde_json::json!({"schemas": schemas});
    Some(document)
}

/// Whether a path below the group-version (`watch/`, `namespaces/{namespace}/`, the plural,
/// `{name}`, a subresource) is one of a resource of `served`.
fn serves(path: &str, served: &[ServedPaths<'_>]) -> bool {
    let mut segments: Vec<&str> = path.split('/').collect();
    if segments.first() == Some(&"watch") {
        segments.remove(0);
    }
    if segments.len() > 2 && segments[0] == "namespaces" && segments[1] == "{namespace}" {
        segments.drain(..2);
    }
    let Some(resource) = served.iter().find(|s| Some(&s.plural) == segments.first()) else {
        return false;
    };
    match segments.get(2) {
        None => true,
        Some(subresource) => segments.len() == 3 && resource.subresources.contains(subresource),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_document_parses_and_names_its_own_root() {
        for kept in &DOCUMENTS {
            let document = document(kept.root).expect(kept.root);
            assert_eq!(document["openapi"], "3.0.0", "{}", kept.root);
            let paths = document["paths"].as_object().expect("paths");
            assert!(
                paths
                    .keys()
                    .all(|p| p.starts_with(&format!("/{}/", kept.root))),
                "{}",
                kept.root
            );
        }
        assert!(document("apis/example.com/v1").is_none());
    }

    #[test]
    fn a_services_schema_merges_ports_by_port_and_protocol_and_its_selector_whole() {
        let service = schema(&GroupVersionKind::from_static("", "v1", "Service")).unwrap();
        assert_eq!(
            service["properties"]["spec"]["$ref"],
            "#/$defs/io.k8s.api.core.v1.ServiceSpec"
        );
        let spec = &service["$defs"]["io.k8s.api.core.v1.ServiceSpec"]["properties"];
        assert_eq!(spec["ports"]["x-kubernetes-patch-merge-key"], "port");
        assert_eq!(
            spec["ports"]["x-kubernetes-list-map-keys"],
            serde_json::json!(["port", "protocol"])
        );
        assert_eq!(
            spec["ports"]["items"]["$ref"],
            "#/$defs/io.k8s.api.core.v1.ServicePort"
        );
        assert_eq!(spec["selector"]["x-kubernetes-map-type"], "atomic");
        // Everything reached is there; nothing of other kinds.
        let definitions = service["$defs"].as_object().unwrap();
        assert!(definitions.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(!definitions.contains_key("io.k8s.api.core.v1.PodSpec"));
        assert!(
            !serde_json::to_string(&service)
                .unwrap()
                .contains(COMPONENTS)
        );
        assert!(schema(&GroupVersionKind::from_static("", "v1", "Widget")).is_none());
        // Each kind served from kube's documents has its schema there.
        for (group, kind) in [
            ("", "ConfigMap"),
            ("", "Secret"),
            ("", "ServiceAccount"),
            ("", "Namespace"),
            ("coordination.k8s.io", "Lease"),
            ("discovery.k8s.io", "EndpointSlice"),
        ] {
            let found = schema(&GroupVersionKind::from_static(group, "v1", kind));
            assert!(found.is_some_and(|s| s["properties"].is_object()), "{kind}");
        }
        assert!(
            schema(&GroupVersionKind::from_static(
                "flowcontrol.apiserver.k8s.io",
                "v1beta3",
                "FlowSchema"
            ))
            .is_none()
        );
    }

    #[test]
    fn a_trimmed_document_keeps_the_served_paths_and_what_they_reach() {
        let served = [ServedPaths {
            plural: "services",
            subresources: vec!["status"],
        }];
        let document = trimmed("api/v1", &served, "1.35").unwrap();
        assert_eq!(document["info"]["version"], "1.35");
        let paths: Vec<&String> = document["paths"].as_object().unwrap().keys().collect();
        assert_eq!(
            paths,
            [
                "/api/v1/",
                "/api/v1/namespaces/{namespace}/services",
                "/api/v1/namespaces/{namespace}/services/{name}",
                "/api/v1/namespaces/{namespace}/services/{name}/status",
                "/api/v1/services",
                "/api/v1/watch/namespaces/{namespace}/services",
                "/api/v1/watch/namespaces/{namespace}/services/{name}",
                "/api/v1/watch/services",
            ]
        );
        let schemas = document["components"]["schemas"].as_object().unwrap();
        for name in [
            "io.k8s.api.core.v1.Service",
            "io.k8s.api.core.v1.ServiceList",
            "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
            "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
        ] {
            assert!(schemas.contains_key(name), "{name}");
        }
        assert!(!schemas.contains_key("io.k8s.api.core.v1.Pod"));
        // Every reference left points at a schema kept.
        let mut names = Vec::new();
        references(&document, &mut names);
        assert!(names.iter().all(|n| schemas.contains_key(n)));
        // A document nothing of which is served keeps its own path only.
        let bare = trimmed("api/v1", &[], "1.35").unwrap();
        assert_eq!(bare["paths"].as_object().unwrap().len(), 1);
    }

    #[test]
    fn the_v2_document_is_trimmed_to_what_is_served() {
        let served = [(
            "apis/flowcontrol.apiserver.k8s.io/v1".to_owned(),
            vec![ServedPaths {
                plural: "flowschemas",
                subresources: vec!["status"],
            }],
        )];
        let groups = ["flowcontrol.apiserver.k8s.io"];
        let document = swagger_trimmed(&served, &groups, false, "1.37").unwrap();
        assert_eq!(document["swagger"], "2.0");
        let paths: Vec<&String> = document["paths"].as_object().unwrap().keys().collect();
        assert!(paths.contains(&&"/apis/flowcontrol.apiserver.k8s.io/".to_owned()));
        assert!(paths.contains(
            &&"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/{name}/status".to_owned()
        ));
        assert!(
            !paths
                .iter()
                .any(|p| p.contains("prioritylevelconfigurations"))
        );
        assert!(!paths.contains(&&"/api/".to_owned()));
        let definitions = document["definitions"].as_object().unwrap();
        assert!(definitions.contains_key("io.k8s.api.flowcontrol.v1.FlowSchema"));
        assert!(definitions.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"));
        assert!(!definitions.contains_key("io.k8s.api.core.v1.Pod"));
        // Every reference left points at a definition or a shared parameter kept.
        let parameters = document["parameters"].as_object().unwrap();
        let mut names = Vec::new();
        references_to(&document, DEFINITIONS, &mut names);
        assert!(names.iter().all(|n| definitions.contains_key(n)));
        names.clear();
        references_to(&document, PARAMETERS, &mut names);
        assert!(!names.is_empty());
        assert!(names.iter().all(|n| parameters.contains_key(n)));
        // What custom resources' paths need: kube's texts of their parameters.
        assert!(parameter("list", "sendInitialEvents").is_some());
        assert_ne!(
            parameter("patch", "fieldManager"),
            parameter("post", "fieldManager")
        );
        assert!(shared_parameter(&serde_json::json!({"name": "nothing"})).is_none());
    }

    #[test]
    fn paths_are_kept_by_resource_and_subresource() {
        let served = [ServedPaths {
            plural: "flowschemas",
            subresources: vec!["status"],
        }];
        for (path, kept) in [
            ("flowschemas", true),
            ("flowschemas/{name}", true),
            ("flowschemas/{name}/status", true),
            ("flowschemas/{name}/scale", false),
            ("watch/flowschemas/{name}", true),
            ("namespaces/{namespace}/flowschemas", true),
            ("namespaces", false),
            ("namespaces/{name}/status", false),
            ("prioritylevelconfigurations", false),
            ("flowschemas/{name}/status/extra", false),
        ] {
            assert_eq!(serves(path, &served), kept, "{path}");
        }
    }
}
