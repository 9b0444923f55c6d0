//! Classification (`rule.go`, `apf_controller.go`'s `Match`) and configuration digestion
//! (`digestConfigObjects`: matching order, static limits, imagined mandatory objects).

use apfkit_dispatcher::bootstrap;
use apfkit_dispatcher::classify::{Classifier, Request};
use apfkit_dispatcher::config::{Configuration, StaticLimits};
use apfkit_scheme::scheme::{HubObject, SCHEME, UnknownFields};
use apfkit_types::hub::flowcontrol::{FlowSchema, PriorityLevelConfiguration};
use serde_json::{Value, json};

fn default_classifier() -> Classifier {
    Classifier::new(Configuration::kubernetes_default(600).unwrap())
}

fn resource<'a>(
    user: &'a str,
    groups: &'a [&'a str],
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    namespace: &'a str,
) -> Request<'a> {
    Request {
        user,
        groups,
        verb,
        is_resource_request: true,
        api_group: group,
        resource,
        namespace,
        ..Request::default()
    }
}

fn non_resource<'a>(
    user: &'a str,
    groups: &'a [&'a str],
    verb: &'a str,
    path: &'a str,
) -> Request<'a> {
    Request {
        user,
        groups,
        verb,
        is_resource_request: false,
        path,
        ..Request::default()
    }
}

#[test]
fn default_configuration_table_1_6() {
    let c = default_classifier();
    let auth: &[&str] = &["system:authenticated"];
    let cases: Vec<(Request<'_>, &str, &str, &str)> = vec![
        (
            resource(
                "admin",
                &["system:masters", "system:authenticated"],
                "delete",
                "apps",
                "deployments",
                "prod",
            ),
            "exempt",
            "exempt",
            "",
        ),
        (
            non_resource(
                "system:anonymous",
                &["system:unauthenticated"],
                "get",
                "/healthz",
            ),
            "probes",
            "exempt",
            "",
        ),
        (
            non_resource(
                "system:anonymous",
                &["system:unauthenticated"],
                "get",
                "/healthz/etcd",
            ),
            "probes",
            "exempt",
            "",
        ),
        (
            non_resource(
                "system:anonymous",
                &["system:unauthenticated"],
                "post",
                "/healthz",
            ),
            "global-default",
            "global-default",
            "system:anonymous",
        ),
        (
            resource(
                "system:kube-scheduler",
                auth,
                "update",
                "coordination.k8s.io",
                "leases",
                "kube-system",
            ),
            "system-leader-election",
            "leader-election",
            "system:kube-scheduler",
        ),
        (
            resource("system:kube-scheduler", auth, "get", "", "pods", "default"),
            "kube-scheduler",
            "workload-high",
            "default",
        ),
        (
            Request {
                subresource: "status",
                ..resource(
                    "system:node:n1",
                    &["system:nodes", "system:authenticated"],
                    "patch",
                    "",
                    "nodes",
                    "",
                )
            },
            "system-node-high",
            "node-high",
            "system:node:n1",
        ),
        (
            resource(
                "system:node:n1",
                &["system:nodes", "system:authenticated"],
                "get",
                "",
                "pods",
                "default",
            ),
            "system-nodes",
            "system",
            "system:node:n1",
        ),
        (
            resource(
                "system:serviceaccount:kube-system:foo",
                &["system:serviceaccounts", "system:authenticated"],
                "list",
                "",
                "configmaps",
                "kube-system",
            ),
            "kube-system-service-accounts",
            "workload-high",
            "kube-system",
        ),
        (
            resource(
                "system:serviceaccount:kube-system:foo",
                &["system:serviceaccounts", "system:authenticated"],
                "get",
                "coordination.k8s.io",
                "leases",
                "kube-system",
            ),
            "system-leader-election",
            "leader-election",
            "system:serviceaccount:kube-system:foo",
        ),
        (
            resource(
                "system:serviceaccount:default:bar",
                &["system:serviceaccounts", "system:authenticated"],
                "get",
                "",
                "pods",
                "default",
            ),
            "service-accounts",
            "workload-low",
            "system:serviceaccount:default:bar",
        ),
        (
            resource("alice", auth, "list", "", "pods", ""),
            "global-default",
            "global-default",
            "alice",
        ),
        // Neither authenticated nor unauthenticated: the catch-all fallback, which does not queue.
        (
            resource("nobody", &[], "get", "", "pods", "default"),
            "catch-all",
            "catch-all",
            "",
        ),
    ];
    for (request, schema, level, distinguisher) in cases {
        let got = c.classify(&request).unwrap();
        assert_eq!(
            (got.flow_schema, got.priority_level, got.distinguisher),
            (schema, level, distinguisher),
            "{request:?}"
        );
    }
}

