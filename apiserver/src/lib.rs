//! A Kubernetes-style API server for any `apfkit_runtime::scheme::Scheme` (issue 26).
//!
//! - [`storage`]: the contract every backend keeps with kube-apiserver's semantics
//!   ([`storage::Backend`]: revisions, compare-and-swap writes, paged lists at a revision,
//!   watches from a revision, compaction), its in-memory model, the embedded store (kine's
//!   table in SQLite) and etcd, all held to one conformance suite.
//! - [`objects`]: objects on a backend as kube-apiserver's generic registry keeps them (keys,
//!   storage version and encoding, the metadata the server owns).
//! - [`http`]: discovery, every verb on every served version, watches, and errors as
//!   `metav1.Status`, over HTTPS.
//! - [`tls`]: a certificate authority, a serving certificate and a kubeconfig for a data
//!   directory.

#![forbid(unsafe_code)]

pub mod auth;
pub mod error;
pub mod fields;
pub mod http;
pub mod objects;
pub mod patch;
pub mod resource;
pub mod selector;
pub mod storage;
pub mod table;
pub mod tls;
