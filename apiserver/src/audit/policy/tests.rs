//! Upstream's cases: `k8s.io/apiserver/pkg/audit/policy/checker_test.go` (`TestChecker`,
//! `TestCheckerPolicyOmitStages`, `TestUnionStages`, `TestOmitManagedFields`),
//! `reader_test.go` (`TestParser`, `TestParsePolicyWithNoVersionOrKind`,
//! `TestParsePolicyWithUnknownField`, `TestPolicyCntCheck`) and
//! `pkg/apis/audit/validation/validation_test.go` (`TestValidatePolicy`).

use std::collections::HashMap;

use super::*;
use crate::auth::UserInfo;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn tim() -> UserInfo {
    UserInfo {
        name: "tim@k8s.io".into(),
        groups: strings(&["humans", "developers"]),
        ..UserInfo::default()
    }
}

fn attrs() -> HashMap<&'static str, Attributes> {
    let namespaced = Attributes {
        user: tim(),
        verb: "get".into(),
        namespace: "default".into(),
        api_group: String::new(),
        api_version: "v1".into(),
        resource: "pods".into(),
        name: "busybox".into(),
        resource_request: true,
        path: "/api/v1/namespaces/default/pods/busybox".into(),
        subresource: String::new(),
    };
    HashMap::from([
        ("namespaced", namespaced.clone()),
        (
            "cluster",
            Attributes {
                user: tim(),
                verb: "get".into(),
                api_group: "rbac.authorization.k8s.io".into(),
                api_version: "v1beta1".into(),
                resource: "clusterroles".into(),
                name: "edit".into(),
                resource_request: true,
                path: "/apis/rbac.authorization.k8s.io/v1beta1/clusterroles/edit".into(),
                ..Attributes::default()
            },
        ),
        (
            "nonResource",
            Attributes {
                user: tim(),
                verb: "get".into(),
                resource_request: false,
                path: "/logs/kubelet.log".into(),
                ..Attributes::default()
            },
        ),
        (
            "subresource",
            Attributes {
                subresource: "log".into(),
                ..namespaced.clone()
            },
        ),
        (
            "Unauthorized",
            Attributes {
                user: UserInfo {
                    name: String::new(),
                    groups: Vec::new(),
                    ..UserInfo::default()
                },
                ..namespaced
            },
        ),
    ])
}

fn resources(group: &str, resources: &[&str], names: &[&str]) -> Vec<GroupResources> {
    vec![GroupResources {
        group: group.into(),
        resources: strings(resources),
        resource_names: strings(names),
    }]
}

