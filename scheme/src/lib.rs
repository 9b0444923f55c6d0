//! The scheme of FlowSchema, PriorityLevelConfiguration and APIService: what kube-apiserver
//! knows of them beyond their types, as its `pkg/apis` packages hold it. The scheme that reads,
//! defaults and converts documents of any served version ([`SCHEME`]), kube-apiserver's
//! validation with its messages, and the discovery order of versions.
//!
//! The hub (internal) types and the generated conversions live beside the versioned types in
//! `apfkit-types` (`apfkit_types::hub`, `apfkit_types::hooks`); they implement
//! apfkit-runtime's [`ToHub`] and [`FromHub`], re-exported here. Converting from version A to
//! version B is `B::from_owned_hub(a.into_hub())`, which moves every shared field, or
//! `B::from_hub(&a.to_hub())` to keep the originals.
//!
//! **Where to start**: [`SCHEME`] to read, default and convert documents (`read`,
//! `convert`, `to_hub_value`), [`validation::validate`] for kube-apiserver's checks of a hub
//! object, and [`prelude`] for the traits at once.
//!
//! **Your binary enables a Kubernetes version of k8s-openapi.** Like every library built on
//! k8s-openapi, this crate enables none; without one, k8s-openapi's build fails with
//! "The k8s-openapi crate requires a feature to be enabled". Add to your binary's `Cargo.toml`:
//! `k8s-openapi = { version = "0.29", features = ["latest"] }` (or a specific `v1_*`), or set
//! `K8S_OPENAPI_ENABLED_VERSION` in `.cargo/config.toml` as this workspace does.
//!
//! ```
//! use apfkit_scheme::{FromHub, ToHub};
//! use apfkit_types::flowcontrol::{v1, v1beta2};
//!
//! let old: v1beta2::PriorityLevelConfiguration = serde_json::from_str(r#"{
//!     "metadata": {"name": "p"},
//!     "spec": {"type": "Limited", "limited": {"assuredConcurrencyShares": 20, "limitResponse": {"type": "Reject"}}}
//! }"#).unwrap();
//! let new = v1::PriorityLevelConfiguration::from_hub(&old.to_hub());
//! assert_eq!(new.spec.limited.unwrap().nominal_concurrency_shares, Some(20));
//! ```

#![forbid(unsafe_code)]

#[rustfmt::skip]
mod generated;
pub mod discovery;
pub mod scheme;
pub mod validation;

pub use apfkit_runtime::{FromHub, ToHub};

pub use scheme::{Converted, HubObject, SCHEME, SchemeError, Target, UnknownFields, Warning};
pub use validation::{FieldError, validate};

/// What typed conversion code needs in scope: `use apfkit_scheme::prelude::*;`.
pub mod prelude {
    pub use crate::scheme::{Target, UnknownFields};
    pub use crate::{FromHub, ToHub};
    pub use apfkit_types::ApplyDefaults;
}
