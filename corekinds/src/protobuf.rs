//! ConfigMaps, Secrets, ServiceAccounts, Leases, Events and their lists in Kubernetes
//! protobuf, as client-go's typed clients send them and kube-apiserver stores them: the
//! messages of k8s.io/api's `core/v1`, `coordination/v1` and `events/v1` `generated.proto` as
//! field tables (`apfkit_wire::shaped`), in the `k8s\0` envelope.

use apfkit_runtime::scheme::{InputError, Limits};
use apfkit_wire::shaped::{self, Holds, Reader, RootShape, Shape};
use serde_json::Value;

/// A Go `string` with `omitempty`.
const OMITTED_TEXT: Holds = Holds::Text { omit_empty: true };

static CONFIG_MAP: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "data", Holds::Map),
    (3, "binaryData", Holds::BytesMap),
    (4, "immutable", Holds::OptionalBool),
]);
static SECRET: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "data", Holds::BytesMap),
    (3, "type", OMITTED_TEXT),
    (4, "stringData", Holds::Map),
    (5, "immutable", Holds::OptionalBool),
]);
static LOCAL_OBJECT_REFERENCE: Shape = Shape(&[(1, "name", OMITTED_TEXT)]);
static SERVICE_ACCOUNT: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "secrets", Holds::Messages(&shaped::OBJECT_REFERENCE)),
    (
        3,
        "imagePullSecrets",
        Holds::Messages(&LOCAL_OBJECT_REFERENCE),
    ),
    (4, "automountServiceAccountToken", Holds::OptionalBool),
]);
static LEASE_SPEC: Shape = Shape(&[
    (1, "holderIdentity", Holds::OptionalText),
    (2, "leaseDurationSeconds", Holds::OptionalInt32),
    (3, "acquireTime", Holds::MicroTime),
    (4, "renewTime", Holds::MicroTime),
    (5, "leaseTransitions", Holds::OptionalInt32),
    (6, "strategy", Holds::OptionalText),
    (7, "preferredHolder", Holds::OptionalText),
]);
static LEASE: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "spec", Holds::Message(&LEASE_SPEC, true)),
]);

static EVENT_SOURCE: Shape = Shape(&[(1, "component", OMITTED_TEXT), (2, "host", OMITTED_TEXT)]);
/// core/v1's `EventSeries`: its count `omitempty`.
static CORE_EVENT_SERIES: Shape = Shape(&[
    (1, "count", Holds::Int32 { omit_zero: true }),
    (2, "lastObservedTime", Holds::MicroTimeValue),
]);
static CORE_EVENT: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (
        2,
        "involvedObject",
        Holds::Message(&shaped::OBJECT_REFERENCE, true),
    ),
    (3, "reason", OMITTED_TEXT),
    (4, "message", OMITTED_TEXT),
    (5, "source", Holds::Message(&EVENT_SOURCE, true)),
    (6, "firstTimestamp", Holds::Time),
    (7, "lastTimestamp", Holds::Time),
    (8, "count", Holds::Int32 { omit_zero: true }),
    (9, "type", OMITTED_TEXT),
    (10, "eventTime", Holds::MicroTimeValue),
    (11, "series", Holds::Message(&CORE_EVENT_SERIES, false)),
    (12, "action", OMITTED_TEXT),
    (
        13,
        "related",
        Holds::Message(&shaped::OBJECT_REFERENCE, false),
    ),
    (14, "reportingComponent", Holds::Text { omit_empty: false }),
    (15, "reportingInstance", Holds::Text { omit_empty: false }),
]);
/// events.k8s.io/v1's `EventSeries`: both fields always in JSON.
static EVENTS_EVENT_SERIES: Shape = Shape(&[
    (1, "count", Holds::Int32 { omit_zero: false }),
    (2, "lastObservedTime", Holds::MicroTimeValue),
]);
static EVENTS_EVENT: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "eventTime", Holds::MicroTimeValue),
    (3, "series", Holds::Message(&EVENTS_EVENT_SERIES, false)),
    (4, "reportingController", OMITTED_TEXT),
    (5, "reportingInstance", OMITTED_TEXT),
    (6, "action", OMITTED_TEXT),
    (7, "reason", OMITTED_TEXT),
    (
        8,
        "regarding",
        Holds::Message(&shaped::OBJECT_REFERENCE, true),
    ),
    (
        9,
        "related",
        Holds::Message(&shaped::OBJECT_REFERENCE, false),
    ),
    (10, "note", OMITTED_TEXT),
    (11, "type", OMITTED_TEXT),
    (12, "deprecatedSource", Holds::Message(&EVENT_SOURCE, true)),
    (13, "deprecatedFirstTimestamp", Holds::Time),
    (14, "deprecatedLastTimestamp", Holds::Time),
    (15, "deprecatedCount", Holds::Int32 { omit_zero: true }),
]);

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

