//! The wire codecs on hand-checked vectors (bytes worked out from gogo-protobuf's rules, see
//! `apfkit_wire::protobuf`) and on hostile input. Upstream's own fixtures are checked in
//! `apfkit-storage`'s `upstream_fixtures` test.

use apfkit_runtime::scheme::Limits;
use apfkit_types::apiregistration::v1::APIService;
use apfkit_types::flowcontrol::{v1, v1beta3};
use apfkit_wire::{Kinds as _, go_json, protobuf};
use proptest::prelude::*;

fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

fn api_service() -> APIService {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.g"},
        "spec": {
            "service": {"namespace": "ns", "name": "api", "port": 443},
            "group": "g", "version": "v1", "caBundle": "AQI=",
            "groupPriorityMinimum": 100, "versionPriority": 15
        }
    }))
    .unwrap()
}

/// Worked out by hand: Go value fields written even when empty (ObjectMeta's six strings,
/// `generation` 0 and the zero `creationTimestamp` as an empty message; `insecureSkipTLSVerify`
/// false), the pointer `service` and its `port` written because set, `status` (a Go struct
/// value) as an empty message.
const API_SERVICE: &str = "
    0a 14  0a 04 76 31 2e 67  12 00  1a 00  22 00  2a 00  32 00  38 00  42 00
    12 1f  0a 0c  0a 02 6e 73  12 03 61 70 69  18 bb 03
           12 01 67  1a 02 76 31  20 00  2a 02 01 02  38 64  40 0f
    1a 00";

#[test]
fn api_service_encodes_to_the_hand_checked_bytes() {
    assert_eq!(protobuf::encode(&api_service()).unwrap(), hex(API_SERVICE));
    let decoded = protobuf::decode::<APIService>(&hex(API_SERVICE)).unwrap();
    assert!(decoded.unknown.is_empty());
    // Decoding gives what Go's JSON shows: an empty `status` struct, no empty strings.
    let mut expected = api_service();
    expected.status = Some(Default::default());
    assert_eq!(decoded.value, expected);
}

#[test]
fn api_service_go_json_follows_the_go_struct() {
    let json = go_json::to_vec::<APIService>(&api_service(), false).unwrap();
    assert_eq!(
        String::from_utf8(json).unwrap(),
        concat!(
            r#"{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"v1.g"},"#,
            r#""spec":{"service":{"namespace":"ns","name":"api","port":443},"group":"g","version":"v1","#,
            r#""caBundle":"AQI=","groupPriorityMinimum":100,"versionPriority":15},"status":{}}"#
        )
    );
}

#[test]
fn negative_int32_takes_ten_bytes_and_zero_values_are_written() {
    let queuing = v1::QueuingConfiguration {
        queues: Some(-1),
        hand_size: None,
        queue_length_limit: Some(0),
    };
    assert_eq!(
        protobuf::encode(&queuing).unwrap(),
        hex("08 ff ff ff ff ff ff ff ff ff 01  10 00  18 00")
    );
    let back = protobuf::decode::<v1::QueuingConfiguration>(&hex(
        "08 ff ff ff ff ff ff ff ff ff 01  10 00  18 00",
    ))
    .unwrap()
    .value;
    // `handSize` has no omitempty: Go shows 0, so it is kept as Some(0).
    assert_eq!(back.hand_size, Some(0));
    assert_eq!(back.queues, Some(-1));
}

