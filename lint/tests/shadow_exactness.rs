//! The shadow engine's exactness claim, held against brute force (issue 41, item 4): for small
//! random configurations, every request of a finite universe is classified by the dispatcher,
//! and whether each rule reaches its schema, is shadowed, or matches nothing is read off the
//! requests it matches; `shadow::rule_coverage`, which tries only representative requests, must
//! say the same.
//!
//! The universe is every value the configuration names and a fresh one per dimension, every
//! set of groups over the configuration's groups, and the users and groups kube-apiserver's
//! authentication gives (k8s.io/apiserver `pkg/authentication/group/authenticated_group_adder.go`
//! and `pkg/authentication/request/anonymous/anonymous.go`; `pkg/serviceaccount/util.go`'s
//! groups of a service account's token): `system:anonymous` in `system:unauthenticated` only, a
//! service account in `system:serviceaccounts` and `system:serviceaccounts:NAMESPACE`, every
//! user but `system:anonymous` in `system:authenticated`, each with any other groups on top.
//! Decision 196 says which hand-made identities this leaves out.

use std::collections::BTreeSet;

use apfkit_dispatcher::Configuration;
use apfkit_dispatcher::classify::{Classifier, Request};
use apfkit_lint::shadow::{Coverage, Vocabulary, rule_coverage};
use apfkit_scheme::scheme::{HubObject, SCHEME, UnknownFields};
use apfkit_types::hub::flowcontrol::{
    FlowSchema, PolicyRulesWithSubjects, PriorityLevelConfiguration,
};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use serde_json::{Value, json};

const AUTHENTICATED: &str = "system:authenticated";
const UNAUTHENTICATED: &str = "system:unauthenticated";
const ANONYMOUS: &str = "system:anonymous";
const FRESH: &str = "fresh";

fn subject() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            "alice",
            "system:serviceaccount:ns1:sa1",
            ANONYMOUS,
            "*"
        ])
        .prop_map(|name| json!({"kind": "User", "user": {"name": name}})),
        prop::sample::select(vec![
            "g1",
            AUTHENTICATED,
            UNAUTHENTICATED,
            "system:serviceaccounts",
            "system:serviceaccounts:ns1",
            "*",
        ])
        .prop_map(|name| json!({"kind": "Group", "group": {"name": name}})),
        prop::sample::select(vec!["sa1", "*"]).prop_map(|name| json!({
            "kind": "ServiceAccount",
            "serviceAccount": {"namespace": "ns1", "name": name}
        })),
    ]
}

/// `["*"]`, or a non-empty subset of `literals` (validation refuses `*` beside anything).
fn values(literals: &'static [&'static str]) -> impl Strategy<Value = Vec<&'static str>> {
    prop_oneof![
        Just(vec!["*"]),
        prop::sample::subsequence(literals, 1..=literals.len()),
    ]
}

fn resource_rule() -> impl Strategy<Value = Value> {
    (
        values(&["get", "list"]),
        values(&["", "apps"]),
        values(&["pods", "pods/log", "deployments"]),
        any::<bool>(),
        values(&["ns1", "ns2"]),
        any::<bool>(),
    )
        .prop_map(
            |(verbs, groups, resources, cluster_scope, namespaces, no_namespaces)| {
                // Only a cluster-scoped rule may name no namespace.
                let namespaces = if cluster_scope && no_namespaces {
                    Vec::new()
                } else {
                    namespaces
                };
                json!({
                    "verbs": verbs, "apiGroups": groups, "resources": resources,
                    "clusterScope": cluster_scope, "namespaces": namespaces,
                })
            },
        )
}

fn non_resource_rule() -> impl Strategy<Value = Value> {
    (
        values(&["get", "list"]),
        values(&["/healthz", "/healthz/*", "/api/*", "/version"]),
    )
        .prop_map(|(verbs, urls)| json!({"verbs": verbs, "nonResourceURLs": urls}))
}

