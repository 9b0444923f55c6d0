//! `-o json` writes what kube-apiserver writes: Go's field order, two-space indent, Go's
//! escaping. Pinned against objects written by Kubernetes' own Go code for every flowcontrol
//! kind and version, and against APIServices and lists worked out by hand from the Go types.

use apfkit_types::KINDS;

fn stdout(args: &[&str], stdin: &[u8]) -> String {
    String::from_utf8(super::success(args, stdin)).unwrap()
}

#[test]
fn every_flowcontrol_kind_and_version_prints_as_go_writes_it() {
    let kinds: Vec<_> = KINDS
        .iter()
        .filter(|k| k.group == "flowcontrol.apiserver.k8s.io" && !k.is_list())
        .collect();
    assert_eq!(kinds.len(), 2 * apfkit_tests::flowcontrol_versions().len());
    for kind in kinds {
        let name = format!("{}.{}.{}.json", kind.group, kind.version, kind.kind);
        let path = apfkit_tests::upstream_wire_fixtures().join(&name);
        let go = std::fs::read_to_string(&path).unwrap();
        // Every field is set in upstream's fixture, so defaulting adds nothing, and converting
        // to its own version changes nothing: both print Go's bytes, with a final newline.
        let expected = format!("{go}\n");
        assert_eq!(
            stdout(&["default", "-o", "json"], go.as_bytes()),
            expected,
            "{name}: default"
        );
        assert_eq!(
            stdout(
                &["convert", "--to", kind.version, "-o", "json"],
                go.as_bytes()
            ),
            expected,
            "{name}: convert"
        );
    }
}

/// An APIService with every field of kube-aggregator's Go types set, in v1beta1.
const API_SERVICE_V1BETA1: &str = r#"{
  "apiVersion": "apiregistration.k8s.io/v1beta1",
  "kind": "APIService",
  "metadata": {
    "uid": "4f1c",
    "name": "v1.example.com",
    "labels": {"z": "1", "a": "<&>"},
    "creationTimestamp": "2024-01-02T03:04:05Z",
    "resourceVersion": "7"
  },
  "status": {
    "conditions": [
      {"message": "all good", "reason": "Passed", "lastTransitionTime": "2024-01-02T03:04:05Z", "status": "True", "type": "Available"}
    ]
  },
  "spec": {
    "versionPriority": 15,
    "groupPriorityMinimum": 1000,
    "caBundle": "AQI=",
    "insecureSkipTLSVerify": true,
    "version": "v1",
    "group": "example.com",
    "service": {"port": 8443, "name": "api", "namespace": "example"}
  }
}"#;

#[test]
fn api_services_print_in_the_order_of_the_go_structs() {
    // kube-aggregator's types.go: APIServiceSpec is service, group, version,
    // insecureSkipTLSVerify, caBundle, groupPriorityMinimum, versionPriority; ServiceReference
    // namespace, name, port; APIServiceCondition type, status, lastTransitionTime, reason,
    // message. ObjectMeta: name, ..., uid, resourceVersion, ..., creationTimestamp, ...,
    // labels (map keys sorted, `<`, `&`, `>` escaped as Go does).
    let expected = |version: &str| {
        format!(
            r#"{{
  "kind": "APIService",
  "apiVersion": "apiregistration.k8s.io/{version}",
  "metadata": {{
    "name": "v1.example.com",
    "uid": "4f1c",
    "resourceVersion": "7",
    "creationTimestamp": "2024-01-02T03:04:05Z",
    "labels": {{
      "a": "\u003c\u0026\u003e",
      "z": "1"
    }}
  }},
  "spec": {{
    "service": {{
      "namespace": "example",
      "name": "api",
      "port": 8443
    }},
    "group": "example.com",
    "version": "v1",
    "insecureSkipTLSVerify": true,
    "caBundle": "AQI=",
    "groupPriorityMinimum": 1000,
    "versionPriority": 15
  }},
  "status": {{
    "conditions": [
      {{
        "type": "Available",
        "status": "True",
        "lastTransitionTime": "2024-01-02T03:04:05Z",
        "reason": "Passed",
        "message": "all good"
      }}
    ]
  }}
}}
"#
        )
    };
    let input = API_SERVICE_V1BETA1.as_bytes();
    assert_eq!(
        stdout(&["default", "-o", "json"], input),
        expected("v1beta1")
    );
    assert_eq!(
        stdout(&["convert", "--to", "v1", "-o", "json"], input),
        expected("v1")
    );
}

#[test]
fn lists_print_their_items_each_in_its_own_order() {
    let list = r#"{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "9"}, "items": [
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema",
         "metadata": {"name": "probes"},
         "spec": {"matchingPrecedence": 2, "priorityLevelConfiguration": {"name": "exempt"}}},
        {"apiVersion": "apiregistration.k8s.io/v1beta1", "kind": "APIService",
         "metadata": {"name": "v1.apps"}, "spec": {"versionPriority": 15, "groupPriorityMinimum": 17800, "version": "v1", "group": "apps"}}
    ]}"#;
    // metav1.List: kind, apiVersion, metadata (a ListMeta value: always written), items. Items
    // converted to v1 (the FlowSchema's status is a Go struct value: written empty).
    let expected = r#"{
  "kind": "List",
  "apiVersion": "v1",
  "metadata": {
    "resourceVersion": "9"
  },
  "items": [
    {
      "kind": "FlowSchema",
      "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
      "metadata": {
        "name": "probes"
      },
      "spec": {
        "priorityLevelConfiguration": {
          "name": "exempt"
        },
        "matchingPrecedence": 2
      },
      "status": {}
    },
    {
      "kind": "APIService",
      "apiVersion": "apiregistration.k8s.io/v1",
      "metadata": {
        "name": "v1.apps"
      },
      "spec": {
        "group": "apps",
        "version": "v1",
        "groupPriorityMinimum": 17800,
        "versionPriority": 15
      },
      "status": {}
    }
  ]
}
"#;
    assert_eq!(
        stdout(&["convert", "--to", "v1", "-o", "json"], list.as_bytes()),
        expected
    );
    let empty = r#"{"apiVersion": "v1", "kind": "List", "items": []}"#;
    assert_eq!(
        stdout(&["convert", "--to", "v1", "-o", "json"], empty.as_bytes()),
        "{\n  \"kind\": \"List\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"items\": []\n}\n"
    );
}

#[test]
fn typed_lists_print_in_the_order_of_their_go_struct() {
    let list = r#"{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchemaList",
        "metadata": {"continue": "c", "resourceVersion": "3"},
        "items": [{"metadata": {"name": "a"}, "spec": {"priorityLevelConfiguration": {"name": "exempt"}}}]}"#;
    let printed = stdout(&["convert", "--to", "v1", "-o", "json"], list.as_bytes());
    // FlowSchemaList: kind, apiVersion, metadata (ListMeta: resourceVersion before continue),
    // items; the items carry no kind or apiVersion of their own, as Go writes them.
    let order: Vec<usize> = [
        r#""kind": "FlowSchemaList""#,
        r#""apiVersion""#,
        r#""resourceVersion": "3""#,
        r#""continue": "c""#,
        r#""items""#,
        r#""name": "a""#,
        r#""matchingPrecedence": 1000"#,
        r#""status": {}"#,
    ]
    .iter()
    .map(|needle| {
        printed
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} in {printed}"))
    })
    .collect();
    assert!(order.is_sorted(), "{printed}");
}