#[test]
fn hash_and_hand_follow_the_level() {
    let c = default_classifier();
    let got = c
        .classify(&resource(
            "alice",
            &["system:authenticated"],
            "get",
            "",
            "pods",
            "default",
        ))
        .unwrap();
    assert_eq!(got.hash, 17644606172554983095);
    // global-default: 128 queues, hand 6; the hand is the dealer's for that hash.
    let dealer = apfkit_dispatcher::shuffle::Dealer::new(128, 6).unwrap();
    assert_eq!(got.hand, dealer.deal_into_hand(17644606172554983095));
    // Exempt and Reject levels: no distinguisher, hash 0, empty hand.
    let exempt = c
        .classify(&resource(
            "root",
            &["system:masters"],
            "get",
            "",
            "pods",
            "",
        ))
        .unwrap();
    assert_eq!(
        (exempt.hash, exempt.hand.len(), exempt.distinguisher),
        (0, 0, "")
    );
}

#[test]
fn an_empty_distinguisher_hashes_the_schema_name_alone() {
    // kube-controller-manager (ByNamespace, workload-high: 128 queues, hand 6). A cluster-scoped
    // request has no namespace: the flow is the schema with an empty distinguisher, whose hash
    // and hand are worked out once when the classifier is built.
    let c = default_classifier();
    let dealer = apfkit_dispatcher::shuffle::Dealer::new(128, 6).unwrap();
    let groups: &[&str] = &["system:authenticated"];
    for (namespace, distinguisher) in [("", ""), ("kube-system", "kube-system")] {
        let got = c
            .classify(&resource(
                "system:kube-controller-manager",
                groups,
                "list",
                "",
                "nodes",
                namespace,
            ))
            .unwrap();
        assert_eq!(got.flow_schema, "kube-controller-manager");
        assert_eq!(got.distinguisher, distinguisher);
        let hash = apfkit_dispatcher::flow::flow_hash("kube-controller-manager", distinguisher);
        assert_eq!(got.hash, hash);
        assert_eq!(got.hand, dealer.deal_into_hand(hash));
    }
    // An empty user name under a ByUser schema: the same rule.
    let got = c
        .classify(&resource("", groups, "get", "", "pods", "default"))
        .unwrap();
    assert_eq!(got.flow_schema, "global-default");
    let hash = apfkit_dispatcher::flow::flow_hash("global-default", "");
    assert_eq!((got.hash, got.distinguisher), (hash, ""));
    assert_eq!(got.hand, dealer.deal_into_hand(hash));
}

/// One schema with one rule, as in upstream's `TestLiterals`.
fn literal_config(subject: Value, rule: Value, non_resource: bool) -> Classifier {
    let mut spec = json!({"priorityLevelConfiguration": {"name": "pl"}, "matchingPrecedence": 5, "rules": [{"subjects": [subject]}]});
    spec["rules"][0][if non_resource {
        "nonResourceRules"
    } else {
        "resourceRules"
    }] = json!([rule]);
    let schema = hub_object(
        json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "fs"}, "spec": spec}),
    );
    let level = hub_object(
        json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration", "metadata": {"name": "pl"},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}),
    );
    let (HubObject::FlowSchema(schema), HubObject::PriorityLevelConfiguration(level)) =
        (schema, level)
    else {
        unreachable!()
    };
    // Upstream's literal vectors use verbs such as `goodverb`, which validation rejects: the
    // controller trusts stored objects, so the matcher is tested on them as they are.
    Classifier::new(Configuration::new_trusted(vec![level], vec![schema], 600).unwrap())
}

fn hub_object(document: Value) -> HubObject {
    SCHEME
        .to_hub_value(&document, UnknownFields::Strict)
        .unwrap()
        .0
        .remove(0)
}

