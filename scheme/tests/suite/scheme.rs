//! The dynamic scheme: documents found by apiVersion and kind, converted to a target version,
//! with unknown fields handled in three modes, lossy values reported, and clear errors with
//! field paths for everything else.

use apfkit_scheme::scheme::{CODECS, SCHEME, Target, UnknownFields, Warning};
use serde_json::{Value, json};

const KEY: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";

fn target(s: &str) -> Target {
    s.parse().unwrap()
}

fn plc(version: &str, name: &str, limited: Value) -> Value {
    json!({"apiVersion": format!("flowcontrol.apiserver.k8s.io/{version}"), "kind": "PriorityLevelConfiguration",
           "metadata": {"name": name}, "spec": {"type": "Limited", "limited": limited}})
}

fn fs(version: &str, name: &str) -> Value {
    json!({"apiVersion": format!("flowcontrol.apiserver.k8s.io/{version}"), "kind": "FlowSchema",
           "metadata": {"name": name}, "spec": {"priorityLevelConfiguration": {"name": "global-default"}}})
}

fn apiservice(version: &str) -> Value {
    json!({"apiVersion": format!("apiregistration.k8s.io/{version}"), "kind": "APIService", "metadata": {"name": "v1.x"},
           "spec": {"group": "x", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1}})
}

fn error(document: &Value, to: &str) -> String {
    SCHEME
        .convert_value(document, &target(to), UnknownFields::Strict)
        .unwrap_err()
        .to_string()
}

#[test]
fn targets_parse() {
    assert_eq!(
        target("v1beta3"),
        Target {
            group: None,
            version: "v1beta3".into()
        }
    );
    assert_eq!(
        target("flowcontrol.apiserver.k8s.io/v1").group.as_deref(),
        Some("flowcontrol.apiserver.k8s.io")
    );
    for bad in ["", "/v1", "a/b/c", "g/"] {
        assert!(bad.parse::<Target>().is_err(), "{bad:?}");
    }
}

