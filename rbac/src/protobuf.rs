//! The four kinds (and their lists) in Kubernetes protobuf, as `kubectl create
//! clusterrolebinding` and client-go's typed clients send them and kube-apiserver answers
//! them: the messages of k8s.io/api `rbac/v1/generated.proto`, read into and written from
//! JSON within the readers' limits, in the `k8s\0` envelope. The access reviews that ask
//! about RBAC's decisions (`authorization/v1/generated.proto`: `kubectl auth can-i` sends
//! them in protobuf) and `authentication.k8s.io/v1` SelfSubjectReview are read too. ObjectMeta and ListMeta use
//! apfkit-wire's generated codecs; field order and presence follow gogo's rules (a Go value always
//! written, a pointer when set, repeated fields one entry each).

use apfkit_runtime::scheme::{InputError, Limits};
use apfkit_wire::shaped::{self, Holds, Reader, Shape};
use serde_json::Value;

use crate::validation::GROUP;
use apfkit_runtime::identity::GroupVersion;

const TEXT: Holds = Holds::Text { omit_empty: false };
const OPTIONAL_TEXT: Holds = Holds::Text { omit_empty: true };

static POLICY_RULE: Shape = Shape(&[
    (1, "verbs", Holds::Texts),
    (2, "apiGroups", Holds::Texts),
    (3, "resources", Holds::Texts),
    (4, "resourceNames", Holds::Texts),
    (5, "nonResourceURLs", Holds::Texts),
]);
static REQUIREMENT: Shape = Shape(&[
    (1, "key", TEXT),
    (2, "operator", TEXT),
    (3, "values", Holds::Texts),
]);
static LABEL_SELECTOR: Shape = Shape(&[
    (1, "matchLabels", Holds::Map),
    (2, "matchExpressions", Holds::Messages(&REQUIREMENT)),
]);
static AGGREGATION_RULE: Shape =
    Shape(&[(1, "clusterRoleSelectors", Holds::Messages(&LABEL_SELECTOR))]);
static SUBJECT: Shape = Shape(&[
    (1, "kind", TEXT),
    (2, "apiGroup", OPTIONAL_TEXT),
    (3, "name", TEXT),
    (4, "namespace", OPTIONAL_TEXT),
]);
static ROLE_REF: Shape = Shape(&[(1, "apiGroup", TEXT), (2, "kind", TEXT), (3, "name", TEXT)]);
static ROLE: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "rules", Holds::Messages(&POLICY_RULE)),
]);
static CLUSTER_ROLE: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "rules", Holds::Messages(&POLICY_RULE)),
    (
        3,
        "aggregationRule",
        Holds::Message(&AGGREGATION_RULE, false),
    ),
]);
static BINDING: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "subjects", Holds::Messages(&SUBJECT)),
    (3, "roleRef", Holds::Message(&ROLE_REF, true)),
]);
static RESOURCE_ATTRIBUTES: Shape = Shape(&[
    (1, "namespace", OPTIONAL_TEXT),
    (2, "verb", OPTIONAL_TEXT),
    (3, "group", OPTIONAL_TEXT),
    (4, "version", OPTIONAL_TEXT),
    (5, "resource", OPTIONAL_TEXT),
    (6, "subresource", OPTIONAL_TEXT),
    (7, "name", OPTIONAL_TEXT),
]);
static NON_RESOURCE_ATTRIBUTES: Shape =
    Shape(&[(1, "path", OPTIONAL_TEXT), (2, "verb", OPTIONAL_TEXT)]);
