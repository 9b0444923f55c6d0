//! Values as etcd holds them (protobuf envelope, JSON, encrypted) into the storage codec, as
//! `apfkit storage get` and `migrate` read them: decoded within limits or refused, never a
//! panic; a decoded object is within the limits, and protobuf written back decodes to the
//! same object, but for Go's own asymmetry: an empty `fieldsV1` message is written to JSON as
//! `null` (FieldsV1.MarshalJSON with no Raw), which reads back as no field at all. The
//! metadata read alone from an envelope is the decoded object's.
#![no_main]

mod common;

use apfkit_storage::{envelope, object};
use apfkit_wire::protobuf;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = envelope::inspect(data);
    let limits = common::limits();
    let alone = apfkit_wire::envelope::metadata(data, &limits);
    let Ok(stored) = object::decode(data, 7, &limits) else {
        return;
    };
    // The metadata read alone (the garbage collector's lists) is the whole object's.
    if let Some(alone) = alone
        && stored.encoding == apfkit_runtime::scheme::StorageEncoding::Protobuf
    {
        let (_, metadata) = alone.expect("the metadata of an object that decodes reads alone");
        let whole = stored.object.get("metadata").cloned().unwrap_or_default();
        assert_eq!(
            serde_json::to_value(&metadata).unwrap(),
            serde_json::to_value(
                serde_json::from_value::<
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
                >(whole)
                .unwrap_or_default()
            )
            .unwrap(),
            "metadata read alone"
        );
    }
    assert!(protobuf::measure(&stored.object, &limits).is_ok());
    if let Ok(bytes) = object::encode(&stored.object, stored.encoding)
        && stored.encoding == apfkit_runtime::scheme::StorageEncoding::Protobuf
    {
        let again = object::decode(&bytes, 7, &limits).expect("what was written reads back");
        let mut expected = stored.object.clone();
        if let Some(entries) = expected
            .pointer_mut("/metadata/managedFields")
            .and_then(serde_json::Value::as_array_mut)
        {
            for entry in entries
                .iter_mut()
                .filter_map(serde_json::Value::as_object_mut)
            {
                if entry
                    .get("fieldsV1")
                    .is_some_and(serde_json::Value::is_null)
                {
                    entry.remove("fieldsV1");
                }
            }
        }
        assert_eq!(again.object, expected, "protobuf round trip");
    }
    common::exercise(&stored.object);
});
