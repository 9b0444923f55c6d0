//! Every rule with a configuration that trips it and one that does not, and kube-apiserver's
//! bootstrap configuration linted.

use apfkit_lint::{Finding, Input, Options, Source, lint};
use apfkit_scheme::scheme::{HubObject, SCHEME, UnknownFields};

/// The input of YAML documents (v1 FlowSchemas and PriorityLevelConfigurations), each from
/// `test.yaml`, document by document, with kube-apiserver's bootstrap objects added.
fn input(yaml: &str) -> Input {
    let documents = SCHEME.read_documents(yaml.as_bytes()).unwrap();
    let mut input = Input::default();
    for (index, document) in documents.iter().enumerate() {
        let source = Some(Source {
            file: "test.yaml".to_owned(),
            document: Some(index),
        });
        for object in SCHEME
            .to_hub_value(&document.value, UnknownFields::Strict)
            .unwrap()
            .0
        {
            match object {
                HubObject::FlowSchema(s) => input.schemas.push((s, source.clone())),
                HubObject::PriorityLevelConfiguration(l) => input.levels.push((l, source.clone())),
                HubObject::APIService(_) => panic!("not APF"),
            }
        }
    }
    input.with_bootstrap()
}

fn findings(yaml: &str) -> Vec<Finding> {
    lint(&input(yaml), &Options::default()).unwrap().findings
}

/// The (rule id, object name, path) of the findings of `rule`.
fn of(findings: &[Finding], rule: &str) -> Vec<(String, String)> {
    findings
        .iter()
        .filter(|f| f.rule.id == rule)
        .map(|f| (f.name.clone(), f.path.clone()))
        .collect()
}

fn schema(name: &str, precedence: i32, level: &str, rules: &str) -> String {
    format!(
        "---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {{name: {name}}}\nspec:\n  priorityLevelConfiguration: {{name: {level}}}\n  matchingPrecedence: {precedence}\n  rules:\n{rules}"
    )
}

const TEAM_A_PODS: &str = "  - subjects: [{kind: Group, group: {name: team-a}}]\n    resourceRules: [{verbs: [get, list], apiGroups: [''], resources: [pods], namespaces: [a]}]\n";

#[test]
fn kube_apiservers_own_configuration() {
    let all = findings("");
    for finding in &all {
        eprintln!(
            "{} {} {} {}",
            finding.rule.id, finding.name, finding.path, finding.message
        );
    }
    assert!(
        all.iter()
            .all(|f| f.rule.severity == apfkit_lint::Severity::Note),
        "{all:#?}"
    );
}

#[test]
fn apf001_a_schema_whose_requests_all_go_first_elsewhere() {
    let everyone_in_a = "  - subjects: [{kind: Group, group: {name: team-a}}]\n    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: [a]}]\n";
    let yaml = schema("broad", 500, "workload-low", everyone_in_a)
        + &schema("narrow", 600, "workload-high", TEAM_A_PODS);
    let found = findings(&yaml);
    assert_eq!(
        of(&found, "APF001"),
        [("narrow".to_owned(), "spec.rules".to_owned())]
    );
    let finding = found.iter().find(|f| f.rule.id == "APF001").unwrap();
    assert_eq!(
        finding.message,
        "every request narrow matches goes first to broad"
    );
    assert_eq!(
        finding.source,
        Some(Source {
            file: "test.yaml".into(),
            document: Some(1)
        })
    );
    // The other way round, or in another namespace, nothing is shadowed.
    let yaml = schema("broad", 700, "workload-low", everyone_in_a)
        + &schema("narrow", 600, "workload-high", TEAM_A_PODS);
    assert!(of(&findings(&yaml), "APF001").is_empty());
    let other_namespace = TEAM_A_PODS.replace("namespaces: [a]", "namespaces: [b]");
    let yaml = schema("broad", 500, "workload-low", everyone_in_a)
        + &schema("narrow", 600, "workload-high", &other_namespace);
    assert!(of(&findings(&yaml), "APF001").is_empty());
}

