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

#![forbid(unsafe_code)]

pub mod envelope;
pub mod etcd;
pub mod key;
pub mod migrate;
pub mod object;
