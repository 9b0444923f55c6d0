//! Kubernetes protobuf of ConfigMaps, Secrets, ServiceAccounts, Leases, TokenRequests and
//! Events of both APIs (what client-go sends `apfkit serve`: a Lease's renewal, `kubectl
//! create token`, an event recorder's Events, and what it stores): the bytes after `k8s\0`
//! with the envelope of one of the kinds the first byte picks, read by
//! `apfkit_corekinds::protobuf::read` (the codecs generated for these kinds in
//! `apfkit_types::builtin`; a TokenRequest's field table) within small limits; whatever it reads is written back
//! in protobuf and read again, and from then on reads back to the same value (`map<string,
//! bytes>` as base64, `MicroTime`s truncated to microseconds on the first trip), within
//! limits four times as roomy (a list's items gain their metadata).
#![no_main]

mod common;

use common::{ProtobufRead, ProtobufWrite};

const READ: ProtobufRead = apfkit_corekinds::protobuf::read;
const WRITE: ProtobufWrite = apfkit_corekinds::protobuf::write;

const KINDS: &[(&str, &str, ProtobufRead, ProtobufWrite)] = &[
    ("v1", "ConfigMap", READ, WRITE),
    ("v1", "ConfigMapList", READ, WRITE),
    ("v1", "Secret", READ, WRITE),
    ("v1", "SecretList", READ, WRITE),
    ("v1", "ServiceAccount", READ, WRITE),
    ("v1", "ServiceAccountList", READ, WRITE),
    ("coordination.k8s.io/v1", "Lease", READ, WRITE),
    ("coordination.k8s.io/v1", "LeaseList", READ, WRITE),
    ("authentication.k8s.io/v1", "TokenRequest", READ, WRITE),
    ("v1", "Event", READ, WRITE),
    ("v1", "EventList", READ, WRITE),
    ("events.k8s.io/v1", "Event", READ, WRITE),
    ("events.k8s.io/v1", "EventList", READ, WRITE),
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // Every message of a list has its (empty) metadata written, which the first read filled
    // in without counting it: it reads back within four times the limits.
    let limits = common::limits();
    let roomy = apfkit_runtime::scheme::Limits {
        max_document_bytes: limits.max_document_bytes * 4,
        max_nodes: limits.max_nodes * 4,
        ..limits
    };
    common::protobuf_round_trip(data, KINDS, &roomy);
});