#[test]
fn pointers_are_written_only_when_set_and_kept_apart_from_zero() {
    // v1's nominalConcurrencyShares is a pointer: None writes nothing, Some(0) writes 0.
    // (limitResponse, a Go struct value, is always written, with its value string `type`.)
    let mut limited = v1::LimitedPriorityLevelConfiguration::default();
    assert_eq!(protobuf::encode(&limited).unwrap(), hex("12 02 0a 00"));
    limited.nominal_concurrency_shares = Some(0);
    assert_eq!(
        protobuf::encode(&limited).unwrap(),
        hex("08 00  12 02 0a 00")
    );
    assert_eq!(
        protobuf::decode::<v1::LimitedPriorityLevelConfiguration>(&hex("08 00 12 00"))
            .unwrap()
            .value
            .nominal_concurrency_shares,
        Some(0)
    );
    // v1beta3's is a Go value: always written, 0 when unset.
    let limited = v1beta3::LimitedPriorityLevelConfiguration::default();
    assert_eq!(
        protobuf::encode(&limited).unwrap(),
        hex("08 00  12 02 0a 00")
    );
}

#[test]
fn maps_are_written_sorted_by_key_and_strings_escaped_as_go_does() {
    let mut schema = v1::FlowSchema::default();
    schema.metadata.labels = Some(
        [("b", "2"), ("a", "1")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    );
    let bytes = protobuf::encode(&schema.metadata).unwrap();
    // Field 11, one entry per key: "a" then "b".
    let entries = hex("5a 06 0a 01 61 12 01 31  5a 06 0a 01 62 12 01 32");
    assert!(
        bytes.windows(entries.len()).any(|w| w == entries),
        "entries a then b in {bytes:02x?}"
    );

    // Go escapes <, >, & and the two line separators; other characters starting with the
    // same UTF-8 byte as the separators (E2) are written as they are.
    schema.metadata.annotations = Some(
        [(
            "note".to_owned(),
            "<a&b>\u{2028}€\u{2029}\u{2027}é\"".to_owned(),
        )]
        .into(),
    );
    let json =
        String::from_utf8(go_json::to_vec::<v1::FlowSchema>(&schema, false).unwrap()).unwrap();
    let expected = "\"note\":\"\\u003ca\\u0026b\\u003e\\u2028€\\u2029\u{2027}é\\\"\"";
    assert!(json.contains(expected), "{json} lacks {expected}");
}

#[test]
fn fields_in_any_order_and_repeated_messages_merge() {
    // matchingPrecedence before priorityLevelConfiguration, and the reference sent in two
    // parts: protobuf merges a repeated embedded message.
    let bytes = hex("10 05  0a 03 0a 01 78  0a 00");
    let spec = protobuf::decode::<v1::FlowSchemaSpec>(&bytes)
        .unwrap()
        .value;
    assert_eq!(spec.matching_precedence, Some(5));
    assert_eq!(spec.priority_level_configuration.name, "x");
    assert_eq!(
        protobuf::encode(&spec).unwrap(),
        hex("0a 03 0a 01 78  10 05"),
        "written back in field order"
    );
}

#[test]
fn unknown_fields_are_skipped_and_reported_by_path() {
    // spec.limited with an unknown varint field 9, then a known one.
    let limited = hex("48 01  08 07  12 00");
    let mut spec = hex("0a 01 4c  12");
    spec.push(limited.len() as u8);
    spec.extend(&limited);
    let decoded = protobuf::decode::<v1::PriorityLevelConfigurationSpec>(&spec).unwrap();
    assert_eq!(decoded.unknown.len(), 1);
    assert_eq!(decoded.unknown[0].path, "limited.#9");
    assert_eq!(decoded.unknown[0].wire, "varint");
    assert_eq!(
        decoded.value.limited.unwrap().nominal_concurrency_shares,
        Some(7)
    );
}

#[test]
fn errors_name_the_field_path() {
    // spec.matchingPrecedence (2) as a string instead of a varint.
    let error = protobuf::decode::<v1::FlowSchemaSpec>(&hex("12 01 78")).unwrap_err();
    assert_eq!(error.path, "matchingPrecedence");
    assert!(error.message.contains("wire type"), "{error}");
    // rules[1].subjects[0].kind with invalid UTF-8.
    let subject = hex("0a 01 ff");
    let mut rule1 = vec![0x0a, subject.len() as u8];
    rule1.extend(&subject);
    let mut bytes = hex("22 00  22");
    bytes.push(rule1.len() as u8);
    bytes.extend(&rule1);
    let error = protobuf::decode::<v1::FlowSchemaSpec>(&bytes).unwrap_err();
    assert_eq!(
        error.to_string(),
        "rules[1].subjects[0].kind: string is not valid UTF-8"
    );
}

#[test]
fn every_truncation_of_a_real_object_fails_cleanly_or_decodes_a_prefix() {
    let bytes = protobuf::encode(&api_service()).unwrap();
    for end in 0..bytes.len() {
        // A cut on a field boundary is a valid shorter message; elsewhere an error.
        let _ = protobuf::decode::<APIService>(&bytes[..end]);
    }
    // Cut inside `status`' length: the error names the field.
    let error = protobuf::decode::<APIService>(&bytes[..bytes.len() - 1]).unwrap_err();
    assert_eq!(error.path, "status");
    // Cut inside metadata: its length runs past the end.
    let error = protobuf::decode::<APIService>(&bytes[..5]).unwrap_err();
    assert_eq!(error.path, "metadata");
    assert!(error.message.contains("past the end"), "{error}");
}

#[test]
fn oversized_lengths_and_deep_groups_are_errors_not_crashes() {
    // A length of 2^62 on the metadata field.
    let error =
        protobuf::decode::<v1::FlowSchema>(&hex("0a 80 80 80 80 80 80 80 80 40")).unwrap_err();
    assert!(error.message.contains("past the end"), "{error}");
    // An unknown field opening 10,000 nested groups.
    let bytes = vec![0x4b; 10_000]; // field 9, start group
    assert!(protobuf::decode::<v1::FlowSchema>(&bytes).is_err());
    // A field number of 0 and a reserved wire type.
    assert!(protobuf::decode::<v1::FlowSchema>(&hex("00")).is_err());
    assert!(protobuf::decode::<v1::FlowSchema>(&hex("0f")).is_err());
}

/// The metadata of an envelope read alone: the whole object's, with every other field
/// skipped; truncated, duplicated, oversized and garbage envelopes are errors, never panics.
#[test]
fn an_envelopes_metadata_reads_alone_and_hostile_envelopes_are_errors() {
    use apfkit_wire::envelope;
    let raw = protobuf::encode(&api_service()).unwrap();
    let bytes = envelope::wrap("apiregistration.k8s.io/v1", "APIService", &raw);
    let limits = Limits::default();
    let (kind, metadata) = envelope::metadata(&bytes, &limits).unwrap().unwrap();
    assert_eq!(kind, "APIService");
    assert_eq!(metadata, api_service().metadata);
    // Not an envelope.
    assert!(envelope::metadata(b"{\"kind\":\"APIService\"}", &limits).is_none());
    // Every truncation: an error or a shorter message, never a panic.
    for end in 0..bytes.len() {
        let _ = envelope::metadata(&bytes[..end], &limits);
    }
    // The metadata twice merges, as protobuf does.
    let mut twice = raw.clone();
    twice.extend_from_slice(&hex("0a 03 2a 01 7a")); // metadata { uid (5): "z" }
    let twice = envelope::wrap("apiregistration.k8s.io/v1", "APIService", &twice);
    let (_, merged) = envelope::metadata(&twice, &limits).unwrap().unwrap();
    assert_eq!(merged.uid.as_deref(), Some("z"));
    assert_eq!(merged.name, api_service().metadata.name);
    // A length of 2^62 on the metadata field; 10,000 nested groups after it; garbage.
    for raw in [
        hex("0a 80 80 80 80 80 80 80 80 40"),
        vec![0x4b; 10_000],
        hex("0f ff ff"),
    ] {
        let bytes = envelope::wrap("apiregistration.k8s.io/v1", "APIService", &raw);
        assert!(envelope::metadata(&bytes, &limits).unwrap().is_err());
    }
    // More nodes than the limits allow.
    let few = Limits {
        max_nodes: 3,
        ..Limits::default()
    };
    let error = envelope::metadata(&bytes, &few).unwrap().unwrap_err();
    assert!(error.to_string().contains("3"), "{error}");
}

#[test]
fn invalid_base64_is_an_encode_error_naming_the_field() {
    let mut service = api_service();
    service.spec.ca_bundle = Some("not base64!".to_owned());
    let error = protobuf::encode(&service).unwrap_err();
    assert_eq!(error.field, "caBundle");
}

proptest! {
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = protobuf::decode::<v1::FlowSchema>(&bytes);
        let _ = protobuf::decode::<APIService>(&bytes);
        let _ = protobuf::decode::<v1beta3::PriorityLevelConfiguration>(&bytes);
    }

    /// Whatever decodes, re-encodes to bytes that decode to the same value.
    #[test]
    fn decoded_values_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(decoded) = protobuf::decode::<v1::PriorityLevelConfiguration>(&bytes) {
            let again = protobuf::encode(&decoded.value).unwrap();
            prop_assert_eq!(protobuf::decode::<v1::PriorityLevelConfiguration>(&again).unwrap().value, decoded.value);
        }
    }
}

