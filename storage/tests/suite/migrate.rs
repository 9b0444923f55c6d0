//! `migrate` against a real etcd: the bootstrap configuration stored as v1beta2/v1beta3
//! protobuf and APIServices as v1beta1 JSON rewritten to v1 with nothing lost; a concurrent
//! writer; etcd dying mid-run; values that must never be overwritten.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use apfkit_runtime::scheme::StorageEncoding;
use apfkit_scheme::scheme::{SCHEME, Target, UnknownFields};
use apfkit_storage::etcd::{EtcdOptions, Store};
use apfkit_storage::key::Key;
use apfkit_storage::migrate::{self, MigrateOptions};
use apfkit_storage::object;
use apfkit_test_support::etcd::Etcd;
use serde_json::{Value, json};

async fn store(etcd: &Etcd) -> Store {
    Store::connect(&EtcdOptions {
        endpoints: vec![etcd.endpoint.clone()],
        ..EtcdOptions::default()
    })
    .await
    .unwrap()
}

fn to(version: &str) -> Target {
    version.parse().unwrap()
}

fn convert(object: &Value, version: &str) -> Value {
    SCHEME
        .convert_value(object, &to(version), UnknownFields::Strict)
        .unwrap()
        .object
}

/// The bootstrap objects (v1), each with its etcd key.
fn bootstrap() -> Vec<(String, Value)> {
    let mut objects = Vec::new();
    for yaml in [
        apfkit_dispatcher::bootstrap::FLOW_SCHEMAS_YAML,
        apfkit_dispatcher::bootstrap::PRIORITY_LEVELS_YAML,
    ] {
        for document in SCHEME.read_documents(yaml.as_bytes()).unwrap() {
            let value = document.value;
            let plural = match value["kind"].as_str().unwrap() {
                "FlowSchema" => "flowschemas",
                _ => "prioritylevelconfigurations",
            };
            let key = format!(
                "/registry/{plural}/{}",
                value["metadata"]["name"].as_str().unwrap()
            );
            objects.push((key, value));
        }
    }
    objects
}

fn api_service(name: &str, group: &str) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1beta1", "kind": "APIService",
        "metadata": {"name": name, "uid": "4f1c", "creationTimestamp": "2024-01-02T03:04:05Z", "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
        "spec": {"group": group, "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15},
        "status": {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": "2024-01-02T03:04:05Z", "reason": "Local", "message": "Local APIServices are always available"}]}
    })
}

/// The bootstrap object named `name`, converted to `version`.
fn bootstrap_object(name: &str, version: &str) -> Value {
    let suffix = format!("/{name}");
    let (_, object) = bootstrap()
        .into_iter()
        .find(|(k, _)| k.ends_with(&suffix))
        .unwrap();
    convert(&object, version)
}

/// Stores a copy of `object` named `name` as protobuf under `/registry/<plural>/<name>`.
async fn put_named(store: &mut Store, plural: &str, name: &str, object: &Value) {
    let mut object = object.clone();
    object["metadata"]["name"] = json!(name);
    store
        .put(
            format!("/registry/{plural}/{name}").as_bytes(),
            object::encode(&object, StorageEncoding::Protobuf).unwrap(),
        )
        .await
        .unwrap();
}

