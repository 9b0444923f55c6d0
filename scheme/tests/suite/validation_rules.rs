//! The rules behind kube-apiserver's messages, through `validation::validate` as a user calls
//! it: APIService names and caBundle sizes (kube-aggregator's `ValidateAPIService`),
//! non-resource URLs (`ValidateNonResourceURLPath` in kubernetes
//! `pkg/apis/flowcontrol/validation/validation.go`), DNS names (apimachinery's
//! `IsDNS1123Label`, `IsDNS1123Subdomain`, `IsDNS1035Label`) and the shares field's name per
//! version.

use apfkit_scheme::scheme::{HubObject, SCHEME, UnknownFields};
use apfkit_scheme::validation::{Options, validate};
use serde_json::{Value, json};

fn errors_with(document: &Value, options: &Options<'_>) -> Vec<String> {
    let (mut objects, _) = SCHEME
        .to_hub_value(document, UnknownFields::Strict)
        .expect("decodes");
    let object: HubObject = objects.remove(0);
    validate(&object, options)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn errors(document: &Value) -> Vec<String> {
    errors_with(document, &Options::default())
}

/// A local APIService `v1.foo` with `spec` fields replaced by `fields`.
fn api_service(name: &str, fields: Value) -> Value {
    let mut spec =
        json!({"group": "foo", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1});
    for (key, value) in fields.as_object().unwrap() {
        spec[key] = value.clone();
    }
    json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": name}, "spec": spec})
}

#[test]
fn a_local_ca_bundle_is_reported_by_its_decoded_size() {
    assert!(errors(&api_service("v1.foo", json!({"caBundle": ""}))).is_empty());
    for (bundle, size) in [("YQ==", 1), ("YWI=", 2), ("YWJj", 3), ("YWJjZA==", 4)] {
        let found = errors(&api_service("v1.foo", json!({"caBundle": bundle})));
        assert_eq!(
            found,
            [format!(
                "spec.caBundle: Invalid value: \"{size} bytes\": local APIServices may not have a caBundle"
            )],
            "{bundle}"
        );
    }
}

#[test]
fn an_api_service_name_is_a_path_segment_equal_to_version_dot_group() {
    assert!(errors(&api_service("v1.foo", json!({}))).is_empty());
    let name_errors = |name: &str, group: &str| {
        errors(&api_service(name, json!({"group": group})))
            .into_iter()
            .filter(|e| e.starts_with("metadata.name"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        name_errors(".", ""),
        ["metadata.name: Invalid value: \".\": may not be '.'"]
    );
    assert_eq!(
        name_errors("a/b%", "foo"),
        [
            "metadata.name: Invalid value: \"a/b%\": may not contain '/'",
            "metadata.name: Invalid value: \"a/b%\": may not contain '%'"
        ]
    );
    assert_eq!(
        name_errors("v2.foo", "foo"),
        [
            "metadata.name: Invalid value: \"v2.foo\": must be `spec.version+\".\"+spec.group`: \"v1.foo\""
        ]
    );
}

#[test]
fn dns_names_are_checked_with_apimachinery_messages() {
    let spec_errors = |fields: Value| {
        let name = format!(
            "{}.{}",
            fields
                .get("version")
                .and_then(Value::as_str)
                .unwrap_or("v1"),
            fields.get("group").and_then(Value::as_str).unwrap_or("foo")
        );
        errors(&api_service(&name, fields))
    };
    assert!(spec_errors(json!({"group": "system-foo.example", "version": "v1beta1"})).is_empty());
    let subdomain = spec_errors(json!({"group": "system+++$$"}));
    assert!(
        subdomain.iter().any(|e| e.ends_with(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )),
        "{subdomain:?}"
    );
    assert_eq!(spec_errors(json!({"group": "a..b"})).len(), 1);
    let label = spec_errors(json!({"version": "1v"}));
    assert!(
        label
            .iter()
            .any(|e| e.starts_with("spec.version: Invalid value: \"1v\": a DNS-1035 label")),
        "{label:?}"
    );
    let long = "a".repeat(64);
    let too_long = spec_errors(json!({"version": long}));
    assert!(
        too_long
            .iter()
            .any(|e| e.ends_with("must be no more than 63 characters")),
        "{too_long:?}"
    );
}

#[test]
fn non_resource_urls_are_checked_in_upstreams_rule_order() {
    let cases = [
        ("", Some("must not be empty")),
        ("/", None),
        ("healthz", Some("must start with slash")),
        ("/a b", Some("must not contain white-space")),
        ("/a//b", Some("must not contain double slash")),
        ("/apis/*", None),
        ("/a*", Some("wildcard can only do suffix matching")),
        ("/a/*/*", Some("wildcard can only do suffix matching")),
        ("/healthz", None),
    ];
    for (url, expected) in cases {
        let schema = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "system-foo"},
            "spec": {"matchingPrecedence": 50, "priorityLevelConfiguration": {"name": "system-bar"},
                "rules": [{"subjects": [{"kind": "User", "user": {"name": "noxu"}}],
                    "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": [url]}]}]}});
        let found = errors(&schema);
        match expected {
            None => assert!(found.is_empty(), "{url:?}: {found:?}"),
            Some(message) => assert_eq!(
                found,
                [format!(
                    "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: {url:?}: {message}"
                )],
                "{url:?}"
            ),
        }
    }
}

#[test]
fn the_shares_field_is_named_as_the_requests_version_names_it() {
    let level = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "system-foo"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": -1,
            "limitResponse": {"type": "Reject"}}}});
    for (version, field) in [
        ("v1alpha1", "assuredConcurrencyShares"),
        ("v1beta1", "assuredConcurrencyShares"),
        (
            "flowcontrol.apiserver.k8s.io/v1beta2",
            "assuredConcurrencyShares",
        ),
        ("v1beta3", "nominalConcurrencyShares"),
        ("v1", "nominalConcurrencyShares"),
    ] {
        let options = Options {
            request_version: Some(version),
            ..Options::default()
        };
        let found = errors_with(&level, &options);
        assert!(
            found
                .iter()
                .any(|e| e.starts_with(&format!("spec.limited.{field}:"))),
            "{version}: {found:?}"
        );
    }
}
