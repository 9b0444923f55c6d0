//! Value types for Kubernetes' special string formats, used by code that `apfkit-codegen`
//! generates from CustomResourceDefinitions and OpenAPI documents.
//!
//! Each type is **checked** as kube-apiserver checks the value and **lossless**: it writes back
//! exactly the JSON it read. Where k8s-openapi parses a time or a quantity and writes its own
//! canonical form, these keep the text, so a read-modify-write never rewrites a field the
//! program did not touch.
//!
//! **Where to start**: the value types below in your own structs; [`ApplyDefaults`],
//! [`ToHub`] and [`FromHub`] on what `apfkit-codegen` generates; [`scheme::Scheme`] (its
//! `read`, `convert` and `default`) for documents by `apiVersion` and `kind`; [`review`] for
//! a CRD's conversion webhook (served over HTTPS by apfkit-https's `webhook`).
//!
//! | Schema | Type | Accepts |
//! |---|---|---|
//! | `x-kubernetes-int-or-string` | [`IntOrString`] | a 32-bit integer or a string, like Go's `intstr.IntOrString` |
//! | `format: date-time` | [`DateTime`] | what kube-openapi's `strfmt.IsDateTime` accepts |
//! | Kubernetes `Quantity` | [`Quantity`] | an integer, or text that `resource.ParseQuantity` accepts |
//!
//! ```
//! use apfkit_runtime::{DateTime, IntOrString, Quantity};
//!
//! let port: IntOrString = serde_json::from_str("8080").unwrap();
//! assert_eq!(port, IntOrString::Int(8080));
//!
//! let time: DateTime = serde_json::from_str(r#""2024-02-29T23:59:59.123+01:00""#).unwrap();
//! assert_eq!(serde_json::to_string(&time).unwrap(), r#""2024-02-29T23:59:59.123+01:00""#);
//! assert!(serde_json::from_str::<DateTime>(r#""2023-02-29T00:00:00Z""#).is_err());
//!
//! let memory: Quantity = serde_json::from_str(r#""1.5Gi""#).unwrap();
//! assert_eq!(memory.as_str(), "1.5Gi");
//! assert!("1.1.M".parse::<Quantity>().is_err());
//! ```
//!
//! It is also the vocabulary every generated tree shares: the traits `apfkit-codegen`'s
//! output implements ([`ApplyDefaults`], [`ListKind`], and for multi-version APIs [`ToHub`]
//! and [`FromHub`]; a kind's identity is k8s-openapi's `Resource`, reachable through the
//! re-exported [`k8s_openapi`], the one trait kube-rs users already have), the [`Object`] trait of a scheme's hub
//! object (its kind and metadata), the dynamic [`scheme::Scheme`] over a generated registry,
//! what names a kind or a resource ([`identity`]), the ConversionReview handler ([`review`]),
//! and [`files`]: files named by flags read within a limit, whatever they are.

#![forbid(unsafe_code)]

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
pub mod convert;
mod date_time;
pub mod field;
pub mod files;
pub mod go_duration;
pub mod identity;
mod int_or_string;
pub mod kind;
pub mod object;
pub mod object_meta;
mod quantity;
pub mod review;
pub mod scheme;
pub mod version;

pub use convert::{FromHub, ToHub};
/// k8s-openapi, whose `Resource` trait is every generated kind's identity.
pub use k8s_openapi;
pub use kind::{ApplyDefaults, ListKind};
pub use object::{HubKind, Object};

pub use date_time::{DateTime, DateTimeError, days_in_month};
pub use int_or_string::IntOrString;
pub use quantity::{Quantity, QuantityError};