#[test]
fn literals_upstream() {
    let groups: &[&str] = &["goodg1", "goodg2"];
    let request = Request {
        user: "goodu",
        groups,
        verb: "goodverb",
        is_resource_request: true,
        api_group: "goodapig",
        resource: "goodrscs",
        namespace: "goodns",
        name: "eman",
        ..Request::default()
    };
    let good_rule = |verb: &str, group: &str, res: &str, ns: &str| json!({"verbs": [verb], "apiGroups": [group], "resources": [res], "namespaces": [ns]});
    let user = |n: &str| json!({"kind": "User", "user": {"name": n}});
    let group = |n: &str| json!({"kind": "Group", "group": {"name": n}});
    let matches = |subject: Value, rule: Value, r: &Request<'_>| {
        literal_config(subject, rule, false)
            .classify(r)
            .unwrap()
            .flow_schema
            == "fs"
    };
    let good = good_rule("goodverb", "goodapig", "goodrscs", "goodns");
    for subject in [user("goodu"), group("goodg1"), user("*"), group("*")] {
        assert!(matches(subject, good.clone(), &request));
    }
    for rule in [
        good_rule("*", "goodapig", "goodrscs", "goodns"),
        good_rule("goodverb", "*", "goodrscs", "goodns"),
        good_rule("goodverb", "goodapig", "*", "goodns"),
        good_rule("goodverb", "goodapig", "goodrscs", "*"),
    ] {
        assert!(matches(user("goodu"), rule, &request));
    }
    for subject in [user("badu"), group("badg")] {
        assert!(!matches(subject, good.clone(), &request));
    }
    for rule in [
        good_rule("badverb", "goodapig", "goodrscs", "goodns"),
        good_rule("goodverb", "badapig", "goodrscs", "goodns"),
        good_rule("goodverb", "goodapig", "badrscs", "goodns"),
        good_rule("goodverb", "goodapig", "goodrscs", "badns"),
    ] {
        assert!(!matches(user("goodu"), rule, &request));
    }
    // Cluster-scoped variant.
    let cluster = Request {
        namespace: "",
        ..request.clone()
    };
    let scoped = |verb: &str, cluster_scope: bool| json!({"verbs": [verb], "apiGroups": ["goodapig"], "resources": ["goodrscs"], "namespaces": ["*"], "clusterScope": cluster_scope});
    assert!(matches(user("goodu"), scoped("goodverb", true), &cluster));
    assert!(matches(user("*"), scoped("*", true), &cluster));
    assert!(!matches(user("goodu"), scoped("goodverb", false), &cluster));
    assert!(!matches(user("goodu"), scoped("badverb", true), &cluster));
    // Non-resource.
    let path = Request {
        is_resource_request: false,
        path: "/openapi/v2",
        ..request.clone()
    };
    let nr = |verb: &str, url: &str| {
        literal_config(
            user("goodu"),
            json!({"verbs": [verb], "nonResourceURLs": [url]}),
            true,
        )
        .classify(&path)
        .unwrap()
        .flow_schema
            == "fs"
    };
    assert!(nr("goodverb", "/openapi/v2") && nr("*", "/openapi/v2") && nr("goodverb", "*"));
    assert!(!nr("badverb", "/openapi/v2") && !nr("goodverb", "/closedapi/v2"));
}

#[test]
fn url_prefixes_and_subresources_1_3() {
    let nr = |url: &str, path: &str| {
        let c = literal_config(
            json!({"kind": "Group", "group": {"name": "*"}}),
            json!({"verbs": ["*"], "nonResourceURLs": [url]}),
            true,
        );
        c.classify(&non_resource("u", &[], "get", path))
            .unwrap()
            .flow_schema
            == "fs"
    };
    let cases = [
        ("/healthz", "/healthz", true),
        ("/healthz", "/healthz/etcd", true),
        ("/healthz", "/healthz/a/b", true),
        ("/healthz", "/healthzx", false),
        ("/healthz", "/health", false),
        ("/healthz/*", "/healthz/", true),
        ("/healthz/*", "/healthz/etcd", true),
        ("/healthz/*", "/healthz", false),
        ("/", "/anything", true),
        ("/hea", "/hea/x", true),
        ("/hea", "/healthz", false),
    ];
    for (url, path, expected) in cases {
        assert_eq!(nr(url, path), expected, "{url} vs {path}");
    }
    let c = literal_config(
        json!({"kind": "User", "user": {"name": "u"}}),
        json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["pods"], "namespaces": ["*"]}),
        false,
    );
    assert_eq!(
        c.classify(&resource("u", &[], "get", "", "pods", "ns"))
            .unwrap()
            .flow_schema,
        "fs"
    );
    let status = Request {
        subresource: "status",
        ..resource("u", &[], "get", "", "pods", "ns")
    };
    assert_eq!(
        c.classify(&status).unwrap().flow_schema,
        "catch-all",
        "pods does not match pods/status"
    );
}

