//! What one RBAC rule allows, as kubernetes' RBAC authorizer reads it
//! (`plugin/pkg/auth/authorizer/rbac/rbac.go`, `RuleAllows`, on the matchers of
//! `pkg/apis/rbac/v1/evaluation_helpers.go`), and whether some rules cover others, as
//! kube-apiserver checks that a user grants only what it holds
//! (`k8s.io/component-helpers/auth/rbac/validation/policy_comparator.go`, `Covers`).

use apfkit_apiserver::authz::Attributes;
use k8s_openapi::api::rbac::v1::PolicyRule;

/// Any verb, group, resource or path.
pub const ALL: &str = "*";

fn list(values: &Option<Vec<String>>) -> &[String] {
    values.as_deref().unwrap_or_default()
}

fn has(set: &[String], wanted: &str) -> bool {
    set.iter().any(|value| value == wanted)
}

/// Whether `rule` allows the request `attributes` describes (`RuleAllows`).
pub fn rule_allows(attributes: &Attributes, rule: &PolicyRule) -> bool {
    if !verb_matches(rule, &attributes.verb) {
        return false;
    }
    if !attributes.resource_request {
        return non_resource_url_matches(rule, &attributes.path);
    }
    let combined = if attributes.subresource.is_empty() {
        attributes.resource.clone()
    } else {
        format!("{}/{}", attributes.resource, attributes.subresource)
    };
    api_group_matches(rule, &attributes.api_group)
        && resource_matches(rule, &combined, &attributes.subresource)
        && resource_name_matches(rule, &attributes.name)
}

/// `VerbMatches`.
fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// `APIGroupMatches`.
fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    list(&rule.api_groups)
        .iter()
        .any(|g| g == ALL || g == group)
}

/// `ResourceMatches`: `*`, the exact `resource/subresource`, or `*/subresource`.
fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    list(&rule.resources).iter().any(|resource| {
        resource == ALL
            || resource == combined
            || (!subresource.is_empty()
                && resource.len() == subresource.len() + 2
                && resource.starts_with("*/")
                && resource.ends_with(subresource))
    })
}

/// `ResourceNameMatches`: any name when the rule names none.
fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    let names = list(&rule.resource_names);
    names.is_empty() || has(names, name)
}

/// `NonResourceURLMatches`: `*`, the exact path, or a prefix ending in `*`.
fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    list(&rule.non_resource_urls)
        .iter()
        .any(|url| url == ALL || url == path || non_resource_url_covers(url, path))
}

/// Whether `owner` (maybe ending in `*`) covers the path `path` (`nonResourceURLCovers`).
fn non_resource_url_covers(owner: &str, path: &str) -> bool {
    owner == path
        || owner
            .strip_suffix('*')
            .is_some_and(|_| path.starts_with(owner.trim_end_matches('*')))
}

/// `rule` broken into rules of one group, resource, verb and name each (or one path and
/// verb), which a single owner rule either covers or not (`BreakdownRule`).
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |value: &String| Some(vec![value.clone()]);
    let mut rules = Vec::new();
    for group in list(&rule.api_groups) {
        for resource in list(&rule.resources) {
            for verb in &rule.verbs {
                let names = list(&rule.resource_names);
                if names.is_empty() {
                    rules.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: vec![verb.clone()],
                        ..PolicyRule::default()
                    });
                }
                for name in names {
                    rules.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: vec![verb.clone()],
                        resource_names: one(name),
                        ..PolicyRule::default()
                    });
                }
            }
        }
    }
    for url in list(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            rules.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: vec![verb.clone()],
                ..PolicyRule::default()
            });
        }
    }
    rules
}

/// Whether `owner` covers every action of `servant`, and the broken-down rules it does not
/// cover (`Covers`).
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|rule| rule_covers(rule, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|value| has(set, value))
}

