//! The RBAC objects at one time and what they grant: kubernetes' rule resolver
//! (`pkg/registry/rbac/validation/rule.go`, `DefaultRuleResolver`: the rules of every
//! ClusterRoleBinding that applies to a user, then of the RoleBindings of the request's
//! namespace) and the RBAC authorizer on it (`plugin/pkg/auth/authorizer/rbac/rbac.go`),
//! whose policy the server replaces as the objects change.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use apfkit_apiserver::auth::{UserInfo, service_account};
use apfkit_apiserver::authz::{self, Attributes, Authorizer, Deciding, Decision, Rules, Verdict};
use k8s_openapi::api::authorization::v1::{NonResourceRule, ResourceRule};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use crate::rules::rule_allows;

/// The roles and bindings RBAC decides with.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Roles by namespace and name.
    roles: BTreeMap<(String, String), Role>,
    /// RoleBindings by namespace.
    role_bindings: BTreeMap<String, Bindings<RoleBinding>>,
    /// ClusterRoles by name.
    cluster_roles: BTreeMap<String, ClusterRole>,
    /// ClusterRoleBindings.
    cluster_role_bindings: Bindings<ClusterRoleBinding>,
}

/// Bindings in name order, indexed by their subjects, so that a request visits only the
/// bindings that may apply to its user instead of every binding (kube-apiserver walks them
/// all; the bindings visited, and their order, are the same).
#[derive(Debug, Clone)]
struct Bindings<B> {
    /// The bindings, by name.
    items: Vec<(String, B)>,
    /// The positions of the bindings naming a user, a group, or a service account
    /// (namespace, name).
    by_user: HashMap<String, Vec<usize>>,
    by_group: HashMap<String, Vec<usize>>,
    by_account: HashMap<(String, String), Vec<usize>>,
}

impl<B> Default for Bindings<B> {
    fn default() -> Self {
        Bindings {
            items: Vec::new(),
            by_user: HashMap::new(),
            by_group: HashMap::new(),
            by_account: HashMap::new(),
        }
    }
}

impl<B> Bindings<B> {
    /// `items` (name, binding, subjects) in name order, indexed; a service account without a
    /// namespace is indexed in `namespace` (a RoleBinding's), or not at all.
    fn new(
        mut items: Vec<(String, B)>,
        subjects: impl Fn(&B) -> &[Subject],
        namespace: &str,
    ) -> Self {
        items.sort_by(|a, b| a.0.cmp(&b.0));
        let mut bindings = Bindings {
            items: Vec::new(),
            ..Bindings::default()
        };
        for (index, (_, binding)) in items.iter().enumerate() {
            for subject in subjects(binding) {
                let positions = match subject.kind.as_str() {
                    "User" => bindings.by_user.entry(subject.name.clone()).or_default(),
                    "Group" => bindings.by_group.entry(subject.name.clone()).or_default(),
                    "ServiceAccount" => {
                        let account_namespace = match subject.namespace.as_deref() {
                            Some(ns) if !ns.is_empty() => ns,
                            _ => namespace,
                        };
                        if account_namespace.is_empty() {
                            continue;
                        }
                        bindings
                            .by_account
                            .entry((account_namespace.to_owned(), subject.name.clone()))
                            .or_default()
                    }
                    _ => continue,
                };
                if positions.last() != Some(&index) {
                    positions.push(index);
                }
            }
        }
        bindings.items = items;
        bindings
    }

    /// The bindings that may apply to `user`, in name order.
    fn candidates(&self, user: &UserInfo) -> Vec<&(String, B)> {
        let mut positions: Vec<usize> = Vec::new();
        if let Some(found) = self.by_user.get(&user.name) {
            positions.extend(found);
        }
        for group in &user.groups {
            if let Some(found) = self.by_group.get(group) {
                positions.extend(found);
            }
        }
        if let Some((namespace, name)) = service_account(&user.name)
            && let Some(found) = self
                .by_account
                .get(&(namespace.to_owned(), name.to_owned()))
        {
            positions.extend(found);
        }
        positions.sort_unstable();
        positions.dedup();
        positions.into_iter().map(|i| &self.items[i]).collect()
    }
}

