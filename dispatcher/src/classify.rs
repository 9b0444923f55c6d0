//! Request classification (upstream's `pkg/util/flowcontrol/rule.go` and `apf_controller.go`'s
//! `startRequest`): the FlowSchema a request matches, its priority
//! level, flow distinguisher, flow hash and hand of queues.
//!
//! The schemas are compiled into an index from subjects (user name, group, service-account
//! namespace, wildcards) to the rules that name them, in matching order. A request looks up only
//! the rules whose subjects can match it and checks their resource or non-resource part, so the
//! cost grows with the rules that concern the requester, not with the whole configuration.

use rustc_hash::{FxHashMap, FxHashSet};

use apfkit_types::hub::flowcontrol as hub;

use crate::config::{Configuration, LevelBehavior};
use crate::flow::flow_hash;
use crate::shuffle::{Dealer, Hand};

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// What APF sees of a request: the authenticated user and the request info.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request<'a> {
    /// User name.
    pub user: &'a str,
    /// The user's groups.
    pub groups: &'a [&'a str],
    /// Kubernetes verb for resource requests, lower-case HTTP method otherwise.
    pub verb: &'a str,
    /// Resource request (true) or non-resource request (false).
    pub is_resource_request: bool,
    /// API group; empty for the core group.
    pub api_group: &'a str,
    /// API version; classification ignores it (`dump_requests` shows it).
    pub api_version: &'a str,
    /// Resource, such as `pods`.
    pub resource: &'a str,
    /// Subresource, such as `status`; empty for none.
    pub subresource: &'a str,
    /// Namespace; empty for cluster-scoped and all-namespace requests.
    pub namespace: &'a str,
    /// Object name, when there is one.
    pub name: &'a str,
    /// URL path, for non-resource requests.
    pub path: &'a str,
}

/// The result of classifying a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification<'c> {
    /// The matching FlowSchema (or the catch-all fallback).
    pub flow_schema: &'c str,
    /// Its position in the configuration's [`crate::Configuration::flow_schemas`].
    pub schema_index: usize,
    /// Its priority level.
    pub priority_level: &'c str,
    /// The flow distinguisher (the request's user or namespace); empty unless the level
    /// queues with more than one queue.
    pub distinguisher: &'c str,
    /// The flow hash; 0 when there is no distinguisher to hash (`computeFlowDistinguisher`).
    pub hash: u64,
    /// Queues dealt to the flow, in dealing order; empty when the level does not queue.
    pub hand: Hand,
}

/// A list that is either `["*"]` or a set of literal values.
#[derive(Debug, Clone)]
enum Match {
    All,
    Some(FxHashSet<String>),
}

impl Match {
    fn new(values: &[String]) -> Self {
        if values.len() == 1 && values[0] == "*" {
            Match::All
        } else {
            Match::Some(values.iter().cloned().collect())
        }
    }

    fn contains(&self, value: &str) -> bool {
        match self {
            Match::All => true,
            Match::Some(set) => set.contains(value),
        }
    }

    /// Whether the list contains `resource` or `resource/subresource`, without building it.
    fn contains_resource(&self, resource: &str, subresource: &str) -> bool {
        match self {
            Match::All => true,
            Match::Some(set) if subresource.is_empty() => set.contains(resource),
            Match::Some(set) => set.iter().any(|r| {
                r.len() == resource.len() + 1 + subresource.len()
                    && r.starts_with(resource)
                    && r.as_bytes()[resource.len()] == b'/'
                    && r.ends_with(subresource)
            }),
        }
    }
}

#[derive(Debug, Clone)]
struct ResourceRule {
    verbs: Match,
    api_groups: Match,
    resources: Match,
    cluster_scope: bool,
    namespaces: Match,
}

impl ResourceRule {
    fn matches(&self, r: &Request<'_>) -> bool {
        self.verbs.contains(r.verb)
            && self.resources.contains_resource(r.resource, r.subresource)
            && self.api_groups.contains(r.api_group)
            && if r.namespace.is_empty() {
                self.cluster_scope
            } else {
                self.namespaces.contains(r.namespace)
            }
    }
}

