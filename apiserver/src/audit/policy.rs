//! The audit policy (`audit.k8s.io/v1` `Policy`): what kube-apiserver's `--audit-policy-file`
//! holds, read as its `policy.LoadPolicyFromBytes` reads it (strict first; a policy with
//! unknown fields is read leniently, with a warning), checked as its `ValidatePolicy` checks
//! it, and evaluated for a request as its `policyRuleEvaluator` does: the first rule that
//! matches gives the level, `None` when none does
//! (`k8s.io/apiserver/pkg/audit/policy/checker.go`).

use apfkit_runtime::field::{BadValue, FieldError, Path, names};
use apfkit_runtime::identity::GroupVersion;
use serde::Deserialize;

use super::{Level, Stage};
use crate::authz::Attributes;

/// The only version of the group kube-apiserver reads policies in.
pub const API_VERSION: &str = "audit.k8s.io/v1";

/// An audit policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// The rules, in order: the first that matches a request decides its level.
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
    /// Stages no event is written at, for every rule.
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Whether request and response bodies are written without `metadata.managedFields`
    /// (unless a rule says otherwise).
    #[serde(default)]
    pub omit_managed_fields: bool,
}

/// One rule: the level of the requests it matches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// The level of the requests the rule matches.
    #[serde(default)]
    pub level: Level,
    /// User names it matches (any when empty).
    #[serde(default)]
    pub users: Vec<String>,
    /// Groups it matches: a user in one of them (any when empty).
    #[serde(default)]
    pub user_groups: Vec<String>,
    /// Verbs it matches (any when empty).
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Resources it matches (a resource request's group, resource and name).
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    /// Namespaces it matches; `""` for cluster-scoped resources.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Paths it matches (`/metrics`, `/healthz*`, `*`).
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    /// Stages no event is written at for the requests it matches (added to the policy's).
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Overrides the policy's `omitManagedFields` for the requests it matches.
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

/// Resources of one API group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    /// The API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// Resources (`pods`, `pods/log`, `*`, `*/status`, `pods/*`); every resource of the
    /// group when empty.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Object names; any when empty.
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// What the policy says of one request (`audit.RequestAuditConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestAuditConfig {
    /// Its level.
    pub level: Level,
    /// The stages no event is written at.
    pub omit_stages: Vec<Stage>,
    /// Whether bodies are written without managed fields.
    pub omit_managed_fields: bool,
}

/// Why a policy file could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("failed to read file path {path:?}: {message}")]
    Read {
        /// The file.
        path: String,
        /// The system's error.
        message: String,
    },
    /// Not a policy: not YAML or JSON, or fields of the wrong type.
    #[error("failed decoding: {0}")]
    Decoding(String),
    /// Another group or version than `audit.k8s.io/v1`, or another kind.
    #[error("unknown group version field {0} in policy")]
    Version(String),
    /// Checks the policy fails (each error's path and message, as `ValidatePolicy` words them).
    #[error("{}", apfkit_runtime::field::to_aggregate(.0))]
    Invalid(Vec<FieldError>),
    /// A policy without rules.
    #[error("loaded illegal policy with 0 rules")]
    NoRules,
    /// What is wrong with the policy of a file, naming it.
    #[error("{error}: from file {path}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        error: Box<PolicyError>,
    },
}

/// The largest policy file read (kube-apiserver reads any; a policy of a few hundred rules
/// is well under it).
pub const MAX_POLICY_BYTES: u64 = 1 << 20;

impl Policy {
    /// Reads the policy file at `path` (`policy.LoadPolicyFromFile`): errors name the file.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or is larger than [`MAX_POLICY_BYTES`], or whatever
    /// [`Policy::from_bytes`] refuses.
    pub fn from_file(path: &std::path::Path) -> Result<(Policy, Vec<String>), PolicyError> {
        let shown = path.display().to_string();
        let read = |message: String| PolicyError::Read {
            path: shown.clone(),
            message,
        };
        // At most the limit and a byte, whatever the file is (`/dev/zero`, a FIFO).
        let bytes = apfkit_runtime::files::read_at_most(path, MAX_POLICY_BYTES)
            .map_err(|e| read(e.to_string()))?;
        Policy::from_bytes(&bytes).map_err(|error| PolicyError::File {
            path: shown,
            error: Box::new(error),
        })
    }