#[test]
fn apf001_is_exact_across_several_schemas_and_subject_kinds() {
    // get by one schema, list by another: together they take narrow's requests.
    let gets = "  - subjects: [{kind: Group, group: {name: team-a}}]\n    resourceRules: [{verbs: [get], apiGroups: ['*'], resources: ['*'], namespaces: ['*']}]\n";
    let lists = "  - subjects: [{kind: Group, group: {name: team-a}}]\n    resourceRules: [{verbs: [list], apiGroups: [''], resources: [pods], namespaces: ['*']}]\n";
    let yaml = schema("gets", 500, "workload-low", gets)
        + &schema("lists", 510, "workload-low", lists)
        + &schema("narrow", 600, "workload-high", TEAM_A_PODS);
    let found = findings(&yaml);
    let finding = found
        .iter()
        .find(|f| f.rule.id == "APF001")
        .expect("shadowed");
    assert_eq!(
        finding.message,
        "every request narrow matches goes first to gets, lists"
    );
    // A user of team-a is a request of the group: a User subject is not covered by a Group.
    let user = TEAM_A_PODS.replace(
        "{kind: Group, group: {name: team-a}}",
        "{kind: User, user: {name: alice}}",
    );
    let yaml =
        schema("gets", 500, "workload-low", gets) + &schema("alice", 600, "workload-high", &user);
    assert!(of(&findings(&yaml), "APF001").is_empty());
    // system:authenticated and system:unauthenticated together are everyone.
    let both = "  - subjects: [{kind: Group, group: {name: system:authenticated}}, {kind: Group, group: {name: system:unauthenticated}}]\n    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*']}]\n";
    let yaml =
        schema("all", 500, "workload-low", both) + &schema("alice", 600, "workload-high", &user);
    assert_eq!(of(&findings(&yaml), "APF001").len(), 1);
}

/// Issue 41, item 4: every user but `system:anonymous` is in `system:authenticated`, and
/// `system:anonymous` only in `system:unauthenticated` (kube-apiserver's authenticators), so
/// a schema for a named user or group after one for `system:authenticated` is shadowed, and
/// one for `system:anonymous` after one for `system:unauthenticated`.
#[test]
fn apf001_knows_the_groups_kube_apiserver_always_adds() {
    let everything = |subject: &str| {
        format!(
            "  - subjects: [{subject}]\n    resourceRules: [{{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true}}]\n"
        )
    };
    let authenticated = everything("{kind: Group, group: {name: system:authenticated}}");
    let unauthenticated = everything("{kind: Group, group: {name: system:unauthenticated}}");
    let shadowed = |first: &str, second: &str| {
        let yaml = schema("first", 500, "workload-low", first)
            + &schema("second", 600, "workload-high", second);
        !of(&findings(&yaml), "APF001").is_empty()
    };
    for later in [
        "{kind: User, user: {name: alice}}",
        "{kind: Group, group: {name: team-a}}",
        "{kind: ServiceAccount, serviceAccount: {namespace: ns, name: robot}}",
        "{kind: Group, group: {name: system:authenticated}}",
    ] {
        assert!(shadowed(&authenticated, &everything(later)), "{later}");
        assert!(!shadowed(&unauthenticated, &everything(later)), "{later}");
    }
    let anonymous = everything("{kind: User, user: {name: system:anonymous}}");
    assert!(shadowed(&unauthenticated, &anonymous));
    assert!(!shadowed(&authenticated, &anonymous));
    // Anyone (`*`) is both kinds of request: neither group alone takes all of them.
    for anyone in [
        "{kind: User, user: {name: '*'}}",
        "{kind: Group, group: {name: '*'}}",
    ] {
        assert!(!shadowed(&authenticated, &everything(anyone)), "{anyone}");
        assert!(!shadowed(&unauthenticated, &everything(anyone)), "{anyone}");
    }
}

