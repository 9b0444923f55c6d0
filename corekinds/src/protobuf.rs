//! ConfigMaps, Secrets, ServiceAccounts, Leases, Events and their lists in Kubernetes
//! protobuf, as client-go's typed clients send them and kube-apiserver stores them: the
//! messages of k8s.io/api's `core/v1`, `coordination/v1` and `events/v1` `generated.proto`,
//! written and read by the codecs `apfkit-codegen` generated for these kinds
//! (`apfkit_types::builtin`), in the `k8s\0` envelope; and a ServiceAccount's TokenRequest,
//! whose message is a field table (`apfkit_wire::shaped`).

use apfkit_runtime::scheme::{InputError, Limits};
use apfkit_types::builtin;
use apfkit_wire::shaped::{self, Holds, Reader, RootShape, Shape};
use apfkit_wire::{KindEncodings, Kinds, envelope};
use serde_json::Value;

/// A Go `string` with `omitempty`.
const OMITTED_TEXT: Holds = Holds::Text { omit_empty: true };

static BOUND_OBJECT_REFERENCE: Shape = Shape(&[
    (1, "kind", OMITTED_TEXT),
    (2, "apiVersion", OMITTED_TEXT),
    (3, "name", OMITTED_TEXT),
    (4, "uid", OMITTED_TEXT),
]);
static TOKEN_REQUEST_SPEC: Shape = Shape(&[
    (1, "audiences", Holds::Texts),
    (
        3,
        "boundObjectRef",
        Holds::Message(&BOUND_OBJECT_REFERENCE, false),
    ),
    (4, "expirationSeconds", Holds::OptionalInt64),
]);
static TOKEN_REQUEST_STATUS: Shape = Shape(&[
    (1, "token", Holds::Text { omit_empty: false }),
    (2, "expirationTimestamp", Holds::Time),
]);
/// What a ServiceAccount's `token` subresource takes (kubectl's `create token` sends it in
/// protobuf).
static TOKEN_REQUEST: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "spec", Holds::Message(&TOKEN_REQUEST_SPEC, true)),
    (3, "status", Holds::Message(&TOKEN_REQUEST_STATUS, true)),
]);

struct TokenRequestRoot;
impl RootShape for TokenRequestRoot {
    const SHAPE: &'static Shape = &TOKEN_REQUEST;
}

const AUTHENTICATION_V1: &str = "authentication.k8s.io/v1";

/// The kinds whose codecs are generated: those of this crate but the Namespaces of
/// `apfkit-namespaces`.
struct Generated;

impl Kinds for Generated {
    fn encodings(&self, api_version: &str, kind: &str) -> Option<KindEncodings> {
        (kind != "Namespace" && kind != "NamespaceList")
            .then(|| builtin::KINDS.encodings(api_version, kind))
            .flatten()
    }
}

/// An enveloped object or list of a kind here (prefix included) as JSON, with the paths of the
/// fields its message lacks; `None` when it is another kind (another codec's).
pub fn read(bytes: &[u8], limits: &Limits) -> Option<Result<(Value, Vec<String>), InputError>> {
    envelope::decode_among(&Generated, bytes, limits).or_else(|| {
        shaped::read_enveloped(bytes, limits, |api_version, kind| {
            (api_version == AUTHENTICATION_V1 && kind == "TokenRequest")
                .then_some(shaped::read::<TokenRequestRoot> as Reader)
        })
    })
}

/// A stored object of a kind here (prefix included) as JSON, read as [`read`] reads it.
///
/// # Errors
///
/// Bytes that are not an object of a kind here within `limits`, in words.
pub fn read_stored(bytes: &[u8], limits: &Limits) -> Result<Value, String> {
    apfkit_apiextensions::json_kind::read_stored_protobuf(
        read,
        bytes,
        limits,
        "a ConfigMap, Secret, ServiceAccount, Lease, Event or TokenRequest",
    )
}