    /// Reads a policy from YAML or JSON (`policy.LoadPolicyFromBytes`), with the warnings of
    /// a lenient reading (fields it does not know).
    ///
    /// # Errors
    ///
    /// Not YAML or JSON of a `audit.k8s.io/v1` `Policy`, a policy that fails validation, or
    /// one without rules.
    pub fn from_bytes(bytes: &[u8]) -> Result<(Policy, Vec<String>), PolicyError> {
        let text = std::str::from_utf8(bytes).map_err(|e| PolicyError::Decoding(e.to_string()))?;
        let document: serde_json::Value = serde_saphyr::from_str(text)
            .map_err(|e| PolicyError::Decoding(e.without_snippet().to_string()))?;
        let api_version = document
            .get("apiVersion")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        let kind = document
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        if api_version != API_VERSION || kind != "Policy" {
            return Err(PolicyError::Version(go_group_version_kind(
                api_version,
                kind,
            )));
        }
        let mut unknown = Vec::new();
        let policy: Policy = serde_ignored::deserialize(&document, |path| {
            let field = path.to_string();
            if !matches!(field.as_str(), "apiVersion" | "kind" | "metadata")
                && !field.starts_with("metadata.")
            {
                unknown.push(field);
            }
        })
        .map_err(|e| PolicyError::Decoding(e.to_string()))?;
        let warnings = if unknown.is_empty() {
            Vec::new()
        } else {
            let fields: Vec<String> = unknown
                .iter()
                .map(|field| format!("unknown field {field:?}"))
                .collect();
            vec![format!(
                "Audit policy contains errors, falling back to lenient decoding: strict decoding error: {}",
                fields.join(", ")
            )]
        };
        let errors = policy.validate();
        if !errors.is_empty() {
            return Err(PolicyError::Invalid(errors));
        }
        if policy.rules.is_empty() {
            return Err(PolicyError::NoRules);
        }
        Ok((policy, warnings))
    }