/// `metadata.resourceVersion` as written in a stored value.
fn stored_resource_version(value: &[u8]) -> Option<String> {
    let object: Value = match value.strip_prefix(apfkit_runtime::scheme::PROTOBUF_PREFIX) {
        Some(message) => {
            let unknown = apfkit_storage::envelope::unwrap(message).unwrap();
            let type_meta = unknown.type_meta.unwrap();
            let kind = apfkit_types::KINDS
                .iter()
                .find(|k| {
                    Some(k.api_version) == type_meta.api_version.as_deref()
                        && Some(k.kind) == type_meta.kind.as_deref()
                })
                .unwrap();
            (kind.wire.unwrap().decode_protobuf)(&unknown.raw.unwrap(), &Default::default())
                .unwrap()
                .value
        }
        None => serde_json::from_slice(value).unwrap(),
    };
    object["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_owned)
}

/// Seeds etcd as an older kube-apiserver left it: FlowSchemas as v1beta2 protobuf, priority
/// levels as v1beta3 protobuf, APIServices as v1beta1 JSON. Returns every (key, stored object).
async fn seed(store: &mut Store) -> Vec<(String, Value)> {
    let mut seeded = Vec::new();
    for (key, object) in bootstrap() {
        let version = if key.contains("/flowschemas/") {
            "v1beta2"
        } else {
            "v1beta3"
        };
        let old = convert(&object, version);
        store
            .put(
                key.as_bytes(),
                object::encode(&old, StorageEncoding::Protobuf).unwrap(),
            )
            .await
            .unwrap();
        seeded.push((key, old));
    }
    for (name, group) in [
        ("v1.apps", "apps"),
        ("v1beta1.metrics.k8s.io", "metrics.k8s.io"),
    ] {
        let key = format!("/registry/apiregistration.k8s.io/apiservices/{name}");
        let old = api_service(name, group);
        store
            .put(
                key.as_bytes(),
                object::encode(&old, StorageEncoding::Json).unwrap(),
            )
            .await
            .unwrap();
        seeded.push((key, old));
    }
    seeded
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_configuration_migrates_to_v1_with_nothing_lost() {
    let etcd = Etcd::start();
    let mut store = store(&etcd).await;
    let seeded = seed(&mut store).await;
    assert_eq!(migrate::total(&store).await.unwrap(), seeded.len() as u64);

    // A dry run lists every key and changes nothing.
    let mut options = MigrateOptions::new(to("v1"));
    options.dry_run = true;
    let planned = migrate::migrate(&store, &options, &|| {}).await.unwrap();
    assert_eq!(planned.planned.len(), seeded.len());
    assert!(planned.planned.iter().all(|p| p.to.ends_with("/v1")));
    let before = store.get(seeded[0].0.as_bytes()).await.unwrap().unwrap();

    let done = AtomicU64::new(0);
    options.dry_run = false;
    let summary = migrate::migrate(&store, &options, &|| {
        done.fetch_add(1, Ordering::Relaxed);
    })
    .await
    .unwrap();
    assert_eq!(summary.migrated, seeded.len() as u64, "{summary:?}");
    assert!(summary.failed.is_empty(), "{:?}", summary.failed);
    assert_eq!(done.load(Ordering::Relaxed), seeded.len() as u64);
    let after = store.get(seeded[0].0.as_bytes()).await.unwrap().unwrap();
    assert_ne!(before.mod_revision, after.mod_revision);

    for (key, old) in &seeded {
        let raw = store.get(key.as_bytes()).await.unwrap().unwrap();
        let stored = object::decode(&raw.value, raw.mod_revision, &Default::default()).unwrap();
        // Same encoding as before, now v1, equal to converting the old object.
        let expected_format = if key.contains("apiservices") {
            StorageEncoding::Json
        } else {
            StorageEncoding::Protobuf
        };
        assert_eq!(stored.encoding, expected_format, "{key}");
        let mut expected = convert(old, "v1");
        expected["metadata"]["resourceVersion"] = json!(raw.mod_revision.to_string());
        let actual = stored.object.clone();
        // Go writes an empty `status` struct for objects stored without one.
        if expected.get("status").is_none() {
            expected["status"] = actual["status"].clone();
        }
        assert_eq!(
            actual["apiVersion"].as_str().unwrap().rsplit('/').next(),
            Some("v1")
        );
        assert_eq!(actual, expected, "{key}");
        // resourceVersion comes from the mod revision: the value does not carry one.
        assert_eq!(stored_resource_version(&raw.value), None, "{key}");
    }

    // A second run finds everything current and writes nothing.
    let again = migrate::migrate(&store, &MigrateOptions::new(to("v1")), &|| {})
        .await
        .unwrap();
    assert_eq!(again.migrated, 0);
    assert_eq!(again.already_current, seeded.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_writer_loses_no_update() {
    let etcd = Etcd::start();
    let mut store = store(&etcd).await;
    // 400 priority levels (two pages), 20 of them (every twentieth, so that they lie across the
    // whole run) written continuously by an old-version writer.
    let base = bootstrap_object("workload-low", "v1beta3");
    let key = |i: usize| format!("/registry/prioritylevelconfigurations/level-{i:04}");
    for i in 0..400 {
        let name = format!("level-{i:04}");
        put_named(&mut store, "prioritylevelconfigurations", &name, &base).await;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let writer = {
        let handle = store.handle();
        let (stop, rounds) = (stop.clone(), rounds.clone());
        tokio::spawn(async move {
            let mut last = vec![0u64; 20];
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                for (i, last) in last.iter_mut().enumerate() {
                    // Read, change a label, write back in v1beta3 if nobody wrote meanwhile.
                    let raw = handle.get(key(i * 20).as_bytes()).await.unwrap().unwrap();
                    let mut object =
                        object::decode(&raw.value, raw.mod_revision, &Default::default())
                            .unwrap()
                            .object;
                    let old = convert(&object, "v1beta3");
                    object = old;
                    object["metadata"]["labels"] = json!({"round": round.to_string()});
                    let bytes = object::encode(&object, StorageEncoding::Protobuf).unwrap();
                    if handle
                        .swap(&raw.key, &bytes, raw.mod_revision)
                        .await
                        .unwrap()
                    {
                        *last = round;
                    }
                }
                rounds.fetch_add(1, Ordering::Relaxed);
            }
            last
        })
    };
    // The writer is at work before the migration starts.
    while rounds.load(Ordering::Relaxed) == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let mut options = MigrateOptions::new(to("v1"));
    options.parallel = 1;
    let summary = migrate::migrate(&store, &options, &|| {}).await.unwrap();
    stop.store(true, Ordering::Relaxed);
    let last = writer.await.unwrap();
    assert!(summary.failed.is_empty(), "{:?}", summary.failed);
    assert!(
        summary.conflicts_retried > 0,
        "the writer never raced the migration: {summary:?}"
    );

    // The writer may have written v1beta3 again after the migration passed: run again.
    let summary = migrate::migrate(&store, &options, &|| {}).await.unwrap();
    assert!(summary.failed.is_empty());
    for i in 0..400 {
        let raw = store.get(key(i).as_bytes()).await.unwrap().unwrap();
        let object = object::decode(&raw.value, raw.mod_revision, &Default::default())
            .unwrap()
            .object;
        assert_eq!(object["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
        if let Some(round) = (i % 20 == 0).then(|| last[i / 20]) {
            // The writer's last successful write survived.
            assert_eq!(
                object["metadata"]["labels"]["round"],
                json!(round.to_string()),
                "{i}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_dying_mid_run_fails_cleanly_and_a_rerun_finishes() {
    let mut etcd = Etcd::start();
    let mut store = store(&etcd).await;
    let base = bootstrap_object("catch-all", "v1beta3");
    let total = 3000;
    for i in 0..total {
        put_named(&mut store, "flowschemas", &format!("fs-{i:05}"), &base).await;
    }
    let done = Arc::new(AtomicU64::new(0));
    let run = {
        let store = store.handle();
        let done = done.clone();
        tokio::spawn(async move {
            let mut options = MigrateOptions::new(to("v1"));
            options.parallel = 2;
            migrate::migrate(&store, &options, &move || {
                done.fetch_add(1, Ordering::Relaxed);
            })
            .await
        })
    };
    while done.load(Ordering::Relaxed) < 300 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    etcd.stop();
    let error = run.await.unwrap().unwrap_err();
    assert!(error.to_string().contains("etcd request"), "{error}");
    assert!(done.load(Ordering::Relaxed) < total);

    etcd.restart();
    let store = self::store(&etcd).await;
    let summary = migrate::migrate(&store, &MigrateOptions::new(to("v1")), &|| {})
        .await
        .unwrap();
    assert!(summary.failed.is_empty());
    assert!(summary.already_current > 0, "the first run's work is kept");
    assert_eq!(summary.migrated + summary.already_current, total);
    let check = migrate::migrate(&store, &MigrateOptions::new(to("v1")), &|| {})
        .await
        .unwrap();
    assert_eq!(check.already_current, total);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_encrypted_and_foreign_values_are_reported_and_never_overwritten() {
    let etcd = Etcd::start();
    let store = store(&etcd).await;
    let good = convert(&bootstrap()[0].1, "v1beta3");
    let mut with_unknown = object::encode(&good, StorageEncoding::Protobuf).unwrap();
    // An unknown varint field 99 appended to the object inside the envelope: re-wrap it.
    let unknown = apfkit_storage::envelope::unwrap(&with_unknown[4..]).unwrap();
    let mut raw = unknown.raw.unwrap();
    raw.extend([0x98, 0x06, 0x01]);
    with_unknown =
        apfkit_storage::envelope::wrap("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", &raw);
    let bad: Vec<(&str, Vec<u8>)> = vec![
        (
            "/registry/flowschemas/encrypted",
            b"k8s:enc:aescbc:v1:key1:\x00\x01\x02".to_vec(),
        ),
        (
            "/registry/flowschemas/corrupt",
            b"k8s\0\x0a\x05garbage".to_vec(),
        ),
        (
            "/registry/flowschemas/truncated",
            object::encode(&good, StorageEncoding::Protobuf).unwrap()[..40].to_vec(),
        ),
        (
            "/registry/flowschemas/foreign-kind",
            apfkit_storage::envelope::wrap("v1", "Pod", b"\x0a\x00"),
        ),
        ("/registry/flowschemas/not-an-object", b"hello".to_vec()),
        (
            "/registry/apiregistration.k8s.io/apiservices/bad-json",
            b"{\"apiVersion\":".to_vec(),
        ),
        ("/registry/flowschemas/unknown-field", with_unknown),
    ];
    for (key, value) in &bad {
        store.put(key.as_bytes(), value.clone()).await.unwrap();
    }
    store
        .put(
            b"/registry/flowschemas/fine",
            object::encode(&good, StorageEncoding::Protobuf).unwrap(),
        )
        .await
        .unwrap();
    let before: Vec<_> = {
        let mut v = Vec::new();
        for (key, _) in &bad {
            v.push(store.get(key.as_bytes()).await.unwrap().unwrap());
        }
        v
    };
    let summary = migrate::migrate(&store, &MigrateOptions::new(to("v1")), &|| {})
        .await
        .unwrap();
    assert_eq!(summary.migrated, 1, "{summary:?}");
    let failed: Vec<String> = summary.failed.iter().map(|f| f.key.to_string()).collect();
    let mut expected: Vec<String> = bad.iter().map(|(k, _)| (*k).to_owned()).collect();
    expected.sort();
    assert_eq!(failed, expected);
    let reason = |key: &str| {
        summary
            .failed
            .iter()
            .find(|f| f.key == Key::from(key))
            .unwrap()
            .reason
            .clone()
    };
    assert!(
        reason("/registry/flowschemas/encrypted").contains("encrypted at rest (aescbc:v1:key1)")
    );
    assert!(reason("/registry/flowschemas/foreign-kind").contains("v1 Pod is not a kind"));
    assert!(
        reason("/registry/flowschemas/unknown-field").contains("#99"),
        "{}",
        reason("/registry/flowschemas/unknown-field")
    );
    for ((key, _), before) in bad.iter().zip(before) {
        let after = store.get(key.as_bytes()).await.unwrap().unwrap();
        assert_eq!(after, before, "{key} was touched");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_objects_go_in_transactions_etcd_accepts() {
    // Three objects of 700 KB: together over etcd's 1.5 MiB request limit, so a group holding
    // them all would be refused.
    let etcd = Etcd::start();
    let mut store = store(&etcd).await;
    let mut big = bootstrap_object("catch-all", "v1beta3");
    big["metadata"]["annotations"] = json!({"note": "x".repeat(700 << 10)});
    for i in 0..3 {
        put_named(&mut store, "flowschemas", &format!("big-{i}"), &big).await;
    }
    let summary = migrate::migrate(&store, &MigrateOptions::new(to("v1")), &|| {})
        .await
        .unwrap();
    assert_eq!(summary.migrated, 3, "{summary:?}");
    assert!(summary.failed.is_empty());
}

/// A v1beta3 FlowSchema named `name` as stored protobuf, whose metadata holds `owners` empty
/// `ownerReferences` (ObjectMeta field 13): two bytes each as stored, far more once written
/// back (Go writes an owner reference's four strings even when empty).
fn with_empty_owners(name: &str, owners: usize) -> Vec<u8> {
    let mut metadata = vec![0x0a, name.len() as u8];
    metadata.extend(name.as_bytes());
    metadata.extend(std::iter::repeat_n([0x6a, 0x00], owners).flatten());
    let mut raw = vec![0x0a];
    prost::encoding::encode_varint(metadata.len() as u64, &mut raw);
    raw.extend(metadata);
    apfkit_storage::envelope::wrap("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", &raw)
}

/// The v1beta3 `catch-all` FlowSchema named `name`, stored under flowschemas/.
async fn put_catch_all(store: &Store, name: &str) -> String {
    let mut object = bootstrap_object("catch-all", "v1beta3");
    object["metadata"]["name"] = json!(name);
    let key = format!("/registry/flowschemas/{name}");
    store
        .put(
            key.as_bytes(),
            object::encode(&object, StorageEncoding::Protobuf).unwrap(),
        )
        .await
        .unwrap();
    key
}

fn failure<'a>(summary: &'a migrate::Summary, key: &str) -> &'a str {
    summary
        .failed
        .iter()
        .find(|f| f.key == Key::from(key))
        .unwrap_or_else(|| panic!("{key} did not fail: {summary:?}"))
        .reason
        .as_str()
}

/// Issue 24, item 3: an object that converts to more than etcd takes is reported with its key
/// and the run goes on, on every rerun; whether the size is known beforehand
/// (`max_request_bytes`) or only etcd knows it (its own `--max-request-bytes`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_object_etcd_will_not_take_back_fails_alone() {
    // etcd takes at most 100,000 bytes per request; 20,000 empty owner references are 40 KB
    // stored and about 240 KB written back.
    let etcd = Etcd::start_with(&["--max-request-bytes", "100000"]);
    let store = store(&etcd).await;
    let mut keys = Vec::new();
    for name in ["a", "c", "e"] {
        keys.push(put_catch_all(&store, name).await);
    }
    let big = "/registry/flowschemas/b";
    store
        .put(big.as_bytes(), with_empty_owners("b", 20_000))
        .await
        .unwrap();
    let stored_big = store.get(big.as_bytes()).await.unwrap().unwrap();

    // Known beforehand: the write would be larger than the limit given.
    let mut options = MigrateOptions::new(to("v1"));
    options.max_request_bytes = 100_000;
    for run in 0..2 {
        let summary = migrate::migrate(&store, &options, &|| {}).await.unwrap();
        let migrated = if run == 0 { 3 } else { 0 };
        assert_eq!(
            (
                summary.migrated,
                summary.already_current,
                summary.failed.len()
            ),
            (migrated, 3 - migrated, 1),
            "run {run}: {summary:?}"
        );
        let reason = failure(&summary, big);
        assert!(
            reason.contains("more than etcd takes in one request (100000 bytes"),
            "{reason}"
        );
    }
    // Only etcd knows: the default limit (1.5 MiB) lets the write go, etcd refuses it, and
    // the key is written alone and fails alone.
    for key in &keys {
        put_catch_all(&store, key.rsplit('/').next().unwrap()).await;
    }
    let summary = migrate::migrate(&store, &MigrateOptions::new(to("v1")), &|| {})
        .await
        .unwrap();
    assert_eq!(summary.migrated, 3, "{summary:?}");
    let reason = failure(&summary, big);
    assert!(
        reason.starts_with("etcd refused the write") && reason.contains("request is too large"),
        "{reason}"
    );
    assert_eq!(
        store.get(big.as_bytes()).await.unwrap().unwrap(),
        stored_big,
        "the refused object is untouched"
    );
}

/// Issue 24, item 2: values read from etcd are held to the document limits while they are
/// decoded, and one over them is reported with its key instead of being planned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_over_the_limits_are_reported_with_their_key() {
    let etcd = Etcd::start();
    let store = store(&etcd).await;
    put_catch_all(&store, "fine").await;
    // 700,000 empty owner references: 1.4 MB stored.
    let many = "/registry/flowschemas/many-owners";
    store
        .put(many.as_bytes(), with_empty_owners("many-owners", 700_000))
        .await
        .unwrap();
    let deep = "/registry/apiregistration.k8s.io/apiservices/deep";
    let nested = format!(
        r#"{{"apiVersion":"apiregistration.k8s.io/v1beta1","kind":"APIService","metadata":{{"name":"deep","annotations":{{}}}},"spec":{{"x":{}1{}}}}}"#,
        "[".repeat(70),
        "]".repeat(70)
    );
    store
        .put(deep.as_bytes(), nested.into_bytes())
        .await
        .unwrap();
    let mut options = MigrateOptions::new(to("v1"));
    options.dry_run = true;
    let summary = migrate::migrate(&store, &options, &|| {}).await.unwrap();
    assert_eq!(summary.migrated, 1, "{summary:?}");
    assert!(
        failure(&summary, many).contains("more than 1000000 nodes"),
        "{summary:?}"
    );
    assert!(
        failure(&summary, deep).contains("nested deeper than 64 levels"),
        "{summary:?}"
    );
    // A smaller size limit refuses by bytes first.
    options.limits.max_document_bytes = 1 << 20;
    let summary = migrate::migrate(&store, &options, &|| {}).await.unwrap();
    assert!(
        failure(&summary, many).contains("larger than 1048576 bytes"),
        "{summary:?}"
    );
}

/// Issue 24, item 4: pages are cut by bytes as well as by count, and a response over the
/// gRPC client's old 4 MiB limit is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_large_objects_are_listed_and_migrated() {
    let etcd = Etcd::start();
    let store = store(&etcd).await;
    let mut object = bootstrap_object("catch-all", "v1beta3");
    // Four FlowSchemas of 1.26 MB, each within etcd's request limit: 5 MB in one page of the
    // old fixed size.
    object["metadata"]["annotations"] = json!({"big": "x".repeat(1_260_000)});
    for i in 0..4 {
        put_named(
            &mut store.handle(),
            "flowschemas",
            &format!("big-{i}"),
            &object,
        )
        .await;
    }
    // 250 of 22 KB: more than 4 MiB in a page of 200.
    object["metadata"]["annotations"] = json!({"big": "x".repeat(22_000)});
    for i in 0..250 {
        put_named(
            &mut store.handle(),
            "flowschemas",
            &format!("mid-{i:03}"),
            &object,
        )
        .await;
    }
    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), 254);
    assert!(listed.iter().all(|e| e.stored.is_ok()));
    let summary = migrate::migrate(&store, &MigrateOptions::new(to("v1")), &|| {})
        .await
        .unwrap();
    assert_eq!(summary.migrated, 254, "{summary:?}");
    assert!(summary.failed.is_empty(), "{:?}", summary.failed);
    let raw = store
        .get(b"/registry/flowschemas/big-3")
        .await
        .unwrap()
        .unwrap();
    let stored = object::decode(&raw.value, raw.mod_revision, &Default::default()).unwrap();
    assert_eq!(stored.api_version(), "flowcontrol.apiserver.k8s.io/v1");
}

/// Issue 24, item 8: kube-apiserver decodes what is under flowschemas/ as FlowSchemas, so a
/// PriorityLevelConfiguration there is reported and left as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_under_another_resource_is_reported_and_left() {
    let etcd = Etcd::start();
    let store = store(&etcd).await;
    let level = bootstrap_object("workload-low", "v1beta3");
    assert_eq!(level["kind"], "PriorityLevelConfiguration");
    let key = "/registry/flowschemas/workload-low";
    store
        .put(
            key.as_bytes(),
            object::encode(&level, StorageEncoding::Protobuf).unwrap(),
        )
        .await
        .unwrap();
    let before = store.get(key.as_bytes()).await.unwrap().unwrap();
    let summary = migrate::migrate(&store, &MigrateOptions::new(to("v1")), &|| {})
        .await
        .unwrap();
    assert_eq!(summary.migrated, 0);
    assert!(
        failure(&summary, key).starts_with(
            "a PriorityLevelConfiguration stored under flowschemas/, where kube-apiserver reads only flowschemas"
        ),
        "{summary:?}"
    );
    assert_eq!(store.get(key.as_bytes()).await.unwrap().unwrap(), before);
    let listed = store.list().await.unwrap();
    assert!(listed[0].misplaced().is_some());
}
