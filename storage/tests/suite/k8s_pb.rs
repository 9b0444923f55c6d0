//! Differential tests against k8s-pb (prost bindings generated from upstream's `.proto`
//! files): random objects and lists of every kind k8s-pb has (flowcontrol v1beta1–v1, apiregistration
//! v1beta1 and v1; k8s-pb has no flowcontrol v1alpha1) travel both ways between the two codecs.
//!
//! Where they differ, and why: k8s-pb declares every field proto2 `optional`, so a field it
//! leaves `None` is not written at all, while gogo-protobuf (and apfkit) always writes Go value
//! fields (strings, numbers, booleans, structs), even empty. Both decode the other's bytes to the
//! same object; only an object built in k8s-pb with `None` where Go has a value encodes to
//! fewer bytes than Go's, and prost leaves an empty key or value out of a map entry where gogo
//! writes both: see `k8s_pb_leaves_out_what_go_always_writes`.

use apfkit_wire::protobuf;
use proptest::prelude::*;
use prost::Message as _;
use serde_json::{Value, json};

/// A full object of the kind: upstream's fixture (every field set) for flowcontrol, a
/// hand-written one for APIService.
fn seed(api_version: &str, kind: &str) -> Value {
    if kind == "APIService" {
        return json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": "v1.example.com", "labels": {"a": "b"}, "creationTimestamp": "2024-05-06T07:08:09Z"},
            "spec": {
                "service": {"namespace": "ns", "name": "api", "port": 443},
                "group": "example.com", "version": "v1", "insecureSkipTLSVerify": true, "caBundle": "AQID",
                "groupPriorityMinimum": 1000, "versionPriority": 15
            },
            "status": {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": "2024-05-06T07:08:09Z", "reason": "Passed", "message": "all checks passed"}]}
        });
    }
    let group_version = api_version.replace('/', ".");
    let path = apfkit_tests::upstream_wire_fixtures().join(format!("{group_version}.{kind}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Replaces values by random ones of the same JSON type (times stay times, `caBundle` stays
/// base64), drops optional members and resizes arrays, driven by `choices`.
fn mutate(value: &mut Value, key: &str, choices: &mut impl Iterator<Item = u32>) {
    match value {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                // Drop an optional member now and then (never the identity).
                if !matches!(
                    k.as_str(),
                    "apiVersion" | "kind" | "metadata" | "spec" | "type"
                ) && choices.next().unwrap_or(0).is_multiple_of(5)
                {
                    map.remove(&k);
                    continue;
                }
                if let Some(v) = map.get_mut(&k) {
                    mutate(v, &k, choices);
                }
            }
        }
        Value::Array(items) => {
            let len = choices.next().unwrap_or(0) as usize % 3;
            if let Some(first) = items.first().cloned() {
                items.clear();
                for _ in 0..len {
                    let mut item = first.clone();
                    mutate(&mut item, key, choices);
                    items.push(item);
                }
            }
        }
        Value::String(s) => {
            let n = choices.next().unwrap_or(0);
            if key.ends_with("Timestamp") || key.ends_with("Time") || key == "time" {
                let seconds = i64::from(n % 2_000_000_000);
                *s = k8s_openapi::jiff::Timestamp::from_second(seconds)
                    .unwrap()
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
                    .to_string();
            } else if key == "caBundle" {
                *s = ["", "AA==", "AQID", "/+8="][n as usize % 4].to_owned();
            } else {
                *s =
                    ["", "x", "ünïcødé ✓", "a<b>&c", &"long".repeat(40)][n as usize % 5].to_owned();
            }
        }
        Value::Number(_) => {
            let n = choices.next().unwrap_or(0);
            *value = json!(
                [
                    0i64,
                    1,
                    -1,
                    1000,
                    i64::from(i32::MAX),
                    i64::from(i32::MIN),
                    i64::from(n as i32)
                ][n as usize % 7]
            );
        }
        Value::Bool(b) => *b = choices.next().unwrap_or(0).is_multiple_of(2),
        Value::Null => {}
    }
}

/// Empty keys and values in the object's `labels` and `annotations` maps.
fn empty_map_parts(object: &Value) -> usize {
    ["labels", "annotations"]
        .iter()
        .filter_map(|m| object["metadata"][m].as_object())
        .flatten()
        .map(|(k, v)| usize::from(k.is_empty()) + usize::from(v.as_str() == Some("")))
        .sum()
}

