//! The OpenAPI paths of a custom resource's version, as apiextensions-apiserver's builder
//! makes them (`pkg/controller/openapi/builder/builder.go`: the routes of
//! `registerResourceHandlers` for the kind, its options' parameters, operation ids and
//! tags of `GetOperationIDAndTags`), in v3's form for the group-version's document and in
//! v2's for `/openapi/v2`. The schemas come from the resource
//! ([`crate::store::CustomOpenApi`]); the parameters' texts and kube's own definitions from
//! kube-apiserver's documents (`crate::kube_openapi`).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::kube_openapi::{self, DEFINITIONS, PARAMETERS};
use crate::store::CustomOpenApi;

const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
const COMPONENTS: &str = "#/components/schemas/";

/// The parameters of each action's options (`AddObjectParams` of `ListOptions`,
/// `GetOptions`, `CreateOptions`, `UpdateOptions`, `PatchOptions`, `DeleteOptions`).
fn option_names(action: &str) -> &'static [&'static str] {
    match action {
        "list" | "deletecollection" => &[
            "allowWatchBookmarks",
            "continue",
            "fieldSelector",
            "labelSelector",
            "limit",
            "resourceVersion",
            "resourceVersionMatch",
            "sendInitialEvents",
            "shardSelector",
            "timeoutSeconds",
            "watch",
        ],
        "get" => &["resourceVersion"],
        "post" | "put" => &["dryRun", "fieldManager", "fieldValidation"],
        "patch" => &["dryRun", "fieldManager", "fieldValidation", "force"],
        "delete" => &[
            "dryRun",
            "gracePeriodSeconds",
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "orphanDependents",
            "propagationPolicy",
        ],
        _ => &[],
    }
}

/// The names of one resource's version, for its routes.
pub(super) struct CustomKind<'a> {
    pub(super) group: &'a str,
    pub(super) version: &'a str,
    pub(super) kind: &'a str,
    pub(super) plural: &'a str,
    pub(super) namespaced: bool,
    pub(super) published: &'a CustomOpenApi,
}

/// What a route answers or reads: the kind, its list, or one of kube's definitions.
#[derive(Clone, Copy)]
enum Sample {
    Kind,
    List,
    Kube(&'static str),
}

/// One route of `generateBuilder`.
struct Route {
    path: String,
    method: &'static str,
    action: &'static str,
    operation_id: String,
    description: String,
    sample: Sample,
    body: Option<(Sample, bool)>,
    parameters: Vec<Value>,
}

impl CustomKind<'_> {
    fn model_name(&self, kind: &str) -> String {
        let reversed: Vec<&str> = self.group.rsplit('.').collect();
        format!("{}.{}.{kind}", reversed.join("."), self.version)
    }

    fn list_kind(&self) -> String {
        self.published.list["x-kubernetes-group-version-kind"][0]["kind"]
            .as_str()
            .map_or_else(|| format!("{}List", self.kind), str::to_owned)
    }

    fn sample_name(&self, sample: Sample) -> String {
        match sample {
            Sample::Kind => self.model_name(self.kind),
            Sample::List => self.model_name(&self.list_kind()),
            Sample::Kube(name) => name.to_owned(),
        }
    }

    /// `generateBuilder`'s routes, in its order.
    fn routes(&self) -> Vec<Route> {
        let mut routes = Vec::new();
        let mut root = format!("/apis/{}/{}/{}", self.group, self.version, self.plural);
        if self.namespaced {
            let mut all = self.route(&root, "", "GET", "list", "list", Sample::List);
            all.operation_id = operation_id(&root, &format!("list{}ForAllNamespaces", self.kind));
            routes.push(all);
            root = format!(
                "/apis/{}/{}/namespaces/{{namespace}}/{}",
                self.group, self.version, self.plural
            );
        }
        let kind = Sample::Kind;
        let status = Sample::Kube(STATUS);
        routes.push(self.route(&root, "", "GET", "list", "list", Sample::List));
        routes.push(self.route(&root, "", "POST", "post", "create", kind));
        routes.push(self.route(
            &root,
            "",
            "DELETE",
            "deletecollection",
            "deletecollection",
            status,
        ));
        routes.push(self.route(&root, "/{name}", "GET", "get", "read", kind));
        routes.push(self.route(&root, "/{name}", "PUT", "put", "replace", kind));
        routes.push(self.route(&root, "/{name}", "DELETE", "delete", "delete", status));
        routes.push(self.route(&root, "/{name}", "PATCH", "patch", "patch", kind));
        let mut subresources = Vec::new();
        if self.published.status {
            subresources.push(("/{name}/status", kind));
        }
        if self.published.scale {
            subresources.push(("/{name}/scale", Sample::Kube(SCALE)));
        }
        for (path, sample) in subresources {
            routes.push(self.route(&root, path, "GET", "get", "read", sample));
            routes.push(self.route(&root, path, "PUT", "put", "replace", sample));
            routes.push(self.route(&root, path, "PATCH", "patch", "patch", sample));
        }
        routes
    }

