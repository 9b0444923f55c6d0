//! kube-controller-manager's garbage collector (`pkg/controller/garbagecollector`) for an
//! apfkit-apiserver: what becomes of objects whose `metadata.ownerReferences` name owners
//! that are gone, and of the dependents of an owner whose delete asked for them (the
//! `propagationPolicy` of a delete, which the store turns into the `orphan` and
//! `foregroundDeletion` finalizers: `apfkit_apiserver::store::Propagation`).
//!
//! - **Background** (the default): the owner goes at once; each dependent whose owners are
//!   all gone is deleted next, as its own finalizers say for its dependents.
//! - **Orphan**: every dependent's reference to the owner is removed, then the owner's
//!   `orphan` finalizer, and the owner goes.
//! - **Foreground**: the owner is kept while its dependents are deleted; once none whose
//!   reference says `blockOwnerDeletion: true` is left, its `foregroundDeletion` finalizer is
//!   removed and it goes. A dependent that has another owner still there only loses its
//!   reference.
//!
//! An owner is found by the reference's kind and name (in the dependent's namespace when the
//! kind is namespaced) and must have the reference's uid; an owner of a kind not served, or a
//! namespaced owner of a cluster-scoped object, leaves the object as it is, as kube leaves
//! it. The collector writes as `kube-controller-manager`.
//!
//! **Where to start**: `apfkit-server` runs one beside its API unless told otherwise
//! (`--controllers=*,-garbage-collector-controller`); beside any other
//! `apfkit_apiserver::http::ApiServer`, `Arc::new(GarbageCollector::new(server))` and
//! [`GarbageCollector::keep_collecting`]. A Role owned by a Service goes with it:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use k8s_openapi::api::{core::v1::Service, rbac::v1::Role};
//! use kube::api::{Api, DeleteParams, PostParams};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let config = apfkit_server::Config::new(dir.path().join("data"));
//! let server = apfkit_server::start(config).await.unwrap();
//! let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig()).unwrap();
//! let options = kube::config::KubeConfigOptions::default();
//! let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.unwrap();
//! let client = kube::Client::try_from(config).unwrap();
//!
//! let services: Api<Service> = Api::default_namespaced(client.clone());
//! let service = json!({"metadata": {"name": "web"}, "spec": {"clusterIP": "None"}});
//! let owner = services
//!     .create(&PostParams::default(), &serde_json::from_value(service).unwrap())
//!     .await
//!     .unwrap();
//! let roles: Api<Role> = Api::default_namespaced(client);
//! let role = json!({"metadata": {"name": "web-reader", "ownerReferences": [{
//!     "apiVersion": "v1", "kind": "Service", "name": "web", "uid": owner.metadata.uid}]}});
//! roles
//!     .create(&PostParams::default(), &serde_json::from_value(role).unwrap())
//!     .await
//!     .unwrap();
//!
//! services.delete("web", &DeleteParams::default()).await.unwrap();
//! // Its only owner gone, the collector deletes the Role.
//! let mut tries = 0;
//! while roles.get_opt("web-reader").await.unwrap().is_some() {
//!     tries += 1;
//!     assert!(tries < 200, "the Role is still there");
//!     tokio::time::sleep(std::time::Duration::from_millis(50)).await;
//! }
//! # }
//! ```

#![forbid(unsafe_code)]

mod collector;
mod decide;
mod graph;

pub use collector::GarbageCollector;
