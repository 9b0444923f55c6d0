//! Kubernetes protobuf of Services and EndpointSlices (what `kubectl create service` sends
//! `apfkit serve`, and what it stores): the bytes after `k8s\0` with the envelope of one of
//! the kinds the first byte picks, read by `apfkit_aggregator::protobuf::read` within small
//! limits; whatever it reads is written back in protobuf and read again, and from then on
//! reads back to the same value (the first trip may drop what Go's JSON drops too: an empty
//! `fieldsV1` message reads as `null`, which is then no field at all).
#![no_main]

mod common;

const KINDS: &[(&str, &str)] = &[
    ("v1", "Service"),
    ("v1", "ServiceList"),
    ("discovery.k8s.io/v1", "EndpointSlice"),
    ("discovery.k8s.io/v1", "EndpointSliceList"),
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, raw)) = data.split_first() else {
        return;
    };
    let (api_version, kind) = KINDS[usize::from(pick) % KINDS.len()];
    let bytes = apfkit_wire::envelope::wrap(api_version, kind, raw);
    let limits = common::limits();
    let Some(read) = apfkit_aggregator::protobuf::read(&bytes, &limits) else {
        panic!("{api_version} {kind} is read here");
    };
    let Ok((value, _unknown)) = read else {
        return;
    };
    let trip = |value: &serde_json::Value| {
        let written = apfkit_aggregator::protobuf::write(value)
            .expect("one of the kinds")
            .expect("what was read is written");
        apfkit_aggregator::protobuf::read(&written, &limits)
            .expect("one of the kinds")
            .expect("what was written reads back")
            .0
    };
    let once = trip(&value);
    assert_eq!(trip(&once), once, "{kind}");
});
