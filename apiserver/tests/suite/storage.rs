//! The storage contract (kube-apiserver's semantics, taken from etcd's), as one suite of cases
//! that every backend runs: the in-memory model and the embedded SQLite store; the etcd
//! backend joins it.

use std::sync::Arc;

use apfkit_apiserver::storage::etcd::EtcdBackend;
use apfkit_apiserver::storage::memory::MemoryBackend;
use apfkit_apiserver::storage::sqlite::SqliteBackend;
use apfkit_apiserver::storage::{Backend, Event, ListOptions, Revision, StoreError};

const A: &[u8] = b"/registry/widgets/a";
const B: &[u8] = b"/registry/widgets/b";
const C: &[u8] = b"/registry/widgets/c";
const OTHER: &[u8] = b"/registry/gadgets/x";

fn under(prefix: &[u8]) -> ListOptions {
    ListOptions {
        prefix: prefix.to_vec(),
        ..ListOptions::default()
    }
}

async fn writes_take_the_next_revision_and_compare_and_swap(store: &impl Backend) {
    // Revisions counted from the store's revision at the start (etcd's first write is 2).
    let base = store.current_revision().await.unwrap().0;
    let r = |n: u64| Revision(base + n);
    let a = store.create(A, b"1".to_vec()).await.unwrap();
    assert_eq!((a.create_revision, a.mod_revision), (r(1), r(1)));
    let b = store.create(B, b"1".to_vec()).await.unwrap();
    assert_eq!(b.mod_revision, r(2));
    assert_eq!(
        store.create(A, b"again".to_vec()).await,
        Err(StoreError::AlreadyExists)
    );
    assert_eq!(store.get(A).await.unwrap(), Some(a.clone()));

    // A stale resourceVersion is a conflict naming both revisions; nothing is written.
    let updated = store
        .update(A, b"2".to_vec(), a.mod_revision)
        .await
        .unwrap();
    assert_eq!(updated.create_revision, r(1));
    assert_eq!(updated.mod_revision, r(3));
    assert_eq!(
        store.update(A, b"3".to_vec(), a.mod_revision).await,
        Err(StoreError::Conflict {
            expected: r(1),
            actual: r(3)
        })
    );
    assert_eq!(store.get(A).await.unwrap().unwrap().value, b"2");
    assert_eq!(
        store.update(C, b"1".to_vec(), r(1)).await,
        Err(StoreError::NotFound)
    );

    // Deletes check the precondition when given, and a new create starts a new life.
    assert!(matches!(
        store.delete(A, Some(r(1))).await,
        Err(StoreError::Conflict { .. })
    ));
    let (previous, deleted_at) = store.delete(A, Some(r(3))).await.unwrap();
    assert_eq!((previous.value.as_slice(), deleted_at), (&b"2"[..], r(4)));
    assert_eq!(store.get(A).await.unwrap(), None);
    assert_eq!(store.delete(A, None).await, Err(StoreError::NotFound));
    let again = store.create(A, b"new".to_vec()).await.unwrap();
    assert_eq!(again.create_revision, r(5));
    assert_eq!(store.current_revision().await.unwrap(), r(5));

    // An update of a value as read: its create revision kept, the read's mod revision the
    // precondition.
    let read = store.get(B).await.unwrap().unwrap();
    let updated = store.update_read(&read, b"2".to_vec()).await.unwrap();
    assert_eq!(
        (updated.create_revision, updated.mod_revision),
        (r(2), r(6))
    );
    assert_eq!(store.get(B).await.unwrap(), Some(updated));
    assert_eq!(
        store.update_read(&read, b"3".to_vec()).await,
        Err(StoreError::Conflict {
            expected: r(2),
            actual: r(6)
        })
    );
}

