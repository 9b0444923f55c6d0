//! Storage-version migration of 100,000 stored objects on a local etcd, beside etcd's own put
//! throughput measured in the same run on the same server.
//!
//! `cargo bench -p apfkit-storage --bench migrate` (needs Debian's `etcd-server`, or `ETCD`).
//!
//! Each round starts a fresh etcd and seeds it as an older kube-apiserver left it: FlowSchemas
//! as v1beta3 protobuf, priority levels as v1beta2 protobuf, APIServices as v1beta1 JSON. Two
//! timed passes follow, in alternating order from round to round:
//! - **put**: the same number of plain puts, each value the size of its migrated object, 256
//!   in flight. This is what etcd itself can take on this machine, the physical limit of any
//!   migration.
//! - **migrate**: `migrate::migrate` to v1 with its default options (list pages, decode,
//!   convert, encode, compare-and-swap transactions of 64 keys, 8 in flight).
//!
//! The figure of merit is migrate's objects/s divided by put's, round by round.

use std::time::{Duration, Instant};

use apfkit_runtime::scheme::StorageEncoding;
use apfkit_scheme::scheme::{SCHEME, Target, UnknownFields};
use apfkit_storage::etcd::{EtcdOptions, Store};
use apfkit_storage::migrate::{self, MigrateOptions};
use apfkit_storage::object;
use apfkit_test_support::etcd::Etcd;
use futures_util::stream::{self, StreamExt};
use serde_json::{Value, json};

const OBJECTS: usize = 100_000;
const ROUNDS: usize = 3;
/// Plain puts in flight for the baseline: etcd's best here (32 gave 10,000 puts/s, 128 and 256
/// about 13,000).
const PUTS_IN_FLIGHT: usize = 256;

/// One object to store: its key, its stored (old) bytes and its bytes once migrated.
struct Seed {
    key: String,
    old: Vec<u8>,
    new: Vec<u8>,
}

fn target(version: &str) -> Target {
    version.parse().expect("a version")
}

fn convert(object: &Value, version: &str) -> Value {
    SCHEME
        .convert_value(object, &target(version), UnknownFields::Strict)
        .expect("converts")
        .object
}

/// 100,000 objects: the bootstrap FlowSchemas and priority levels and an APIService, repeated
/// with distinct names, in the versions and encodings an old cluster stored them in.
fn seeds() -> Vec<Seed> {
    let mut shapes = Vec::new();
    for yaml in [
        apfkit_dispatcher::bootstrap::FLOW_SCHEMAS_YAML,
        apfkit_dispatcher::bootstrap::PRIORITY_LEVELS_YAML,
    ] {
        for document in SCHEME
            .read_documents(yaml.as_bytes())
            .expect("bootstrap parses")
        {
            shapes.push(document.value);
        }
    }
    shapes.push(json!({
        "apiVersion": "apiregistration.k8s.io/v1beta1", "kind": "APIService",
        "metadata": {"name": "v1.apps", "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
        "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15},
    }));
    (0..OBJECTS)
        .map(|i| {
            let mut object = shapes[i % shapes.len()].clone();
            let name = format!("object-{i:06}");
            object["metadata"]["name"] = json!(name);
            object["metadata"]["uid"] = json!(format!("00000000-0000-0000-0000-{i:012}"));
            object["metadata"]["creationTimestamp"] = json!("2024-01-02T03:04:05Z");
            let (key, version, format) = match object["kind"].as_str() {
                Some("FlowSchema") => ("flowschemas", "v1beta3", StorageEncoding::Protobuf),
                Some("PriorityLevelConfiguration") => (
                    "prioritylevelconfigurations",
                    "v1beta2",
                    StorageEncoding::Protobuf,
                ),
                _ => (
                    "apiregistration.k8s.io/apiservices",
                    "v1beta1",
                    StorageEncoding::Json,
                ),
            };
            let old = convert(&object, version);
            let new = convert(&object, "v1");
            Seed {
                key: format!("/registry/{key}/{name}"),
                old: object::encode(&old, format).expect("encodes"),
                new: object::encode(&new, format).expect("encodes"),
            }
        })
        .collect()
}

/// Puts every `(key, value)` with `parallel` requests in flight.
async fn put_all<'a>(
    store: &Store,
    values: impl Iterator<Item = (String, &'a [u8])>,
    parallel: usize,
) -> Duration {
    let started = Instant::now();
    stream::iter(values)
        .map(|(key, value)| {
            let store = store.handle();
            async move {
                store
                    .put(key.as_bytes(), value.to_vec())
                    .await
                    .expect("etcd takes the put");
            }
        })
        .buffer_unordered(parallel)
        .collect::<Vec<()>>()
        .await;
    started.elapsed()
}

async fn migrate_all(store: &mut Store, options: &MigrateOptions) -> Duration {
    let started = Instant::now();
    let summary = migrate::migrate(store, options, &|| {})
        .await
        .expect("the migration runs");
    let elapsed = started.elapsed();
    assert_eq!(summary.migrated, OBJECTS as u64, "{:?}", summary.failed);
    assert!(summary.failed.is_empty());
    elapsed
}

fn per_second(duration: Duration) -> f64 {
    OBJECTS as f64 / duration.as_secs_f64()
}

fn main() {
    let seeds = seeds();
    let bytes: usize = seeds.iter().map(|s| s.new.len()).sum();
    println!(
        "{OBJECTS} objects, {:.1} MB once migrated; {ROUNDS} rounds, each on a fresh etcd",
        bytes as f64 / 1e6
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let options = MigrateOptions::new(target("v1"));
    println!(
        "{:>5} | {:>12} | {:>12} | {:>9} | {:>9} | ratio",
        "round", "put", "migrate", "put/s", "migrate/s"
    );
    let mut ratios = Vec::new();
    for round in 0..ROUNDS {
        let etcd = Etcd::start();
        let (put, migrated) = runtime.block_on(async {
            let mut store = Store::connect(&EtcdOptions {
                endpoints: vec![etcd.endpoint.clone()],
                timeout: Duration::from_secs(60),
                ..EtcdOptions::default()
            })
            .await
            .expect("connects");
            let old = seeds.iter().map(|s| (s.key.clone(), s.old.as_slice()));
            put_all(&store, old, PUTS_IN_FLIGHT).await;
            // The baseline writes beside the registry, where the migration does not look.
            let baseline = || {
                seeds
                    .iter()
                    .map(|s| (format!("/baseline{}", s.key), s.new.as_slice()))
            };
            if round % 2 == 0 {
                let put = put_all(&store, baseline(), PUTS_IN_FLIGHT).await;
                (put, migrate_all(&mut store, &options).await)
            } else {
                let migrated = migrate_all(&mut store, &options).await;
                (put_all(&store, baseline(), PUTS_IN_FLIGHT).await, migrated)
            }
        });
        let ratio = per_second(migrated) / per_second(put);
        ratios.push(ratio);
        println!(
            "{round:>5} | {put:>12.2?} | {migrated:>12.2?} | {:>9.0} | {:>9.0} | {ratio:.2}",
            per_second(put),
            per_second(migrated)
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!("median ratio migrate/put: {:.2}", ratios[ratios.len() / 2]);
}