#[test]
fn documents_print_in_go_order_by_kind_with_errors_under_their_item() {
    use apfkit_wire::to_go_json;
    use serde_json::json;
    // Not a served kind, or no identity: nothing to say, the caller writes it as it is.
    assert!(
        to_go_json(
            apfkit_types::KINDS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap"}),
            true
        )
        .is_none()
    );
    assert!(to_go_json(apfkit_types::KINDS, &json!({"metadata": {}}), false).is_none());
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"b": "<", "a": "1"}},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.g"}},
    ]});
    assert_eq!(
        String::from_utf8(
            to_go_json(apfkit_types::KINDS, &list, false)
                .unwrap()
                .unwrap()
        )
        .unwrap(),
        concat!(
            r#"{"kind":"List","apiVersion":"v1","metadata":{},"items":["#,
            r#"{"apiVersion":"v1","data":{"a":"1","b":"\u003c"},"kind":"ConfigMap"},"#,
            r#"{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"v1.g"},"#,
            r#""spec":{"groupPriorityMinimum":0,"versionPriority":0},"status":{}}]}"#
        )
    );
    let bad = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "spec": {"versionPriority": "high"}},
    ]});
    let error = to_go_json(apfkit_types::KINDS, &bad, true)
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("items[0].spec.versionPriority: "),
        "{error}"
    );
    let bad_meta = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": 3}});
    let error = to_go_json(apfkit_types::KINDS, &bad_meta, true)
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("metadata.resourceVersion: "), "{error}");
}

