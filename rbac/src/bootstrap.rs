//! kube-apiserver's bootstrap roles and bindings that concern what this server serves, and
//! how it reconciles them at start (kubernetes
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`, whose output upstream keeps
//! in `testdata/cluster-roles.yaml` and `cluster-role-bindings.yaml`; reconciliation in
//! `pkg/registry/rbac/reconciliation`): a missing object is created; one whose
//! `rbac.authorization.kubernetes.io/autoupdate` annotation is not `false` gets what it
//! lacks (labels, annotations, rules, aggregation selectors, subjects), nothing taken away; a
//! binding whose role reference changed is made again.
//!
//! The policy is kube-apiserver 1.37's own, read from upstream's files (`data/bootstrappolicy`):
//! every role and binding of its cluster, the components' and controllers' included, with
//! their rules on kinds this server does not serve.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, Role, RoleBinding,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::rules::covers;

/// The annotation that lets the server keep a bootstrap object up to date (`"true"`), or not
/// (`"false"`).
pub const AUTO_UPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// The label of every bootstrap object.
pub const BOOTSTRAPPING: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");

/// kube-apiserver's bootstrap policy as upstream's tests keep it (`data/bootstrappolicy`,
/// unmodified): a `List` of objects in YAML.
const CLUSTER_ROLES: &str = include_str!("../data/bootstrappolicy/cluster-roles.yaml");
const CONTROLLER_ROLES: &str = include_str!("../data/bootstrappolicy/controller-roles.yaml");
const CLUSTER_ROLE_BINDINGS: &str =
    include_str!("../data/bootstrappolicy/cluster-role-bindings.yaml");
const CONTROLLER_ROLE_BINDINGS: &str =
    include_str!("../data/bootstrappolicy/controller-role-bindings.yaml");
const NAMESPACE_ROLES: &str = include_str!("../data/bootstrappolicy/namespace-roles.yaml");
const NAMESPACE_ROLE_BINDINGS: &str =
    include_str!("../data/bootstrappolicy/namespace-role-bindings.yaml");

/// A `v1` `List`'s items.
#[derive(serde::Deserialize)]
struct List<T> {
    items: Vec<T>,
}

/// The items of the lists `documents`, in their order. The documents are this crate's own,
/// read in its tests, so they always parse.
fn items<T: serde::de::DeserializeOwned>(documents: &[&str]) -> Vec<T> {
    documents
        .iter()
        .flat_map(|document| {
            serde_saphyr::from_str::<List<T>>(document)
                .map(|list| list.items)
                .unwrap_or_default()
        })
        .collect()
}

/// The bootstrap policy, read once a process.
pub(crate) struct Policy {
    pub(crate) cluster_roles: Vec<ClusterRole>,
    pub(crate) cluster_role_bindings: Vec<ClusterRoleBinding>,
    /// The Roles, held as ClusterRoles.
    pub(crate) roles: Vec<ClusterRole>,
    /// The RoleBindings, held as ClusterRoleBindings.
    pub(crate) role_bindings: Vec<ClusterRoleBinding>,
}

/// The policy of upstream's files, parsed at its first use (a few milliseconds of YAML that
/// every server started in the process would otherwise pay again).
pub(crate) fn policy() -> &'static Policy {
    static POLICY: std::sync::LazyLock<Policy> = std::sync::LazyLock::new(|| Policy {
        cluster_roles: items(&[CLUSTER_ROLES, CONTROLLER_ROLES]),
        cluster_role_bindings: items(&[CLUSTER_ROLE_BINDINGS, CONTROLLER_ROLE_BINDINGS]),
        roles: items::<Role>(&[NAMESPACE_ROLES])
            .into_iter()
            .map(|role| ClusterRole {
                metadata: role.metadata,
                rules: role.rules,
                aggregation_rule: None,
            })
            .collect(),
        role_bindings: items::<RoleBinding>(&[NAMESPACE_ROLE_BINDINGS])
            .into_iter()
            .map(|binding| ClusterRoleBinding {
                metadata: binding.metadata,
                role_ref: binding.role_ref,
                subjects: binding.subjects,
            })
            .collect(),
    });
    &POLICY
}

/// The bootstrap ClusterRoles, as kube-apiserver's RBAC post-start hook makes them:
/// `bootstrappolicy.ClusterRoles()` then `ControllerRoles()`, each in name order.
pub fn cluster_roles() -> Vec<ClusterRole> {
    policy().cluster_roles.clone()
}

/// The bootstrap ClusterRoleBindings: `ClusterRoleBindings()` then
/// `ControllerRoleBindings()`, each in name order.
pub fn cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    policy().cluster_role_bindings.clone()
}

/// The bootstrap Roles of `kube-system` and `kube-public` (`NamespaceRoles()`), each held as
/// the ClusterRole of the same metadata and rules, as reconciliation reads them.
pub fn roles() -> Vec<ClusterRole> {
    policy().roles.clone()
}

/// The bootstrap RoleBindings (`NamespaceRoleBindings()`), held as ClusterRoleBindings.
pub fn role_bindings() -> Vec<ClusterRoleBinding> {
    policy().role_bindings.clone()
}

/// Whether the server may change a stored bootstrap object: unless its auto-update
/// annotation says `false`.
pub fn auto_updates(meta: &ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(AUTO_UPDATE))
        .is_none_or(|value| value != "false")
}

/// `existing` with what `expected` has and it lacks: map entries added, the existing ones
/// kept.
fn merge_map(
    existing: &Option<BTreeMap<String, String>>,
    expected: &Option<BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    let mut merged = existing.clone().unwrap_or_default();
    for (key, value) in expected.iter().flatten() {
        merged.entry(key.clone()).or_insert_with(|| value.clone());
    }
    (!merged.is_empty()).then_some(merged)
}

/// The stored role brought up to date with the bootstrap one (`computeReconciledRole`
/// without removing anything), or `None` when nothing is missing.
pub fn reconcile_role(existing: &ClusterRole, expected: &ClusterRole) -> Option<ClusterRole> {
    let mut role = existing.clone();
    role.metadata.labels = merge_map(&existing.metadata.labels, &expected.metadata.labels);
    role.metadata.annotations = merge_map(
        &existing.metadata.annotations,
        &expected.metadata.annotations,
    );
    match &expected.aggregation_rule {
        Some(expected_rule) => {
            let mut selectors = existing
                .aggregation_rule
                .as_ref()
                .and_then(|r| r.cluster_role_selectors.clone())
                .unwrap_or_default();
            for selector in expected_rule.cluster_role_selectors.iter().flatten() {
                if !selectors.contains(selector) {
                    selectors.push(selector.clone());
                }
            }
            role.aggregation_rule = Some(AggregationRule {
                cluster_role_selectors: Some(selectors),
            });
        }
        None => {
            let current = existing.rules.clone().unwrap_or_default();
            let (_, missing) = covers(&current, expected.rules.as_deref().unwrap_or_default());
            if !missing.is_empty() {
                let mut rules = current;
                rules.extend(missing);
                role.rules = Some(rules);
            }
        }
    }
    (role != *existing).then_some(role)
}

/// What becomes of a stored bootstrap binding.
#[derive(Debug, Clone, PartialEq)]
pub enum BindingChange {
    /// Up to date.
    None,
    /// Written with what it lacked.
    Update(ClusterRoleBinding),
    /// Its role reference is not the bootstrap one: deleted and made again (a binding's
    /// role reference cannot change).
    Recreate(ClusterRoleBinding),
}

/// The stored binding brought up to date (`computeReconciledRoleBinding` without removing
/// subjects).
pub fn reconcile_binding(
    existing: &ClusterRoleBinding,
    expected: &ClusterRoleBinding,
) -> BindingChange {
    let mut binding = existing.clone();
    binding.metadata.labels = merge_map(&existing.metadata.labels, &expected.metadata.labels);
    binding.metadata.annotations = merge_map(
        &existing.metadata.annotations,
        &expected.metadata.annotations,
    );
    let mut subjects = existing.subjects.clone().unwrap_or_default();
    for subject in expected.subjects.iter().flatten() {
        if !subjects.contains(subject) {
            subjects.push(subject.clone());
        }
    }
    binding.subjects = Some(subjects);
    if existing.role_ref != expected.role_ref {
        binding.role_ref = expected.role_ref.clone();
        binding.metadata.resource_version = None;
        return BindingChange::Recreate(binding);
    }
    if binding == *existing {
        BindingChange::None
    } else {
        BindingChange::Update(binding)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::rbac::v1::{PolicyRule, Subject};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    use super::*;
    use crate::validation::GROUP;

    fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            non_resource_urls: Some(urls.iter().map(|u| (*u).to_owned()).collect()),
            ..PolicyRule::default()
        }
    }

    #[test]
    fn the_namespaced_policy_is_kube_systems_and_kube_publics() {
        let roles = roles();
        let bindings = role_bindings();
        assert_eq!((roles.len(), bindings.len()), (7, 7));
        for meta in roles
            .iter()
            .map(|r| &r.metadata)
            .chain(bindings.iter().map(|b| &b.metadata))
        {
            assert!(
                matches!(
                    meta.namespace.as_deref(),
                    Some("kube-system" | "kube-public")
                ),
                "{meta:?}"
            );
            assert_eq!(
                meta.labels.as_ref().unwrap()[BOOTSTRAPPING.0],
                BOOTSTRAPPING.1
            );
        }
        // Each binding names a role of its own namespace, or a cluster role.
        for binding in &bindings {
            let by_role = binding.role_ref.kind == "Role";
            assert!(
                !by_role
                    || roles
                        .iter()
                        .any(|r| r.metadata.name.as_ref() == Some(&binding.role_ref.name)
                            && r.metadata.namespace == binding.metadata.namespace),
                "{binding:?}"
            );
        }
        assert!(
            roles.iter().any(
                |r| r.metadata.name.as_deref() == Some("system::leader-locking-kube-scheduler")
            )
        );
    }

    #[test]
    fn every_bootstrap_object_is_labelled_annotated_and_valid() {
        for role in cluster_roles() {
            assert_eq!(
                role.metadata.labels.as_ref().unwrap()[BOOTSTRAPPING.0],
                BOOTSTRAPPING.1
            );
            assert!(auto_updates(&role.metadata));
            assert!(
                crate::validation::cluster_role(&role).is_empty(),
                "{role:?}"
            );
        }
        let roles: Vec<String> = cluster_roles()
            .into_iter()
            .map(|r| r.metadata.name.unwrap())
            .collect();
        for binding in cluster_role_bindings() {
            assert!(roles.contains(&binding.role_ref.name));
            assert!(crate::validation::cluster_role_binding(&binding, None).is_empty());
        }
        // Every object of upstream's files is read: 32 cluster roles and 41 controllers',
        // 13 cluster bindings and 41 controllers', each file in name order.
        assert_eq!(
            (roles.len(), cluster_role_bindings().len()),
            (32 + 41, 13 + 41)
        );
        for part in [&roles[..32], &roles[32..]] {
            assert!(part.is_sorted(), "{part:?}");
        }
        assert!(roles.contains(&"system:kube-scheduler".to_owned()));
        assert!(roles.contains(&"system:controller:namespace-controller".to_owned()));
    }

    /// As kubernetes' `computeReconciledRole` with `RemoveExtraPermissions` off (what
    /// `EnsureRBACPolicy` asks for): missing rules, labels, annotations and selectors are
    /// added and nothing taken away.
    #[test]
    fn reconciling_adds_what_is_missing_and_keeps_the_rest() {
        let expected = cluster_roles()
            .into_iter()
            .find(|r| r.metadata.name.as_deref() == Some("system:basic-user"))
            .unwrap();
        assert_eq!(reconcile_role(&expected, &expected), None);
        let mut changed = expected.clone();
        changed.rules = Some(vec![url_rule(&["get"], &["/extra"])]);
        changed
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("mine".into(), "yes".into());
        let reconciled = reconcile_role(&changed, &expected).unwrap();
        let rules = reconciled.rules.unwrap();
        assert_eq!(rules[0], url_rule(&["get"], &["/extra"]));
        // The missing rules come broken down, as upstream appends them.
        assert_eq!(rules.len(), 1 + 3);
        assert_eq!(reconciled.metadata.labels.unwrap()["mine"], "yes");

        let admin = cluster_roles().into_iter().next().unwrap();
        let mut stored = admin.clone();
        stored.aggregation_rule = Some(AggregationRule {
            cluster_role_selectors: Some(vec![LabelSelector {
                match_labels: Some(BTreeMap::from([("other".into(), "true".into())])),
                match_expressions: None,
            }]),
        });
        stored.rules = Some(vec![url_rule(&["get"], &["/aggregated"])]);
        let reconciled = reconcile_role(&stored, &admin).unwrap();
        assert_eq!(
            reconciled
                .aggregation_rule
                .unwrap()
                .cluster_role_selectors
                .unwrap()
                .len(),
            2
        );
        // An aggregated role's rules are the controller's: untouched here.
        assert_eq!(reconciled.rules, stored.rules);
    }

    #[test]
    fn a_binding_gets_its_missing_subjects_or_is_made_again() {
        let expected = cluster_role_bindings()
            .into_iter()
            .find(|b| b.metadata.name.as_deref() == Some("system:public-info-viewer"))
            .unwrap();
        assert_eq!(reconcile_binding(&expected, &expected), BindingChange::None);
        let mut fewer = expected.clone();
        fewer.subjects.as_mut().unwrap().truncate(1);
        fewer.subjects.as_mut().unwrap().push(Subject {
            api_group: Some(GROUP.into()),
            kind: "User".into(),
            name: "alice".into(),
            namespace: None,
        });
        let BindingChange::Update(updated) = reconcile_binding(&fewer, &expected) else {
            panic!("expected an update");
        };
        let names: Vec<&str> = updated
            .subjects
            .as_ref()
            .unwrap()
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["system:authenticated", "alice", "system:unauthenticated"]
        );
        let mut elsewhere = expected.clone();
        elsewhere.role_ref.name = "cluster-admin".into();
        assert!(matches!(
            reconcile_binding(&elsewhere, &expected),
            BindingChange::Recreate(binding) if binding.role_ref == expected.role_ref
        ));
    }
}
