//! The Widget API of `example.com`, served in `v1alpha1`, `v1beta1` and `v1`, generated at
//! build time from `widgets.crd.yaml` by `apfkit-codegen`'s multi-version builder.
//!
//! - [`api::types`]: one module per version with the typed `Widget` and `WidgetList`, defaults
//!   (`ApplyDefaults`), serde, and the registry `KINDS`.
//! - [`api::conversion`]: `ToHub`/`FromHub` for every version, through v1 (the hub), with the
//!   hand-written [`hooks`] where the versions differ.
//! - [`api::SCHEME`]: the dynamic scheme, converting and defaulting JSON objects by their
//!   `apiVersion` and `kind` (what a conversion webhook needs).
//!
//! ```
//! use apfkit_example_widgets::api::types::{v1, v1alpha1};
//! use apfkit_runtime::{FromHub, ToHub};
//!
//! let old: v1alpha1::Widget = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "example.com/v1alpha1",
//!     "kind": "Widget",
//!     "metadata": {"name": "w", "annotations": {"widgets.example.com/paused": "true"}},
//!     "spec": {"size": 3, "image": "registry:5000/app:1.2"},
//! })).unwrap();
//! let new: v1::Widget = old.to_hub();
//! assert_eq!(new.spec.as_ref().unwrap().replicas, Some(3));
//! let image = new.spec.as_ref().unwrap().image.as_ref().unwrap();
//! assert_eq!((image.repository.as_str(), image.tag.as_deref()), ("registry:5000/app", Some("1.2")));
//! assert_eq!(new.spec.as_ref().unwrap().paused, Some(true));
//! assert_eq!(v1alpha1::Widget::from_hub(&new), old);
//! ```

#![forbid(unsafe_code)]

include!(concat!(env!("OUT_DIR"), "/api.rs"));

pub mod hooks;
pub mod image;
pub mod lossy;
pub mod serving;
