//! Objects as kube-apiserver stores them in etcd.
//!
//! [`envelope`] tells what a stored value is: Kubernetes' protobuf envelope (the prefix
//! `k8s\0`, then a `runtime.Unknown` message naming the object's apiVersion and kind around
//! its bytes), JSON (how APIServices and custom resources are stored), or a value encrypted at
//! rest (`k8s:enc:`), which is reported and never touched. [`etcd`] connects to etcd as
//! etcdctl does and lists the stored objects of the resources this toolkit knows. [`object`]
//! decodes and encodes stored objects as kube-apiserver's storage codec does, and [`migrate`]
//! rewrites them in another version with compare-and-swap writes. [`key`] prints etcd keys,
//! which are bytes, in one escaped form that reads back.
//!
//! **Where to start**: [`object::decode`] for one value read from etcd (its bytes and mod
//! revision), [`etcd::Store`] to list and write a cluster's objects, and
//! [`migrate::migrate_kinds`] to rewrite them in another version (`apfkit storage` is built
//! on these):
//!
//! ```
//! use apfkit_runtime::scheme::StorageEncoding;
//! use apfkit_storage::{envelope, object};
//!
//! let level = serde_json::json!({
//!     "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3",
//!     "kind": "PriorityLevelConfiguration",
//!     "metadata": {"name": "workload-low"},
//!     "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 100,
//!         "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}
//! });
//! // The bytes kube-apiserver would store under /registry/prioritylevelconfigurations/workload-low.
//! let value = object::encode(&level, StorageEncoding::Protobuf)?;
//! let stored = envelope::inspect(&value)?;
//! assert_eq!(stored.stored_as, envelope::StoredAs::Encoded(StorageEncoding::Protobuf));
//! assert_eq!(stored.kind.as_deref(), Some("PriorityLevelConfiguration"));
//! // Read back, with the key's mod revision as its resourceVersion.
//! let read = object::decode(&value, 42, &Default::default())?;
//! assert_eq!(read.object["metadata"]["resourceVersion"], "42");
//! assert_eq!(read.object["spec"]["limited"]["nominalConcurrencyShares"], 100);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

pub mod envelope;
pub mod etcd;
pub mod key;
pub mod migrate;
pub mod object;
