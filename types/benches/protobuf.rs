//! The protobuf codec on a FlowSchemaList of 10,000 objects, side by side in one run with
//! the JSON codec of the same types and with k8s-pb (prost, generated from upstream's
//! `.proto`) on the same bytes.
//!
//! `cargo bench -p apfkit-types --bench protobuf`

mod support;

use std::sync::LazyLock;

use apfkit_types::flowcontrol::v1 as ours;
use apfkit_wire::{Kinds as _, protobuf};
use k8s_pb::api::flowcontrol::v1 as pb;
use prost::Message as _;
use serde_json::Value;

const OBJECTS: usize = 10_000;

/// The bootstrap FlowSchemas, repeated with distinct names and full metadata.
static LIST: LazyLock<ours::FlowSchemaList> = LazyLock::new(|| {
    let list = support::flow_schema_list(OBJECTS, |_, metadata| {
        metadata["creationTimestamp"] = Value::from("2024-01-02T03:04:05Z");
    });
    serde_json::from_value(list).expect("decodes")
});

static PROTOBUF: LazyLock<Vec<u8>> = LazyLock::new(|| protobuf::encode(&*LIST).unwrap());
static JSON: LazyLock<Vec<u8>> = LazyLock::new(|| serde_json::to_vec(&*LIST).unwrap());
static THEIRS: LazyLock<pb::FlowSchemaList> =
    LazyLock::new(|| pb::FlowSchemaList::decode(PROTOBUF.as_slice()).unwrap());

fn main() {
    // Same objects on every side: k8s-pb writes our bytes back unchanged.
    assert_eq!(THEIRS.items.len(), OBJECTS);
    assert_eq!(THEIRS.encode_to_vec(), *PROTOBUF);
    println!(
        "protobuf {} bytes, JSON {} bytes",
        PROTOBUF.len(),
        JSON.len()
    );
    divan::main();
}

#[divan::bench(name = "protobuf decode (apfkit)")]
fn protobuf_decode_ours() -> ours::FlowSchemaList {
    protobuf::decode(divan::black_box(&PROTOBUF)).unwrap().value
}

#[divan::bench(name = "protobuf decode (k8s-pb)")]
fn protobuf_decode_k8s_pb() -> pb::FlowSchemaList {
    pb::FlowSchemaList::decode(divan::black_box(PROTOBUF.as_slice())).unwrap()
}

#[divan::bench(name = "JSON decode (apfkit)")]
fn json_decode_ours() -> ours::FlowSchemaList {
    serde_json::from_slice(divan::black_box(&JSON)).unwrap()
}

#[divan::bench(name = "protobuf encode (apfkit)")]
fn protobuf_encode_ours() -> Vec<u8> {
    protobuf::encode(divan::black_box(&*LIST)).unwrap()
}

#[divan::bench(name = "protobuf encode (k8s-pb)")]
fn protobuf_encode_k8s_pb() -> Vec<u8> {
    divan::black_box(&*THEIRS).encode_to_vec()
}

#[divan::bench(name = "JSON encode (apfkit)")]
fn json_encode_ours() -> Vec<u8> {
    serde_json::to_vec(divan::black_box(&*LIST)).unwrap()
}

/// What `apfkit storage get` and protobuf input take: decoded with the node count, measured
/// as JSON within the default limits, then built as a JSON value.
#[divan::bench(name = "protobuf to JSON value (codec, limits held)")]
fn protobuf_to_value_codec() -> Value {
    let codec = apfkit_types::KINDS
        .encodings("flowcontrol.apiserver.k8s.io/v1", "FlowSchemaList")
        .expect("served");
    let limits = apfkit_runtime::scheme::Limits {
        max_depth: 64,
        max_nodes: usize::MAX,
        ..apfkit_runtime::scheme::Limits::default()
    };
    (codec.decode_protobuf)(divan::black_box(&PROTOBUF), &limits)
        .unwrap()
        .value
}

/// The same without the limits: typed decode, then the JSON value.
#[divan::bench(name = "protobuf to JSON value (decode + to_value)")]
fn protobuf_to_value_plain() -> Value {
    let decoded: ours::FlowSchemaList =
        protobuf::decode(divan::black_box(&PROTOBUF)).unwrap().value;
    serde_json::to_value(&decoded).unwrap()
}
