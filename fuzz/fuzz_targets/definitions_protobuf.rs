//! Kubernetes protobuf of CustomResourceDefinitions, Namespaces and StorageVersionMigrations
//! (what client-go's apiextensions, core and storagemigration clients send `apfkit serve`, the
//! e2e framework's and kube-controller-manager's among them): the bytes after `k8s\0` with the
//! envelope of one of the kinds the first byte picks, read by
//! `apfkit_apiextensions::protobuf::read`, `apfkit_namespaces::protobuf::read` or
//! `apfkit_storagemigration::protobuf::read` within small
//! limits (recursive schemas, maps of schemas, raw JSON, doubles and either-messages of
//! `apfkit_wire::shaped` underneath); whatever reads is written back in protobuf and read
//! again (with room for the Go values the first read filled in), and from then on reads back
//! to the same value.
#![no_main]

mod common;

use apfkit_runtime::scheme::Limits;
use common::{ProtobufRead, ProtobufWrite};

const KINDS: &[(&str, &str, ProtobufRead, ProtobufWrite)] = &[
    (
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        apfkit_apiextensions::protobuf::read,
        apfkit_apiextensions::protobuf::write,
    ),
    (
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinitionList",
        apfkit_apiextensions::protobuf::read,
        apfkit_apiextensions::protobuf::write,
    ),
    (
        "v1",
        "Namespace",
        apfkit_namespaces::protobuf::read,
        apfkit_namespaces::protobuf::write,
    ),
    (
        "v1",
        "NamespaceList",
        apfkit_namespaces::protobuf::read,
        apfkit_namespaces::protobuf::write,
    ),
    (
        "storagemigration.k8s.io/v1",
        "StorageVersionMigration",
        apfkit_storagemigration::protobuf::read,
        apfkit_storagemigration::protobuf::write,
    ),
    (
        "storagemigration.k8s.io/v1beta1",
        "StorageVersionMigration",
        apfkit_storagemigration::protobuf::read,
        apfkit_storagemigration::protobuf::write,
    ),
    (
        "storagemigration.k8s.io/v1beta1",
        "StorageVersionMigrationList",
        apfkit_storagemigration::protobuf::read,
        apfkit_storagemigration::protobuf::write,
    ),
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // What is written holds the Go values the wire left out (an empty item of a list is
    // written with its `spec`, `names` and `status`), so it is read back with room for them.
    let roomy = Limits {
        max_nodes: common::limits().max_nodes * 16,
        ..common::limits()
    };
    common::protobuf_round_trip(data, KINDS, &roomy);
});
