//! Reading what the store holds: objects kept in the storage version's protobuf (decoded
//! straight into its type), in an older version or as JSON (through the scheme's readers), and
//! values that are broken (an internal error naming the key, never a panic).

use apfkit_apiserver::store::{ListRequest, Objects, Place};
use std::sync::Arc;

use apfkit_apiserver::storage::Backend;
use apfkit_apiserver::storage::memory::MemoryBackend;
use apfkit_runtime::Object as _;
use apfkit_scheme::scheme::{Encoding, HubObject, Limits, SCHEME, Target, UnknownFields};

use crate::support;

/// A FlowSchema named `name` in `version`, written as `encoding` says.
fn stored(name: &str, version: &str, encoding: Encoding) -> Vec<u8> {
    let document = serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name, "uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 7},
    });
    let bytes = serde_json::to_vec(&document).unwrap();
    let target: Target = version.parse().unwrap();
    let mut written = None;
    SCHEME
        .read(&bytes[..], &Limits::default(), |input| {
            written = Some(
                SCHEME
                    .convert(input, &target, UnknownFields::Strict, encoding)
                    .unwrap()
                    .bytes,
            );
            Ok::<(), apfkit_scheme::scheme::ReadError>(())
        })
        .unwrap();
    written.unwrap()
}

/// Kubernetes' envelope around `raw`: `k8s\0`, then `runtime.Unknown` with its TypeMeta (short
/// fields only).
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let field = |tag: u8, bytes: &[u8]| {
        let mut out = vec![tag, u8::try_from(bytes.len()).unwrap()];
        out.extend_from_slice(bytes);
        out
    };
    let type_meta = [
        field(0x0a, api_version.as_bytes()),
        field(0x12, kind.as_bytes()),
    ]
    .concat();
    [b"k8s\0".to_vec(), field(0x0a, &type_meta), field(0x12, raw)].concat()
}

/// Objects on an in-memory backend, and the backend, to write to it past the store.
fn objects() -> (Objects<HubObject>, Arc<MemoryBackend>) {
    let backend = Arc::new(MemoryBackend::default());
    let objects = Objects::new(
        SCHEME.encodings(),
        backend.clone(),
        "/registry",
        Limits::default(),
    );
    (objects, backend)
}

fn place(name: &str) -> Place<'_> {
    Place {
        namespace: None,
        name,
    }
}

#[tokio::test]
async fn objects_in_the_storage_version_an_older_one_or_json_all_read() {
    let (objects, backend) = objects();
    let served = support::flow_schemas();
    let cases = [
        ("current", "v1", Encoding::Protobuf),
        ("older", "v1beta3", Encoding::Protobuf),
        ("oldest", "v1beta1", Encoding::Protobuf),
        ("as-json", "v1", Encoding::Json),
    ];
    for (name, version, encoding) in cases {
        let key = format!("/registry/flowschemas/{name}");
        let kv = backend
            .create(key.as_bytes(), stored(name, version, encoding))
            .await
            .unwrap();
        let object = objects.get(&served, place(name)).await.unwrap();
        assert_eq!(object.name(), name, "{version} {encoding:?}");
        assert_eq!(
            object.metadata().resource_version,
            Some(kv.mod_revision.to_string())
        );
        // Through the hub, in any version, the spec is what was stored.
        let v1 = served.storage.encode(object, &mut Vec::new()).unwrap();
        assert_eq!(v1["spec"]["matchingPrecedence"], 7, "{name}");
        assert_eq!(
            v1["spec"]["priorityLevelConfiguration"]["name"], "global-default",
            "{name}"
        );
    }
    let listed = objects
        .list(&served, &ListRequest::default())
        .await
        .unwrap();
    let names: Vec<&str> = listed.items.iter().map(|o| o.name()).collect();
    assert_eq!(names, ["as-json", "current", "older", "oldest"]);
}

