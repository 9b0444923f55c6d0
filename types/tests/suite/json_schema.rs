//! The JSON Schemas of every kind (`apfkit_types::json_schema`).

use apfkit_types::KINDS;
use apfkit_types::json_schema::{Variant, files, schema, standalone_name};

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
    let kind = apfkit_types::find_kind("apiregistration.k8s.io", "v1", "APIService").unwrap();
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
    let kind = apfkit_types::find_kind("flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchemaList")
        .unwrap();
    assert_eq!(
        standalone_name(kind),
        "flowschemalist-flowcontrol-v1beta3.json"
    );
}
