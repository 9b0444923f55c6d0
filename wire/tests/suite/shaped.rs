//! `wire::shaped`: messages described by field tables, read into and written from JSON, held
//! to prost's reading of upstream's own messages (k8s-pb, generated from k8s.io/api's
//! `generated.proto`).

use apfkit_runtime::scheme::Limits;
use apfkit_wire::shaped::{self, Holds, RootShape, Shape};
use prost::Message as _;
use serde_json::{Value, json};

static CONDITIONS: Shape = Shape(&[
    (1, "ready", Holds::OptionalBool),
    (2, "count", Holds::OptionalInt32),
]);
static THING: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "name", Holds::Text { omit_empty: false }),
    (3, "hostname", Holds::OptionalText),
    (4, "port", Holds::Int32 { omit_zero: false }),
    (5, "nodePort", Holds::Int32 { omit_zero: true }),
    (6, "generation", Holds::Int64 { omit_zero: true }),
    (7, "enabled", Holds::Bool { omit_false: true }),
    (8, "target", Holds::IntOrString),
    (9, "when", Holds::Time),
    (10, "conditions", Holds::Message(&CONDITIONS, true)),
    (11, "labels", Holds::Map),
    (12, "addresses", Holds::Texts),
    (13, "items", Holds::Messages(&CONDITIONS)),
]);
struct Thing;
impl RootShape for Thing {
    const SHAPE: &'static Shape = &THING;
}

fn round_trip(value: &Value) -> Value {
    let bytes = shaped::write(&THING, value).unwrap();
    let (read, unknown) = shaped::read::<Thing>(&bytes, &Limits::default()).unwrap();
    assert!(unknown.is_empty(), "{unknown:?}");
    Value::Object(read)
}

#[test]
fn every_kind_of_field_reads_back_what_it_wrote() {
    let full = json!({
        "metadata": {"name": "t", "namespace": "ns"},
        "name": "n", "hostname": "", "port": 80, "nodePort": 30080, "generation": 7,
        "enabled": true, "target": "https", "when": "2026-01-02T03:04:05Z",
        "conditions": {"ready": false, "count": -1},
        "labels": {"a": "b"}, "addresses": ["10.0.0.1", "10.0.0.2"],
        "items": [{"ready": true}, {}],
    });
    assert_eq!(round_trip(&full), full);
    // Go's values filled in as its JSON writes them; pointers and omitempty ones left out.
    assert_eq!(
        round_trip(&json!({"target": 8443})),
        json!({"metadata": {}, "name": "", "port": 0, "target": 8443, "conditions": {}})
    );
    assert_eq!(round_trip(&json!({}))["target"], 0);
}

static SERVICE_PORT: Shape = Shape(&[
    (1, "name", Holds::Text { omit_empty: true }),
    (2, "protocol", Holds::Text { omit_empty: true }),
    (3, "port", Holds::Int32 { omit_zero: false }),
    (4, "targetPort", Holds::IntOrString),
    (5, "nodePort", Holds::Int32 { omit_zero: true }),
    (6, "appProtocol", Holds::OptionalText),
]);
struct ServicePort;
impl RootShape for ServicePort {
    const SHAPE: &'static Shape = &SERVICE_PORT;
}

/// The bytes are what upstream's message reads (k8s-pb's `ServicePort`): a Go value written
/// even when zero, a pointer only when set, an IntOrString as its three fields; and what
/// prost writes reads back here.
#[test]
fn upstreams_messages_read_what_is_written_and_the_other_way() {
    use k8s_pb::api::core::v1::ServicePort as Pb;
    let bytes = shaped::write(
        &SERVICE_PORT,
        &json!({"name": "https", "port": 443, "targetPort": "web"}),
    )
    .unwrap();
    let read = Pb::decode(bytes.as_slice()).unwrap();
    assert_eq!(read.name.as_deref(), Some("https"));
    assert_eq!(read.protocol.as_deref(), Some(""));
    assert_eq!(read.port, Some(443));
    assert_eq!(read.node_port, Some(0));
    assert_eq!(read.app_protocol, None);
    let target = read.target_port.unwrap();
    assert_eq!(
        (target.r#type, target.int_val, target.str_val.as_deref()),
        (Some(1), Some(0), Some("web"))
    );
    let written = Pb {
        name: Some("metrics".into()),
        protocol: Some("UDP".into()),
        port: Some(9090),
        target_port: Some(k8s_pb::apimachinery::pkg::util::intstr::IntOrString {
            r#type: Some(0),
            int_val: Some(9191),
            str_val: Some(String::new()),
        }),
        node_port: None,
        app_protocol: Some("http".into()),
    }
    .encode_to_vec();
    let (read, unknown) = shaped::read::<ServicePort>(&written, &Limits::default()).unwrap();
    assert!(unknown.is_empty());
    assert_eq!(
        Value::Object(read),
        json!({"name": "metrics", "protocol": "UDP", "port": 9090, "targetPort": 9191,
               "appProtocol": "http"})
    );
}

#[test]
fn json_of_the_wrong_shape_is_an_error_naming_the_field() {
    for (value, path) in [
        (json!({"port": "eighty"}), "port"),
        (json!({"port": 4_294_967_296_i64}), "port"),
        (json!({"conditions": {"ready": "yes"}}), "conditions.ready"),
        (json!({"items": [{}, {"count": 1.5}]}), "items[1].count"),
        (json!({"labels": {"a": 1}}), "labels"),
        (json!({"when": "yesterday"}), "when"),
        (json!({"addresses": "10.0.0.1"}), "addresses"),
        (json!({"conditions": []}), "conditions"),
        (json!({"target": true}), "target"),
        (json!([1]), ""),
    ] {
        let error = shaped::write(&THING, &value).unwrap_err();
        assert!(error.starts_with(path), "{error} for {value}");
    }
}

#[test]
fn hostile_messages_are_refused_within_limits() {
    // Truncated: a length past the end; a wrong wire type; a varint cut short; a time
    // message cut short; garbage.
    for raw in [
        &[0x12, 0x40, 0x0a][..],
        &[0x27],
        &[0x20, 0xff],
        &[0x4a, 0x02, 0x08],
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    ] {
        assert!(
            shaped::read::<Thing>(raw, &Limits::default()).is_err(),
            "{raw:?}"
        );
    }
    // 100,000 list items: refused past the node limit, not grown without bound.
    let many: Vec<u8> = std::iter::repeat_n([0x6a, 0x02, 0x08, 0x01], 100_000)
        .flatten()
        .collect();
    let limits = Limits {
        max_nodes: 10_000,
        ..Limits::default()
    };
    assert!(
        shaped::read::<Thing>(&many, &limits)
            .unwrap_err()
            .exceeded
            .is_some()
    );
    // Deep nesting is bounded by the shapes (messages nest only as they declare): a
    // conditions message inside conditions is an unknown field, skipped.
    let (_, unknown) = shaped::read::<Thing>(&[0xa0, 0x01, 0x01], &Limits::default()).unwrap();
    assert_eq!(unknown.len(), 1);
}