#[tokio::test]
async fn a_broken_stored_value_is_an_internal_error_naming_its_key() {
    let (objects, backend) = objects();
    let served = support::flow_schemas();
    let good = stored("good", "v1", Encoding::Protobuf);
    let broken: [(&str, Vec<u8>); 5] = [
        // The storage version's envelope around bytes that are not a FlowSchema.
        (
            "garbage",
            envelope("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", &[0xff; 9]),
        ),
        // Cut short inside the envelope.
        ("truncated", good[..good.len() - 3].to_vec()),
        // Another kind where FlowSchemas are kept.
        (
            "other-kind",
            stored("x", "v1", Encoding::Protobuf)
                .windows(10)
                .position(|w| w == b"FlowSchema")
                .map(|at| {
                    let mut bytes = good.clone();
                    bytes[at..at + 10].copy_from_slice(b"FlowSchemb");
                    bytes
                })
                .unwrap(),
        ),
        ("empty", Vec::new()),
        ("not-an-object", b"[1, 2]".to_vec()),
    ];
    for (name, value) in broken {
        let key = format!("/registry/flowschemas/{name}");
        backend.create(key.as_bytes(), value).await.unwrap();
        let error = objects.get(&served, place(name)).await.unwrap_err();
        assert_eq!(error.code, 500, "{name}: {error:?}");
        // The storage's corrupt object (1.37, decision 273), naming the key.
        assert!(
            error.message.starts_with(&format!(
                "Internal error occurred: StorageError: corrupt object, Code: 7, Key: {key}, \
                 ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision="
            )),
            "{name}: {}",
            error.message
        );
    }
    // A list that meets them is a `StorageReadError` naming each, not a list with a hole.
    let error = objects
        .list(&served, &ListRequest::default())
        .await
        .unwrap_err();
    assert_eq!((error.code, error.reason), (500, "StorageReadError"));
    assert_eq!(error.causes.len(), 5, "{error:?}");
}

/// A dry-run create writes nothing, but is refused as the write would be: a name that is
/// taken is a 409, as kube's dry-run storage answers (it reads the key first).
#[tokio::test]
async fn a_dry_run_create_of_a_taken_name_is_refused() {
    let (objects, _) = objects();
    let served = support::flow_schemas();
    let flow_schema = |name: &str| {
        let value = serde_json::json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": name},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"}},
        });
        let (mut read, _) = SCHEME.to_hub_value(&value, UnknownFields::Strict).unwrap();
        read.remove(0)
    };
    let api_version = "flowcontrol.apiserver.k8s.io/v1";
    let dry = objects
        .create(&served, None, flow_schema("taken"), api_version, true)
        .await
        .unwrap();
    assert_eq!(dry.object.name(), "taken");
    assert_eq!(
        objects.get(&served, place("taken")).await.unwrap_err().code,
        404
    );
    objects
        .create(&served, None, flow_schema("taken"), api_version, false)
        .await
        .unwrap();
    let refused = objects
        .create(&served, None, flow_schema("taken"), api_version, true)
        .await
        .unwrap_err();
    assert_eq!(refused.code, 409);
    assert_eq!(
        refused.message,
        "flowschemas.flowcontrol.apiserver.k8s.io \"taken\" already exists"
    );
}

/// A watch read for metadata alone: each event's object's metadata, with the event's revision
/// and whether it deleted the object, whether the server kept the object decoded or the value
/// was written past it; a value that does not decode is the error `change` answers.
#[tokio::test]
async fn watched_events_read_for_their_metadata_alone() {
    let (objects, backend) = objects();
    let served = support::flow_schemas();
    let start = objects.current_revision().await.unwrap();
    let mut watch = objects.watch(&served, None, start).await.unwrap();
    // Written past the server (nothing kept decoded), then read once (kept), then deleted.
    let key = "/registry/flowschemas/watched";
    let written = backend
        .create(key.as_bytes(), stored("watched", "v1", Encoding::Protobuf))
        .await
        .unwrap();
    let event = watch.next().await.unwrap().unwrap();
    let (meta, deleted) = objects.watched_metadata(&served, &event).unwrap();
    assert_eq!(meta.name.as_deref(), Some("watched"));
    assert_eq!(meta.uid.as_deref(), Some("u-1"));
    assert_eq!(
        meta.resource_version,
        Some(written.mod_revision.to_string())
    );
    assert!(!deleted);
    objects.get(&served, place("watched")).await.unwrap();
    assert_eq!(
        objects.watched_metadata(&served, &event).unwrap(),
        (meta, false)
    );
    let (_, removed) = backend.delete(key.as_bytes(), None).await.unwrap();
    let event = watch.next().await.unwrap().unwrap();
    let (meta, deleted) = objects.watched_metadata(&served, &event).unwrap();
    assert!(deleted);
    assert_eq!(meta.resource_version, Some(removed.to_string()));
    assert_eq!(meta.name.as_deref(), Some("watched"));
    // A value that does not decode.
    backend
        .create(b"/registry/flowschemas/broken", b"[1]".to_vec())
        .await
        .unwrap();
    let event = watch.next().await.unwrap().unwrap();
    let error = objects.watched_metadata(&served, &event).unwrap_err();
    assert_eq!(error.code, 500, "{error:?}");
    assert!(
        error.message.contains("object not decodable"),
        "{}",
        error.message
    );
}

