//! Decoding and encoding a FlowSchemaList of 10,000 objects (JSON): ours against k8s-openapi's
//! `api::flowcontrol::v1` types on the same bytes, in the same run.
//!
//! `cargo bench -p apfkit-types --bench codec`

mod support;

use std::sync::LazyLock;

use apfkit_types::flowcontrol::v1 as ours;
use k8s_openapi::api::flowcontrol::v1 as theirs;
use serde_json::Value;

const OBJECTS: usize = 10_000;

/// The bootstrap FlowSchemas, repeated with distinct names, as one FlowSchemaList.
static LIST_JSON: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let list = support::flow_schema_list(OBJECTS, |i, metadata| {
        metadata["resourceVersion"] = Value::from(i.to_string());
    });
    serde_json::to_vec(&list).expect("encodes")
});

static OURS: LazyLock<ours::FlowSchemaList> =
    LazyLock::new(|| serde_json::from_slice(&LIST_JSON).expect("decodes"));
static THEIRS: LazyLock<k8s_openapi::List<theirs::FlowSchema>> =
    LazyLock::new(|| serde_json::from_slice(&LIST_JSON).expect("decodes"));

fn main() {
    // Both sides must see the same objects, or the comparison means nothing.
    assert_eq!(OURS.items.len(), OBJECTS);
    assert_eq!(THEIRS.items.len(), OBJECTS);
    assert_eq!(
        serde_json::to_value(&*OURS).unwrap(),
        serde_json::to_value(&*THEIRS).unwrap()
    );
    divan::main();
}

#[divan::bench(name = "decode ours (apfkit-types)")]
fn decode_ours() -> ours::FlowSchemaList {
    serde_json::from_slice(divan::black_box(&LIST_JSON)).unwrap()
}

#[divan::bench(name = "decode baseline (k8s-openapi)")]
fn decode_theirs() -> k8s_openapi::List<theirs::FlowSchema> {
    serde_json::from_slice(divan::black_box(&LIST_JSON)).unwrap()
}

#[divan::bench(name = "encode ours (apfkit-types)")]
fn encode_ours() -> Vec<u8> {
    serde_json::to_vec(divan::black_box(&*OURS)).unwrap()
}

#[divan::bench(name = "encode baseline (k8s-openapi)")]
fn encode_theirs() -> Vec<u8> {
    serde_json::to_vec(divan::black_box(&*THEIRS)).unwrap()
}
