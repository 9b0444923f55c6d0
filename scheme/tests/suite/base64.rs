//! `caBundle` (Go's `[]byte`) is checked on decode as kube-apiserver's JSON decoder checks it,
//! and kept as written.

use apfkit_scheme::scheme::{SCHEME, Target, UnknownFields};
use serde_json::json;

/// Go's own table: `encoding/base64`'s `TestDecodeCorrupt` (offset -1: valid).
const GO_VECTORS: &[(&str, i64)] = &[
    ("", -1),
    ("\n", -1),
    ("AAA=\n", -1),
    ("AAAA\n", -1),
    ("!!!!", 0),
    ("====", 0),
    ("x===", 1),
    ("=AAA", 0),
    ("A=AA", 1),
    ("AA=A", 2),
    ("AA==A", 4),
    ("AAA=AAAA", 4),
    ("AAAAA", 4),
    ("AAAAAA", 4),
    ("A=", 1),
    ("A==", 1),
    ("AA=", 3),
    ("AA==", -1),
    ("AAA=", -1),
    ("AAAA", -1),
    ("AAAAAA=", 7),
    ("YWJjZA=====", 8),
    ("A!\n", 1),
    ("A=\n", 1),
];

fn api_service(ca_bundle: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1beta1",
        "kind": "APIService",
        "metadata": {"name": "v1.example.com"},
        "spec": {
            "group": "example.com", "version": "v1", "groupPriorityMinimum": 100,
            "versionPriority": 10, "caBundle": ca_bundle,
            "service": {"namespace": "ns", "name": "svc"},
        },
    })
}

#[test]
fn ca_bundle_is_checked_like_go_base64() {
    let target: Target = "v1".parse().unwrap();
    for &(text, offset) in GO_VECTORS {
        let result = SCHEME.convert_value(&api_service(text), &target, UnknownFields::Strict);
        if offset < 0 {
            let converted = result.unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(
                converted.object["spec"]["caBundle"], text,
                "kept as written"
            );
        } else {
            let error = result.expect_err(text);
            assert_eq!(
                error.to_string(),
                format!("spec.caBundle: illegal base64 data at input byte {offset}"),
                "{text:?}"
            );
        }
    }
    // Non-zero trailing bits are accepted, as Go's non-strict decoder accepts them.
    assert!(
        SCHEME
            .convert_value(&api_service("AB=="), &target, UnknownFields::Strict)
            .is_ok()
    );
    // null is no bundle.
    let mut null = api_service("");
    null["spec"]["caBundle"] = serde_json::Value::Null;
    assert!(
        SCHEME
            .convert_value(&null, &target, UnknownFields::Strict)
            .is_ok()
    );
}