/// A resource kept as JSON has a watched value's metadata read alone; a JSON value of
/// another kind is read whole, and refused as `change` refuses it.
#[tokio::test]
async fn watched_json_values_have_their_metadata_read_alone() {
    use apfkit_apiserver::store::{ResourceConfig, Served};
    use apfkit_runtime::identity::GroupVersionKind;
    use apfkit_runtime::scheme::StorageEncoding;
    let (objects, backend) = objects();
    let config = ResourceConfig::builtin(
        GroupVersionKind::from_static("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"),
        "flowschemas",
        false,
    )
    .stored_at("flowschemas", StorageEncoding::Json);
    let served = Served::new(&SCHEME, config).unwrap();
    let start = objects.current_revision().await.unwrap();
    let mut watch = objects.watch(&served, None, start).await.unwrap();
    let value = stored("as-json", "v1", Encoding::Json);
    backend
        .create(b"/registry/flowschemas/as-json", value.clone())
        .await
        .unwrap();
    let event = watch.next().await.unwrap().unwrap();
    let (meta, deleted) = objects.watched_metadata(&served, &event).unwrap();
    assert_eq!(
        (meta.name.as_deref(), meta.uid.as_deref(), deleted),
        (Some("as-json"), Some("u-1"), false)
    );
    let other = String::from_utf8(value)
        .unwrap()
        .replace("FlowSchema", "Secret");
    backend
        .create(b"/registry/flowschemas/other", other.into_bytes())
        .await
        .unwrap();
    let event = watch.next().await.unwrap().unwrap();
    let error = objects.watched_metadata(&served, &event).unwrap_err();
    assert_eq!(error.code, 500, "{error:?}");
}

/// A list of metadata alone is the metadata of the objects the list answers: protobuf in the
/// storage version and in an older one (read whole), with each `resourceVersion`, a page at a
/// time; a value that does not decode makes it the list's error.
#[tokio::test]
async fn lists_of_metadata_alone_are_the_metadata_of_the_listed_objects() {
    let (objects, backend) = objects();
    let served = support::flow_schemas();
    for (name, version) in [("a", "v1"), ("b", "v1beta3"), ("c", "v1")] {
        let key = format!("/registry/flowschemas/{name}");
        backend
            .create(key.as_bytes(), stored(name, version, Encoding::Protobuf))
            .await
            .unwrap();
    }
    let request = |start: Vec<u8>| ListRequest {
        start,
        limit: 2,
        ..ListRequest::default()
    };
    let whole = objects.list(&served, &request(Vec::new())).await.unwrap();
    let alone = objects
        .list_metadata(&served, &request(Vec::new()))
        .await
        .unwrap();
    let metadata: Vec<_> = whole.items.iter().map(|o| o.metadata().clone()).collect();
    assert_eq!(alone.items, metadata);
    assert_eq!(alone.items[1].name.as_deref(), Some("b"));
    assert!(alone.items[0].resource_version.is_some());
    assert_eq!((alone.revision, &alone.next), (whole.revision, &whole.next));
    let rest = objects
        .list_metadata(&served, &request(alone.next.unwrap()))
        .await
        .unwrap();
    let names: Vec<_> = rest.items.iter().map(|m| m.name.as_deref()).collect();
    assert_eq!((names, rest.next), (vec![Some("c")], None));

    backend
        .create(b"/registry/flowschemas/broken", b"k8s\0\x0a".to_vec())
        .await
        .unwrap();
    let error = objects
        .list_metadata(&served, &ListRequest::default())
        .await
        .unwrap_err();
    assert_eq!(error.code, 500, "{error:?}");
    assert!(
        error.message.contains("/registry/flowschemas/broken"),
        "{}",
        error.message
    );
}