static SELF_ACCESS_SPEC: Shape = Shape(&[
    (
        1,
        "resourceAttributes",
        Holds::Message(&RESOURCE_ATTRIBUTES, false),
    ),
    (
        2,
        "nonResourceAttributes",
        Holds::Message(&NON_RESOURCE_ATTRIBUTES, false),
    ),
]);
static ACCESS_SPEC: Shape = Shape(&[
    (
        1,
        "resourceAttributes",
        Holds::Message(&RESOURCE_ATTRIBUTES, false),
    ),
    (
        2,
        "nonResourceAttributes",
        Holds::Message(&NON_RESOURCE_ATTRIBUTES, false),
    ),
    (3, "user", OPTIONAL_TEXT),
    (4, "groups", Holds::Texts),
    (6, "uid", OPTIONAL_TEXT),
]);
static RULES_SPEC: Shape = Shape(&[(1, "namespace", OPTIONAL_TEXT)]);
/// A review's status as a request carries it: empty (gogo writes the Go struct value).
static REQUEST_STATUS: Shape = Shape(&[]);
static SELF_ACCESS_REVIEW: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "spec", Holds::Message(&SELF_ACCESS_SPEC, true)),
    (3, "status", Holds::Message(&REQUEST_STATUS, true)),
]);
static ACCESS_REVIEW: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "spec", Holds::Message(&ACCESS_SPEC, true)),
    (3, "status", Holds::Message(&REQUEST_STATUS, true)),
]);
static RULES_REVIEW: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "spec", Holds::Message(&RULES_SPEC, true)),
    (3, "status", Holds::Message(&REQUEST_STATUS, true)),
]);
static SELF_REVIEW: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "status", Holds::Message(&REQUEST_STATUS, true)),
]);
static ROLE_LIST: Shape = Shape(&[
    (1, "metadata", Holds::ListMeta),
    (2, "items", Holds::Messages(&ROLE)),
]);
static CLUSTER_ROLE_LIST: Shape = Shape(&[
    (1, "metadata", Holds::ListMeta),
    (2, "items", Holds::Messages(&CLUSTER_ROLE)),
]);
static BINDING_LIST: Shape = Shape(&[
    (1, "metadata", Holds::ListMeta),
    (2, "items", Holds::Messages(&BINDING)),
]);

/// The message of a kind of the group, by kind.
fn shape_of(kind: &str) -> Option<&'static Shape> {
    Some(match kind {
        "Role" => &ROLE,
        "ClusterRole" => &CLUSTER_ROLE,
        "RoleBinding" | "ClusterRoleBinding" => &BINDING,
        "RoleList" => &ROLE_LIST,
        "ClusterRoleList" => &CLUSTER_ROLE_LIST,
        "RoleBindingList" | "ClusterRoleBindingList" => &BINDING_LIST,
        _ => return None,
    })
}

/// The `group/version` of the kinds here.
fn api_version() -> String {
    GroupVersion::from_static(GROUP, "v1").api_version()
}

macro_rules! roots {
    ($($name:ident => $shape:ident),* $(,)?) => {
        $(
            struct $name;
            impl shaped::RootShape for $name {
                const SHAPE: &'static Shape = &$shape;
            }
        )*
    };
}

roots! {
    RoleRoot => ROLE,
    ClusterRoleRoot => CLUSTER_ROLE,
    BindingRoot => BINDING,
    RoleListRoot => ROLE_LIST,
    ClusterRoleListRoot => CLUSTER_ROLE_LIST,
    BindingListRoot => BINDING_LIST,
    SelfAccessReviewRoot => SELF_ACCESS_REVIEW,
    AccessReviewRoot => ACCESS_REVIEW,
    RulesReviewRoot => RULES_REVIEW,
    SelfReviewRoot => SELF_REVIEW,
}

/// An enveloped object of the group (prefix included) as JSON, with the paths of the fields
/// its message lacks; `None` when it is not one of the group's kinds (another codec's).
pub fn read(bytes: &[u8], limits: &Limits) -> Option<Result<(Value, Vec<String>), InputError>> {
    shaped::read_enveloped(bytes, limits, |api_version, kind| {
        Some(match (api_version, kind) {
            ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => {
                shaped::read::<SelfAccessReviewRoot> as Reader
            }
            ("authorization.k8s.io/v1", "SubjectAccessReview" | "LocalSubjectAccessReview") => {
                shaped::read::<AccessReviewRoot>
            }
            ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => {
                shaped::read::<RulesReviewRoot>
            }
            ("authentication.k8s.io/v1", "SelfSubjectReview") => shaped::read::<SelfReviewRoot>,
            (group, _) if group != self::api_version() => return None,
            (_, "Role") => shaped::read::<RoleRoot>,
            (_, "ClusterRole") => shaped::read::<ClusterRoleRoot>,
            (_, "RoleBinding" | "ClusterRoleBinding") => shaped::read::<BindingRoot>,
            (_, "RoleList") => shaped::read::<RoleListRoot>,
            (_, "ClusterRoleList") => shaped::read::<ClusterRoleListRoot>,
            (_, "RoleBindingList" | "ClusterRoleBindingList") => shaped::read::<BindingListRoot>,
            _ => return None,
        })
    })
}

