//! StorageVersionMigrations and their lists in Kubernetes protobuf, as kube-apiserver stores
//! them (v1beta1) and client-go's typed clients send them (v1, kube-controller-manager's
//! status writes among them): the messages of k8s.io/api's `storagemigration/v1` and
//! `v1beta1` `generated.proto`, the same in both, as field tables (`apfkit_wire::shaped`), in
//! the `k8s\0` envelope.

use apfkit_runtime::scheme::{InputError, Limits};
use apfkit_wire::shaped::{self, Holds, Reader, RootShape, Shape};
use serde_json::Value;

/// A Go `string` without `omitempty`.
const TEXT: Holds = Holds::Text { omit_empty: false };
/// A Go `string` with `omitempty`.
const OMITTED_TEXT: Holds = Holds::Text { omit_empty: true };

/// `metav1.GroupResource`.
static GROUP_RESOURCE: Shape = Shape(&[(1, "group", TEXT), (2, "resource", TEXT)]);
/// `metav1.Condition`.
static CONDITION: Shape = Shape(&[
    (1, "type", TEXT),
    (2, "status", TEXT),
    (3, "observedGeneration", Holds::Int64 { omit_zero: true }),
    (4, "lastTransitionTime", Holds::Time),
    (5, "reason", TEXT),
    (6, "message", TEXT),
]);
static SPEC: Shape = Shape(&[(1, "resource", Holds::Message(&GROUP_RESOURCE, true))]);
static STATUS: Shape = Shape(&[
    (1, "conditions", Holds::Messages(&CONDITION)),
    (2, "resourceVersion", OMITTED_TEXT),
]);
static MIGRATION: Shape = Shape(&[
    (1, "metadata", Holds::ObjectMeta),
    (2, "spec", Holds::Message(&SPEC, true)),
    (3, "status", Holds::Message(&STATUS, true)),
]);
static MIGRATION_LIST: Shape = Shape(&[
    (1, "metadata", Holds::ListMeta),
    (2, "items", Holds::Messages(&MIGRATION)),
]);

/// The `apiVersion`s whose messages these are.
const VERSIONS: [&str; 2] = [
    "storagemigration.k8s.io/v1",
    "storagemigration.k8s.io/v1beta1",
];

struct MigrationRoot;
impl RootShape for MigrationRoot {
    const SHAPE: &'static Shape = &MIGRATION;
}
struct MigrationListRoot;
impl RootShape for MigrationListRoot {
    const SHAPE: &'static Shape = &MIGRATION_LIST;
}

/// An enveloped StorageVersionMigration or its list (prefix included) as JSON, with the paths
/// of the fields its message lacks; `None` when it is another kind (another codec's).
pub fn read(bytes: &[u8], limits: &Limits) -> Option<Result<(Value, Vec<String>), InputError>> {
    shaped::read_enveloped(bytes, limits, |api_version, kind| {
        if !VERSIONS.contains(&api_version) {
            return None;
        }
        Some(match kind {
            "StorageVersionMigration" => shaped::read::<MigrationRoot> as Reader,
            "StorageVersionMigrationList" => shaped::read::<MigrationListRoot>,
            _ => return None,
        })
    })
}

/// A stored StorageVersionMigration (prefix included) as JSON, read as [`read`] reads it.
///
/// # Errors
///
/// Bytes that are not a StorageVersionMigration within `limits`, in words.
pub fn read_stored(bytes: &[u8], limits: &Limits) -> Result<Value, String> {
    apfkit_apiextensions::json_kind::read_stored_protobuf(
        read,
        bytes,
        limits,
        "a StorageVersionMigration",
    )
}

/// A StorageVersionMigration or its list in the envelope, as kube-apiserver writes it; `None`
/// for any other kind.
pub fn write(object: &Value) -> Option<Result<Vec<u8>, String>> {
    shaped::write_enveloped(object, |api_version, kind| {
        if !VERSIONS.contains(&api_version) {
            return None;
        }
        Some(match kind {
            "StorageVersionMigration" => &MIGRATION,
            "StorageVersionMigrationList" => &MIGRATION_LIST,
            _ => return None,
        })
    })
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
        let migration = json!({
            "apiVersion": "storagemigration.k8s.io/v1beta1", "kind": "StorageVersionMigration",
            "metadata": {"name": "gadgets-to-v2"},
            "spec": {"resource": {"group": "example.com", "resource": "gadgets"}},
            "status": {"resourceVersion": "42", "conditions": [{
                "type": "Running", "status": "False", "observedGeneration": 3,
                "lastTransitionTime": "2026-11-30T10:00:00Z",
                "reason": "MigrationCompleted", "message": "Migration completed"}]},
        });
        let bytes = write(&migration).unwrap().unwrap();
        let raw = envelope::unwrap(&bytes[4..]).unwrap().raw.unwrap();
        let upstream =
            k8s_pb::api::storagemigration::v1beta1::StorageVersionMigration::decode(raw.as_slice())
                .unwrap();
        let resource = upstream.spec.unwrap().resource.unwrap();
        assert_eq!(resource.group.as_deref(), Some("example.com"));
        let status = upstream.status.unwrap();
        assert_eq!(status.resource_version.as_deref(), Some("42"));
        assert_eq!(status.conditions[0].observed_generation, Some(3));
        assert_eq!(
            read(&bytes, &Limits::default()).unwrap().unwrap().0,
            migration
        );

        // client-go's status write, in v1 (the same message as v1beta1's).
        let sent = k8s_pb::api::storagemigration::v1beta1::StorageVersionMigration {
            metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("svm".into()),
                ..Default::default()
            }),
            spec: Some(Default::default()),
            status: Some(
                k8s_pb::api::storagemigration::v1beta1::StorageVersionMigrationStatus {
                    resource_version: Some("7".into()),
                    ..Default::default()
                },
            ),
        };
        let bytes = envelope::wrap(
            "storagemigration.k8s.io/v1",
            "StorageVersionMigration",
            &sent.encode_to_vec(),
        );
        let (value, unknown) = read(&bytes, &Limits::default()).unwrap().unwrap();
        assert!(unknown.is_empty());
        assert_eq!(value["status"]["resourceVersion"], "7");
        assert_eq!(
            value["spec"]["resource"],
            json!({"group": "", "resource": ""})
        );
        // Other kinds are another codec's; garbage is an error, not a panic.
        assert!(write(&json!({"apiVersion": "v1", "kind": "Namespace"})).is_none());
        let broken = envelope::wrap(
            "storagemigration.k8s.io/v1beta1",
            "StorageVersionMigration",
            &[0x12, 0x40],
        );
        assert!(read_stored(&broken, &Limits::default()).is_err());
    }
}