/// `ours` encoded by us decodes with k8s-pb, which writes it back identically (every field
/// arrived where k8s-pb expects it, nothing dropped as unknown) unless the object holds
/// `empty_map_parts` (prost leaves an empty map key or value out of the entry, gogo writes
/// both: then k8s-pb's bytes are shorter); and k8s-pb's bytes decode with ours to the same
/// object. Returns k8s-pb's reading.
fn both_ways<Ours, Theirs>(ours: &Ours, empty_map_parts: usize) -> Result<Theirs, TestCaseError>
where
    Ours: protobuf::Message + PartialEq + std::fmt::Debug,
    Theirs: prost::Message + Default,
{
    let bytes = protobuf::encode(ours).unwrap();
    let theirs = Theirs::decode(bytes.as_slice()).unwrap();
    let their_bytes = theirs.encode_to_vec();
    if empty_map_parts == 0 {
        prop_assert_eq!(&their_bytes, &bytes);
    } else {
        prop_assert!(their_bytes.len() < bytes.len());
    }
    let back = protobuf::decode::<Ours>(&their_bytes).unwrap();
    prop_assert!(back.unknown.is_empty());
    prop_assert_eq!(back.value, protobuf::decode::<Ours>(&bytes).unwrap().value);
    Ok(theirs)
}

/// One kind in both bindings.
macro_rules! differential {
    ($name:ident, $ours:ty, $pb:ty, $api_version:literal, $kind:literal) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            #[test]
            fn $name(choices in proptest::collection::vec(any::<u32>(), 64..512)) {
                let mut object = seed($api_version, $kind);
                mutate(&mut object, "", &mut choices.into_iter());
                object["apiVersion"] = json!($api_version);
                object["kind"] = json!($kind);
                let empty_map_parts = empty_map_parts(&object);
                let ours: $ours = serde_json::from_value(object).unwrap();
                both_ways::<$ours, $pb>(&ours, empty_map_parts)?;
            }
        }
    };
}

use apfkit_types::{apiregistration as ar, flowcontrol as fc};
use k8s_pb::api::flowcontrol as pbfc;
use k8s_pb::kube_aggregator::pkg::apis::apiregistration as pbar;

differential!(
    flow_schema_v1beta1,
    fc::v1beta1::FlowSchema,
    pbfc::v1beta1::FlowSchema,
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "FlowSchema"
);
differential!(
    flow_schema_v1beta2,
    fc::v1beta2::FlowSchema,
    pbfc::v1beta2::FlowSchema,
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "FlowSchema"
);
differential!(
    flow_schema_v1beta3,
    fc::v1beta3::FlowSchema,
    pbfc::v1beta3::FlowSchema,
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "FlowSchema"
);
differential!(
    flow_schema_v1,
    fc::v1::FlowSchema,
    pbfc::v1::FlowSchema,
    "flowcontrol.apiserver.k8s.io/v1",
    "FlowSchema"
);
differential!(
    level_v1beta1,
    fc::v1beta1::PriorityLevelConfiguration,
    pbfc::v1beta1::PriorityLevelConfiguration,
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "PriorityLevelConfiguration"
);
differential!(
    level_v1beta2,
    fc::v1beta2::PriorityLevelConfiguration,
    pbfc::v1beta2::PriorityLevelConfiguration,
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "PriorityLevelConfiguration"
);
differential!(
    level_v1beta3,
    fc::v1beta3::PriorityLevelConfiguration,
    pbfc::v1beta3::PriorityLevelConfiguration,
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "PriorityLevelConfiguration"
);
differential!(
    level_v1,
    fc::v1::PriorityLevelConfiguration,
    pbfc::v1::PriorityLevelConfiguration,
    "flowcontrol.apiserver.k8s.io/v1",
    "PriorityLevelConfiguration"
);
differential!(
    api_service_v1beta1,
    ar::v1beta1::APIService,
    pbar::v1beta1::APIService,
    "apiregistration.k8s.io/v1beta1",
    "APIService"
);
differential!(
    api_service_v1,
    ar::v1::APIService,
    pbar::v1::APIService,
    "apiregistration.k8s.io/v1",
    "APIService"
);

#[test]
fn k8s_pb_leaves_out_what_go_always_writes() {
    // An empty FlowSchema built in k8s-pb: every field None, so prost writes nothing.
    let theirs = pbfc::v1::FlowSchema::default();
    assert!(theirs.encode_to_vec().is_empty());
    // We read it as Go does (all zero values) and write it as Go does: ObjectMeta's six
    // strings, `generation` and the zero `creationTimestamp`; the spec's reference (a struct)
    // with its `name`, and `matchingPrecedence`; `status` (a struct).
    let ours = protobuf::decode::<fc::v1::FlowSchema>(&[]).unwrap().value;
    let bytes = protobuf::encode(&ours).unwrap();
    assert_eq!(
        bytes,
        [
            0x0a, 0x10, 0x0a, 0, 0x12, 0, 0x1a, 0, 0x22, 0, 0x2a, 0, 0x32, 0, 0x38, 0, 0x42, 0,
            0x12, 0x06, 0x0a, 0x02, 0x0a, 0, 0x10, 0, 0x1a, 0
        ]
    );
    // k8s-pb reads those bytes into Some("") / Some(0) where it had None: the same Go object.
    let again = pbfc::v1::FlowSchema::decode(bytes.as_slice()).unwrap();
    let metadata = again.metadata.unwrap();
    assert_eq!(metadata.name.as_deref(), Some(""));
    assert_eq!(metadata.generation, Some(0));
    assert_eq!(again.spec.unwrap().matching_precedence, Some(0));
    assert!(again.status.is_some());
}

