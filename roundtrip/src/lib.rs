//! Proof that a multi-version CustomResourceDefinition's conversions lose nothing.
//!
//! A field that does not survive `v1` → `v2` → `v1` is lost the first time a client of `v2`
//! writes the object back, and stored objects lose it for good at the next storage-version
//! migration. A [`Check`] generates objects for every served version from its structural
//! schema (every field absent and present, nulls, empty and zero values, extremes, long and
//! non-ASCII strings, enums, maps, list types, preserved unknown fields, embedded
//! resources), keeps those the version admits as kube-apiserver admits a create (pruned,
//! defaulted, validated with its CEL rules), sends them to every other version and back
//! through a [`Converter`] (the CRD's webhook as kube-apiserver calls it, several objects
//! per review and its answer checked as kube-apiserver checks it; `None`; or Rust code run
//! as the webhook), reads each converted object as the storage would (pruned and defaulted
//! in its version), and compares. Each field lost, changed or added is named by its path,
//! with the smallest object that still shows it (proptest's shrinking); with three versions
//! or more, `A` → `B` → `C` is compared with `A` → `C` too.
//!
//! `apfkit crd check-conversion` runs it from the command line.
//!
//! **Where to start**: [`Check::new`] with a compiled `apfkit_crd::CustomResourceDefinition`,
//! then [`Check::run`] with the [`Converter`]: the CRD's [`Webhook`] (`Webhook::new` from its
//! `spec.conversion.webhook`, or `Webhook::in_process` around your Rust conversions), or
//! [`NoConversion`]; then [`Report::clean`] and [`Report::text`]:
//!
//! ```
//! use apfkit_roundtrip::{Check, NoConversion};
//!
//! // v2 renamed `size` to `replicas`, and with `strategy: None` nothing converts it.
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
//!           spec: {type: object, properties: {size: {type: integer}}}
//!   - name: v2
//!     served: true
//!     storage: false
//!     schema:
//!       openAPIV3Schema:
//!         type: object
//!         properties:
//!           spec: {type: object, properties: {replicas: {type: integer}}}
//! "#).unwrap();
//! let crd = apfkit_crd::CustomResourceDefinition::from_value(&crd).unwrap();
//! let report = Check::new(crd).seed(1).cases(32).run(&NoConversion);
//! assert!(!report.clean());
//! let lost: Vec<&str> = report
//!     .findings
//!     .iter()
//!     .filter_map(|f| f.difference.as_ref().map(|d| d.path.as_str()))
//!     .collect();
//! assert_eq!(lost, [".spec.size", ".spec.replicas"]);
//! // Shrunk: the smallest object that loses `size` holds nothing else.
//! assert_eq!(report.findings[0].object["spec"], serde_json::json!({"size": 0}));
//! ```

#![forbid(unsafe_code)]

mod check;
mod convert;
pub mod diff;
mod generate;
mod report;

pub use apfkit_apiextensions::webhook::{Exchange, Refused, Webhook};
pub use check::Check;
pub use convert::{Converted, Converter, NoConversion};
pub use report::{Finding, Problem, Report};
