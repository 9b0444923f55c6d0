//! RBAC's guard against privilege escalation, as kube-apiserver's RBAC storage applies it on
//! every write of a role or binding (kubernetes `pkg/registry/rbac/*/policybased/storage.go`,
//! `pkg/registry/rbac/escalation_check.go` and `validation.ConfirmNoEscalation`): a user may
//! write a role only with rules it holds itself, unless it may `escalate` roles (or is in
//! `system:masters`); an aggregated ClusterRole needs every right there is; and it may bind a
//! role only if it holds the role's rules, unless it may `bind` that role.

use apfkit_apiserver::auth::{MASTERS, UserInfo};
use apfkit_apiserver::authz::Attributes;
use apfkit_apiserver::error::{ApiError, Subject};
use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};

use crate::policy::{Policy, RbacAuthorizer};
use crate::rules::{compact_string, covers};
use crate::validation::GROUP;

/// `EscalationAllowed`: `system:masters` writes anything.
fn escalation_allowed(user: &UserInfo) -> bool {
    user.in_group(MASTERS)
}

/// Whether `user` may do `verb` to the RBAC object `resource`/`name` in `namespace`.
fn may(
    authorizer: &RbacAuthorizer,
    user: &UserInfo,
    verb: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> bool {
    authorizer
        .decide(&Attributes {
            user: user.clone(),
            verb: verb.to_owned(),
            resource_request: true,
            api_group: GROUP.to_owned(),
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            ..Attributes::default()
        })
        .allowed()
}

/// `CompactRules`: rules of one group and one resource (and at most one name), nothing
/// else, merged into one rule with all their verbs; the others as they are.
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut compacted: Vec<PolicyRule> = Vec::new();
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let one = |list: &Option<Vec<String>>| list.as_ref().is_some_and(|l| l.len() == 1);
        let is_simple = one(&rule.api_groups)
            && one(&rule.resources)
            && rule.resource_names.as_ref().is_none_or(|n| n.len() <= 1)
            && rule.non_resource_urls.as_ref().is_none_or(Vec::is_empty);
        if !is_simple {
            compacted.push(rule);
            continue;
        }
        match simple.iter_mut().find(|s| {
            s.api_groups == rule.api_groups
                && s.resources == rule.resources
                && s.resource_names == rule.resource_names
        }) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => simple.push(rule),
        }
    }
    compacted.extend(simple);
    compacted
}

/// `ConfirmNoEscalation`: `Ok` when the rules `user` holds in `namespace` cover `rules`;
/// else the message kube-apiserver gives (each missing rule once, sorted).
pub fn confirm_no_escalation(
    policy: &Policy,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owned, errors) = policy.rules_for(user, namespace);
    let (covered, missing) = covers(&owned, rules);
    if covered {
        return Ok(());
    }
    let mut lines: Vec<String> = compact(missing).iter().map(compact_string).collect();
    lines.sort();
    lines.dedup();
    let groups: Vec<String> = user
        .groups
        .iter()
        .map(|g| apfkit_runtime::field::go_quote(g))
        .collect();
    let mut message = format!(
        "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        apfkit_runtime::field::go_quote(&user.name),
        groups.join(" "),
        lines.join("\n")
    );
    if !errors.is_empty() {
        message.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(message)
}

/// Every right there is: what an aggregated ClusterRole may come to hold.
fn full_authority() -> Vec<PolicyRule> {
    let all = || Some(vec!["*".to_owned()]);
    vec![
        PolicyRule {
            verbs: vec!["*".to_owned()],
            api_groups: all(),
            resources: all(),
            ..PolicyRule::default()
        },
        PolicyRule {
            verbs: vec!["*".to_owned()],
            non_resource_urls: all(),
            ..PolicyRule::default()
        },
    ]
}

fn forbidden(resource: &str, name: &str, why: &str) -> ApiError {
    ApiError::forbidden(
        &Subject {
            group: GROUP.to_owned(),
            kind: resource.to_owned(),
            name: name.to_owned(),
        },
        why,
    )
}

/// A role (`resource` `roles` or `clusterroles`) about to be written by `user`: its rules
/// (and, for an aggregated ClusterRole, every right) must be `user`'s, unless `user` may
/// `escalate`.
///
/// # Errors
///
/// kube-apiserver's 403.
pub fn check_role(
    authorizer: &RbacAuthorizer,
    user: &UserInfo,
    resource: &str,
    namespace: &str,
    name: &str,
    rules: &[PolicyRule],
    aggregated: bool,
) -> Result<(), ApiError> {
    if escalation_allowed(user) || may(authorizer, user, "escalate", resource, namespace, name) {
        return Ok(());
    }
    let policy = authorizer.policy();
    let wanted = if aggregated {
        full_authority()
    } else {
        rules.to_vec()
    };
    confirm_no_escalation(&policy, user, namespace, &wanted)
        .map_err(|why| forbidden(resource, name, &why))
}