#[derive(Debug, Clone)]
struct NonResourceRule {
    verbs: Match,
    /// `None` when the list is `["*"]`; otherwise (url, prefix) pairs.
    urls: Option<Vec<(String, String)>>,
}

impl NonResourceRule {
    fn matches(&self, r: &Request<'_>) -> bool {
        self.verbs.contains(r.verb)
            && match &self.urls {
                None => true,
                Some(urls) => urls
                    .iter()
                    .any(|(url, prefix)| url_matches_with_prefix(url, prefix, r.path)),
            }
    }
}

/// Whether a `nonResourceURLs` entry matches `path` (`rule.go`'s `matchesNonResourceURL`):
/// `*`, the path itself, or any path below the entry's prefix ([`url_prefix`]).
pub fn non_resource_url_matches(url: &str, path: &str) -> bool {
    url == "*" || url_matches_with_prefix(url, &url_prefix(url), path)
}

/// [`non_resource_url_matches`] for an entry other than `*` whose prefix is computed already.
fn url_matches_with_prefix(url: &str, prefix: &str, path: &str) -> bool {
    url == path || path.starts_with(prefix)
}

/// The paths below a `nonResourceURLs` entry that it matches start with this: the entry
/// without one trailing `*`, ending in `/`.
pub fn url_prefix(url: &str) -> String {
    let trimmed = url.strip_suffix('*').unwrap_or(url);
    if trimmed.ends_with('/') {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/")
    }
}

/// The resource and non-resource part of one `PolicyRulesWithSubjects`.
#[derive(Debug, Clone)]
struct Rule {
    schema: u32,
    resource_rules: Vec<ResourceRule>,
    non_resource_rules: Vec<NonResourceRule>,
}

/// Whether one subject selects the request's user (`rule.go`'s `matchesASubject`).
fn subject_matches(subject: &hub::Subject, r: &Request<'_>) -> bool {
    match subject.kind.as_str() {
        "User" => subject
            .user
            .as_ref()
            .is_some_and(|u| u.name == "*" || u.name == r.user),
        "Group" => subject
            .group
            .as_ref()
            .is_some_and(|g| g.name == "*" || r.groups.contains(&g.name.as_str())),
        "ServiceAccount" => subject
            .service_account
            .as_ref()
            .is_some_and(|a| service_account_matches(r.user, &a.namespace, &a.name)),
        _ => false,
    }
}

impl Rule {
    fn matches(&self, r: &Request<'_>) -> bool {
        if r.is_resource_request {
            self.resource_rules.iter().any(|rule| rule.matches(r))
        } else {
            self.non_resource_rules.iter().any(|rule| rule.matches(r))
        }
    }
}

/// Rule indices (ascending, so in matching order) by the subjects that select them.
#[derive(Debug, Default, Clone)]
struct SubjectIndex {
    users: FxHashMap<String, Vec<u32>>,
    any_user: Vec<u32>,
    groups: FxHashMap<String, Vec<u32>>,
    any_group: Vec<u32>,
    /// Service-account subjects by namespace.
    service_accounts: FxHashMap<String, ServiceAccountRules>,
    /// Service-account subjects whose namespace contains `:` (invalid, but matched as Go does).
    odd_service_accounts: Vec<(u32, String, String)>,
}

/// The rules naming service accounts of one namespace.
#[derive(Debug, Default, Clone)]
struct ServiceAccountRules {
    /// Subjects with name `*`.
    any_name: Vec<u32>,
    /// Subjects with a specific name.
    by_name: FxHashMap<String, Vec<u32>>,
}

fn push(list: &mut Vec<u32>, rule: u32) {
    if list.last() != Some(&rule) {
        list.push(rule);
    }
}

