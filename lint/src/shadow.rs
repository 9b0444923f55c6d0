//! Which requests a FlowSchema's rules can match that no schema before it matches: the exact
//! answer, by representative requests.
//!
//! A rule is a product of sets (subjects × verbs × API groups × resources × namespaces, or
//! subjects × verbs × URLs). The schemas before it name finitely many values in each of those
//! dimensions; every request is equivalent, for all of them, to one made of those values and
//! a fresh one per dimension (a value none names). For subjects, requests differ by user and
//! groups, and matching only grows with groups, so each subject needs only its smallest
//! requests: its user (or a fresh one) in `system:authenticated` plus the group it names, or
//! `system:anonymous` in `system:unauthenticated` where the subject can be anonymous; a
//! service account (or a user named as one) with its three groups.
//! A rule is shadowed when the dispatcher's own matcher sends every representative of it to
//! an earlier schema. `tests/shadow_exactness.rs` holds this against brute force.

use std::collections::BTreeSet;

use apfkit_dispatcher::classify::{Classifier, Request, non_resource_url_matches, url_prefix};
use apfkit_types::hub::flowcontrol::{
    FlowSchema, NonResourcePolicyRule, PolicyRulesWithSubjects, ResourcePolicyRule, Subject,
};

/// A value no rule names (object names cannot hold `:`, so it collides with nothing).
const FRESH: &str = "apfkit:lint:fresh";

/// The group kube-apiserver adds to every authenticated user.
const AUTHENTICATED: &str = "system:authenticated";
/// The only group of an anonymous request, and its user.
const UNAUTHENTICATED: &str = "system:unauthenticated";
const ANONYMOUS: &str = "system:anonymous";

/// Representatives checked per rule before the check gives up (it then reports nothing).
pub const MAX_REPRESENTATIVES: usize = 200_000;

/// An owned request, for the representatives.
#[derive(Debug, Clone)]
struct Representative {
    user: String,
    groups: Vec<String>,
    verb: String,
    resource_request: bool,
    api_group: String,
    resource: String,
    subresource: String,
    namespace: String,
    path: String,
}

impl Representative {
    fn with<R>(&self, use_it: impl FnOnce(&Request<'_>) -> R) -> R {
        let groups: Vec<&str> = self.groups.iter().map(String::as_str).collect();
        let request = Request {
            user: &self.user,
            groups: &groups,
            verb: &self.verb,
            is_resource_request: self.resource_request,
            api_group: &self.api_group,
            api_version: "",
            resource: &self.resource,
            subresource: &self.subresource,
            namespace: &self.namespace,
            name: "",
            path: &self.path,
        };
        use_it(&request)
    }
}

/// The literal values the schemas before a rule name, per dimension.
#[derive(Debug, Default)]
pub struct Vocabulary {
    verbs: BTreeSet<String>,
    api_groups: BTreeSet<String>,
    resources: BTreeSet<String>,
    namespaces: BTreeSet<String>,
    urls: BTreeSet<String>,
}

impl Vocabulary {
    /// The values of `schemas`' rules.
    pub fn of<'a>(schemas: impl IntoIterator<Item = &'a FlowSchema>) -> Self {
        let mut vocabulary = Vocabulary::default();
        for schema in schemas {
            vocabulary.extend(schema);
        }
        vocabulary
    }

    /// Adds the values of `schema`'s rules.
    pub fn extend(&mut self, schema: &FlowSchema) {
        for rule in schema.spec.rules.iter().flatten() {
            self.add(rule);
        }
    }

    fn add(&mut self, rule: &PolicyRulesWithSubjects) {
        let literal = |values: &[String], into: &mut BTreeSet<String>| {
            into.extend(values.iter().filter(|v| *v != "*").cloned());
        };
        for resource in rule.resource_rules.iter().flatten() {
            literal(&resource.verbs, &mut self.verbs);
            literal(&resource.api_groups, &mut self.api_groups);
            literal(&resource.resources, &mut self.resources);
            literal(
                resource.namespaces.as_deref().unwrap_or_default(),
                &mut self.namespaces,
            );
        }
        for non_resource in rule.non_resource_rules.iter().flatten() {
            literal(&non_resource.verbs, &mut self.verbs);
            literal(&non_resource.non_resource_urls, &mut self.urls);
        }
    }
}

/// `values` itself, or for `["*"]` every literal of `known` and a fresh value.
fn atoms(values: &[String], known: &BTreeSet<String>) -> Vec<String> {
    if values.iter().any(|v| v == "*") {
        known
            .iter()
            .cloned()
            .chain(std::iter::once(FRESH.to_owned()))
            .collect()
    } else {
        values.to_vec()
    }
}