/// A binding (`resource` `rolebindings` or `clusterrolebindings`) about to be written by
/// `user`: `user` may `bind` the role it refers to, or holds the role's rules
/// (`BindingAuthorized`, then `ConfirmNoEscalation`).
///
/// # Errors
///
/// kube-apiserver's 403; 404 when the role is not there (the lister's NotFound).
pub fn check_binding(
    authorizer: &RbacAuthorizer,
    user: &UserInfo,
    resource: &str,
    namespace: &str,
    name: &str,
    role: &RoleRef,
) -> Result<(), ApiError> {
    if escalation_allowed(user) {
        return Ok(());
    }
    let role_resource = match role.kind.as_str() {
        "ClusterRole" => "clusterroles",
        "Role" => "roles",
        _ => "",
    };
    if !role_resource.is_empty()
        && may(
            authorizer,
            user,
            "bind",
            role_resource,
            namespace,
            &role.name,
        )
    {
        return Ok(());
    }
    let policy = authorizer.policy();
    let rules = policy
        .role_reference_rules(role, namespace)
        .map_err(|_| {
            ApiError::not_found(&Subject {
                group: GROUP.to_owned(),
                kind: role.kind.to_lowercase(),
                name: role.name.clone(),
            })
        })?
        .to_vec();
    confirm_no_escalation(&policy, user, namespace, &rules)
        .map_err(|why| forbidden(resource, name, &why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Subject as RbacSubject};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn rule(verbs: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            api_groups: Some(vec!["flowcontrol.apiserver.k8s.io".to_owned()]),
            resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
            ..PolicyRule::default()
        }
    }

    fn bob() -> UserInfo {
        UserInfo {
            name: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        }
    }

    /// bob holds get/list on flowschemas through a binding, and bind on the role "viewer".
    fn authorizer() -> RbacAuthorizer {
        let role = |name: &str, rules: Vec<PolicyRule>| ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            rules: Some(rules),
            aggregation_rule: None,
        };
        let binding = |name: &str, role: &str| ClusterRoleBinding {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            role_ref: RoleRef {
                api_group: Some(GROUP.into()),
                kind: "ClusterRole".into(),
                name: role.into(),
            },
            subjects: Some(vec![RbacSubject {
                api_group: Some(GROUP.into()),
                kind: "User".into(),
                name: "bob".into(),
                namespace: None,
            }]),
        };
        let binder = PolicyRule {
            verbs: vec!["bind".into()],
            api_groups: Some(vec![GROUP.into()]),
            resources: Some(vec!["clusterroles".into()]),
            resource_names: Some(vec!["viewer".into()]),
            non_resource_urls: None,
        };
        RbacAuthorizer::new(Policy::new(
            [],
            [],
            [
                role("reader", vec![rule(&["get", "list"], &["flowschemas"])]),
                role("binder", vec![binder]),
                role("viewer", vec![rule(&["*"], &["*"])]),
                role(
                    "deleter",
                    vec![rule(&["delete", "create"], &["flowschemas"])],
                ),
            ],
            [
                binding("bob-reads", "reader"),
                binding("bob-binds", "binder"),
            ],
        ))
    }

    /// As kubernetes' `ConfirmNoEscalation` answers: a role within what bob holds may be
    /// written; one beyond it is refused naming each missing right, compacted by verb.
    #[test]
    fn a_role_is_written_only_with_rules_its_writer_holds() {
        let authorizer = authorizer();
        let within = [rule(&["get"], &["flowschemas"])];
        check_role(
            &authorizer,
            &bob(),
            "clusterroles",
            "",
            "mine",
            &within,
            false,
        )
        .unwrap();
        let beyond = [rule(&["get", "delete", "patch"], &["flowschemas"])];
        let refused = check_role(
            &authorizer,
            &bob(),
            "clusterroles",
            "",
            "mine",
            &beyond,
            false,
        )
        .unwrap_err();
        assert_eq!(refused.code, 403);
        assert_eq!(
            refused.message,
            "clusterroles.rbac.authorization.k8s.io \"mine\" is forbidden: user \"bob\" \
             (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not \
             currently held:\n{APIGroups:[\"flowcontrol.apiserver.k8s.io\"], \
             Resources:[\"flowschemas\"], Verbs:[\"delete\" \"patch\"]}"
        );
        // An aggregated role needs every right.
        assert_eq!(
            check_role(&authorizer, &bob(), "clusterroles", "", "agg", &[], true)
                .unwrap_err()
                .code,
            403
        );
        // system:masters may write anything.
        let admin = UserInfo {
            groups: vec![MASTERS.into()],
            ..bob()
        };
        check_role(
            &authorizer,
            &admin,
            "clusterroles",
            "",
            "mine",
            &beyond,
            true,
        )
        .unwrap();
    }

    #[test]
    fn a_binding_needs_the_roles_rules_or_bind() {
        let authorizer = authorizer();
        let role = |name: &str| RoleRef {
            api_group: Some(GROUP.into()),
            kind: "ClusterRole".into(),
            name: name.into(),
        };
        // Holds the reader's rules.
        check_binding(
            &authorizer,
            &bob(),
            "clusterrolebindings",
            "",
            "b",
            &role("reader"),
        )
        .unwrap();
        // May bind viewer (every right) by the bind verb.
        check_binding(
            &authorizer,
            &bob(),
            "clusterrolebindings",
            "",
            "b",
            &role("viewer"),
        )
        .unwrap();
        // Neither for deleter.
        let refused = check_binding(
            &authorizer,
            &bob(),
            "clusterrolebindings",
            "",
            "b",
            &role("deleter"),
        )
        .unwrap_err();
        assert_eq!(refused.code, 403);
        assert!(
            refused.message.contains("Verbs:[\"delete\" \"create\"]"),
            "{}",
            refused.message
        );
        let missing = check_binding(
            &authorizer,
            &bob(),
            "clusterrolebindings",
            "",
            "b",
            &role("gone"),
        )
        .unwrap_err();
        assert_eq!(
            (missing.code, missing.message.as_str()),
            (
                404,
                "clusterrole.rbac.authorization.k8s.io \"gone\" not found"
            )
        );
    }
}