fn rule() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(subject(), 1..=2),
        prop::option::of(resource_rule()),
        prop::option::of(non_resource_rule()),
    )
        .prop_map(|(subjects, resource, non_resource)| {
            let mut rule = json!({"subjects": subjects});
            // A rule needs one of the two; without either it gets a resource rule.
            if resource.is_some() || non_resource.is_none() {
                rule["resourceRules"] = json!([resource.unwrap_or_else(
                    || json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]})
                )]);
            }
            if let Some(non_resource) = non_resource {
                rule["nonResourceRules"] = json!([non_resource]);
            }
            rule
        })
}

/// Two to four schemas of one or two rules, at precedences that sometimes tie.
fn schemas() -> impl Strategy<Value = Vec<FlowSchema>> {
    prop::collection::vec(
        (
            prop::sample::select(vec![100, 200, 300]),
            prop::collection::vec(rule(), 1..=2),
        ),
        2..=4,
    )
    .prop_map(|schemas| {
        schemas
            .into_iter()
            .enumerate()
            .map(|(index, (precedence, rules))| {
                flow_schema(json!({
                    "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                    "kind": "FlowSchema",
                    "metadata": {"name": format!("s{index}")},
                    "spec": {
                        "priorityLevelConfiguration": {"name": "workload"},
                        "matchingPrecedence": precedence,
                        "rules": rules,
                    },
                }))
            })
            .collect()
    })
}

fn hub(value: Value) -> HubObject {
    match SCHEME.to_hub_value(&value, UnknownFields::Strict) {
        Ok((objects, _)) => objects.into_iter().next().expect("one object"),
        Err(error) => panic!("{value}: {error}"),
    }
}

fn flow_schema(value: Value) -> FlowSchema {
    match hub(value) {
        HubObject::FlowSchema(schema) => schema,
        other => panic!("not a FlowSchema: {other:?}"),
    }
}

/// One request of the universe, owned.
struct Owned {
    user: String,
    groups: Vec<String>,
    verb: String,
    resource: Option<(String, String, String, String)>,
    path: String,
}

