//! kube-apiserver's own storage and watch test cases, ported onto FlowSchemas over HTTPS and
//! run on every backend (the in-memory model, the embedded SQLite store, a real etcd). Each
//! test names the upstream function (and case) it ports, from
//! `k8s.io/apiserver/pkg/storage/testing/store_tests.go` and `watcher_tests.go`; the pods of
//! upstream become FlowSchemas, and the namespaces that keep upstream's cases apart become
//! labels or names (FlowSchemas are cluster-scoped). docs/conformance.md lists every case.

use std::time::Duration;

use apfkit_apiserver::storage::{Backend, Revision};
use serde_json::{Value, json};

use crate::support::{self, FLOW_SCHEMAS, Running};

/// How long a test waits to be sure no further event comes.
const QUIET: Duration = Duration::from_millis(300);

/// A server serving FlowSchemas on `backend`.
async fn start<B: Backend + 'static>(backend: B) -> Running {
    support::start(backend, Duration::from_secs(30)).await
}

apfkit_test_support::on_every_backend!(
    super::start;
    run_test_get,
    run_test_watch_dispatch_bookmark_events,
    watchers_receive_events_on_concurrent_watches_in_same_order,
    run_test_cluster_scoped_watch,
    run_test_watch_from_zero,
    run_test_guaranteed_update,
    run_test_unconditional_delete,
    run_test_conditional_delete,
    run_test_watch,
    run_test_watch_from_non_zero,
    run_test_delete_trigger_watch,
    run_test_watch_delete_event_object_have_latest_rv,
    run_watch_semantics,
    run_watch_semantic_initial_events_extended,
    run_watch_list_match_single,
    run_test_list_continuation_with_filter,
    run_test_list_pagination_rare_object,
    run_test_list_inconsistent_continuation,
    a_filtered_page_reads_on_until_it_holds_limit_objects,
    run_test_watch_context_cancel,
);