fn name_of(metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    metadata.name.clone().unwrap_or_default()
}

fn namespace_of(metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    metadata.namespace.clone().unwrap_or_default()
}

/// Where a rule came from, as RBAC names it in its reasons: `ClusterRoleBinding "x" of
/// ClusterRole "y" to Group "z"`.
fn describe(
    kind: &str,
    binding: &str,
    role: &RoleRef,
    subject: &Subject,
    namespace: &str,
) -> String {
    let subject = match subject.kind.as_str() {
        "ServiceAccount" => {
            let account_namespace = subject.namespace.as_deref().unwrap_or_default();
            let account_namespace = if account_namespace.is_empty() {
                namespace
            } else {
                account_namespace
            };
            format!(
                "{} {:?}",
                subject.kind,
                format!("{}/{account_namespace}", subject.name)
            )
        }
        _ => format!("{} {:?}", subject.kind, subject.name),
    };
    format!(
        "{kind} {binding:?} of {} {:?} to {subject}",
        role.kind, role.name
    )
}

impl Policy {
    /// A policy of these objects.
    pub fn new(
        roles: impl IntoIterator<Item = Role>,
        role_bindings: impl IntoIterator<Item = RoleBinding>,
        cluster_roles: impl IntoIterator<Item = ClusterRole>,
        cluster_role_bindings: impl IntoIterator<Item = ClusterRoleBinding>,
    ) -> Self {
        let mut policy = Policy::default();
        for role in roles {
            let key = (namespace_of(&role.metadata), name_of(&role.metadata));
            policy.roles.insert(key, role);
        }
        let mut by_namespace: BTreeMap<String, Vec<(String, RoleBinding)>> = BTreeMap::new();
        for binding in role_bindings {
            by_namespace
                .entry(namespace_of(&binding.metadata))
                .or_default()
                .push((name_of(&binding.metadata), binding));
        }
        for (namespace, bindings) in by_namespace {
            let indexed = Bindings::new(
                bindings,
                |b: &RoleBinding| b.subjects.as_deref().unwrap_or_default(),
                &namespace,
            );
            policy.role_bindings.insert(namespace, indexed);
        }
        for role in cluster_roles {
            policy.cluster_roles.insert(name_of(&role.metadata), role);
        }
        policy.cluster_role_bindings = Bindings::new(
            cluster_role_bindings
                .into_iter()
                .map(|b| (name_of(&b.metadata), b))
                .collect(),
            |b: &ClusterRoleBinding| b.subjects.as_deref().unwrap_or_default(),
            "",
        );
        policy
    }

    /// The ClusterRoles.
    pub fn cluster_roles(&self) -> impl Iterator<Item = &ClusterRole> {
        self.cluster_roles.values()
    }

