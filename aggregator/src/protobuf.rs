//! Services (`core/v1`) and EndpointSlices (`discovery.k8s.io/v1`), and their lists, in
//! Kubernetes protobuf, as `kubectl create service` and client-go's typed clients send them
//! and kube-apiserver stores them: the messages of k8s.io/api's `core/v1/generated.proto` and
//! `discovery/v1/generated.proto` as field tables (`apfkit_wire::shaped`), in the
//! `k8s\0` envelope.

use apfkit_runtime::scheme::{InputError, Limits};
use apfkit_wire::shaped::{self, Holds, Reader, RootShape, Shape};
use serde_json::Value;

/// A Go `string` without `omitempty`.
const TEXT: Holds = Holds::Text { omit_empty: false };
/// A Go `string` with `omitempty`.
const OMITTED_TEXT: Holds = Holds::Text { omit_empty: true };

static SERVICE_PORT: Shape = Shape(&[
    (1, "name", OMITTED_TEXT),
    (2, "protocol", OMITTED_TEXT),
    (3, "port", Holds::Int32 { omit_zero: false }),
    (4, "targetPort", Holds::IntOrString),
    (5, "nodePort", Holds::Int32 { omit_zero: true }),
    (6, "appProtocol", Holds::OptionalText),
]);
static CLIENT_IP_CONFIG: Shape = Shape(&[(1, "timeoutSeconds", Holds::OptionalInt32)]);
static SESSION_AFFINITY_CONFIG: Shape =
    Shape(&[(1, "clientIP", Holds::Message(&CLIENT_IP_CONFIG, false))]);
static SERVICE_SPEC: Shape = Shape(&[
    (1, "ports", Holds::Messages(&SERVICE_PORT)),
    (2, "selector", Holds::Map),
    (3, "clusterIP", OMITTED_TEXT),
    (4, "type", OMITTED_TEXT),
    (5, "externalIPs", Holds::Texts),
    (7, "sessionAffinity", OMITTED_TEXT),
    (8, "loadBalancerIP", OMITTED_TEXT),
    (9, "loadBalancerSourceRanges", Holds::Texts),
    (10, "externalName", OMITTED_TEXT),
    (11, "externalTrafficPolicy", OMITTED_TEXT),
    (12, "healthCheckNodePort", Holds::Int32 { omit_zero: true }),
    (
        13,
        "publishNotReadyAddresses",
        Holds::Bool { omit_false: true },
    ),
    (
        14,
        "sessionAffinityConfig",
        Holds::Message(&SESSION_AFFINITY_CONFIG, false),
    ),
    (17, "ipFamilyPolicy", Holds::OptionalText),
    (18, "clusterIPs", Holds::Texts),
    (19, "ipFamilies", Holds::Texts),
    (20, "allocateLoadBalancerNodePorts", Holds::OptionalBool),
    (21, "loadBalancerClass", Holds::OptionalText),
    (22, "internalTrafficPolicy", Holds::OptionalText),
    (23, "trafficDistribution", Holds::OptionalText),
]);
static PORT_STATUS: Shape = Shape(&[
    (1, "port", Holds::Int32 { omit_zero: false }),
    (2, "protocol", TEXT),
    (3, "error", Holds::OptionalText),
]);
static LOAD_BALANCER_INGRESS: Shape = Shape(&[
    (1, "ip", OMITTED_TEXT),
    (2, "hostname", OMITTED_TEXT),
    (3, "ipMode", Holds::OptionalText),
    (4, "ports", Holds::Messages(&PORT_STATUS)),
]);
static LOAD_BALANCER_STATUS: Shape =
    Shape(&[(1, "ingress", Holds::Messages(&LOAD_BALANCER_INGRESS))]);
