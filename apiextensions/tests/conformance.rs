//! kube-apiserver's own storage and watch cases that need a namespaced resource, ported onto
//! a CustomResourceDefinition of `pods.example.com` (namespaced, with `spec.nodeName`
//! selectable, as upstream's example pods are) and run through the server's router on every
//! backend (the in-memory model, the embedded SQLite store, a real etcd). Each test names the
//! upstream function it ports, from `k8s.io/apiserver/pkg/storage/testing/store_tests.go` and
//! `watcher_tests.go`, and keeps upstream's case names; upstream's storage prefixes become
//! the API's paths (`/pods/` every namespace, `/pods/first/` the namespace `first`), and its
//! continue keys are relative to them as the API's are. docs/conformance.md lists every case.

mod support;

use std::sync::Arc;

use apfkit_apiextensions::{CustomResources, NoKind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use apfkit_apiserver::storage::{
    Backend, KeyValue, ListOptions, ListPage, Revision, StoreError, Watch,
};
use base64::Engine as _;
use serde_json::{Value, json};

use support::{Server, request, request_as};

/// The pods of every namespace.
const PODS: &str = "/apis/example.com/v1/pods";

fn pods_in(namespace: &str) -> String {
    format!("/apis/example.com/v1/namespaces/{namespace}/pods")
}

/// A server of the pods CRD on one backend.
struct Running<B: Backend + 'static> {
    server: Arc<Server>,
    _custom: Arc<CustomResources<NoKind>>,
    /// The server's backend, shared with it, for the tests that reach past the server.
    backend: Arc<Interfering<B>>,
}

impl<B: Backend + 'static> Running<B> {
    fn backend(&self) -> &Interfering<B> {
        &self.backend
    }
}

async fn start<B: Backend + 'static>(backend: B) -> Running<B> {
    let backend = Arc::new(Interfering::new(backend));
    let (server, custom) = support::serve(backend.clone()).await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "pods.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Pod", "plural": "pods"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"nodeName": {"type": "string"}}},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                }}},
                "selectableFields": [{"jsonPath": ".spec.nodeName"}],
            }],
        },
    });
    custom.apply(&crd).await.expect("the pods CRD");
    custom.sync().await.expect("served");
    Running {
        server,
        _custom: custom,
        backend,
    }
}

/// A backend that meddles from inside storage, as upstream's tests do with a value
/// transformer or a validation callback: while `reproduce` is set, each object a list reads
/// is followed by a new pod in `default` (`reproducingTransformer`); the next delete of the
/// key in `conflict_on_delete` is preceded by an update of it that adds the label foo=bar
/// (`RunTestDeleteWithConflict`'s validation callback). Pods are stored as JSON.
struct Interfering<B> {
    inner: B,
    reproduce: AtomicBool,
    reproduced: AtomicUsize,
    conflict_on_delete: Mutex<Option<Vec<u8>>>,
}

impl<B> Interfering<B> {
    fn new(inner: B) -> Self {
        Interfering {
            inner,
            reproduce: AtomicBool::new(false),
            reproduced: AtomicUsize::new(0),
            conflict_on_delete: Mutex::new(None),
        }
    }
}

impl<B: Backend> Backend for Interfering<B> {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        self.inner.current_revision().await
    }

    async fn get(&self, key: &[u8]) -> Result<Option<KeyValue>, StoreError> {
        self.inner.get(key).await
    }

    async fn list(&self, options: &ListOptions) -> Result<ListPage, StoreError> {
        let page = self.inner.list(options).await?;
        if self.reproduce.load(Ordering::SeqCst) {
            for _ in &page.items {
                // upstream's nextPod: pod-<n>, labelled even=true|false.
                let index = self.reproduced.fetch_add(1, Ordering::SeqCst) + 5;
                let pod = json!({
                    "apiVersion": "example.com/v1", "kind": "Pod",
                    "metadata": {
                        "name": format!("pod-{index}"), "namespace": "default",
                        "uid": format!("00000000-0000-0000-0000-{index:012}"),
                        "labels": {"even": index.is_multiple_of(2).to_string()},
                    },
                });
                let key = format!("/registry/example.com/pods/default/pod-{index}");
                let value = serde_json::to_vec(&pod).unwrap();
                self.inner.create(key.as_bytes(), value).await?;
            }
        }
        Ok(page)
    }

    async fn create(&self, key: &[u8], value: Vec<u8>) -> Result<KeyValue, StoreError> {
        self.inner.create(key, value).await
    }

    async fn update(
        &self,
        key: &[u8],
        value: Vec<u8>,
        expected: Revision,
    ) -> Result<KeyValue, StoreError> {
        self.inner.update(key, value, expected).await
    }

    async fn delete(
        &self,
        key: &[u8],
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StoreError> {
        let conflicting = {
            let mut armed = self.conflict_on_delete.lock().unwrap();
            armed.take_if(|armed| armed.as_slice() == key).is_some()
        };
        if conflicting && let Some(current) = self.inner.get(key).await? {
            // A value that does not read becomes a pod that does, as upstream's test stops
            // its failing codec before it updates.
            let mut pod: Value = serde_json::from_slice(&current.value).unwrap_or_else(|_| {
                let text = String::from_utf8_lossy(key);
                let mut parts = text.rsplit('/');
                let name = parts.next().unwrap_or_default();
                let namespace = parts.next().unwrap_or_default();
                Shape::Base.pod(namespace, name)
            });
            pod["metadata"]["labels"] = json!({"foo": "bar"});
            let value = serde_json::to_vec(&pod).unwrap();
            self.inner.update(key, value, current.mod_revision).await?;
        }
        self.inner.delete(key, expected).await
    }

    async fn watch(&self, prefix: &[u8], after: Revision) -> Result<Watch, StoreError> {
        self.inner.watch(prefix, after).await
    }

    async fn compact(&self, revision: Revision) -> Result<(), StoreError> {
        self.inner.compact(revision).await
    }
}

apfkit_test_support::on_every_backend!(
    super::start;
    run_test_list,
    run_test_get_list_non_recursive,
    run_test_namespace_scoped_list,
    run_test_namespace_scoped_watch,
    run_test_list_continuation,
    run_test_list_paging,
    run_test_list_resource_version_match,
    run_test_consistent_list,
    run_test_compact_revision,
    run_test_delete_with_conflict,
    run_test_delayed_watch_delivery,
    run_test_watch_error,
    run_watch_error_is_blocking_further_events,
    run_test_optional_watch_bookmarks_with_correct_resource_version,
    run_test_transformation_failure,
    run_test_get_list_with_error_aggregation,
    run_test_delete_expected_transform_or_decode_error,
    run_test_delete_with_suggestion_and_missing_expected_transform_or_decode_error,
    run_test_delete_with_conflict_and_missing_expected_transform_or_decode_error,
    run_test_watch_with_unsafe_delete,
);

/// What a case compares of a pod: enough to tell each stored version apart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
struct Pod {
    namespace: String,
    name: String,
    rv: String,
    node_name: String,
}

impl Pod {
    fn of(object: &Value) -> Pod {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        Pod {
            namespace: text(&object["metadata"]["namespace"]),
            name: text(&object["metadata"]["name"]),
            rv: text(&object["metadata"]["resourceVersion"]),
            node_name: text(&object["spec"]["nodeName"]),
        }
    }
}