async fn lists_page_at_one_revision(store: &impl Backend) {
    // Revisions counted from the store's revision at the start (etcd's first write is 2).
    let base = store.current_revision().await.unwrap().0;
    let r = |n: u64| Revision(base + n);
    for key in [A, B, C, OTHER] {
        store.create(key, b"v1".to_vec()).await.unwrap();
    }
    let first = store
        .list(&ListOptions {
            limit: 2,
            count: true,
            ..under(b"/registry/widgets/")
        })
        .await
        .unwrap();
    let keys: Vec<&[u8]> = first.items.iter().map(|kv| kv.key.as_slice()).collect();
    assert_eq!(keys, [A, B]);
    assert_eq!((first.next.as_deref(), first.remaining), (Some(C), 1));
    assert_eq!(first.revision, r(4));
    // Uncounted, the page is the same and says only where the next one starts.
    let uncounted = store
        .list(&ListOptions {
            limit: 2,
            ..under(b"/registry/widgets/")
        })
        .await
        .unwrap();
    assert_eq!(
        (uncounted.items, uncounted.next, uncounted.remaining),
        (first.items.clone(), first.next.clone(), 0)
    );

    // Writes after the first page do not show in the next one: it is read at the same
    // revision, as a continue token is.
    let c = store.get(C).await.unwrap().unwrap();
    store
        .update(C, b"v2".to_vec(), c.mod_revision)
        .await
        .unwrap();
    store.delete(B, None).await.unwrap();
    let second = store
        .list(&ListOptions {
            start: first.next.clone().unwrap(),
            limit: 2,
            revision: Some(first.revision),
            ..under(b"/registry/widgets/")
        })
        .await
        .unwrap();
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.items[0].value, b"v1");
    assert_eq!((second.next, second.remaining), (None, 0));

    // Now: b is gone, c is new.
    let now = store.list(&under(b"/registry/widgets/")).await.unwrap();
    let values: Vec<(&[u8], &[u8])> = now
        .items
        .iter()
        .map(|kv| (kv.key.as_slice(), kv.value.as_slice()))
        .collect();
    assert_eq!(values, [(A, &b"v1"[..]), (C, &b"v2"[..])]);

    assert_eq!(
        store
            .list(&ListOptions {
                revision: Some(r(99)),
                ..under(b"/")
            })
            .await,
        Err(StoreError::FutureRevision {
            requested: r(99),
            current: r(6)
        })
    );
    assert!(matches!(
        store.watch(b"/registry/", r(99)).await,
        Err(StoreError::FutureRevision { requested, current }) if requested == r(99) && current == r(6)
    ));
}

async fn watches_replay_then_follow(store: &impl Backend) {
    // Revisions counted from the store's revision at the start (etcd's first write is 2).
    let base = store.current_revision().await.unwrap().0;
    let r = |n: u64| Revision(base + n);
    store.create(A, b"1".to_vec()).await.unwrap(); // 1
    store.create(OTHER, b"1".to_vec()).await.unwrap(); // 2
    let mut watch = store.watch(b"/registry/widgets/", r(0)).await.unwrap();
    let first = watch.next().await.unwrap().unwrap();
    assert_eq!((first.key(), first.revision()), (A, r(1)));

    store.update(A, b"2".to_vec(), r(1)).await.unwrap(); // 3
    store
        .create(OTHER.to_vec().as_slice(), b"dup".to_vec())
        .await
        .unwrap_err();
    store.delete(A, None).await.unwrap(); // 4
    // An update carries what it replaced (etcd's prev_kv), which selectors are held to.
    let put = watch.next().await.unwrap().unwrap();
    assert_eq!(
        *put,
        Event::Put {
            current: store_value(A, b"2", base + 1, base + 3),
            previous: Some(store_value(A, b"1", base + 1, base + 1)),
        }
    );
    let delete = watch.next().await.unwrap().unwrap();
    assert_eq!(
        *delete,
        Event::Delete {
            previous: store_value(A, b"2", base + 1, base + 3),
            revision: r(4)
        }
    );

    // From a later revision: only what came after it.
    let mut late = store.watch(b"/registry/", r(3)).await.unwrap();
    assert_eq!(late.next().await.unwrap().unwrap().revision(), r(4));
}

fn store_value(
    key: &[u8],
    value: &[u8],
    created: u64,
    modified: u64,
) -> apfkit_apiserver::storage::KeyValue {
    apfkit_apiserver::storage::KeyValue {
        key: key.to_vec(),
        value: value.to_vec(),
        create_revision: Revision(created),
        mod_revision: Revision(modified),
    }
}