/// The paths standing for the URLs `patterns` match: each pattern and each known one, as
/// itself and with a fresh segment below it, that a pattern matches.
fn url_atoms(patterns: &[String], known: &BTreeSet<String>) -> Vec<String> {
    let mut candidates = BTreeSet::new();
    for url in patterns.iter().chain(known).filter(|u| *u != "*") {
        candidates.insert(url.strip_suffix('*').unwrap_or(url).to_owned());
        candidates.insert(format!("{}{FRESH}", url_prefix(url)));
    }
    candidates.insert(format!("/{FRESH}"));
    candidates
        .into_iter()
        .filter(|path| patterns.iter().any(|p| non_resource_url_matches(p, path)))
        .collect()
}

/// The smallest requests of each subject: (user, groups). kube-apiserver's authenticators put
/// every user but `system:anonymous` in `system:authenticated`, and `system:anonymous` in
/// `system:unauthenticated` only (k8s.io/apiserver's `AuthenticatedGroupAdder` and anonymous
/// authenticator): a named user or group is never unauthenticated.
fn subject_atoms(subjects: &[Subject]) -> Vec<(String, Vec<String>)> {
    let authenticated = || (FRESH.to_owned(), vec![AUTHENTICATED.to_owned()]);
    let anonymous = || (ANONYMOUS.to_owned(), vec![UNAUTHENTICATED.to_owned()]);
    let mut out = Vec::new();
    for subject in subjects {
        match subject.kind.as_str() {
            "User" => {
                let Some(user) = &subject.user else { continue };
                match user.name.as_str() {
                    "*" => out.extend([authenticated(), anonymous()]),
                    ANONYMOUS => out.push(anonymous()),
                    name => out.push((name.to_owned(), groups_of(name))),
                }
            }
            "Group" => {
                let Some(group) = &subject.group else {
                    continue;
                };
                match group.name.as_str() {
                    "*" => out.extend([authenticated(), anonymous()]),
                    UNAUTHENTICATED => out.push(anonymous()),
                    AUTHENTICATED => out.push(authenticated()),
                    name => out.push((
                        FRESH.to_owned(),
                        vec![AUTHENTICATED.to_owned(), name.to_owned()],
                    )),
                }
            }
            "ServiceAccount" => {
                let Some(account) = &subject.service_account else {
                    continue;
                };
                let name = if account.name == "*" {
                    FRESH
                } else {
                    &account.name
                };
                let user = format!("system:serviceaccount:{}:{name}", account.namespace);
                let groups = groups_of(&user);
                out.push((user, groups));
            }
            _ => {}
        }
    }
    out
}

/// The groups a user other than `system:anonymous` always has: `system:authenticated`, and a
/// service account's two groups (k8s.io/apiserver `pkg/authentication/serviceaccount/util.go`,
/// `MakeGroupNames`, given to every service account token's user).
fn groups_of(user: &str) -> Vec<String> {
    let mut groups = Vec::with_capacity(3);
    if let Some((namespace, _)) = user
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
    {
        groups.push("system:serviceaccounts".to_owned());
        groups.push(format!("system:serviceaccounts:{namespace}"));
    }
    groups.push(AUTHENTICATED.to_owned());
    groups
}

/// The representatives of one resource rule, for each subject request.
fn resource_representatives(
    rule: &ResourcePolicyRule,
    subjects: Vec<(String, Vec<String>)>,
    known: &Vocabulary,
) -> impl Iterator<Item = Representative> + use<> {
    let verbs = atoms(&rule.verbs, &known.verbs);
    let groups = atoms(&rule.api_groups, &known.api_groups);
    let resources = atoms(&rule.resources, &known.resources);
    let mut namespaces = atoms(
        rule.namespaces.as_deref().unwrap_or_default(),
        &known.namespaces,
    );
    if rule.cluster_scope.unwrap_or_default() {
        namespaces.insert(0, String::new());
    }
    // Fresh values first: a rule that is not shadowed is usually found out at once.
    let fresh_first = |mut values: Vec<String>| {
        values.sort_by_key(|v| !v.contains(FRESH));
        values
    };
    let (verbs, groups, resources, namespaces) = (
        fresh_first(verbs),
        fresh_first(groups),
        fresh_first(resources),
        fresh_first(namespaces),
    );
    subjects.into_iter().flat_map(move |(user, user_groups)| {
        let (verbs, groups, resources, namespaces) = (
            verbs.clone(),
            groups.clone(),
            resources.clone(),
            namespaces.clone(),
        );
        verbs.into_iter().flat_map(move |verb| {
            let (user, user_groups, groups, resources, namespaces) = (
                user.clone(),
                user_groups.clone(),
                groups.clone(),
                resources.clone(),
                namespaces.clone(),
            );
            groups.into_iter().flat_map(move |api_group| {
                let (user, user_groups, verb, resources, namespaces) = (
                    user.clone(),
                    user_groups.clone(),
                    verb.clone(),
                    resources.clone(),
                    namespaces.clone(),
                );
                resources.into_iter().flat_map(move |resource| {
                    let (resource, subresource) = match resource.split_once('/') {
                        Some((r, s)) => (r.to_owned(), s.to_owned()),
                        None => (resource, String::new()),
                    };
                    let (user, user_groups, verb, api_group) = (
                        user.clone(),
                        user_groups.clone(),
                        verb.clone(),
                        api_group.clone(),
                    );
                    namespaces
                        .clone()
                        .into_iter()
                        .map(move |namespace| Representative {
                            user: user.clone(),
                            groups: user_groups.clone(),
                            verb: verb.clone(),
                            resource_request: true,
                            api_group: api_group.clone(),
                            resource: resource.clone(),
                            subresource: subresource.clone(),
                            namespace,
                            path: String::new(),
                        })
                })
            })
        })
    })
}