#[test]
fn apf002_one_rule_shadowed_while_another_reaches() {
    // Without the earlier schema, neither rule is shadowed.
    let both = format!(
        "{TEAM_A_PODS}  - subjects: [{{kind: Group, group: {{name: team-b}}}}]\n    resourceRules: [{{verbs: [get], apiGroups: [''], resources: [pods], namespaces: [b]}}]\n"
    );
    assert!(
        of(
            &findings(&schema("second", 600, "workload-high", &both)),
            "APF002"
        )
        .is_empty()
    );
    let rules = format!(
        "{TEAM_A_PODS}  - subjects: [{{kind: Group, group: {{name: team-b}}}}]\n    resourceRules: [{{verbs: [get], apiGroups: [''], resources: [pods], namespaces: [b]}}]\n"
    );
    let yaml = schema("first", 500, "workload-low", TEAM_A_PODS)
        + &schema("second", 600, "workload-high", &rules);
    let found = findings(&yaml);
    assert_eq!(
        of(&found, "APF002"),
        [("second".to_owned(), "spec.rules[0]".to_owned())]
    );
    assert!(of(&found, "APF001").is_empty());
}

#[test]
fn apf003_a_tie_that_names_decide() {
    let yaml = schema("b-second", 500, "workload-low", TEAM_A_PODS)
        + &schema("a-first", 500, "workload-high", TEAM_A_PODS);
    let found = findings(&yaml);
    assert_eq!(
        of(&found, "APF003"),
        [("b-second".to_owned(), "spec.matchingPrecedence".to_owned())]
    );
    // The same precedence with nothing in common is no tie that matters.
    let other = TEAM_A_PODS
        .replace("team-a", "team-b")
        .replace("[a]", "[b]");
    let yaml = schema("b-second", 500, "workload-low", &other)
        + &schema("a-first", 500, "workload-high", TEAM_A_PODS);
    assert!(of(&findings(&yaml), "APF003").is_empty());
}

#[test]
fn apf004_dangling_and_apf005_unreachable() {
    let level = "---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: lonely}\nspec: {type: Limited, limited: {nominalConcurrencyShares: 10, limitResponse: {type: Reject}}}\n";
    let yaml = schema("lost", 500, "missing", TEAM_A_PODS) + level;
    let found = findings(&yaml);
    assert_eq!(
        of(&found, "APF004"),
        [(
            "lost".to_owned(),
            "spec.priorityLevelConfiguration.name".to_owned()
        )]
    );
    assert_eq!(
        of(&found, "APF005"),
        [("lonely".to_owned(), "metadata.name".to_owned())]
    );
    let yaml = schema("found", 500, "lonely", TEAM_A_PODS) + level;
    let found = findings(&yaml);
    assert!(of(&found, "APF004").is_empty() && of(&found, "APF005").is_empty());
}

#[test]
fn apf006_exempt_beyond_masters_and_probes() {
    let yaml = schema("vip", 500, "exempt", TEAM_A_PODS);
    assert_eq!(
        of(&findings(&yaml), "APF006"),
        [("vip".to_owned(), "spec.rules[0]".to_owned())]
    );
    let masters = "  - subjects: [{kind: Group, group: {name: system:masters}}]\n    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*']}]\n";
    assert!(
        of(
            &findings(&schema("admins", 500, "exempt", masters)),
            "APF006"
        )
        .is_empty()
    );
}

#[test]
fn apf007_a_rule_for_everyone_above_the_defaults() {
    let everyone = "  - subjects: [{kind: Group, group: {name: system:authenticated}}]\n    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true}]\n";
    assert_eq!(
        of(
            &findings(&schema("greedy", 800, "workload-low", everyone)),
            "APF007"
        ),
        [("greedy".to_owned(), "spec.rules[0]".to_owned())]
    );
    assert!(
        of(
            &findings(&schema("late", 9950, "workload-low", everyone)),
            "APF007"
        )
        .is_empty()
    );
}

