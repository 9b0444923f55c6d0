//! Byte identity with kube-apiserver on upstream's own fixtures (see
//! `tests/fixtures/upstream-wire/README.md`): every flowcontrol kind and version decodes from Go's
//! protobuf, re-encodes to the same bytes, and prints as Go's indented JSON byte for byte.

use std::path::PathBuf;

use apfkit_storage::envelope;
use apfkit_types::KINDS;

fn fixtures() -> PathBuf {
    apfkit_tests::upstream_wire_fixtures()
}

/// Every flowcontrol resource kind of the registry, with its fixture base name.
fn cases() -> Vec<(&'static apfkit_types::KindInfo, String)> {
    let cases: Vec<_> = KINDS
        .iter()
        .filter(|k| k.group == "flowcontrol.apiserver.k8s.io" && !k.is_list())
        .map(|k| (k, format!("{}.{}.{}", k.group, k.version, k.kind)))
        .collect();
    assert_eq!(cases.len(), 10, "five versions of two kinds");
    cases
}

#[test]
fn protobuf_decodes_and_reencodes_to_go_bytes() {
    for (kind, name) in cases() {
        let stored = std::fs::read(fixtures().join(format!("{name}.pb"))).unwrap();
        let message = stored
            .strip_prefix(apfkit_runtime::scheme::PROTOBUF_PREFIX)
            .unwrap();
        let unknown = envelope::unwrap(message).unwrap();
        let raw = unknown.raw.clone().unwrap();
        let codec = kind.wire.expect("flowcontrol kinds have a wire codec");

        let decoded = (codec.decode_protobuf)(&raw, &Default::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(decoded.unknown.is_empty(), "{name}: {:?}", decoded.unknown);
        let expected: serde_json::Value = serde_json::from_slice(
            &std::fs::read(fixtures().join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(decoded.value, expected, "{name}: decoded object");

        let encoded = (codec.encode_protobuf)(decoded.value).unwrap();
        assert_eq!(encoded, raw, "{name}: protobuf bytes");
        let wrapped = envelope::wrap(kind.api_version, kind.kind, &encoded);
        assert_eq!(wrapped, stored, "{name}: whole stored value");
    }
}

#[test]
fn go_order_json_matches_go_byte_for_byte() {
    for (kind, name) in cases() {
        let text = std::fs::read(fixtures().join(format!("{name}.json"))).unwrap();
        let object: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let codec = kind.wire.unwrap();
        let pretty = (codec.go_json)(object.clone(), true).unwrap();
        assert_eq!(
            String::from_utf8(pretty).unwrap(),
            String::from_utf8(text.clone()).unwrap(),
            "{name}: indented"
        );
        // The compact form is the same text without the indentation.
        let compact = (codec.go_json)(object, false).unwrap();
        assert_eq!(compact, minify(&text), "{name}: compact");
    }
}

/// `text` without the whitespace between JSON tokens (strings kept as they are).
fn minify(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for &byte in text {
        if in_string {
            out.push(byte);
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if !byte.is_ascii_whitespace() {
            in_string = byte == b'"';
            out.push(byte);
        }
    }
    out
}
