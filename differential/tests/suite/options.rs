//! A write's options: `dryRun` in the query of each verb and in a delete's body, a delete's
//! body in each media type (client-go sends protobuf for kube's own kinds), and values in
//! validation messages (item 13).

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

use crate::deletion::priority_level;

const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";

/// A `dryRun` value other than `All` is a 422 about the verb's options; a read ignores it.
async fn dry_run_values_other_than_all_are_refused_per_verb(s: &mut Session) {
    let level = format!("{LEVELS}/dry-run-values");
    s.send(Request::post(
        LEVELS,
        &priority_level("dry-run-values", json!({})),
    ))
    .await;
    s.send(Request::post(
        &format!("{LEVELS}?dryRun=bogus"),
        &priority_level("dry-run-refused", json!({})),
    ))
    .await;
    s.send(Request::put(
        &format!("{level}?dryRun=All&dryRun=bogus"),
        &priority_level("dry-run-values", json!({})),
    ))
    .await;
    s.send(Request::patch(
        &format!("{level}?dryRun="),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"a": "b"}}}),
    ))
    .await;
    s.send(Request::delete(&format!("{level}?dryRun=bogus")))
        .await;
    s.send(Request::get(&format!("{level}?dryRun=bogus"))).await;
}

/// `k8s\0` and a `runtime.Unknown` holding `metav1.DeleteOptions{dryRun: ["All"]}`, as
/// client-go encodes a dry-run delete of one of kube's kinds.
fn protobuf_dry_run() -> Vec<u8> {
    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        [
            &[number << 3 | 2, u8::try_from(bytes.len()).expect("short")][..],
            bytes,
        ]
        .concat()
    }
    let type_meta = [field(1, b"meta.k8s.io/v1"), field(2, b"DeleteOptions")].concat();
    let options = field(5, b"All");
    [&b"k8s\0"[..], &field(1, &type_meta), &field(2, &options)].concat()
}

/// A delete's body is its options, in JSON, YAML or protobuf: a dry run keeps the object,
/// preconditions are held, and what is not `DeleteOptions` is refused.
async fn a_deletes_body_gives_its_options(s: &mut Session) {
    let level = format!("{LEVELS}/body-options");
    s.send(Request::post(
        LEVELS,
        &priority_level("body-options", json!({})),
    ))
    .await;
    let delete =
        |content_type: &'static str, body: &[u8]| Request::delete(&level).raw(content_type, body);
    s.send(Request::delete(&level).json("application/json", &json!({"dryRun": ["All"]})))
        .await;
    s.send(delete(
        "application/vnd.kubernetes.protobuf",
        &protobuf_dry_run(),
    ))
    .await;
    s.send(Request::get(&level)).await;
    for body in [
        json!({"dryRun": ["bogus"]}),
        json!({"kind": "Status", "apiVersion": "v1"}),
        json!({"preconditions": {"uid": "not-its-uid"}}),
    ] {
        s.send(Request::delete(&level).json("application/json", &body))
            .await;
    }
    s.send(delete("application/json", b"{")).await;
    s.send(delete("text/plain", b"{}")).await;
    s.send(delete(
        "application/yaml",
        b"preconditions:\n  resourceVersion: not-a-version\n",
    ))
    .await;
    // Without a body the query's options count; with one, only the body's: this deletes.
    s.send(Request::delete(&format!("{level}?dryRun=All")).raw("application/json", b"{}"))
        .await;
    s.send(Request::get(&level)).await;
}

/// Lists in validation messages are printed as Go's `json.Marshal` writes them.
async fn validation_messages_print_lists_as_kube_does(s: &mut Session) {
    s.send(Request::post(
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
        &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "listed-verbs"},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"},
                "rules": [{"subjects": [{"kind": "Group", "group": {"name": "g"}}],
                    "resourceRules": [{"verbs": ["*", "create"], "apiGroups": ["*", "<&>"],
                        "resources": ["*"], "clusterScope": true}]}]}}),
    ))
    .await;
}