#[test]
fn apf008_a_changed_mandatory_object() {
    let catch_all = "---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: catch-all}\nspec: {type: Limited, limited: {nominalConcurrencyShares: 50, lendablePercent: 0, limitResponse: {type: Reject}}}\n";
    assert_eq!(
        of(&findings(catch_all), "APF008"),
        [("catch-all".to_owned(), "spec".to_owned())]
    );
    let same = catch_all.replace(
        "nominalConcurrencyShares: 50",
        "nominalConcurrencyShares: 5",
    );
    assert!(
        of(&findings(&same), "APF008").is_empty(),
        "{:#?}",
        findings(&same)
    );
}

fn level(name: &str, limited: &str) -> String {
    format!(
        "---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {{name: {name}}}\nspec: {{type: Limited, limited: {limited}}}\n"
    )
}

#[test]
fn apf009_to_apf011_queuing_lending_and_seats() {
    let few = level(
        "few",
        "{nominalConcurrencyShares: 10, limitResponse: {type: Queue, queuing: {queues: 8, handSize: 2, queueLengthLimit: 50}}}",
    );
    let many = level(
        "many",
        "{nominalConcurrencyShares: 10, limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}}}",
    );
    let lends = level(
        "lends",
        "{nominalConcurrencyShares: 10, lendablePercent: 100, borrowingLimitPercent: 0, limitResponse: {type: Reject}}",
    );
    let none = level(
        "none",
        "{nominalConcurrencyShares: 0, limitResponse: {type: Reject}}",
    );
    let users = |l: &str| {
        schema(
            &format!("to-{l}"),
            500,
            l,
            &TEAM_A_PODS.replace("team-a", l),
        )
    };
    let yaml = [&few, &many, &lends, &none].map(|s| s.as_str()).concat()
        + &users("few")
        + &users("many")
        + &users("lends")
        + &users("none");
    let found = findings(&yaml);
    assert_eq!(
        of(&found, "APF009"),
        [(
            "few".to_owned(),
            "spec.limited.limitResponse.queuing.handSize".to_owned()
        )]
    );
    assert_eq!(
        of(&found, "APF010"),
        [
            (
                "lends".to_owned(),
                "spec.limited.lendablePercent".to_owned()
            ),
            (
                "lends".to_owned(),
                "spec.limited.borrowingLimitPercent".to_owned()
            ),
        ]
    );
    assert_eq!(
        of(&found, "APF011"),
        [(
            "none".to_owned(),
            "spec.limited.nominalConcurrencyShares".to_owned()
        )]
    );
}

/// A zero-share level that rejects still runs a request whenever none of its own executes
/// (queueset.go's canAccommodateSeatsLocked; kubernetes issue 134196): the finding says so,
/// and the simulator shows it (dispatcher/tests/suite/sim.rs).
/// At 2 seats, kube-apiserver's own levels with lendablePercent 50 or more have 1 nominal seat
/// and 1 lendable (Go's math.Round rounds 0.5 up), so a lower limit of 0: lint says so, and
/// not at 600 seats (the `isolation` benchmark shows what it costs: docs/performance.md).
#[test]
fn apf010_a_lower_limit_rounded_to_zero_at_a_small_server_concurrency() {
    let at = |server_concurrency| {
        let found = lint(&input(""), &Options { server_concurrency })
            .unwrap()
            .findings;
        let mut names: Vec<String> = found
            .iter()
            .filter(|f| f.rule.id == "APF010")
            .map(|f| f.name.clone())
            .collect();
        names.sort();
        (names, found)
    };
    let (names, found) = at(2);
    assert_eq!(
        names,
        ["global-default", "workload-high", "workload-low"],
        "{found:#?}"
    );
    let message = &found
        .iter()
        .find(|f| f.rule.id == "APF010" && f.name == "global-default")
        .unwrap()
        .message;
    assert_eq!(
        message,
        "lendablePercent 50 of its 1 nominal seats rounds to 1 lendable: its lower limit is 0 at \
         this server concurrency, so while idle it can lend every seat and its next requests wait \
         for the next adjustment (up to 10 s)"
    );
    assert!(at(600).0.is_empty());
}