/// A string as Go's `encoding/json` writes it, from serde_json's writing and Go's five extra
/// escapes.
fn go_escaped(text: &str) -> String {
    serde_json::to_string(text)
        .unwrap()
        .replace('&', "\\u0026")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[test]
fn every_escape_is_found_at_every_offset_of_short_and_long_strings() {
    // The escapes and their neighbours: `=` and `?` sit beside `<` and `>`, `%` and `'`
    // beside `&`, U+2027 and U+20AC start with the separators' first byte.
    let probes = [
        '<', '>', '&', '\u{2028}', '\u{2029}', '=', '?', '%', '\'', '\u{2027}', '€',
    ];
    for length in 0..=33 {
        for at in 0..=length {
            for probe in probes {
                let text = format!("{}{probe}{}", "x".repeat(at), "y".repeat(length - at));
                let written = go_json::to_vec_plain(&text, false).unwrap();
                assert_eq!(String::from_utf8(written).unwrap(), go_escaped(&text));
            }
        }
    }
}

proptest! {
    #[test]
    fn strings_are_escaped_as_go_does(text in r#"[a-z<>&=?%'"\\\u{2026}-\u{202a}é€\n\t\x01]{0,60}"#) {
        let written = go_json::to_vec_plain(&text, false).unwrap();
        prop_assert_eq!(String::from_utf8(written).unwrap(), go_escaped(&text));
    }
}

#[test]
fn indented_go_json_lays_out_as_marshal_indent() {
    use serde_json::{Value, json};
    // serde_json's two-space PrettyFormatter lays out as json.MarshalIndent(v, "", "  ").
    let mut deep = json!({"leaf": [1, {}, []]});
    for level in 0..80 {
        deep = if level % 2 == 0 {
            json!([deep, {"k": "v"}, []])
        } else {
            json!({"a": {}, "b": deep, "c": [null, true, 1.5, "s"]})
        };
    }
    for value in [
        json!({}),
        json!([]),
        json!({"a": [], "b": {}, "c": [[], [{}]], "d": {"e": {"f": 1}}}),
        deep,
        Value::from("text & <tags>, \u{2028}€"),
        Value::from(format!("{}>{}\u{2029}", "x".repeat(37), "é".repeat(20))),
    ] {
        let go = go_json::to_vec_plain(&value, true).unwrap();
        let escaped = String::from_utf8(serde_json::to_vec_pretty(&value).unwrap())
            .unwrap()
            .replace('&', "\\u0026")
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029");
        assert_eq!(String::from_utf8(go).unwrap(), escaped);
    }
}

/// A FlowSchema whose metadata holds `count` empty `ownerReferences` (ObjectMeta field 13):
/// two bytes each on the wire, nine JSON nodes each once decoded (Go writes an empty owner
/// reference's four strings).
fn empty_owner_references(count: usize) -> Vec<u8> {
    let metadata: Vec<u8> = std::iter::repeat_n([0x6a, 0x00], count).flatten().collect();
    let mut bytes = vec![0x0a];
    prost::encoding::encode_varint(metadata.len() as u64, &mut bytes);
    bytes.extend(metadata);
    bytes
}

/// Issue 24, item 1: an 8 MiB message of empty list items used to be decoded whole (about
/// 450 bytes of memory per input byte) before the node limit was checked. The decoder now
/// counts fields and messages as it reads them and stops at the limit.
#[test]
fn the_node_limit_holds_while_decoding() {
    let limits = Limits {
        max_depth: 64,
        max_nodes: 1_000,
        ..Limits::default()
    };
    // 499 items: 1 metadata message + 499 × (key + message) + its own key = 1,000 counted.
    let error = protobuf::decode_within::<v1::FlowSchema>(&empty_owner_references(600), &limits)
        .unwrap_err();
    assert_eq!(error.exceeded, Some(protobuf::Exceeded::Nodes(1_000)));
    assert!(error.message.contains("more than 1000 nodes"), "{error}");
    let decoded =
        protobuf::decode_within::<v1::FlowSchema>(&empty_owner_references(400), &limits).unwrap();
    assert_eq!(
        decoded
            .value
            .metadata
            .owner_references
            .as_ref()
            .map(Vec::len),
        Some(400)
    );
    // Unknown fields count too: 2,000 of them inside metadata.
    let unknown: Vec<u8> = std::iter::repeat_n([0xf8, 0x07, 0x00], 2_000)
        .flatten()
        .collect();
    let mut bytes = vec![0x0a];
    prost::encoding::encode_varint(unknown.len() as u64, &mut bytes);
    bytes.extend(unknown);
    let error = protobuf::decode_within::<v1::FlowSchema>(&bytes, &limits).unwrap_err();
    assert_eq!(error.exceeded, Some(protobuf::Exceeded::Nodes(1_000)));
}

/// The decoded object is measured as JSON before it is built: 400 empty owner references are
/// 802 fields and messages on the wire but 3,600 JSON nodes once Go's empty strings appear.
#[test]
fn the_codec_measures_the_object_before_building_it() {
    let codec = apfkit_types::KINDS
        .encodings("flowcontrol.apiserver.k8s.io/v1", "FlowSchema")
        .unwrap();
    let limits = Limits {
        max_depth: 64,
        max_nodes: 2_000,
        ..Limits::default()
    };
    let error = (codec.decode_protobuf)(&empty_owner_references(400), &limits).unwrap_err();
    assert_eq!(error.exceeded, Some(protobuf::Exceeded::Nodes(2_000)));
    let decoded = (codec.decode_protobuf)(&empty_owner_references(100), &limits).unwrap();
    assert_eq!(
        decoded.value["metadata"]["ownerReferences"][0],
        serde_json::json!({"apiVersion": "", "kind": "", "name": "", "uid": ""})
    );
    let depth = Limits {
        max_depth: 2,
        max_nodes: 2_000,
        ..Limits::default()
    };
    let error = (codec.decode_protobuf)(&empty_owner_references(1), &depth).unwrap_err();
    assert_eq!(error.exceeded, Some(protobuf::Exceeded::Depth(2)));
}

/// Nodes and nesting of a JSON value, as the document readers count them.
fn reference_shape(value: &serde_json::Value) -> protobuf::Shape {
    use serde_json::Value;
    let mut shape = protobuf::Shape::default();
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        shape.nodes += 1;
        match value {
            Value::Array(items) => {
                shape.depth = shape.depth.max(level + 1);
                stack.extend(items.iter().map(|item| (item, level + 1)));
            }
            Value::Object(map) => {
                shape.depth = shape.depth.max(level + 1);
                shape.nodes += map.len();
                stack.extend(map.values().map(|item| (item, level + 1)));
            }
            _ => {}
        }
    }
    shape
}