/// Upstream's pod shapes (watcher_tests.go): `baseNamespacedPod`, `baseNamespacedPodUpdated`
/// (status phase `Running`) and `baseNamespacedPodAssigned` (a `spec.nodeName`).
#[derive(Debug, Clone, Copy)]
enum Shape {
    Base,
    Updated,
    Assigned(&'static str),
}

impl Shape {
    fn pod(self, namespace: &str, name: &str) -> Value {
        let mut pod = json!({
            "apiVersion": "example.com/v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace}, "spec": {},
        });
        match self {
            Shape::Base => {}
            Shape::Updated => pod["status"] = json!({"phase": "Running"}),
            Shape::Assigned(node) => pod["spec"]["nodeName"] = json!(node),
        }
        pod
    }
}

/// Writes a pod as `shape` says, creating it or replacing what is there (upstream's
/// `GuaranteedUpdate` with `ignoreNotFound`); answers the object written.
async fn put<B: Backend>(running: &Running<B>, namespace: &str, name: &str, shape: Shape) -> Value {
    let path = format!("{}/{name}", pods_in(namespace));
    let mut pod = shape.pod(namespace, name);
    let (code, current) = request(&running.server, "GET", &path, Vec::new()).await;
    let (method, path, created) = match code {
        404 => ("POST", pods_in(namespace), 201),
        _ => {
            pod["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
            ("PUT", path, 200)
        }
    };
    let body = serde_json::to_vec(&pod).unwrap();
    let (code, written) = request(&running.server, method, &path, body).await;
    assert_eq!(code, created, "{method} {namespace}/{name}: {written}");
    written
}

/// A revision written as a resourceVersion, as a number.
fn number(resource_version: &str) -> i64 {
    resource_version.parse().expect("a numeric resourceVersion")
}

/// upstream's `EncodeContinue`: the key relative to the listed prefix, and the revision.
fn token(start: &str, revision: i64) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": start});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

/// A continue token's fields (upstream's `ExpectContinueMatches` compares them decoded).
fn decoded(token: &str) -> Value {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .expect("raw URL-safe base64");
    serde_json::from_slice(&bytes).expect("a JSON continue token")
}

/// A list's status, its body, and its pods.
async fn list<B: Backend>(running: &Running<B>, path: &str) -> (u16, Value, Vec<Pod>) {
    let (code, body) = request(&running.server, "GET", path, Vec::new()).await;
    let pods = body["items"]
        .as_array()
        .map(|items| items.iter().map(Pod::of).collect())
        .unwrap_or_default();
    (code, body, pods)
}

/// Writes a key outside every resource, as upstream's `IncreaseRVFunc`.
async fn increase_rv<B: Backend>(running: &Running<B>, key: &str) {
    running
        .backend()
        .create(key.as_bytes(), b"x".to_vec())
        .await
        .expect("written");
}

/// What upstream's `seedMultiLevelData` leaves, and the revisions `RunTestList` takes from it.
struct Seed {
    initial_rv: String,
    created: Vec<Pod>,
    updated: Pod,
    list_rv: String,
    continue_rv: i64,
    current_rv: String,
    second_continuation: String,
}

/// `store_tests.go` `seedMultiLevelData`: first/bar, second/{bar,foo,baz}, third/{barfoo,foo}
/// created in that order but baz last; first/bar's `spec.nodeName` then set to `fakeNode`, and
/// second/baz deleted.
async fn seed_multi_level_data<B: Backend>(running: &Running<B>) -> (String, Vec<Pod>, Pod) {
    let (code, initial, _) = list(running, PODS).await;
    assert_eq!(code, 200, "{initial}");
    let initial_rv = initial["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .to_owned();
    let mut created = Vec::new();
    for (namespace, name) in [
        ("first", "bar"),
        ("second", "bar"),
        ("second", "foo"),
        ("third", "barfoo"),
        ("third", "foo"),
        ("second", "baz"),
    ] {
        created.push(Pod::of(&put(running, namespace, name, Shape::Base).await));
    }
    let (code, updated) = request_as(
        &running.server,
        "PATCH",
        &format!("{}/bar", pods_in("first")),
        "application/merge-patch+json",
        br#"{"spec":{"nodeName":"fakeNode"}}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 200, "{updated}");
    let path = format!("{}/baz", pods_in("second"));
    let (code, deleted) = request(&running.server, "DELETE", &path, Vec::new()).await;
    assert_eq!(code, 200, "{deleted}");
    (initial_rv, created, Pod::of(&updated))
}

/// One of `RunTestList`'s cases, with upstream's field names.
#[derive(Default)]
struct Case {
    name: &'static str,
    /// `None`: upstream's prefix `/pods/`, every namespace.
    namespace: Option<&'static str>,
    rv: Option<String>,
    rv_match: &'static str,
    field: Option<&'static str>,
    limit: usize,
    continue_from: Option<String>,
    expected_out: Vec<Pod>,
    expected_alternatives: Option<Vec<Vec<Pod>>>,
    expect_continue: bool,
    expect_continue_exact: Option<String>,
    expected_remaining_item_count: Option<i64>,
    expect_error: bool,
    expect_rv_too_large: bool,
    expect_rv_too_old: bool,
    expect_continue_too_old: bool,
    expect_rv: Option<String>,
    expect_rv_not_older_than: Option<String>,
}

impl Case {
    fn path(&self) -> String {
        let mut query = Vec::new();
        if let Some(rv) = self.rv.as_deref().filter(|rv| !rv.is_empty()) {
            query.push(format!("resourceVersion={rv}"));
        }
        if !self.rv_match.is_empty() {
            query.push(format!("resourceVersionMatch={}", self.rv_match));
        }
        if let Some(field) = self.field {
            let encoded = field.replace('!', "%21").replace('=', "%3D");
            query.push(format!("fieldSelector={encoded}"));
        }
        if self.limit > 0 {
            query.push(format!("limit={}", self.limit));
        }
        if let Some(token) = &self.continue_from {
            query.push(format!("continue={token}"));
        }
        let base = self.namespace.map_or_else(|| PODS.to_owned(), pods_in);
        format!("{base}?{}", query.join("&"))
    }

    /// What differs from upstream's expectations, in words; empty when nothing does.
    fn check(&self, code: u16, body: &Value, pods: Vec<Pod>) -> Vec<String> {
        let message = body["message"].as_str().unwrap_or_default();
        let status = |expected: u16, words: &str| {
            if code == expected && message.contains(words) {
                Vec::new()
            } else {
                vec![format!("want {expected} {words:?}, got {code}: {body}")]
            }
        };
        if self.expect_rv_too_large {
            return status(504, "Too large resource version");
        }
        if self.expect_rv_too_old {
            return status(410, "The resourceVersion for the provided list is too old");
        }
        if self.expect_continue_too_old {
            return status(
                410,
                "The provided continue parameter is too old to display a consistent list result",
            );
        }
        if self.expect_error {
            // Upstream's storage errors reach a client as 400 (a malformed value or token)
            // or 422 (list options apimachinery's ValidateListOptions refuses).
            return match code {
                400 | 422 if body["kind"] == "Status" => Vec::new(),
                _ => vec![format!("want an error, got {code}: {body}")],
            };
        }
        if code != 200 {
            return vec![format!("GetList failed: {code}: {body}")];
        }
        let mut wrong = Vec::new();
        let metadata = &body["metadata"];
        let token = metadata["continue"].as_str().unwrap_or_default();
        if token.is_empty() == self.expect_continue {
            wrong.push(format!("unexpected continue token: {token:?}"));
        }
        if let Some(exact) = &self.expect_continue_exact
            && (token.is_empty() || decoded(exact) != decoded(token))
        {
            wrong.push(format!(
                "continue token {} is not {}",
                if token.is_empty() {
                    Value::Null
                } else {
                    decoded(token)
                },
                decoded(exact)
            ));
        }
        let rv = metadata["resourceVersion"].as_str().unwrap_or_default();
        if let Some(expected) = &self.expect_rv
            && expected != rv
        {
            wrong.push(format!(
                "resourceVersion in list response want={expected}, got={rv}"
            ));
        }
        if let Some(floor) = &self.expect_rv_not_older_than
            && number(rv) < number(floor)
        {
            wrong.push(format!("resourceVersion {rv} is older than {floor}"));
        }
        match &self.expected_alternatives {
            None => {
                let mut expected = self.expected_out.clone();
                expected.sort();
                if expected != pods {
                    wrong.push(format!(
                        "incorrect list pods: want {expected:?}, got {pods:?}"
                    ));
                }
            }
            Some(alternatives) => {
                if !alternatives.contains(&pods) {
                    wrong.push(format!(
                        "incorrect list pods: want one of {alternatives:?}, got {pods:?}"
                    ));
                }
            }
        }
        let remaining = metadata["remainingItemCount"].as_i64();
        if remaining != self.expected_remaining_item_count {
            wrong.push(format!(
                "unexpected remainingItemCount: want {:?}, got {remaining:?}",
                self.expected_remaining_item_count
            ));
        }
        wrong
    }
}

/// `store_tests.go` `RunTestList`: its 86 named cases over the seeded pods (list at a
/// resourceVersion, with `Exact` and `NotOlderThan`, limits, continue tokens made by the
/// test, field selectors on `metadata.name` and `spec.nodeName`), after a compaction at the
/// first create's revision and one more write. The watch cache's request recording has no
/// counterpart (there is no watch cache), so every case runs, those upstream skips for the
/// watch cache too.
async fn run_test_list<B: Backend>(running: &Running<B>) {
    let (initial_rv, created, updated) = seed_multi_level_data(running).await;
    let (code, second, _) = list(running, &pods_in("second")).await;
    assert_eq!(code, 200, "{second}");
    let list_rv = second["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .to_owned();
    let continue_rv = number(&list_rv);
    running
        .backend()
        .compact(Revision(number(&created[0].rv) as u64))
        .await
        .expect("compacts");
    increase_rv(running, "/registry/increase-rv").await;
    let s = Seed {
        initial_rv,
        created,
        updated,
        second_continuation: token("foo", continue_rv),
        list_rv,
        continue_rv,
        current_rv: (continue_rv + 1).to_string(),
    };
    let mut failures = Vec::new();
    for case in cases(&s) {
        let path = case.path();
        let (code, body, pods) = list(running, &path).await;
        for wrong in case.check(code, &body, pods) {
            failures.push(format!("{}: {path}: {wrong}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `store_tests.go` `RunTestGetListNonRecursive`: a list of one key, which the API asks for
/// with a `metadata.name` field selector (kube-apiserver's registry then lists that key
/// alone), at each kind of resourceVersion; another field selector may still filter it out.
async fn run_test_get_list_non_recursive<B: Backend>(running: &Running<B>) {
    let previous = Pod::of(&put(running, "test-ns", "foo", Shape::Base).await);
    let (code, updated) = request_as(
        &running.server,
        "PATCH",
        &format!("{}/foo", pods_in("test-ns")),
        "application/merge-patch+json",
        br#"{"metadata":{"annotations":{"version":"second"}}}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 200, "{updated}");
    let stored = Pod::of(&updated);
    increase_rv(running, "/registry/increase-rv").await;
    let (prev_rv, obj_rv) = (previous.rv.clone(), stored.rv.clone());
    let key = Some("metadata.name=foo");
    let cases = vec![
        Case {
            name: "existing key",
            field: key,
            expected_out: vec![stored.clone()],
            ..Case::default()
        },
        Case {
            name: "existing key, resourceVersion=0",
            field: key,
            rv: Some("0".into()),
            expected_alternatives: Some(vec![vec![], vec![previous.clone()], vec![stored.clone()]]),
            ..Case::default()
        },
        Case {
            name: "existing key, resourceVersion=0, resourceVersionMatch=notOlderThan",
            field: key,
            rv: Some("0".into()),
            rv_match: "NotOlderThan",
            expected_alternatives: Some(vec![vec![], vec![previous.clone()], vec![stored.clone()]]),
            ..Case::default()
        },
        Case {
            name: "existing key, resourceVersion=current",
            field: key,
            rv: Some(obj_rv.clone()),
            expected_out: vec![stored.clone()],
            ..Case::default()
        },
        Case {
            name: "existing key, resourceVersion=current, resourceVersionMatch=notOlderThan",
            field: key,
            rv: Some(obj_rv.clone()),
            rv_match: "NotOlderThan",
            expected_out: vec![stored.clone()],
            ..Case::default()
        },
        Case {
            name: "existing key, resourceVersion=previous, resourceVersionMatch=notOlderThan",
            field: key,
            rv: Some(prev_rv.clone()),
            rv_match: "NotOlderThan",
            expected_alternatives: Some(vec![vec![previous.clone()], vec![stored.clone()]]),
            ..Case::default()
        },
        Case {
            name: "existing key, resourceVersion=current, resourceVersionMatch=exact",
            field: key,
            rv: Some(obj_rv.clone()),
            rv_match: "Exact",
            expected_out: vec![stored.clone()],
            ..Case::default()
        },
        Case {
            name: "existing key, resourceVersion=previous, resourceVersionMatch=exact",
            field: key,
            rv: Some(prev_rv),
            rv_match: "Exact",
            expected_out: vec![previous.clone()],
            ..Case::default()
        },
        Case {
            name: "existing key, resourceVersion=too high",
            field: key,
            rv: Some(i64::MAX.to_string()),
            expect_rv_too_large: true,
            ..Case::default()
        },
        Case {
            name: "non-existing key",
            field: Some("metadata.name=non-existing"),
            ..Case::default()
        },
        Case {
            name: "with matching pod name",
            field: Some("metadata.name=non-existing,metadata.name!=foo"),
            ..Case::default()
        },
        Case {
            name: "existing key, resourceVersion=current, with not matching pod name",
            field: Some("metadata.name=foo,metadata.name!=foo"),
            rv: Some(obj_rv),
            ..Case::default()
        },
    ];
    let mut failures = Vec::new();
    for case in cases {
        let case = Case {
            namespace: Some("test-ns"),
            ..case
        };
        let path = case.path();
        let (code, body, pods) = list(running, &path).await;
        if code == 200 && body["metadata"]["resourceVersion"].as_str().is_none() {
            failures.push(format!("{}: unset resourceVersion", case.name));
        }
        for wrong in case.check(code, &body, pods) {
            failures.push(format!("{}: {path}: {wrong}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `store_tests.go` `RunTestNamespaceScopedList`: lists of every namespace or of one, with
/// field selectors on `metadata.name`, `metadata.namespace` and `spec.nodeName`; each case's
/// namespaces are prefixed `t<case>-`, and only its own pods are compared.
async fn run_test_namespace_scoped_list<B: Backend>(running: &Running<B>) {
    type Pods = Vec<(&'static str, &'static str, Shape)>;
    use Shape::{Assigned, Base, Updated};
    let cases: Vec<(&str, Option<&str>, &str, Pods, Pods)> = vec![
        (
            "request without namespace, without field selector",
            None,
            "",
            vec![("foo1", "ns1", Base), ("foo2", "ns2", Base)],
            vec![("foo1", "ns1", Base), ("foo2", "ns2", Base)],
        ),
        (
            "request without namespace, field selector with metadata.namespace",
            None,
            "metadata.namespace={ns}ns1",
            vec![("foo1", "ns1", Base), ("foo1", "ns2", Base)],
            vec![("foo1", "ns1", Base)],
        ),
        (
            "request without namespace, field selector with spec.nodename",
            None,
            "spec.nodeName=bar1",
            vec![
                ("foo1", "ns1", Assigned("bar1")),
                ("foo2", "ns2", Assigned("bar2")),
            ],
            vec![("foo1", "ns1", Assigned("bar1"))],
        ),
        (
            "request without namespace, field selector with spec.nodename to filter out",
            None,
            "spec.nodeName!=bar1",
            vec![
                ("foo1", "ns1", Assigned("bar1")),
                ("foo2", "ns2", Assigned("bar2")),
            ],
            vec![("foo2", "ns2", Assigned("bar2"))],
        ),
        (
            "request with namespace, without field selector",
            Some("ns1"),
            "",
            vec![
                ("foo1", "ns1", Base),
                ("foo1", "ns2", Base),
                ("foo2", "ns1", Base),
            ],
            vec![("foo1", "ns1", Base), ("foo2", "ns1", Base)],
        ),
        (
            "request with namespace, field selector with matched metadata.namespace",
            Some("ns1"),
            "metadata.namespace={ns}ns1",
            vec![("foo1", "ns1", Base), ("foo1", "ns2", Base)],
            vec![("foo1", "ns1", Base)],
        ),
        (
            "request with namespace, field selector with non-matched metadata.namespace",
            Some("ns1"),
            "metadata.namespace={ns}ns2",
            vec![
                ("foo1", "ns1", Base),
                ("foo1", "ns2", Base),
                ("foo2", "ns1", Updated),
                ("foo2", "ns2", Updated),
            ],
            vec![],
        ),
        (
            "request with namespace, field selector with spec.nodename",
            Some("ns1"),
            "spec.nodeName=bar2",
            vec![
                ("foo1", "ns1", Assigned("bar1")),
                ("foo1", "ns2", Assigned("bar2")),
                ("foo2", "ns1", Assigned("bar2")),
            ],
            vec![("foo2", "ns1", Assigned("bar2"))],
        ),
        (
            "request with namespace, field selector with spec.nodename to filter out",
            Some("ns2"),
            "spec.nodeName!=bar1",
            vec![
                ("foo1", "ns1", Base),
                ("foo1", "ns2", Base),
                ("foo3", "ns2", Assigned("bar1")),
                ("foo2", "ns2", Assigned("bar2")),
            ],
            vec![("foo1", "ns2", Base), ("foo2", "ns2", Assigned("bar2"))],
        ),
        (
            "request without namespace, field selector with metadata.name",
            None,
            "metadata.name=foo1",
            vec![
                ("foo1", "ns1", Base),
                ("foo1", "ns2", Base),
                ("foo2", "ns1", Base),
            ],
            vec![("foo1", "ns1", Base), ("foo1", "ns2", Base)],
        ),
        (
            "request without namespace, field selector with metadata.name and metadata.namespace",
            None,
            "metadata.name=foo1,metadata.namespace={ns}ns1",
            vec![
                ("foo1", "ns1", Base),
                ("foo2", "ns1", Base),
                ("foo1", "ns2", Base),
            ],
            vec![("foo1", "ns1", Base)],
        ),
        (
            "request without namespace, field selector with metadata.name and spec.nodeName",
            None,
            "metadata.name=foo1,spec.nodeName=bar1",
            vec![("foo1", "ns1", Assigned("bar1"))],
            vec![("foo1", "ns1", Assigned("bar1"))],
        ),
        (
            "request without namespace, field selector with metadata.name, and with spec.nodeName to filter out watch",
            None,
            "spec.nodeName!=bar1,metadata.name=foo1",
            vec![
                ("foo1", "ns1", Base),
                ("foo2", "ns1", Base),
                ("foo1", "ns2", Assigned("bar1")),
                ("foo2", "ns2", Assigned("bar1")),
                ("foo1", "ns3", Assigned("bar2")),
                ("foo2", "ns3", Assigned("bar2")),
            ],
            vec![("foo1", "ns1", Base), ("foo1", "ns3", Assigned("bar2"))],
        ),
        (
            "request with namespace, with field selector metadata.name",
            Some("ns1"),
            "metadata.name=foo1",
            vec![
                ("foo1", "ns1", Base),
                ("foo2", "ns1", Base),
                ("foo1", "ns2", Base),
                ("foo2", "ns2", Base),
            ],
            vec![("foo1", "ns1", Base)],
        ),
        (
            "request with namespace, with field selector metadata.name and metadata.namespace",
            Some("ns1"),
            "metadata.name=foo1,metadata.namespace={ns}ns1",
            vec![
                ("foo1", "ns1", Base),
                ("foo2", "ns1", Base),
                ("foo1", "ns2", Base),
                ("foo2", "ns2", Base),
            ],
            vec![("foo1", "ns1", Base)],
        ),
        (
            "request with namespace, with field selector metadata.name, metadata.namespace and spec.nodename",
            Some("ns2"),
            "metadata.name=foo2,metadata.namespace={ns}ns2,spec.nodeName=bar1",
            vec![
                ("foo1", "ns1", Base),
                ("foo2", "ns1", Base),
                ("foo1", "ns2", Base),
                ("foo2", "ns2", Assigned("bar1")),
                ("foo1", "ns3", Assigned("bar1")),
                ("foo2", "ns3", Assigned("bar1")),
            ],
            vec![("foo2", "ns2", Assigned("bar1"))],
        ),
        (
            "request with namespace, with field selector metadata.name, metadata.namespace, and with spec.nodename to filter out",
            Some("ns2"),
            "spec.nodeName!=bar2,metadata.name=foo1,metadata.namespace={ns}ns2",
            vec![
                ("foo1", "ns1", Base),
                ("foo2", "ns1", Base),
                ("foo1", "ns2", Assigned("bar1")),
                ("foo2", "ns2", Assigned("bar2")),
                ("foo1", "ns3", Assigned("bar2")),
            ],
            vec![("foo1", "ns2", Assigned("bar1"))],
        ),
    ];
    let mut failures = Vec::new();
    for (index, (case, namespace, selector, input, expected)) in cases.into_iter().enumerate() {
        let prefix = format!("t{index}-");
        for (name, suffix, shape) in input {
            put(running, &format!("{prefix}{suffix}"), name, shape).await;
        }
        let base =
            namespace.map_or_else(|| PODS.to_owned(), |ns| pods_in(&format!("{prefix}{ns}")));
        let selector = selector.replace("{ns}", &prefix);
        let encoded = selector.replace('!', "%21").replace('=', "%3D");
        let (code, body, pods) = list(running, &format!("{base}?fieldSelector={encoded}")).await;
        assert_eq!(code, 200, "{case}: {body}");
        let got: Vec<(String, String, String)> = pods
            .into_iter()
            .filter(|pod| pod.namespace.starts_with(&prefix))
            .map(|pod| (pod.namespace, pod.name, pod.node_name))
            .collect();
        let want: Vec<(String, String, String)> = expected
            .into_iter()
            .map(|(name, suffix, shape)| {
                let node = match shape {
                    Assigned(node) => node,
                    Base | Updated => "",
                };
                (
                    format!("{prefix}{suffix}"),
                    name.to_owned(),
                    node.to_owned(),
                )
            })
            .collect();
        if got != want {
            failures.push(format!("{case}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `watcher_tests.go` `RunTestNamespaceScopedWatch`: watches of every namespace or of one,
/// of one name or all, with field selectors on `metadata.name`, `metadata.namespace` and
/// `spec.nodeName`, each from a list's revision; every write replaces the pod with upstream's
/// shape, and each expected event carries the pod as written (a `DELETED` the pod as it was,
/// at the revision of the write that filtered it out). A watch of one name goes through a
/// `metadata.name` field selector, as kube-apiserver's clients send it.
async fn run_test_namespace_scoped_watch<B: Backend>(running: &Running<B>) {
    type Steps = Vec<(&'static str, &'static str, Shape, Option<&'static str>)>;
    use Shape::{Assigned, Base, Updated};
    let cases: Vec<(&str, Option<&str>, &str, Steps)> = vec![
        (
            "namespaced watch, request without name, request without namespace, without field selector",
            None,
            "",
            vec![
                ("t1-foo1", "t1-ns1", Base, Some("ADDED")),
                ("t1-foo2", "t1-ns2", Base, Some("ADDED")),
                ("t1-foo1", "t1-ns1", Updated, Some("MODIFIED")),
                ("t1-foo2", "t1-ns2", Updated, Some("MODIFIED")),
            ],
        ),
        (
            "namespaced watch, request without name, request without namespace, field selector with metadata.namespace",
            None,
            "metadata.namespace=t2-ns1",
            vec![
                ("t2-foo1", "t2-ns1", Base, Some("ADDED")),
                ("t2-foo1", "t2-ns2", Base, None),
                ("t2-foo1", "t2-ns1", Updated, Some("MODIFIED")),
                ("t2-foo1", "t2-ns2", Updated, None),
            ],
        ),
        (
            "namespaced watch, request without name, request without namespace, field selector with spec.nodename",
            None,
            "spec.nodeName=t3-bar1",
            vec![
                ("t3-foo1", "t3-ns1", Base, None),
                ("t3-foo2", "t3-ns2", Base, None),
                ("t3-foo1", "t3-ns1", Assigned("t3-bar1"), Some("ADDED")),
                ("t3-foo2", "t3-ns2", Assigned("t3-bar1"), Some("ADDED")),
            ],
        ),
        (
            "namespaced watch, request without name, request without namespace, field selector with spec.nodename to filter out watch",
            None,
            "spec.nodeName!=t4-bar1",
            vec![
                ("t4-foo1", "t4-ns1", Base, Some("ADDED")),
                ("t4-foo2", "t4-ns1", Base, Some("ADDED")),
                ("t4-foo1", "t4-ns1", Updated, Some("MODIFIED")),
                ("t4-foo1", "t4-ns1", Assigned("t4-bar1"), Some("DELETED")),
            ],
        ),
        (
            "namespaced watch, request without name, request with namespace, without field selector",
            Some("t5-ns1"),
            "",
            vec![
                ("t5-foo1", "t5-ns1", Base, Some("ADDED")),
                ("t5-foo1", "t5-ns2", Base, None),
                ("t5-foo2", "t5-ns1", Base, Some("ADDED")),
                ("t5-foo1", "t5-ns1", Updated, Some("MODIFIED")),
                ("t5-foo1", "t5-ns2", Updated, None),
            ],
        ),
        (
            "namespaced watch, request without name, request with namespace, field selector with matched metadata.namespace",
            Some("t6-ns1"),
            "metadata.namespace=t6-ns1",
            vec![
                ("t6-foo1", "t6-ns1", Base, Some("ADDED")),
                ("t6-foo1", "t6-ns2", Base, None),
                ("t6-foo1", "t6-ns1", Updated, Some("MODIFIED")),
            ],
        ),
        (
            "namespaced watch, request without name, request with namespace, field selector with non-matched metadata.namespace",
            Some("t7-ns1"),
            "metadata.namespace=t7-ns2",
            vec![
                ("t7-foo1", "t7-ns1", Base, None),
                ("t7-foo1", "t7-ns2", Base, None),
                ("t7-foo1", "t7-ns1", Updated, None),
                ("t7-foo1", "t7-ns2", Updated, None),
            ],
        ),
        (
            "namespaced watch, request without name, request with namespace, field selector with spec.nodename",
            Some("t8-ns1"),
            "spec.nodeName=t8-bar2",
            vec![
                ("t8-foo1", "t8-ns1", Base, None),
                ("t8-foo1", "t8-ns1", Assigned("t8-bar1"), None),
                ("t8-foo1", "t8-ns2", Assigned("t8-bar2"), None),
                ("t8-foo1", "t8-ns1", Assigned("t8-bar2"), Some("ADDED")),
            ],
        ),
        (
            "namespaced watch, request without name, request with namespace, field selector with spec.nodename to filter out watch",
            Some("t9-ns2"),
            "spec.nodeName!=t9-bar1",
            vec![
                ("t9-foo1", "t9-ns1", Base, None),
                ("t9-foo1", "t9-ns2", Base, Some("ADDED")),
                ("t9-foo1", "t9-ns2", Assigned("t9-bar1"), Some("DELETED")),
                ("t9-foo1", "t9-ns2", Assigned("t9-bar2"), Some("ADDED")),
            ],
        ),
        (
            "namespaced watch, request with name, request without namespace, field selector with metadata.name",
            None,
            "metadata.name=t10-foo1",
            vec![
                ("t10-foo1", "t10-ns1", Base, Some("ADDED")),
                ("t10-foo1", "t10-ns2", Base, Some("ADDED")),
                ("t10-foo2", "t10-ns1", Base, None),
                ("t10-foo1", "t10-ns1", Updated, Some("MODIFIED")),
                (
                    "t10-foo1",
                    "t10-ns1",
                    Assigned("t10-bar1"),
                    Some("MODIFIED"),
                ),
            ],
        ),
        (
            "namespaced watch, request with name, request without namespace, field selector with metadata.name and metadata.namespace",
            None,
            "metadata.name=t11-foo1,metadata.namespace=t11-ns1",
            vec![
                ("t11-foo1", "t11-ns1", Base, Some("ADDED")),
                ("t11-foo2", "t11-ns1", Base, None),
                ("t11-foo1", "t11-ns2", Base, None),
                ("t11-foo1", "t11-ns1", Updated, Some("MODIFIED")),
                (
                    "t11-foo1",
                    "t11-ns1",
                    Assigned("t11-bar1"),
                    Some("MODIFIED"),
                ),
            ],
        ),
        (
            "namespaced watch, request with name, request without namespace, field selector with metadata.name and spec.nodeName",
            None,
            "metadata.name=t12-foo1,spec.nodeName=t12-bar1",
            vec![
                ("t12-foo1", "t12-ns1", Base, None),
                ("t12-foo1", "t12-ns1", Updated, None),
                ("t12-foo1", "t12-ns1", Assigned("t12-bar1"), Some("ADDED")),
            ],
        ),
        (
            "namespaced watch, request with name, request without namespace, field selector with metadata.name, and with spec.nodeName to filter out watch",
            None,
            "spec.nodeName!=t15-bar1,metadata.name=t15-foo1",
            vec![
                ("t15-foo1", "t15-ns1", Base, Some("ADDED")),
                ("t15-foo2", "t15-ns1", Base, None),
                ("t15-foo1", "t15-ns1", Updated, Some("MODIFIED")),
                ("t15-foo1", "t15-ns1", Assigned("t15-bar1"), Some("DELETED")),
                ("t15-foo1", "t15-ns1", Assigned("t15-bar2"), Some("ADDED")),
            ],
        ),
        (
            "namespaced watch, request with name, request with namespace, with field selector metadata.name",
            Some("t16-ns1"),
            "metadata.name=t16-foo1",
            vec![
                ("t16-foo1", "t16-ns1", Base, Some("ADDED")),
                ("t16-foo2", "t16-ns1", Base, None),
                ("t16-foo1", "t16-ns1", Updated, Some("MODIFIED")),
                (
                    "t16-foo1",
                    "t16-ns1",
                    Assigned("t16-bar1"),
                    Some("MODIFIED"),
                ),
            ],
        ),
        (
            "namespaced watch, request with name, request with namespace, with field selector metadata.name and metadata.namespace",
            Some("t17-ns1"),
            "metadata.name=t17-foo2,metadata.namespace=t17-ns1",
            vec![
                ("t17-foo1", "t17-ns1", Base, None),
                ("t17-foo2", "t17-ns1", Base, Some("ADDED")),
                ("t17-foo1", "t17-ns1", Updated, None),
                (
                    "t17-foo2",
                    "t17-ns1",
                    Assigned("t17-bar1"),
                    Some("MODIFIED"),
                ),
            ],
        ),
        (
            "namespaced watch, request with name, request with namespace, with field selector metadata.name, metadata.namespace and spec.nodename",
            Some("t18-ns1"),
            "metadata.name=t18-foo1,metadata.namespace=t18-ns1,spec.nodeName=t18-bar1",
            vec![
                ("t18-foo1", "t18-ns1", Base, None),
                ("t18-foo2", "t18-ns1", Base, None),
                ("t18-foo1", "t18-ns2", Base, None),
                ("t18-foo1", "t18-ns1", Updated, None),
                ("t18-foo1", "t18-ns1", Assigned("t18-bar1"), Some("ADDED")),
            ],
        ),
        (
            "namespaced watch, request with name, request with namespace, with field selector metadata.name, metadata.namespace, and with spec.nodename to filter out watch",
            Some("t19-ns1"),
            "spec.nodeName!=t19-bar1,metadata.name=t19-foo2,metadata.namespace=t19-ns1",
            vec![
                ("t19-foo1", "t19-ns1", Base, None),
                ("t19-foo2", "t19-ns2", Base, None),
                ("t19-foo2", "t19-ns1", Base, Some("ADDED")),
                ("t19-foo2", "t19-ns1", Updated, Some("MODIFIED")),
                ("t19-foo2", "t19-ns1", Assigned("t19-bar1"), Some("DELETED")),
            ],
        ),
    ];
    for (case, namespace, selector, steps) in cases {
        let base = namespace.map_or_else(|| PODS.to_owned(), pods_in);
        let encoded = selector.replace('!', "%21").replace('=', "%3D");
        let (code, listed, _) = list(running, &format!("{base}?fieldSelector={encoded}")).await;
        assert_eq!(code, 200, "{case}: {listed}");
        let from = listed["metadata"]["resourceVersion"].as_str().unwrap();
        let mut watch = support::Watch::start(
            &running.server,
            &format!("{base}?watch=1&resourceVersion={from}&fieldSelector={encoded}"),
        )
        .await;
        let mut current: std::collections::HashMap<(&str, &str), Pod> = Default::default();
        for (name, namespace, shape, expected) in steps {
            let written = Pod::of(&put(running, namespace, name, shape).await);
            let before = current.insert((namespace, name), written.clone());
            let Some(expected) = expected else { continue };
            let event = watch
                .next_within(std::time::Duration::from_secs(10))
                .await
                .unwrap_or_else(|| panic!("{case}: no {expected} for {namespace}/{name}"));
            let mut want = written.clone();
            if expected == "DELETED" {
                want = Pod {
                    rv: written.rv.clone(),
                    ..before.expect("a pod that was there")
                };
            }
            assert_eq!(
                (
                    event["type"].as_str().unwrap_or_default(),
                    Pod::of(&event["object"])
                ),
                (expected, want),
                "{case}"
            );
        }
        assert_eq!(watch.events().await, [], "{case}: no more events");
    }
}

/// The names of a list's pods, its continue token and its resourceVersion; the list must
/// answer 200.
async fn names_of<B: Backend>(running: &Running<B>, path: &str) -> (Vec<String>, String, String) {
    let (code, body, pods) = list(running, path).await;
    assert_eq!(code, 200, "{path}: {body}");
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    (
        pods.into_iter().map(|pod| pod.name).collect(),
        text(&body["metadata"]["continue"]),
        text(&body["metadata"]["resourceVersion"]),
    )
}

/// `store_tests.go` `RunTestListContinuation`: pages of one, then the rest, each at the first
/// page's revision. (Upstream's count of etcd requests has no API form.)
async fn run_test_list_continuation<B: Backend>(running: &Running<B>) {
    let mut current_rv = String::new();
    for (namespace, name) in [("first", "bar"), ("second", "bar"), ("second", "foo")] {
        current_rv = Pod::of(&put(running, namespace, name, Shape::Base).await).rv;
    }
    let (names, continue_from_second_item, rv) =
        names_of(running, &format!("{PODS}?limit=1")).await;
    assert_eq!(names, ["bar"], "incorrect first page");
    assert!(
        !continue_from_second_item.is_empty(),
        "No continuation token set"
    );
    assert_eq!(rv, current_rv);
    let path = format!("{PODS}?continue={continue_from_second_item}");
    let (names, token, rv) = names_of(running, &path).await;
    assert_eq!(names, ["bar", "foo"], "incorrect second page");
    assert_eq!(token, "", "Unexpected continuation token set");
    assert_eq!(rv, current_rv);
    let path = format!("{PODS}?limit=1&continue={continue_from_second_item}");
    let (names, continue_from_third_item, rv) = names_of(running, &path).await;
    assert_eq!(names, ["bar"], "incorrect second page");
    assert!(
        !continue_from_third_item.is_empty(),
        "No continuation token set"
    );
    assert_eq!(rv, current_rv);
    let path = format!("{PODS}?limit=1&continue={continue_from_third_item}");
    let (names, token, rv) = names_of(running, &path).await;
    assert_eq!(names, ["foo"], "incorrect third page");
    assert_eq!(token, "", "Unexpected continuation token set");
    assert_eq!(rv, current_rv);
}

/// `store_tests.go` `RunTestListPaging`: pages of one go on at the first page's revision, so
/// a pod created between them is not listed, and the fourth page is the last.
async fn run_test_list_paging<B: Backend>(running: &Running<B>) {
    for index in 0..4 {
        put(running, "paging", &format!("test-{index}"), Shape::Base).await;
    }
    let (mut names, mut calls, mut token) = (Vec::new(), 0, String::new());
    loop {
        calls += 1;
        let mut path = format!("{PODS}?limit=1");
        if !token.is_empty() {
            path.push_str(&format!("&continue={token}"));
        }
        let (page, next, _) = names_of(running, &path).await;
        names.extend(page);
        if next.is_empty() {
            break;
        }
        if calls == 2 {
            put(running, "paging", "test-5", Shape::Base).await;
        }
        token = next;
    }
    assert_eq!(calls, 4, "unexpected list invocations");
    assert_eq!(
        names,
        ["test-0", "test-1", "test-2", "test-3"],
        "unexpected items"
    );
}

/// `store_tests.go` `RunTestListResourceVersionMatch`: a filtered list with a limit, read in
/// more than one request to storage while every object read adds a pod (upstream's
/// `reproducingTransformer`), is the list a later `Exact` list at its resourceVersion
/// answers; so is a `NotOlderThan` one.
async fn run_test_list_resource_version_match<B: Backend>(running: &Running<B>) {
    for index in 0u32..5 {
        let pod = json!({
            "apiVersion": "example.com/v1", "kind": "Pod",
            "metadata": {"name": format!("pod-{index}"), "labels": {"even": index.is_multiple_of(2).to_string()}},
        });
        let body = serde_json::to_vec(&pod).unwrap();
        let (code, answer) = request(&running.server, "POST", &pods_in("default"), body).await;
        assert_eq!(code, 201, "{answer}");
    }
    running.backend().reproduce.store(true, Ordering::SeqCst);
    let query = "labelSelector=even%3Dtrue&limit=4";
    let (code, result1, _) = list(running, &format!("{PODS}?{query}")).await;
    assert_eq!(code, 200, "{result1}");
    assert!(
        running.backend().reproduced.load(Ordering::SeqCst) > 0,
        "the list read objects and pods were added behind it"
    );
    let rv = result1["metadata"]["resourceVersion"].as_str().unwrap();
    let exact = format!("{PODS}?{query}&resourceVersion={rv}&resourceVersionMatch=Exact");
    let (code, result2, _) = list(running, &exact).await;
    assert_eq!(code, 200, "{result2}");
    assert_eq!(result1, result2, "incorrect lists");
    let newer = format!("{PODS}?{query}&resourceVersion={rv}&resourceVersionMatch=NotOlderThan");
    let (code, result3, _) = list(running, &newer).await;
    assert_eq!(code, 200, "{result3}");
    let rv = result3["metadata"]["resourceVersion"].as_str().unwrap();
    let exact = format!("{PODS}?{query}&resourceVersion={rv}&resourceVersionMatch=Exact");
    let (code, result4, _) = list(running, &exact).await;
    assert_eq!(code, 200, "{result4}");
    assert_eq!(result3, result4, "incorrect lists");
    running.backend().reproduce.store(false, Ordering::SeqCst);
}

/// `store_tests.go` `RunTestConsistentList`, as storage without a watch cache passes it: a
/// list with `resourceVersion=0`, with none, or with a continue token of revision -1 each
/// answers the newest revision, which a write outside the resource moves on after each.
async fn run_test_consistent_list<B: Backend>(running: &Running<B>) {
    let last_write = number(&Pod::of(&put(running, "default", "foo", Shape::Base).await).rv);
    increase_rv(running, "/registry/increase-rv-0").await;
    let empty = pods_in("empty");
    for (index, (case, query)) in [
        (
            "Non-consistent list before consistent read",
            "resourceVersion=0".to_owned(),
        ),
        ("LIST without RV returns consistent RV", String::new()),
        (
            "List with negative continue RV returns consistent RV",
            format!("continue={}", token("a", -1)),
        ),
        (
            "Non-consistent request after consistent read",
            "resourceVersion=0".to_owned(),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let (_, _, rv) = names_of(running, &format!("{empty}?{query}")).await;
        // The write after the pod, then one more after each case before this one.
        let consistent_rv = last_write + 1 + index as i64;
        assert_eq!(number(&rv), consistent_rv, "{case}");
        increase_rv(running, &format!("/registry/increase-rv-{}", index + 1)).await;
    }
}

/// `store_tests.go` `RunTestCompactRevision`: a list at exactly the current revision is
/// answered until a compaction passes it, then refused as too old. (The store's
/// `CompactRevision()` has no API form; the refusal shows it.)
async fn run_test_compact_revision<B: Backend>(running: &Running<B>) {
    let (_, _, current_rv) = names_of(running, PODS).await;
    let exact = format!("{PODS}?resourceVersion={current_rv}&resourceVersionMatch=Exact");
    names_of(running, &exact).await;
    increase_rv(running, "/registry/increase-rv").await;
    let compacted = number(&current_rv) + 1;
    running
        .backend()
        .compact(Revision(compacted as u64))
        .await
        .expect("compacts");
    let (code, body, _) = list(running, &exact).await;
    assert_eq!(code, 410, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("The resourceVersion for the provided list is too old"),
        "{body}"
    );
}

/// `store_tests.go` `RunTestDeleteWithConflict`: an update that lands between a delete's read
/// and its write makes the delete read again and go through, deleting the object as the
/// update left it; the object is gone. (A custom resource's DELETE answers a `Status`, as
/// kube-apiserver's, whose CR store does not set `ReturnDeletedObject`: the watch shows the
/// object deleted.)
async fn run_test_delete_with_conflict<B: Backend>(running: &Running<B>) {
    let created = put(running, "test-ns", "name", Shape::Base).await;
    let from = created["metadata"]["resourceVersion"].as_str().unwrap();
    let path = format!("{}/name", pods_in("test-ns"));
    let mut watch = support::Watch::start(
        &running.server,
        &format!("{}?watch=1&resourceVersion={from}", pods_in("test-ns")),
    )
    .await;
    let key = b"/registry/example.com/pods/test-ns/name".to_vec();
    *running.backend().conflict_on_delete.lock().unwrap() = Some(key);
    let (code, out) = request(&running.server, "DELETE", &path, Vec::new()).await;
    assert_eq!(code, 200, "Unexpected failure during deletion: {out}");
    assert_eq!(out["status"], "Success", "{out}");
    assert!(
        running
            .backend()
            .conflict_on_delete
            .lock()
            .unwrap()
            .is_none(),
        "the conflicting update was made"
    );
    let mut seen = Vec::new();
    while let Some(event) = watch
        .next_within(std::time::Duration::from_millis(500))
        .await
    {
        let labels = event["object"]["metadata"]["labels"].clone();
        seen.push((
            event["type"].as_str().unwrap_or_default().to_owned(),
            labels,
        ));
    }
    let updated = json!({"foo": "bar"});
    assert_eq!(
        seen,
        [
            ("MODIFIED".to_owned(), updated.clone()),
            ("DELETED".to_owned(), updated)
        ],
        "incorrect pod"
    );
    let (code, _) = request(&running.server, "GET", &path, Vec::new()).await;
    assert_eq!(code, 404, "the pod is gone");
}

/// `watcher_tests.go` `RunTestDelayedWatchDelivery`: a watcher that waits a second after its
/// first event still gets all 21 writes, in order. (Upstream stops its watcher then and
/// counts what was already queued; a client that hangs up reads nothing more, so this one
/// reads on.)
async fn run_test_delayed_watch_delivery<B: Backend>(running: &Running<B>) {
    let start_rv = Pod::of(&put(running, "test-ns", "foo", Shape::Base).await).rv;
    let mut watcher = support::Watch::start(
        &running.server,
        &format!("{}?watch=1&resourceVersion={start_rv}", pods_in("test-ns")),
    )
    .await;
    for index in 0..21 {
        put(running, "test-ns", &format!("foo-{index}"), Shape::Base).await;
    }
    let mut watched = 0;
    while let Some(event) = watcher.next_within(std::time::Duration::from_secs(2)).await {
        assert_eq!(
            event["object"]["metadata"]["name"],
            format!("foo-{watched}"),
            "Unexpected object watched"
        );
        watched += 1;
        if watched == 1 {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    }
    assert_eq!(watched, 21, "Unexpected number of events");
}

/// A value under `key` that no version decodes (upstream fails its value transformer).
async fn corrupt<B: Backend>(running: &Running<B>, key: &str) {
    running
        .backend()
        .create(key.as_bytes(), b"\x00 not an object".to_vec())
        .await
        .expect("written");
}

/// `watcher_tests.go` `RunTestWatchError`: a watch of one object whose stored value does not
/// decode gets an `ERROR` event. (Upstream's value is readable until its transformer fails;
/// here the value is written unreadable.)
async fn run_test_watch_error<B: Backend>(running: &Running<B>) {
    let (_, _, rv) = names_of(running, &format!("{PODS}?resourceVersion=0")).await;
    corrupt(running, "/registry/example.com/pods/test-ns/foo").await;
    let mut watch = support::Watch::start(
        &running.server,
        &format!(
            "{}?watch=1&resourceVersion={rv}&fieldSelector=metadata.name%3Dfoo",
            pods_in("test-ns")
        ),
    )
    .await;
    let event = watch
        .next_within(std::time::Duration::from_secs(10))
        .await
        .expect("an event");
    assert_eq!(event["type"], "ERROR", "{event}");
    assert_eq!(event["object"]["kind"], "Status", "{event}");
}

/// `watcher_tests.go` `RunWatchErrorIsBlockingFurtherEvents`: ten concurrent watches from
/// foo's revision meet bar, which does not decode: each gets an `ERROR` event and nothing
/// after it, not baz's `ADDED`.
async fn run_watch_error_is_blocking_further_events<B: Backend>(running: &Running<B>) {
    let foo_created = Pod::of(&put(running, "test", "foo", Shape::Base).await);
    corrupt(running, "/registry/example.com/pods/test/bar").await;
    put(running, "test", "baz", Shape::Base).await;
    let watches = (0..10).map(|_| async {
        let mut watch = support::Watch::start(
            &running.server,
            &format!("{PODS}?watch=1&resourceVersion={}", foo_created.rv),
        )
        .await;
        let mut types = Vec::new();
        while let Some(event) = watch.next_within(std::time::Duration::from_secs(1)).await {
            types.push(event["type"].as_str().unwrap_or_default().to_owned());
        }
        types
    });
    for types in futures_util::future::join_all(watches).await {
        assert_eq!(types, ["ERROR"], "unexpected events");
    }
}

/// `watcher_tests.go` `RunTestOptionalWatchBookmarksWithCorrectResourceVersion`: a watch of 3 s
/// that allows bookmarks, while pods are created every 10 ms, gets a bookmark before it ends;
/// each bookmark's resourceVersion is not below the last event's, and each other event's is
/// above everything before it.
async fn run_test_optional_watch_bookmarks_with_correct_resource_version<B: Backend>(
    running: &Running<B>,
) {
    let (_, _, start_rv) = names_of(running, PODS).await;
    let mut watcher = support::Watch::start(
        &running.server,
        &format!(
            "{}?watch=1&resourceVersion={start_rv}&allowWatchBookmarks=true&timeoutSeconds=3",
            pods_in("test-ns")
        ),
    )
    .await;
    let stop = AtomicBool::new(false);
    let writer = async {
        for index in 0..100 {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            put(running, "test-ns", &format!("foo-{index}"), Shape::Base).await;
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    let reader = async {
        let (mut bookmark_received, mut last_observed) = (false, 0);
        while let Some(event) = watcher.next_within(std::time::Duration::from_secs(5)).await {
            let rv = number(
                event["object"]["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap(),
            );
            if event["type"] == "BOOKMARK" {
                bookmark_received = true;
                assert!(
                    rv >= last_observed,
                    "bookmark {rv} below observed {last_observed}"
                );
            } else {
                assert!(rv > last_observed, "event {rv} not above {last_observed}");
            }
            last_observed = rv;
        }
        stop.store(true, Ordering::SeqCst);
        assert!(bookmark_received, "we did not receive a bookmark event");
    };
    tokio::join!(writer, reader);
}

/// `store_tests.go` `RunTestTransformationFailure`: with one pod stored readable and one not
/// (upstream writes it behind another value transformer's prefix; here its value does not
/// decode), a get, an update and a delete of it are each an internal error (500). The list
/// is 1.37's `StorageReadError`, as kube-apiserver's storage lists (its factory wraps the
/// decoder so that a value that does not read is a corrupt object; upstream's test store is
/// not wrapped, so there the list's error stays internal).
async fn run_test_transformation_failure<B: Backend>(running: &Running<B>) {
    put(running, "first", "bar", Shape::Base).await;
    corrupt(running, "/registry/example.com/pods/second/baz").await;
    let baz_path = format!("{}/baz", pods_in("second"));
    let pod = serde_json::to_vec(&Shape::Base.pod("second", "baz")).unwrap();
    for (method, path, body, reason) in [
        ("GET", PODS.to_owned(), Vec::new(), "StorageReadError"),
        ("GET", baz_path.clone(), Vec::new(), "InternalError"),
        ("PUT", baz_path.clone(), pod, "InternalError"),
        ("DELETE", baz_path, Vec::new(), "InternalError"),
    ] {
        let (code, status) = request(&running.server, method, &path, body).await;
        assert_eq!(code, 500, "{method} {path}: {status}");
        assert_eq!(status["reason"], reason, "{method} {path}: {status}");
    }
}

/// Replaces the value of a stored pod by one that does not decode (a new revision, as an
/// etcd client would write it); answers the key.
async fn spoil<B: Backend>(running: &Running<B>, namespace: &str, name: &str) -> String {
    let key = format!("/registry/example.com/pods/{namespace}/{name}");
    let current = running
        .backend()
        .get(key.as_bytes())
        .await
        .unwrap()
        .unwrap();
    running
        .backend()
        .update(
            key.as_bytes(),
            b"\x00 not an object".to_vec(),
            current.mod_revision,
        )
        .await
        .unwrap();
    key
}

/// The body of a delete that ignores store read errors.
fn unsafe_delete() -> Vec<u8> {
    br#"{"ignoreStoreReadErrorWithClusterBreakingPotential":true}"#.to_vec()
}

/// `store_tests.go` `RunTestGetListWithErrorAggregation`, "feature enabled, should aggregate
/// corrupt object errors", as kube-apiserver 1.37 lists with `AllowUnsafeMalformedObjectDeletion`
/// on: seven pods, the even ones spoiled; the list is a `StorageReadError` naming each
/// spoiled key in order (upstream's list of the good objects beside the error has no API
/// form), paged or not; past 100 spoiled values the list stops with a `FieldValueTooMany`
/// cause. (Upstream's cases of an error that is no corrupt object need a value transformer,
/// which apfkit has not: every value that does not read is corrupt here. Its
/// `RunTestGetListWithoutErrorAggregation` runs the gate off, which 1.37 no longer is.)
async fn run_test_get_list_with_error_aggregation<B: Backend>(running: &Running<B>) {
    for id in 1..=7 {
        put(running, "ns", &format!("foo-{id:06}"), Shape::Base).await;
    }
    let (names, _, _) = names_of(running, &pods_in("ns")).await;
    assert_eq!(names.len(), 7);
    let mut spoiled = Vec::new();
    for id in [2, 4, 6] {
        spoiled.push(spoil(running, "ns", &format!("foo-{id:06}")).await);
    }
    // A limited page stops at its limit, naming what it read until then (foo-1, foo-2, foo-3
    // fill a filtered page of two), as upstream's storage stops its chunks.
    for (path, named) in [
        (pods_in("ns"), 3),
        (format!("{}?limit=500", pods_in("ns")), 3),
        (
            format!("{}?limit=2&labelSelector=a%21%3Db", pods_in("ns")),
            1,
        ),
    ] {
        let (code, status, _) = list(running, &path).await;
        assert_eq!(code, 500, "{path}: {status}");
        assert_eq!(status["reason"], "StorageReadError", "{status}");
        assert_eq!(status["details"]["name"], "list", "{status}");
        assert_eq!(status["details"]["group"], "example.com", "{status}");
        assert_eq!(status["details"]["kind"], "pods", "{status}");
        let causes = status["details"]["causes"].as_array().unwrap();
        let fields: Vec<&str> = causes
            .iter()
            .map(|c| c["field"].as_str().unwrap())
            .collect();
        assert_eq!(fields, spoiled[..named], "{path}");
        for cause in causes {
            assert_eq!(cause["reason"], "UnexpectedServerResponse");
            assert!(
                cause["message"].as_str().unwrap().starts_with(
                    "StorageError: corrupt object, Code: 7, Key: /registry/example.com/pods/ns/foo-"
                ),
                "{cause}"
            );
        }
        let message = status["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!(
                "failed to read one or more pods.example.com from the storage: StorageError: \
                 corrupt object, Code: 7, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: \
                 object not decodable revision=",
                spoiled[0]
            )) && (named == 1 || message.ends_with(" (and 2 more)")),
            "{message}"
        );
    }
    // One object read alone: kube's internal error quoting the storage's.
    let (code, status) = request(
        &running.server,
        "GET",
        &format!("{}/foo-000002", pods_in("ns")),
        Vec::new(),
    )
    .await;
    assert_eq!(code, 500, "{status}");
    assert!(
        status["message"].as_str().unwrap().starts_with(&format!(
            "Internal error occurred: StorageError: corrupt object, Code: 7, Key: {}",
            spoiled[0]
        )),
        "{status}"
    );
    // A filtered page that fills with the last key of a read, more keys after it: still the
    // error (foo-1 does not read; foo-2 is filtered out; foo-3 fills the page of one).
    put(running, "edge", "foo-1", Shape::Base).await;
    put(running, "edge", "foo-2", Shape::Base).await;
    put(running, "edge", "foo-3", Shape::Assigned("n1")).await;
    put(running, "edge", "foo-4", Shape::Assigned("n1")).await;
    let key = spoil(running, "edge", "foo-1").await;
    let path = format!(
        "{}?limit=1&fieldSelector=spec.nodeName%3Dn1",
        pods_in("edge")
    );
    let (code, status, _) = list(running, &path).await;
    assert_eq!(
        (code, &status["reason"]),
        (500, &json!("StorageReadError")),
        "{status}"
    );
    assert_eq!(status["details"]["causes"][0]["field"], key, "{status}");
    // Past the most it aggregates: 100 named, then the list stops.
    for id in 1..=101 {
        corrupt(
            running,
            &format!("/registry/example.com/pods/many/p-{id:04}"),
        )
        .await;
    }
    let (code, status, _) = list(running, &pods_in("many")).await;
    assert_eq!(code, 500, "{status}");
    let causes = status["details"]["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 101, "100 keys and the truncation");
    assert_eq!(
        causes[99]["field"],
        "/registry/example.com/pods/many/p-0100"
    );
    assert_eq!(
        causes[100],
        json!({"reason": "FieldValueTooMany", "message": "too many errors, the list is truncated"})
    );
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .ends_with(" (and 99 more)")
    );
}

/// `store_tests.go` `RunTestDeleteExpectedTransformOrDecodeError`: a pod whose value no
/// longer reads cannot be deleted plainly (500) but can with
/// `ignoreStoreReadErrorWithClusterBreakingPotential`, answered as a bare `Status`; a dry run
/// of it leaves it; then it is gone.
async fn run_test_delete_expected_transform_or_decode_error<B: Backend>(running: &Running<B>) {
    put(running, "test-ns", "foo", Shape::Base).await;
    spoil(running, "test-ns", "foo").await;
    let path = format!("{}/foo", pods_in("test-ns"));
    let (code, status) = request(&running.server, "DELETE", &path, Vec::new()).await;
    assert_eq!(
        (code, &status["reason"]),
        (500, &json!("InternalError")),
        "{status}"
    );
    let (code, status) = request(
        &running.server,
        "DELETE",
        &format!("{path}?dryRun=All&ignoreStoreReadErrorWithClusterBreakingPotential=true"),
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "{status}");
    let (code, _) = request(&running.server, "GET", &path, Vec::new()).await;
    assert_eq!(code, 500, "a dry run leaves it");
    let (code, status) = request(&running.server, "DELETE", &path, unsafe_delete()).await;
    assert_eq!(code, 200, "{status}");
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": "foo", "kind": "Pod"}, "code": 200})
    );
    let (code, _) = request(&running.server, "GET", &path, Vec::new()).await;
    assert_eq!(code, 404);
    let (code, status) = request(&running.server, "DELETE", &path, unsafe_delete()).await;
    assert_eq!(
        (code, &status["reason"]),
        (404, &json!("NotFound")),
        "{status}"
    );
}

/// `store_tests.go` `RunTestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeError`: an
/// unsafe delete of a pod that reads is refused (the storage's invalid object, a 409 in the
/// API), and the pod stays.
async fn run_test_delete_with_suggestion_and_missing_expected_transform_or_decode_error<
    B: Backend,
>(
    running: &Running<B>,
) {
    put(running, "test-ns", "foo", Shape::Base).await;
    let path = format!("{}/foo", pods_in("test-ns"));
    let (code, status) = request(&running.server, "DELETE", &path, unsafe_delete()).await;
    assert_eq!(code, 409, "{status}");
    assert_eq!(
        status["message"],
        "Operation cannot be fulfilled on pods.example.com \"foo\": StorageError: invalid \
         object, Code: 4, Key: /registry/example.com/pods/test-ns/foo, ResourceVersion: 0, \
         AdditionalErrorMsg: unsafe deletion is not allowed because the object is decodable \
         from storage"
    );
    let (code, _) = request(&running.server, "GET", &path, Vec::new()).await;
    assert_eq!(code, 200);
}

/// `store_tests.go` `RunTestDeleteWithConflictAndMissingExpectedTransformOrDecodeError`: an
/// unsafe delete of a pod that does not read, during which an update makes it readable (a
/// backend wrapper writes it between the delete's read and its write): the delete reads it
/// again, finds it readable and refuses (409), and the pod stays as the update left it.
async fn run_test_delete_with_conflict_and_missing_expected_transform_or_decode_error<
    B: Backend,
>(
    running: &Running<B>,
) {
    put(running, "test-ns", "foo", Shape::Base).await;
    let key = spoil(running, "test-ns", "foo").await;
    *running.backend().conflict_on_delete.lock().unwrap() = Some(key.into_bytes());
    let path = format!("{}/foo", pods_in("test-ns"));
    let (code, status) = request(&running.server, "DELETE", &path, unsafe_delete()).await;
    assert_eq!(code, 409, "{status}");
    assert!(
        status["message"].as_str().unwrap().ends_with(
            "unsafe deletion is not allowed because the object is decodable from storage"
        ),
        "{status}"
    );
    assert!(
        running
            .backend()
            .conflict_on_delete
            .lock()
            .unwrap()
            .is_none(),
        "the conflicting update was made"
    );
    let (code, pod) = request(&running.server, "GET", &path, Vec::new()).await;
    assert_eq!(code, 200, "{pod}");
    assert_eq!(pod["metadata"]["labels"], json!({"foo": "bar"}));
}

/// `watcher_tests.go` `RunTestWatchWithUnsafeDelete`: a watch of a pod whose value no longer
/// reads (started after it was spoiled: upstream spoils it by its transformer, without a
/// write) sees its unsafe delete as an `ERROR` event, `StorageReadError`, "saw a DELETED
/// event, but object data is corrupt".
async fn run_test_watch_with_unsafe_delete<B: Backend>(running: &Running<B>) {
    put(running, "test-ns", "foo", Shape::Base).await;
    spoil(running, "test-ns", "foo").await;
    let (_, _, rv) = names_of(running, &format!("{}?resourceVersion=0", pods_in("other"))).await;
    let mut watch = support::Watch::start(
        &running.server,
        &format!("{}?watch=1&resourceVersion={rv}", pods_in("test-ns")),
    )
    .await;
    let path = format!("{}/foo", pods_in("test-ns"));
    let (code, _) = request(&running.server, "DELETE", &path, Vec::new()).await;
    assert_eq!(code, 500, "a plain delete fails");
    let (code, status) = request(&running.server, "DELETE", &path, unsafe_delete()).await;
    assert_eq!(code, 200, "{status}");
    let event = watch
        .next_within(std::time::Duration::from_secs(10))
        .await
        .expect("an event");
    assert_eq!(event["type"], "ERROR", "{event}");
    assert_eq!(event["object"]["reason"], "StorageReadError", "{event}");
    assert!(
        event["object"]["message"].as_str().unwrap().starts_with(
            "saw a DELETED event, but object data is corrupt - object not decodable revision="
        ),
        "{event}"
    );
}

/// `RunTestList`'s table, case for case in upstream's order.
fn cases(s: &Seed) -> Vec<Case> {
    vec![
        Case {
            name: "rejects invalid resource version",
            rv: Some("abc".into()),
            expect_error: true,
            ..Case::default()
        },
        Case {
            name: "rejects resource version and continue token",
            limit: 1,
            continue_from: Some(s.second_continuation.clone()),
            rv: Some("1".into()),
            expect_error: true,
            ..Case::default()
        },
        Case {
            name: "rejects resource version set too high",
            rv: Some(i64::MAX.to_string()),
            expect_rv_too_large: true,
            ..Case::default()
        },
        Case {
            name: "test List on existing key",
            namespace: Some("first"),
            expected_out: vec![s.updated.clone()],
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set to 0",
            namespace: Some("first"),
            expected_alternatives: Some(vec![vec![], vec![s.updated.clone()]]),
            rv: Some("0".into()),
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set before update, match=Exact",
            namespace: Some("first"),
            expected_out: vec![s.created[0].clone()],
            rv: Some(s.created[0].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[0].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set before creation, match=Exact",
            namespace: Some("second"),
            expected_out: vec![],
            rv: Some(s.created[0].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[0].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set after creation, match=Exact",
            namespace: Some("second"),
            expected_out: vec![s.created[1].clone()],
            rv: Some(s.created[1].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[1].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set before first write, match=Exact",
            namespace: Some("first"),
            rv: Some(s.initial_rv.clone()),
            rv_match: "Exact",
            expect_rv_too_old: true,
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set to 0, match=NotOlderThan",
            namespace: Some("first"),
            expected_alternatives: Some(vec![vec![], vec![s.updated.clone()]]),
            rv: Some("0".into()),
            rv_match: "NotOlderThan",
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set to 0, match=Invalid",
            namespace: Some("first"),
            rv: Some("0".into()),
            rv_match: "Invalid",
            expect_error: true,
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set before first write, match=NotOlderThan",
            namespace: Some("first"),
            expected_alternatives: Some(vec![vec![], vec![s.updated.clone()]]),
            rv: Some(s.initial_rv.clone()),
            rv_match: "NotOlderThan",
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set before first write, match=Invalid",
            namespace: Some("first"),
            rv: Some(s.initial_rv.clone()),
            rv_match: "Invalid",
            expect_error: true,
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set to current resource version",
            namespace: Some("first"),
            expected_out: vec![s.updated.clone()],
            rv: Some(s.list_rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set to current resource version, match=Exact",
            namespace: Some("first"),
            expected_out: vec![s.updated.clone()],
            rv: Some(s.list_rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.list_rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List on existing key with resource version set to current resource version, match=NotOlderThan",
            namespace: Some("first"),
            expected_out: vec![s.updated.clone()],
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            ..Case::default()
        },
        Case {
            name: "test List on non-existing key",
            namespace: Some("non-existing"),
            expected_out: vec![],
            ..Case::default()
        },
        Case {
            name: "test List with pod name matching",
            namespace: Some("first"),
            field: Some("metadata.name!=bar"),
            expected_out: vec![],
            ..Case::default()
        },
        Case {
            name: "test List with pod name matching with resource version set to current resource version, match=NotOlderThan",
            namespace: Some("first"),
            field: Some("metadata.name!=bar"),
            expected_out: vec![],
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            ..Case::default()
        },
        Case {
            name: "test List with limit",
            namespace: Some("second"),
            limit: 1,
            expected_out: vec![s.created[1].clone()],
            expect_rv: Some(s.current_rv.clone()),
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[s.created[1].name.as_str(), "\0"].concat(),
                number(&s.current_rv),
            )),
            expected_remaining_item_count: Some(1),
            ..Case::default()
        },
        Case {
            name: "test List with limit at current resource version",
            namespace: Some("second"),
            limit: 1,
            expected_out: vec![s.created[1].clone()],
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[s.created[1].name.as_str(), "\0"].concat(),
                number(&s.list_rv),
            )),
            expected_remaining_item_count: Some(1),
            rv: Some(s.list_rv.clone()),
            expect_rv: Some(s.list_rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with limit at current resource version and match=Exact",
            namespace: Some("second"),
            limit: 1,
            expected_out: vec![s.created[1].clone()],
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[s.created[1].name.as_str(), "\0"].concat(),
                number(&s.list_rv),
            )),
            expected_remaining_item_count: Some(1),
            rv: Some(s.list_rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.list_rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with limit at current resource version and match=NotOlderThan",
            namespace: Some("second"),
            limit: 1,
            expected_out: vec![s.created[1].clone()],
            expect_continue: true,
            expected_remaining_item_count: Some(1),
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expect_rv_not_older_than: Some(s.list_rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with limit at resource version 0",
            namespace: Some("second"),
            limit: 1,
            expected_out: vec![s.created[1].clone()],
            expect_continue: true,
            expected_remaining_item_count: Some(1),
            rv: Some("0".into()),
            expect_rv_not_older_than: Some(s.list_rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with limit at resource version 0 match=NotOlderThan",
            namespace: Some("second"),
            limit: 1,
            expected_out: vec![s.created[1].clone()],
            expect_continue: true,
            expected_remaining_item_count: Some(1),
            rv: Some("0".into()),
            rv_match: "NotOlderThan",
            expect_rv_not_older_than: Some(s.list_rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with limit at resource version before created and match=Exact",
            namespace: Some("second"),
            limit: 1,
            expected_out: vec![],
            expect_continue: false,
            rv: Some(s.created[0].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[0].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with limit at resource version after created and match=Exact",
            namespace: Some("second"),
            limit: 1,
            expected_out: vec![s.created[1].clone()],
            expect_continue: false,
            rv: Some(s.created[1].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[1].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with pregenerated continue token",
            namespace: Some("second"),
            limit: 1,
            continue_from: Some(s.second_continuation.clone()),
            expected_out: vec![s.created[2].clone()],
            ..Case::default()
        },
        Case {
            name: "ignores resource version 0 for List with pregenerated continue token",
            namespace: Some("second"),
            limit: 1,
            continue_from: Some(s.second_continuation.clone()),
            rv: Some("0".into()),
            expected_out: vec![s.created[2].clone()],
            ..Case::default()
        },
        Case {
            name: "test List with multiple levels of directories and expect flattened result",
            namespace: Some("second"),
            expected_out: vec![s.created[1].clone(), s.created[2].clone()],
            ..Case::default()
        },
        Case {
            name: "test List with multiple levels of directories and expect flattened result with current resource version and match=NotOlderThan",
            namespace: Some("second"),
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expected_out: vec![s.created[1].clone(), s.created[2].clone()],
            ..Case::default()
        },
        Case {
            name: "test List with filter returning only one item, ensure only a single page returned",
            field: Some("metadata.name=barfoo"),
            limit: 1,
            expected_out: vec![s.created[3].clone()],
            expect_continue: true,
            ..Case::default()
        },
        Case {
            name: "test List with filter returning only one item, ensure only a single page returned with current resource version and match=NotOlderThan",
            field: Some("metadata.name=barfoo"),
            limit: 1,
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expected_out: vec![s.created[3].clone()],
            expect_rv_not_older_than: Some(s.list_rv.clone()),
            expect_continue: true,
            ..Case::default()
        },
        Case {
            name: "test List with filter returning only one item, covers the entire list",
            field: Some("metadata.name=barfoo"),
            limit: 2,
            expected_out: vec![s.created[3].clone()],
            expect_continue: false,
            ..Case::default()
        },
        Case {
            name: "test List with filter returning only one item, covers the entire list with current resource version and match=NotOlderThan",
            field: Some("metadata.name=barfoo"),
            limit: 2,
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expected_out: vec![s.created[3].clone()],
            expect_rv_not_older_than: Some(s.list_rv.clone()),
            expect_continue: false,
            ..Case::default()
        },
        Case {
            name: "test List with filter returning only one item, covers the entire list, with resource version 0",
            field: Some("metadata.name=barfoo"),
            limit: 2,
            rv: Some("0".into()),
            expected_alternatives: Some(vec![vec![], vec![s.created[3].clone()]]),
            expect_continue: false,
            ..Case::default()
        },
        Case {
            name: "test List with filter returning two items, more pages possible",
            field: Some("metadata.name=bar"),
            limit: 2,
            expect_continue: true,
            expected_out: vec![s.updated.clone(), s.created[1].clone()],
            ..Case::default()
        },
        Case {
            name: "test List with filter returning two items, more pages possible with current resource version and match=NotOlderThan",
            field: Some("metadata.name=bar"),
            limit: 2,
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expect_continue: true,
            expected_out: vec![s.updated.clone(), s.created[1].clone()],
            ..Case::default()
        },
        Case {
            name: "filter returns two items split across multiple pages",
            field: Some("metadata.name=foo"),
            limit: 2,
            expected_out: vec![s.created[2].clone(), s.created[4].clone()],
            ..Case::default()
        },
        Case {
            name: "filter returns two items split across multiple pages with current resource version and match=NotOlderThan",
            field: Some("metadata.name=foo"),
            limit: 2,
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expected_out: vec![s.created[2].clone(), s.created[4].clone()],
            ..Case::default()
        },
        Case {
            name: "filter returns one item for last page, ends on last item, not full",
            field: Some("metadata.name=foo"),
            limit: 2,
            continue_from: Some(token("third/barfoo", s.continue_rv)),
            expected_out: vec![s.created[4].clone()],
            ..Case::default()
        },
        Case {
            name: "filter returns one item for last page, starts on last item, full",
            field: Some("metadata.name=foo"),
            limit: 1,
            continue_from: Some(token("third/barfoo", s.continue_rv)),
            expected_out: vec![s.created[4].clone()],
            ..Case::default()
        },
        Case {
            name: "filter returns one item for last page, starts on last item, partial page",
            field: Some("metadata.name=foo"),
            limit: 2,
            continue_from: Some(token("third/barfoo", s.continue_rv)),
            expected_out: vec![s.created[4].clone()],
            ..Case::default()
        },
        Case {
            name: "filter returns two items, page size equal to total list size",
            field: Some("metadata.name=foo"),
            limit: 5,
            expected_out: vec![s.created[2].clone(), s.created[4].clone()],
            ..Case::default()
        },
        Case {
            name: "filter returns two items, page size equal to total list size with current resource version and match=NotOlderThan",
            field: Some("metadata.name=foo"),
            limit: 5,
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expected_out: vec![s.created[2].clone(), s.created[4].clone()],
            ..Case::default()
        },
        Case {
            name: "filter returns one item, page size equal to total list size",
            field: Some("metadata.name=barfoo"),
            limit: 5,
            expected_out: vec![s.created[3].clone()],
            ..Case::default()
        },
        Case {
            name: "filter returns one item, page size equal to total list size with current resource version and match=NotOlderThan",
            field: Some("metadata.name=barfoo"),
            limit: 5,
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expected_out: vec![s.created[3].clone()],
            ..Case::default()
        },
        Case {
            name: "list all items",
            expected_out: vec![
                s.updated.clone(),
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
                s.created[4].clone(),
            ],
            ..Case::default()
        },
        Case {
            name: "list all items with current resource version and match=NotOlderThan",
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expected_out: vec![
                s.updated.clone(),
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
                s.created[4].clone(),
            ],
            ..Case::default()
        },
        Case {
            name: "verify list returns updated version of object; filter returns one item, page size equal to total list size with current resource version and match=NotOlderThan",
            field: Some("spec.nodeName=fakeNode"),
            limit: 5,
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expected_out: vec![s.updated.clone()],
            ..Case::default()
        },
        Case {
            name: "verify list does not return deleted object; filter for deleted object, page size equal to total list size with current resource version and match=NotOlderThan",
            field: Some("metadata.name=baz"),
            limit: 5,
            rv: Some(s.list_rv.clone()),
            rv_match: "NotOlderThan",
            expected_out: vec![],
            ..Case::default()
        },
        Case {
            name: "test consistent List",
            namespace: Some("empty"),
            rv: Some("".into()),
            expect_rv: Some(s.current_rv.clone()),
            expected_out: vec![],
            ..Case::default()
        },
        Case {
            name: "test non-consistent List",
            namespace: Some("empty"),
            rv: Some("0".into()),
            expect_rv_not_older_than: Some(s.initial_rv.clone()),
            expected_out: vec![],
            ..Case::default()
        },
        Case {
            name: "test List with resource version set before first write, match=Exact",
            rv: Some(s.initial_rv.clone()),
            rv_match: "Exact",
            expect_rv_too_old: true,
            ..Case::default()
        },
        Case {
            name: "test List with resource version of first write, match=Exact",
            expected_out: vec![s.created[0].clone()],
            rv: Some(s.created[0].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[0].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with resource version of second write, match=Exact",
            expected_out: vec![s.created[0].clone(), s.created[1].clone()],
            rv: Some(s.created[1].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[1].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with resource version of third write, match=Exact",
            expected_out: vec![
                s.created[0].clone(),
                s.created[1].clone(),
                s.created[2].clone(),
            ],
            rv: Some(s.created[2].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[2].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with resource version of fourth write, match=Exact",
            expected_out: vec![
                s.created[0].clone(),
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
            ],
            rv: Some(s.created[3].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[3].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with resource version of fifth write, match=Exact",
            expected_out: vec![
                s.created[0].clone(),
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
                s.created[4].clone(),
            ],
            rv: Some(s.created[4].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[4].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with resource version of six write, match=Exact",
            expected_out: vec![
                s.created[0].clone(),
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
                s.created[4].clone(),
                s.created[5].clone(),
            ],
            rv: Some(s.created[5].rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.created[5].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with resource version of seventh write, match=Exact",
            expected_out: vec![
                s.updated.clone(),
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
                s.created[4].clone(),
                s.created[5].clone(),
            ],
            rv: Some(s.updated.rv.clone()),
            rv_match: "Exact",
            expect_rv: Some(s.updated.rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with resource version of eight write, match=Exact",
            expected_out: vec![
                s.updated.clone(),
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
                s.created[4].clone(),
            ],
            rv: Some(s.continue_rv.to_string()),
            rv_match: "Exact",
            expect_rv: Some(s.continue_rv.to_string()),
            ..Case::default()
        },
        Case {
            name: "test List with resource version after writes, match=Exact",
            expected_out: vec![
                s.updated.clone(),
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
                s.created[4].clone(),
            ],
            rv: Some((s.continue_rv + 1).to_string()),
            rv_match: "Exact",
            expect_rv: Some((s.continue_rv + 1).to_string()),
            ..Case::default()
        },
        Case {
            name: "test List with future resource version, match=Exact",
            rv: Some((s.continue_rv + 2).to_string()),
            rv_match: "Exact",
            expect_rv_too_large: true,
            ..Case::default()
        },
        Case {
            name: "test List with limit, resource version of second write, match=Exact",
            limit: 1,
            expected_out: vec![s.created[0].clone()],
            rv: Some(s.created[1].rv.clone()),
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[
                    s.created[0].namespace.as_str(),
                    "/",
                    s.created[0].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[1].rv),
            )),
            rv_match: "Exact",
            expect_rv: Some(s.created[1].rv.clone()),
            expected_remaining_item_count: Some(1),
            ..Case::default()
        },
        Case {
            name: "test List with limit, resource version of third write, match=Exact",
            limit: 2,
            rv: Some(s.created[2].rv.clone()),
            rv_match: "Exact",
            expected_out: vec![s.created[0].clone(), s.created[1].clone()],
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[
                    s.created[1].namespace.as_str(),
                    "/",
                    s.created[1].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[2].rv),
            )),
            expect_rv: Some(s.created[2].rv.clone()),
            expected_remaining_item_count: Some(1),
            ..Case::default()
        },
        Case {
            name: "test List with limit, resource version of fourth write, match=Exact",
            limit: 4,
            rv: Some(s.created[3].rv.clone()),
            rv_match: "Exact",
            expected_out: vec![
                s.created[0].clone(),
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
            ],
            expect_rv: Some(s.created[3].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with limit, resource version of fifth write, match=Exact",
            limit: 1,
            rv: Some(s.created[4].rv.clone()),
            rv_match: "Exact",
            expected_out: vec![s.created[0].clone()],
            expect_rv: Some(s.created[4].rv.clone()),
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[
                    s.created[0].namespace.as_str(),
                    "/",
                    s.created[0].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[4].rv),
            )),
            expected_remaining_item_count: Some(4),
            ..Case::default()
        },
        Case {
            name: "test List with limit, resource version of six write, match=Exact",
            limit: 2,
            rv: Some(s.created[5].rv.clone()),
            rv_match: "Exact",
            expected_out: vec![s.created[0].clone(), s.created[1].clone()],
            expect_rv: Some(s.created[5].rv.clone()),
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[
                    s.created[1].namespace.as_str(),
                    "/",
                    s.created[1].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[5].rv),
            )),
            expected_remaining_item_count: Some(4),
            ..Case::default()
        },
        Case {
            name: "test List with limit, resource version of seventh write, match=Exact",
            limit: 4,
            rv: Some(s.updated.rv.clone()),
            rv_match: "Exact",
            expected_out: vec![
                s.updated.clone(),
                s.created[1].clone(),
                s.created[5].clone(),
                s.created[2].clone(),
            ],
            expect_rv: Some(s.updated.rv.clone()),
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[
                    s.created[2].namespace.as_str(),
                    "/",
                    s.created[2].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.updated.rv),
            )),
            expected_remaining_item_count: Some(2),
            ..Case::default()
        },
        Case {
            name: "test List with limit, resource version of eight write, match=Exact",
            limit: 8,
            expected_out: vec![
                s.updated.clone(),
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
                s.created[4].clone(),
            ],
            rv: Some(s.continue_rv.to_string()),
            rv_match: "Exact",
            expect_rv: Some(s.continue_rv.to_string()),
            ..Case::default()
        },
        Case {
            name: "test List with limit, resource version after writes, match=Exact",
            limit: 1,
            rv: Some((s.continue_rv + 1).to_string()),
            rv_match: "Exact",
            expected_out: vec![s.updated.clone()],
            expect_rv: Some((s.continue_rv + 1).to_string()),
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[
                    s.updated.namespace.as_str(),
                    "/",
                    s.updated.name.as_str(),
                    "\0",
                ]
                .concat(),
                s.continue_rv + 1,
            )),
            expected_remaining_item_count: Some(4),
            ..Case::default()
        },
        Case {
            name: "test List with continue, resource version before first write",
            limit: 1,
            continue_from: Some(token(
                &[
                    s.created[0].namespace.as_str(),
                    "/",
                    s.created[0].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.initial_rv),
            )),
            expect_continue_too_old: true,
            ..Case::default()
        },
        Case {
            name: "test List with continue, resource version of first write",
            limit: 1,
            continue_from: Some(token(
                &[
                    s.created[0].namespace.as_str(),
                    "/",
                    s.created[0].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[0].rv),
            )),
            expected_out: vec![],
            expect_rv: Some(s.created[0].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with continue, resource version of second write",
            limit: 1,
            continue_from: Some(token(
                &[
                    s.created[0].namespace.as_str(),
                    "/",
                    s.created[0].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[1].rv),
            )),
            expected_out: vec![s.created[1].clone()],
            expect_rv: Some(s.created[1].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with continue, resource version of third write",
            limit: 2,
            continue_from: Some(token(
                &[
                    s.created[1].namespace.as_str(),
                    "/",
                    s.created[1].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[2].rv),
            )),
            expected_out: vec![s.created[2].clone()],
            expect_rv: Some(s.created[2].rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with continue, resource version of fifth write",
            limit: 1,
            continue_from: Some(token(
                &[
                    s.created[0].namespace.as_str(),
                    "/",
                    s.created[0].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[4].rv),
            )),
            expected_out: vec![s.created[1].clone()],
            expect_rv: Some(s.created[4].rv.clone()),
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[
                    s.created[1].namespace.as_str(),
                    "/",
                    s.created[1].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[4].rv),
            )),
            expected_remaining_item_count: Some(3),
            ..Case::default()
        },
        Case {
            name: "test List with continue, resource version of six write",
            limit: 2,
            continue_from: Some(token(
                &[
                    s.created[1].namespace.as_str(),
                    "/",
                    s.created[1].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[5].rv),
            )),
            expected_out: vec![s.created[5].clone(), s.created[2].clone()],
            expect_rv: Some(s.created[5].rv.clone()),
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[
                    s.created[2].namespace.as_str(),
                    "/",
                    s.created[2].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.created[5].rv),
            )),
            expected_remaining_item_count: Some(2),
            ..Case::default()
        },
        Case {
            name: "test List with continue, resource version of seventh write",
            limit: 4,
            continue_from: Some(token(
                &[
                    s.created[2].namespace.as_str(),
                    "/",
                    s.created[2].name.as_str(),
                    "\0",
                ]
                .concat(),
                number(&s.updated.rv),
            )),
            expected_out: vec![s.created[3].clone(), s.created[4].clone()],
            expect_rv: Some(s.updated.rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with continue, resource version after writes",
            limit: 1,
            continue_from: Some(token(
                &[
                    s.updated.namespace.as_str(),
                    "/",
                    s.updated.name.as_str(),
                    "\0",
                ]
                .concat(),
                s.continue_rv + 1,
            )),
            expected_out: vec![s.created[1].clone()],
            expect_rv: Some((s.continue_rv + 1).to_string()),
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[
                    s.created[1].namespace.as_str(),
                    "/",
                    s.created[1].name.as_str(),
                    "\0",
                ]
                .concat(),
                s.continue_rv + 1,
            )),
            expected_remaining_item_count: Some(3),
            ..Case::default()
        },
        Case {
            name: "test List with continue from second pod, negative resource version gives consistent read",
            continue_from: Some(token(
                &[
                    s.created[0].namespace.as_str(),
                    "/",
                    s.created[0].name.as_str(),
                    "\0",
                ]
                .concat(),
                -1,
            )),
            expected_out: vec![
                s.created[1].clone(),
                s.created[2].clone(),
                s.created[3].clone(),
                s.created[4].clone(),
            ],
            expect_rv: Some(s.current_rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with continue from second pod and limit, negative resource version gives consistent read",
            limit: 2,
            continue_from: Some(token(
                &[
                    s.created[0].namespace.as_str(),
                    "/",
                    s.created[0].name.as_str(),
                    "\0",
                ]
                .concat(),
                -1,
            )),
            expected_out: vec![s.created[1].clone(), s.created[2].clone()],
            expect_continue: true,
            expect_continue_exact: Some(token(
                &[
                    s.created[2].namespace.as_str(),
                    "/",
                    s.created[2].name.as_str(),
                    "\0",
                ]
                .concat(),
                s.continue_rv + 1,
            )),
            expect_rv: Some(s.current_rv.clone()),
            expected_remaining_item_count: Some(2),
            ..Case::default()
        },
        Case {
            name: "test List with continue from third pod, negative resource version gives consistent read",
            continue_from: Some(token(
                &[
                    s.created[2].namespace.as_str(),
                    "/",
                    s.created[2].name.as_str(),
                    "\0",
                ]
                .concat(),
                -1,
            )),
            expected_out: vec![s.created[3].clone(), s.created[4].clone()],
            expect_rv: Some(s.current_rv.clone()),
            ..Case::default()
        },
        Case {
            name: "test List with continue from empty fails",
            continue_from: Some(token("", s.continue_rv)),
            expect_error: true,
            ..Case::default()
        },
        Case {
            name: "test List with continue from first pod, empty resource version fails",
            continue_from: Some(token(
                &[
                    s.created[0].namespace.as_str(),
                    "/",
                    s.created[0].name.as_str(),
                    "\0",
                ]
                .concat(),
                0,
            )),
            expect_error: true,
            ..Case::default()
        },
        Case {
            name: "test List with negative rv fails",
            rv: Some("-1".into()),
            expect_error: true,
            ..Case::default()
        },
    ]
}
