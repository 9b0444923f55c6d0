//! The document the core kinds' types are generated from: kube-apiserver 1.37's own
//! definitions (its `/openapi/v3` documents, kept in `apiserver/data/openapi/1.37` by
//! `reference/fetch-openapi`) of the kinds `apfkit-corekinds` and `apfkit-namespaces` serve,
//! and of every definition they reach, each object schema given its Go struct's layout as the
//! `x-apfkit-go` extension, from `types/data/core-go-layouts.json` (written by
//! `reference/golden golayouts` from k8s.io/api's struct tags).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

/// Where kube's documents are kept, relative to the repository root.
const KUBE_DOCUMENTS: &str = "apiserver/data/openapi/1.37";

/// The Go layouts, relative to the repository root.
pub const LAYOUTS: &str = "types/data/core-go-layouts.json";

/// Each of kube's documents read, with the kinds (and their lists) taken from it.
const ROOTS: &[(&str, &[&str])] = &[
    (
        "api/v1.json",
        &[
            "io.k8s.api.core.v1.ConfigMap",
            "io.k8s.api.core.v1.Secret",
            "io.k8s.api.core.v1.ServiceAccount",
            "io.k8s.api.core.v1.Namespace",
            "io.k8s.api.core.v1.Event",
        ],
    ),
    (
        "apis/coordination.k8s.io/v1.json",
        &["io.k8s.api.coordination.v1.Lease"],
    ),
    (
        "apis/events.k8s.io/v1.json",
        &["io.k8s.api.events.v1.Event"],
    ),
];

/// The definitions' prefix in a document's `$ref`s.
const REF_PREFIX: &str = "#/components/schemas/";

/// The document: every definition the kinds reach, in one OpenAPI v3 document, those of
/// k8s.io/api with their Go layout.
///
/// # Errors
///
/// A document or the layouts missing or malformed, a kind not in its document, or a
/// k8s.io/api definition without a layout.
pub fn document(root: &Path) -> Result<Value> {
    let layouts: BTreeMap<String, Value> = read_json(&root.join(LAYOUTS))?;
    let mut metadata = super::meta::object_metadata();
    super::go::annotate(&mut metadata, "", "");
    let metadata: BTreeMap<String, Value> = metadata.into_iter().collect();
    let mut schemas = Map::new();
    let mut paths = Map::new();
    for (file, kinds) in ROOTS {
        let path = root.join(KUBE_DOCUMENTS).join(file);
        let document: Value = read_json(&path)?;
        let definitions = document
            .pointer("/components/schemas")
            .and_then(Value::as_object)
            .with_context(|| format!("{}: no components.schemas", path.display()))?;
        paths.extend(reads_of(&document, kinds));
        let mut pending: Vec<String> = kinds
            .iter()
            .flat_map(|kind| [(*kind).to_owned(), format!("{kind}List")])
            .filter(|name| definitions.contains_key(name) || !name.ends_with("List"))
            .collect();
        let mut seen = BTreeSet::new();
        while let Some(name) = pending.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            let Some(schema) = definitions.get(&name) else {
                bail!("{}: no definition {name}", path.display());
            };
            references(schema, &mut pending);
            let mut schema = schema.clone();
            if let Some(ours) = metadata.get(&name) {
                // What k8s-openapi's metadata types stand in for: the project's own
                // definitions, with the layouts of the codecs apfkit-wire holds for them.
                schema = ours.clone();
            } else if name.starts_with("io.k8s.api.") {
                let Some(fields) = layouts.get(&name) else {
                    bail!("{LAYOUTS}: no Go layout of {name}");
                };
                schema["x-apfkit-go"] = json!({ "fields": fields });
            }
            schemas.insert(name, schema);
        }
    }
    Ok(json!({
        "openapi": "3.0.0",
        "info": {
            "title": "kube-apiserver 1.37's core kinds, with their Go layouts",
            "version": "v1.37.2",
        },
        "paths": paths,
        "components": { "schemas": schemas },
    }))
}

/// The paths of `document` that read one of `kinds` (its `get` operations: what tells the
/// generator each kind's plural, scope and subresources), each reduced to the operation's
/// action and kind.
fn reads_of(document: &Value, kinds: &[&str]) -> Map<String, Value> {
    let short: Vec<&str> = kinds.iter().filter_map(|k| k.rsplit('.').next()).collect();
    let mut reads = Map::new();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        let get = &item["get"];
        let gvk = &get["x-kubernetes-group-version-kind"];
        if gvk["kind"]
            .as_str()
            .is_some_and(|kind| short.contains(&kind))
        {
            reads.insert(
                path.clone(),
                json!({ "get": {
                    "x-kubernetes-action": get["x-kubernetes-action"],
                    "x-kubernetes-group-version-kind": gvk,
                    "responses": {},
                }}),
            );
        }
    }
    reads
}

/// The definitions `schema` refers to, pushed onto `out`.
fn references(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(REF_PREFIX))
            {
                out.push(name.to_owned());
            }
            map.values().for_each(|v| references(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        _ => {}
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_and_what_it_reaches_has_its_go_layout() {
        let document = document(&crate::project_root()).expect("the document builds");
        let schemas = document["components"]["schemas"].as_object().unwrap();
        for name in [
            "io.k8s.api.core.v1.SecretList",
            "io.k8s.api.core.v1.ObjectReference",
            "io.k8s.api.coordination.v1.LeaseSpec",
            "io.k8s.api.events.v1.EventSeries",
        ] {
            let fields = schemas[name]["x-apfkit-go"]["fields"].as_array();
            assert!(fields.is_some_and(|f| !f.is_empty()), "{name}");
        }
        // apimachinery's metadata with the layout of the codecs apfkit-wire holds for
        // k8s-openapi's types, which stand in for them.
        let meta = &schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"];
        assert!(meta.get("x-apfkit-go").is_some());
    }
}
