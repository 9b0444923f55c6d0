//! What every document target does with a document: everything the scheme offers, which must
//! return (an error is fine) and never panic.
#![allow(dead_code)] // not every target uses every helper

use apfkit_scheme::scheme::{Document, Limits, ReadError, SCHEME, Target, UnknownFields};
use apfkit_scheme::validation::{self, Options};

/// Small limits, so that the fuzzer explores structure rather than size.
pub fn limits() -> Limits {
    Limits {
        max_document_bytes: 64 << 10,
        max_depth: 64,
        max_nodes: 10_000,
    }
}

/// Reads every document of `data` and runs the scheme on each.
pub fn documents(data: &[u8]) {
    let _ = SCHEME.read_values(data, &limits(), |document: Document| {
        exercise(&document.value);
        Ok::<_, ReadError>(())
    });
}

/// Converts `value` to every target in two modes, defaults it, and validates it on the hub.
pub fn exercise(value: &serde_json::Value) {
    for version in ["v1", "v1beta1", "v1beta3", "apiregistration.k8s.io/v1beta1"] {
        let target: Target = version.parse().expect("a valid target");
        for unknown in [UnknownFields::Strict, UnknownFields::Warn] {
            if let Ok(converted) = SCHEME.convert_value(value, &target, unknown) {
                // What was written reads back.
                let text = serde_json::to_vec(&converted.object).expect("serializable");
                assert!(SCHEME.read_documents(&text).is_ok());
            }
        }
    }
    let _ = SCHEME.default_value(value, UnknownFields::Ignore);
    if let Ok((objects, _)) = SCHEME.to_hub_value(value, UnknownFields::Ignore) {
        for object in &objects {
            let _ = validation::validate(object, &Options::default());
        }
    }
}