/// An object or list of a kind here in the envelope, as kube-apiserver writes it; `None` for
/// any other kind.
pub fn write(object: &Value) -> Option<Result<Vec<u8>, String>> {
    envelope::encode_among(&Generated, object).or_else(|| {
        shaped::write_enveloped(object, |api_version, kind| {
            (api_version == AUTHENTICATION_V1 && kind == "TokenRequest").then_some(&TOKEN_REQUEST)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use apfkit_wire::envelope;
    use prost::Message as _;
    use serde_json::json;

    const CORE_V1: &str = "v1";
    const COORDINATION_V1: &str = "coordination.k8s.io/v1";
    const EVENTS_V1: &str = "events.k8s.io/v1";

    fn raw(bytes: &[u8]) -> Vec<u8> {
        envelope::unwrap(&bytes[4..]).unwrap().raw.unwrap()
    }

    /// What is written is what upstream's messages (k8s-pb) read, and read back the same.
    #[test]
    fn upstreams_messages_agree() {
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "team"},
            "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AAH/"}, "immutable": true});
        let bytes = write(&config_map).unwrap().unwrap();
        let upstream = k8s_pb::api::core::v1::ConfigMap::decode(raw(&bytes).as_slice()).unwrap();
        assert_eq!(upstream.data["b"], "2");
        assert_eq!(upstream.binary_data["c"], vec![0, 1, 255]);
        assert_eq!(upstream.immutable, Some(true));
        assert_eq!(
            read(&bytes, &Limits::default()).unwrap().unwrap().0,
            config_map
        );

        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "token", "namespace": "team"},
            "data": {"token": "c2VjcmV0"}, "type": "Opaque"});
        let bytes = write(&secret).unwrap().unwrap();
        let upstream = k8s_pb::api::core::v1::Secret::decode(raw(&bytes).as_slice()).unwrap();
        assert_eq!(upstream.data["token"], b"secret");
        assert_eq!(upstream.r#type.as_deref(), Some("Opaque"));
        assert_eq!(read(&bytes, &Limits::default()).unwrap().unwrap().0, secret);

        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": "team"},
            "secrets": [{"name": "token"}], "imagePullSecrets": [{"name": "registry"}],
            "automountServiceAccountToken": false});
        let bytes = write(&account).unwrap().unwrap();
        let upstream =
            k8s_pb::api::core::v1::ServiceAccount::decode(raw(&bytes).as_slice()).unwrap();
        assert_eq!(upstream.secrets[0].name.as_deref(), Some("token"));
        assert_eq!(upstream.automount_service_account_token, Some(false));
        assert_eq!(
            read(&bytes, &Limits::default()).unwrap().unwrap().0,
            account
        );

        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "leader", "namespace": "team"},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                     "acquireTime": "2026-12-01T10:00:00.123456Z",
                     "renewTime": "2026-12-01T10:00:05.000000Z", "leaseTransitions": 0}});
        let bytes = write(&lease).unwrap().unwrap();
        let upstream =
            k8s_pb::api::coordination::v1::Lease::decode(raw(&bytes).as_slice()).unwrap();
        let spec = upstream.spec.unwrap();
        let acquired = spec.acquire_time.unwrap();
        assert_eq!(
            (acquired.seconds, acquired.nanos),
            (Some(1_796_119_200), Some(123_456_000))
        );
        assert_eq!(spec.lease_transitions, Some(0));
        assert_eq!(read(&bytes, &Limits::default()).unwrap().unwrap().0, lease);
    }

    /// Both Events' messages: what is written upstream's messages read, a zero `eventTime`
    /// written as Go writes a zero `MicroTime` value (an empty message), read back as null.
    /// A `MicroTime` in a Go struct value (an Event's `eventTime`, a series'
    /// `lastObservedTime`) is an `Option` in the generated types, `None` for Go's zero time.
    #[test]
    fn events_agree_with_upstreams_messages() {
        let core = json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "p.1", "namespace": "team"},
            "involvedObject": {"kind": "Pod", "namespace": "team", "name": "p"},
            "reason": "Pulled", "message": "pulled", "source": {"component": "kubelet"},
            "firstTimestamp": "2026-12-01T10:00:00Z", "lastTimestamp": "2026-12-01T10:00:05Z",
            "count": 2, "type": "Normal", "eventTime": null,
            "reportingComponent": "", "reportingInstance": ""});
        let bytes = write(&core).unwrap().unwrap();
        let upstream = k8s_pb::api::core::v1::Event::decode(raw(&bytes).as_slice()).unwrap();
        assert_eq!(upstream.count, Some(2));
        assert_eq!(upstream.involved_object.unwrap().name.as_deref(), Some("p"));
        let event_time = upstream.event_time.unwrap();
        assert_eq!((event_time.seconds, event_time.nanos), (None, None));
        assert_eq!(upstream.reporting_component.as_deref(), Some(""));
        // Read back as stored objects are: the zero time as Go writes it, null.
        assert_eq!(read_stored(&bytes, &Limits::default()).unwrap(), core);

        let newer = json!({"apiVersion": EVENTS_V1, "kind": "Event",
            "metadata": {"name": "w.1", "namespace": "team"},
            "eventTime": "2026-12-01T10:00:00.123456Z",
            "series": {"count": 3, "lastObservedTime": "2026-12-01T10:01:00.000000Z"},
            "reportingController": "example.com/widgets", "reportingInstance": "w-0",
            "action": "Reconcile", "reason": "Done", "regarding": {"kind": "Widget", "name": "w"},
            "note": "done", "type": "Normal", "deprecatedSource": {}});
        let bytes = write(&newer).unwrap().unwrap();
        let upstream = k8s_pb::api::events::v1::Event::decode(raw(&bytes).as_slice()).unwrap();
        assert_eq!(upstream.series.unwrap().count, Some(3));
        assert_eq!(upstream.note.as_deref(), Some("done"));
        assert_eq!(upstream.event_time.unwrap().nanos, Some(123_456_000));
        assert_eq!(read(&bytes, &Limits::default()).unwrap().unwrap().0, newer);
    }

    /// A TokenRequest as kubectl's `create token` sends it, and the answer's status.
    #[test]
    fn token_requests_are_read_as_kubectl_sends_them() {
        use k8s_pb::api::authentication::v1 as authentication;
        let sent = authentication::TokenRequest {
            metadata: Some(Default::default()),
            spec: Some(authentication::TokenRequestSpec {
                audiences: vec!["vault".into()],
                expiration_seconds: Some(1200),
                bound_object_ref: Some(authentication::BoundObjectReference {
                    kind: Some("Secret".into()),
                    api_version: Some("v1".into()),
                    name: Some("bound".into()),
                    ..Default::default()
                }),
            }),
            status: Some(Default::default()),
        };
        let bytes = envelope::wrap(AUTHENTICATION_V1, "TokenRequest", &sent.encode_to_vec());
        let (value, unknown) = read(&bytes, &Limits::default()).unwrap().unwrap();
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(
            value["spec"],
            json!({"audiences": ["vault"], "expirationSeconds": 1200,
                "boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "bound"}})
        );
        let answered = json!({"apiVersion": AUTHENTICATION_V1, "kind": "TokenRequest",
            "metadata": {"name": "default", "namespace": "team"},
            "spec": {"audiences": ["vault"], "expirationSeconds": 1200},
            "status": {"token": "a.b.c", "expirationTimestamp": "2026-12-01T10:20:00Z"}});
        let written = write(&answered).unwrap().unwrap();
        let upstream = authentication::TokenRequest::decode(raw(&written).as_slice()).unwrap();
        assert_eq!(upstream.status.unwrap().token.as_deref(), Some("a.b.c"));
    }

    #[test]
    fn client_gos_bodies_are_read_and_garbage_refused() {
        // A Lease as client-go's leader election sends it: nanoseconds below a microsecond
        // are dropped, as apimachinery's MicroTime drops them.
        let sent = k8s_pb::api::coordination::v1::Lease {
            metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("leader".into()),
                ..Default::default()
            }),
            spec: Some(k8s_pb::api::coordination::v1::LeaseSpec {
                renew_time: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::MicroTime {
                    seconds: Some(1_796_119_200),
                    nanos: Some(1_999),
                }),
                ..Default::default()
            }),
        };
        let bytes = envelope::wrap(COORDINATION_V1, "Lease", &sent.encode_to_vec());
        let (value, unknown) = read(&bytes, &Limits::default()).unwrap().unwrap();
        assert!(unknown.is_empty());
        assert_eq!(value["spec"]["renewTime"], "2026-12-01T10:00:00.000001Z");
        // Other kinds are another codec's; garbage is an error, not a panic.
        assert!(write(&json!({"apiVersion": "v1", "kind": "Service"})).is_none());
        let broken = envelope::wrap(CORE_V1, "Secret", &[0x12, 0x40]);
        assert!(read_stored(&broken, &Limits::default()).is_err());
        let not_base64 = json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "!!"}});
        assert!(write(&not_base64).unwrap().is_err());
        let far = envelope::wrap(
            COORDINATION_V1,
            "Lease",
            &k8s_pb::api::coordination::v1::Lease {
                spec: Some(k8s_pb::api::coordination::v1::LeaseSpec {
                    renew_time: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::MicroTime {
                        seconds: Some(i64::MAX),
                        nanos: Some(0),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }
            .encode_to_vec(),
        );
        assert!(read_stored(&far, &Limits::default()).is_err());
    }
}