fn json_values() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z\\\\\"\u{1}]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z\"]{0,4}", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn measure_counts_what_the_readers_count(value in json_values()) {
        let unlimited = Limits { max_depth: usize::MAX, max_nodes: usize::MAX, ..Limits::default() };
        let expected = reference_shape(&value);
        prop_assert_eq!(protobuf::measure(&value, &unlimited).unwrap(), expected);
        // One node or one level less is refused, with the limit that was exceeded.
        let fewer = Limits { max_depth: usize::MAX, max_nodes: expected.nodes - 1, ..Limits::default() };
        prop_assert_eq!(protobuf::measure(&value, &fewer), Err(protobuf::Exceeded::Nodes(expected.nodes - 1)));
        if expected.depth > 0 {
            let shallower = Limits { max_depth: expected.depth - 1, max_nodes: usize::MAX, ..Limits::default() };
            prop_assert_eq!(protobuf::measure(&value, &shallower), Err(protobuf::Exceeded::Depth(expected.depth - 1)));
        }
    }
}

/// Issue 24, item 8: Go's `time.Unix(seconds, nanos)` carries nanoseconds outside
/// 0..=999,999,999 into the seconds (k8s.io/apimachinery `pkg/apis/meta/v1/time_proto.go`),
/// and the JSON time then keeps whole seconds.
#[test]
fn nanoseconds_carry_into_the_seconds_as_in_go() {
    let created = |seconds: i64, nanos: i32| {
        let mut time = Vec::new();
        prost::encoding::int64::encode(1, &seconds, &mut time);
        prost::encoding::int32::encode(2, &nanos, &mut time);
        let mut metadata = vec![0x42, time.len() as u8];
        metadata.extend(time);
        let mut bytes = vec![0x0a, metadata.len() as u8];
        bytes.extend(metadata);
        let codec = apfkit_types::KINDS
            .encodings("flowcontrol.apiserver.k8s.io/v1", "FlowSchema")
            .unwrap();
        (codec.decode_protobuf)(&bytes, &Default::default())
            .map(|d| d.value["metadata"]["creationTimestamp"].clone())
    };
    let at = |text: &str| Ok(serde_json::Value::from(text));
    // time.Unix(1, 2^31-1) is 3.147483647 s after the epoch.
    assert_eq!(created(1, i32::MAX), at("1970-01-01T00:00:03Z"));
    assert_eq!(created(1, 999_999_999), at("1970-01-01T00:00:01Z"));
    assert_eq!(created(1, 1_000_000_000), at("1970-01-01T00:00:02Z"));
    // Negative nanoseconds borrow from the seconds: time.Unix(1, -1) is 0.999999999 s.
    assert_eq!(created(1, -1), at("1970-01-01T00:00:00Z"));
    assert_eq!(created(0, i32::MIN), at("1969-12-31T23:59:57Z"));
    assert_eq!(created(1_700_000_000, 0), at("2023-11-14T22:13:20Z"));
    assert!(created(i64::MAX, i32::MAX).is_err());
}