#[test]
fn service_account_subjects() {
    let sa = |ns: &str, name: &str| {
        literal_config(
            json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": ns, "name": name}}),
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}),
            false,
        )
    };
    let is_fs = |c: &Classifier, user: &str| {
        c.classify(&resource(user, &[], "get", "", "pods", ""))
            .unwrap()
            .flow_schema
            == "fs"
    };
    let any = sa("kube", "*");
    assert!(is_fs(&any, "system:serviceaccount:kube:x"));
    assert!(is_fs(&any, "system:serviceaccount:kube:"));
    assert!(
        !is_fs(&any, "system:serviceaccount:kube-system:x"),
        "namespace kube must not match kube-system"
    );
    let one = sa("kube-system", "builder");
    assert!(is_fs(&one, "system:serviceaccount:kube-system:builder"));
    assert!(!is_fs(&one, "system:serviceaccount:kube-system:builder2"));
    assert!(!is_fs(&one, "builder"));
}

#[test]
fn ordering_dangling_and_imagined_mandatory_objects() {
    let objects = |yaml: &str| -> Vec<HubObject> {
        SCHEME
            .read_documents(yaml.as_bytes())
            .unwrap()
            .iter()
            .flat_map(|d| {
                SCHEME
                    .to_hub_value(&d.value, UnknownFields::Strict)
                    .unwrap()
                    .0
            })
            .collect()
    };
    let levels: Vec<PriorityLevelConfiguration> = objects(bootstrap::PRIORITY_LEVELS_YAML)
        .into_iter()
        .filter_map(|o| match o {
            HubObject::PriorityLevelConfiguration(l)
                if l.metadata.name.as_deref() != Some("exempt") =>
            {
                Some(l)
            }
            _ => None,
        })
        .collect();
    let mut schemas: Vec<FlowSchema> = objects(bootstrap::FLOW_SCHEMAS_YAML)
        .into_iter()
        .filter_map(|o| match o {
            HubObject::FlowSchema(s) if s.metadata.name.as_deref() != Some("catch-all") => Some(s),
            _ => None,
        })
        .collect();
    schemas.reverse();
    let mut dangling = schemas[0].clone();
    dangling.metadata.name = Some("orphan".into());
    dangling.spec.priority_level_configuration.name = "nowhere".into();
    schemas.push(dangling);
    let config = Configuration::new(levels, schemas, 600).unwrap();
    let order: Vec<&str> = config.flow_schemas().iter().map(|s| s.name()).collect();
    // The exempt level is missing, so it is imagined; imagined levels do not count, so the
    // schemas that use it (exempt, probes) dangle and are dropped; the mandatory exempt schema
    // is then imagined first, and the missing catch-all schema last.
    assert_eq!(
        order,
        [
            "exempt",
            "system-leader-election",
            "system-node-high",
            "system-nodes",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "service-accounts",
            "global-default",
            "catch-all"
        ]
    );
    assert!(config.flow_schemas()[0].imagined);
    assert!(!config.flow_schemas()[1].imagined);
    assert!(config.flow_schemas().last().unwrap().imagined);
    assert!(config.priority_level("exempt").unwrap().imagined);
    let orphan = config
        .dangling_conditions()
        .iter()
        .find(|d| d.flow_schema == "orphan")
        .unwrap();
    assert_eq!((orphan.status, orphan.reason), ("True", "NotFound"));
    assert_eq!(
        orphan.message,
        "This FlowSchema references the PriorityLevelConfiguration object named \"nowhere\" but there is no such object"
    );
    // The exempt schema points at the imagined exempt level: imagined levels do not count.
    let exempt = config
        .dangling_conditions()
        .iter()
        .find(|d| d.flow_schema == "exempt")
        .unwrap();
    assert_eq!((exempt.status, exempt.reason), ("True", "NotFound"));
    let probes = config
        .dangling_conditions()
        .iter()
        .find(|d| d.flow_schema == "probes")
        .unwrap();
    assert_eq!(probes.status, "True");
    let global = config
        .dangling_conditions()
        .iter()
        .find(|d| d.flow_schema == "global-default")
        .unwrap();
    assert_eq!((global.status, global.reason), ("False", "Found"));
    assert_eq!(
        global.message,
        "This FlowSchema references the PriorityLevelConfiguration object named \"global-default\" and it exists"
    );
}

#[test]
fn invalid_objects_are_skipped_and_reported() {
    let (levels, mut schemas) = (
        bootstrap::priority_levels().to_vec(),
        bootstrap::flow_schemas().to_vec(),
    );
    schemas[4].spec.matching_precedence = Some(0);
    let config = Configuration::new(levels, schemas, 600).unwrap();
    assert_eq!(config.skipped().len(), 1);
    assert_eq!(config.skipped()[0].name, "system-nodes");
    let reasons: Vec<String> = config.skipped()[0]
        .reasons
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        reasons,
        ["spec.matchingPrecedence: Invalid value: 0: must be a positive value"]
    );
    assert_eq!(
        config.skipped()[0].reasons[0].path,
        "spec.matchingPrecedence"
    );
    assert!(Configuration::kubernetes_default(0).is_err());
}

