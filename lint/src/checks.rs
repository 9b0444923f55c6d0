//! The checks behind each rule.

use std::collections::BTreeSet;

use apfkit_dispatcher::bootstrap;
use apfkit_dispatcher::classify::Classifier;
use apfkit_dispatcher::config::{Configuration, LevelBehavior};
use apfkit_dispatcher::estimate::max_seats;
use apfkit_types::hub::flowcontrol::PolicyRulesWithSubjects;

use crate::shadow::{Coverage, Vocabulary, overlaps, rule_coverage};
use crate::{Finding, Input, rule};

const FLOW_SCHEMA: &str = "FlowSchema";
const PRIORITY_LEVEL: &str = "PriorityLevelConfiguration";

/// global-default's precedence: rules above it take requests from kube-apiserver's own
/// schemas.
const DEFAULTS_PRECEDENCE: i32 = 9900;

/// Every check's findings.
pub fn all(input: &Input, config: &Configuration) -> Vec<Finding> {
    let mut findings = Vec::new();
    let source_of_schema = |name: &str| {
        input
            .schemas
            .iter()
            .find(|(s, _)| s.metadata.name.as_deref() == Some(name))
            .and_then(|(_, source)| source.clone())
    };
    let source_of_level = |name: &str| {
        input
            .levels
            .iter()
            .find(|(l, _)| l.metadata.name.as_deref() == Some(name))
            .and_then(|(_, source)| source.clone())
    };
    let finding = |id: &str, kind: &'static str, name: &str, path: &str, message: String| {
        let source = if kind == FLOW_SCHEMA {
            source_of_schema(name)
        } else {
            source_of_level(name)
        };
        Finding {
            rule: rule(id).unwrap_or(&crate::RULES[0]),
            kind,
            name: name.to_owned(),
            source,
            path: path.to_owned(),
            message,
        }
    };
    invalid(config, &finding, &mut findings);
    dangling(config, &finding, &mut findings);
    unreachable_levels(config, &finding, &mut findings);
    mandatory(input, &finding, &mut findings);
    levels(config, &finding, &mut findings);
    let classifier = Classifier::new(config.clone());
    shadowed(&classifier, &finding, &mut findings);
    ties(&classifier, &finding, &mut findings);
    broad(config, &finding, &mut findings);
    findings
}

type Make<'a> = dyn Fn(&str, &'static str, &str, &str, String) -> Finding + 'a;

fn invalid(config: &Configuration, finding: &Make<'_>, out: &mut Vec<Finding>) {
    for skipped in config.skipped() {
        for reason in &skipped.reasons {
            out.push(finding(
                "APF012",
                skipped.kind,
                &skipped.name,
                &reason.path,
                reason.body(),
            ));
        }
    }
}

fn dangling(config: &Configuration, finding: &Make<'_>, out: &mut Vec<Finding>) {
    for condition in config.dangling_conditions() {
        if condition.status == "True" {
            out.push(finding(
                "APF004",
                FLOW_SCHEMA,
                &condition.flow_schema,
                "spec.priorityLevelConfiguration.name",
                condition.message.clone(),
            ));
        }
    }
}

fn unreachable_levels(config: &Configuration, finding: &Make<'_>, out: &mut Vec<Finding>) {
    let used: BTreeSet<&str> = config
        .flow_schemas()
        .iter()
        .map(|s| s.priority_level())
        .collect();
    for level in config.priority_levels() {
        if !level.imagined && !level.quiescing && !used.contains(level.name()) {
            out.push(finding(
                "APF005",
                PRIORITY_LEVEL,
                level.name(),
                "metadata.name",
                format!(
                    "no FlowSchema sends requests to {}; its {} nominal seats are idle but for what it lends",
                    level.name(),
                    level.limits.nominal
                ),
            ));
        }
    }
}

fn mandatory(input: &Input, finding: &Make<'_>, out: &mut Vec<Finding>) {
    for (schema, _) in &input.schemas {
        let name = schema.metadata.name.as_deref().unwrap_or_default();
        if let Some(builtin) = bootstrap::mandatory_flow_schema(name)
            && builtin.spec != schema.spec
        {
            out.push(finding(
                "APF008",
                FLOW_SCHEMA,
                name,
                "spec",
                format!("the mandatory FlowSchema {name} differs from kube-apiserver's; it is written back within a minute"),
            ));
        }
    }
    for (level, _) in &input.levels {
        let name = level.metadata.name.as_deref().unwrap_or_default();
        if let Some(builtin) = bootstrap::mandatory_priority_level(name)
            && builtin.spec != level.spec
        {
            out.push(finding(
                "APF008",
                PRIORITY_LEVEL,
                name,
                "spec",
                format!("the mandatory PriorityLevelConfiguration {name} differs from kube-apiserver's; it is written back within a minute"),
            ));
        }
    }
}