impl Owned {
    fn with<R>(&self, use_it: impl FnOnce(&Request<'_>) -> R) -> R {
        let groups: Vec<&str> = self.groups.iter().map(String::as_str).collect();
        let (api_group, resource, subresource, namespace) = match &self.resource {
            Some((g, r, s, n)) => (g.as_str(), r.as_str(), s.as_str(), n.as_str()),
            None => ("", "", "", ""),
        };
        use_it(&Request {
            user: &self.user,
            groups: &groups,
            verb: &self.verb,
            is_resource_request: self.resource.is_some(),
            api_group,
            api_version: "v1",
            resource,
            subresource,
            namespace,
            name: "",
            path: &self.path,
        })
    }
}

/// Every request built from the values `schemas` name and a fresh value per dimension.
fn universe(schemas: &[&FlowSchema]) -> Vec<Owned> {
    let mut users = BTreeSet::from([FRESH.to_owned()]);
    let mut groups = BTreeSet::from([FRESH.to_owned()]);
    let (mut verbs, mut api_groups, mut namespaces) = (
        BTreeSet::from([FRESH.to_owned()]),
        BTreeSet::from([FRESH.to_owned()]),
        BTreeSet::from([FRESH.to_owned(), String::new()]),
    );
    let mut resources = BTreeSet::from([(FRESH.to_owned(), String::new())]);
    let mut paths = BTreeSet::from(["/".to_owned(), format!("/{FRESH}")]);
    let literal = |value: &String| value != "*";
    for rule in schemas.iter().flat_map(|s| s.spec.rules.iter().flatten()) {
        for subject in &rule.subjects {
            if let Some(user) = &subject.user {
                users.insert(user.name.clone());
            }
            if let Some(group) = &subject.group {
                groups.insert(group.name.clone());
            }
            if let Some(account) = &subject.service_account {
                let namespace = &account.namespace;
                users.insert(format!(
                    "system:serviceaccount:{namespace}:{}",
                    account.name
                ));
                users.insert(format!("system:serviceaccount:{namespace}:{FRESH}"));
                groups.insert("system:serviceaccounts".to_owned());
                groups.insert(format!("system:serviceaccounts:{namespace}"));
            }
        }
        for resource_rule in rule.resource_rules.iter().flatten() {
            verbs.extend(resource_rule.verbs.iter().filter(|v| literal(v)).cloned());
            api_groups.extend(
                resource_rule
                    .api_groups
                    .iter()
                    .filter(|v| literal(v))
                    .cloned(),
            );
            namespaces.extend(
                resource_rule
                    .namespaces
                    .iter()
                    .flatten()
                    .filter(|v| literal(v))
                    .cloned(),
            );
            for resource in resource_rule.resources.iter().filter(|v| literal(v)) {
                let (base, sub) = resource.split_once('/').unwrap_or((resource, ""));
                for sub in [sub, "", FRESH] {
                    resources.insert((base.to_owned(), sub.to_owned()));
                }
            }
        }
        for non_resource in rule.non_resource_rules.iter().flatten() {
            verbs.extend(non_resource.verbs.iter().filter(|v| literal(v)).cloned());
            for url in non_resource.non_resource_urls.iter().filter(|v| literal(v)) {
                let stem = url.strip_suffix('*').unwrap_or(url);
                for path in [
                    stem.to_owned(),
                    stem.trim_end_matches('/').to_owned(),
                    format!("{stem}{FRESH}"),
                    format!("{stem}/{FRESH}"),
                ] {
                    if !path.is_empty() {
                        paths.insert(path);
                    }
                }
            }
        }
    }
    // The wildcard names no user or group; the two system groups are the authenticator's.
    users.remove("*");
    users.insert(ANONYMOUS.to_owned());
    for server_assigned in ["*", AUTHENTICATED, UNAUTHENTICATED] {
        groups.remove(server_assigned);
    }
    let mut identities = Vec::new();
    for user in &users {
        if user == ANONYMOUS {
            identities.push((user.clone(), vec![UNAUTHENTICATED.to_owned()]));
            continue;
        }
        // The groups the user always has, and any set of the others on top.
        let mut always = vec![AUTHENTICATED.to_owned()];
        if let Some(namespace) = user
            .strip_prefix("system:serviceaccount:")
            .and_then(|rest| rest.split_once(':'))
            .map(|(namespace, _)| namespace)
        {
            always.push("system:serviceaccounts".to_owned());
            always.push(format!("system:serviceaccounts:{namespace}"));
        }
        let others: Vec<&String> = groups.iter().filter(|g| !always.contains(g)).collect();
        for mask in 0..(1u32 << others.len()) {
            let mut set = always.clone();
            set.extend(
                (0..others.len())
                    .filter(|bit| mask & (1 << bit) != 0)
                    .map(|bit| others[bit].clone()),
            );
            identities.push((user.clone(), set));
        }
    }
    let mut out = Vec::new();
    for (user, groups) in &identities {
        for verb in &verbs {
            for api_group in &api_groups {
                for (resource, subresource) in &resources {
                    for namespace in &namespaces {
                        out.push(Owned {
                            user: user.clone(),
                            groups: groups.clone(),
                            verb: verb.clone(),
                            resource: Some((
                                api_group.clone(),
                                resource.clone(),
                                subresource.clone(),
                                namespace.clone(),
                            )),
                            path: String::new(),
                        });
                    }
                }
            }
            for path in &paths {
                out.push(Owned {
                    user: user.clone(),
                    groups: groups.clone(),
                    verb: verb.clone(),
                    resource: None,
                    path: path.clone(),
                });
            }
        }
    }
    out
}

fn workload() -> PriorityLevelConfiguration {
    let level = hub(json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "workload"},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}},
    }));
    match level {
        HubObject::PriorityLevelConfiguration(level) => level,
        other => panic!("not a priority level: {other:?}"),
    }
}