#[test]
fn map_entries_keep_empty_values_as_gogo_writes_them() {
    let mut ours = fc::v1::FlowSchema::default();
    ours.metadata.labels = Some([("a".to_owned(), String::new())].into());
    let bytes = protobuf::encode(&ours.metadata).unwrap();
    // Field 11, entry of 5 bytes: key "a" and the empty value, as generated.pb.go writes it.
    let gogo_entry = [0x5a, 0x05, 0x0a, 0x01, b'a', 0x12, 0x00];
    assert!(bytes.windows(7).any(|w| w == gogo_entry), "{bytes:02x?}");
    // prost writes the key only; both read the entry as ("a", "").
    let theirs =
        k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta::decode(bytes.as_slice()).unwrap();
    assert_eq!(theirs.labels.get("a").map(String::as_str), Some(""));
    let their_bytes = theirs.encode_to_vec();
    assert!(
        their_bytes
            .windows(5)
            .any(|w| w == [0x5a, 0x03, 0x0a, 0x01, b'a'])
    );
    let back = protobuf::decode::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>(
        &their_bytes,
    )
    .unwrap();
    assert_eq!(back.value.labels, ours.metadata.labels);
}

/// One list kind in both bindings: items mutated as above, and every ListMeta field set.
macro_rules! differential_list {
    ($name:ident, $ours:ty, $pb:ty, $api_version:literal, $item_kind:literal) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(16))]
            #[test]
            fn $name(choices in proptest::collection::vec(any::<u32>(), 64..512)) {
                let mut choices = choices.into_iter().cycle();
                let items: Vec<Value> = (0..3)
                    .map(|_| {
                        let mut item = seed($api_version, $item_kind);
                        mutate(&mut item, "", &mut choices);
                        item["apiVersion"] = json!($api_version);
                        item["kind"] = json!($item_kind);
                        item
                    })
                    .collect();
                let empty_map_parts: usize = items.iter().map(empty_map_parts).sum();
                let list = json!({
                    "apiVersion": $api_version, "kind": concat!($item_kind, "List"),
                    "metadata": {"resourceVersion": "7", "continue": "next", "remainingItemCount": 5},
                    "items": items,
                });
                let ours: $ours = serde_json::from_value(list).unwrap();
                let theirs = both_ways::<$ours, $pb>(&ours, empty_map_parts)?;
                prop_assert_eq!(theirs.items.len(), 3);
                prop_assert_eq!(theirs.metadata.as_ref().unwrap().remaining_item_count, Some(5));
            }
        }
    };
}

differential_list!(
    flow_schema_list_v1beta1,
    fc::v1beta1::FlowSchemaList,
    pbfc::v1beta1::FlowSchemaList,
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "FlowSchema"
);
differential_list!(
    flow_schema_list_v1beta2,
    fc::v1beta2::FlowSchemaList,
    pbfc::v1beta2::FlowSchemaList,
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "FlowSchema"
);
differential_list!(
    flow_schema_list_v1beta3,
    fc::v1beta3::FlowSchemaList,
    pbfc::v1beta3::FlowSchemaList,
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "FlowSchema"
);
differential_list!(
    flow_schema_list_v1,
    fc::v1::FlowSchemaList,
    pbfc::v1::FlowSchemaList,
    "flowcontrol.apiserver.k8s.io/v1",
    "FlowSchema"
);
differential_list!(
    level_list_v1beta1,
    fc::v1beta1::PriorityLevelConfigurationList,
    pbfc::v1beta1::PriorityLevelConfigurationList,
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "PriorityLevelConfiguration"
);
differential_list!(
    level_list_v1beta2,
    fc::v1beta2::PriorityLevelConfigurationList,
    pbfc::v1beta2::PriorityLevelConfigurationList,
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "PriorityLevelConfiguration"
);
differential_list!(
    level_list_v1beta3,
    fc::v1beta3::PriorityLevelConfigurationList,
    pbfc::v1beta3::PriorityLevelConfigurationList,
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "PriorityLevelConfiguration"
);
differential_list!(
    level_list_v1,
    fc::v1::PriorityLevelConfigurationList,
    pbfc::v1::PriorityLevelConfigurationList,
    "flowcontrol.apiserver.k8s.io/v1",
    "PriorityLevelConfiguration"
);
differential_list!(
    api_service_list_v1beta1,
    ar::v1beta1::APIServiceList,
    pbar::v1beta1::APIServiceList,
    "apiregistration.k8s.io/v1beta1",
    "APIService"
);
differential_list!(
    api_service_list_v1,
    ar::v1::APIServiceList,
    pbar::v1::APIServiceList,
    "apiregistration.k8s.io/v1",
    "APIService"
);