#[test]
fn bare_and_full_targets() {
    let out = SCHEME
        .convert_value(
            &fs("v1beta1", "a"),
            &target("v1beta3"),
            UnknownFields::Strict,
        )
        .unwrap();
    assert_eq!(
        out.object["apiVersion"],
        "flowcontrol.apiserver.k8s.io/v1beta3"
    );
    assert_eq!(
        out.object["spec"]["matchingPrecedence"], 1000,
        "defaulted in the source version"
    );
    let full = SCHEME
        .convert_value(
            &fs("v1beta1", "a"),
            &target("flowcontrol.apiserver.k8s.io/v1"),
            UnknownFields::Strict,
        )
        .unwrap();
    assert_eq!(full.object["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
    assert!(full.warnings.is_empty());
}

#[test]
fn target_errors_say_what_is_served() {
    assert_eq!(
        error(&apiservice("v1"), "v1beta3"),
        "apiregistration.k8s.io has no version \"v1beta3\"; it serves v1beta1, v1"
    );
    assert_eq!(
        error(&fs("v1", "a"), "apiregistration.k8s.io/v1"),
        "apiVersion: cannot convert a FlowSchema of group flowcontrol.apiserver.k8s.io to group apiregistration.k8s.io"
    );
}

#[test]
fn unknown_kinds_and_missing_identity() {
    let unknown = error(
        &json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
        "v1",
    );
    assert!(
        unknown.starts_with(
            "unsupported apiVersion \"apps/v1\" and kind \"Deployment\"; supported: flowcontrol"
        ),
        "{unknown}"
    );
    assert_eq!(
        error(&json!({"kind": "FlowSchema"}), "v1"),
        "apiVersion: Required value: must be set"
    );
    assert_eq!(
        error(
            &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1"}),
            "v1"
        ),
        "kind: Required value: must be set"
    );
    assert_eq!(
        error(&json!({"apiVersion": 3, "kind": "FlowSchema"}), "v1"),
        "apiVersion: expected a string, found a number"
    );
    assert_eq!(
        error(&json!([1, 2]), "v1"),
        "expected an object, found an array"
    );
}

#[test]
fn wrong_types_name_the_field() {
    let mut doc = fs("v1", "a");
    doc["spec"]["matchingPrecedence"] = json!("high");
    let err = error(&doc, "v1");
    assert!(
        err.starts_with("spec.matchingPrecedence: invalid type: string \"high\""),
        "{err}"
    );
    let mut doc = fs("v1", "a");
    doc["spec"]["rules"] = json!([{"subjects": [{"kind": 5}]}]);
    assert!(
        error(&doc, "v1").starts_with("spec.rules[0].subjects[0].kind: invalid type"),
        "{}",
        error(&doc, "v1")
    );
}

#[test]
fn unknown_fields_in_three_modes() {
    let mut doc = plc(
        "v1",
        "p",
        json!({"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}, "shares": 1}),
    );
    doc["spec"]["extra"] = json!(true);
    doc["bogus"] = json!({});
    let ignore = SCHEME
        .convert_value(&doc, &target("v1"), UnknownFields::Ignore)
        .unwrap();
    assert!(ignore.warnings.is_empty());
    assert!(ignore.object.get("bogus").is_none());
    let warn = SCHEME
        .convert_value(&doc, &target("v1"), UnknownFields::Warn)
        .unwrap();
    let paths: Vec<String> = warn.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        paths,
        [
            "unknown field \"bogus\"",
            "unknown field \"spec.extra\"",
            "unknown field \"spec.limited.shares\""
        ]
    );
    let strict = SCHEME
        .convert_value(&doc, &target("v1"), UnknownFields::Strict)
        .unwrap_err()
        .to_string();
    assert_eq!(
        strict,
        "strict decoding error: unknown field \"bogus\", unknown field \"spec.extra\", unknown field \"spec.limited.shares\""
    );
}

#[test]
fn unknown_fields_inside_lists_have_indexed_paths() {
    let mut doc = fs("v1", "a");
    doc["spec"]["rules"] = json!([{"subjects": [{"kind": "User", "user": {"name": "u", "uid": "1"}}], "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/"]}]}]);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [fs("v1", "ok"), doc]});
    let out = SCHEME
        .convert_value(&list, &target("v1"), UnknownFields::Warn)
        .unwrap();
    assert_eq!(
        out.warnings,
        [Warning::UnknownField {
            path: "items[1].spec.rules[0].subjects[0].user.uid".into()
        }]
    );
}