/// Labels, annotations and finalizers are held to `ValidateObjectMeta` on every kind: a
/// built-in one, and a custom resource (the metadata before its schema), as the e2e test of
/// validation ratcheting relies on.
async fn labels_annotations_and_finalizers_are_validated_on_every_kind(s: &mut Session) {
    for (name, metadata) in [
        (
            "bad-label-key",
            json!({"labels": {"#inv/($%)/alid=": "ok"}}),
        ),
        ("bad-label-value", json!({"labels": {"app": ">htt$://"}})),
        ("bad-prefix", json!({"labels": {"Example.com/app": "x"}})),
        ("bad-annotation", json!({"annotations": {"a b": "x"}})),
        (
            "upper-annotation",
            json!({"annotations": {"Example.com/Note": "x"}}),
        ),
        ("bad-finalizer", json!({"finalizers": ["a/b/c"]})),
        // Lengths, which Kubernetes 1.37 counts in bytes for label keys and values.
        ("long-label-key", json!({"labels": {"k".repeat(64): "x"}})),
        ("long-label-value", json!({"labels": {"k": "v".repeat(64)}})),
        (
            "long-label-prefix",
            json!({"labels": {format!("{}/k", "p".repeat(254)): "x"}}),
        ),
        (
            "both-propagations",
            json!({"finalizers": ["orphan", "foregroundDeletion"]}),
        ),
    ] {
        s.send(Request::post(LEVELS, &priority_level(name, metadata)))
            .await;
    }
    // A Service: a kind of its own strategy, held all the same.
    s.send(Request::post(
        "/api/v1/namespaces/default/services",
        &json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "bad-labels", "labels": {"app": "-x-"}},
            "spec": {"clusterIP": "None"}}),
    ))
    .await;
}

/// PriorityLevelConfigurations whose union members contradict their type, and EndpointSlices
/// without addresses or address type: errors 1.37's declarative validation answers in
/// place of the handwritten ones it covers (`MarkCoveredByDeclarative`).
async fn declarative_validation_answers_for_the_errors_it_covers(s: &mut Session) {
    let limited = json!({"nominalConcurrencyShares": 5,
        "limitResponse": {"type": "Reject"}});
    let queuing = json!({"queues": 8, "handSize": 2, "queueLengthLimit": 10});
    for (name, spec) in [
        (
            "limited-with-exempt",
            json!({"type": "Limited", "limited": limited, "exempt": {}}),
        ),
        (
            "exempt-with-limited",
            json!({"type": "Exempt", "limited": limited, "exempt": {}}),
        ),
        ("limited-without-limited", json!({"type": "Limited"})),
        (
            "reject-with-queuing",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                "limitResponse": {"type": "Reject", "queuing": queuing}}}),
        ),
        (
            "queue-without-queuing",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                "limitResponse": {"type": "Queue"}}}),
        ),
        (
            "no-response-type",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                "limitResponse": {}}}),
        ),
    ] {
        let mut level = priority_level(name, json!({}));
        level["spec"] = spec;
        s.send(Request::post(LEVELS, &level)).await;
    }
    let slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    for (name, body) in [
        (
            "no-addresses",
            json!({"addressType": "IPv4", "endpoints": [{"addresses": []}]}),
        ),
        (
            "no-address-type",
            json!({"endpoints": [{"addresses": ["10.0.0.1"]}]}),
        ),
        (
            "other-address-type",
            json!({"addressType": "IP", "endpoints": null}),
        ),
    ] {
        let mut slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name}});
        if let (Some(slice), Value::Object(body)) = (slice.as_object_mut(), body) {
            slice.extend(body);
        }
        s.send(Request::post(slices, &slice)).await;
    }
    // Immutable fields: an EndpointSlice's address type (covered), a binding's role.
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "retyped"}, "addressType": "IPv4", "endpoints": null});
    s.send(Request::post(slices, &slice)).await;
    s.send(Request::patch(
        &format!("{slices}/retyped"),
        "application/merge-patch+json",
        &json!({"addressType": "IPv6"}),
    ))
    .await;
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
    s.send(Request::post(
        bindings,
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "rebound"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"}}),
    ))
    .await;
    s.send(Request::patch(
        &format!("{bindings}/rebound"),
        "application/merge-patch+json",
        &json!({"roleRef": {"name": "b"}}),
    ))
    .await;
}

crate::cases!(
    declarative_validation_answers_for_the_errors_it_covers,
    labels_annotations_and_finalizers_are_validated_on_every_kind,
    dry_run_values_other_than_all_are_refused_per_verb,
    a_deletes_body_gives_its_options,
    validation_messages_print_lists_as_kube_does,
);