    /// `buildRoute`.
    fn route(
        &self,
        root: &str,
        path: &str,
        method: &'static str,
        action: &'static str,
        verb: &str,
        sample: Sample,
    ) -> Route {
        let subresource = subresource(path);
        let namespaced = if self.namespaced { "Namespaced" } else { "" };
        let operation = format!("{verb}{namespaced}{}{}", self.kind, title(subresource));
        let full = format!("{root}{path}");
        let mut parameters = vec![kube_parameter(action, "pretty")];
        if full.contains("{namespace}") {
            parameters.push(kube_parameter(action, "namespace"));
        }
        if full.contains("{name}") {
            parameters.push(Some(json!({
                "name": "name",
                "in": "path",
                "description": format!("name of the {}", self.kind),
                "required": true,
                "schema": {"type": "string", "uniqueItems": true},
            })));
        }
        parameters.extend(
            option_names(action)
                .iter()
                .map(|n| kube_parameter(action, n)),
        );
        let body = match action {
            "post" | "put" => Some((sample, true)),
            "patch" => Some((Sample::Kube(PATCH), true)),
            "delete" => Some((Sample::Kube(DELETE_OPTIONS), false)),
            _ => None,
        };
        Route {
            operation_id: operation_id(&full, &operation),
            description: self.description(subresource, verb),
            path: full,
            method,
            action,
            sample,
            body,
            parameters: parameters.into_iter().flatten().collect(),
        }
    }

    /// `descriptionFor`.
    fn description(&self, subresource: &str, verb: &str) -> String {
        let article = match verb {
            "list" => " objects of kind ".to_owned(),
            "read" | "replace" | "patch" => " the specified ".to_owned(),
            "create" | "delete" => article_for(self.kind),
            _ => String::new(),
        };
        let sub = if subresource.is_empty() {
            String::new()
        } else {
            format!(" {subresource} of")
        };
        match verb {
            "patch" => format!("partially update{sub}{article}{}", self.kind),
            "deletecollection" => {
                let sub = if sub.is_empty() {
                    sub
                } else {
                    format!("{sub} a")
                };
                format!("delete collection of{sub} {}", self.kind)
            }
            _ => format!("{verb}{sub}{article}{}", self.kind),
        }
    }

    fn gvk(&self) -> Value {
        json!({"group": self.group, "version": self.version, "kind": self.kind})
    }

    fn tag(&self) -> String {
        let group = self.group.strip_suffix(".k8s.io").unwrap_or(self.group);
        format!(
            "{}_{}",
            valid_operation_id(group, false),
            valid_operation_id(self.version, false)
        )
    }

    /// The version's paths: each route's operation as `operation` writes it (with its own
    /// parameters, and its responses but `401`) completed with what both forms share, and
    /// the parameters all of a path's routes take, as `path_parameters` writes them.
    fn paths(
        &self,
        mut operation: impl FnMut(&Route, Vec<Value>, Map<String, Value>) -> Value,
        mut path_parameters: impl FnMut(Vec<Value>) -> Vec<Value>,
        response: impl Fn(&str, Sample) -> Value,
    ) -> Map<String, Value> {
        let mut paths = Map::new();
        for (path, routes) in by_path(self.routes()) {
            let common = common_parameters(&routes);
            let mut item = Map::new();
            for route in &routes {
                let mut responses = Map::new();
                for (code, description) in responses_of(route.action) {
                    responses.insert(code.into(), response(description, route.sample));
                }
                responses.insert("401".into(), json!({"description": "Unauthorized"}));
                let mut written = operation(route, own_parameters(route, &common), responses);
                written["x-kubernetes-action"] = route.action.into();
                written["x-kubernetes-group-version-kind"] = self.gvk();
                item.insert(route.method.to_lowercase(), written);
            }
            if !common.is_empty() {
                item.insert("parameters".into(), Value::Array(path_parameters(common)));
            }
            paths.insert(path, Value::Object(item));
        }
        paths
    }