#[test]
fn lossy_conversions_are_reported() {
    let zero = plc(
        "v1",
        "jail",
        json!({"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}),
    );
    let to_v1beta2 = SCHEME
        .convert_value(&zero, &target("v1beta2"), UnknownFields::Strict)
        .unwrap();
    assert_eq!(
        to_v1beta2.object["spec"]["limited"]["assuredConcurrencyShares"],
        0
    );
    assert_eq!(
        to_v1beta2
            .warnings
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "spec.limited.nominalConcurrencyShares: 0 cannot be kept in flowcontrol.apiserver.k8s.io/v1beta2: it reads back as 30"
        ]
    );
    for version in ["v1alpha1", "v1beta1"] {
        assert_eq!(
            SCHEME
                .convert_value(&zero, &target(version), UnknownFields::Strict)
                .unwrap()
                .warnings
                .len(),
            1
        );
    }
    // v1beta3 keeps the zero with the annotation: lossless.
    let to_v1beta3 = SCHEME
        .convert_value(&zero, &target("v1beta3"), UnknownFields::Strict)
        .unwrap();
    assert!(to_v1beta3.warnings.is_empty(), "{:?}", to_v1beta3.warnings);
    assert_eq!(to_v1beta3.object["metadata"]["annotations"][KEY], "");
    // A v1 object carrying the v1beta3 annotation loses it through v1beta3.
    let mut annotated = plc(
        "v1",
        "p",
        json!({"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}),
    );
    annotated["metadata"]["annotations"] = json!({KEY: "x"});
    let warnings = SCHEME
        .convert_value(&annotated, &target("v1beta3"), UnknownFields::Strict)
        .unwrap()
        .warnings;
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0]
            .to_string()
            .starts_with(&format!("metadata.annotations.{KEY}: \"x\" cannot be kept")),
        "{}",
        warnings[0]
    );
}

#[test]
fn typed_lists_convert_items_and_relabel() {
    let list = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta1", "kind": "FlowSchemaList", "metadata": {"resourceVersion": "7"},
        "items": [{"metadata": {"name": "a"}, "spec": {"priorityLevelConfiguration": {"name": "x"}}}]});
    let out = SCHEME
        .convert_value(&list, &target("v1"), UnknownFields::Strict)
        .unwrap()
        .object;
    assert_eq!(out["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
    assert_eq!(out["kind"], "FlowSchemaList");
    assert_eq!(out["metadata"]["resourceVersion"], "7");
    assert_eq!(
        out["items"][0]["apiVersion"],
        "flowcontrol.apiserver.k8s.io/v1"
    );
    assert_eq!(out["items"][0]["spec"]["matchingPrecedence"], 1000);
    let empty = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta2", "kind": "PriorityLevelConfigurationList", "items": []});
    assert_eq!(
        SCHEME
            .convert_value(&empty, &target("v1beta3"), UnknownFields::Strict)
            .unwrap()
            .object["apiVersion"],
        "flowcontrol.apiserver.k8s.io/v1beta3"
    );
    let mixed_kind = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchemaList", "items": [plc("v1", "p", json!({"limitResponse": {"type": "Reject"}}))]});
    assert_eq!(
        error(&mixed_kind, "v1"),
        "items[0].kind: expected \"FlowSchema\" in a FlowSchemaList, found \"PriorityLevelConfiguration\""
    );
}

#[test]
fn v1_lists_may_mix_kinds_and_versions() {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [fs("v1beta2", "a"), plc("v1", "p", json!({"limitResponse": {"type": "Reject"}})), apiservice("v1beta1")]});
    let out = SCHEME
        .convert_value(&list, &target("v1"), UnknownFields::Strict)
        .unwrap()
        .object;
    assert_eq!(out["apiVersion"], "v1");
    let versions: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["apiVersion"].as_str().unwrap())
        .collect();
    assert_eq!(
        versions,
        [
            "flowcontrol.apiserver.k8s.io/v1",
            "flowcontrol.apiserver.k8s.io/v1",
            "apiregistration.k8s.io/v1"
        ]
    );
    assert_eq!(
        error(&list, "v1beta3"),
        "items[2]: apiregistration.k8s.io has no version \"v1beta3\"; it serves v1beta1, v1"
    );
}

#[test]
fn default_keeps_the_version() {
    let doc = plc(
        "v1beta3",
        "p",
        json!({"nominalConcurrencyShares": 0, "limitResponse": {"type": "Queue", "queuing": {}}}),
    );
    let out = SCHEME
        .default_value(&doc, UnknownFields::Strict)
        .unwrap()
        .object;
    assert_eq!(out["apiVersion"], "flowcontrol.apiserver.k8s.io/v1beta3");
    assert_eq!(out["spec"]["limited"]["nominalConcurrencyShares"], 30);
    assert_eq!(
        out["spec"]["limited"]["limitResponse"]["queuing"],
        json!({"queues": 64, "handSize": 8, "queueLengthLimit": 50})
    );
}

mod input {
    use super::*;