/// `metav1.Condition`.
static CONDITION: Shape = Shape(&[
    (1, "type", TEXT),
    (2, "status", TEXT),
    (3, "observedGeneration", Holds::Int64 { omit_zero: true }),
    (4, "lastTransitionTime", Holds::Time),
    (5, "reason", TEXT),
    (6, "message", TEXT),
]);
static SERVICE_STATUS: Shape = Shape(&[
    (
        1,
        "loadBalancer",
        Holds::Message(&LOAD_BALANCER_STATUS, true),
    ),
    (2, "conditions", Holds::Messages(&CONDITION)),
]);
static SERVICE: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "spec", Holds::Message(&SERVICE_SPEC, true)),
    (3, "status", Holds::Message(&SERVICE_STATUS, true)),
]);
static SERVICE_LIST: Shape = Shape(&[
    (1, "metadata", Holds::ListMeta),
    (2, "items", Holds::Messages(&SERVICE)),
]);

static ENDPOINT_CONDITIONS: Shape = Shape(&[
    (1, "ready", Holds::OptionalBool),
    (2, "serving", Holds::OptionalBool),
    (3, "terminating", Holds::OptionalBool),
]);
static FOR_NAME: Shape = Shape(&[(1, "name", TEXT)]);
static ENDPOINT_HINTS: Shape = Shape(&[
    (1, "forZones", Holds::Messages(&FOR_NAME)),
    (2, "forNodes", Holds::Messages(&FOR_NAME)),
]);
static ENDPOINT: Shape = Shape(&[
    (1, "addresses", Holds::Texts),
    (2, "conditions", Holds::Message(&ENDPOINT_CONDITIONS, true)),
    (3, "hostname", Holds::OptionalText),
    (
        4,
        "targetRef",
        Holds::Message(&shaped::OBJECT_REFERENCE, false),
    ),
    (5, "deprecatedTopology", Holds::Map),
    (6, "nodeName", Holds::OptionalText),
    (7, "zone", Holds::OptionalText),
    (8, "hints", Holds::Message(&ENDPOINT_HINTS, false)),
]);
static ENDPOINT_PORT: Shape = Shape(&[
    (1, "name", Holds::OptionalText),
    (2, "protocol", Holds::OptionalText),
    (3, "port", Holds::OptionalInt32),
    (4, "appProtocol", Holds::OptionalText),
]);
static ENDPOINT_SLICE: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "endpoints", Holds::Messages(&ENDPOINT)),
    (3, "ports", Holds::Messages(&ENDPOINT_PORT)),
    (4, "addressType", TEXT),
]);
static ENDPOINT_SLICE_LIST: Shape = Shape(&[
    (1, "metadata", Holds::ListMeta),
    (2, "items", Holds::Messages(&ENDPOINT_SLICE)),
]);

/// The `apiVersion` of Services.
pub(crate) const CORE_V1: &str = "v1";
/// The `apiVersion` of EndpointSlices.
pub(crate) const DISCOVERY_V1: &str = "discovery.k8s.io/v1";

/// The message of a kind here, by `apiVersion` and kind.
fn shape_of(api_version: &str, kind: &str) -> Option<&'static Shape> {
    Some(match (api_version, kind) {
        (CORE_V1, "Service") => &SERVICE,
        (CORE_V1, "ServiceList") => &SERVICE_LIST,
        (DISCOVERY_V1, "EndpointSlice") => &ENDPOINT_SLICE,
        (DISCOVERY_V1, "EndpointSliceList") => &ENDPOINT_SLICE_LIST,
        _ => return None,
    })
}

macro_rules! roots {
    ($($name:ident => $shape:ident),* $(,)?) => {
        $(
            struct $name;
            impl RootShape for $name {
                const SHAPE: &'static Shape = &$shape;
            }
        )*
    };
}

roots! {
    ServiceRoot => SERVICE,
    ServiceListRoot => SERVICE_LIST,
    EndpointSliceRoot => ENDPOINT_SLICE,
    EndpointSliceListRoot => ENDPOINT_SLICE_LIST,
}

