//! Validation of hub objects with kube-apiserver's rules, field paths and messages.
//!
//! ```
//! use apfkit_scheme::scheme::{SCHEME, UnknownFields};
//! use apfkit_scheme::validation::{self, Options};
//!
//! let document = serde_json::json!({
//!     "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
//!     "kind": "FlowSchema",
//!     "metadata": {"name": "system-foo"},
//!     "spec": {"matchingPrecedence": 10001, "priorityLevelConfiguration": {"name": "system-bar"}}
//! });
//! let (objects, _) = SCHEME.to_hub_value(&document, UnknownFields::Strict).unwrap();
//! let errors = validation::validate(&objects[0], &Options::default());
//! assert_eq!(errors[0].to_string(), "spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000");
//! ```

mod apiregistration;
mod flowcontrol;
mod mandatory;
mod names;

pub use apfkit_runtime::field;
pub use field::{BadValue, ErrorType, FieldError, Path};

use crate::scheme::HubObject;
use apfkit_types::hub::flowcontrol::PriorityLevelConfiguration;

/// How to validate, where kube-apiserver's behaviour depends on the request or the release.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// The request's version (`v1beta2` or `flowcontrol.apiserver.k8s.io/v1beta2`), which names
    /// the shares field in error paths: `assuredConcurrencyShares` for v1alpha1, v1beta1 and
    /// v1beta2, `nominalConcurrencyShares` otherwise.
    pub request_version: Option<&'a str>,
    /// Whether a Limited level may have 0 shares (Kubernetes 1.30+: yes; 1.29 by default: no).
    pub allow_zero_shares: bool,
    /// For an update: the stored level. A level that already has 0 shares may keep them
    /// even when zero is otherwise not allowed (the 1.29 rule).
    pub old_priority_level: Option<&'a PriorityLevelConfiguration>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            request_version: None,
            allow_zero_shares: true,
            old_priority_level: None,
        }
    }
}

impl Options<'_> {
    /// The name of the shares field in the request's version, as that version's schema (in the
    /// generated kind registry) spells it.
    fn shares_field(&self) -> &'static str {
        let version = self
            .request_version
            .map(|v| v.strip_prefix("flowcontrol.apiserver.k8s.io/").unwrap_or(v));
        let legacy = version.is_some_and(|v| legacy_shares_versions().contains(&v));
        if legacy {
            "assuredConcurrencyShares"
        } else {
            "nominalConcurrencyShares"
        }
    }
}

/// The flowcontrol versions whose PriorityLevelConfiguration names the shares
/// `assuredConcurrencyShares` (renamed `nominalConcurrencyShares` in v1beta3), read once from
/// each version's JSON Schema.
fn legacy_shares_versions() -> &'static [&'static str] {
    static VERSIONS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    VERSIONS.get_or_init(|| {
        apfkit_types::KINDS
            .iter()
            .filter(|kind| {
                kind.group == "flowcontrol.apiserver.k8s.io"
                    && kind.kind == "PriorityLevelConfiguration"
            })
            .filter(|kind| {
                let schema = kind.json_schema().unwrap_or_default();
                let definitions = schema.get("$defs").and_then(|d| d.as_object());
                definitions.into_iter().flatten().any(|(name, definition)| {
                    name.ends_with(".LimitedPriorityLevelConfiguration")
                        && definition
                            .pointer("/properties/assuredConcurrencyShares")
                            .is_some()
                })
            })
            .map(|kind| kind.version)
            .collect()
    })
}

/// Every error of a hub object, in kube-apiserver's order.
pub fn validate(object: &HubObject, options: &Options<'_>) -> Vec<FieldError> {
    match object {
        HubObject::FlowSchema(schema) => flowcontrol::flow_schema(schema),
        HubObject::PriorityLevelConfiguration(level) => {
            flowcontrol::priority_level_configuration(level, options)
        }
        HubObject::APIService(service) => apiregistration::api_service(service),
    }
}