/// Sets a FlowSchema's labels to exactly `labels`, creating it when it is not there (as
/// upstream's `GuaranteedUpdate` with `ignoreNotFound`); answers the object written.
async fn put(running: &Running, name: &str, labels: Value) -> Value {
    let path = format!("{FLOW_SCHEMAS}/{name}");
    if running.call("GET", &path, None).await.status == 404 {
        let answer = running
            .call(
                "POST",
                FLOW_SCHEMAS,
                Some(support::flow_schema(name, labels)),
            )
            .await;
        assert_eq!(answer.status, 201, "{}", answer.body);
        return answer.body;
    }
    let answer = running
        .call_as(
            "PATCH",
            &path,
            "application/json-patch+json",
            Some(json!([{"op": "add", "path": "/metadata/labels", "value": labels}])),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.body
}

async fn delete(running: &Running, name: &str) -> Value {
    let answer = running
        .call("DELETE", &format!("{FLOW_SCHEMAS}/{name}"), None)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.body
}

fn resource_version(object: &Value) -> &str {
    object["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
}

/// Compacts the server's store at `revision` (upstream's `Compaction` callback).
async fn compact(running: &Running, revision: &str) {
    (running.compact)(Revision(revision.parse().expect("a revision")))
        .await
        .expect("compacts");
}

/// The current revision, from a list (as upstream's tests read it).
async fn current(running: &Running) -> String {
    let list = running.call("GET", FLOW_SCHEMAS, None).await;
    resource_version(&list.body).to_owned()
}

/// `store_tests.go` `RunTestGet`: a GET at a resourceVersion answers the object as it is now
/// (not older than asked); one ahead of the store is 504 "Too large resource version"; a
/// missing object 404. ("ignore not found" is a storage option with no API form.)
async fn run_test_get(running: &Running) {
    let created = running.create_labelled("foo", json!({})).await;
    let stored = running
        .relabel("foo", json!({"test-annotation": "1"}))
        .await;
    let current_rv = current(running).await;
    let path = format!("{FLOW_SCHEMAS}/foo");
    for (case, rv) in [
        ("get existing", None),
        ("resource version 0", Some("0")),
        ("object created resource version", Some(created.as_str())),
        (
            "current object resource version, match=NotOlderThan",
            Some(current_rv.as_str()),
        ),
        ("latest resource version", Some(stored.as_str())),
    ] {
        let query = rv
            .map(|rv| format!("?resourceVersion={rv}"))
            .unwrap_or_default();
        let answer = running.call("GET", &format!("{path}{query}"), None).await;
        assert_eq!(answer.status, 200, "{case}: {}", answer.body);
        assert_eq!(resource_version(&answer.body), stored, "{case}");
    }
    let too_high = running
        .call("GET", &format!("{path}?resourceVersion={}", i64::MAX), None)
        .await;
    assert_eq!(
        too_high.status, 504,
        "too high resource version: {}",
        too_high.body
    );
    assert_eq!(too_high.body["reason"], "Timeout");
    assert!(
        too_high.body["message"]
            .as_str()
            .unwrap()
            .starts_with("Too large resource version"),
        "{}",
        too_high.body
    );
    let missing = running
        .call("GET", &format!("{FLOW_SCHEMAS}/bar"), None)
        .await;
    assert_eq!(missing.status, 404, "get non-existing");
}

/// `store_tests.go` `RunTestUnconditionalDelete`: an existing object is deleted (and a watch
/// sees it at a newer revision); a missing one is 404.
async fn run_test_unconditional_delete(running: &Running) {
    let stored = running.create_labelled("foo", json!({})).await;
    let mut watch = running
        .watch(&format!("{FLOW_SCHEMAS}?watch=1&resourceVersion={stored}"))
        .await;
    let answer = running
        .call("DELETE", &format!("{FLOW_SCHEMAS}/foo"), None)
        .await;
    assert_eq!(answer.status, 200, "existing key: {}", answer.body);
    let (kind, object) = watch.next().await;
    assert_eq!(kind, "DELETED");
    assert_ne!(
        resource_version(&object),
        stored,
        "the revision of the delete"
    );
    let missing = running
        .call("DELETE", &format!("{FLOW_SCHEMAS}/non-existing"), None)
        .await;
    assert_eq!(missing.status, 404, "non-existing key: {}", missing.body);
    assert_eq!(missing.body["reason"], "NotFound");
}

/// `store_tests.go` `RunTestConditionalDelete`: a delete whose UID precondition matches
/// deletes; one that does not is a 409 conflict in kube-apiserver's words, deleting nothing.
async fn run_test_conditional_delete(running: &Running) {
    for (case, matching) in [("UID match", true), ("UID mismatch", false)] {
        let created = running
            .call(
                "POST",
                FLOW_SCHEMAS,
                Some(support::flow_schema("foo", json!({}))),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
        let uid = created.body["metadata"]["uid"].as_str().unwrap().to_owned();
        let precondition = if matching {
            uid.clone()
        } else {
            "B".to_owned()
        };
        let answer = running
            .call(
                "DELETE",
                &format!("{FLOW_SCHEMAS}/foo"),
                Some(json!({"kind": "DeleteOptions", "apiVersion": "v1",
                            "preconditions": {"uid": precondition}})),
            )
            .await;
        let still_there = running
            .call("GET", &format!("{FLOW_SCHEMAS}/foo"), None)
            .await;
        if matching {
            assert_eq!(answer.status, 200, "{case}: {}", answer.body);
            assert_eq!(still_there.status, 404, "{case}");
        } else {
            assert_eq!(answer.status, 409, "{case}: {}", answer.body);
            assert_eq!(
                answer.body["message"],
                // Through HTTP, kube-apiserver's `rest.BeforeDelete` answers before the
                // store is asked (the reference's words, decision 237); the storage's own
                // ("Precondition failed: UID in precondition: B, ...") only when the object
                // changes in between.
                format!(
                    "Operation cannot be fulfilled on FlowSchema.flowcontrol.apiserver.k8s.io \
                     \"foo\": the UID in the precondition (B) does not match the UID in record \
                     ({uid}). The object might have been deleted and then recreated"
                ),
                "{case}"
            );
            assert_eq!(still_there.status, 200, "{case}");
            delete(running, "foo").await;
        }
    }
}

/// `store_tests.go` `RunTestGuaranteedUpdate`, through PUT: an update of a missing object is
/// 404 (FlowSchemas are not created by an update); a changed object gets a new revision; the
/// same object again, or with its own UID, writes nothing and keeps its revision; another UID
/// is a 409 precondition failure (kube-apiserver takes the body's UID as a precondition).
/// ("ignoreNotFound" and "stale" are storage options with no API form.)
async fn run_test_guaranteed_update(running: &Running) {
    let put = |body: Value| async move {
        running
            .call("PUT", &format!("{FLOW_SCHEMAS}/foo"), Some(body))
            .await
    };
    let missing = running
        .call(
            "PUT",
            &format!("{FLOW_SCHEMAS}/non-existing"),
            Some(support::flow_schema("non-existing", json!({}))),
        )
        .await;
    assert_eq!(missing.status, 404, "non-existing key: {}", missing.body);
    let created = running
        .call(
            "POST",
            FLOW_SCHEMAS,
            Some(support::flow_schema("foo", json!({}))),
        )
        .await
        .body;
    let mut changed = created.clone();
    changed["metadata"]["annotations"] = json!({"version": "2"});
    let existing = put(changed).await;
    assert_eq!(existing.status, 200, "existing key: {}", existing.body);
    assert_ne!(resource_version(&existing.body), resource_version(&created));
    let from = resource_version(&existing.body).to_owned();
    let mut watch = running
        .watch(&format!("{FLOW_SCHEMAS}?watch=1&resourceVersion={from}"))
        .await;
    for case in ["same data", "UID match"] {
        let mut same = existing.body.clone();
        if case == "same data" {
            same["metadata"].as_object_mut().unwrap().remove("uid");
        }
        let answer = put(same).await;
        assert_eq!(answer.status, 200, "{case}: {}", answer.body);
        assert_eq!(
            resource_version(&answer.body),
            from,
            "{case}: no new revision"
        );
    }
    let mut other = existing.body.clone();
    other["metadata"]["uid"] = json!("B");
    let mismatch = put(other).await;
    assert_eq!(mismatch.status, 409, "UID mismatch: {}", mismatch.body);
    let uid = existing.body["metadata"]["uid"].as_str().unwrap();
    assert!(
        mismatch.body["message"]
            .as_str()
            .unwrap()
            .ends_with(&format!(
                "AdditionalErrorMsg: Precondition failed: UID in precondition: B, UID in object meta: {uid}"
            )),
        "{}",
        mismatch.body
    );
    assert_eq!(watch.rest_within(QUIET).await, [], "nothing was written");
}

/// One write of a `RunTestWatch` case: the labels written (`None`: a delete), and the event
/// expected (`None`: none).
type WatchStep = (Option<Value>, Option<&'static str>);

/// A `RunWatchSemantics` case: its name, resourceVersion, allowWatchBookmarks,
/// sendInitialEvents, whether initial `ADDED` events are expected, and whether the
/// initial-events-end bookmark is.
type SemanticsCase = (
    &'static str,
    Option<&'static str>,
    bool,
    Option<bool>,
    bool,
    bool,
);

/// `watcher_tests.go` `RunTestWatch` (`testWatch`, recursive and not): the first write of an
/// object is `ADDED`, an update `MODIFIED`, an update that starts matching the selector
/// `ADDED`, one that stops matching `DELETED` (the old object at the new revision), and
/// objects the selector never matched send nothing. Recursive: a watch of the collection;
/// not recursive: the deprecated watch path of the one object.
async fn run_test_watch(running: &Running) {
    let assigned = json!({"node": "bar"});
    let select = json!({"select": "true"});
    let select_assigned = json!({"select": "true", "node": "bar"});
    let cases: [(&str, &str, Vec<WatchStep>); 5] = [
        ("create-a-key", "", vec![(Some(json!({})), Some("ADDED"))]),
        (
            "key-updated-to-match-predicate",
            "node%3Dbar",
            vec![
                (Some(json!({})), None),
                (Some(assigned.clone()), Some("ADDED")),
            ],
        ),
        (
            "update",
            "",
            vec![
                (Some(json!({})), Some("ADDED")),
                (Some(assigned.clone()), Some("MODIFIED")),
            ],
        ),
        (
            "delete-because-of-being-filtered",
            "node!%3Dbar",
            vec![
                (Some(json!({})), Some("ADDED")),
                (Some(assigned.clone()), Some("DELETED")),
            ],
        ),
        (
            "filtering",
            "select%3Dtrue",
            vec![
                (Some(select.clone()), Some("ADDED")),
                (Some(json!({})), Some("DELETED")),
                (Some(select.clone()), Some("ADDED")),
                (Some(select_assigned), Some("MODIFIED")),
                (None, Some("DELETED")),
            ],
        ),
    ];
    for recursive in [true, false] {
        for (case, labels, steps) in &cases {
            let name = format!("foo-{case}-{recursive}");
            let from = current(running).await;
            let path = if recursive {
                // The namespace that keeps upstream's cases apart is the name here.
                format!(
                    "{FLOW_SCHEMAS}?watch=1&resourceVersion={from}&labelSelector={labels}\
                     &fieldSelector=metadata.name%3D{name}"
                )
            } else {
                format!(
                    "/apis/flowcontrol.apiserver.k8s.io/v1/watch/flowschemas/{name}\
                     ?resourceVersion={from}&labelSelector={labels}"
                )
            };
            let mut watch = running.watch(&path).await;
            // An object of another "namespace" first: its events are not sent.
            put(running, &format!("{name}-bad"), json!({})).await;
            let mut previous: Option<Value> = None;
            for (labels, expected) in steps {
                let written = match labels {
                    Some(labels) => put(running, &name, labels.clone()).await,
                    None => delete(running, &name).await,
                };
                if let Some(expected) = expected {
                    let (kind, object) = watch.next().await;
                    assert_eq!(kind, *expected, "{case} (recursive: {recursive}): {object}");
                    // A DELETED carries the object as it was, at the revision of the write
                    // (an update that stopped matching) or of the delete.
                    let expected_labels = match (*expected, labels) {
                        ("DELETED", _) => {
                            &previous.as_ref().expect("an earlier state")["metadata"]["labels"]
                        }
                        _ => &written["metadata"]["labels"],
                    };
                    assert_eq!(&object["metadata"]["labels"], expected_labels, "{case}");
                    let at: u64 = resource_version(&object).parse().unwrap();
                    match labels {
                        Some(_) => assert_eq!(at.to_string(), resource_version(&written), "{case}"),
                        None => assert_eq!(at.to_string(), current(running).await, "{case}"),
                    }
                }
                if labels.is_some() {
                    previous = Some(written);
                }
            }
            assert_eq!(watch.rest_within(QUIET).await, [], "{case}: no more events");
        }
    }
}

/// `watcher_tests.go` `RunTestWatchFromNonZero`: a watch from an object's revision sees its
/// update as `MODIFIED`.
async fn run_test_watch_from_non_zero(running: &Running) {
    let stored = running.create_labelled("foo", json!({})).await;
    let mut watch = running
        .watch(&format!("{FLOW_SCHEMAS}?watch=1&resourceVersion={stored}"))
        .await;
    let updated = running.relabel("foo", json!({"version": "2"})).await;
    let (kind, object) = watch.next().await;
    assert_eq!(kind, "MODIFIED");
    assert_eq!(resource_version(&object), updated);
    assert_eq!(object["metadata"]["labels"]["version"], "2");
}

/// `watcher_tests.go` `RunTestWatchFromZero`: a watch from "0" sends the object as it is
/// (`ADDED`) and then its changes; after a compaction it still does, and a watch from a
/// revision before the compaction point ends with an `ERROR`, 410 `Expired`. (Upstream watches
/// from the first update's revision, which its etcd harness's compaction write puts behind
/// the point; here the watch starts from the create's.)
async fn run_test_watch_from_zero(running: &Running) {
    let stored = running.create_labelled("foo", json!({})).await;
    let from_zero = format!("{FLOW_SCHEMAS}?watch=1&resourceVersion=0");
    let added = |version: &str| ("ADDED".to_owned(), version.to_owned());
    let mut watch = running.watch(&from_zero).await;
    assert_eq!(watch.next_versioned().await, added(&stored));
    let out = running.relabel("foo", json!({"a": "1"})).await;
    assert_eq!(
        watch.next_versioned().await,
        ("MODIFIED".to_owned(), out.clone())
    );
    let mut again = running.watch(&from_zero).await;
    assert_eq!(again.next_versioned().await, added(&out));

    let new_out = running.relabel("foo", json!({"a": null})).await;
    compact(running, &new_out).await;
    let mut after = running.watch(&from_zero).await;
    assert_eq!(after.next_versioned().await, added(&new_out));
    let mut too_old = running
        .watch(&format!("{FLOW_SCHEMAS}?watch=1&resourceVersion={stored}"))
        .await;
    let (kind, status) = too_old.next().await;
    assert_eq!(kind, "ERROR", "{status}");
    assert_eq!(
        (&status["code"], &status["reason"]),
        (&json!(410), &json!("Expired"))
    );
}

/// A `RunTestClusterScopedWatch` write: the object's name, its labels, and the event expected.
type ScopedStep = (&'static str, Value, Option<&'static str>);

/// `watcher_tests.go` `RunTestClusterScopedWatch`, its six cases: upstream's `spec.nodeName`
/// becomes the label `node` (pods' `basePodUpdated` the label `updated`), and a request for
/// one name a `metadata.name` field selector, as kube-apiserver makes it.
async fn run_test_cluster_scoped_watch(running: &Running) {
    let base = || json!({});
    let updated = || json!({"updated": "true"});
    let assigned = |node: &str| json!({"node": node});
    let cases: Vec<(&str, &str, Vec<ScopedStep>)> = vec![
        (
            "cluster-wide watch, request without name, without field selector",
            "",
            vec![
                ("t1-foo1", base(), Some("ADDED")),
                ("t1-foo1", updated(), Some("MODIFIED")),
                ("t1-foo2", assigned("t1-bar1"), Some("ADDED")),
            ],
        ),
        (
            "cluster-wide watch, request without name, field selector with spec.nodeName",
            "labelSelector=node%3Dt2-bar1",
            vec![
                ("t2-foo1", base(), None),
                ("t2-foo1", assigned("t2-bar1"), Some("ADDED")),
            ],
        ),
        (
            "cluster-wide watch, request without name, field selector with spec.nodeName to \
             filter out watch",
            "labelSelector=node!%3Dt3-bar1",
            vec![
                ("t3-foo1", base(), Some("ADDED")),
                ("t3-foo2", base(), Some("ADDED")),
                ("t3-foo1", updated(), Some("MODIFIED")),
                ("t3-foo1", assigned("t3-bar1"), Some("DELETED")),
            ],
        ),
        (
            "cluster-wide watch, request with name, field selector with metadata.name",
            "fieldSelector=metadata.name%3Dt4-foo1",
            vec![
                ("t4-foo1", base(), Some("ADDED")),
                ("t4-foo2", base(), None),
                ("t4-foo1", updated(), Some("MODIFIED")),
                ("t4-foo2", updated(), None),
            ],
        ),
        (
            "cluster-wide watch, request with name, field selector with metadata.name and \
             spec.nodeName",
            "fieldSelector=metadata.name%3Dt5-foo1&labelSelector=node%3Dt5-bar1",
            vec![
                ("t5-foo1", base(), None),
                ("t5-foo2", base(), None),
                ("t5-foo1", updated(), None),
                ("t5-foo2", updated(), None),
                ("t5-foo1", assigned("t5-bar1"), Some("ADDED")),
            ],
        ),
        (
            "cluster-wide watch, request with name, field selector with metadata.name, and \
             with spec.nodeName to filter out watch",
            "fieldSelector=metadata.name%3Dt6-foo1&labelSelector=node!%3Dt6-bar1",
            vec![
                ("t6-foo1", base(), Some("ADDED")),
                ("t6-foo2", base(), None),
                ("t6-foo1", updated(), Some("MODIFIED")),
                ("t6-foo1", assigned("t6-bar1"), Some("DELETED")),
                ("t6-foo2", assigned("t6-bar1"), None),
            ],
        ),
    ];
    for (case, selector, steps) in cases {
        let listed = running
            .call("GET", &format!("{FLOW_SCHEMAS}?{selector}"), None)
            .await;
        let from = resource_version(&listed.body).to_owned();
        let mut watch = running
            .watch(&format!(
                "{FLOW_SCHEMAS}?watch=1&resourceVersion={from}&{selector}"
            ))
            .await;
        let mut current: std::collections::HashMap<&str, Value> = Default::default();
        for (name, labels, expected) in steps {
            let written = put(running, name, labels).await;
            let before = current.insert(name, written.clone());
            let Some(expected) = expected else { continue };
            let (kind, object) = watch.next().await;
            assert_eq!(
                (kind.as_str(), &object["metadata"]["name"]),
                (expected, &json!(name)),
                "{case}"
            );
            // A DELETED carries the object as it was, at the revision of the write.
            let shown = if expected == "DELETED" {
                before.unwrap()
            } else {
                written.clone()
            };
            assert_eq!(
                object["metadata"]["labels"], shown["metadata"]["labels"],
                "{case}"
            );
            assert_eq!(
                resource_version(&object),
                resource_version(&written),
                "{case}"
            );
        }
        assert_eq!(watch.rest_within(QUIET).await, [], "{case}: no more events");
    }
}

/// test/e2e/apimachinery/watch.go, "should receive events on concurrent watches in same
/// order" ([Conformance]): while a writer creates, updates and deletes objects every 5 ms, 100
/// watches are opened one after another, each at the revision of the event the first watch
/// saw last; every watch then sees the same next event. (Upstream's writer updates a
/// ConfigMap with no change, which is an event for ConfigMaps; a FlowSchema update that
/// changes nothing writes nothing here, as in kube-apiserver, so the writer changes an
/// annotation.)
async fn watchers_receive_events_on_concurrent_watches_in_same_order(running: &Running) {
    const ITERATIONS: usize = 100;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let writer = async {
        let (mut existing, mut next, mut seed) = (Vec::<usize>::new(), 0usize, 7u64);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            // A small linear congruential generator: the same run every time.
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let pick = (seed >> 33) as usize;
            match if existing.is_empty() { 0 } else { pick % 3 } {
                0 => {
                    running
                        .create_labelled(&format!("cm-{next}"), json!({}))
                        .await;
                    existing.push(next);
                    next += 1;
                }
                1 => {
                    let name = format!("cm-{}", existing[pick % existing.len()]);
                    running
                        .relabel(&name, json!({"update": pick.to_string()}))
                        .await;
                }
                _ => {
                    let index = pick % existing.len();
                    delete(running, &format!("cm-{}", existing.remove(index))).await;
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let watchers = async {
        let mut from = current(running).await;
        let mut watches: Vec<support::WatchEvents> = Vec::new();
        for _ in 0..ITERATIONS {
            watches.push(
                running
                    .watch(&format!("{FLOW_SCHEMAS}?watch=1&resourceVersion={from}"))
                    .await,
            );
            let (_, first) = watches[0].next().await;
            from = resource_version(&first).to_owned();
            for watch in &mut watches[1..] {
                let (_, event) = watch.next().await;
                assert_eq!(resource_version(&event), from, "resource version mismatch");
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    };
    tokio::join!(writer, watchers);
}

/// `watcher_tests.go` `RunTestWatchDispatchBookmarkEvents`, as the watch cache behind
/// kube-apiserver passes it: a watch of 3 s that allows bookmarks gets one before it ends
/// (2 s before its deadline, `cacheWatcher.nextBookmarkTime`) while objects it does not
/// select change; one that does not allow them gets none.
async fn run_test_watch_dispatch_bookmark_events(running: &Running) {
    let start = running.create_labelled("foo", json!({})).await;
    for (index, (case, allow)) in [
        ("allowWatchBookmarks=false", false),
        ("allowWatchBookmarks=true", true),
    ]
    .into_iter()
    .enumerate()
    {
        let mut watch = running
            .watch(&format!(
                "{FLOW_SCHEMAS}?watch=1&resourceVersion={start}&timeoutSeconds=3\
                 &allowWatchBookmarks={allow}&fieldSelector=metadata.name%3Dfoo"
            ))
            .await;
        running
            .create_labelled(&format!("other-{index}"), json!({}))
            .await;
        let event = watch.next_within(Duration::from_secs(3)).await;
        match (allow, event) {
            (true, Some(event)) => {
                assert_eq!(event["type"], "BOOKMARK", "{case}: {event}");
                assert_eq!(event["object"]["kind"], "FlowSchema", "{case}");
            }
            (false, None) => {}
            (_, other) => panic!("{case}: {other:?}"),
        }
    }
}

/// `watcher_tests.go` `RunTestWatchContextCancel`: a watch whose client is gone as soon as it
/// starts is closed, not kept open: ten watches opened, then dropped before any event, leave none
/// open.
async fn run_test_watch_context_cancel(running: &Running) {
    let mut watches = Vec::new();
    for _ in 0..10 {
        watches.push(
            running
                .watch(&format!(
                    "{FLOW_SCHEMAS}?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Dnot-existing"
                ))
                .await,
        );
    }
    // A watch counts itself open once its stream starts, just after its headers went out.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while running.server.open_watches() < 10 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the watches are open: {}",
            running.server.open_watches()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(watches);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while running.server.open_watches() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} watches still open 10 s after their clients left",
            running.server.open_watches()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `watcher_tests.go` `RunTestDeleteTriggerWatch`: a delete is `DELETED`.
async fn run_test_delete_trigger_watch(running: &Running) {
    let stored = running.create_labelled("foo", json!({})).await;
    let mut watch = running
        .watch(&format!("{FLOW_SCHEMAS}?watch=1&resourceVersion={stored}"))
        .await;
    delete(running, "foo").await;
    assert_eq!(watch.next().await.0, "DELETED");
}

/// `watcher_tests.go` `RunTestWatchDeleteEventObjectHaveLatestRV`: the object of a `DELETED`
/// event carries the revision of the delete, not its last write's.
async fn run_test_watch_delete_event_object_have_latest_rv(running: &Running) {
    let stored = running.create_labelled("foo", json!({})).await;
    let mut watch = running
        .watch(&format!("{FLOW_SCHEMAS}?watch=1&resourceVersion={stored}"))
        .await;
    delete(running, "foo").await;
    let (kind, object) = watch.next().await;
    assert_eq!(kind, "DELETED");
    let deleted_at = current(running).await;
    assert_ne!(resource_version(&object), stored);
    assert_eq!(resource_version(&object), deleted_at);
}

/// The query of a watch with WatchList's parameters as a test case sets them.
fn watch_query(resource_version: Option<&str>, bookmarks: bool, initial: Option<bool>) -> String {
    let mut query = String::from("watch=1");
    if let Some(rv) = resource_version {
        query.push_str(&format!("&resourceVersion={rv}"));
    }
    if bookmarks {
        query.push_str("&allowWatchBookmarks=true");
    }
    if let Some(initial) = initial {
        query.push_str(&format!(
            "&sendInitialEvents={initial}&resourceVersionMatch=NotOlderThan"
        ));
    }
    query
}

/// Reads a WatchList's initial events: `expected` objects `ADDED` in name order, then, when
/// `end_bookmark`, the bookmark annotated `k8s.io/initial-events-end` at a revision not older
/// than `at_least`; answers that bookmark's revision.
async fn initial_events(
    watch: &mut support::WatchEvents,
    expected: &[String],
    end_bookmark: bool,
    at_least: u64,
) -> Option<u64> {
    for name in expected {
        let (kind, object) = watch.next().await;
        assert_eq!(
            (kind.as_str(), object["metadata"]["name"].as_str()),
            ("ADDED", Some(name.as_str()))
        );
    }
    if !end_bookmark {
        return None;
    }
    let (kind, object) = watch.next().await;
    assert_eq!(kind, "BOOKMARK", "{object}");
    assert_eq!(
        object["metadata"]["annotations"]["k8s.io/initial-events-end"], "true",
        "{object}"
    );
    assert_eq!(object["kind"], "FlowSchema");
    assert_eq!(object["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
    let revision: u64 = resource_version(&object).parse().expect("a number");
    assert!(revision >= at_least, "{revision} < {at_least}");
    Some(revision)
}

/// `watcher_tests.go` `RunWatchSemantics`: every case of its matrix (resourceVersion unset,
/// 0, 1 and current × allowWatchBookmarks × sendInitialEvents, and the two legacy cases),
/// each with its three objects before the watch and two after, kept apart by a label as
/// upstream keeps them apart by namespace.
async fn run_watch_semantics(running: &Running) {
    let cases: [SemanticsCase; 18] = [
        (
            "allowWatchBookmarks=true, sendInitialEvents=true, RV=unset",
            None,
            true,
            Some(true),
            true,
            true,
        ),
        (
            "allowWatchBookmarks=true, sendInitialEvents=false, RV=unset",
            None,
            true,
            Some(false),
            false,
            false,
        ),
        (
            "allowWatchBookmarks=false, sendInitialEvents=false, RV=unset",
            None,
            false,
            Some(false),
            false,
            false,
        ),
        (
            "allowWatchBookmarks=false, sendInitialEvents=true, RV=unset",
            None,
            false,
            Some(true),
            true,
            false,
        ),
        (
            "allowWatchBookmarks=true, sendInitialEvents=true, RV=0",
            Some("0"),
            true,
            Some(true),
            true,
            true,
        ),
        (
            "allowWatchBookmarks=true, sendInitialEvents=false, RV=0",
            Some("0"),
            true,
            Some(false),
            false,
            false,
        ),
        (
            "allowWatchBookmarks=false, sendInitialEvents=false, RV=0",
            Some("0"),
            false,
            Some(false),
            false,
            false,
        ),
        (
            "allowWatchBookmarks=false, sendInitialEvents=true, RV=0",
            Some("0"),
            false,
            Some(true),
            true,
            false,
        ),
        (
            "allowWatchBookmarks=true, sendInitialEvents=true, RV=1",
            Some("1"),
            true,
            Some(true),
            true,
            true,
        ),
        (
            "allowWatchBookmarks=true, sendInitialEvents=false, RV=1",
            Some("1"),
            true,
            Some(false),
            true,
            false,
        ),
        (
            "allowWatchBookmarks=false, sendInitialEvents=false, RV=1",
            Some("1"),
            false,
            Some(false),
            true,
            false,
        ),
        (
            "allowWatchBookmarks=false, sendInitialEvents=true, RV=1",
            Some("1"),
            false,
            Some(true),
            true,
            false,
        ),
        (
            "allowWatchBookmarks=true, sendInitialEvents=true, RV=useCurrentRV",
            Some("current"),
            true,
            Some(true),
            true,
            true,
        ),
        (
            "allowWatchBookmarks=true, sendInitialEvents=false, RV=useCurrentRV",
            Some("current"),
            true,
            Some(false),
            false,
            false,
        ),
        (
            "allowWatchBookmarks=false, sendInitialEvents=false, RV=useCurrentRV",
            Some("current"),
            false,
            Some(false),
            false,
            false,
        ),
        (
            "allowWatchBookmarks=false, sendInitialEvents=true, RV=useCurrentRV",
            Some("current"),
            false,
            Some(true),
            true,
            false,
        ),
        ("legacy, RV=0", Some("0"), false, None, true, false),
        ("legacy, RV=unset", None, false, None, true, false),
    ];
    for (index, (case, rv, bookmarks, initial, added, end)) in cases.into_iter().enumerate() {
        let scenario = format!("ns-{index}");
        let labels = json!({"scenario": scenario});
        let mut created = Vec::new();
        let mut last = String::new();
        for pod in 1..=3 {
            let name = format!("pod-{index:02}-{pod}");
            last = running.create_labelled(&name, labels.clone()).await;
            created.push(name);
        }
        let current_rv = current(running).await;
        let rv = rv.map(|rv| {
            if rv == "current" {
                current_rv.as_str()
            } else {
                rv
            }
        });
        let path = format!(
            "{FLOW_SCHEMAS}?{}&labelSelector=scenario%3D{scenario}",
            watch_query(rv, bookmarks, initial)
        );
        let mut watch = running.watch(&path).await;
        let expected = if added { created.clone() } else { Vec::new() };
        initial_events(&mut watch, &expected, end, last.parse().unwrap()).await;
        let mut after = Vec::new();
        for pod in 4..=5 {
            let name = format!("pod-{index:02}-{pod}");
            running.create_labelled(&name, labels.clone()).await;
            after.push(("ADDED".to_owned(), name));
        }
        let mut seen = Vec::new();
        while seen.len() < after.len() {
            let (kind, object) = watch.next().await;
            if kind != "BOOKMARK" {
                seen.push((
                    kind,
                    object["metadata"]["name"].as_str().unwrap().to_owned(),
                ));
            }
        }
        assert_eq!(seen, after, "{case}");
        assert_eq!(watch.rest_within(QUIET).await, [], "{case}: no more events");
    }
}

/// `watcher_tests.go` `RunWatchSemanticInitialEventsExtended`: the bookmark that ends a
/// WatchList's initial events carries the global revision, advanced here by a write that the
/// watch does not select.
async fn run_watch_semantic_initial_events_extended(running: &Running) {
    let mut initial = Vec::new();
    for pod in 1..=5 {
        let name = format!("pod-{pod}");
        running
            .create_labelled(&name, json!({"ns": "ns-foo"}))
            .await;
        initial.push(name);
    }
    let other = running
        .create_labelled("other-pod-1", json!({"ns": "other-ns-foo"}))
        .await;
    let mut watch = running
        .watch(&format!(
            "{FLOW_SCHEMAS}?{}&labelSelector=ns%3Dns-foo",
            watch_query(None, true, Some(true))
        ))
        .await;
    let end = initial_events(&mut watch, &initial, true, 0).await;
    assert_eq!(end.map(|rv| rv.to_string()), Some(other));
    assert_eq!(watch.rest_within(QUIET).await, [], "no more events");
}

/// `watcher_tests.go` `RunWatchListMatchSingle`: a WatchList with a field selector of one
/// name sends that object, then the bookmark at the global revision.
async fn run_watch_list_match_single(running: &Running) {
    running.create_labelled("pod-1", json!({})).await;
    let mut last = String::new();
    for pod in 2..=5 {
        last = running
            .create_labelled(&format!("pod-{pod}"), json!({}))
            .await;
    }
    let mut watch = running
        .watch(&format!(
            "{FLOW_SCHEMAS}?{}&fieldSelector=metadata.name%3Dpod-1",
            watch_query(None, true, Some(true))
        ))
        .await;
    let end = initial_events(&mut watch, &["pod-1".to_owned()], true, 0).await;
    assert_eq!(end.map(|rv| rv.to_string()), Some(last));
    assert_eq!(watch.rest_within(QUIET).await, [], "no more events");
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap_or_default())
        .collect()
}

/// `store_tests.go` `RunTestListContinuationWithFilter`: a filtered page with `limit=2` reads
/// past the object that does not match and holds two that do, with a continue token; the next
/// page holds the last one, without a token, at the same revision.
async fn run_test_list_continuation_with_filter(running: &Running) {
    // Upstream's foo/bar/foo/foo in namespaces 1–4; `name!=bar` becomes a label here.
    running
        .create_labelled("1-foo", json!({"name": "foo"}))
        .await;
    running
        .create_labelled("2-bar", json!({"name": "bar"}))
        .await;
    running
        .create_labelled("3-foo", json!({"name": "foo"}))
        .await;
    let current_rv = running
        .create_labelled("4-foo", json!({"name": "foo"}))
        .await;
    let first = running
        .call(
            "GET",
            &format!("{FLOW_SCHEMAS}?limit=2&labelSelector=name!%3Dbar"),
            None,
        )
        .await;
    assert_eq!(names(&first.body), ["1-foo", "3-foo"]);
    assert_eq!(resource_version(&first.body), current_rv);
    let token = first.body["metadata"]["continue"]
        .as_str()
        .expect("a continue token");
    // kube-apiserver leaves the count out of a filtered page.
    assert!(first.body["metadata"].get("remainingItemCount").is_none());
    let second = running
        .call(
            "GET",
            &format!("{FLOW_SCHEMAS}?limit=2&labelSelector=name!%3Dbar&continue={token}"),
            None,
        )
        .await;
    assert_eq!(names(&second.body), ["4-foo"]);
    assert!(second.body["metadata"].get("continue").is_none());
    assert_eq!(resource_version(&second.body), current_rv);
}

/// `store_tests.go` `RunTestListPaginationRareObject`: `limit=1` with a field selector that
/// matches the last of 1,000 objects answers it, and no continue token.
async fn run_test_list_pagination_rare_object(running: &Running) {
    for pod in 0..1000 {
        running.create(&format!("pod-{pod:03}"), 0).await;
    }
    let list = running
        .call(
            "GET",
            &format!("{FLOW_SCHEMAS}?limit=1&fieldSelector=metadata.name%3Dpod-999"),
            None,
        )
        .await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(names(&list.body), ["pod-999"]);
    assert!(list.body["metadata"].get("continue").is_none());
}

/// `store_tests.go` `RunTestListInconsistentContinuation`: once the first page's revision is
/// compacted, its continue token is answered 410 `Expired` with kube-apiserver's message and
/// an "inconsistent" continue token, which goes on from the same key at a newer revision; the
/// page after that keeps that revision.
async fn run_test_list_inconsistent_continuation(running: &Running) {
    for name in ["first-bar", "second-bar", "second-foo"] {
        running.create_labelled(name, json!({})).await;
    }
    let first = running
        .call(
            "GET",
            &format!("{FLOW_SCHEMAS}?resourceVersion=0&limit=1"),
            None,
        )
        .await;
    assert_eq!(names(&first.body), ["first-bar"]);
    let from_second = first.body["metadata"]["continue"]
        .as_str()
        .expect("a continue token")
        .to_owned();
    let last = running.relabel("second-foo", json!({"state": "new"})).await;
    let at: u64 = last.parse().unwrap();
    compact(running, &last).await;

    let expired = running
        .call(
            "GET",
            &format!("{FLOW_SCHEMAS}?resourceVersion=0&continue={from_second}"),
            None,
        )
        .await;
    assert_eq!(expired.status, 410, "{}", expired.body);
    assert_eq!(expired.body["reason"], "Expired");
    assert!(
        expired.body["message"]
            .as_str()
            .unwrap()
            .starts_with("The provided continue parameter is too old "),
        "{}",
        expired.body
    );
    let inconsistent = expired.body["metadata"]["continue"]
        .as_str()
        .expect("an inconsistent continue token")
        .to_owned();

    let second = running
        .call(
            "GET",
            &format!("{FLOW_SCHEMAS}?resourceVersion=0&limit=1&continue={inconsistent}"),
            None,
        )
        .await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert_eq!(names(&second.body), ["second-bar"]);
    let resolved = resource_version(&second.body).to_owned();
    assert!(resolved.parse::<u64>().unwrap() >= at);
    let from_third = second.body["metadata"]["continue"]
        .as_str()
        .expect("a continue token")
        .to_owned();
    let third = running
        .call(
            "GET",
            &format!("{FLOW_SCHEMAS}?resourceVersion=0&limit=1&continue={from_third}"),
            None,
        )
        .await;
    assert_eq!(names(&third.body), ["second-foo"]);
    assert_eq!(third.body["items"][0]["metadata"]["labels"]["state"], "new");
    assert!(third.body["metadata"].get("continue").is_none());
    assert_eq!(resource_version(&third.body), resolved);
}

/// Issue 37's second difference, as found: eight matching objects that sort after twenty
/// others, `limit=5` with a selector → the first page holds five of them (kube-apiserver
/// reads on until the page is full), the second the other three and no continue token.
async fn a_filtered_page_reads_on_until_it_holds_limit_objects(running: &Running) {
    for n in 0..20 {
        running
            .create_labelled(&format!("a-{n:02}"), json!({}))
            .await;
    }
    for n in 0..8 {
        running
            .create_labelled(&format!("z-{n:02}"), json!({"team": "mine"}))
            .await;
    }
    let first = running
        .call(
            "GET",
            &format!("{FLOW_SCHEMAS}?labelSelector=team%3Dmine&limit=5"),
            None,
        )
        .await;
    assert_eq!(names(&first.body), ["z-00", "z-01", "z-02", "z-03", "z-04"]);
    let token = first.body["metadata"]["continue"]
        .as_str()
        .expect("a continue token");
    let second = running
        .call(
            "GET",
            &format!("{FLOW_SCHEMAS}?labelSelector=team%3Dmine&limit=5&continue={token}"),
            None,
        )
        .await;
    assert_eq!(names(&second.body), ["z-05", "z-06", "z-07"]);
    assert!(second.body["metadata"].get("continue").is_none());
}

async fn memory_server() -> Running {
    support::start(
        apfkit_apiserver::storage::memory::MemoryBackend::default(),
        Duration::from_secs(30),
    )
    .await
}

/// The deprecated watch paths kube-apiserver still serves (Ruby's kubeclient watches only
/// through them): `/apis/G/V/watch/RESOURCE` is a watch of the collection, and
/// `/apis/G/V/watch/RESOURCE/NAME` one of that object, through a `metadata.name` field
/// selector that another name in the query contradicts (400, kube-apiserver's words).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deprecated_watch_paths_are_served() {
    let running = memory_server().await;
    const WATCH: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/watch/flowschemas";
    let from = running.create_labelled("first", json!({})).await;
    let mut all = running
        .watch(&format!("{WATCH}?resourceVersion={from}"))
        .await;
    let mut one = running
        .watch(&format!("{WATCH}/second?resourceVersion={from}"))
        .await;
    running.create_labelled("other", json!({})).await;
    running.create_labelled("second", json!({})).await;
    assert_eq!(
        all.rest_within(QUIET).await,
        [
            ("ADDED".to_owned(), "other".to_owned()),
            ("ADDED".to_owned(), "second".to_owned())
        ]
    );
    assert_eq!(
        one.rest_within(QUIET).await,
        [("ADDED".to_owned(), "second".to_owned())]
    );
    // A watch from the start sends what is there (the legacy semantics), the one object here.
    let mut named = running.watch(&format!("{WATCH}/first")).await;
    assert_eq!(
        named.rest_within(QUIET).await,
        [("ADDED".to_owned(), "first".to_owned())]
    );
    let mismatch = running
        .call(
            "GET",
            &format!("{WATCH}/second?fieldSelector=metadata.name%3Dfirst"),
            None,
        )
        .await;
    assert_eq!(mismatch.status, 400);
    assert_eq!(
        mismatch.body["message"],
        "fieldSelector metadata.name doesn't match requested name"
    );
    for unserved in [format!("{WATCH}/second/status"), format!("{WATCH}/a/b/c")] {
        assert_eq!(
            running.call("GET", &unserved, None).await.status,
            404,
            "{unserved}"
        );
    }
}

/// kube-apiserver answers 404 for a path it has no route for (`/api/v1/...` here, where no
/// core resource is served, so that `kubectl events` says the resource is not found; a
/// `Status` in the API, plain text outside it and in a group it does not serve) and 405 only
/// for another method on a path it serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_not_served_are_404_and_other_methods_on_served_paths_405() {
    let running = memory_server().await;
    for (method, path, status) in [
        ("GET", "/api/v1/events", 404),
        ("GET", "/api/v1", 404),
        ("GET", "/api/v1/namespaces/default/events", 404),
        ("POST", "/api/v1/namespaces/default/events", 404),
        ("GET", "/apis/events.k8s.io/v1/events", 404),
        ("GET", "/versions", 404),
        ("GET", "/healthzx", 404),
        ("POST", "/version", 405),
        ("POST", "/api", 405),
        // kube-aggregator's `/apis` handler answers every method with the group list.
        ("DELETE", "/apis", 200),
        ("POST", "/apis/flowcontrol.apiserver.k8s.io", 200),
        ("PUT", "/apis/flowcontrol.apiserver.k8s.io/v1", 405),
        ("POST", "/apis/nothing.example.com/v1", 404),
        // Resource paths the resource does not have: a namespace for a cluster-scoped one, a
        // version not served, a subresource it lacks, more parts than a subresource.
        (
            "GET",
            "/apis/flowcontrol.apiserver.k8s.io/v1/namespaces/default/flowschemas",
            404,
        ),
        (
            "GET",
            "/apis/flowcontrol.apiserver.k8s.io/v9/flowschemas",
            404,
        ),
        (
            "GET",
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/x/scale",
            404,
        ),
        (
            "GET",
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/x/status/more",
            404,
        ),
        // kube-apiserver cannot read a special verb with nothing after it: 500.
        ("GET", "/apis/flowcontrol.apiserver.k8s.io/v1/watch", 500),
        (
            "GET",
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas//status",
            400,
        ),
        ("GET", "/api", 200),
        ("GET", "/version", 200),
    ] {
        let answer = running.call(method, path, None).await;
        assert_eq!(answer.status, status, "{method} {path}: {}", answer.body);
        // Outside `/api` and the groups served there is no API: Go's plain-text
        // `404 page not found`, no `Status`.
        let in_the_api = path.starts_with("/api/") || path.starts_with("/apis/flowcontrol");
        if status == 404 && in_the_api {
            assert_eq!(answer.body["reason"], "NotFound", "{method} {path}");
        } else if status == 404 {
            assert_eq!(answer.body, serde_json::Value::Null, "{method} {path}");
        }
    }
}

/// apimachinery's `ValidateListOptions` (internalversion/validation/validation.go): each
/// combination it refuses is 422 `Invalid` about `ListOptions.meta.k8s.io ""`, with its
/// message and causes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_options_kube_apiserver_refuses_are_422_with_its_messages() {
    let running = memory_server().await;
    let prefix = "ListOptions.meta.k8s.io \"\" is invalid: ";
    for (query, message) in [
        (
            "watch=1&sendInitialEvents=true",
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting \
             resourceVersionMatch to NotOlderThan",
        ),
        (
            "watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch \
             unless sendInitialEvents is provided",
        ),
        (
            "watch=1&sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=1",
            "[resourceVersionMatch: Forbidden: sendInitialEvents requires setting \
             resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \
             \"Exact\": supported values: \"NotOlderThan\"]",
        ),
        (
            "sendInitialEvents=true",
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
        ),
        (
            "resourceVersionMatch=Exact",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless \
             resourceVersion is provided",
        ),
        (
            "resourceVersionMatch=Exact&resourceVersion=0",
            "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for \
             resourceVersion \"0\"",
        ),
        (
            "resourceVersionMatch=Newest&resourceVersion=3",
            "resourceVersionMatch: Unsupported value: \"Newest\": supported values: \
             \"Exact\", \"NotOlderThan\", \"\"",
        ),
    ] {
        let answer = running
            .call("GET", &format!("{FLOW_SCHEMAS}?{query}"), None)
            .await;
        assert_eq!(answer.status, 422, "{query}: {}", answer.body);
        assert_eq!(answer.body["reason"], "Invalid");
        assert_eq!(answer.body["details"]["kind"], "ListOptions");
        assert_eq!(answer.body["details"]["group"], "meta.k8s.io");
        assert_eq!(
            answer.body["message"],
            format!("{prefix}{message}"),
            "{query}"
        );
    }
}

/// The request client-go 1.35's reflector sends first (`watchList` in
/// tools/cache/reflector.go, parameters in the order client-go's codec writes them) gets
/// the objects as `ADDED`, the bookmark it waits for, then the writes after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_go_informers_watch_list_request_gets_what_its_reflector_waits_for() {
    let running = memory_server().await;
    for name in ["a", "b"] {
        running.create_labelled(name, json!({})).await;
    }
    let last = running.create_labelled("c", json!({})).await;
    let mut watch = running
        .watch(&format!(
            "{FLOW_SCHEMAS}?allowWatchBookmarks=true&resourceVersion=&resourceVersionMatch=\
             NotOlderThan&sendInitialEvents=true&timeoutSeconds=540&watch=true"
        ))
        .await;
    let names = ["a", "b", "c"].map(str::to_owned);
    let end = initial_events(&mut watch, &names, true, last.parse().unwrap()).await;
    assert_eq!(end.map(|rv| rv.to_string()), Some(last));
    running.create_labelled("d", json!({})).await;
    let (kind, object) = watch.next().await;
    assert_eq!(
        (kind.as_str(), &object["metadata"]["name"]),
        ("ADDED", &json!("d"))
    );
}
