//! ClusterRole aggregation, as kube-controller-manager's `clusterrole-aggregation`
//! controller does it (kubernetes `pkg/controller/clusterroleaggregation`): a ClusterRole
//! with an `aggregationRule` holds the rules of every other ClusterRole one of its selectors
//! matches, in selector order then name order, each rule once.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether `labels` match `selector` (apimachinery's `LabelSelectorAsSelector`): every
/// `matchLabels` pair, and every expression (`In`, `NotIn`, `Exists`, `DoesNotExist`); an
/// expression of another operator matches nothing, as a selector that does not parse.
pub fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let pairs = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    let expressions = selector.match_expressions.iter().flatten().all(|expr| {
        let values = expr.values.as_deref().unwrap_or_default();
        let value = labels.get(&expr.key);
        match expr.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    pairs && expressions
}

/// The rules `role` aggregates from `roles`, or `None` when it has no aggregation rule
/// (`syncClusterRole`).
pub fn aggregated_rules(role: &ClusterRole, roles: &[&ClusterRole]) -> Option<Vec<PolicyRule>> {
    let selectors = role
        .aggregation_rule
        .as_ref()?
        .cluster_role_selectors
        .as_deref()?;
    let mut sorted: Vec<&&ClusterRole> = roles.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let empty = BTreeMap::new();
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in selectors {
        for other in &sorted {
            if other.metadata.name == role.metadata.name {
                continue;
            }
            let labels = other.metadata.labels.as_ref().unwrap_or(&empty);
            if !selector_matches(selector, labels) {
                continue;
            }
            for rule in other.rules.iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Some(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::AggregationRule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, ObjectMeta};

    fn role(name: &str, labels: &[(&str, &str)], verbs: &[&str]) -> ClusterRole {
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).into(), (*v).into()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            rules: Some(
                verbs
                    .iter()
                    .map(|verb| PolicyRule {
                        verbs: vec![(*verb).into()],
                        non_resource_urls: Some(vec!["/x".into()]),
                        ..PolicyRule::default()
                    })
                    .collect(),
            ),
            aggregation_rule: None,
        }
    }

    fn by_label(key: &str) -> LabelSelector {
        LabelSelector {
            match_labels: Some(BTreeMap::from([(key.into(), "true".into())])),
            match_expressions: None,
        }
    }

    /// As kubernetes' `TestSyncClusterRole` (`clusterroleaggregation_controller_test.go`):
    /// rules of the matching roles, in name order, without duplicates and without the role's
    /// own; a role without an aggregation rule is left alone.
    #[test]
    fn aggregated_roles_hold_the_rules_of_the_roles_they_select() {
        let mut admin = role("admin", &[], &[]);
        admin.aggregation_rule = Some(AggregationRule {
            cluster_role_selectors: Some(vec![by_label("a"), by_label("b")]),
        });
        let one = role("one", &[("a", "true")], &["get", "list"]);
        let two = role("two", &[("a", "true"), ("b", "true")], &["list", "watch"]);
        let other = role("other", &[("a", "false")], &["delete"]);
        let all = [&admin, &two, &one, &other];
        let verbs: Vec<String> = aggregated_rules(&admin, &all)
            .unwrap()
            .into_iter()
            .map(|r| r.verbs[0].clone())
            .collect();
        assert_eq!(verbs, ["get", "list", "watch"]);
        assert_eq!(aggregated_rules(&one, &all), None);
    }

    #[test]
    fn selectors_match_as_apimachinery_matches_them() {
        let labels: BTreeMap<String, String> =
            BTreeMap::from([("tier".into(), "web".into()), ("env".into(), "prod".into())]);
        let expression = |op: &str, values: &[&str]| LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: op.into(),
                values: Some(values.iter().map(|v| (*v).into()).collect()),
            }]),
        };
        assert!(selector_matches(&expression("In", &["web", "db"]), &labels));
        assert!(!selector_matches(&expression("NotIn", &["web"]), &labels));
        assert!(selector_matches(&expression("Exists", &[]), &labels));
        assert!(!selector_matches(&expression("DoesNotExist", &[]), &labels));
        assert!(!selector_matches(&expression("Gt", &["1"]), &labels));
        assert!(selector_matches(&LabelSelector::default(), &labels));
        assert!(!selector_matches(&by_label("env"), &labels));
    }
}
