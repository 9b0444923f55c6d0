//! The generic store, as kube-apiserver's generic registry (`k8s.io/apiserver/pkg/registry/
//! generic/registry/store.go`): a resource's objects on a storage backend, whatever the
//! backend. What a resource is and how it is served ([`ResourceConfig`], [`Served`]), how each
//! version reads and writes ([`VersionCodec`]), the kind's own rules ([`Strategy`]), and the
//! objects themselves ([`Objects`]). The HTTP handlers reach storage only through here.

mod backend;
mod metadata;
mod objects;
mod propagation;
mod resource;
mod stored;
mod strategy;

pub use crate::storage::Revision;
pub(crate) use objects::check_preconditions;
pub use objects::{
    Change, Deletion, ListRequest, Listed, Objects, Place, Preconditions, UpdateKind, Written, now,
};
pub use propagation::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Propagation, PropagationPolicy};
pub use resource::{
    CustomOpenApi, Generation, ResourceConfig, ResourceError, SchemaFn, SchemeVersion, Served,
    SharedVersion, Validation, VersionCodec, default_field_label_conversion,
};
pub use stored::{Stored, Watch, Watched};
pub use strategy::{GenericStrategy, PrinterStrategy, Strategy};