    /// The version's paths in v3's form, and its schemas with kube's definitions they reach,
    /// added to `paths` and `schemas`.
    pub(super) fn add_v3(&self, paths: &mut Map<String, Value>, schemas: &mut Map<String, Value>) {
        let reference =
            |sample: Sample| json!({"$ref": format!("{COMPONENTS}{}", self.sample_name(sample))});
        let content = |schema: &Value, types: &[&str]| -> Value {
            types
                .iter()
                .map(|t| ((*t).to_owned(), json!({"schema": schema})))
                .collect::<Map<_, _>>()
                .into()
        };
        let json_yaml = ["application/json", "application/yaml"];
        let operation = |route: &Route, own: Vec<Value>, responses: Map<String, Value>| {
            let mut operation = json!({
                "tags": [self.tag()],
                "description": route.description,
                "operationId": route.operation_id,
            });
            if !own.is_empty() {
                operation["parameters"] = Value::Array(own);
            }
            if let Some((body, required)) = route.body {
                let types: &[&str] = if route.method == "PATCH" {
                    &[
                        "application/apply-patch+yaml",
                        "application/json-patch+json",
                        "application/merge-patch+json",
                    ]
                } else {
                    &json_yaml
                };
                operation["requestBody"] = json!({"content": content(&reference(body), types)});
                if required {
                    operation["requestBody"]["required"] = true.into();
                }
            }
            operation["responses"] = Value::Object(responses);
            operation
        };
        let response = |description: &str, sample: Sample| json!({"description": description, "content": content(&reference(sample), &json_yaml)});
        let added = self.paths(operation, |common| common, response);
        schemas.insert(self.model_name(self.kind), self.published.kind.clone());
        schemas.insert(
            self.model_name(&self.list_kind()),
            self.published.list.clone(),
        );
        let mut reached = BTreeSet::new();
        for node in [
            &Value::Object(added.clone()),
            &self.published.kind,
            &self.published.list,
        ] {
            kube_openapi::reach_in(node, COMPONENTS, kube_openapi::component, &mut reached);
        }
        for name in reached {
            if let Some(schema) = kube_openapi::component(&name) {
                let schema = if name == DELETE_OPTIONS {
                    client_go_delete_options(schema)
                } else {
                    schema.clone()
                };
                schemas.entry(name).or_insert(schema);
            }
        }
        paths.extend(added);
    }

    /// The version's paths in v2's form, its definitions, and the names of kube's shared
    /// parameters they refer to, added to the three (kube's definitions they reach are the
    /// document's to add).
    pub(super) fn add_v2(
        &self,
        paths: &mut Map<String, Value>,
        definitions: &mut Map<String, Value>,
        shared: &mut BTreeSet<String>,
    ) {
        let reference =
            |sample: Sample| json!({"$ref": format!("{DEFINITIONS}{}", self.sample_name(sample))});
        let shared = std::cell::RefCell::new(shared);
        let operation = |route: &Route, own: Vec<Value>, responses: Map<String, Value>| {
            let consumes: &[&str] = if route.method == "PATCH" {
                &[
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/apply-patch+yaml",
                ]
            } else {
                &["application/json", "application/yaml"]
            };
            let mut operation = json!({
                "description": route.description,
                "consumes": consumes,
                "produces": ["application/json", "application/yaml"],
                "schemes": ["https"],
                "tags": [self.tag()],
                "operationId": route.operation_id,
            });
            let mut own: Vec<Value> = own.iter().map(v2_parameter).collect();
            if let Some((body, required)) = route.body {
                let mut parameter =
                    json!({"name": "body", "in": "body", "schema": reference(body)});
                if required {
                    parameter["required"] = true.into();
                }
                own.push(parameter);
            }
            sort_by_name(&mut own);
            if !own.is_empty() {
                let mut shared = shared.borrow_mut();
                operation["parameters"] = own.into_iter().map(|p| share(p, &mut shared)).collect();
            }
            operation["responses"] = Value::Object(responses);
            operation
        };
        let path_parameters = |common: Vec<Value>| {
            let mut shared = shared.borrow_mut();
            common
                .iter()
                .map(|p| share(v2_parameter(p), &mut shared))
                .collect()
        };
        let response = |description: &str, sample: Sample| json!({"description": description, "schema": reference(sample)});
        let added = self.paths(operation, path_parameters, response);
        definitions.insert(self.model_name(self.kind), self.published.kind_v2.clone());
        definitions.insert(
            self.model_name(&self.list_kind()),
            self.published.list_v2.clone(),
        );
        paths.extend(added);
    }
}

