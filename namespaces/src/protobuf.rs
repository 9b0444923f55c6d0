//! Namespaces and their lists in Kubernetes protobuf, as client-go's typed clients send them
//! (the e2e framework makes its namespaces so) and kube-apiserver stores them: the messages of
//! k8s.io/api's `core/v1/generated.proto`, written and read by the codecs `apfkit-codegen`
//! generated for them (`apfkit_types::builtin`), in the `k8s\0` envelope.

use apfkit_runtime::scheme::{InputError, Limits};
use apfkit_types::builtin;
use apfkit_wire::{KindEncodings, Kinds, envelope};
use serde_json::Value;

/// Namespaces and their lists, of the generated kinds.
struct Namespaces;

impl Kinds for Namespaces {
    fn encodings(&self, api_version: &str, kind: &str) -> Option<KindEncodings> {
        matches!(kind, "Namespace" | "NamespaceList")
            .then(|| builtin::KINDS.encodings(api_version, kind))
            .flatten()
    }
}

/// An enveloped Namespace or NamespaceList (prefix included) as JSON, with the paths of the
/// fields its message lacks; `None` when it is another kind (another codec's).
pub fn read(bytes: &[u8], limits: &Limits) -> Option<Result<(Value, Vec<String>), InputError>> {
    envelope::decode_among(&Namespaces, bytes, limits)
}

/// A stored Namespace (prefix included) as JSON, read as [`read`] reads it.
///
/// # Errors
///
/// Bytes that are not a Namespace within `limits`, in words.
pub fn read_stored(bytes: &[u8], limits: &Limits) -> Result<Value, String> {
    apfkit_apiextensions::json_kind::read_stored_protobuf(read, bytes, limits, "a Namespace")
}

/// A Namespace or NamespaceList in the envelope, as kube-apiserver writes it; `None` for any
/// other kind.
pub fn write(object: &Value) -> Option<Result<Vec<u8>, String>> {
    envelope::encode_among(&Namespaces, object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use apfkit_wire::envelope;
    use prost::Message as _;
    use serde_json::json;

    const CORE_V1: &str = "v1";

    /// What is written is what upstream's messages (k8s-pb) read, and the other way.
    #[test]
    fn upstreams_messages_agree() {
        let namespace = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team", "labels": {"kubernetes.io/metadata.name": "team"}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Terminating", "conditions": [{
                "type": "NamespaceContentRemaining", "status": "True",
                "lastTransitionTime": "2026-11-29T10:00:00Z",
                "reason": "SomeResourcesRemain",
                "message": "Some resources are remaining: services. has 1 resource instances"}]},
        });
        let bytes = write(&namespace).unwrap().unwrap();
        let raw = envelope::unwrap(&bytes[4..]).unwrap().raw.unwrap();
        let upstream = k8s_pb::api::core::v1::Namespace::decode(raw.as_slice()).unwrap();
        assert_eq!(upstream.spec.unwrap().finalizers, ["kubernetes"]);
        let status = upstream.status.unwrap();
        assert_eq!(status.phase.as_deref(), Some("Terminating"));
        assert_eq!(
            status.conditions[0].reason.as_deref(),
            Some("SomeResourcesRemain")
        );
        assert_eq!(
            read(&bytes, &Limits::default()).unwrap().unwrap().0,
            namespace
        );

        // client-go's create, as the e2e framework sends it.
        let sent = k8s_pb::api::core::v1::Namespace {
            metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("e2e-abc".into()),
                ..Default::default()
            }),
            spec: Some(Default::default()),
            status: Some(Default::default()),
        };
        let bytes = envelope::wrap(CORE_V1, "Namespace", &sent.encode_to_vec());
        let (value, unknown) = read(&bytes, &Limits::default()).unwrap().unwrap();
        assert!(unknown.is_empty());
        assert_eq!(value["metadata"]["name"], "e2e-abc");
        // Other kinds are another codec's; garbage is an error, not a panic.
        assert!(write(&json!({"apiVersion": "v1", "kind": "Service"})).is_none());
        let broken = envelope::wrap(CORE_V1, "Namespace", &[0x12, 0x40]);
        assert!(read_stored(&broken, &Limits::default()).is_err());
        assert!(read_stored(b"k8s\0\x0a", &Limits::default()).is_err());
    }
}
