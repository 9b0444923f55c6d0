//! Hub (internal) types for FlowSchema, PriorityLevelConfiguration and APIService, and
//! conversion between every served version and the hub, as kube-apiserver converts.
//!
//! Every version converts to the hub with [`ToHub`] and back with [`FromHub`]; converting from
//! version A to version B is `B::from_owned_hub(a.into_hub())`, which moves every shared field,
//! or `B::from_hub(&a.to_hub())` to keep the originals. The field-for-field parts are generated
//! by `cargo xtask codegen` (the counterpart of Kubernetes' conversion-gen); the semantic
//! differences are hand-written hooks in [`hooks`]. The borrowing forms never mutate their
//! source.
//!
//! **Your binary enables a Kubernetes version of k8s-openapi.** Like every library built on
//! k8s-openapi, this crate enables none; without one, k8s-openapi's build fails with
//! "The k8s-openapi crate requires a feature to be enabled". Add to your binary's `Cargo.toml`:
//! `k8s-openapi = { version = "0.29", features = ["latest"] }` (or a specific `v1_*`), or set
//! `K8S_OPENAPI_ENABLED_VERSION` in `.cargo/config.toml` as this workspace does.
//!
//! ```
//! use apfkit_conversion::{FromHub, ToHub};
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
pub mod hooks;
pub mod hub;
pub mod scheme;
pub mod validation;

pub use scheme::{Converted, HubObject, SchemeError, Target, UnknownFields, Warning};
pub use validation::{FieldError, validate};

/// What typed conversion code needs in scope: `use apfkit_conversion::prelude::*;`.
pub mod prelude {
    pub use crate::scheme::{Target, UnknownFields};
    pub use crate::{FromHub, ToHub};
    pub use apfkit_types::ApplyDefaults;
}

/// Conversion of an external (versioned) object to its hub type.
pub trait ToHub: Sized {
    /// The hub type.
    type Hub;
    /// The hub object, moving every field that both sides share.
    fn into_hub(self) -> Self::Hub;
    /// The hub object; `self` is left as it is (one clone, then [`ToHub::into_hub`]).
    fn to_hub(&self) -> Self::Hub
    where
        Self: Clone,
    {
        self.clone().into_hub()
    }
}

/// Conversion of a hub object to an external (versioned) type.
pub trait FromHub: Sized {
    /// The hub type.
    type Hub;
    /// The external object, moving every field that both sides share.
    fn from_owned_hub(hub: Self::Hub) -> Self;
    /// The external object; `hub` is left as it is (one clone, then [`FromHub::from_owned_hub`]).
    fn from_hub(hub: &Self::Hub) -> Self
    where
        Self::Hub: Clone,
    {
        Self::from_owned_hub(hub.clone())
    }
    /// Whether `hub` comes back unchanged from this type (`from_owned_hub`, then `into_hub`,
    /// with no defaulting between), answered without converting. `false` when unsure: the
    /// generated impls answer exactly, unless a type with conversion hooks has no
    /// round-trip check registered.
    fn round_trips(hub: &Self::Hub) -> bool {
        let _ = hub;
        false
    }
}

/// Types that are the same on both sides.
macro_rules! identity {
    ($($ty:ty),*) => {$(
        impl ToHub for $ty {
            type Hub = $ty;
            fn into_hub(self) -> $ty {
                self
            }
        }
        impl FromHub for $ty {
            type Hub = $ty;
            fn from_owned_hub(hub: $ty) -> $ty {
                hub
            }
            fn round_trips(_: &$ty) -> bool {
                true
            }
        }
    )*};
}

identity!(
    String,
    i32,
    i64,
    f64,
    bool,
    serde_json::Value,
    k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta,
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time
);

impl<T: ToHub> ToHub for Option<T> {
    type Hub = Option<T::Hub>;
    fn into_hub(self) -> Self::Hub {
        self.map(ToHub::into_hub)
    }
}

impl<T: FromHub> FromHub for Option<T> {
    type Hub = Option<T::Hub>;
    fn from_owned_hub(hub: Self::Hub) -> Self {
        hub.map(T::from_owned_hub)
    }
    fn round_trips(hub: &Self::Hub) -> bool {
        hub.as_ref().is_none_or(T::round_trips)
    }
}

impl<T: ToHub> ToHub for Vec<T> {
    type Hub = Vec<T::Hub>;
    fn into_hub(self) -> Self::Hub {
        self.into_iter().map(ToHub::into_hub).collect()
    }
}

impl<T: FromHub> FromHub for Vec<T> {
    type Hub = Vec<T::Hub>;
    fn from_owned_hub(hub: Self::Hub) -> Self {
        hub.into_iter().map(T::from_owned_hub).collect()
    }
    fn round_trips(hub: &Self::Hub) -> bool {
        hub.iter().all(T::round_trips)
    }
}

impl<T: ToHub> ToHub for std::collections::BTreeMap<String, T> {
    type Hub = std::collections::BTreeMap<String, T::Hub>;
    fn into_hub(self) -> Self::Hub {
        self.into_iter().map(|(k, v)| (k, v.into_hub())).collect()
    }
}

impl<T: FromHub> FromHub for std::collections::BTreeMap<String, T> {
    type Hub = std::collections::BTreeMap<String, T::Hub>;
    fn from_owned_hub(hub: Self::Hub) -> Self {
        hub.into_iter()
            .map(|(k, v)| (k, T::from_owned_hub(v)))
            .collect()
    }
    fn round_trips(hub: &Self::Hub) -> bool {
        hub.values().all(T::round_trips)
    }
}