/// Found by the `stored_value` fuzz target (docs/fuzzing.md): an object whose message leaves
/// out a Go struct value (here everything: an empty message) decoded to a JSON object without
/// the fields Go's zero struct shows, so writing it back and reading it again gave another
/// object. Every served kind now decodes an empty message as Go's zero value, stably.
#[test]
fn a_struct_the_wire_leaves_out_decodes_as_gos_zero_value() {
    for kind in apfkit_types::KINDS.iter().filter(|k| k.wire.is_some()) {
        let codec = kind.wire.unwrap();
        let first = (codec.decode_protobuf)(b"", &Default::default())
            .unwrap()
            .value;
        let bytes = (codec.encode_protobuf)(first.clone()).unwrap();
        let again = (codec.decode_protobuf)(&bytes, &Default::default())
            .unwrap()
            .value;
        assert_eq!(again, first, "{} {}", kind.api_version, kind.kind);
    }
    // v1beta2's matchingPrecedence has no omitempty, so Go's zero spec shows it.
    let codec = apfkit_types::KINDS
        .encodings("flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema")
        .unwrap();
    let empty = (codec.decode_protobuf)(b"", &Default::default())
        .unwrap()
        .value;
    assert_eq!(empty["spec"]["matchingPrecedence"], 0);
    assert_eq!(
        empty["spec"]["priorityLevelConfiguration"],
        serde_json::json!({"name": ""})
    );
}