fn rules() -> HashMap<&'static str, PolicyRule> {
    let rule = |level: Level| PolicyRule {
        level,
        ..PolicyRule::default()
    };
    let get = |level: Level| PolicyRule {
        verbs: strings(&["get"]),
        ..rule(level)
    };
    HashMap::from([
        ("default", rule(Level::Metadata)),
        (
            "create",
            PolicyRule {
                verbs: strings(&["create"]),
                ..rule(Level::Request)
            },
        ),
        (
            "tims",
            PolicyRule {
                users: strings(&["tim@k8s.io"]),
                ..rule(Level::Metadata)
            },
        ),
        (
            "humans",
            PolicyRule {
                user_groups: strings(&["humans"]),
                ..rule(Level::Metadata)
            },
        ),
        (
            "serviceAccounts",
            PolicyRule {
                user_groups: strings(&["system:serviceaccounts"]),
                ..rule(Level::Request)
            },
        ),
        (
            "getPods",
            PolicyRule {
                resources: resources("", &["pods"], &[]),
                ..get(Level::RequestResponse)
            },
        ),
        (
            "getPodLogs",
            PolicyRule {
                resources: resources("", &["pods/log"], &[]),
                ..get(Level::Request)
            },
        ),
        (
            "getPodWildcardMatching",
            PolicyRule {
                resources: resources("", &["*"], &[]),
                ..get(Level::Request)
            },
        ),
        (
            "getPodResourceWildcardMatching",
            PolicyRule {
                resources: resources("", &["*/log"], &[]),
                ..get(Level::Request)
            },
        ),
        (
            "getPodSubResourceWildcardMatching",
            PolicyRule {
                resources: resources("", &["pods/*"], &[]),
                ..get(Level::Request)
            },
        ),
        (
            "getClusterRoles",
            PolicyRule {
                resources: resources("rbac.authorization.k8s.io", &["clusterroles"], &[]),
                namespaces: strings(&[""]),
                ..get(Level::RequestResponse)
            },
        ),
        (
            "getLogs",
            PolicyRule {
                non_resource_urls: strings(&["/logs*"]),
                ..get(Level::RequestResponse)
            },
        ),
        (
            "getMetrics",
            PolicyRule {
                non_resource_urls: strings(&["/metrics"]),
                ..get(Level::Request)
            },
        ),
        (
            "clusterRoleEdit",
            PolicyRule {
                resources: resources("rbac.authorization.k8s.io", &["clusterroles"], &["edit"]),
                ..rule(Level::Request)
            },
        ),
        (
            "omit RequestReceived",
            PolicyRule {
                omit_stages: vec![Stage::RequestReceived],
                ..rule(Level::Request)
            },
        ),
        (
            "only audit panic",
            PolicyRule {
                omit_stages: vec![
                    Stage::RequestReceived,
                    Stage::ResponseStarted,
                    Stage::ResponseComplete,
                ],
                ..rule(Level::Request)
            },
        ),
    ])
}

/// `test`: the level and omitted stages (as a set) a policy of the named rules gives.
fn check(
    request: &str,
    level: Level,
    policy_stages: &[Stage],
    omitted: &[Stage],
    rule_names: &[&str],
) {
    let all = rules();
    let policy = Policy {
        omit_stages: policy_stages.to_vec(),
        rules: rule_names.iter().map(|name| all[*name].clone()).collect(),
        omit_managed_fields: false,
    };
    let config = policy.evaluate(&attrs()[request]);
    assert_eq!(
        config.level, level,
        "request:{request} rules:{rule_names:?}"
    );
    let mut got: Vec<&str> = config.omit_stages.iter().map(Stage::as_str).collect();
    let mut want: Vec<&str> = omitted.iter().map(Stage::as_str).collect();
    got.sort_unstable();
    got.dedup();
    want.sort_unstable();
    want.dedup();
    assert_eq!(got, want, "request:{request} rules:{rule_names:?}");
}