async fn compaction_forgets_history(store: &impl Backend) {
    // Revisions counted from the store's revision at the start (etcd's first write is 2).
    let base = store.current_revision().await.unwrap().0;
    let r = |n: u64| Revision(base + n);
    store.create(A, b"1".to_vec()).await.unwrap(); // 1
    store.update(A, b"2".to_vec(), r(1)).await.unwrap(); // 2
    store.create(B, b"1".to_vec()).await.unwrap(); // 3
    store.delete(B, None).await.unwrap(); // 4
    store.update(A, b"3".to_vec(), r(2)).await.unwrap(); // 5
    store.compact(r(3)).await.unwrap();

    let at = |revision| ListOptions {
        revision: Some(r(revision)),
        ..under(b"/registry/widgets/")
    };
    assert_eq!(
        store.list(&at(2)).await,
        Err(StoreError::Compacted {
            requested: r(2),
            compacted: r(3)
        })
    );
    // The compaction point itself is still readable.
    let kept = store.list(&at(3)).await.unwrap();
    let values: Vec<&[u8]> = kept.items.iter().map(|kv| kv.value.as_slice()).collect();
    assert_eq!(values, [&b"2"[..], &b"1"[..]]);
    assert!(matches!(
        store.watch(b"/registry/", r(1)).await,
        Err(StoreError::Compacted { .. })
    ));
    // A watch may start at the compaction point (after = compaction - 1).
    let mut watch = store.watch(b"/registry/", r(2)).await.unwrap();
    assert_eq!(watch.next().await.unwrap().unwrap().revision(), r(3));
    assert_eq!(watch.next().await.unwrap().unwrap().revision(), r(4));
    assert_eq!(watch.next().await.unwrap().unwrap().revision(), r(5));
    assert_eq!(store.get(A).await.unwrap().unwrap().value, b"3");
}