/// The representatives of one non-resource rule, for each subject request.
fn non_resource_representatives(
    rule: &NonResourcePolicyRule,
    subjects: &[(String, Vec<String>)],
    known: &Vocabulary,
) -> Vec<Representative> {
    let verbs = atoms(&rule.verbs, &known.verbs);
    let paths = url_atoms(&rule.non_resource_urls, &known.urls);
    let mut out = Vec::new();
    for (user, groups) in subjects {
        for verb in &verbs {
            for path in &paths {
                out.push(Representative {
                    user: user.clone(),
                    groups: groups.clone(),
                    verb: verb.clone(),
                    resource_request: false,
                    api_group: String::new(),
                    resource: String::new(),
                    subresource: String::new(),
                    namespace: String::new(),
                    path: path.clone(),
                });
            }
        }
    }
    out
}

/// Every representative request of `rule`: its resource rules' and its non-resource rules',
/// for each of its subjects.
fn representatives<'a>(
    rule: &'a PolicyRulesWithSubjects,
    known: &'a Vocabulary,
) -> impl Iterator<Item = Representative> + 'a {
    let subjects = subject_atoms(&rule.subjects);
    let resource = {
        let subjects = subjects.clone();
        rule.resource_rules
            .iter()
            .flatten()
            .flat_map(move |r| resource_representatives(r, subjects.clone(), known))
    };
    let non_resource = rule
        .non_resource_rules
        .iter()
        .flatten()
        .flat_map(move |r| non_resource_representatives(r, &subjects, known));
    resource.chain(non_resource)
}

/// What the check found of one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    /// Every request the rule matches goes to these earlier schemas (positions in matching
    /// order).
    Shadowed(BTreeSet<usize>),
    /// Some request the rule matches reaches its schema.
    Reaches,
    /// The rule matches no request at all (no subject, or no verb, or namespaces without
    /// cluster scope that are empty).
    MatchesNothing,
    /// Too many representatives to decide within [`MAX_REPRESENTATIVES`].
    Undecided,
}

/// Whether the rule `rule` of the schema at `position` reaches it: every representative of
/// the rule that the schema itself matches is classified by `classifier` (whose configuration
/// holds the schema at `position`) to an earlier schema, or not.
pub fn rule_coverage(
    classifier: &Classifier,
    position: usize,
    rule: &PolicyRulesWithSubjects,
    known: &Vocabulary,
) -> Coverage {
    let mut by = BTreeSet::new();
    let mut checked = 0usize;
    for representative in representatives(rule, known) {
        checked += 1;
        if checked > MAX_REPRESENTATIVES {
            return Coverage::Undecided;
        }
        let (own, first) = representative.with(|request| {
            (
                classifier.schema_matches(position, request),
                classifier.match_schema(request),
            )
        });
        if !own {
            continue;
        }
        match first {
            Some(earlier) if earlier < position => {
                by.insert(earlier);
            }
            _ => return Coverage::Reaches,
        }
    }
    if by.is_empty() {
        Coverage::MatchesNothing
    } else {
        Coverage::Shadowed(by)
    }
}

/// Whether some request both rules match exists: a representative of `rule`, with the values
/// of `other` known, that the schema at `other_position` matches.
pub fn overlaps(
    classifier: &Classifier,
    other_position: usize,
    rule: &PolicyRulesWithSubjects,
    known: &Vocabulary,
) -> bool {
    representatives(rule, known)
        .take(MAX_REPRESENTATIVES)
        .any(|representative| {
            representative.with(|request| classifier.schema_matches(other_position, request))
        })
}