fn limits(server: i32) -> Vec<(String, StaticLimits)> {
    let config = Configuration::kubernetes_default(server).unwrap();
    let order = [
        "exempt",
        "catch-all",
        "system",
        "node-high",
        "leader-election",
        "workload-high",
        "workload-low",
        "global-default",
    ];
    order
        .iter()
        .map(|n| ((*n).to_owned(), config.priority_level(n).unwrap().limits))
        .collect()
}

#[test]
fn static_limits_6_3() {
    let at_600: Vec<(i64, i64, i64, i64)> = limits(600)
        .iter()
        .map(|(_, l)| (l.nominal, l.lendable, l.min, l.max))
        .collect();
    assert_eq!(
        at_600,
        [
            (0, 0, 0, 600),
            (13, 0, 13, 613),
            (74, 24, 50, 674),
            (98, 25, 73, 698),
            (25, 0, 25, 625),
            (98, 49, 49, 698),
            (245, 221, 24, 845),
            (49, 25, 24, 649)
        ]
    );
    let nominal = |server| {
        limits(server)
            .iter()
            .map(|(_, l)| l.nominal)
            .collect::<Vec<_>>()
    };
    assert_eq!(nominal(24), [0, 1, 3, 4, 1, 4, 10, 2]);
    assert_eq!(nominal(1000), [0, 21, 123, 164, 41, 164, 409, 82]);
    assert_eq!(nominal(600).iter().sum::<i64>(), 602);
}

/// Without validation (objects read from storage), queuing the dealer refuses is still left
/// out, reported at the queuing field.
#[test]
fn trusted_levels_the_dealer_refuses_are_skipped_at_the_queuing_field() {
    let mut levels = bootstrap::priority_levels().to_vec();
    let level = levels
        .iter_mut()
        .find(|l| l.metadata.name.as_deref() == Some("global-default"))
        .unwrap();
    let queuing = level
        .spec
        .limited
        .as_mut()
        .unwrap()
        .limit_response
        .queuing
        .as_mut()
        .unwrap();
    queuing.queues = Some(2);
    queuing.hand_size = Some(5);
    let config =
        Configuration::new_trusted(levels, bootstrap::flow_schemas().to_vec(), 600).unwrap();
    let skipped = &config.skipped()[0];
    assert_eq!(skipped.name, "global-default");
    assert_eq!(
        skipped.reasons[0].path,
        "spec.limited.limitResponse.queuing"
    );
    assert!(
        skipped.reasons[0]
            .to_string()
            .contains("handSize 5 is greater than deckSize 2"),
        "{}",
        skipped.reasons[0]
    );
}

/// `schema_matches` agrees with the classifier: the schema a request is classified to is
/// the first that matches it by its own rules (catch-all when none does).
#[test]
fn schema_matches_agrees_with_match_schema() {
    let classifier = default_classifier();
    let schemas = classifier.config().flow_schemas().len();
    let users = [
        "alice",
        "system:kube-scheduler",
        "system:serviceaccount:kube-system:x",
        "system:node:n1",
        "system:apiserver",
    ];
    let groups: [&[&str]; 4] = [
        &["system:authenticated"],
        &["system:unauthenticated"],
        &["system:masters", "system:authenticated"],
        &["system:nodes", "system:authenticated"],
    ];
    let paths = ["/healthz", "/readyz/etcd", "/apis", "/metrics"];
    for user in users {
        for groups in groups {
            for verb in ["get", "list", "create", "watch"] {
                for (resource, namespace) in [
                    ("pods", "default"),
                    ("leases", "kube-system"),
                    ("nodes", ""),
                    ("configmaps", "kube-system"),
                ] {
                    let request = Request {
                        user,
                        groups,
                        verb,
                        is_resource_request: true,
                        resource,
                        namespace,
                        api_group: if resource == "leases" {
                            "coordination.k8s.io"
                        } else {
                            ""
                        },
                        ..Request::default()
                    };
                    let first = (0..schemas).find(|p| classifier.schema_matches(*p, &request));
                    let chosen = classifier.match_schema(&request);
                    assert_eq!(first.or(chosen), chosen, "{request:?}");
                    assert!(first.is_none() || first == chosen, "{request:?}");
                }
                for path in paths {
                    let request = Request {
                        user,
                        groups,
                        verb,
                        path,
                        ..Request::default()
                    };
                    let first = (0..schemas).find(|p| classifier.schema_matches(*p, &request));
                    assert!(
                        first.is_none() || first == classifier.match_schema(&request),
                        "{request:?}"
                    );
                }
            }
        }
    }
}
