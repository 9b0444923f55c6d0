//! The REST paths of a group-version, with the Kubernetes operation annotations. The code
//! generator reads the plural name and scope of each kind from the read (`get`) operations.

use serde_json::{Map, Value, json};

/// A cluster-scoped resource served by a group-version.
pub struct ResourcePaths<'a> {
    /// The kind.
    pub kind: &'a str,
    /// Its plural, the URL segment.
    pub plural: &'a str,
    /// Definition name of the kind.
    pub definition: String,
    /// Definition name of its list.
    pub list_definition: String,
}

fn response(definition: &str) -> Value {
    let schema = json!({ "$ref": format!("#/components/schemas/{definition}") });
    json!({
        "description": "OK",
        "content": {
            "application/json": { "schema": schema },
            "application/yaml": { "schema": schema },
        }
    })
}

fn operation(
    id: &str,
    description: &str,
    action: &str,
    gvk: &Value,
    ok: &str,
    request: Option<&str>,
) -> Value {
    let mut op = json!({
        "description": description,
        "operationId": id,
        "responses": { "200": response(ok), "401": { "description": "Unauthorized" } },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    });
    if let Some(body) = request {
        op["requestBody"] = json!({
            "content": { "*/*": { "schema": { "$ref": format!("#/components/schemas/{body}") } } },
            "required": true,
        });
    }
    op
}

fn camel(s: &str) -> String {
    s.split(['.', '-'])
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The paths of a group-version: discovery, and collection, object and status paths per resource.
pub fn paths(group: &str, version: &str, resources: &[ResourcePaths<'_>]) -> Value {
    let base = format!("/apis/{group}/{version}");
    let group_word = camel(
        &group
            .replace(".k8s.io", "")
            .replace(".apiserver", "Apiserver"),
    );
    let id = |verb: &str, kind: &str| format!("{verb}{group_word}{}{kind}", camel(version));
    let name_param = json!({ "name": "name", "in": "path", "required": true, "description": "Name of the object.", "schema": { "type": "string", "uniqueItems": true } });
    let mut paths = Map::new();
    paths.insert(format!("{base}/"), json!({ "get": {
        "description": "the resources this group-version serves",
        "operationId": id("get", "APIResources"),
        "responses": { "200": response("io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList"), "401": { "description": "Unauthorized" } },
    }}));
    for r in resources {
        let gvk = json!({ "group": group, "kind": r.kind, "version": version });
        let status = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
        paths.insert(format!("{base}/{}", r.plural), json!({
            "get": operation(&id("list", r.kind), &format!("list objects of kind {}", r.kind), "list", &gvk, &r.list_definition, None),
            "post": operation(&id("create", r.kind), &format!("create a {}", r.kind), "post", &gvk, &r.definition, Some(&r.definition)),
            "delete": operation(&id("deleteCollection", r.kind), &format!("delete a collection of {}", r.kind), "deletecollection", &gvk, status, None),
        }));
        paths.insert(format!("{base}/{}/{{name}}", r.plural), json!({
            "parameters": [name_param],
            "get": operation(&id("read", r.kind), &format!("read the named {}", r.kind), "get", &gvk, &r.definition, None),
            "put": operation(&id("replace", r.kind), &format!("replace the named {}", r.kind), "put", &gvk, &r.definition, Some(&r.definition)),
            "patch": operation(&id("patch", r.kind), &format!("patch the named {}", r.kind), "patch", &gvk, &r.definition, Some("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")),
            "delete": operation(&id("delete", r.kind), &format!("delete the named {}", r.kind), "delete", &gvk, status, None),
        }));
        let status_kind = format!("{}Status", r.kind);
        paths.insert(format!("{base}/{}/{{name}}/status", r.plural), json!({
            "parameters": [name_param],
            "get": operation(&id("read", &status_kind), &format!("read the status of the named {}", r.kind), "get", &gvk, &r.definition, None),
            "put": operation(&id("replace", &status_kind), &format!("replace the status of the named {}", r.kind), "put", &gvk, &r.definition, Some(&r.definition)),
            "patch": operation(&id("patch", &status_kind), &format!("patch the status of the named {}", r.kind), "patch", &gvk, &r.definition, Some("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")),
        }));
    }
    Value::Object(paths)
}
