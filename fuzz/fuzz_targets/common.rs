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

/// A reader of enveloped protobuf bodies of some kinds (`PROTOBUF::read`): the object as JSON
/// with the fields its message lacks, `None` for a kind it does not read.
pub type ProtobufRead =
    fn(
        &[u8],
        &Limits,
    ) -> Option<Result<(serde_json::Value, Vec<String>), apfkit_runtime::scheme::InputError>>;
/// The matching writer (`PROTOBUF::write`).
pub type ProtobufWrite = fn(&serde_json::Value) -> Option<Result<Vec<u8>, String>>;

/// What the protobuf targets do with `data`: its first byte picks one of `kinds` (an
/// `apiVersion`, a kind, its reader and writer), the rest is that kind's message in the `k8s\0`
/// envelope, read within [`limits`]; what reads is written back and read again within `roomy`
/// (what is written may hold the Go values the first read filled in without counting them),
/// and from then on reads back to the same value.
pub fn protobuf_round_trip(
    data: &[u8],
    kinds: &[(&str, &str, ProtobufRead, ProtobufWrite)],
    roomy: &Limits,
) {
    let Some((&pick, raw)) = data.split_first() else {
        return;
    };
    let (api_version, kind, read, write) = kinds[usize::from(pick) % kinds.len()];
    let bytes = apfkit_wire::envelope::wrap(api_version, kind, raw);
    let Some(first) = read(&bytes, &limits()) else {
        panic!("{api_version} {kind} is read here");
    };
    let Ok((value, _unknown)) = first else {
        return;
    };
    let trip = |value: &serde_json::Value| {
        let written = write(value)
            .expect("one of the kinds")
            .expect("what was read is written");
        read(&written, roomy)
            .expect("one of the kinds")
            .expect("what was written reads back")
            .0
    };
    let once = trip(&value);
    assert_eq!(trip(&once), once, "{kind}");
}