/// An enveloped Service or EndpointSlice (or list; prefix included) as JSON, with the paths
/// of the fields its message lacks; `None` when it is another kind (another codec's).
pub fn read(bytes: &[u8], limits: &Limits) -> Option<Result<(Value, Vec<String>), InputError>> {
    shaped::read_enveloped(bytes, limits, |api_version, kind| {
        Some(match (api_version, kind) {
            (CORE_V1, "Service") => shaped::read::<ServiceRoot> as Reader,
            (CORE_V1, "ServiceList") => shaped::read::<ServiceListRoot>,
            (DISCOVERY_V1, "EndpointSlice") => shaped::read::<EndpointSliceRoot>,
            (DISCOVERY_V1, "EndpointSliceList") => shaped::read::<EndpointSliceListRoot>,
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
        "a Service or an EndpointSlice",
    )
}

/// A Service or EndpointSlice (or list) in the envelope, as kube-apiserver writes it; `None`
/// for any other kind.
pub fn write(object: &Value) -> Option<Result<Vec<u8>, String>> {
    shaped::write_enveloped(object, shape_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use apfkit_wire::envelope;
    use prost::Message as _;
    use serde_json::json;

    /// What is written is what upstream's messages (k8s-pb) read, and the other way.
    #[test]
    fn upstreams_messages_agree() {
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "api", "namespace": "default"},
            "spec": {"ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 8443}],
                     "selector": {"app": "api"}, "type": "ClusterIP", "sessionAffinity": "None",
                     "internalTrafficPolicy": "Cluster"},
            "status": {"loadBalancer": {}},
        });
        let bytes = write(&service).unwrap().unwrap();
        let raw = envelope::unwrap(&bytes[4..]).unwrap().raw.unwrap();
        let upstream = k8s_pb::api::core::v1::Service::decode(raw.as_slice()).unwrap();
        let spec = upstream.spec.unwrap();
        assert_eq!(spec.ports[0].port, Some(443));
        assert_eq!(
            spec.ports[0].target_port.clone().unwrap().int_val,
            Some(8443)
        );
        assert_eq!(spec.selector.get("app").map(String::as_str), Some("api"));
        assert_eq!(spec.internal_traffic_policy.as_deref(), Some("Cluster"));
        assert_eq!(spec.ip_family_policy, None);
        assert_eq!(
            read(&bytes, &Limits::default()).unwrap().unwrap().0,
            service
        );

        let slice = k8s_pb::api::discovery::v1::EndpointSlice {
            metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("api-1".into()),
                namespace: Some("default".into()),
                ..Default::default()
            }),
            address_type: Some("IPv4".into()),
            endpoints: vec![k8s_pb::api::discovery::v1::Endpoint {
                addresses: vec!["10.0.0.1".into()],
                conditions: Some(k8s_pb::api::discovery::v1::EndpointConditions {
                    ready: Some(true),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ports: vec![k8s_pb::api::discovery::v1::EndpointPort {
                name: Some(String::new()),
                protocol: Some("TCP".into()),
                port: Some(8443),
                app_protocol: None,
            }],
        };
        let bytes = envelope::wrap(DISCOVERY_V1, "EndpointSlice", &slice.encode_to_vec());
        let (value, unknown) = read(&bytes, &Limits::default()).unwrap().unwrap();
        assert!(unknown.is_empty());
        assert_eq!(
            value,
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": "api-1", "namespace": "default"},
                   "addressType": "IPv4",
                   "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}],
                   "ports": [{"name": "", "protocol": "TCP", "port": 8443}]})
        );
        // Other kinds are another codec's; garbage is an error, not a panic.
        assert!(write(&json!({"apiVersion": "v1", "kind": "Pod"})).is_none());
        let broken = envelope::wrap(CORE_V1, "Service", &[0x12, 0x40]);
        assert!(read_stored(&broken, &Limits::default()).is_err());
        assert!(read_stored(b"k8s\0\x0a", &Limits::default()).is_err());
    }
}
