//! Kubernetes protobuf of Services and EndpointSlices (what `kubectl create service` sends
//! `apfkit serve`, and what it stores): the bytes after `k8s\0` with the envelope of one of
//! the kinds the first byte picks, read by `apfkit_aggregator::protobuf::read` within small
//! limits; whatever it reads is written back in protobuf and read again, and from then on
//! reads back to the same value (the first trip may drop what Go's JSON drops too: an empty
//! `fieldsV1` message reads as `null`, which is then no field at all).
#![no_main]

mod common;

use common::{ProtobufRead, ProtobufWrite};

const READ: ProtobufRead = apfkit_aggregator::protobuf::read;
const WRITE: ProtobufWrite = apfkit_aggregator::protobuf::write;

const KINDS: &[(&str, &str, ProtobufRead, ProtobufWrite)] = &[
    ("v1", "Service", READ, WRITE),
    ("v1", "ServiceList", READ, WRITE),
    ("discovery.k8s.io/v1", "EndpointSlice", READ, WRITE),
    ("discovery.k8s.io/v1", "EndpointSliceList", READ, WRITE),
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    common::protobuf_round_trip(data, KINDS, &common::limits());
});
