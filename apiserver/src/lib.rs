//! A Kubernetes-style API server for any `apfkit_runtime::scheme::Scheme` (issue 26).
//!
//! This first part is the storage layer every backend implements with kube-apiserver's
//! semantics ([`storage::Backend`]: revisions, compare-and-swap writes, paged lists at a
//! revision, watches from a revision, compaction), the in-memory model backend
//! ([`storage::memory::MemoryBackend`]) that the conformance tests hold the real backends to,
//! and the embedded store ([`storage::sqlite::SqliteBackend`]: kine's table in SQLite), which
//! passes the same tests. The etcd backend comes next.

#![forbid(unsafe_code)]

pub mod storage;
