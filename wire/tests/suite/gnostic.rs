//! `gnostic::encode` against what kube-apiserver's libraries write: `tests/data/gnostic/`
//! holds a document that reaches every message and every choice among messages of gnostic's
//! `openapi.v2.Document` (each kind of parameter, JSON references, file schemas, every
//! security definition, maps, tuples, extensions at every level, an operation's kind written
//! from a Go struct and one from a map), and `document.pb`, what kube-openapi's
//! `handler.ToProtoBinary` (gnostic-models v0.7.0, Go's protobuf) makes of it. Made with
//! `go run ./golden gnostic < document.json > document.pb` in `reference/`. The reference
//! suite compares kube-apiserver's whole document the same way (`apfkit-differential`).

use serde_json::Value;

#[test]
fn a_document_is_written_as_kube_openapi_writes_it() {
    let document: Value =
        serde_json::from_str(include_str!("../data/gnostic/document.json")).unwrap();
    let expected = include_bytes!("../data/gnostic/document.pb");
    // The widgets' operations name their kind from a Go struct, as the aggregator's do.
    let written = apfkit_wire::gnostic::encode(&document, |path| path.contains("/widgets"));
    let first_difference = written
        .iter()
        .zip(expected.iter())
        .position(|(a, b)| a != b);
    assert_eq!(
        (written.len(), first_difference),
        (expected.len(), None),
        "the bytes differ from Go's"
    );
}

#[test]
fn a_kind_from_a_map_is_in_sorted_order_and_one_from_a_struct_in_the_structs() {
    let document: Value =
        serde_json::from_str(include_str!("../data/gnostic/document.json")).unwrap();
    let as_struct = apfkit_wire::gnostic::encode(&document, |_| true);
    let as_map = apfkit_wire::gnostic::encode(&document, |_| false);
    let has = |bytes: &[u8], text: &str| bytes.windows(text.len()).any(|w| w == text.as_bytes());
    assert!(has(&as_struct, "group: \"\"\nversion: v1\nkind: Pod\n"));
    assert!(has(&as_map, "group: \"\"\nkind: Pod\nversion: v1\n"));
    assert!(has(
        &as_map,
        "group: example.com\nkind: Widget\nversion: v1\n"
    ));
}

#[test]
fn what_is_not_a_document_is_an_empty_message() {
    for value in [Value::Null, Value::from("swagger"), Value::Array(vec![])] {
        assert!(apfkit_wire::gnostic::encode(&value, |_| false).is_empty());
    }
    // Members of the wrong type are left out, as gnostic leaves nothing of them.
    let odd = serde_json::json!({"swagger": 2, "paths": [], "definitions": {"A": "B"}});
    assert_eq!(
        apfkit_wire::gnostic::encode(&odd, |_| false),
        // definitions (field 9) holding one NamedSchema "A" with no value.
        vec![0x4a, 0x05, 0x0a, 0x03, 0x0a, 0x01, b'A']
    );
}