/// `testAuditLevel`.
fn audit_levels(stages: &[Stage]) {
    use Level::{Metadata, None, Request, RequestResponse};
    let cases: &[(&str, Level, &[&str])] = &[
        ("namespaced", Metadata, &["default"]),
        ("namespaced", None, &["create"]),
        ("namespaced", Metadata, &["tims"]),
        ("namespaced", Metadata, &["humans"]),
        ("namespaced", None, &["serviceAccounts"]),
        ("namespaced", RequestResponse, &["getPods"]),
        ("namespaced", None, &["getClusterRoles"]),
        ("namespaced", None, &["getLogs"]),
        ("namespaced", None, &["getMetrics"]),
        (
            "namespaced",
            Metadata,
            &["getMetrics", "serviceAccounts", "default"],
        ),
        (
            "namespaced",
            RequestResponse,
            &["getMetrics", "getPods", "default"],
        ),
        ("namespaced", RequestResponse, &["getPodLogs", "getPods"]),
        ("cluster", Metadata, &["default"]),
        ("cluster", None, &["create"]),
        ("cluster", Metadata, &["tims"]),
        ("cluster", Metadata, &["humans"]),
        ("cluster", None, &["serviceAccounts"]),
        ("cluster", None, &["getPods"]),
        ("cluster", RequestResponse, &["getClusterRoles"]),
        ("cluster", Request, &["clusterRoleEdit", "getClusterRoles"]),
        ("cluster", None, &["getLogs"]),
        ("cluster", None, &["getMetrics"]),
        (
            "cluster",
            Metadata,
            &["getMetrics", "serviceAccounts", "default"],
        ),
        (
            "cluster",
            RequestResponse,
            &["getMetrics", "getClusterRoles", "default"],
        ),
        ("cluster", None, &["getPodLogs", "getPods"]),
        ("nonResource", Metadata, &["default"]),
        ("nonResource", None, &["create"]),
        ("nonResource", Metadata, &["tims"]),
        ("nonResource", Metadata, &["humans"]),
        ("nonResource", None, &["serviceAccounts"]),
        ("nonResource", None, &["getPods"]),
        ("nonResource", None, &["getClusterRoles"]),
        ("nonResource", RequestResponse, &["getLogs"]),
        ("nonResource", None, &["getMetrics"]),
        (
            "nonResource",
            Metadata,
            &["getMetrics", "serviceAccounts", "default"],
        ),
        (
            "nonResource",
            RequestResponse,
            &["getLogs", "getClusterRoles", "default"],
        ),
        ("nonResource", None, &["getPodLogs", "getPods"]),
        ("subresource", Request, &["getPodLogs", "getPods"]),
        ("subresource", Request, &["getPodWildcardMatching"]),
        ("subresource", Request, &["getPodResourceWildcardMatching"]),
        (
            "subresource",
            Request,
            &["getPodSubResourceWildcardMatching"],
        ),
        ("Unauthorized", None, &["tims"]),
        ("Unauthorized", Metadata, &["tims", "default"]),
        ("Unauthorized", None, &["humans"]),
        ("Unauthorized", Metadata, &["humans", "default"]),
    ];
    for (request, level, names) in cases {
        check(request, level.clone(), stages, stages, names);
    }
}

const RECEIVED: Stage = Stage::RequestReceived;
const STARTED: Stage = Stage::ResponseStarted;
const COMPLETE: Stage = Stage::ResponseComplete;

#[test]
fn test_checker() {
    audit_levels(&[]);
    for request in ["namespaced", "cluster", "nonResource"] {
        check(
            request,
            Level::Request,
            &[],
            &[RECEIVED],
            &["omit RequestReceived", "getPods", "default"],
        );
        check(
            request,
            Level::Request,
            &[],
            &[RECEIVED, STARTED, COMPLETE],
            &["only audit panic", "getPods", "default"],
        );
    }
}

#[test]
fn test_checker_policy_omit_stages() {
    let policy_stages = [RECEIVED, STARTED];
    audit_levels(&policy_stages);
    for request in ["namespaced", "cluster"] {
        check(
            request,
            Level::Request,
            &policy_stages,
            &[RECEIVED, STARTED],
            &["omit RequestReceived", "getPods", "default"],
        );
        check(
            request,
            Level::Request,
            &policy_stages,
            &[RECEIVED, STARTED, COMPLETE],
            &["only audit panic", "getPods", "default"],
        );
    }
    check(
        "nonResource",
        Level::Metadata,
        &policy_stages,
        &[RECEIVED, STARTED],
        &["default", "omit RequestReceived", "getPods"],
    );
    check(
        "nonResource",
        Level::Request,
        &policy_stages,
        &[RECEIVED, STARTED, COMPLETE],
        &["only audit panic", "getPods", "default"],
    );
}

#[test]
fn test_union_stages() {
    let panic = Stage::Panic;
    let cases: &[(&[Stage], &[Stage], &[Stage])] = &[
        (&[], &[], &[]),
        (&[RECEIVED], &[], &[RECEIVED]),
        (&[RECEIVED], &[RECEIVED], &[RECEIVED]),
        (&[RECEIVED], &[STARTED], &[RECEIVED, STARTED]),
        (&[RECEIVED, RECEIVED], &[RECEIVED, RECEIVED], &[RECEIVED]),
        (
            &[RECEIVED, STARTED],
            &[panic.clone(), RECEIVED],
            &[RECEIVED, STARTED, panic.clone()],
        ),
    ];
    for (first, second, want) in cases {
        assert_eq!(union_stages(first, second), want.to_vec());
    }
}

