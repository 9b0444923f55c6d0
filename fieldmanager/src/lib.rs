//! Server-side apply as kube-apiserver does it, for any JSON object with a structural schema:
//! field paths and sets in the `FieldsV1` format ([`path`], [`set`]), a schema's merge rules
//! ([`schema`]), the set of fields a value sets, the comparison and merge of two values
//! ([`typed`]), and the managers of an object's fields with apply and update as
//! structured-merge-diff computes them ([`updater`]).
//!
//! **Where to start**: [`schema::Schema::compile`] for an object's merge rules, then an
//! [`updater::Updater`] over its versions for `apply` and `update`, which answer the merged
//! object and its managed fields:
//!
//! ```
//! use apfkit_fieldmanager::schema::Schema;
//! use apfkit_fieldmanager::updater::{ApplyError, Managers, OneVersion, Updater};
//! use serde_json::json;
//!
//! let versions = OneVersion {
//!     api_version: "example.com/v1".into(),
//!     schema: Schema::compile(&json!({"type": "object", "properties": {
//!         "replicas": {"type": "integer"},
//!         "ports": {"type": "array", "x-kubernetes-list-type": "map",
//!                   "x-kubernetes-list-map-keys": ["port"],
//!                   "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
//!     }})),
//! };
//! let updater = Updater::new(&versions);
//! let live = json!({});
//!
//! // One manager applies replicas and a port; another adds a port of its own.
//! let config = json!({"replicas": 2, "ports": [{"port": 80}]});
//! let (live, managers) =
//!     updater.apply(&live, &config, "example.com/v1", Managers::new(), "gitops", false)?;
//! let live = live.unwrap();
//! let other = json!({"ports": [{"port": 443}]});
//! let (live, managers) =
//!     updater.apply(&live, &other, "example.com/v1", managers, "sidecar", false)?;
//! let live = live.unwrap();
//! assert_eq!(live, json!({"replicas": 2, "ports": [{"port": 80}, {"port": 443}]}));
//! assert_eq!(
//!     managers["gitops"].set.to_fields_v1(),
//!     r#"{"f:ports":{"k:{\"port\":80}":{".":{},"f:port":{}}},"f:replicas":{}}"#
//! );
//!
//! // Changing a field someone else applied is a conflict, unless forced.
//! let error = updater
//!     .apply(&live, &json!({"replicas": 3}), "example.com/v1", managers, "sidecar", false)
//!     .unwrap_err();
//! assert_eq!(error.to_string(), r#"conflict with "gitops": .replicas"#);
//! # Ok::<(), ApplyError>(())
//! ```

#![forbid(unsafe_code)]

pub mod managed;
pub mod path;
pub mod schema;
pub mod set;
pub mod typed;
pub mod updater;
