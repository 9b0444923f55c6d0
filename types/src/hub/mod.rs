//! The hub (internal) types: the shape every version converts through, modelled on
//! kube-apiserver's internal types. Validation and the dispatcher work on these.
//!
//! They have the v1 fields (the superset of every version) and no version identity or
//! defaults. Differences from v1: `ServiceReference::port` is a plain `i32`, as the internal
//! Go type is.

#[rustfmt::skip]
mod generated;

pub use crate::conversions::HubObject;
pub use generated::{apiregistration, flowcontrol};