#[test]
fn test_omit_managed_fields() {
    let attributes = Attributes {
        verb: "get".into(),
        ..Attributes::default()
    };
    let matching = PolicyRule {
        level: Level::RequestResponse,
        verbs: strings(&["get"]),
        ..PolicyRule::default()
    };
    let cases = [
        (
            "global policy default is false, rule does not override",
            false,
            None,
            false,
        ),
        (
            "global policy default is true, rule does not override",
            true,
            None,
            true,
        ),
        (
            "global policy default is true, rule overrides to false",
            true,
            Some(false),
            false,
        ),
        (
            "global policy default is false, rule overrides to true",
            false,
            Some(true),
            true,
        ),
    ];
    for (name, default, rule, want) in cases {
        let policy = Policy {
            omit_managed_fields: default,
            rules: vec![PolicyRule {
                omit_managed_fields: rule,
                ..matching.clone()
            }],
            omit_stages: Vec::new(),
        };
        assert_eq!(
            policy.evaluate(&attributes).omit_managed_fields,
            want,
            "{name}"
        );
    }
    // No rule matches: the policy's default.
    let unmatched = Policy {
        omit_managed_fields: true,
        rules: vec![PolicyRule {
            verbs: strings(&["list"]),
            ..matching
        }],
        omit_stages: Vec::new(),
    };
    let config = unmatched.evaluate(&attributes);
    assert_eq!(config.level, Level::None);
    assert!(config.omit_managed_fields);
}

const POLICY_DEF: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs:
      - /healthz*
      - /version
  - level: RequestResponse
    users: ["tim"]
    userGroups: ["testers", "developers"]
    verbs: ["patch", "delete", "create"]
    resources:
      - group: ""
      - group: "rbac.authorization.k8s.io"
        resources: ["clusterroles", "clusterrolebindings"]
    namespaces: ["default", "kube-system"]
  - level: Metadata
"#;

#[test]
fn test_parser() {
    let (policy, warnings) = Policy::from_bytes(POLICY_DEF.as_bytes()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let expected = Policy {
        rules: vec![
            PolicyRule {
                level: Level::None,
                non_resource_urls: strings(&["/healthz*", "/version"]),
                ..PolicyRule::default()
            },
            PolicyRule {
                level: Level::RequestResponse,
                users: strings(&["tim"]),
                user_groups: strings(&["testers", "developers"]),
                verbs: strings(&["patch", "delete", "create"]),
                resources: vec![
                    GroupResources::default(),
                    GroupResources {
                        group: "rbac.authorization.k8s.io".into(),
                        resources: strings(&["clusterroles", "clusterrolebindings"]),
                        resource_names: Vec::new(),
                    },
                ],
                namespaces: strings(&["default", "kube-system"]),
                ..PolicyRule::default()
            },
            PolicyRule {
                level: Level::Metadata,
                ..PolicyRule::default()
            },
        ],
        omit_stages: Vec::new(),
        omit_managed_fields: false,
    };
    assert_eq!(policy, expected);
}

#[test]
fn test_parse_policy_with_no_version_or_kind() {
    let without = POLICY_DEF.replace("apiVersion: audit.k8s.io/v1\nkind: Policy\n", "");
    let error = Policy::from_bytes(without.as_bytes()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown group version field /, Kind= in policy"
    );
    // Another version: kube-apiserver reads only v1.
    let beta = POLICY_DEF.replace("audit.k8s.io/v1", "audit.k8s.io/v1beta1");
    assert!(
        Policy::from_bytes(beta.as_bytes())
            .unwrap_err()
            .to_string()
            .starts_with("unknown group version field audit.k8s.io/v1beta1, Kind=Policy")
    );
}

#[test]
fn test_parse_policy_with_unknown_field() {
    let policy = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  resources:
  - group: coordination.k8s.io
    resources:
    - "leases"
    verbs: ["watch", "get", "list"] # invalid indentation on verbs
"#;
    let (read, warnings) = Policy::from_bytes(policy.as_bytes()).unwrap();
    assert_eq!(read.rules.len(), 1);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("rules[0].resources[0].verbs") || warnings[0].contains("verbs"),
        "{warnings:?}"
    );
}