/// A stored object (prefix included) as JSON, read as [`read`] reads it; fields its message
/// lacks are dropped, as kube-apiserver's protobuf decoding drops them.
///
/// # Errors
///
/// Bytes that are not an object this module reads, within `limits`, in words.
pub fn read_stored(bytes: &[u8], limits: &Limits) -> Result<Value, String> {
    apfkit_apiextensions::json_kind::read_stored_protobuf(
        read,
        bytes,
        limits,
        "an object of rbac.authorization.k8s.io/v1",
    )
}

/// An object (or list) of the group in the envelope, as kube-apiserver writes it; `None` when
/// it is not one of the group's kinds.
pub fn write(object: &Value) -> Option<Result<Vec<u8>, String>> {
    shaped::write_enveloped(object, |api_version, kind| {
        (api_version == self::api_version())
            .then(|| shape_of(kind))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use apfkit_wire::envelope;
    use apfkit_wire::protobuf::{self as pb, WireType};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    fn put_len_delimited(buf: &mut Vec<u8>, number: u32, bytes: &[u8]) {
        prost::encoding::encode_key(number, WireType::LengthDelimited, buf);
        prost::encoding::encode_varint(bytes.len() as u64, buf);
        buf.extend_from_slice(bytes);
    }

    fn round_trip(object: &Value) -> Value {
        let bytes = write(object).unwrap().unwrap();
        let (read, unknown) = read(&bytes, &Limits::default()).unwrap().unwrap();
        assert!(unknown.is_empty(), "{unknown:?}");
        read
    }

    #[test]
    fn every_kind_reads_back_what_it_wrote() {
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r", "labels": {"a": "b"}},
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
                      {"verbs": ["get"], "nonResourceURLs": ["/metrics"]}],
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {"x": "true"}, "matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}]},
        });
        assert_eq!(round_trip(&role), role);
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "ns"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
                         {"kind": "ServiceAccount", "name": "robot", "namespace": "ns"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        });
        assert_eq!(round_trip(&binding), binding);
        let list = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBindingList",
            "metadata": {"resourceVersion": "7"},
            "items": [{"metadata": {"name": "b"}, "roleRef": {"apiGroup": "g", "kind": "ClusterRole", "name": "r"}}],
        });
        assert_eq!(round_trip(&list)["items"][0]["roleRef"]["name"], "r");
        // Other groups are another codec's.
        assert!(write(&json!({"apiVersion": "v1", "kind": "List"})).is_none());
        let flowcontrol = envelope::wrap("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", &[]);
        assert!(read(&flowcontrol, &Limits::default()).is_none());
    }

    /// The bytes gogo-protobuf writes for a ClusterRoleBinding (k8s.io/api's generated.pb.go
    /// field order: metadata 1, subjects 2, roleRef 3; a Go string always written).
    #[test]
    fn bytes_are_gogos() {
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "b"},
            "subjects": [{"kind": "Group", "name": "g"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
        });
        let bytes = write(&binding).unwrap().unwrap();
        let unknown = envelope::unwrap(&bytes[4..]).unwrap();
        let raw = unknown.raw.unwrap();
        let meta = pb::encode(&ObjectMeta {
            name: Some("b".into()),
            ..ObjectMeta::default()
        })
        .unwrap();
        let mut expected = Vec::new();
        put_len_delimited(&mut expected, 1, &meta);
        let mut subject = Vec::new();
        for (n, v) in [(1, "Group"), (2, ""), (3, "g"), (4, "")] {
            pb::put_string(&mut subject, n, v);
        }
        put_len_delimited(&mut expected, 2, &subject);
        let mut role_ref = Vec::new();
        for (n, v) in [
            (1, "rbac.authorization.k8s.io"),
            (2, "ClusterRole"),
            (3, "r"),
        ] {
            pb::put_string(&mut role_ref, n, v);
        }
        put_len_delimited(&mut expected, 3, &role_ref);
        assert_eq!(raw, expected);
    }

    /// Go values the wire leaves out read as Go's JSON writes them, so that what is read
    /// writes back and reads again the same (the `rbac_protobuf` fuzz target's property).
    #[test]
    fn go_values_left_out_read_as_go_writes_them() {
        let bytes = envelope::wrap(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            &[0x12, 0x00],
        );
        let (value, _) = read(&bytes, &Limits::default()).unwrap().unwrap();
        assert_eq!(
            value["roleRef"],
            json!({"apiGroup": "", "kind": "", "name": ""})
        );
        assert_eq!(value["subjects"], json!([{"kind": "", "name": ""}]));
        let again = read(&write(&value).unwrap().unwrap(), &Limits::default())
            .unwrap()
            .unwrap()
            .0;
        assert_eq!(again, value);
    }

    /// A SelfSubjectAccessReview as `kubectl auth can-i list flowschemas` sends it: an empty
    /// metadata, the spec, an empty status.
    #[test]
    fn access_reviews_are_read() {
        let mut attributes = Vec::new();
        for (n, v) in [
            (2, "list"),
            (3, "flowcontrol.apiserver.k8s.io"),
            (5, "flowschemas"),
        ] {
            pb::put_string(&mut attributes, n, v);
        }
        let mut spec = Vec::new();
        put_len_delimited(&mut spec, 1, &attributes);
        let mut raw = Vec::new();
        put_len_delimited(&mut raw, 1, &pb::encode(&ObjectMeta::default()).unwrap());
        put_len_delimited(&mut raw, 2, &spec);
        put_len_delimited(&mut raw, 3, &[]);
        let bytes = envelope::wrap("authorization.k8s.io/v1", "SelfSubjectAccessReview", &raw);
        let (value, unknown) = read(&bytes, &Limits::default()).unwrap().unwrap();
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(
            value["spec"],
            json!({"resourceAttributes": {"verb": "list", "group": "flowcontrol.apiserver.k8s.io", "resource": "flowschemas"}})
        );
        assert_eq!(value["kind"], "SelfSubjectAccessReview");
    }

    #[test]
    fn hostile_messages_are_refused_within_limits() {
        let wrapped =
            |raw: &[u8]| envelope::wrap("rbac.authorization.k8s.io/v1", "ClusterRole", raw);
        // Truncated: a length that runs past the end.
        let truncated = wrapped(&[0x12, 0x40, 0x0a]);
        assert!(matches!(
            read(&truncated, &Limits::default()),
            Some(Err(InputError::Protobuf(_)))
        ));
        // Garbage wire type.
        assert!(matches!(
            read(&wrapped(&[0x17]), &Limits::default()),
            Some(Err(_))
        ));
        // Many rules: refused past the node limit, not grown without bound.
        let mut many = Vec::new();
        for _ in 0..100_000 {
            put_len_delimited(&mut many, 2, &[0x0a, 0x01, b'x']);
        }
        let limits = Limits {
            max_nodes: 10_000,
            ..Limits::default()
        };
        assert!(matches!(
            read(&wrapped(&many), &limits),
            Some(Err(InputError::TooManyNodes { .. }))
        ));
        // Unknown fields are named.
        let (_, unknown) = read(&wrapped(&[0x2a, 0x01, b'x']), &Limits::default())
            .unwrap()
            .unwrap();
        assert_eq!(unknown.len(), 1);
        // A wrong type in JSON is an error naming the field, not a panic.
        let bad = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "rules": [{"verbs": [1]}]});
        assert!(write(&bad).unwrap().unwrap_err().contains("rules[0].verbs"));
    }

    /// What the store reads back: its own writes, fields it lacks dropped (as Go's decoding
    /// drops them), and anything else an error in words, never a panic.
    #[test]
    fn stored_objects_read_back_and_others_are_errors() {
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                          "metadata": {"name": "r", "namespace": "ns"},
                          "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        let bytes = write(&role).unwrap().unwrap();
        assert_eq!(read_stored(&bytes, &Limits::default()).unwrap(), role);
        let wrapped =
            |raw: &[u8]| envelope::wrap("rbac.authorization.k8s.io/v1", "ClusterRole", raw);
        let with_unknown = read_stored(&wrapped(&[0x2a, 0x01, b'x']), &Limits::default());
        assert_eq!(with_unknown.unwrap()["kind"], "ClusterRole");
        for bad in [
            &bytes[..bytes.len() - 3],
            b"k8s\0",
            b"k8s\0\xff\xff\xff",
            &envelope::wrap("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", &[]),
            &wrapped(&[0x12, 0x40, 0x0a]),
        ] {
            let error = read_stored(bad, &Limits::default()).unwrap_err();
            assert!(!error.is_empty());
        }
    }
}