    /// The rules a binding's role reference grants (`GetRoleReferenceRules`): a Role of the
    /// binding's namespace or a ClusterRole; the lister's NotFound words when it is gone.
    ///
    /// # Errors
    ///
    /// `clusterrole.rbac.authorization.k8s.io "x" not found` and the like.
    pub fn role_reference_rules(
        &self,
        role: &RoleRef,
        namespace: &str,
    ) -> Result<&[PolicyRule], String> {
        match role.kind.as_str() {
            "Role" => self
                .roles
                .get(&(namespace.to_owned(), role.name.clone()))
                .map(|role| role.rules.as_deref().unwrap_or_default())
                .ok_or_else(|| format!("role.rbac.authorization.k8s.io {:?} not found", role.name)),
            "ClusterRole" => self
                .cluster_roles
                .get(&role.name)
                .map(|role| role.rules.as_deref().unwrap_or_default())
                .ok_or_else(|| {
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {:?} not found",
                        role.name
                    )
                }),
            other => Err(format!("unsupported role reference kind: {other:?}")),
        }
    }

    /// Calls `visit` with each rule that applies to `user` in `namespace` and where it came
    /// from, and with each error found resolving them; stops when `visit` answers false
    /// (`VisitRulesFor`). Cluster bindings first, in name order; then the namespace's.
    pub fn visit_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(Option<&dyn Fn() -> String>, Option<&PolicyRule>, Option<String>) -> bool,
    ) {
        for (name, binding) in self.cluster_role_bindings.candidates(user) {
            let subjects = binding.subjects.as_deref().unwrap_or_default();
            let Some(subject) = subjects.iter().find(|s| applies_to(user, s, "")) else {
                continue;
            };
            match self.role_reference_rules(&binding.role_ref, "") {
                Err(error) => {
                    if !visit(None, None, Some(error)) {
                        return;
                    }
                }
                Ok(rules) => {
                    let source =
                        || describe("ClusterRoleBinding", name, &binding.role_ref, subject, "");
                    for rule in rules {
                        if !visit(Some(&source), Some(rule), None) {
                            return;
                        }
                    }
                }
            }
        }
        if namespace.is_empty() {
            return;
        }
        let Some(bindings) = self.role_bindings.get(namespace) else {
            return;
        };
        for (name, binding) in bindings.candidates(user) {
            let subjects = binding.subjects.as_deref().unwrap_or_default();
            let Some(subject) = subjects.iter().find(|s| applies_to(user, s, namespace)) else {
                continue;
            };
            match self.role_reference_rules(&binding.role_ref, namespace) {
                Err(error) => {
                    if !visit(None, None, Some(error)) {
                        return;
                    }
                }
                Ok(rules) => {
                    let qualified = format!("{name}/{namespace}");
                    let source = || {
                        describe(
                            "RoleBinding",
                            &qualified,
                            &binding.role_ref,
                            subject,
                            namespace,
                        )
                    };
                    for rule in rules {
                        if !visit(Some(&source), Some(rule), None) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Every rule that applies to `user` in `namespace`, and the errors found resolving them
    /// (`RulesFor`).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        self.visit_rules_for(user, namespace, |_, rule, error| {
            rules.extend(rule.cloned());
            errors.extend(error);
            true
        });
        (rules, errors)
    }
}

/// Whether a binding's subject is `user` (`appliesToUser`): the user by name, one of its
/// groups, or the service account, whose namespace defaults to the binding's.
pub fn applies_to(user: &UserInfo, subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.in_group(&subject.name),
        "ServiceAccount" => {
            let account_namespace = match subject.namespace.as_deref() {
                Some(ns) if !ns.is_empty() => ns,
                _ => namespace,
            };
            !account_namespace.is_empty()
                && service_account(&user.name) == Some((account_namespace, subject.name.as_str()))
        }
        _ => false,
    }
}

/// The RBAC authorizer, on the policy the server last gave it.
#[derive(Debug, Default)]
pub struct RbacAuthorizer {
    policy: RwLock<Arc<Policy>>,
}

impl RbacAuthorizer {
    /// An authorizer on `policy`.
    pub fn new(policy: Policy) -> Self {
        RbacAuthorizer {
            policy: RwLock::new(Arc::new(policy)),
        }
    }

