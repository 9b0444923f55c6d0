//! What changed between Kubernetes releases in API Priority and Fairness, for the releases
//! apfkit models: 1.33 to 1.37. Each difference was read from k8s.io/apiserver at the release's
//! tag (`kubernetes-1.33.0` … `kubernetes-1.36.0`, and v0.37.2 for 1.37):
//!
//! | release | bootstrap (`pkg/apis/flowcontrol/bootstrap/default.go`) | LIST and WATCH estimates (`pkg/features/kube_features.go`, `pkg/util/flowcontrol/request`) |
//! |---|---|---|
//! | 1.33 | suggested FlowSchemas `endpoint-controller` (150) and `workload-leader-election` (200) | count-based list costs, at most 10 seats; `WatchList` off |
//! | 1.34 | both removed | `SizeBasedListCostEstimate` on: one seat per 100 KB, at most 100; `WatchList` on |
//! | 1.35, 1.36 | as 1.34 | a legacy watch (`resourceVersion` unset or `0`) costed like a list |
//! | 1.37 | as 1.34 | as 1.35 (only `pkg/util/flowcontrol/metrics` changed: the deprecated gauges `request_concurrency_limit` and `request_concurrency_in_use` removed, as from apfkit's metrics, which are the newest release's) |

use std::fmt;

use apfkit_scheme::scheme::{HubObject, SCHEME, UnknownFields};
use apfkit_types::hub::flowcontrol::{FlowSchema, PriorityLevelConfiguration};

use crate::bootstrap;
use crate::config::{ConfigError, Configuration};
use crate::estimate::EstimatorConfig;

/// A Kubernetes minor release, `1.MINOR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    minor: u32,
}

/// A release apfkit does not model, or text that is not a release.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Kubernetes version {given:?}: {why} (apfkit models 1.{}–1.{})",
    Release::OLDEST.minor,
    Release::NEWEST.minor
)]
pub struct ReleaseError {
    given: String,
    why: &'static str,
}

/// The suggested FlowSchemas 1.34 removed (kubernetes commit 2800c16c8b97), as 1.33 defines
/// them, in v1.
const REMOVED_IN_1_34: &str = r#"
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: endpoint-controller
  annotations:
    apf.kubernetes.io/autoupdate-spec: "true"
spec:
  priorityLevelConfiguration:
    name: workload-high
  matchingPrecedence: 150
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: User
      user:
        name: system:kube-controller-manager
    - kind: ServiceAccount
      serviceAccount:
        namespace: kube-system
        name: endpoint-controller
    - kind: ServiceAccount
      serviceAccount:
        namespace: kube-system
        name: endpointslicemirroring-controller
    resourceRules:
    - verbs: [get, create, update]
      apiGroups: [""]
      resources: [endpoints]
      namespaces: ["*"]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: workload-leader-election
  annotations:
    apf.kubernetes.io/autoupdate-spec: "true"
spec:
  priorityLevelConfiguration:
    name: leader-election
  matchingPrecedence: 200
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: ServiceAccount
      serviceAccount:
        namespace: kube-system
        name: "*"
    resourceRules:
    - verbs: [get, create, update]
      apiGroups: [""]
      resources: [endpoints, configmaps]
      namespaces: ["*"]
    - verbs: [get, create, update]
      apiGroups: [coordination.k8s.io]
      resources: [leases]
      namespaces: ["*"]
"#;

impl Release {
    /// The oldest release modelled.
    pub const OLDEST: Release = Release { minor: 33 };
    /// The newest release modelled, and the default.
    pub const NEWEST: Release = Release { minor: 37 };

    /// Reads `1.33`, `v1.33`, `v1.33.4`, or a server's `gitVersion` such as `v1.33.4-gke.100`
    /// or `v1.35.0-apfkit.0.1.0`.
    ///
    /// # Errors
    ///
    /// Text that is not a 1.x version, or a release outside [`Release::OLDEST`] to
    /// [`Release::NEWEST`].
    pub fn parse(text: &str) -> Result<Release, ReleaseError> {
        let error = |why| ReleaseError {
            given: text.to_owned(),
            why,
        };
        let version = text.strip_prefix('v').unwrap_or(text);
        let rest = version
            .strip_prefix("1.")
            .ok_or_else(|| error("not a 1.x version"))?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .map_or(rest, |end| &rest[..end]);
        let after = &rest[digits.len()..];
        if digits.is_empty() || !(after.is_empty() || after.starts_with(['.', '-', '+'])) {
            return Err(error("not a 1.x version"));
        }
        let minor: u32 = digits.parse().map_err(|_| error("not a 1.x version"))?;
        let release = Release { minor };
        if release < Release::OLDEST || release > Release::NEWEST {
            return Err(error("not a release apfkit models"));
        }
        Ok(release)
    }

    /// The minor version.
    pub fn minor(self) -> u32 {
        self.minor
    }

    /// The bootstrap FlowSchemas of this release (mandatory and suggested) as v1 documents,
    /// in matching order.
    pub fn flow_schema_documents(self) -> Vec<serde_json::Value> {
        let mut documents = documents(bootstrap::FLOW_SCHEMAS_YAML);
        if self.minor <= 33 {
            documents.extend(documents_of_removed());
            // Stable: schemas of equal precedence keep upstream's order (by name).
            documents.sort_by_key(|d| d["spec"]["matchingPrecedence"].as_i64().unwrap_or(1000));
        }
        documents
    }

