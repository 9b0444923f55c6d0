//! The rules `apfkit lint` checks, each with an id, a severity and the page
//! `apfkit lint --explain ID` prints.

use serde::Serialize;

/// How much a finding matters; SARIF's `level` of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Note,
    /// Probably not what was meant.
    Warning,
    /// The configuration does not do what it says.
    Error,
}

impl Severity {
    /// The lower-case name (`note`, `warning`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Its id, such as `APF001`.
    pub id: &'static str,
    /// Its name, such as `shadowed-flow-schema`.
    pub name: &'static str,
    /// Its severity.
    pub severity: Severity,
    /// One line.
    pub summary: &'static str,
    /// What it means, why it matters and what to do: the `--explain` page.
    pub explanation: &'static str,
}

/// Every rule, by id.
pub const RULES: &[Rule] = &[
    Rule {
        id: "APF001",
        name: "shadowed-flow-schema",
        severity: Severity::Warning,
        summary: "no request can reach this FlowSchema: schemas that match first take all of them",
        explanation: "kube-apiserver gives a request to the first FlowSchema that matches it, in \
order of matchingPrecedence (lowest first) and then name. A schema is shadowed when every \
request any of its rules matches is matched by a schema before it: its priority level never \
sees them. The finding names the schemas that take its requests. The check is exact: it \
tries one request of every kind the rules can tell apart (each user, group, service account, \
verb, API group, resource, namespace and URL named before it, and one named nowhere), with \
the groups kube-apiserver's authenticators always add (every user but system:anonymous is in \
system:authenticated; system:anonymous is in system:unauthenticated only), using the \
dispatcher's own matcher. Fix: lower its matchingPrecedence below the schemas named, or \
narrow theirs.",
    },
    Rule {
        id: "APF002",
        name: "shadowed-rule",
        severity: Severity::Note,
        summary: "one rule of this FlowSchema matches only requests that earlier schemas take",
        explanation: "Like APF001 for a single entry of spec.rules while the schema's other \
rules still match requests of their own: the rule can be removed without changing what the \
schema does, or it was meant to catch requests that now go elsewhere.",
    },
    Rule {
        id: "APF003",
        name: "precedence-tie",
        severity: Severity::Warning,
        summary: "two FlowSchemas with the same matchingPrecedence match common requests: their names decide",
        explanation: "When two schemas share a matchingPrecedence, kube-apiserver tries them in \
name order. If some request matches both, which level it goes to depends on how the schemas \
are named, which is easy to break by renaming or adding one. Give them distinct precedences.",
    },
    Rule {
        id: "APF004",
        name: "dangling-flow-schema",
        severity: Severity::Error,
        summary: "the FlowSchema names a PriorityLevelConfiguration that does not exist",
        explanation: "kube-apiserver sets the schema's Dangling condition and skips it: its \
requests fall through to the schemas after it (at worst catch-all). Create the level, or point \
the schema at an existing one.",
    },
    Rule {
        id: "APF005",
        name: "unreachable-priority-level",
        severity: Severity::Warning,
        summary: "no FlowSchema sends requests to this priority level",
        explanation: "A level no (non-dangling) schema names still takes its share of the \
server's concurrency as nominal seats; it lends what it may, but seats it cannot lend are \
wasted. Point a schema at it or remove it.",
    },
    Rule {
        id: "APF006",
        name: "broad-exempt",
        severity: Severity::Error,
        summary: "requests beyond system:masters and health probes are exempt from priority and fairness",
        explanation: "An Exempt level neither queues nor limits its requests. kube-apiserver \
exempts only system:masters and the health probes (/healthz, /livez, /readyz); exempting \
more lets those clients take the whole server. Send them to a limited level.",
    },
    Rule {
        id: "APF007",
        name: "broad-rule-above-defaults",
        severity: Severity::Warning,
        summary: "a rule for every user and every request sits above kube-apiserver's own schemas",
        explanation: "A rule with all verbs, API groups, resources and namespaces for \
system:authenticated, system:unauthenticated or everyone, at a matchingPrecedence below \
global-default's 9900, takes requests that kube-apiserver's suggested schemas give to \
dedicated levels (controllers, nodes, service accounts, leader election). Narrow its subjects \
or rules, or move it below the defaults.",
    },
    Rule {
        id: "APF008",
        name: "mandatory-override",
        severity: Severity::Warning,
        summary: "the configuration changes a mandatory object that kube-apiserver restores",
        explanation: "The FlowSchemas and PriorityLevelConfigurations named exempt and catch-all \
are mandatory: kube-apiserver's configuration producer writes their spec back within a minute \
whatever the annotation says, so the change does not last.",
    },
    Rule {
        id: "APF009",
        name: "shuffle-sharding-collisions",
        severity: Severity::Warning,
        summary: "the level's queues and hand size let one heavy flow crowd out others",
        explanation: "Shuffle sharding deals each flow handSize of the level's queues. A flow \
shares all its queues with one given other flow with probability 1 / C(queues, handSize), and \
then cannot get ahead of it; the finding also gives the chance that its queues all lie among \
those of ten heavy flows. Reported when the first is above 1%. Raise queues or handSize (as \
kube-apiserver's documentation tabulates; handSize 6 of 64 queues puts it near 1 in 75 \
million).",
    },
    Rule {
        id: "APF010",
        name: "lending-and-borrowing",
        severity: Severity::Warning,
        summary: "the level may lend all its seats, or may never borrow",
        explanation: "With lendablePercent 100 the level's lower limit is 0: while others \
borrow, it can be left with no seat until the next adjustment (10 s). The same happens with \
less at a small server concurrency, where kube-apiserver rounds the lendable seats half away \
from zero (1 nominal seat at lendablePercent 50 is 1 lendable): an idle level lends its only \
seat, and its next requests wait for the next adjustment. With borrowingLimitPercent 0 it \
never borrows idle seats from others. Either may be meant; both surprise.",
    },
    Rule {
        id: "APF011",
        name: "no-nominal-seats",
        severity: Severity::Warning,
        summary: "the level's nominal concurrency is 0 at this server concurrency",
        explanation: "nominalCL is ceil(serverConcurrency × shares / sum of shares): with \
nominalConcurrencyShares 0 it is 0, and the level runs requests on seats it borrows, which \
others may not lend. A level that queues then runs none: kube-apiserver dispatches from \
queues only while the seats in use are below the limit, so its requests wait and time out. A \
level whose limitResponse is Reject still runs one request at a time whenever none of its own \
is executing: kube-apiserver lets a request wider than the limit run alone (kubernetes issue \
134196, through 1.37), so it does not refuse all its requests, as it may have been meant to: \
APF has no level that refuses every request. Give it shares.",
    },
    Rule {
        id: "APF012",
        name: "invalid-object",
        severity: Severity::Error,
        summary: "kube-apiserver would refuse this object",
        explanation: "The object fails kube-apiserver's validation (the messages name the \
fields); `apfkit validate` reports the same. It is left out of the other checks.",
    },
    Rule {
        id: "APF013",
        name: "list-width-capped",
        severity: Severity::Warning,
        summary: "the level is too small to give a LIST more than one seat",
        explanation: "kube-apiserver estimates a LIST's seats from the bytes it reads (100 kB a \
seat), but caps every request's seats at the level's limit max(1, min(ceil(nominalCL × 0.15), \
nominalCL / handSize)). Where that cap is 1, a LIST of thousands of objects weighs as much as \
a GET: the level's queues cannot hold a LIST's real cost, and a few large LISTs take far more \
of the server than their seats say. Give the level more shares (or a smaller handSize) at the \
server concurrency it runs with.",
    },
];

/// The rule of `id` or name, in any case.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES
        .iter()
        .find(|r| r.id.eq_ignore_ascii_case(id) || r.name.eq_ignore_ascii_case(id))
}