/// A list of `items` of one of the kinds.
macro_rules! list_shape {
    ($name:ident, $item:ident) => {
        static $name: Shape = Shape(&[
            (1, "metadata", Holds::ListMeta),
            (2, "items", Holds::Messages(&$item)),
        ]);
    };
}
list_shape!(CONFIG_MAP_LIST, CONFIG_MAP);
list_shape!(SECRET_LIST, SECRET);
list_shape!(SERVICE_ACCOUNT_LIST, SERVICE_ACCOUNT);
list_shape!(LEASE_LIST, LEASE);
list_shape!(CORE_EVENT_LIST, CORE_EVENT);
list_shape!(EVENTS_EVENT_LIST, EVENTS_EVENT);

/// A root message of one of the kinds.
macro_rules! root {
    ($root:ident, $shape:ident) => {
        struct $root;
        impl RootShape for $root {
            const SHAPE: &'static Shape = &$shape;
        }
    };
}
root!(ConfigMapRoot, CONFIG_MAP);
root!(ConfigMapListRoot, CONFIG_MAP_LIST);
root!(SecretRoot, SECRET);
root!(SecretListRoot, SECRET_LIST);
root!(ServiceAccountRoot, SERVICE_ACCOUNT);
root!(ServiceAccountListRoot, SERVICE_ACCOUNT_LIST);
root!(LeaseRoot, LEASE);
root!(LeaseListRoot, LEASE_LIST);
root!(TokenRequestRoot, TOKEN_REQUEST);
root!(CoreEventRoot, CORE_EVENT);
root!(CoreEventListRoot, CORE_EVENT_LIST);
root!(EventsEventRoot, EVENTS_EVENT);
root!(EventsEventListRoot, EVENTS_EVENT_LIST);

const CORE_V1: &str = "v1";
const COORDINATION_V1: &str = "coordination.k8s.io/v1";
const AUTHENTICATION_V1: &str = "authentication.k8s.io/v1";
const EVENTS_V1: &str = "events.k8s.io/v1";

/// The message of a kind here, with its reader.
fn shape_of(api_version: &str, kind: &str) -> Option<(&'static Shape, Reader)> {
    Some(match (api_version, kind) {
        (CORE_V1, "ConfigMap") => (&CONFIG_MAP, shaped::read::<ConfigMapRoot> as Reader),
        (CORE_V1, "ConfigMapList") => (&CONFIG_MAP_LIST, shaped::read::<ConfigMapListRoot>),
        (CORE_V1, "Secret") => (&SECRET, shaped::read::<SecretRoot>),
        (CORE_V1, "SecretList") => (&SECRET_LIST, shaped::read::<SecretListRoot>),
        (CORE_V1, "ServiceAccount") => (&SERVICE_ACCOUNT, shaped::read::<ServiceAccountRoot>),
        (CORE_V1, "ServiceAccountList") => (
            &SERVICE_ACCOUNT_LIST,
            shaped::read::<ServiceAccountListRoot>,
        ),
        (COORDINATION_V1, "Lease") => (&LEASE, shaped::read::<LeaseRoot>),
        (COORDINATION_V1, "LeaseList") => (&LEASE_LIST, shaped::read::<LeaseListRoot>),
        (AUTHENTICATION_V1, "TokenRequest") => (&TOKEN_REQUEST, shaped::read::<TokenRequestRoot>),
        (CORE_V1, "Event") => (&CORE_EVENT, shaped::read::<CoreEventRoot>),
        (CORE_V1, "EventList") => (&CORE_EVENT_LIST, shaped::read::<CoreEventListRoot>),
        (EVENTS_V1, "Event") => (&EVENTS_EVENT, shaped::read::<EventsEventRoot>),
        (EVENTS_V1, "EventList") => (&EVENTS_EVENT_LIST, shaped::read::<EventsEventListRoot>),
        _ => return None,
    })
}

/// An enveloped object or list of a kind here (prefix included) as JSON, with the paths of the
/// fields its message lacks; `None` when it is another kind (another codec's).
pub fn read(bytes: &[u8], limits: &Limits) -> Option<Result<(Value, Vec<String>), InputError>> {
    shaped::read_enveloped(bytes, limits, |api_version, kind| {
        shape_of(api_version, kind).map(|(_, reader)| reader)
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
    shaped::write_enveloped(object, |api_version, kind| {
        shape_of(api_version, kind).map(|(shape, _)| shape)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use apfkit_wire::envelope;
    use prost::Message as _;
    use serde_json::json;

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
        assert_eq!(read(&bytes, &Limits::default()).unwrap().unwrap().0, core);

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