    /// The bootstrap FlowSchemas of this release (mandatory and suggested), in matching order.
    pub fn flow_schemas(self) -> Vec<FlowSchema> {
        if self.minor >= 34 {
            // The current set, read once for the process.
            return bootstrap::flow_schemas().to_vec();
        }
        self.flow_schema_documents()
            .iter()
            .flat_map(|value| {
                SCHEME
                    .to_hub_value(value, UnknownFields::Strict)
                    .unwrap_or_else(|e| unreachable!("embedded FlowSchema: {e}"))
                    .0
            })
            .filter_map(|o| match o {
                HubObject::FlowSchema(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    /// The bootstrap PriorityLevelConfigurations of this release (the same from 1.33 on).
    pub fn priority_levels(self) -> &'static [PriorityLevelConfiguration] {
        bootstrap::priority_levels()
    }

    /// The release's bootstrap configuration for a server of `server_concurrency_limit`.
    ///
    /// # Errors
    ///
    /// A limit the configuration refuses.
    pub fn kubernetes_default(
        self,
        server_concurrency_limit: i32,
    ) -> Result<Configuration, ConfigError> {
        Configuration::new(
            self.priority_levels().to_vec(),
            self.flow_schemas(),
            server_concurrency_limit,
        )
    }

    /// The work estimator's parameters with the release's feature-gate defaults.
    pub fn estimator_config(self) -> EstimatorConfig {
        let size_based = self.minor >= 34;
        EstimatorConfig {
            size_based_list_cost: size_based,
            maximum_list_seats: if size_based { 100 } else { 10 },
            // On in 1.32, off in 1.33, on again from 1.34.
            watch_list: self.minor != 33,
            legacy_watch_costs: self.minor >= 35,
            ..EstimatorConfig::default()
        }
    }
}

impl Default for Release {
    fn default() -> Self {
        Release::NEWEST
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "1.{}", self.minor)
    }
}

impl std::str::FromStr for Release {
    type Err = ReleaseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Release::parse(text)
    }
}

/// The documents of embedded YAML. Fixed text, tested: a failure is a build defect, not an
/// input error.
fn documents(yaml: &str) -> Vec<serde_json::Value> {
    SCHEME
        .read_documents(yaml.as_bytes())
        .unwrap_or_else(|e| unreachable!("embedded bootstrap YAML: {e}"))
        .into_iter()
        .map(|d| d.value)
        .collect()
}

fn documents_of_removed() -> Vec<serde_json::Value> {
    documents(REMOVED_IN_1_34)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(release: Release) -> Vec<String> {
        release
            .flow_schemas()
            .iter()
            .map(|s| s.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn versions_are_read_as_servers_and_people_write_them() {
        for (text, minor) in [
            ("1.33", 33),
            ("v1.34", 34),
            ("v1.35.2", 35),
            ("v1.33.4-gke.100", 33),
            ("v1.35.0-apfkit.0.1.0", 35),
            ("1.36+", 36),
            ("v1.37.2", 37),
        ] {
            assert_eq!(
                Release::parse(text).map(Release::minor),
                Ok(minor),
                "{text}"
            );
        }
        for text in [
            "",
            "1",
            "1.",
            "2.0",
            "v1.3x",
            "1.32",
            "1.38",
            "1.99999999999",
            "x1.33",
        ] {
            assert!(Release::parse(text).is_err(), "{text}");
        }
        assert_eq!(
            Release::parse("1.32").unwrap_err().to_string(),
            "Kubernetes version \"1.32\": not a release apfkit models (apfkit models 1.33–1.37)"
        );
        assert_eq!(Release::default().to_string(), "1.37");
    }

    /// kubernetes-1.33.0's `SuggestedFlowSchemas` has the two; kubernetes-1.34.0's does not.
    #[test]
    fn release_1_33_has_the_two_flow_schemas_1_34_removed() {
        let old = names(Release::parse("1.33").unwrap());
        let new = names(Release::NEWEST);
        assert_eq!(old.len(), new.len() + 2);
        let system_leader = old.iter().position(|n| n == "system-leader-election");
        let endpoint = old.iter().position(|n| n == "endpoint-controller");
        let workload = old.iter().position(|n| n == "workload-leader-election");
        let node_high = old.iter().position(|n| n == "system-node-high");
        // Matching order: 100, 150, 200, 400.
        assert!(system_leader < endpoint && endpoint < workload && workload < node_high);
        assert!(!new.contains(&"endpoint-controller".to_owned()));
        assert_eq!(names(Release::parse("1.34").unwrap()), new);
        let config = Release::parse("1.33")
            .unwrap()
            .kubernetes_default(600)
            .unwrap();
        assert!(config.skipped().is_empty());
    }

    /// The feature gates' defaults at each tag (`pkg/features/kube_features.go`) and the
    /// legacy-watch rule of kubernetes-1.35.0's list estimator.
    #[test]
    fn estimates_follow_each_releases_gates() {
        let at = |minor| {
            Release::parse(&format!("1.{minor}"))
                .unwrap()
                .estimator_config()
        };
        assert_eq!(
            (
                at(33).size_based_list_cost,
                at(33).maximum_list_seats,
                at(33).watch_list
            ),
            (false, 10, false)
        );
        assert_eq!(
            (
                at(34).size_based_list_cost,
                at(34).maximum_list_seats,
                at(34).watch_list
            ),
            (true, 100, true)
        );
        assert!(!at(34).legacy_watch_costs && at(35).legacy_watch_costs);
        assert_eq!(at(36), EstimatorConfig::default());
        assert_eq!(at(37), at(36));
    }
}
