//! A custom resource's versions as the server uses them: request bodies pruned and defaulted
//! with unknown fields reported as the field mode says, stored values read back unchanged,
//! `None` conversion between versions.

mod support;

use std::sync::Arc;

use apfkit_apiextensions::custom::{CustomVersion, Definition};
use apfkit_apiextensions::{NoKind, ServedObject};
use apfkit_apiserver::store::VersionCodec;
use apfkit_crd::CustomResourceDefinition;
use apfkit_runtime::scheme::{Limits, UnknownFields, Warning};
use serde_json::{Value, json};

type Served = ServedObject<NoKind>;

fn versions() -> Vec<CustomVersion> {
    let crd = support::gadgets(
        &["v1", "v1beta1"],
        json!({
            "replicas": {"type": "integer", "default": 1},
            "weight": {"type": "number"},
        }),
        json!({}),
    );
    let definition = Arc::new(Definition::new(
        CustomResourceDefinition::from_value(&crd).unwrap(),
    ));
    vec![
        CustomVersion::new(definition.clone(), 0),
        CustomVersion::new(definition, 1),
    ]
}

fn body() -> Value {
    json!({
        "apiVersion": "example.com/v1beta1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"weight": 0.5, "extra": {"a": 1}},
    })
}

#[test]
fn request_bodies_are_pruned_and_defaulted_and_unknown_fields_reported_by_mode() {
    let versions = versions();
    let v1beta1 = &versions[1];
    let mut warnings = Vec::new();
    let object: Served = v1beta1
        .decode(&body(), UnknownFields::Warn, &mut warnings)
        .unwrap();
    assert_eq!(
        warnings,
        [Warning::UnknownField {
            path: "spec.extra".to_owned()
        }]
    );
    let value = v1beta1.encode(object.clone(), &mut Vec::new()).unwrap();
    assert_eq!(value["spec"], json!({"weight": 0.5, "replicas": 1}));
    let strict =
        VersionCodec::<Served>::decode(v1beta1, &body(), UnknownFields::Strict, &mut Vec::new())
            .unwrap_err();
    assert_eq!(
        strict.to_string(),
        r#"strict decoding error: unknown field "spec.extra""#
    );
    // In the other version: only apiVersion changes (None conversion).
    let v1 = versions[0].encode(object, &mut Vec::new()).unwrap();
    assert_eq!(v1["apiVersion"], "example.com/v1");
    assert_eq!(v1["spec"], value["spec"]);
}

#[test]
fn stored_values_read_back_unchanged_even_with_floats_at_the_edge_of_precision() {
    // Finding 4 of the fuzz target served_custom_resource: without exact float parsing,
    // 4.4222222222222235e+112 read back as 4.422222222222223e+112.
    let versions = versions();
    for weight in [
        json!(4.4222222222222235e112),
        json!(0.1),
        json!(1e-300),
        json!(5e-324),
    ] {
        let stored = json!({
            "apiVersion": "example.com/v1",
            "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"replicas": 2, "weight": weight},
        });
        let bytes = serde_json::to_vec(&stored).unwrap();
        let object: Served = versions[0]
            .decode_stored(&bytes, &Limits::default())
            .unwrap();
        let again = versions[0].encode(object, &mut Vec::new()).unwrap();
        assert_eq!(serde_json::to_vec(&again).unwrap(), bytes, "{weight}");
    }
}

#[test]
fn stored_values_of_another_kind_or_group_or_garbage_are_errors() {
    let versions = versions();
    let limits = Limits::default();
    let cases: [&[u8]; 5] = [
        br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}"#,
        br#"{"apiVersion":"example.org/v1","kind":"Gadget","metadata":{"name":"w"}}"#,
        br#"{"apiVersion":"example.com/v9","kind":"Gadget"}"#,
        b"\x00garbage",
        br#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":7}}"#,
    ];
    for bytes in cases {
        let read: Result<Served, String> = versions[0].decode_stored(bytes, &limits);
        assert!(read.is_err(), "{}", String::from_utf8_lossy(bytes));
    }
}
