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
//!
//! **Where to start**: a [`resource::Served`] per resource of your scheme (its
//! [`resource::ResourceConfig`]: names, scope, storage version and encoding), [`objects::Objects`]
//! on a backend, then [`http::ApiServer`] to serve them over HTTPS (`apfkit-server` does this
//! for flowcontrol and apiregistration; `examples/src/serving.rs` for a CRD's scheme). The
//! objects can be used without HTTP, as a controller's fake API or a migration would:
//!
//! ```
//! use apfkit_apiserver::objects::{Objects, Place};
//! use apfkit_apiserver::resource::{ResourceConfig, Served};
//! use apfkit_apiserver::storage::memory::MemoryBackend;
//! use apfkit_conversion::scheme::{HubObject, Limits, SCHEME, UnknownFields};
//! use apfkit_runtime::Object as _;
//! use apfkit_runtime::scheme::StorageEncoding;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let flow_schemas = Served::new(&SCHEME, ResourceConfig {
//!     group: "flowcontrol.apiserver.k8s.io".into(),
//!     kind: "FlowSchema".into(),
//!     namespaced: false,
//!     short_names: Vec::new(),
//!     categories: Vec::new(),
//!     status: true,
//!     storage_version: "v1".into(),
//!     storage_encoding: StorageEncoding::Protobuf,
//!     key_path: "flowschemas".into(),
//!     strategic_merge: true,
//!     scale: None,
//!     undeletable: Vec::new(),
//!     printer: None,
//!     schema: None,
//! })?;
//! // No validation here; apfkit-server passes kube-apiserver's.
//! let objects = Objects::new(SCHEME.formats(), MemoryBackend::default(), "/registry",
//!     Limits::default(), |_, _, _| Vec::new());
//! // Written in v1beta3, stored in v1 as kube-apiserver stores it, read back as the hub.
//! let manifest = serde_json::json!({
//!     "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema",
//!     "metadata": {"name": "team-a"},
//!     "spec": {"priorityLevelConfiguration": {"name": "workload-low"}}
//! });
//! let (mut read, _) = SCHEME.to_hub_value(&manifest, UnknownFields::Strict)?;
//! let object: HubObject = read.remove(0);
//! let api_version = "flowcontrol.apiserver.k8s.io/v1beta3";
//! let written = objects.create(&flow_schemas, None, object, api_version, false).await?;
//! assert!(written.object.metadata().uid.is_some());
//! let stored = objects.get(&flow_schemas, Place { namespace: None, name: "team-a" }).await?;
//! assert_eq!(stored.metadata().resource_version, written.object.metadata().resource_version);
//! # Ok(())
//! # }
//! ```

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
