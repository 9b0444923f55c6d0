//! The wire codecs on hand-checked vectors (bytes worked out from gogo-protobuf's rules, see
//! `apfkit_types::wire::protobuf`) and on hostile input. Upstream's own fixtures are checked in
//! `apfkit-storage`'s `upstream_fixtures` test.

use apfkit_types::apiregistration::v1::APIService;
use apfkit_types::flowcontrol::{v1, v1beta3};
use apfkit_types::wire::{go_json, protobuf};
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
    use apfkit_types::wire::to_go_json;
    use serde_json::json;
    // Not a served kind, or no identity: nothing to say, the caller writes it as it is.
    assert!(to_go_json(&json!({"apiVersion": "v1", "kind": "ConfigMap"}), true).is_none());
    assert!(to_go_json(&json!({"metadata": {}}), false).is_none());
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"b": "<", "a": "1"}},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.g"}},
    ]});
    assert_eq!(
        String::from_utf8(to_go_json(&list, false).unwrap().unwrap()).unwrap(),
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
    let error = to_go_json(&bad, true).unwrap().unwrap_err().to_string();
    assert!(
        error.starts_with("items[0].spec.versionPriority: "),
        "{error}"
    );
    let bad_meta = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": 3}});
    let error = to_go_json(&bad_meta, true)
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