#[test]
fn apf011_a_zero_share_reject_level_still_admits_requests() {
    let queues = level(
        "queues",
        "{nominalConcurrencyShares: 0, limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}}}",
    );
    let rejects = level(
        "rejects",
        "{nominalConcurrencyShares: 0, limitResponse: {type: Reject}}",
    );
    let found = findings(&(queues + &rejects));
    let message = |name: &str| {
        found
            .iter()
            .find(|f| f.rule.id == "APF011" && f.name == name)
            .map(|f| f.message.clone())
            .unwrap_or_default()
    };
    assert!(
        message("rejects").contains("kubernetes issue 134196"),
        "{found:?}"
    );
    assert!(message("rejects").contains("does not refuse all its requests"));
    // A queuing one runs nothing on its own (dispatchAsMuchAsPossibleLocked dispatches only
    // below the limit; dispatcher/tests/suite/simulation.rs shows it).
    assert!(
        message("queues").contains("time out when none come"),
        "{found:?}"
    );
    assert!(!message("queues").contains("rejects rather than queues"));
}

#[test]
fn apf013_a_level_too_small_to_weigh_a_list() {
    let tiny = level(
        "tiny",
        "{nominalConcurrencyShares: 1, limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}}}",
    );
    let roomy = level(
        "roomy",
        "{nominalConcurrencyShares: 30, limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}}}",
    );
    let users = |l: &str| {
        schema(
            &format!("to-{l}"),
            500,
            l,
            &TEAM_A_PODS.replace("team-a", l),
        )
    };
    let yaml = tiny + &roomy + &users("tiny") + &users("roomy");
    assert_eq!(
        of(&findings(&yaml), "APF013"),
        [(
            "tiny".to_owned(),
            "spec.limited.nominalConcurrencyShares".to_owned()
        )]
    );
}

#[test]
fn apf012_an_object_kube_apiserver_refuses() {
    let bad = schema("bad", 20000, "workload-low", TEAM_A_PODS);
    let found = findings(&bad);
    assert_eq!(
        of(&found, "APF012"),
        [("bad".to_owned(), "spec.matchingPrecedence".to_owned())]
    );
}

#[test]
fn the_sarif_log_reads_as_sarif_2_1_0() {
    let yaml =
        schema("lost", 500, "missing", TEAM_A_PODS) + &schema("vip", 500, "exempt", TEAM_A_PODS);
    let report = lint(&input(&yaml), &Options::default()).unwrap();
    let log = apfkit_lint::sarif::to_sarif(&report, "0.1.0");
    let text = serde_json::to_string(&log).unwrap();
    let read: serde_sarif::sarif::Sarif = serde_json::from_str(&text).expect("a SARIF log");
    assert_eq!(read.version.to_string().trim_matches('"'), "2.1.0");
    let run = &read.runs[0];
    assert_eq!(
        run.tool.driver.rules.as_ref().unwrap().len(),
        apfkit_lint::RULES.len()
    );
    let results = run.results.as_ref().unwrap();
    assert_eq!(results.len(), report.findings.len());
    // Each result points at its rule by id and index, with the file and the field.
    for (result, finding) in results.iter().zip(&report.findings) {
        assert_eq!(result.rule_id.as_deref(), Some(finding.rule.id));
        let index = result.rule_index.unwrap() as usize;
        assert_eq!(apfkit_lint::RULES[index].id, finding.rule.id);
        let location = &result.locations.as_ref().unwrap()[0];
        let uri = location
            .physical_location
            .as_ref()
            .and_then(|p| p.artifact_location.as_ref())
            .and_then(|a| a.uri.clone());
        assert_eq!(uri.as_deref(), Some("test.yaml"));
    }
}