async fn concurrent_compare_and_swap_loses_no_write(store: Arc<impl Backend + 'static>) {
    // Revisions counted from the store's revision at the start (etcd's first write is 2).
    let base = store.current_revision().await.unwrap().0;
    let r = |n: u64| Revision(base + n);
    store.create(A, b"0".to_vec()).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            for _ in 0..50 {
                loop {
                    let current = store.get(A).await.unwrap().unwrap();
                    let n: u64 = std::str::from_utf8(&current.value)
                        .unwrap()
                        .parse()
                        .unwrap();
                    let next = (n + 1).to_string().into_bytes();
                    match store.update(A, next, current.mod_revision).await {
                        Ok(_) => break,
                        Err(StoreError::Conflict { .. }) => tokio::task::yield_now().await,
                        Err(other) => panic!("{other}"),
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let last = store.get(A).await.unwrap().unwrap();
    assert_eq!(last.value, b"400");
    assert_eq!(last.mod_revision, r(401));
}

/// A store on a new etcd (a real one, on loopback in a temporary directory), which runs as
/// long as the guard.
async fn etcd() -> (apfkit_test_support::etcd::Etcd, EtcdBackend) {
    let etcd = apfkit_test_support::etcd::Etcd::start();
    let store = EtcdBackend::connect(std::slice::from_ref(&etcd.endpoint))
        .await
        .expect("connects");
    (etcd, store)
}

/// A SQLite store in a new temporary directory, which lives as long as the guard.
fn sqlite() -> (tempfile::TempDir, SqliteBackend) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteBackend::open(&dir.path().join("state.db")).expect("opens");
    (dir, store)
}

/// A new store is at revision 1 and its first write is 2, as on a new etcd: a list of an
/// empty store then answers `resourceVersion` "1", never "0", which a watch reads as "any"
/// (and would start from the objects as they are by then, missing the writes in between: a
/// kube-rs watcher on a new `apfkit serve` did, under load).
async fn a_new_store_is_at_revision_one(store: &impl Backend) {
    assert_eq!(store.current_revision().await.unwrap(), Revision(1));
    let listed = store.list(&under(b"/")).await.unwrap();
    assert_eq!(listed.revision, Revision(1));
    let created = store.create(b"/first", b"1".to_vec()).await.unwrap();
    assert_eq!(created.mod_revision, Revision(2));
}

macro_rules! suite {
    ($backend:ident, $make:expr) => {
        mod $backend {
            use super::*;

            #[tokio::test]
            async fn a_new_store_is_at_revision_one() {
                let (_guard, store) = $make.await;
                super::a_new_store_is_at_revision_one(&store).await;
            }
            #[tokio::test]
            async fn writes_take_the_next_revision_and_compare_and_swap() {
                let (_guard, store) = $make.await;
                super::writes_take_the_next_revision_and_compare_and_swap(&store).await;
            }
            #[tokio::test]
            async fn lists_page_at_one_revision() {
                let (_guard, store) = $make.await;
                super::lists_page_at_one_revision(&store).await;
            }
            #[tokio::test]
            async fn watches_replay_then_follow() {
                let (_guard, store) = $make.await;
                super::watches_replay_then_follow(&store).await;
            }
            #[tokio::test]
            async fn compaction_forgets_history() {
                let (_guard, store) = $make.await;
                super::compaction_forgets_history(&store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_compare_and_swap_loses_no_write() {
                let (_guard, store) = $make.await;
                super::concurrent_compare_and_swap_loses_no_write(Arc::new(store)).await;
            }
        }
    };
}

suite!(memory, async { ((), MemoryBackend::default()) });
suite!(sqlite, async { sqlite() });
suite!(etcd, etcd());

/// What the embedded store acknowledged is there after it is opened again, and revisions go on
/// from where they were; compaction is remembered.
#[tokio::test]
async fn the_embedded_store_keeps_its_data_and_revisions_across_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    {
        let store = SqliteBackend::open(&path).unwrap();
        // A new store is at revision 1, as a new etcd is: the first write is 2.
        assert_eq!(store.current_revision().await.unwrap(), Revision(1));
        let created = store.create(A, b"1".to_vec()).await.unwrap();
        assert_eq!(created.mod_revision, Revision(2));
        store.update(A, b"2".to_vec(), Revision(2)).await.unwrap();
        store.create(B, b"1".to_vec()).await.unwrap();
        store.delete(B, None).await.unwrap();
        store.compact(Revision(3)).await.unwrap();
    }
    let store = SqliteBackend::open(&path).unwrap();
    assert_eq!(store.current_revision().await.unwrap(), Revision(5));
    assert_eq!(store.get(A).await.unwrap().unwrap().value, b"2");
    assert_eq!(store.get(B).await.unwrap(), None);
    let created = store.create(C, b"1".to_vec()).await.unwrap();
    assert_eq!(created.mod_revision, Revision(6));
    assert!(matches!(
        store
            .list(&ListOptions {
                revision: Some(Revision(2)),
                ..under(b"/")
            })
            .await,
        Err(StoreError::Compacted { .. })
    ));
    // A file that is not a database is an error, not a panic.
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, b"not a database, just bytes ".repeat(200)).unwrap();
    assert!(matches!(
        SqliteBackend::open(&garbage),
        Err(StoreError::Backend(_))
    ));
}

/// The embedded store's files are its owner's only (issue 39): the database, its WAL and its
/// shared memory are created 0600, as etcd keeps its data; others on the machine cannot read
/// the stored objects.
#[cfg(unix)]
#[tokio::test]
async fn the_embedded_stores_files_are_readable_by_their_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SqliteBackend::open(&path).unwrap();
    store.create(A, b"secret".to_vec()).await.unwrap();
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let mode = entry.metadata().unwrap().permissions().mode() & 0o777;
        seen.push((entry.file_name().to_string_lossy().into_owned(), mode));
    }
    seen.sort();
    let names: Vec<&str> = seen.iter().map(|(name, _)| name.as_str()).collect();
    assert!(
        names.contains(&"state.db") && names.contains(&"state.db-wal"),
        "{seen:?}"
    );
    let modes: Vec<String> = seen
        .iter()
        .map(|(name, mode)| format!("{name} {mode:o}"))
        .collect();
    assert!(seen.iter().all(|(_, mode)| *mode == 0o600), "{modes:?}");
}

/// A watcher that never reads is ended once its buffer is full: its events so far, then one
/// error, then nothing; the writes go on.
#[tokio::test]
async fn a_watcher_that_never_reads_is_ended_not_buffered_forever() {
    let store = MemoryBackend::with_watch_buffer(4);
    let mut watch = store.watch(b"/", Revision(0)).await.unwrap();
    for n in 0..100u8 {
        store.create(&[b'/', n], vec![n]).await.unwrap();
    }
    for n in 0..4u8 {
        assert_eq!(watch.next().await.unwrap().unwrap().key(), [b'/', n]);
    }
    assert_eq!(
        watch.next().await.unwrap(),
        Err(StoreError::WatchOverflow { buffer: 4 })
    );
    assert!(watch.next().await.is_none());
    assert_eq!(store.current_revision().await.unwrap(), Revision(101));
}