/// Found by the `stored_value` fuzz target, and Go's behaviour: an empty `fieldsV1` message is
/// a FieldsV1 with no Raw, which Go writes to JSON as `null` (k8s.io/apimachinery
/// `pkg/apis/meta/v1/helper.go`, `FieldsV1.MarshalJSON`), and `"fieldsV1": null` reads back as
/// a nil pointer, left out. apfkit does the same both ways.
#[test]
fn an_empty_fields_v1_is_null_as_in_go() {
    // metadata { managedFields { manager: "m", fieldsV1: {} } }: ObjectMeta field 17, entry
    // fields 1 and 7.
    let entry = hex("0a 01 6d  3a 00");
    let mut metadata = vec![0x8a, 0x01, entry.len() as u8];
    metadata.extend(&entry);
    let mut bytes = vec![0x0a, metadata.len() as u8];
    bytes.extend(&metadata);
    let codec = apfkit_types::KINDS
        .encodings("flowcontrol.apiserver.k8s.io/v1", "FlowSchema")
        .unwrap();
    let decoded = (codec.decode_protobuf)(&bytes, &Default::default())
        .unwrap()
        .value;
    let written = &decoded["metadata"]["managedFields"][0];
    assert_eq!(written["manager"], "m");
    assert_eq!(written["fieldsV1"], serde_json::Value::Null);
    assert!(written.as_object().unwrap().contains_key("fieldsV1"));
    let again = (codec.encode_protobuf)(decoded.clone()).unwrap();
    let again = (codec.decode_protobuf)(&again, &Default::default())
        .unwrap()
        .value;
    assert!(
        !again["metadata"]["managedFields"][0]
            .as_object()
            .unwrap()
            .contains_key("fieldsV1")
    );
}
