//! A Kubernetes-style API server for any `apfkit_runtime::scheme::Scheme`.
//!
//! - [`storage`]: the contract every backend keeps with kube-apiserver's semantics
//!   ([`storage::Backend`]: revisions, compare-and-swap writes, paged lists at a revision,
//!   watches from a revision, compaction), its in-memory model, the embedded store (kine's
//!   table in SQLite) and etcd, all held to one conformance suite.
//! - [`store`]: the generic store, objects on any backend as kube-apiserver's generic registry
//!   keeps them (keys, storage version and encoding, the metadata the server owns), with each
//!   kind's rules as a [`store::Strategy`].
//! - [`http`]: the handlers, by verb family: discovery, every verb on every served version,
//!   watches, and errors as `metav1.Status`, over HTTPS. They reach storage only through the
//!   store.
//! - [`tls`]: a certificate authority, a serving certificate and a kubeconfig for a data
//!   directory.
//!
//! **Where to start**: a [`store::Served`] per resource of your scheme (its
//! [`store::ResourceConfig`]: names, scope, storage version and encoding; its
//! [`store::Strategy`]: validation and the rest of the kind's rules), [`store::Objects`] on a
//! backend, then [`http::ApiServer`] to serve them over HTTPS (`apfkit-server` does this
//! for flowcontrol and apiregistration; `examples/src/serving.rs` for a CRD's scheme). The
//! objects can be used without HTTP, as a controller's fake API or a migration would:
//!
//! ```
//! use apfkit_apiserver::error::Cause;
//! use apfkit_apiserver::store::{Objects, Place, ResourceConfig, Served, Strategy};
//! use apfkit_apiserver::storage::memory::MemoryBackend;
//! use apfkit_scheme::scheme::{HubObject, Limits, SCHEME, UnknownFields};
//! use apfkit_runtime::Object as _;
//! use apfkit_runtime::identity::GroupVersionKind;
//!
//! // The kind's own rules: here, one of kube-apiserver's checks of a FlowSchema.
//! struct FlowSchemaRules;
//! impl Strategy<HubObject> for FlowSchemaRules {
//!     fn validate(&self, object: &HubObject, _: Option<&HubObject>, _: &str) -> Vec<Cause> {
//!         match object {
//!             HubObject::FlowSchema(schema)
//!                 if schema.spec.priority_level_configuration.name.is_empty() =>
//!             {
//!                 vec![Cause {
//!                     reason: "FieldValueRequired".into(),
//!                     message: "Required value: must reference a priority level".into(),
//!                     field: "spec.priorityLevelConfiguration.name".into(),
//!                 }]
//!             }
//!             _ => Vec::new(),
//!         }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Stored in v1 as protobuf under `flowschemas`, as kube-apiserver keeps it.
//! let kind = GroupVersionKind::from_static("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema");
//! let config = ResourceConfig::builtin(kind, "flowschemas", false).with_status(true);
//! let flow_schemas = Served::new(&SCHEME, config)?
//! .with_strategy(FlowSchemaRules); // apfkit-server's has all of kube-apiserver's validation.
//! let objects = Objects::new(SCHEME.encodings(), MemoryBackend::default(), "/registry",
//!     Limits::default());
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
//! // The strategy refuses what kube-apiserver refuses, with its 422.
//! let unbound = serde_json::json!({
//!     "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
//!     "metadata": {"name": "team-b"}, "spec": {"priorityLevelConfiguration": {"name": ""}}
//! });
//! let (mut read, _) = SCHEME.to_hub_value(&unbound, UnknownFields::Strict)?;
//! let refused = objects.create(&flow_schemas, None, read.remove(0), "flowcontrol.apiserver.k8s.io/v1", false).await;
//! assert_eq!(refused.unwrap_err().code, 422);
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod audit;
pub mod auth;
pub mod authz;
pub mod error;
mod evanphx;
/// What the fuzz targets (`fuzz/`) reach beyond the public API; not for users.
#[doc(hidden)]
pub mod __fuzz {
    pub use crate::evanphx::{json_patched, merge_patched};
}
pub mod fields;
mod go_decode;
pub use go_decode::{micro_time_error, object_meta_error};
pub mod go_shape;
pub mod http;
pub mod impersonation;
pub mod informer;
mod json_patch;
mod kube_openapi;
pub mod kubeconfig;
pub mod patch;
pub mod request_info;
pub mod selector;
pub mod storage;
pub mod store;
pub mod table;
pub mod tls;
