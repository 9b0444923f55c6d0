//! Kubernetes protobuf into the scheme: the bytes after `k8s\0` as one enveloped object, read
//! with limits, then converted, defaulted and validated. Whatever the reader accepts is within
//! the limits it was given: it was measured while decoded, never after.
//!
//! The same bytes through the typed reader (`Codec::decode_protobuf`, what the server reads
//! stored objects with) of every codec: at most the codec the envelope names reads them (a
//! broken envelope is an error for all), and when both readers take the object, it is written
//! the same from both (what a client of the server sees), but for Go's own asymmetry: an empty
//! `fieldsV1` message is `null` in JSON (the typed reader keeps it, as Go writes it), which the
//! value reader reads back as absent.
#![no_main]

mod common;

use apfkit_scheme::scheme::{Document, HubObject, Input, ReadError, SCHEME, UnknownFields};
use apfkit_wire::protobuf;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let input = [apfkit_runtime::scheme::PROTOBUF_PREFIX, data].concat();
    let limits = common::limits();
    let mut by_value: Option<HubObject> = None;
    let _ = SCHEME.read_values(&input[..], &limits, |document: Document| {
        let shape = protobuf::measure(&document.value, &limits);
        assert!(shape.is_ok(), "the reader let through {shape:?}");
        common::exercise(&document.value);
        if let Ok((mut hubs, _)) = SCHEME.to_hub(Input::Value(document), UnknownFields::Ignore)
            && hubs.len() == 1
        {
            by_value = hubs.pop();
        }
        Ok::<_, ReadError>(())
    });
    let mut read_by = 0;
    for codec in SCHEME.codecs() {
        match codec.decode_protobuf(&input, &limits) {
            None => {}
            Some(Err(_)) => {}
            Some(Ok(typed)) => {
                read_by += 1;
                if let Some(by_value) = &by_value {
                    let written = |hub: HubObject| {
                        let mut value = codec.encode(hub, &mut Vec::new()).ok()?;
                        if let Some(entries) = value
                            .pointer_mut("/metadata/managedFields")
                            .and_then(serde_json::Value::as_array_mut)
                        {
                            for entry in entries.iter_mut().filter_map(|e| e.as_object_mut()) {
                                if entry.get("fieldsV1") == Some(&serde_json::Value::Null) {
                                    entry.remove("fieldsV1");
                                }
                            }
                        }
                        Some(value)
                    };
                    assert_eq!(
                        written(typed),
                        written(by_value.clone()),
                        "{} {}",
                        codec.api_version(),
                        codec.kind
                    );
                }
            }
        }
    }
    assert!(read_by <= 1, "{read_by} codecs read one envelope");
});
