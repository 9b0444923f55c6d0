//! Hub (internal) types for FlowSchema, PriorityLevelConfiguration and APIService, and
//! conversion between every served version and the hub, as kube-apiserver converts.
//!
//! Every version converts to the hub with [`ToHub`] and back with [`FromHub`]; converting from
//! version A to version B is `B::from_hub(&a.to_hub())`. The field-for-field parts are generated
//! by `cargo xtask codegen` (the counterpart of Kubernetes' conversion-gen); the semantic
//! differences are hand-written hooks in [`hooks`]. A source object is never mutated.
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

/// Conversion of an external (versioned) object to its hub type.
pub trait ToHub {
    /// The hub type.
    type Hub;
    /// The hub object; `self` is left as it is.
    fn to_hub(&self) -> Self::Hub;
}

/// Conversion of a hub object to an external (versioned) type.
pub trait FromHub: Sized {
    /// The hub type.
    type Hub;
    /// The external object; `hub` is left as it is.
    fn from_hub(hub: &Self::Hub) -> Self;
}

/// Types that are the same on both sides convert by cloning.
macro_rules! identity {
    ($($ty:ty),*) => {$(
        impl ToHub for $ty {
            type Hub = $ty;
            fn to_hub(&self) -> $ty {
                self.clone()
            }
        }
        impl FromHub for $ty {
            type Hub = $ty;
            fn from_hub(hub: &$ty) -> $ty {
                hub.clone()
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
    fn to_hub(&self) -> Self::Hub {
        self.as_ref().map(ToHub::to_hub)
    }
}

impl<T: FromHub> FromHub for Option<T> {
    type Hub = Option<T::Hub>;
    fn from_hub(hub: &Self::Hub) -> Self {
        hub.as_ref().map(T::from_hub)
    }
}

impl<T: ToHub> ToHub for Vec<T> {
    type Hub = Vec<T::Hub>;
    fn to_hub(&self) -> Self::Hub {
        self.iter().map(ToHub::to_hub).collect()
    }
}

impl<T: FromHub> FromHub for Vec<T> {
    type Hub = Vec<T::Hub>;
    fn from_hub(hub: &Self::Hub) -> Self {
        hub.iter().map(T::from_hub).collect()
    }
}

impl<T: ToHub> ToHub for std::collections::BTreeMap<String, T> {
    type Hub = std::collections::BTreeMap<String, T::Hub>;
    fn to_hub(&self) -> Self::Hub {
        self.iter().map(|(k, v)| (k.clone(), v.to_hub())).collect()
    }
}

impl<T: FromHub> FromHub for std::collections::BTreeMap<String, T> {
    type Hub = std::collections::BTreeMap<String, T::Hub>;
    fn from_hub(hub: &Self::Hub) -> Self {
        hub.iter()
            .map(|(k, v)| (k.clone(), T::from_hub(v)))
            .collect()
    }
}
