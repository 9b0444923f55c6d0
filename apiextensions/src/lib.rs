//! Users' CustomResourceDefinitions served beside a server's own kinds, as kube-apiserver's
//! apiextensions-apiserver serves them.
//!
//! - [`object`]: the server's hub object [`ServedObject`], which holds an object of the
//!   scheme's kinds or a [`CustomObject`] (a custom resource or a CRD, held as JSON with typed
//!   metadata), and [`object::builtin`], which serves a scheme's resource among them.
//! - [`definitions`]: the `apiextensions.k8s.io/v1` CustomResourceDefinition resource, its
//!   defaults and its checks (apfkit-crd's, kube-apiserver's on a CRD write).
//! - [`json_kind`]: a version of a kind held as JSON with a normalizing function of its own
//!   (the CRD's; a server's own kinds from typed definitions, such as RBAC's).
//! - [`custom`]: a served version of a custom resource: pruning and defaulting by its schema,
//!   conversion (`None`, or the CRD's [`webhook`]), validation (schema and CEL rules).
//! - [`printer`]: the columns of `kubectl get` from a version's `additionalPrinterColumns`.
//! - [`controller`]: [`CustomResources`], which serves each valid stored CRD, writes its
//!   status and keeps in step with a watch.
//!
//! **Where to start**: [`CustomResources::new`] beside an `apfkit_apiserver::http::ApiServer`
//! whose hub object is a [`ServedObject`] (your scheme's, or [`NoKind`] for a server of CRDs
//! only), then [`CustomResources::apply`] for CRDs you bring, [`CustomResources::sync`] and
//! [`CustomResources::keep_synced`]; `apfkit-server` serves them beside flowcontrol:
//!
//! ```
//! use std::sync::Arc;
//!
//! use apfkit_apiextensions::{CustomResources, NoKind, ServedObject};
//! use apfkit_apiserver::http::{ApiServer, VersionInfo};
//! use apfkit_apiserver::store::Objects;
//! use apfkit_apiserver::storage::memory::MemoryBackend;
//!
//! # #[tokio::main(flavor = "multi_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let objects = Objects::<ServedObject<NoKind>>::new(None, MemoryBackend::default(),
//!     "/registry", Default::default());
//! let version = VersionInfo::new("1", "35", "v1.35.0");
//! let server = Arc::new(ApiServer::new(objects, Vec::new(), version));
//! let custom = CustomResources::new(server.clone(), Vec::new()).map_err(|e| e.message)?;
//! custom.apply(&serde_json::json!({
//!     "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
//!     "metadata": {"name": "gadgets.example.com"},
//!     "spec": {"group": "example.com", "scope": "Namespaced",
//!         "names": {"kind": "Gadget", "plural": "gadgets"},
//!         "versions": [{"name": "v1", "served": true, "storage": true,
//!             "schema": {"openAPIV3Schema": {"type": "object"}}}]}
//! })).await.map_err(|e| e.message)?;
//! custom.sync().await.map_err(|e| e.message)?;
//! // The CRDs resource, and now gadgets.
//! let kinds: Vec<String> = server.resources().iter().map(|r| r.config.kind.clone()).collect();
//! assert!(kinds.contains(&"Gadget".to_owned()), "{kinds:?}");
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod controller;
pub mod custom;
pub mod definitions;
pub mod json_kind;
pub mod object;
mod openapi;
pub mod printer;
pub mod protobuf;
mod published;
pub mod webhook;

pub use controller::CustomResources;
pub use object::{CustomObject, NoKind, ServedObject};