/// DeleteOptions as apiextensions-apiserver's definitions have it: named for every
/// group-version of client-go's scheme (kube-apiserver's v2 document names it for its own
/// scheme's, which also has the groups below).
fn client_go_delete_options(schema: &Value) -> Value {
    const NOT_IN_CLIENT_GO: [&str; 4] = [
        "admission.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "imagepolicy.k8s.io",
    ];
    let mut schema = schema.clone();
    let kinds = kube_openapi::definition(DELETE_OPTIONS)
        .and_then(|d| d.get("x-kubernetes-group-version-kind"))
        .and_then(Value::as_array)
        .map(|kinds| {
            kinds
                .iter()
                .filter(|k| {
                    !k.get("group")
                        .and_then(Value::as_str)
                        .is_some_and(|g| NOT_IN_CLIENT_GO.contains(&g))
                })
                .cloned()
                .collect::<Vec<_>>()
        });
    if let Some(kinds) = kinds {
        schema["x-kubernetes-group-version-kind"] = Value::Array(kinds);
    }
    schema
}

/// The routes grouped by path, in order of first appearance.
fn by_path(routes: Vec<Route>) -> Vec<(String, Vec<Route>)> {
    let mut grouped: Vec<(String, Vec<Route>)> = Vec::new();
    for route in routes {
        match grouped.iter_mut().find(|(path, _)| *path == route.path) {
            Some((_, same)) => same.push(route),
            None => grouped.push((route.path.clone(), vec![route])),
        }
    }
    grouped
}

