//! CustomResourceDefinitions as kube-apiserver applies them to custom resources.
//!
//! A definition is read and compiled once ([`CustomResourceDefinition::from_value`]); each
//! version then does to an object what kube-apiserver does on a create or an update
//! ([`Version::admit`]): nulls that may not be null dropped, unknown fields pruned, defaults
//! applied, then the metadata, the structural schema (types, `enum`, `pattern`, bounds,
//! lengths, `required`, `format`s, ...), the list types (`set`, `map`) and the
//! `x-kubernetes-validations` CEL rules checked, with kube-apiserver's field paths and
//! messages.
//!
//! **Where to start**: [`CustomResourceDefinition::from_value`], then
//! `CustomResourceDefinition::version_of` and [`Version::admit`] (or `validate_typed` for
//! generated types):
//!
//! ```
//! use apfkit_crd::CustomResourceDefinition;
//!
//! let crd: serde_json::Value = serde_saphyr::from_str(r#"
//! apiVersion: apiextensions.k8s.io/v1
//! kind: CustomResourceDefinition
//! metadata: {name: widgets.example.com}
//! spec:
//!   group: example.com
//!   names: {kind: Widget, plural: widgets}
//!   scope: Namespaced
//!   versions:
//!   - name: v1
//!     served: true
//!     storage: true
//!     schema:
//!       openAPIV3Schema:
//!         type: object
//!         properties:
//!           spec:
//!             type: object
//!             required: [selector]
//!             properties:
//!               selector: {type: string}
//!               replicas:
//!                 type: integer
//!                 x-kubernetes-validations:
//!                 - {rule: "self <= 10", message: must be at most 10}
//! "#).unwrap();
//! let crd = CustomResourceDefinition::from_value(&crd).unwrap();
//! let mut widget = serde_json::json!({
//!     "apiVersion": "example.com/v1", "kind": "Widget",
//!     "metadata": {"name": "w"}, "spec": {"replicas": 3}
//! });
//! let version = crd.version_of("example.com/v1").unwrap();
//! let admission = version.admit(&mut widget, None);
//! assert_eq!(admission.errors[0].to_string(), "spec.selector: Required value");
//!
//! let mut widget = serde_json::json!({
//!     "apiVersion": "example.com/v1", "kind": "Widget",
//!     "metadata": {"name": "w"}, "spec": {"selector": "a", "replicas": 30}
//! });
//! let admission = version.admit(&mut widget, None);
//! assert_eq!(admission.errors[0].to_string(), "spec.replicas: Invalid value: 30: must be at most 10");
//! ```

#![forbid(unsafe_code)]

pub mod cel;
mod checks;
mod defaults;
mod definition;
mod extensions;
pub mod format;
pub mod listtype;
mod metadata;
mod objectmeta;
pub mod prune;
pub mod schema;
mod structural;
pub mod validate;

pub use definition::{Admission, Checked, CustomResourceDefinition, DefinitionError, Version};
pub use schema::Schema;