    #[test]
    fn json_values_and_yaml_documents() {
        let json = SCHEME.read_documents(br#"{"a": 1} {"b": 2}"#).unwrap();
        assert_eq!(
            json.iter().map(|d| d.value.clone()).collect::<Vec<_>>(),
            [json!({"a": 1}), json!({"b": 2})]
        );
        // Empty documents are skipped and not counted.
        let yaml = SCHEME
            .read_documents(b"---\na: 1\n---\n---\nb: 2\n")
            .unwrap();
        assert_eq!(
            yaml.iter()
                .map(|d| (d.index, d.value.clone()))
                .collect::<Vec<_>>(),
            [(0, json!({"a": 1})), (1, json!({"b": 2}))]
        );
    }

    #[test]
    fn invalid_utf8_names_the_offset() {
        assert_eq!(
            SCHEME.read_documents(b"a: \xff\n").unwrap_err().to_string(),
            "not valid UTF-8 at byte 3"
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let depth = 10_000;
        let json = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let err = SCHEME
            .read_documents(json.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("recursion limit exceeded"), "{err}");
        let yaml = format!("a: {}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(SCHEME.read_documents(yaml.as_bytes()).is_err());
        let block: String = (0..depth)
            .map(|i| format!("{}- \n", "  ".repeat(i)))
            .collect();
        assert!(SCHEME.read_documents(block.as_bytes()).is_err());
    }

    #[test]
    fn yaml_alias_bombs_are_refused() {
        let mut bomb = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let names: Vec<char> = ('b'..='k').collect();
        let mut previous = 'a';
        for name in names {
            bomb.push_str(&format!("{name}: &{name} [*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous}]\n"));
            previous = name;
        }
        let err = SCHEME
            .read_documents(bomb.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("invalid YAML"), "{err}");
    }

    #[test]
    fn huge_strings_are_data_not_trouble() {
        let name = "x".repeat(5_000_000);
        let doc = format!(
            "{{\"apiVersion\": \"flowcontrol.apiserver.k8s.io/v1\", \"kind\": \"FlowSchema\", \"metadata\": {{\"name\": \"{name}\"}}}}"
        );
        let documents = SCHEME.read_documents(doc.as_bytes()).unwrap();
        let out = SCHEME
            .convert_value(
                &documents[0].value,
                &target("v1beta3"),
                UnknownFields::Strict,
            )
            .unwrap();
        assert_eq!(
            out.object["metadata"]["name"].as_str().unwrap().len(),
            5_000_000
        );
    }

    #[test]
    fn syntax_errors_have_positions() {
        let err = SCHEME
            .read_documents(b"{\"a\": 1,\n \"b\": }")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("invalid JSON at line 2, column"), "{err}");
        assert!(SCHEME.read_documents(b"a: [1, 2\nb: 3").is_err());
    }
}

#[test]
fn supported_lists_the_registry_preferred_version_first() {
    assert_eq!(
        SCHEME.supported(),
        "flowcontrol.apiserver.k8s.io/{v1,v1beta3,v1beta2,v1beta1,v1alpha1} FlowSchema, \
         PriorityLevelConfiguration and their lists; apiregistration.k8s.io/{v1,v1beta1} \
         APIService and APIServiceList; v1 List of any of these"
    );
}

#[test]
fn every_codec_is_found_by_its_identity() {
    for codec in SCHEME.codecs() {
        let found = SCHEME.find(&codec.api_version(), codec.kind).unwrap();
        assert!(std::ptr::eq(found, codec), "{}", codec.kind);
    }
    assert_eq!(SCHEME.codecs().len(), CODECS.len());
    assert_eq!(CODECS.len(), 12);
}

#[test]
fn read_documents_takes_one_object_or_a_stream() {
    let object = serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "probes"},
        "spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 2},
    });
    let one = apfkit_wire::envelope::encode(apfkit_types::KINDS, &object).unwrap();
    let documents = SCHEME.read_documents(&one).unwrap();
    assert_eq!(documents.len(), 1);
    assert_eq!(documents[0].value["spec"]["matchingPrecedence"], 2);
    assert!(documents[0].unknown_fields.is_empty());

    let length = u32::try_from(one.len()).unwrap().to_be_bytes();
    let stream = [&length[..], &one, &length, &one].concat();
    let documents = SCHEME.read_documents(&stream).unwrap();
    assert_eq!(
        documents.iter().map(|d| d.index).collect::<Vec<_>>(),
        [0, 1]
    );
    let error = SCHEME
        .read_documents(&stream[..stream.len() - 1])
        .unwrap_err();
    assert!(
        error.to_string().contains("ends inside object 1"),
        "{error}"
    );
}