/// The parameters every route of a path takes (kube-openapi puts them on the path), sorted
/// by name.
fn common_parameters(routes: &[Route]) -> Vec<Value> {
    let mut common: Vec<Value> = routes
        .first()
        .map(|first| {
            first
                .parameters
                .iter()
                .filter(|p| routes.iter().all(|r| r.parameters.contains(p)))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    sort_by_name(&mut common);
    common
}

/// A route's parameters that are not the path's, sorted by name.
fn own_parameters(route: &Route, common: &[Value]) -> Vec<Value> {
    let mut own: Vec<Value> = route
        .parameters
        .iter()
        .filter(|p| !common.contains(p))
        .cloned()
        .collect();
    sort_by_name(&mut own);
    own
}

fn sort_by_name(parameters: &mut [Value]) {
    parameters.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
}

/// What each action answers beside `200 OK`.
fn responses_of(action: &str) -> Vec<(&'static str, &'static str)> {
    let mut responses = vec![("200", "OK")];
    match action {
        "post" => responses.extend([("201", "Created"), ("202", "Accepted")]),
        "delete" => responses.push(("202", "Accepted")),
        "put" => responses.push(("201", "Created")),
        _ => {}
    }
    responses
}

/// kube's v3 parameter `name` of `action`'s operations.
fn kube_parameter(action: &str, name: &str) -> Option<Value> {
    // kube's own reads take no options, and its collection deletes take DeleteOptions'
    // too: the texts of `resourceVersion` and of ListOptions' fields are their lists'.
    let action = match action {
        "deletecollection" | "get" => "list",
        other => other,
    };
    kube_openapi::parameter(action, name).cloned()
}

/// A v3 parameter written as v2 writes it: its schema's keywords beside its name.
fn v2_parameter(parameter: &Value) -> Value {
    let mut out = Map::new();
    if let Some(Value::Object(schema)) = parameter.get("schema") {
        out.extend(schema.clone());
    }
    for key in ["description", "name", "in", "required"] {
        if let Some(value) = parameter.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    Value::Object(out)
}

/// `parameter`, or a reference to the equal parameter kube's v2 document shares
/// (`deduplicateParameters`: never `name`, `dryRun`, `fieldValidation` or a body of the
/// kind's own schema).
fn share(parameter: Value, shared: &mut BTreeSet<String>) -> Value {
    let name = parameter
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let generic_body = parameter
        .pointer("/schema/$ref")
        .and_then(Value::as_str)
        .is_some_and(|r| r.starts_with("#/definitions/io.k8s.apimachinery"));
    let kept = matches!(name, "name" | "dryRun" | "fieldValidation")
        || (parameter.get("in") == Some(&json!("body")) && !generic_body);
    if kept {
        return parameter;
    }
    match kube_openapi::shared_parameter(&parameter) {
        Some(key) => {
            shared.insert(key.to_owned());
            json!({"$ref": format!("{PARAMETERS}{key}")})
        }
        None => parameter,
    }
}

/// The subresource of a route's path below the collection (`/{name}/scale`: `scale`).
fn subresource(path: &str) -> &str {
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() == 3 { parts[2] } else { "" }
}

/// `cases.Title`: the first letter upper case.
fn title(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect()
    })
}

/// `GetArticleForNoun` with spaces around it: none for a plural.
fn article_for(noun: &str) -> String {
    if !noun.ends_with("ss") && noun.ends_with('s') {
        return " ".to_owned();
    }
    let vowel = noun
        .chars()
        .next()
        .is_some_and(|c| matches!(c.to_ascii_lowercase(), 'a' | 'e' | 'i' | 'o' | 'u'));
    if vowel {
        " an ".to_owned()
    } else {
        " a ".to_owned()
    }
}

/// `ToValidOperationID`: letters and underscores kept, digits but at the start, and the
/// letter after anything else upper case.
fn valid_operation_id(s: &str, capitalize_first: bool) -> String {
    let mut out = String::new();
    let mut capitalize = capitalize_first;
    for (i, c) in s.chars().enumerate() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_numeric()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// `GetOperationIDAndTags`' operation id: the verb, the group and version, then the rest.
fn operation_id(path: &str, operation: &str) -> String {
    const VERBS: [&str; 6] = ["list", "create", "delete", "read", "replace", "patch"];
    let Some(verb) = VERBS.iter().find(|v| operation.starts_with(*v)) else {
        return operation.to_owned();
    };
    let rest = &operation[verb.len()..];
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut id = (*verb).to_owned();
    if parts.len() >= 2 && parts[0] == "apis" {
        id.push_str(&valid_operation_id(
            parts[1].strip_suffix(".k8s.io").unwrap_or(parts[1]),
            true,
        ));
        if parts.len() > 2 {
            id.push_str(&valid_operation_id(parts[2], true));
        }
    }
    id.push_str(&valid_operation_id(rest, true));
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_tags_and_descriptions_are_kubes() {
        assert_eq!(
            operation_id(
                "/apis/e2e.example.com/v1/namespaces/{namespace}/foos",
                "deletecollectionNamespacedFoo"
            ),
            "deleteE2eExampleComV1CollectionNamespacedFoo"
        );
        assert_eq!(
            operation_id("/apis/e2e.example.com/v1/foos", "listFooForAllNamespaces"),
            "listE2eExampleComV1FooForAllNamespaces"
        );
        assert_eq!(
            valid_operation_id("e2e.example.com", false),
            "e2eExampleCom"
        );
        assert_eq!(valid_operation_id("3d.example", true), "DExample");
        assert_eq!(article_for("Foo"), " a ");
        assert_eq!(article_for("Ingress"), " an ");
        assert_eq!(article_for("Widgets"), " ");
        assert_eq!(subresource("/{name}/scale"), "scale");
        assert_eq!(subresource("/{name}"), "");
        assert_eq!(title("status"), "Status");
    }
}
