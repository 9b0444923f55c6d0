//! The JSON Schemas of every kind (`apfkit_types::json_schema`).

use std::collections::BTreeMap;
use std::path::Path;

use apfkit_runtime::identity::GroupVersionKind;
use apfkit_types::KINDS;
use apfkit_types::json_schema::{Variant, files, schema, standalone_name};

/// The files under `dir`, by path relative to `root` with `/` separators.
fn read_tree(root: &Path, dir: &Path, into: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_tree(root, &path, into);
        } else {
            let relative = path.strip_prefix(root).unwrap();
            let key = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            into.insert(key, std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// `schemas/jsonschema` holds exactly what these types' schemas are (`cargo xtask codegen`
/// writes them; xtask's own freshness test leaves them to this one).
#[test]
fn the_committed_schemas_are_these_types_schemas() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/jsonschema");
    let mut committed = BTreeMap::new();
    read_tree(&root, &root, &mut committed);
    let fresh = files();
    let stale: Vec<&String> = fresh
        .iter()
        .filter(|(path, text)| committed.get(*path) != Some(*text))
        .map(|(path, _)| path)
        .chain(committed.keys().filter(|path| !fresh.contains_key(*path)))
        .collect();
    assert!(
        stale.is_empty(),
        "stale JSON Schemas (run `cargo xtask codegen`): {stale:?}"
    );
}

#[test]
fn every_kind_has_three_files_and_no_null() {
    let files = files();
    assert_eq!(files.len(), KINDS.len() * 3);
    for text in files.values() {
        assert!(!text.contains("\"null\""), "{text}");
    }
}

#[test]
fn strict_closes_objects_but_not_maps() {
    let kind = apfkit_types::find_kind(&GroupVersionKind::from_static(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
    ))
    .unwrap();
    let strict = schema(kind, Variant::Strict);
    let open = schema(kind, Variant::Open);
    assert!(open.get("additionalProperties").is_none());
    assert_eq!(strict["additionalProperties"], false);
    // Labels are a map: their schema keeps its own `additionalProperties` (a string schema).
    let text = strict.to_string();
    assert!(
        text.contains(r#""additionalProperties":{"type":"string"}"#),
        "{text}"
    );
}

#[test]
fn standalone_names_follow_kubeconform() {
    let kind = apfkit_types::find_kind(&GroupVersionKind::from_static(
        "flowcontrol.apiserver.k8s.io",
        "v1beta3",
        "FlowSchemaList",
    ))
    .unwrap();
    assert_eq!(
        standalone_name(kind),
        "flowschemalist-flowcontrol-v1beta3.json"
    );
}