#[tokio::test]
async fn a_memory_snapshot_holds_the_history_and_goes_its_own_way() {
    let store = MemoryBackend::with_watch_buffer(4);
    store.create(A, b"1".to_vec()).await.unwrap(); // 2
    store.update(A, b"2".to_vec(), Revision(2)).await.unwrap(); // 3
    store.create(B, b"1".to_vec()).await.unwrap(); // 4
    let mut watching_store = store.watch(b"/registry/", Revision(4)).await.unwrap();
    let copy = store.snapshot();
    assert_eq!(copy.current_revision().await.unwrap(), Revision(4));
    let at = |revision| ListOptions {
        revision: Some(Revision(revision)),
        ..under(b"/registry/widgets/")
    };
    assert_eq!(
        copy.list(&at(2)).await.unwrap(),
        store.list(&at(2)).await.unwrap()
    );
    assert_eq!(
        copy.list(&at(4)).await.unwrap(),
        store.list(&at(4)).await.unwrap()
    );
    // The copy's watches replay the history it was given.
    let mut watching_copy = copy.watch(b"/registry/", Revision(2)).await.unwrap();
    assert_eq!(
        watching_copy.next().await.unwrap().unwrap().revision(),
        Revision(3)
    );
    assert_eq!(
        watching_copy.next().await.unwrap().unwrap().revision(),
        Revision(4)
    );

    // Each write goes to one store alone, at the next revision of each.
    copy.create(C, b"copy".to_vec()).await.unwrap();
    store.create(OTHER, b"original".to_vec()).await.unwrap();
    assert_eq!(copy.get(OTHER).await.unwrap(), None);
    assert_eq!(store.get(C).await.unwrap(), None);
    assert_eq!(
        copy.get(C).await.unwrap().unwrap().mod_revision,
        Revision(5)
    );
    let next = watching_copy.next().await.unwrap().unwrap();
    assert_eq!((next.key(), next.revision()), (C, Revision(5)));
    let next = watching_store.next().await.unwrap().unwrap();
    assert_eq!((next.key(), next.revision()), (OTHER, Revision(5)));
}

/// One step of a random history.
#[derive(Debug, Clone)]
enum Op {
    Create(u8, u8),
    Update(u8, u8, u64),
    Delete(u8, Option<u64>),
    Get(u8),
    /// Prefix, start (a key, used when under the prefix), limit, revision, count.
    List(Vec<u8>, u8, usize, Option<u64>, bool),
    Compact(u64),
    Watch(Vec<u8>, u64),
}

/// Keys that sort and prefix awkwardly: empty-looking, a zero byte, 0xff bytes.
fn key_of(n: u8) -> Vec<u8> {
    match n % 6 {
        0 => b"/a".to_vec(),
        1 => b"/a/b".to_vec(),
        2 => vec![b'/', 0],
        3 => vec![b'/', 0xff],
        4 => vec![b'/', 0xff, 0xff],
        _ => b"/z".to_vec(),
    }
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let prefix = prop_oneof![
        Just(Vec::new()),
        Just(b"/".to_vec()),
        Just(b"/a".to_vec()),
        Just(vec![b'/', 0xff]),
    ];
    prop_oneof![
        (any::<u8>(), any::<u8>()).prop_map(|(k, v)| Op::Create(k, v)),
        (any::<u8>(), any::<u8>(), 0..12u64).prop_map(|(k, v, r)| Op::Update(k, v, r)),
        (any::<u8>(), proptest::option::of(0..12u64)).prop_map(|(k, r)| Op::Delete(k, r)),
        any::<u8>().prop_map(Op::Get),
        (
            prefix.clone(),
            any::<u8>(),
            0..4usize,
            proptest::option::of(0..12u64),
            any::<bool>()
        )
            .prop_map(|(p, s, l, r, c)| Op::List(p, s, l, r, c)),
        (0..12u64).prop_map(Op::Compact),
        (prefix, 0..12u64).prop_map(|(p, r)| Op::Watch(p, r)),
    ]
}