#[test]
fn test_policy_cnt_check() {
    for (name, policy) in [
        (
            "policyWithNoRule",
            "apiVersion: audit.k8s.io/v1\nkind: Policy",
        ),
        ("emptyPolicyFile", ""),
    ] {
        assert!(Policy::from_bytes(policy.as_bytes()).is_err(), "{name}");
    }
    assert_eq!(
        Policy::from_bytes(b"apiVersion: audit.k8s.io/v1\nkind: Policy"),
        Err(PolicyError::NoRules)
    );
}

#[test]
fn a_policy_file_is_named_in_its_errors() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("policy.yaml");
    std::fs::write(&path, "apiVersion: audit.k8s.io/v1\nkind: Policy\n").unwrap();
    assert_eq!(
        Policy::from_file(&path).unwrap_err().to_string(),
        format!(
            "loaded illegal policy with 0 rules: from file {}",
            path.display()
        )
    );
    let missing = directory.path().join("missing.yaml");
    assert!(
        Policy::from_file(&missing)
            .unwrap_err()
            .to_string()
            .starts_with(&format!(
                "failed to read file path {:?}",
                missing.display().to_string()
            ))
    );
}

#[test]
fn hostile_policies_are_refused_with_reasons() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let duplicated =
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\nrules: [{level: None}]\n";
    for (name, text) in [
        ("garbage", "\u{0}\u{1}not yaml: [".to_owned()),
        ("truncated", POLICY_DEF[..POLICY_DEF.len() / 2].to_owned()),
        ("deeply nested", deep),
        ("a list", "- level: None".to_owned()),
        (
            "wrong types",
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: {level: None}".to_owned(),
        ),
        ("duplicated keys", duplicated.to_owned()),
    ] {
        let refused = Policy::from_bytes(text.as_bytes());
        assert!(refused.is_err(), "{name}: {refused:?}");
    }
    let binary = [0xff_u8, 0xfe, 0x00];
    assert!(Policy::from_bytes(&binary).is_err());
}

fn single(rule: PolicyRule) -> Policy {
    Policy {
        rules: vec![rule],
        ..Policy::default()
    }
}