/// The configuration of `schemas`, with the priority level `workload` they name; every schema
/// is valid and kept (none is left out, none dangles), so no case passes with nothing checked.
fn configuration(schemas: Vec<FlowSchema>) -> Configuration {
    let count = schemas.len();
    let config = Configuration::new([workload()], schemas, 600).expect("a configuration");
    let skipped: Vec<String> = config
        .skipped()
        .iter()
        .map(|s| format!("{}: {:?}", s.name, s.reasons))
        .collect();
    assert!(skipped.is_empty(), "invalid schemas generated: {skipped:?}");
    let kept = config.flow_schemas().iter().filter(|s| !s.imagined).count();
    assert_eq!(kept, count, "schemas left out of the configuration");
    config
}

/// A matcher of one rule alone: a configuration whose only schema of its own has that rule.
fn rule_alone(schema: &FlowSchema, rule: &PolicyRulesWithSubjects) -> (Classifier, usize) {
    let mut alone = schema.clone();
    alone.metadata.name = Some("rule-alone".to_owned());
    alone.spec.rules = Some(vec![rule.clone()]);
    let classifier =
        Classifier::new(Configuration::new_trusted([workload()], [alone], 600).unwrap());
    let position = classifier
        .config()
        .flow_schemas()
        .iter()
        .position(|s| s.name() == "rule-alone")
        .expect("the schema is kept");
    (classifier, position)
}

/// What brute force says of the rule: the positions of the schemas that the requests it
/// matches go to first, and whether one of them is its own.
fn brute_force(
    classifier: &Classifier,
    position: usize,
    rule: &PolicyRulesWithSubjects,
    universe: &[Owned],
) -> Coverage {
    let schema = &classifier.config().flow_schemas()[position].object;
    let (alone, alone_position) = rule_alone(schema, rule);
    let mut firsts = BTreeSet::new();
    for request in universe {
        if !request.with(|r| alone.schema_matches(alone_position, r)) {
            continue;
        }
        match request.with(|r| classifier.match_schema(r)) {
            Some(first) if first < position => {
                firsts.insert(first);
            }
            _ => return Coverage::Reaches,
        }
    }
    if firsts.is_empty() {
        Coverage::MatchesNothing
    } else {
        Coverage::Shadowed(firsts)
    }
}

/// `rule_coverage`'s verdict on every rule of every schema of `schemas`, against brute force's:
/// the same verdict, and a shadowed rule's schemas among those brute force sees it go to.
/// Returns the verdicts, for the count of what was checked.
fn check(schemas: Vec<FlowSchema>) -> Result<Vec<Coverage>, TestCaseError> {
    let classifier = Classifier::new(configuration(schemas));
    let ordered = classifier.config().flow_schemas();
    let all: Vec<&FlowSchema> = ordered.iter().map(|s| &s.object).collect();
    let requests = universe(&all);
    let mut verdicts = Vec::new();
    for (position, schema) in ordered.iter().enumerate() {
        if schema.imagined {
            continue;
        }
        let known = Vocabulary::of(all[..position].iter().copied());
        for (index, rule) in schema.object.spec.rules.iter().flatten().enumerate() {
            let claimed = rule_coverage(&classifier, position, rule, &known);
            let truth = brute_force(&classifier, position, rule, &requests);
            let context = format!(
                "{} rule {index} ({})",
                schema.name(),
                serde_json::to_string(rule).unwrap()
            );
            match (&claimed, &truth) {
                (Coverage::Shadowed(by), Coverage::Shadowed(all_by)) => {
                    prop_assert!(
                        by.is_subset(all_by),
                        "{context}: {by:?} not within {all_by:?}"
                    );
                }
                _ => prop_assert_eq!(&claimed, &truth, "{}", context),
            }
            verdicts.push(truth);
        }
    }
    Ok(verdicts)
}