    /// The policy's errors, as `validation.ValidatePolicy` finds them.
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errors = validate_omit_stages(&self.omit_stages, &Path::new("omitStages"));
        for (index, rule) in self.rules.iter().enumerate() {
            errors.extend(rule.validate(&Path::new("rules").index(index)));
        }
        errors
    }

    /// What the policy says of a request (`EvaluatePolicyRule`): the first matching rule's
    /// level, its stages and the policy's omitted, and whether managed fields are left out;
    /// `None` when no rule matches.
    pub fn evaluate(&self, attributes: &Attributes) -> RequestAuditConfig {
        match self.rules.iter().find(|rule| rule.matches(attributes)) {
            Some(rule) => RequestAuditConfig {
                level: rule.level.clone(),
                omit_stages: union_stages(&self.omit_stages, &rule.omit_stages),
                omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
            },
            None => RequestAuditConfig {
                level: Level::None,
                omit_stages: self.omit_stages.clone(),
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }
}

/// `schema.GroupVersionKind`'s `String()`: `/, Kind=` for a document without either.
fn go_group_version_kind(api_version: &str, kind: &str) -> String {
    GroupVersion::parse(api_version)
        .with_kind(kind.to_owned())
        .to_string()
}

/// Each stage of either list once, in the order first seen.
fn union_stages(first: &[Stage], second: &[Stage]) -> Vec<Stage> {
    let mut union: Vec<Stage> = Vec::new();
    for stage in first.iter().chain(second) {
        if !union.contains(stage) {
            union.push(stage.clone());
        }
    }
    union
}

fn validate_omit_stages(stages: &[Stage], path: &Path) -> Vec<FieldError> {
    stages
        .iter()
        .enumerate()
        .filter_map(|(index, stage)| match stage {
            Stage::Unknown(name) => Some(FieldError::invalid(
                path.index(index).to_string(),
                BadValue::Str(name.clone()),
                "allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic",
            )),
            _ => None,
        })
        .collect()
}

impl PolicyRule {
    /// `validatePolicyRule`.
    fn validate(&self, path: &Path) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let level = path.child("level");
        match &self.level {
            Level::Unset => errors.push(FieldError::required(level.to_string(), "")),
            Level::Unknown(name) => errors.push(FieldError::not_supported(
                level.to_string(),
                BadValue::Str(name.clone()),
                &["None", "Metadata", "Request", "RequestResponse"],
            )),
            _ => {}
        }
        let urls = path.child("nonResourceURLs");
        for (index, url) in self.non_resource_urls.iter().enumerate() {
            if url == "*" {
                continue;
            }
            if !url.starts_with('/') {
                errors.push(FieldError::invalid(
                    urls.index(index).to_string(),
                    BadValue::Str(url.clone()),
                    "non-resource URL rules must begin with a '/' character",
                ));
            }
            if !url.is_empty() && url[..url.len() - 1].contains('*') {
                errors.push(FieldError::invalid(
                    urls.index(index).to_string(),
                    BadValue::Str(url.clone()),
                    "non-resource URL wildcards '*' must be the final character of the rule",
                ));
            }
        }
        // Upstream's paths here have no index (`rules[0].resources.group`).
        let resources = path.child("resources");
        for group_resources in &self.resources {
            if !group_resources.group.is_empty() {
                let messages = names::dns1123_subdomain(&group_resources.group);
                if !messages.is_empty() {
                    errors.push(FieldError::invalid(
                        resources.child("group").to_string(),
                        BadValue::Str(group_resources.group.clone()),
                        messages.join(","),
                    ));
                }
            }
            if !group_resources.resource_names.is_empty() && group_resources.resources.is_empty() {
                errors.push(FieldError::invalid(
                    resources.child("resourceNames").to_string(),
                    BadValue::Strings(group_resources.resource_names.clone()),
                    "using resourceNames requires at least one resource",
                ));
            }
        }
        errors.extend(validate_omit_stages(
            &self.omit_stages,
            &path.child("omitStages"),
        ));
        if !self.non_resource_urls.is_empty()
            && (!self.resources.is_empty() || !self.namespaces.is_empty())
        {
            errors.push(FieldError::invalid(
                urls.to_string(),
                BadValue::Strings(self.non_resource_urls.clone()),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        errors
    }

    /// `ruleMatches`.
    fn matches(&self, attributes: &Attributes) -> bool {
        let user = &attributes.user;
        if !self.users.is_empty() && !self.users.contains(&user.name) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !user
                .groups
                .iter()
                .any(|group| self.user_groups.contains(group))
        {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.contains(&attributes.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(attributes);
        }
        if !self.non_resource_urls.is_empty() {
            return !attributes.resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(&attributes.path, spec));
        }
        true
    }

    /// `ruleMatchesResource`.
    fn matches_resource(&self, attributes: &Attributes) -> bool {
        if !attributes.resource_request {
            return false;
        }
        if !self.namespaces.is_empty() && !self.namespaces.contains(&attributes.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let resource = attributes.resource.as_str();
        let subresource = attributes.subresource.as_str();
        let combined = if subresource.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}/{subresource}")
        };
        self.resources
            .iter()
            .filter(|group| group.group == attributes.api_group)
            .any(|group| {
                if group.resources.is_empty() {
                    return true;
                }
                let named = group.resource_names.is_empty()
                    || group.resource_names.contains(&attributes.name);
                named
                    && group.resources.iter().any(|spec| {
                        spec == &combined
                            || spec == "*"
                            || (!subresource.is_empty()
                                && spec.strip_prefix("*/") == Some(subresource))
                            || spec.strip_suffix("/*") == Some(resource)
                    })
            })
    }
}

/// `pathMatches`: `*`, the path itself, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || (spec.ends_with('*') && path.starts_with(spec.trim_end_matches('*')))
}

#[cfg(test)]
mod tests;