#[test]
fn test_validate_policy() {
    let valid_rules = vec![
        PolicyRule {
            level: Level::Metadata,
            ..PolicyRule::default()
        },
        PolicyRule {
            level: Level::None,
            user_groups: strings(&["system:serviceaccounts", "system:nodes"]),
            ..PolicyRule::default()
        },
        PolicyRule {
            level: Level::RequestResponse,
            verbs: strings(&["get"]),
            resources: resources("rbac.authorization.k8s.io", &["roles", "rolebindings"], &[]),
            namespaces: strings(&["kube-system"]),
            ..PolicyRule::default()
        },
        PolicyRule {
            level: Level::Metadata,
            user_groups: strings(&["developers"]),
            non_resource_urls: strings(&["/logs*", "/healthz*", "/metrics", "*"]),
            ..PolicyRule::default()
        },
        PolicyRule {
            level: Level::Metadata,
            omit_stages: vec![RECEIVED],
            ..PolicyRule::default()
        },
    ];
    let mut success: Vec<Policy> = valid_rules.iter().cloned().map(single).collect();
    success.push(Policy::default());
    success.push(Policy {
        omit_stages: vec![RECEIVED],
        ..Policy::default()
    });
    success.push(Policy {
        rules: valid_rules.clone(),
        ..Policy::default()
    });
    for (index, policy) in success.iter().enumerate() {
        assert_eq!(policy.validate(), Vec::new(), "[{index}] {policy:?}");
    }

    let metadata = |rule: PolicyRule| PolicyRule {
        level: Level::Metadata,
        ..rule
    };
    let invalid_rules = vec![
        PolicyRule::default(),
        PolicyRule {
            verbs: strings(&["get"]),
            resources: resources("", &["secrets"], &[]),
            namespaces: strings(&["kube-system"]),
            ..PolicyRule::default()
        },
        PolicyRule {
            level: Level::Unknown("FooBar".into()),
            ..PolicyRule::default()
        },
        metadata(PolicyRule {
            namespaces: strings(&["default"]),
            non_resource_urls: strings(&["/logs*"]),
            ..PolicyRule::default()
        }),
        metadata(PolicyRule {
            resources: resources("", &["secrets"], &[]),
            non_resource_urls: strings(&["/logs*"]),
            ..PolicyRule::default()
        }),
        metadata(PolicyRule {
            resources: resources("rbac.authorization.k8s.io/v1beta1", &["roles"], &[]),
            ..PolicyRule::default()
        }),
        metadata(PolicyRule {
            non_resource_urls: strings(&["logs", "/healthz*"]),
            ..PolicyRule::default()
        }),
        metadata(PolicyRule {
            non_resource_urls: strings(&["", "/healthz*"]),
            ..PolicyRule::default()
        }),
        metadata(PolicyRule {
            non_resource_urls: strings(&["/logs/*/*", "/metrics"]),
            ..PolicyRule::default()
        }),
        metadata(PolicyRule {
            non_resource_urls: strings(&["/logs/*.log", "/metrics"]),
            ..PolicyRule::default()
        }),
        metadata(PolicyRule {
            verbs: strings(&["get"]),
            resources: resources("", &[], &["leader"]),
            namespaces: strings(&["kube-system"]),
            ..PolicyRule::default()
        }),
        metadata(PolicyRule {
            omit_stages: vec![Stage::Unknown("foo".into())],
            ..PolicyRule::default()
        }),
    ];
    let mut errors: Vec<Policy> = invalid_rules.into_iter().map(single).collect();
    let mut many = valid_rules;
    many.push(PolicyRule::default());
    errors.push(Policy {
        rules: many,
        ..Policy::default()
    });
    errors.push(Policy {
        omit_stages: vec![Stage::Unknown("foo".into())],
        rules: vec![metadata(PolicyRule::default())],
        omit_managed_fields: false,
    });
    for (index, policy) in errors.iter().enumerate() {
        assert!(!policy.validate().is_empty(), "[{index}] {policy:?}");
    }
}

#[test]
fn validation_words_errors_as_kube_apiserver() {
    let policy = Policy {
        omit_stages: vec![Stage::Unknown("foo".into())],
        rules: vec![
            PolicyRule::default(),
            PolicyRule {
                level: Level::Unknown("FooBar".into()),
                non_resource_urls: strings(&["logs"]),
                resources: resources("Bad_Group", &[], &["leader"]),
                ..PolicyRule::default()
            },
        ],
        omit_managed_fields: false,
    };
    let messages: Vec<String> = policy.validate().iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            r#"omitStages[0]: Invalid value: "foo": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"#,
            "rules[0].level: Required value",
            r#"rules[1].level: Unsupported value: "FooBar": supported values: "None", "Metadata", "Request", "RequestResponse""#,
            r#"rules[1].nonResourceURLs[0]: Invalid value: "logs": non-resource URL rules must begin with a '/' character"#,
            r#"rules[1].resources.group: Invalid value: "Bad_Group": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
            r#"rules[1].resources.resourceNames: Invalid value: ["leader"]: using resourceNames requires at least one resource"#,
            r#"rules[1].nonResourceURLs: Invalid value: ["logs"]: rules cannot apply to both regular resources and non-resource URLs"#,
        ]
    );
}
