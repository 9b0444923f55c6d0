//! A Kubernetes-style API server for any `apfkit_runtime::scheme::Scheme` (issue 26).
//!
//! This first part is the storage layer every backend implements with kube-apiserver's
//! semantics ([`storage::Backend`]: revisions, compare-and-swap writes, paged lists at a
//! revision, watches from a revision, compaction), the in-memory model backend
//! ([`storage::memory::MemoryBackend`]) that the conformance tests hold the real backends to,
//! the embedded store ([`storage::sqlite::SqliteBackend`]: kine's table in SQLite) and etcd
//! ([`storage::etcd::EtcdBackend`]), which pass the same tests.

#![forbid(unsafe_code)]

pub mod storage;