/// `resourceCoversAll`: `*`, every resource named, or `*/sub` for a `resource/sub`.
fn resource_covers_all(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

/// `ruleCovers`: whether an owner rule covers a broken-down rule.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(list(&owner.api_groups), ALL)
        || has_all(list(&owner.api_groups), list(&sub.api_groups));
    let resources = resource_covers_all(list(&owner.resources), list(&sub.resources));
    let urls = list(&sub.non_resource_urls).iter().all(|path| {
        list(&owner.non_resource_urls)
            .iter()
            .any(|url| non_resource_url_covers(url, path))
    });
    let owner_names = list(&owner.resource_names);
    let names = owner_names.is_empty()
        || (!list(&sub.resource_names).is_empty()
            && has_all(owner_names, list(&sub.resource_names)));
    verbs && groups && resources && names && urls
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_strings(values: &[String]) -> String {
    let quoted: Vec<String> = values
        .iter()
        .map(|v| apfkit_runtime::field::go_quote(v))
        .collect();
    format!("[{}]", quoted.join(" "))
}

/// A rule as kube-apiserver prints it in escalation errors (`CompactString`):
/// `{APIGroups:["flowcontrol.apiserver.k8s.io"], Resources:["flowschemas"], Verbs:["get"]}`.
pub fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    let mut part = |name: &str, values: &[String]| {
        if !values.is_empty() {
            parts.push(format!("{name}:{}", go_strings(values)));
        }
    };
    part("APIGroups", list(&rule.api_groups));
    part("Resources", list(&rule.resources));
    part("NonResourceURLs", list(&rule.non_resource_urls));
    part("ResourceNames", list(&rule.resource_names));
    part("Verbs", &rule.verbs);
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rbacv1helpers.NewRule(verbs...).Groups(...).Resources(...).URLs(...)`.
    pub(crate) fn rule(verbs: &[&str]) -> RuleBuilder {
        RuleBuilder(PolicyRule {
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            ..PolicyRule::default()
        })
    }

    pub(crate) struct RuleBuilder(PolicyRule);

    fn strings(values: &[&str]) -> Option<Vec<String>> {
        Some(values.iter().map(|v| (*v).to_owned()).collect())
    }

    impl RuleBuilder {
        pub(crate) fn groups(mut self, groups: &[&str]) -> Self {
            self.0.api_groups = strings(groups);
            self
        }
        pub(crate) fn resources(mut self, resources: &[&str]) -> Self {
            self.0.resources = strings(resources);
            self
        }
        pub(crate) fn names(mut self, names: &[&str]) -> Self {
            self.0.resource_names = strings(names);
            self
        }
        pub(crate) fn urls(mut self, urls: &[&str]) -> Self {
            self.0.non_resource_urls = strings(urls);
            self
        }
        pub(crate) fn rule(self) -> PolicyRule {
            self.0
        }
    }

    fn resource_request(verb: &str, group: &str, resource: &str, sub: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            ..Attributes::default()
        }
    }

    fn path_request(verb: &str, path: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            path: path.into(),
            ..Attributes::default()
        }
    }

    /// `plugin/pkg/auth/authorizer/rbac/rbac_test.go`, `TestRuleMatches`, every case.
    #[test]
    fn test_rule_matches() {
        let r = resource_request;
        type Case = (&'static str, PolicyRule, Vec<(Attributes, bool)>);
        let cases: Vec<Case> = vec![
            (
                "star verb, exact match other",
                rule(&["*"])
                    .groups(&["group1"])
                    .resources(&["resource1"])
                    .rule(),
                vec![
                    (r("verb1", "group1", "resource1", ""), true),
                    (r("verb1", "group2", "resource1", ""), false),
                    (r("verb1", "group1", "resource2", ""), false),
                    (r("verb1", "group2", "resource2", ""), false),
                    (r("verb2", "group1", "resource1", ""), true),
                    (r("verb2", "group2", "resource1", ""), false),
                    (r("verb2", "group1", "resource2", ""), false),
                    (r("verb2", "group2", "resource2", ""), false),
                ],
            ),
            (
                "star group, exact match other",
                rule(&["verb1"])
                    .groups(&["*"])
                    .resources(&["resource1"])
                    .rule(),
                vec![
                    (r("verb1", "group1", "resource1", ""), true),
                    (r("verb1", "group2", "resource1", ""), true),
                    (r("verb1", "group1", "resource2", ""), false),
                    (r("verb1", "group2", "resource2", ""), false),
                    (r("verb2", "group1", "resource1", ""), false),
                    (r("verb2", "group2", "resource1", ""), false),
                    (r("verb2", "group1", "resource2", ""), false),
                    (r("verb2", "group2", "resource2", ""), false),
                ],
            ),
            (
                "star resource, exact match other",
                rule(&["verb1"])
                    .groups(&["group1"])
                    .resources(&["*"])
                    .rule(),
                vec![
                    (r("verb1", "group1", "resource1", ""), true),
                    (r("verb1", "group2", "resource1", ""), false),
                    (r("verb1", "group1", "resource2", ""), true),
                    (r("verb1", "group2", "resource2", ""), false),
                    (r("verb2", "group1", "resource1", ""), false),
                    (r("verb2", "group2", "resource1", ""), false),
                    (r("verb2", "group1", "resource2", ""), false),
                    (r("verb2", "group2", "resource2", ""), false),
                ],
            ),
            (
                "tuple expansion",
                rule(&["verb1", "verb2"])
                    .groups(&["group1", "group2"])
                    .resources(&["resource1", "resource2"])
                    .rule(),
                vec![
                    (r("verb1", "group1", "resource1", ""), true),
                    (r("verb1", "group2", "resource1", ""), true),
                    (r("verb1", "group1", "resource2", ""), true),
                    (r("verb1", "group2", "resource2", ""), true),
                    (r("verb2", "group1", "resource1", ""), true),
                    (r("verb2", "group2", "resource1", ""), true),
                    (r("verb2", "group1", "resource2", ""), true),
                    (r("verb2", "group2", "resource2", ""), true),
                ],
            ),
            (
                "subresource expansion",
                rule(&["*"])
                    .groups(&["*"])
                    .resources(&["resource1/subresource1"])
                    .rule(),
                vec![
                    (r("verb1", "group1", "resource1", "subresource1"), true),
                    (r("verb1", "group2", "resource1", "subresource2"), false),
                    (r("verb1", "group1", "resource2", "subresource1"), false),
                    (r("verb1", "group2", "resource2", "subresource1"), false),
                    (r("verb2", "group1", "resource1", "subresource1"), true),
                    (r("verb2", "group2", "resource1", "subresource2"), false),
                    (r("verb2", "group1", "resource2", "subresource1"), false),
                    (r("verb2", "group2", "resource2", "subresource1"), false),
                ],
            ),
            (
                "star nonresource, exact match other",
                rule(&["verb1"]).urls(&["*"]).rule(),
                vec![
                    (path_request("verb1", "/foo"), true),
                    (path_request("verb1", "/foo/bar"), true),
                    (path_request("verb1", "/foo/baz"), true),
                    (path_request("verb1", "/foo/bar/one"), true),
                    (path_request("verb1", "/foo/baz/one"), true),
                    (path_request("verb2", "/foo"), false),
                    (path_request("verb2", "/foo/bar"), false),
                    (path_request("verb2", "/foo/baz"), false),
                    (path_request("verb2", "/foo/bar/one"), false),
                    (path_request("verb2", "/foo/baz/one"), false),
                ],
            ),
            (
                "star nonresource subpath",
                rule(&["verb1"]).urls(&["/foo/*"]).rule(),
                vec![
                    (path_request("verb1", "/foo"), false),
                    (path_request("verb1", "/foo/bar"), true),
                    (path_request("verb1", "/foo/baz"), true),
                    (path_request("verb1", "/foo/bar/one"), true),
                    (path_request("verb1", "/foo/baz/one"), true),
                    (path_request("verb1", "/notfoo"), false),
                    (path_request("verb1", "/notfoo/bar"), false),
                    (path_request("verb1", "/notfoo/baz"), false),
                    (path_request("verb1", "/notfoo/bar/one"), false),
                    (path_request("verb1", "/notfoo/baz/one"), false),
                ],
            ),
            (
                "star verb, exact nonresource",
                rule(&["*"]).urls(&["/foo", "/foo/bar/one"]).rule(),
                vec![
                    (path_request("verb1", "/foo"), true),
                    (path_request("verb1", "/foo/bar"), false),
                    (path_request("verb1", "/foo/baz"), false),
                    (path_request("verb1", "/foo/bar/one"), true),
                    (path_request("verb1", "/foo/baz/one"), false),
                    (path_request("verb2", "/foo"), true),
                    (path_request("verb2", "/foo/bar"), false),
                    (path_request("verb2", "/foo/baz"), false),
                    (path_request("verb2", "/foo/bar/one"), true),
                    (path_request("verb2", "/foo/baz/one"), false),
                ],
            ),
        ];
        for (name, rule, requests) in cases {
            for (request, expected) in requests {
                assert_eq!(
                    rule_allows(&request, &rule),
                    expected,
                    "{name}: {request:?}"
                );
            }
        }
    }

    /// A rule as the Go tests write one: `{APIGroups, Verbs, Resources, ResourceNames,
    /// NonResourceURLs}`, `None` for a list the literal leaves out.
    fn pr(
        groups: Option<&[&str]>,
        verbs: &[&str],
        resources: Option<&[&str]>,
        names: Option<&[&str]>,
        urls: Option<&[&str]>,
    ) -> PolicyRule {
        PolicyRule {
            api_groups: groups.and_then(strings),
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            resources: resources.and_then(strings),
            resource_names: names.and_then(strings),
            non_resource_urls: urls.and_then(strings),
        }
    }

    /// `k8s.io/component-helpers/auth/rbac/validation/policy_comparator_test.go`: every
    /// `TestCovers*` case, by its test's name.
    #[test]
    fn test_covers() {
        let res = |g: &[&str], v: &[&str], r: &[&str]| pr(Some(g), v, Some(r), None, None);
        let named =
            |g: &[&str], v: &[&str], r: &[&str], n: &[&str]| pr(Some(g), v, Some(r), Some(n), None);
        let urls = |v: &[&str], u: &[&str]| pr(None, v, None, None, Some(u));
        type Case = (
            &'static str,
            Vec<PolicyRule>,
            Vec<PolicyRule>,
            bool,
            Vec<PolicyRule>,
        );
        let cases: Vec<Case> = vec![
            (
                "TestCoversExactMatch",
                vec![res(&["v1"], &["get"], &["builds"])],
                vec![res(&["v1"], &["get"], &["builds"])],
                true,
                vec![],
            ),
            (
                "TestCoversSubresourceWildcard",
                vec![res(&["v1"], &["get"], &["*/scale"])],
                vec![res(&["v1"], &["get"], &["foo/scale"])],
                true,
                vec![],
            ),
            (
                "TestCoversMultipleRulesCoveringSingleRule",
                vec![
                    res(&["v1"], &["delete"], &["deployments"]),
                    res(&["v1"], &["delete"], &["builds"]),
                    res(&["v1"], &["update"], &["builds", "deployments"]),
                ],
                vec![res(
                    &["v1"],
                    &["delete", "update"],
                    &["builds", "deployments"],
                )],
                true,
                vec![],
            ),
            (
                "TestCoversMultipleAPIGroupsCoveringSingleRule",
                vec![
                    res(&["group1"], &["delete"], &["deployments"]),
                    res(&["group1"], &["delete"], &["builds"]),
                    res(&["group1"], &["update"], &["builds", "deployments"]),
                    res(&["group2"], &["delete"], &["deployments"]),
                    res(&["group2"], &["delete"], &["builds"]),
                    res(&["group2"], &["update"], &["builds", "deployments"]),
                ],
                vec![res(
                    &["group1", "group2"],
                    &["delete", "update"],
                    &["builds", "deployments"],
                )],
                true,
                vec![],
            ),
            (
                "TestCoversSingleAPIGroupsCoveringMultiple",
                vec![res(
                    &["group1", "group2"],
                    &["delete", "update"],
                    &["builds", "deployments"],
                )],
                vec![
                    res(&["group1"], &["delete"], &["deployments"]),
                    res(&["group1"], &["delete"], &["builds"]),
                    res(&["group1"], &["update"], &["builds", "deployments"]),
                    res(&["group2"], &["delete"], &["deployments"]),
                    res(&["group2"], &["delete"], &["builds"]),
                    res(&["group2"], &["update"], &["builds", "deployments"]),
                ],
                true,
                vec![],
            ),
            (
                "TestCoversMultipleRulesMissingSingleVerbResourceCombination",
                vec![
                    res(&["v1"], &["delete", "update"], &["builds", "deployments"]),
                    res(&["v1"], &["delete"], &["pods"]),
                ],
                vec![res(
                    &["v1"],
                    &["delete", "update"],
                    &["builds", "deployments", "pods"],
                )],
                false,
                vec![res(&["v1"], &["update"], &["pods"])],
            ),
            (
                "TestCoversAPIGroupStarCoveringMultiple",
                vec![res(&["*"], &["get"], &["roles"])],
                vec![res(&["group1", "group2"], &["get"], &["roles"])],
                true,
                vec![],
            ),
            (
                "TestCoversEnumerationNotCoveringAPIGroupStar",
                vec![res(&["dummy-group"], &["get"], &["roles"])],
                vec![res(&["*"], &["get"], &["roles"])],
                false,
                vec![res(&["*"], &["get"], &["roles"])],
            ),
            (
                "TestCoversAPIGroupStarCoveringStar",
                vec![res(&["*"], &["get"], &["roles"])],
                vec![res(&["*"], &["get"], &["roles"])],
                true,
                vec![],
            ),
            (
                "TestCoversVerbStarCoveringMultiple",
                vec![res(&["v1"], &["*"], &["roles"])],
                vec![res(&["v1"], &["watch", "list"], &["roles"])],
                true,
                vec![],
            ),
            (
                "TestCoversEnumerationNotCoveringVerbStar",
                vec![res(
                    &["v1"],
                    &["get", "list", "watch", "create", "update", "delete", "exec"],
                    &["roles"],
                )],
                vec![res(&["v1"], &["*"], &["roles"])],
                false,
                vec![res(&["v1"], &["*"], &["roles"])],
            ),
            (
                "TestCoversVerbStarCoveringStar",
                vec![res(&["v1"], &["*"], &["roles"])],
                vec![res(&["v1"], &["*"], &["roles"])],
                true,
                vec![],
            ),
            (
                "TestCoversResourceStarCoveringMultiple",
                vec![res(&["v1"], &["get"], &["*"])],
                vec![res(&["v1"], &["get"], &["resourcegroup:deployments"])],
                true,
                vec![],
            ),
            (
                "TestCoversEnumerationNotCoveringResourceStar",
                vec![res(
                    &["v1"],
                    &["get"],
                    &["roles", "resourcegroup:deployments"],
                )],
                vec![res(&["v1"], &["get"], &["*"])],
                false,
                vec![res(&["v1"], &["get"], &["*"])],
            ),
            (
                "TestCoversResourceStarCoveringStar",
                vec![res(&["v1"], &["get"], &["*"])],
                vec![res(&["v1"], &["get"], &["*"])],
                true,
                vec![],
            ),
            (
                "TestCoversResourceNameEmptyCoveringMultiple",
                vec![named(&["v1"], &["get"], &["pods"], &[])],
                vec![named(&["v1"], &["get"], &["pods"], &["foo", "bar"])],
                true,
                vec![],
            ),
            (
                "TestCoversEnumerationNotCoveringResourceNameEmpty",
                vec![named(&["v1"], &["get"], &["pods"], &["foo", "bar"])],
                vec![named(&["v1"], &["get"], &["pods"], &[])],
                false,
                vec![res(&["v1"], &["get"], &["pods"])],
            ),
            (
                "TestCoversNonResourceURLs",
                vec![urls(&["*"], &["/apis"])],
                vec![urls(&["*"], &["/apis"])],
                true,
                vec![],
            ),
            (
                "TestCoversNonResourceURLsStar",
                vec![urls(&["*"], &["*"])],
                vec![urls(&["*"], &["/apis", "/apis/v1", "/"])],
                true,
                vec![],
            ),
            (
                "TestCoversNonResourceURLsStarAfterPrefixDoesntCover",
                vec![urls(&["*"], &["/apis/*"])],
                vec![urls(&["get"], &["/apis", "/apis/v1"])],
                false,
                vec![urls(&["get"], &["/apis"])],
            ),
            (
                "TestCoversNonResourceURLsStarAfterPrefix",
                vec![urls(&["*"], &["/apis/*"])],
                vec![urls(&["get"], &["/apis/v1/foo", "/apis/v1"])],
                true,
                vec![],
            ),
            (
                "TestCoversNonResourceURLsWithOtherFields",
                vec![pr(
                    Some(&["v1"]),
                    &["get"],
                    Some(&["builds"]),
                    None,
                    Some(&["/apis"]),
                )],
                vec![pr(
                    Some(&["v1"]),
                    &["get"],
                    Some(&["builds"]),
                    None,
                    Some(&["/apis"]),
                )],
                true,
                vec![],
            ),
            (
                "TestCoversNonResourceURLsWithOtherFieldsFailure",
                vec![res(&["v1"], &["get"], &["builds"])],
                vec![pr(
                    Some(&["v1"]),
                    &["get"],
                    Some(&["builds"]),
                    None,
                    Some(&["/apis"]),
                )],
                false,
                vec![urls(&["get"], &["/apis"])],
            ),
        ];
        for (name, owner, servant, expected, missing) in cases {
            let (covered, uncovered) = covers(&owner, &servant);
            assert_eq!(covered, expected, "{name}");
            assert_eq!(uncovered, missing, "{name}");
        }
    }

    /// `policy_comparator_test.go`, `TestNonResourceURLCovers`.
    #[test]
    fn test_non_resource_url_covers() {
        let cases = [
            ("*", "", true),
            ("*", "/", true),
            ("*", "/api", true),
            ("/*", "", false),
            ("/*", "/", true),
            ("/*", "/foo", true),
            ("/api", "/api", true),
            ("/apis", "/api", false),
            ("/api/v1", "/api", false),
            ("/api/v1", "/api/v1", true),
            ("/api/*", "/api/v1", true),
            ("/api/*", "/api", false),
            ("/api/*/*", "/api/v1", false),
            ("/*/v1/*", "/api/v1", false),
        ];
        for (owner, requested, want) in cases {
            assert_eq!(
                non_resource_url_covers(owner, requested),
                want,
                "{owner:?} {requested:?}"
            );
        }
    }

    #[test]
    fn rules_print_as_kube_prints_them_in_escalation_errors() {
        let printed = compact_string(
            &rule(&["get", "list"])
                .groups(&["flowcontrol.apiserver.k8s.io"])
                .resources(&["flowschemas"])
                .names(&["a"])
                .rule(),
        );
        assert_eq!(
            printed,
            r#"{APIGroups:["flowcontrol.apiserver.k8s.io"], Resources:["flowschemas"], ResourceNames:["a"], Verbs:["get" "list"]}"#
        );
        assert_eq!(
            compact_string(&rule(&["get"]).urls(&["/metrics"]).rule()),
            r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#
        );
    }
}