    /// The policy decided with now.
    pub fn policy(&self) -> Arc<Policy> {
        match self.policy.read() {
            Ok(policy) => policy.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Decides with `policy` from now on.
    pub fn set_policy(&self, policy: impl Into<Arc<Policy>>) {
        let policy = policy.into();
        match self.policy.write() {
            Ok(mut current) => *current = policy,
            Err(poisoned) => *poisoned.into_inner() = policy,
        }
    }
}

impl RbacAuthorizer {
    /// Allowed by the first rule that allows, with `RBAC: allowed by <binding>`; else no
    /// opinion, with the resolution errors met (`RBAC: [...]`) as the reason. RBAC decides
    /// at once; [`Authorizer::authorize`] is this decision.
    pub fn decide(&self, attributes: &Attributes) -> Verdict {
        let policy = self.policy();
        let mut allowed_by = None;
        let mut errors = Vec::new();
        policy.visit_rules_for(
            &attributes.user,
            &attributes.namespace,
            |source, rule, error| {
                if let (Some(source), Some(rule)) = (source, rule)
                    && rule_allows(attributes, rule)
                {
                    allowed_by = Some(source());
                    return false;
                }
                errors.extend(error);
                true
            },
        );
        match allowed_by {
            Some(source) => {
                Verdict::because(Decision::Allow, &format!("RBAC: allowed by {source}"))
            }
            None if errors.is_empty() => Verdict::new(Decision::NoOpinion),
            None => Verdict::because(
                Decision::NoOpinion,
                &format!("RBAC: {}", authz::aggregate(&errors)),
            ),
        }
    }
}

impl Authorizer for RbacAuthorizer {
    fn authorize<'a>(&'a self, attributes: &'a Attributes) -> Deciding<'a> {
        self.decide(attributes).ready()
    }

    /// The rules as `SelfSubjectRulesReview` lists them: a resource rule for each rule with
    /// resources, a path rule for each with paths (`RBACAuthorizer.RulesFor`).
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let (rules, errors) = self.policy().rules_for(user, namespace);
        let mut answer = Rules {
            evaluation_error: authz::aggregate(&errors),
            ..Rules::default()
        };
        for rule in rules {
            if rule.resources.as_ref().is_some_and(|r| !r.is_empty()) {
                answer.resource_rules.push(ResourceRule {
                    verbs: rule.verbs.clone(),
                    api_groups: rule.api_groups.clone(),
                    resources: rule.resources.clone(),
                    resource_names: rule.resource_names.clone(),
                });
            }
            if rule
                .non_resource_urls
                .as_ref()
                .is_some_and(|u| !u.is_empty())
            {
                answer.non_resource_rules.push(NonResourceRule {
                    verbs: rule.verbs,
                    non_resource_urls: rule.non_resource_urls,
                });
            }
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    const GROUP: &str = "rbac.authorization.k8s.io";

    fn strings(list: &str) -> Option<Vec<String>> {
        Some(list.split(',').map(str::to_owned).collect())
    }

    /// `rbac_test.go`'s `newRule(verbs, apiGroups, resources, nonResourceURLs)`.
    fn new_rule(verbs: &str, groups: &str, resources: &str, urls: &str) -> PolicyRule {
        PolicyRule {
            verbs: verbs.split(',').map(str::to_owned).collect(),
            api_groups: strings(groups),
            resources: strings(resources),
            non_resource_urls: strings(urls),
            resource_names: None,
        }
    }

    fn meta(namespace: &str, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            ..ObjectMeta::default()
        }
    }

    fn subjects(list: &[&str]) -> Option<Vec<Subject>> {
        Some(
            list.iter()
                .map(|s| {
                    let (kind, name) = s.split_once(':').unwrap();
                    Subject {
                        api_group: (kind != "ServiceAccount").then(|| GROUP.to_owned()),
                        kind: kind.to_owned(),
                        name: name.to_owned(),
                        namespace: None,
                    }
                })
                .collect(),
        )
    }

    fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
        ClusterRole {
            metadata: meta("", name),
            rules: Some(rules),
            aggregation_rule: None,
        }
    }

    fn cluster_binding(role: &str, list: &[&str]) -> ClusterRoleBinding {
        ClusterRoleBinding {
            metadata: meta("", &format!("{role}-binding")),
            role_ref: RoleRef {
                api_group: Some(GROUP.into()),
                kind: "ClusterRole".into(),
                name: role.into(),
            },
            subjects: subjects(list),
        }
    }

    fn binding(namespace: &str, kind: &str, role: &str, list: &[&str]) -> RoleBinding {
        RoleBinding {
            metadata: meta(namespace, &format!("{role}-{namespace}")),
            role_ref: RoleRef {
                api_group: Some(GROUP.into()),
                kind: kind.into(),
                name: role.into(),
            },
            subjects: subjects(list),
        }
    }

    fn user(name: &str, groups: &str) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups
                .split(',')
                .filter(|g| !g.is_empty())
                .map(str::to_owned)
                .collect(),
            ..UserInfo::default()
        }
    }

    /// `rbac_test.go`'s `defaultAttributes{user, groups, verb, resource, subresource,
    /// namespace, apiGroup}`.
    fn attributes(
        user_name: &str,
        groups: &str,
        verb: &str,
        resource: &str,
        sub: &str,
        ns: &str,
    ) -> Attributes {
        Attributes {
            user: user(user_name, groups),
            verb: verb.into(),
            resource_request: true,
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            ..Attributes::default()
        }
    }

    fn path(user_name: &str, groups: &str, verb: &str, path: &str) -> Attributes {
        Attributes {
            user: user(user_name, groups),
            verb: verb.into(),
            path: path.into(),
            ..Attributes::default()
        }
    }

    /// `plugin/pkg/auth/authorizer/rbac/rbac_test.go`, `TestAuthorizer`: its four policies
    /// and every request that should pass or fail.
    #[test]
    fn test_authorizer() {
        let a = attributes;
        let cases: Vec<(Policy, Vec<Attributes>, Vec<Attributes>)> = vec![
            (
                Policy::new(
                    [],
                    [binding(
                        "ns1",
                        "ClusterRole",
                        "admin",
                        &["User:admin", "Group:admins"],
                    )],
                    [cluster_role("admin", vec![new_rule("*", "*", "*", "*")])],
                    [],
                ),
                vec![
                    a("admin", "", "get", "Pods", "", "ns1"),
                    a("admin", "", "watch", "Pods", "", "ns1"),
                    a("admin", "group1", "watch", "Foobar", "", "ns1"),
                    a("joe", "admins", "watch", "Foobar", "", "ns1"),
                    a("joe", "group1,admins", "watch", "Foobar", "", "ns1"),
                ],
                vec![
                    a("admin", "", "GET", "Pods", "", "ns2"),
                    a("admin", "", "GET", "Nodes", "", ""),
                    a("admin", "admins", "GET", "Pods", "", "ns2"),
                    a("admin", "admins", "GET", "Nodes", "", ""),
                ],
            ),
            (
                Policy::new(
                    [],
                    [],
                    [
                        cluster_role(
                            "non-resource-url-getter",
                            vec![new_rule("get", "", "", "/apis")],
                        ),
                        cluster_role("non-resource-url", vec![new_rule("*", "", "", "/apis")]),
                        cluster_role(
                            "non-resource-url-prefix",
                            vec![new_rule("get", "", "", "/apis/*")],
                        ),
                    ],
                    [
                        cluster_binding("non-resource-url-getter", &["User:foo", "Group:bar"]),
                        cluster_binding("non-resource-url", &["User:admin", "Group:admin"]),
                        cluster_binding(
                            "non-resource-url-prefix",
                            &["User:prefixed", "Group:prefixed"],
                        ),
                    ],
                ),
                vec![
                    path("foo", "", "get", "/apis"),
                    path("", "bar", "get", "/apis"),
                    path("admin", "", "get", "/apis"),
                    path("", "admin", "get", "/apis"),
                    path("admin", "", "watch", "/apis"),
                    path("", "admin", "watch", "/apis"),
                    path("prefixed", "", "get", "/apis/v1"),
                    path("", "prefixed", "get", "/apis/v1"),
                    path("prefixed", "", "get", "/apis/v1/foobar"),
                    path("", "prefixed", "get", "/apis/v1/foorbar"),
                ],
                vec![
                    path("foo", "", "watch", "/apis"),
                    path("", "bar", "watch", "/apis"),
                    path("foo", "", "get", "/api/v1"),
                    path("", "bar", "get", "/api/v1"),
                    path("admin", "", "get", "/api/v1"),
                    path("", "admin", "get", "/api/v1"),
                    path("prefixed", "", "get", "/api/v1"),
                    path("", "prefixed", "get", "/api/v1"),
                ],
            ),
            (
                Policy::new(
                    [],
                    [binding(
                        "ns1",
                        "ClusterRole",
                        "admin",
                        &["User:admin", "Group:admins"],
                    )],
                    [cluster_role("admin", vec![new_rule("*", "*", "pods", "*")])],
                    [],
                ),
                vec![a("admin", "", "get", "pods", "", "ns1")],
                vec![a("admin", "", "get", "pods", "status", "ns1")],
            ),
            (
                Policy::new(
                    [],
                    [binding(
                        "ns1",
                        "ClusterRole",
                        "admin",
                        &["User:admin", "Group:admins"],
                    )],
                    [cluster_role(
                        "admin",
                        vec![new_rule("*", "*", "pods/status", "*")],
                    )],
                    [],
                ),
                vec![a("admin", "", "get", "pods", "status", "ns1")],
                vec![a("admin", "", "get", "pods", "", "ns1")],
            ),
        ];
        for (index, (policy, pass, fail)) in cases.into_iter().enumerate() {
            let authorizer = RbacAuthorizer::new(policy);
            for attributes in pass {
                assert!(
                    authorizer.decide(&attributes).allowed(),
                    "case {index}: incorrectly restricted {attributes:?}"
                );
            }
            for attributes in fail {
                assert!(
                    !authorizer.decide(&attributes).allowed(),
                    "case {index}: incorrectly passed {attributes:?}"
                );
            }
        }
    }

    /// The subject index visits what a walk over every binding visits (kube-apiserver's
    /// `VisitRulesFor`), in the same order: checked on many generated policies against such
    /// a walk, for users, groups and service accounts, in a namespace and cluster-wide.
    #[test]
    fn the_subject_index_visits_what_a_walk_over_every_binding_visits() {
        let seed = std::cell::Cell::new(7u64);
        let next = |n: u64| {
            let value = seed
                .get()
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed.set(value);
            (value >> 33) % n
        };
        let names = [
            "alice",
            "bob",
            "system:serviceaccount:ns:robot",
            "system:serviceaccount:other:robot",
        ];
        let groups = ["devs", "ops", "system:authenticated"];
        let mut visits = 0;
        for _ in 0..200 {
            let subject = |namespace_hint: bool| {
                let (kind, name, namespace) = match next(4) {
                    0 => ("User", names[next(2) as usize].to_owned(), None),
                    1 => ("Group", groups[next(3) as usize].to_owned(), None),
                    2 => (
                        "ServiceAccount",
                        "robot".to_owned(),
                        (!namespace_hint || next(2) == 0)
                            .then(|| ["ns", "other"][next(2) as usize].to_owned()),
                    ),
                    _ => ("Unknown", "x".to_owned(), None),
                };
                Subject {
                    api_group: None,
                    kind: kind.into(),
                    name,
                    namespace,
                }
            };
            let role =
                |name: &str, verb: &str| cluster_role(name, vec![new_rule(verb, "g", "r", "")]);
            let cluster_roles = vec![role("a", "get"), role("b", "list"), role("c", "watch")];
            let mut cluster_bindings = Vec::new();
            for i in 0..next(6) {
                let mut binding =
                    cluster_binding(["a", "b", "c", "missing"][next(4) as usize], &[]);
                binding.metadata.name = Some(format!("cb{}", next(100) * 10 + i));
                binding.subjects = Some((0..next(3)).map(|_| subject(false)).collect());
                cluster_bindings.push(binding);
            }
            let mut role_bindings = Vec::new();
            for i in 0..next(6) {
                let mut b = binding(
                    ["ns", "other"][next(2) as usize],
                    "ClusterRole",
                    ["a", "b", "c"][next(3) as usize],
                    &[],
                );
                b.metadata.name = Some(format!("rb{}", next(100) * 10 + i));
                b.subjects = Some((0..next(3)).map(|_| subject(true)).collect());
                role_bindings.push(b);
            }
            let policy = Policy::new(
                [],
                role_bindings.clone(),
                cluster_roles.clone(),
                cluster_bindings.clone(),
            );
            for name in names {
                for group_count in 0..3 {
                    let user = UserInfo {
                        name: name.into(),
                        groups: groups[..group_count]
                            .iter()
                            .map(|g| (*g).to_owned())
                            .collect(),
                        ..UserInfo::default()
                    };
                    for namespace in ["", "ns", "other"] {
                        // The walk: every binding in name order.
                        let mut walked = Vec::new();
                        let mut sorted = cluster_bindings.clone();
                        sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
                        for b in &sorted {
                            if b.subjects
                                .iter()
                                .flatten()
                                .any(|s| applies_to(&user, s, ""))
                            {
                                walked.push(b.role_ref.name.clone());
                            }
                        }
                        if !namespace.is_empty() {
                            let mut local: Vec<&RoleBinding> = role_bindings
                                .iter()
                                .filter(|b| b.metadata.namespace.as_deref() == Some(namespace))
                                .collect();
                            local.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
                            for b in local {
                                if b.subjects
                                    .iter()
                                    .flatten()
                                    .any(|s| applies_to(&user, s, namespace))
                                {
                                    walked.push(b.role_ref.name.clone());
                                }
                            }
                        }
                        let mut visited = Vec::new();
                        policy.visit_rules_for(&user, namespace, |_, rule, error| {
                            match (rule, error) {
                                (Some(rule), _) => visited.push(
                                    ["a", "b", "c"][["get", "list", "watch"]
                                        .iter()
                                        .position(|v| *v == rule.verbs[0])
                                        .unwrap()]
                                    .to_owned(),
                                ),
                                (None, Some(_)) => visited.push("missing".to_owned()),
                                _ => {}
                            }
                            true
                        });
                        assert_eq!(visited, walked, "{user:?} in {namespace:?}");
                        visits += walked.len();
                    }
                }
            }
        }
        assert!(
            visits > 1_000,
            "the generated policies bind too little: {visits}"
        );
    }

    #[test]
    fn reasons_name_the_binding_or_what_could_not_be_resolved() {
        let authorizer = RbacAuthorizer::new(Policy::new(
            [Role {
                metadata: meta("ns", "reader"),
                rules: Some(vec![new_rule("get", "", "pods", "")]),
            }],
            [
                binding("ns", "Role", "reader", &["ServiceAccount:robot"]),
                binding("ns", "Role", "gone", &["Group:system:authenticated"]),
            ],
            [cluster_role(
                "viewer",
                vec![new_rule("list", "x.io", "things", "")],
            )],
            [
                cluster_binding("viewer", &["Group:viewers"]),
                cluster_binding("missing", &["User:alice"]),
            ],
        ));
        let robot = attributes(
            "system:serviceaccount:ns:robot",
            "system:authenticated",
            "get",
            "pods",
            "",
            "ns",
        );
        assert_eq!(
            authorizer.decide(&robot).reason,
            "RBAC: allowed by RoleBinding \"reader-ns/ns\" of Role \"reader\" to ServiceAccount \"robot/ns\""
        );
        let mut viewer = attributes("v", "viewers", "list", "things", "", "");
        viewer.api_group = "x.io".into();
        assert_eq!(
            authorizer.decide(&viewer).reason,
            "RBAC: allowed by ClusterRoleBinding \"viewer-binding\" of ClusterRole \"viewer\" to Group \"viewers\""
        );
        let alice = attributes("alice", "system:authenticated", "delete", "pods", "", "ns");
        let refused = authorizer.decide(&alice);
        assert_eq!(refused.decision, Decision::NoOpinion);
        assert_eq!(
            refused.reason,
            "RBAC: [clusterrole.rbac.authorization.k8s.io \"missing\" not found, \
             role.rbac.authorization.k8s.io \"gone\" not found]"
        );
        let rules = authorizer.rules_for(&robot.user, "ns");
        assert_eq!(rules.resource_rules.len(), 1);
        assert_eq!(
            rules.evaluation_error,
            "role.rbac.authorization.k8s.io \"gone\" not found"
        );
        // A service account in another namespace is not the binding's.
        let stranger = attributes(
            "system:serviceaccount:other:robot",
            "",
            "get",
            "pods",
            "",
            "ns",
        );
        assert!(!authorizer.decide(&stranger).allowed());
    }
}