/// Random configurations of two to four schemas: the representatives decide as every request
/// does, and the cases hold rules of each verdict (the check is not vacuous).
#[test]
fn representatives_decide_as_every_request_does() {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 300,
        ..ProptestConfig::default()
    });
    let verdicts = std::cell::RefCell::new(Vec::new());
    let result = runner.run(&schemas(), |schemas| {
        verdicts.borrow_mut().extend(check(schemas)?);
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
    let verdicts = verdicts.into_inner();
    let reaching = verdicts.iter().filter(|v| **v == Coverage::Reaches).count();
    let shadowed = verdicts
        .iter()
        .filter(|v| matches!(v, Coverage::Shadowed(_)))
        .count();
    assert!(
        reaching > 100 && shadowed > 100,
        "{reaching} reaching and {shadowed} shadowed rules of {}",
        verdicts.len()
    );
}

/// The brute force is not vacuous: over a fixed configuration it finds each verdict.
#[test]
fn brute_force_finds_every_verdict() {
    let rule = |subject: Value, verbs: &[&str]| json!({"subjects": [subject], "resourceRules": [{"verbs": verbs, "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}]});
    let schema = |name: &str, precedence: i32, rules: Vec<Value>| {
        flow_schema(json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": name},
            "spec": {"priorityLevelConfiguration": {"name": "workload"}, "matchingPrecedence": precedence, "rules": rules},
        }))
    };
    let authenticated = json!({"kind": "Group", "group": {"name": AUTHENTICATED}});
    let alice = json!({"kind": "User", "user": {"name": "alice"}});
    let anonymous = json!({"kind": "User", "user": {"name": ANONYMOUS}});
    let classifier = Classifier::new(configuration(vec![
        schema("everyone", 100, vec![rule(authenticated, &["get"])]),
        schema(
            "later",
            200,
            vec![rule(alice.clone(), &["get"]), rule(alice, &["list"])],
        ),
        schema("anonymous", 300, vec![rule(anonymous, &["get"])]),
    ]));
    let ordered = classifier.config().flow_schemas();
    let all: Vec<&FlowSchema> = ordered.iter().map(|s| &s.object).collect();
    let requests = universe(&all);
    let at = |name: &str| {
        ordered
            .iter()
            .position(|s| s.name() == name)
            .unwrap_or_else(|| {
                panic!(
                    "{name} not in {:?}",
                    ordered.iter().map(|s| s.name()).collect::<Vec<_>>()
                )
            })
    };
    let rules = |name: &str| ordered[at(name)].object.spec.rules.clone().unwrap();
    let everyone = at("everyone");
    // Alice's gets go to `everyone`, or with system:masters to `exempt`.
    assert_eq!(
        brute_force(&classifier, at("later"), &rules("later")[0], &requests),
        Coverage::Shadowed(BTreeSet::from([at("exempt"), everyone]))
    );
    assert_eq!(
        brute_force(&classifier, at("later"), &rules("later")[1], &requests),
        Coverage::Reaches
    );
    assert_eq!(
        brute_force(
            &classifier,
            at("anonymous"),
            &rules("anonymous")[0],
            &requests
        ),
        Coverage::Reaches
    );
    // The exempt schema (system:masters) goes before everything: a rule for that group
    // alone, after it, matches requests but reaches nothing.
    let masters = json!({"kind": "Group", "group": {"name": "system:masters"}});
    let classifier = Classifier::new(configuration(vec![schema(
        "masters",
        100,
        vec![rule(masters, &["get"])],
    )]));
    let ordered = classifier.config().flow_schemas();
    let all: Vec<&FlowSchema> = ordered.iter().map(|s| &s.object).collect();
    let position = ordered.iter().position(|s| s.name() == "masters").unwrap();
    let rules = ordered[position].object.spec.rules.clone().unwrap();
    assert!(matches!(
        brute_force(&classifier, position, &rules[0], &universe(&all)),
        Coverage::Shadowed(_)
    ));
}