/// C(n, k) as a float (exact enough for a probability); 0 when k > n.
fn choose(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The probability that a flow's hand of `hand` of `queues` queues lies wholly among the
/// queues of `elephants` other flows' hands (each dealt at random): the union's size after
/// each hand is a Markov chain (a new hand adds k queues with the hypergeometric
/// probability C(queues − u, k) C(u, hand − k) / C(queues, hand)); then the mouse's hand is
/// inside a union of u queues with probability C(u, hand) / C(queues, hand).
fn crushed(queues: usize, hand: usize, elephants: usize) -> f64 {
    let hand = hand.min(queues);
    let all = choose(queues, hand);
    let mut union = vec![0.0f64; queues + 1];
    union[0] = 1.0;
    for _ in 0..elephants {
        let mut next = vec![0.0f64; queues + 1];
        for (size, p) in union.iter().enumerate().filter(|(_, p)| **p > 0.0) {
            for new in 0..=hand.min(queues - size) {
                let old = hand - new;
                if old > size {
                    continue;
                }
                next[size + new] += p * choose(queues - size, new) * choose(size, old) / all;
            }
        }
        union = next;
    }
    union
        .iter()
        .enumerate()
        .map(|(size, p)| p * choose(size, hand) / all)
        .sum()
}

fn levels(config: &Configuration, finding: &Make<'_>, out: &mut Vec<Finding>) {
    for level in config.priority_levels().iter().filter(|l| !l.imagined) {
        let name = level.name();
        lending(
            level.object.spec.limited.as_ref(),
            &level.limits,
            name,
            finding,
            out,
        );
        nominal(level, finding, out);
        let LevelBehavior::Queue {
            queues, hand_size, ..
        } = level.behavior
        else {
            continue;
        };
        let (queues, hand) = (queues.max(1) as usize, hand_size.max(1) as usize);
        let shared = crushed(queues, hand, 1);
        if shared > 0.01 {
            let ten = crushed(queues, hand, 10);
            out.push(finding(
                "APF009",
                PRIORITY_LEVEL,
                name,
                "spec.limited.limitResponse.queuing.handSize",
                format!(
                    "with {queues} queues and a hand of {hand}, a flow shares all its queues with a given heavy flow with probability {:.3} (1 in {:.0}), with ten heavy flows {:.3}",
                    shared,
                    1.0 / shared,
                    ten
                ),
            ));
        }
        let cap = max_seats(level.limits.nominal, hand_size);
        if cap < 2 && level.limits.nominal > 0 {
            out.push(finding(
                "APF013",
                PRIORITY_LEVEL,
                name,
                "spec.limited.nominalConcurrencyShares",
                format!(
                    "with {} nominal seats and a hand of {hand}, a request may take at most {cap} seat: a LIST of any size counts as one",
                    level.limits.nominal
                ),
            ));
        }
    }
}

fn lending(
    limited: Option<&apfkit_types::hub::flowcontrol::LimitedPriorityLevelConfiguration>,
    limits: &apfkit_dispatcher::config::StaticLimits,
    name: &str,
    finding: &Make<'_>,
    out: &mut Vec<Finding>,
) {
    let Some(limited) = limited else { return };
    if limited.lendable_percent == Some(100) {
        out.push(finding(
            "APF010",
            PRIORITY_LEVEL,
            name,
            "spec.limited.lendablePercent",
            "lendablePercent 100 makes its lower limit 0: while others borrow it can be left with no seat".to_owned(),
        ));
    } else if limits.nominal > 0 && limits.min == 0 {
        // kube-apiserver rounds the lendable seats half away from zero (apf_controller.go,
        // math.Round): at a small server concurrency a level's only seats may all be lendable.
        out.push(finding(
            "APF010",
            PRIORITY_LEVEL,
            name,
            "spec.limited.lendablePercent",
            format!(
                "lendablePercent {} of its {} nominal seats rounds to {} lendable: its lower limit \
                 is 0 at this server concurrency, so while idle it can lend every seat and its \
                 next requests wait for the next adjustment (up to 10 s)",
                limited.lendable_percent.unwrap_or_default(),
                limits.nominal,
                limits.lendable
            ),
        ));
    }
    if limited.borrowing_limit_percent == Some(0) {
        out.push(finding(
            "APF010",
            PRIORITY_LEVEL,
            name,
            "spec.limited.borrowingLimitPercent",
            "borrowingLimitPercent 0: it never borrows seats other levels leave idle".to_owned(),
        ));
    }
}

fn nominal(
    level: &apfkit_dispatcher::config::PriorityLevel,
    finding: &Make<'_>,
    out: &mut Vec<Finding>,
) {
    if level.object.spec.type_ == "Limited" && level.limits.nominal == 0 {
        // kube-apiserver lets a request wider than the level's limit run alone when none of
        // the level's requests executes (queueset.go, canAccommodateSeatsLocked; kubernetes
        // issue 134196): with a limit of 0, that is every request while the level is idle.
        let message = match level.behavior {
            LevelBehavior::Reject => format!(
                "{} has 0 nominal seats and rejects rather than queues, yet it still runs one \
                 request at a time whenever none of its own is executing (kubernetes issue \
                 134196): it does not refuse all its requests",
                level.name()
            ),
            // A queuing level dispatches only while its seats in use are below its limit
            // (queueset.go, dispatchAsMuchAsPossibleLocked): with 0, only borrowed seats run
            // its queued requests.
            _ => format!(
                "{} has 0 nominal seats: its requests wait in its queues for seats it borrows, \
                 and time out when none come",
                level.name()
            ),
        };
        out.push(finding(
            "APF011",
            PRIORITY_LEVEL,
            level.name(),
            "spec.limited.nominalConcurrencyShares",
            message,
        ));
    }
}

/// The schemas' names for positions in matching order.
fn names(classifier: &Classifier, positions: &BTreeSet<usize>) -> String {
    positions
        .iter()
        .filter_map(|p| classifier.config().flow_schemas().get(*p))
        .map(|s| s.name().to_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

fn shadowed(classifier: &Classifier, finding: &Make<'_>, out: &mut Vec<Finding>) {
    let schemas = classifier.config().flow_schemas();
    // The values of the schemas before the one checked, gathered once as the loop goes.
    let mut known = Vocabulary::default();
    for (position, schema) in schemas.iter().enumerate() {
        // The mandatory catch-all is shadowed by global-default by design: it is the net for
        // configurations without it.
        if !schema.imagined && !bootstrap::MANDATORY.contains(&schema.name()) {
            shadowed_schema(classifier, position, &known, finding, out);
        }
        known.extend(&schema.object);
    }
}

/// The APF001 or APF002 findings of the schema at `position`, whose predecessors' values
/// are `known`.
fn shadowed_schema(
    classifier: &Classifier,
    position: usize,
    known: &Vocabulary,
    finding: &Make<'_>,
    out: &mut Vec<Finding>,
) {
    let schema = &classifier.config().flow_schemas()[position];
    let rules: Vec<&PolicyRulesWithSubjects> = schema.object.spec.rules.iter().flatten().collect();
    let coverage: Vec<Coverage> = rules
        .iter()
        .map(|rule| rule_coverage(classifier, position, rule, known))
        .collect();
    let shadowed: Vec<(usize, &BTreeSet<usize>)> = coverage
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match c {
            Coverage::Shadowed(by) => Some((i, by)),
            _ => None,
        })
        .collect();
    let reaching = coverage
        .iter()
        .any(|c| matches!(c, Coverage::Reaches | Coverage::Undecided));
    if !rules.is_empty() && !reaching && !shadowed.is_empty() {
        let by: BTreeSet<usize> = shadowed
            .iter()
            .flat_map(|(_, by)| by.iter().copied())
            .collect();
        out.push(finding(
            "APF001",
            FLOW_SCHEMA,
            schema.name(),
            "spec.rules",
            format!(
                "every request {} matches goes first to {}",
                schema.name(),
                names(classifier, &by)
            ),
        ));
    } else if reaching {
        for (index, by) in shadowed {
            out.push(finding(
                "APF002",
                FLOW_SCHEMA,
                schema.name(),
                &format!("spec.rules[{index}]"),
                format!(
                    "every request this rule matches goes first to {}",
                    names(classifier, by)
                ),
            ));
        }
    }
}

fn ties(classifier: &Classifier, finding: &Make<'_>, out: &mut Vec<Finding>) {
    let schemas = classifier.config().flow_schemas();
    for (position, schema) in schemas.iter().enumerate() {
        let precedence = schema.object.spec.matching_precedence.unwrap_or_default();
        for (earlier_position, earlier) in schemas[..position].iter().enumerate() {
            if earlier.object.spec.matching_precedence.unwrap_or_default() != precedence
                || schema.imagined
                || earlier.imagined
            {
                continue;
            }
            let known = Vocabulary::of([&earlier.object]);
            let common = schema
                .object
                .spec
                .rules
                .iter()
                .flatten()
                .any(|rule| overlaps(classifier, earlier_position, rule, &known));
            if common {
                out.push(finding(
                    "APF003",
                    FLOW_SCHEMA,
                    schema.name(),
                    "spec.matchingPrecedence",
                    format!(
                        "{} and {} both have matchingPrecedence {precedence} and match common requests; {} takes them because its name sorts first",
                        schema.name(),
                        earlier.name(),
                        earlier.name()
                    ),
                ));
            }
        }
    }
}

/// Health probes' URLs, which kube-apiserver exempts.
const PROBES: [&str; 3] = ["/healthz", "/livez", "/readyz"];

fn only_masters(rule: &PolicyRulesWithSubjects) -> bool {
    rule.subjects
        .iter()
        .all(|s| s.kind == "Group" && s.group.as_ref().is_some_and(|g| g.name == "system:masters"))
}

fn only_probes(rule: &PolicyRulesWithSubjects) -> bool {
    rule.resource_rules.as_ref().is_none_or(Vec::is_empty)
        && rule.non_resource_rules.iter().flatten().all(|r| {
            r.non_resource_urls.iter().all(|url| {
                PROBES.iter().any(|p| {
                    url == p
                        || url
                            .strip_prefix(p)
                            .is_some_and(|rest| rest.starts_with('/'))
                })
            })
        })
}

fn everyone(rule: &PolicyRulesWithSubjects) -> bool {
    rule.subjects.iter().any(|s| match s.kind.as_str() {
        "Group" => s.group.as_ref().is_some_and(|g| {
            matches!(
                g.name.as_str(),
                "*" | "system:authenticated" | "system:unauthenticated"
            )
        }),
        "User" => s.user.as_ref().is_some_and(|u| u.name == "*"),
        _ => false,
    })
}

fn all_of(values: &[String]) -> bool {
    values.iter().any(|v| v == "*")
}

fn broad(config: &Configuration, finding: &Make<'_>, out: &mut Vec<Finding>) {
    for schema in config.flow_schemas().iter().filter(|s| !s.imagined) {
        let exempt = config
            .priority_level(schema.priority_level())
            .is_some_and(|l| matches!(l.behavior, LevelBehavior::Exempt));
        let precedence = schema.object.spec.matching_precedence.unwrap_or_default();
        for (index, rule) in schema.object.spec.rules.iter().flatten().enumerate() {
            if exempt && !only_masters(rule) && !only_probes(rule) {
                out.push(finding(
                    "APF006",
                    FLOW_SCHEMA,
                    schema.name(),
                    &format!("spec.rules[{index}]"),
                    format!(
                        "requests of this rule go to the exempt level {}: neither queued nor limited",
                        schema.priority_level()
                    ),
                ));
            }
            let all_requests = rule.resource_rules.iter().flatten().any(|r| {
                all_of(&r.verbs)
                    && all_of(&r.api_groups)
                    && all_of(&r.resources)
                    && all_of(r.namespaces.as_deref().unwrap_or_default())
            });
            if !exempt && precedence < DEFAULTS_PRECEDENCE && everyone(rule) && all_requests {
                out.push(finding(
                    "APF007",
                    FLOW_SCHEMA,
                    schema.name(),
                    &format!("spec.rules[{index}]"),
                    format!(
                        "this rule takes every resource request of every user at precedence {precedence}, ahead of kube-apiserver's schemas (global-default is at {DEFAULTS_PRECEDENCE})"
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{choose, crushed};

    #[test]
    fn one_elephant_is_one_hand_in_c_queues_hand() {
        assert!((crushed(8, 2, 1) - 1.0 / 28.0).abs() < 1e-12);
        assert!((crushed(64, 6, 1) - 1.0 / choose(64, 6)).abs() < 1e-18);
        assert_eq!(crushed(4, 4, 1), 1.0, "a hand of every queue");
    }

    #[test]
    fn more_elephants_crush_more_and_the_chain_sums_to_one() {
        let few = crushed(8, 2, 1);
        let many = crushed(8, 2, 10);
        assert!(many > few && many < 1.0, "{few} {many}");
        // Ten hands of 2 out of 4 queues cover all of them almost surely.
        assert!(crushed(4, 2, 10) > 0.99);
        // Against a brute count: 3 queues, hands of 1, two elephants: the mouse's queue is
        // among theirs with probability 1 − (2/3)² = 5/9.
        assert!((crushed(3, 1, 2) - 5.0 / 9.0).abs() < 1e-12);
    }
}