/// What one step answered, comparable between backends.
async fn apply(store: &impl Backend, op: &Op) -> String {
    match op {
        Op::Create(k, v) => format!("{:?}", store.create(&key_of(*k), vec![*v]).await),
        Op::Update(k, v, r) => format!(
            "{:?}",
            store.update(&key_of(*k), vec![*v], Revision(*r)).await
        ),
        Op::Delete(k, r) => format!("{:?}", store.delete(&key_of(*k), r.map(Revision)).await),
        Op::Get(k) => format!("{:?}", store.get(&key_of(*k)).await),
        Op::List(prefix, start, limit, revision, count) => {
            // A start key is where a continue token points: under the prefix.
            let start = Some(key_of(*start))
                .filter(|key| key.starts_with(prefix))
                .unwrap_or_default();
            format!(
                "{:?}",
                store
                    .list(&ListOptions {
                        prefix: prefix.clone(),
                        start,
                        limit: *limit,
                        revision: revision.map(Revision),
                        count: *count,
                    })
                    .await
            )
        }
        Op::Compact(r) => format!("{:?}", store.compact(Revision(*r)).await),
        Op::Watch(prefix, after) => match store.watch(prefix, Revision(*after)).await {
            Err(error) => format!("{error:?}"),
            Ok(mut watch) => {
                // The replayed events: everything after `after` that was written so far.
                let now = store.current_revision().await.unwrap();
                let mut seen = Vec::new();
                if now.0 > *after {
                    while let Ok(Some(event)) =
                        tokio::time::timeout(std::time::Duration::from_millis(20), watch.next())
                            .await
                    {
                        seen.push(event);
                    }
                }
                format!("{seen:?}")
            }
        },
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// The embedded store answers every step of a random history as the model does: the same
    /// values, revisions, pages, errors and watch replays, with keys holding zero and 0xff
    /// bytes and prefixes with no end key.
    #[test]
    fn the_embedded_store_answers_as_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let model = MemoryBackend::default();
            let (_guard, embedded) = sqlite();
            for (step, op) in ops.iter().enumerate() {
                let expected = apply(&model, op).await;
                let actual = apply(&embedded, op).await;
                assert_eq!(actual, expected, "step {step}: {op:?}");
            }
        });
    }
}

/// Issue 37's tenth difference: the embedded store compacts as kine does (a round every
/// interval compacts to the revision the round before saw), and under a steady load of
/// updates its files stay bounded: 25,000 updates of one object, a round every 250, leave
/// the database and its write-ahead log under 8 MiB (measured: 0.4 MiB and the 4 MiB the
/// log reaches before SQLite checkpoints it; without compaction, 17 MiB and 4 MiB). History after the last compaction point
/// stays readable; before it, a read is refused as etcd refuses it.
#[tokio::test]
async fn the_embedded_store_stays_bounded_under_steady_updates_with_compaction() {
    use apfkit_apiserver::storage::compaction::Compactor;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SqliteBackend::open(&path).unwrap();
    let mut compactor = Compactor::new();
    let value = |n: u32| format!("{n:0256}").into_bytes();
    let mut revision = store.create(A, value(0)).await.unwrap().mod_revision;
    let mut compacted = Vec::new();
    for n in 1..=25_000u32 {
        revision = store
            .update(A, value(n), revision)
            .await
            .unwrap()
            .mod_revision;
        if n % 250 == 0
            && let Some(at) = compactor.round(&store).await.unwrap()
        {
            compacted.push(at);
        }
    }
    assert_eq!(
        compacted.len(),
        99,
        "a round every 250 updates, the first only notes"
    );
    let size = |name: &str| std::fs::metadata(dir.path().join(name)).map_or(0, |m| m.len());
    let total = size("state.db") + size("state.db-wal");
    assert!(total < 8 << 20, "{total} bytes on disk");
    assert_eq!(store.get(A).await.unwrap().unwrap().value, value(25_000));
    let last = *compacted.last().unwrap();
    let page = |at: u64| ListOptions {
        revision: Some(Revision(at)),
        ..under(b"/registry/")
    };
    assert!(store.list(&page(last.0)).await.is_ok());
    assert!(matches!(
        store.list(&page(last.0 - 1)).await,
        Err(StoreError::Compacted { .. })
    ));
}