impl SubjectIndex {
    fn add(&mut self, subject: &hub::Subject, rule: u32) {
        match subject.kind.as_str() {
            "User" => {
                if let Some(user) = &subject.user {
                    if user.name == "*" {
                        push(&mut self.any_user, rule);
                    } else {
                        push(self.users.entry(user.name.clone()).or_default(), rule);
                    }
                }
            }
            "Group" => {
                if let Some(group) = &subject.group {
                    if group.name == "*" {
                        push(&mut self.any_group, rule);
                    } else {
                        push(self.groups.entry(group.name.clone()).or_default(), rule);
                    }
                }
            }
            "ServiceAccount" => {
                if let Some(account) = &subject.service_account {
                    if account.namespace.contains(':') {
                        self.odd_service_accounts.push((
                            rule,
                            account.namespace.clone(),
                            account.name.clone(),
                        ));
                        return;
                    }
                    let rules = self
                        .service_accounts
                        .entry(account.namespace.clone())
                        .or_default();
                    if account.name == "*" {
                        push(&mut rules.any_name, rule);
                    } else {
                        push(rules.by_name.entry(account.name.clone()).or_default(), rule);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Go's service-account subject match on a user name (`serviceaccount.MatchesUsername` in
/// `pkg/authentication/serviceaccount/util.go`).
fn service_account_matches(user: &str, namespace: &str, name: &str) -> bool {
    let Some(rest) = user.strip_prefix(SERVICE_ACCOUNT_PREFIX) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(namespace) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(':') else {
        return false;
    };
    name == "*" || rest == name
}

/// A configuration compiled for classification.
#[derive(Debug, Clone)]
pub struct Classifier {
    config: Configuration,
    rules: Vec<Rule>,
    index: SubjectIndex,
    catch_all: Option<u32>,
    /// What classification needs of each schema, in matching order.
    flows: Vec<SchemaFlows>,
}

/// How a schema's requests are told into flows, worked out once per schema: the dealer of a
/// level that queues with more than one queue, the distinguisher method, and the hash and hand
/// of the empty distinguisher, which depend on the schema alone (a `ByNamespace` schema sees
/// it for every cluster-scoped request).
#[derive(Debug, Clone)]
struct SchemaFlows {
    dealer: Option<Dealer>,
    distinguisher: Distinguisher,
    empty: (u64, Hand),
}

/// `spec.distinguisherMethod.type`.
#[derive(Debug, Clone, Copy)]
enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

impl SchemaFlows {
    fn new(config: &Configuration, schema: &crate::config::OrderedFlowSchema) -> Self {
        let dealer = match config
            .priority_level(schema.priority_level())
            .map(|l| &l.behavior)
        {
            Some(LevelBehavior::Queue { queues, dealer, .. }) if *queues > 1 => Some(*dealer),
            _ => None,
        };
        let method = schema.object.spec.distinguisher_method.as_ref();
        let distinguisher = match method.map(|m| m.type_.as_str()) {
            Some("ByUser") => Distinguisher::ByUser,
            Some("ByNamespace") => Distinguisher::ByNamespace,
            _ => Distinguisher::None,
        };
        let empty = match dealer {
            Some(dealer) => {
                let hash = flow_hash(schema.name(), "");
                (hash, dealer.hand(hash))
            }
            None => (0, Hand::EMPTY),
        };
        SchemaFlows {
            dealer,
            distinguisher,
            empty,
        }
    }
}

impl Classifier {
    /// Compiles a configuration.
    pub fn new(config: Configuration) -> Self {
        let mut rules = Vec::new();
        let mut index = SubjectIndex::default();
        let mut catch_all = None;
        for (position, schema) in config.flow_schemas().iter().enumerate() {
            let position = position as u32;
            if schema.name() == "catch-all" && catch_all.is_none() {
                catch_all = Some(position);
            }
            for rule in schema.object.spec.rules.iter().flatten() {
                let rule_index = rules.len() as u32;
                rules.push(Rule {
                    schema: position,
                    resource_rules: rule
                        .resource_rules
                        .iter()
                        .flatten()
                        .map(|r| ResourceRule {
                            verbs: Match::new(&r.verbs),
                            api_groups: Match::new(&r.api_groups),
                            resources: Match::new(&r.resources),
                            cluster_scope: r.cluster_scope.unwrap_or_default(),
                            namespaces: Match::new(r.namespaces.as_deref().unwrap_or_default()),
                        })
                        .collect(),
                    non_resource_rules: rule
                        .non_resource_rules
                        .iter()
                        .flatten()
                        .map(|r| NonResourceRule {
                            verbs: Match::new(&r.verbs),
                            urls: match Match::new(&r.non_resource_urls) {
                                Match::All => None,
                                Match::Some(_) => Some(
                                    r.non_resource_urls
                                        .iter()
                                        .map(|u| (u.clone(), url_prefix(u)))
                                        .collect(),
                                ),
                            },
                        })
                        .collect(),
                });
                for subject in &rule.subjects {
                    index.add(subject, rule_index);
                }
            }
        }
        let flows = config
            .flow_schemas()
            .iter()
            .map(|schema| SchemaFlows::new(&config, schema))
            .collect();
        Classifier {
            config,
            rules,
            index,
            catch_all,
            flows,
        }
    }

    /// The configuration it was compiled from.
    pub fn config(&self) -> &Configuration {
        &self.config
    }

    /// Whether the schema at `position` (in matching order) matches `r` by one of its own
    /// rules, whatever the schemas before it match (no catch-all fallback).
    pub fn schema_matches(&self, position: usize, r: &Request<'_>) -> bool {
        let Some(schema) = self.config.flow_schemas().get(position) else {
            return false;
        };
        let compiled = self
            .rules
            .iter()
            .filter(|rule| rule.schema as usize == position);
        schema
            .object
            .spec
            .rules
            .iter()
            .flatten()
            .zip(compiled)
            .any(|(rule, compiled)| {
                rule.subjects.iter().any(|s| subject_matches(s, r)) && compiled.matches(r)
            })
    }

    /// Position (in matching order) of the first schema with a rule in `candidates` matching `r`.
    fn first_match(&self, candidates: &[u32], r: &Request<'_>, best: &mut Option<u32>) {
        for &rule_index in candidates {
            let rule = &self.rules[rule_index as usize];
            if best.is_some_and(|b| rule.schema >= b) {
                return;
            }
            if rule.matches(r) {
                *best = Some(rule.schema);
                return;
            }
        }
    }

    /// Position of the FlowSchema that `r` matches, with the catch-all fallback (`Match` in
    /// `apf_controller.go`).
    pub fn match_schema(&self, r: &Request<'_>) -> Option<usize> {
        let mut best = None;
        let index = &self.index;
        if let Some(rules) = index.users.get(r.user) {
            self.first_match(rules, r, &mut best);
        }
        self.first_match(&index.any_user, r, &mut best);
        for group in r.groups {
            if let Some(rules) = index.groups.get(*group) {
                self.first_match(rules, r, &mut best);
            }
        }
        self.first_match(&index.any_group, r, &mut best);
        if let Some(rest) = r.user.strip_prefix(SERVICE_ACCOUNT_PREFIX)
            && let Some((namespace, name)) = rest.split_once(':')
            && let Some(accounts) = index.service_accounts.get(namespace)
        {
            self.first_match(&accounts.any_name, r, &mut best);
            if let Some(rules) = accounts.by_name.get(name) {
                self.first_match(rules, r, &mut best);
            }
        }
        for (rule_index, namespace, name) in &index.odd_service_accounts {
            if service_account_matches(r.user, namespace, name) {
                self.first_match(std::slice::from_ref(rule_index), r, &mut best);
            }
        }
        best.or(self.catch_all).map(|p| p as usize)
    }

    /// Classifies a request: schema, level, distinguisher, hash and hand. `None` only when the
    /// configuration has no catch-all schema, which the mandatory objects rule out.
    /// The result borrows from both the classifier and the request; nothing is allocated.
    pub fn classify<'c>(&'c self, r: &Request<'c>) -> Option<Classification<'c>> {
        let position = self.match_schema(r)?;
        let schema = &self.config.flow_schemas()[position];
        let flows = &self.flows[position];
        let (distinguisher, hash, hand) = match flows.dealer {
            Some(dealer) => {
                let distinguisher = match flows.distinguisher {
                    Distinguisher::ByUser => r.user,
                    Distinguisher::ByNamespace => r.namespace,
                    Distinguisher::None => "",
                };
                if distinguisher.is_empty() {
                    ("", flows.empty.0, flows.empty.1)
                } else {
                    let hash = flow_hash(schema.name(), distinguisher);
                    (distinguisher, hash, dealer.hand(hash))
                }
            }
            None => ("", 0, Hand::EMPTY),
        };
        Some(Classification {
            flow_schema: schema.name(),
            schema_index: position,
            priority_level: schema.priority_level(),
            distinguisher,
            hash,
            hand,
        })
    }
}
