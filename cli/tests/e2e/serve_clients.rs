//! `apfkit serve` against the other real clients: the Python `kubernetes` client (PyPI) and
//! kube-rs with apfkit's own types. `.ci/run` installs the Python client; without it the test
//! fails, naming the package.

use std::process::Command;
use std::time::Duration;

use apfkit_types::flowcontrol::{v1, v1beta3};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;

use super::serve::{NO_APF, OLDER_VERSIONS, Server};

const PYTHON_CLIENT: &str = r#"
import json, sys
from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
api = client.FlowcontrolApiserverV1Api()
names = [fs.metadata.name for fs in api.list_flow_schema().items]
body = client.V1FlowSchema(
    metadata=client.V1ObjectMeta(name="from-python", labels={"client": "python"}),
    spec=client.V1FlowSchemaSpec(
        priority_level_configuration=client.V1PriorityLevelConfigurationReference(name="global-default"),
        matching_precedence=700,
    ),
)
created = api.create_flow_schema(body)
events = []
stream = watch.Watch()
for event in stream.stream(api.list_flow_schema, label_selector="client=python", timeout_seconds=10):
    events.append([event["type"], event["object"].metadata.name])
    if event["type"] == "ADDED":
        api.delete_flow_schema("from-python")
    if event["type"] == "DELETED":
        stream.stop()
print(json.dumps({
    "names": names,
    "generation": created.metadata.generation,
    "precedence": created.spec.matching_precedence,
    "events": events,
}))
"#;

/// The Python interpreter (`APFKIT_PYTHON`, or `python3`), once it is known to have the
/// package `module`; the test fails, naming the package, when it has not.
pub(super) fn python_with(module: &str) -> String {
    let python = std::env::var("APFKIT_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let probe = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output();
    assert!(
        probe.as_ref().is_ok_and(|o| o.status.success()),
        "the Python package `{module}` is needed (pip install {module}; .ci/run installs \
         it): {probe:?}"
    );
    python
}

/// Runs a Python `script` with the server's kubeconfig as its argument; answers the JSON it
/// printed.
pub(super) fn run_python(server: &Server, script: &str) -> serde_json::Value {
    let mut command = Command::new(python_with("kubernetes"));
    command.args(["-c", script]).arg(server.kubeconfig());
    // The dynamic client caches discovery in the temporary folder: the server's, which goes
    // with it, not the machine's.
    command.env(
        "TMPDIR",
        server.kubeconfig().parent().expect("a data folder"),
    );
    let output = super::run_within(command, b"", Duration::from_secs(60), |_| {});
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_python_client_lists_creates_and_watches() {
    let server = Server::start(&[NO_APF]);
    let report = run_python(&server, PYTHON_CLIENT);
    assert!(
        report["names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "catch-all"),
        "{report}"
    );
    assert_eq!(report["generation"], 1);
    assert_eq!(report["precedence"], 700);
    assert_eq!(
        report["events"],
        serde_json::json!([["ADDED", "from-python"], ["DELETED", "from-python"]])
    );
}

/// A kube-rs client of the server, from the kubeconfig it wrote.
pub(super) async fn kube_client(server: &Server) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// A v1beta3 FlowSchema of `name` at `precedence`.
pub(super) fn flow_schema(name: &str, precedence: i32) -> v1beta3::FlowSchema {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3",
        "kind": "FlowSchema",
        "metadata": {"name": name},
        "spec": {
            "priorityLevelConfiguration": {"name": "global-default"},
            "matchingPrecedence": precedence,
        },
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_reads_writes_and_watches_with_apfkit_types() {
    let server = Server::start(&[OLDER_VERSIONS, "--no-bootstrap", NO_APF]);
    let client = kube_client(&server).await;
    let schemas: Api<v1beta3::FlowSchema> = Api::all(client.clone());

    // A watcher on v1 sees what is written through v1beta3.
    let v1_schemas: Api<v1::FlowSchema> = Api::all(client.clone());
    let (seen_sender, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let watching = tokio::spawn(async move {
        let mut events = watcher(v1_schemas, watcher::Config::default()).boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let text = match event {
                watcher::Event::Apply(fs) => format!(
                    "apply {} {}",
                    fs.metadata.name.unwrap_or_default(),
                    fs.spec.matching_precedence.unwrap_or_default()
                ),
                watcher::Event::Delete(fs) => {
                    format!("delete {}", fs.metadata.name.unwrap_or_default())
                }
                watcher::Event::InitDone => "init done".to_owned(),
                _ => continue,
            };
            if seen_sender.send(text).is_err() {
                break;
            }
        }
    });
    assert_eq!(seen.recv().await.as_deref(), Some("init done"));

    let created = schemas
        .create(&PostParams::default(), &flow_schema("team-rs", 300))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let patched = schemas
        .patch(
            "team-rs",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"matchingPrecedence": 301}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.matching_precedence, Some(301));
    for name in ["team-rs-2", "team-rs-3"] {
        schemas
            .create(&PostParams::default(), &flow_schema(name, 302))
            .await
            .unwrap();
    }
    // Pages of one, followed by continue tokens.
    let first = schemas.list(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(first.items.len(), 1);
    let token = first.metadata.continue_.clone().expect("more pages");
    let second = schemas
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap();
    assert_ne!(first.items[0].metadata.name, second.items[0].metadata.name);
    let gone = schemas
        .get("nothing-here")
        .await
        .expect_err("no such object");
    match gone {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 404);
            assert_eq!(status.reason, "NotFound");
        }
        other => panic!("{other:?}"),
    }
    schemas
        .delete("team-rs", &DeleteParams::default())
        .await
        .unwrap();

    let mut events = Vec::new();
    while events.len() < 5 {
        match tokio::time::timeout(Duration::from_secs(20), seen.recv()).await {
            Ok(Some(event)) => events.push(event),
            other => panic!("watcher stopped after {events:?}: {other:?}"),
        }
    }
    watching.abort();
    assert_eq!(
        events,
        [
            "apply team-rs 300",
            "apply team-rs 301",
            "apply team-rs-2 302",
            "apply team-rs-3 302",
            "delete team-rs",
        ]
    );
}

/// kube-rs's watcher in streaming-list mode (WatchList: `sendInitialEvents=true`, what
/// client-go 1.35's informers ask for first) syncs: the objects come as initial events, the
/// bookmark annotated `k8s.io/initial-events-end` ends them (kube-rs waits for it, as
/// client-go's reflector does), and later writes keep coming.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_watcher_syncs_by_streaming_list_and_keeps_receiving() {
    let server = Server::start(&[OLDER_VERSIONS, "--no-bootstrap", NO_APF]);
    let client = kube_client(&server).await;
    let schemas: Api<v1::FlowSchema> = Api::all(client.clone());
    let writer: Api<v1beta3::FlowSchema> = Api::all(client);
    for name in ["stream-a", "stream-b", "stream-c"] {
        writer
            .create(&PostParams::default(), &flow_schema(name, 500))
            .await
            .unwrap();
    }
    let (seen_sender, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let watching = tokio::spawn(async move {
        let config = watcher::Config::default().streaming_lists();
        let mut events = watcher(schemas, config).boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let text = match event {
                watcher::Event::Init => "init".to_owned(),
                watcher::Event::InitApply(fs) => {
                    format!("init apply {}", fs.metadata.name.unwrap_or_default())
                }
                watcher::Event::InitDone => "init done".to_owned(),
                watcher::Event::Apply(fs) => {
                    format!("apply {}", fs.metadata.name.unwrap_or_default())
                }
                watcher::Event::Delete(fs) => {
                    format!("delete {}", fs.metadata.name.unwrap_or_default())
                }
            };
            if seen_sender.send(text).is_err() {
                break;
            }
        }
    });
    let mut events = Vec::new();
    while events.last().map(String::as_str) != Some("init done") {
        match tokio::time::timeout(Duration::from_secs(20), seen.recv()).await {
            Ok(Some(event)) => events.push(event),
            other => panic!("the watcher did not sync: {events:?} then {other:?}"),
        }
    }
    assert_eq!(
        events,
        [
            "init",
            "init apply stream-a",
            "init apply stream-b",
            "init apply stream-c",
            "init done"
        ]
    );
    writer
        .create(&PostParams::default(), &flow_schema("stream-d", 500))
        .await
        .unwrap();
    writer
        .delete("stream-a", &DeleteParams::default())
        .await
        .unwrap();
    let mut after = Vec::new();
    while after.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(20), seen.recv()).await {
            Ok(Some(event)) => after.push(event),
            other => panic!("the watcher stopped after {after:?}: {other:?}"),
        }
    }
    watching.abort();
    assert_eq!(after, ["apply stream-d", "delete stream-a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_applies_server_side_across_versions() {
    let server = Server::start(&[OLDER_VERSIONS, "--no-bootstrap", NO_APF]);
    let client = kube_client(&server).await;
    let beta: Api<v1beta3::FlowSchema> = Api::all(client.clone());
    let stable: Api<v1::FlowSchema> = Api::all(client);
    let config = flow_schema("applied", 300);
    let params = PatchParams::apply("rs-operator");
    // Apply creates the object (stored in v1; applied in v1beta3).
    let created = beta
        .patch("applied", &params, &Patch::Apply(&config))
        .await
        .unwrap();
    assert_eq!(created.spec.matching_precedence, Some(300));
    let entries = created.metadata.managed_fields.clone().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].manager.as_deref(), Some("rs-operator"));
    assert_eq!(entries[0].operation.as_deref(), Some("Apply"));
    assert_eq!(
        entries[0].api_version.as_deref(),
        Some("flowcontrol.apiserver.k8s.io/v1beta3")
    );
    // The same configuration again changes nothing.
    let again = beta
        .patch("applied", &params, &Patch::Apply(&config))
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        created.metadata.resource_version
    );
    // Another manager applying in v1 conflicts on the field the first applied in v1beta3.
    let other: v1::FlowSchema = serde_json::from_value(serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": "applied"},
        "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 310},
    }))
    .unwrap();
    let refused = stable
        .patch(
            "applied",
            &PatchParams::apply("other"),
            &Patch::Apply(&other),
        )
        .await
        .expect_err("a conflict");
    match refused {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 409);
            assert_eq!(status.reason, "Conflict");
            assert_eq!(
                status.message,
                "Apply failed with 1 conflict: conflict with \"rs-operator\": .spec.matchingPrecedence"
            );
        }
        other => panic!("{other:?}"),
    }
    let forced = stable
        .patch(
            "applied",
            &PatchParams::apply("other").force(),
            &Patch::Apply(&other),
        )
        .await
        .unwrap();
    assert_eq!(forced.spec.matching_precedence, Some(310));
    let managers: Vec<(Option<String>, Option<String>)> = forced
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .map(|e| (e.manager, e.api_version))
        .collect();
    assert!(
        managers.contains(&(
            Some("other".to_owned()),
            Some("flowcontrol.apiserver.k8s.io/v1".to_owned())
        )),
        "{managers:?}"
    );
}

const PYTHON_APPLY: &str = r#"
import json, sys
from kubernetes import config, dynamic
from kubernetes.client import api_client

client = dynamic.DynamicClient(api_client.ApiClient(configuration=config.load_kube_config(config_file=sys.argv[1])))
schemas = client.resources.get(api_version="flowcontrol.apiserver.k8s.io/v1", kind="FlowSchema")
body = {
    "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
    "kind": "FlowSchema",
    "metadata": {"name": "from-python"},
    "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 800},
}
first = schemas.server_side_apply(body=body, name="from-python", field_manager="python")
body["spec"]["matchingPrecedence"] = 801
second = schemas.server_side_apply(body=body, name="from-python", field_manager="python")
print(json.dumps({
    "first": first.spec.matchingPrecedence,
    "second": second.spec.matchingPrecedence,
    "managers": [[m.manager, m.operation] for m in second.metadata.managedFields],
}))
"#;

#[test]
fn the_python_client_applies_server_side() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    let report = run_python(&server, PYTHON_APPLY);
    assert_eq!(
        report,
        serde_json::json!({"first": 800, "second": 801, "managers": [["python", "Apply"]]})
    );
}

/// test/e2e/apimachinery/watch.go's Watchers tests, rewritten from ConfigMaps onto
/// FlowSchemas (a data mutation becomes an annotation), with the Python client. Each watch
/// starts at the revision of a list taken just before (upstream starts at "now" and relies on
/// the watch being open before the writes).
const WATCHERS: &str = r#"
import json, sys, threading, time
from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
api = client.FlowcontrolApiserverV1Api()
KEY = "watch-this-configmap"

def create(name, value):
    body = client.V1FlowSchema(
        metadata=client.V1ObjectMeta(name=name, labels={KEY: value}),
        spec=client.V1FlowSchemaSpec(
            priority_level_configuration=client.V1PriorityLevelConfigurationReference(name="global-default"),
            matching_precedence=900,
        ),
    )
    return api.create_flow_schema(body).metadata.resource_version

def mutate(name, value):
    return api.patch_flow_schema(name, {"metadata": {"annotations": {"mutation": value}}}).metadata.resource_version

def relabel(name, value):
    return api.patch_flow_schema(name, {"metadata": {"labels": {KEY: value}}}).metadata.resource_version

def delete(name):
    api.delete_flow_schema(name)

def now():
    return api.list_flow_schema().metadata.resource_version

class Watcher:
    def __init__(self, values, resource_version):
        self.events = []
        self.stream = watch.Watch()
        selector = "%s in (%s)" % (KEY, ",".join(values))
        threading.Thread(target=self.run, args=(selector, resource_version), daemon=True).start()

    def run(self, selector, resource_version):
        for event in self.stream.stream(api.list_flow_schema, label_selector=selector,
                                        resource_version=resource_version, timeout_seconds=30):
            meta = event["object"].metadata
            self.events.append([event["type"], meta.name, meta.resource_version])

    def wait_for(self, count):
        deadline = time.time() + 20
        while len(self.events) < count and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # anything more that comes is an event too many
        return list(self.events)

report = {}

# "should observe add, update, and delete watch notifications on configmaps"
A, B = "multiple-watchers-A", "multiple-watchers-B"
rv = now()
watch_a, watch_b, watch_ab = Watcher([A], rv), Watcher([B], rv), Watcher([A, B], rv)
create("e2e-watch-test-configmap-a", A)
mutate("e2e-watch-test-configmap-a", "1")
mutate("e2e-watch-test-configmap-a", "2")
delete("e2e-watch-test-configmap-a")
create("e2e-watch-test-configmap-b", B)
delete("e2e-watch-test-configmap-b")
report["multiple"] = {
    "A": [e[:2] for e in watch_a.wait_for(4)],
    "B": [e[:2] for e in watch_b.wait_for(2)],
    "AB": [e[:2] for e in watch_ab.wait_for(6)],
}

# "should be able to start watching from a specific resource version"
name, value = "e2e-watch-test-resource-version", "from-resource-version"
create(name, value)
first = mutate(name, "1")
second = mutate(name, "2")
delete(name)
report["from_resource_version"] = {
    "events": Watcher([value], first).wait_for(2), "second": second,
}

# "should be able to restart watching from the last resource version observed by the
# previous watch"
name, value = "e2e-watch-test-watch-closed", "watch-closed-and-restarted"
broken = Watcher([value], now())
create(name, value)
mutate(name, "1")
seen = broken.wait_for(2)
broken.stream.stop()
second = mutate(name, "2")
restarted = Watcher([value], seen[-1][2])
delete(name)
report["restarted"] = {
    "first": [e[:2] for e in seen], "events": restarted.wait_for(2), "second": second,
}

# "should observe an object deletion if it stops meeting the requirements of the selector"
name, value = "e2e-watch-test-label-changed", "label-changed-and-restored"
changed = Watcher([value], now())
create(name, value)
first = mutate(name, "1")
relabel(name, "wrong-value")
before = changed.wait_for(3)
mutate(name, "2")
restored = relabel(name, value)
third = mutate(name, "3")
delete(name)
report["label_changed"] = {
    "events": changed.wait_for(6), "first": first, "restored": restored, "third": third,
}
print(json.dumps(report))
"#;

/// watch.go's four Watchers tests against `server`, each event checked by type, name and,
/// where upstream checks the object, its resourceVersion.
fn watchers_observe_what_kube_apiservers_would(server: &Server) {
    let report = run_python(server, WATCHERS);
    let named = |events: &[(&str, &str)]| -> serde_json::Value {
        events
            .iter()
            .map(|(kind, name)| serde_json::json!([kind, name]))
            .collect()
    };
    let (a, b) = ("e2e-watch-test-configmap-a", "e2e-watch-test-configmap-b");
    let multiple = &report["multiple"];
    assert_eq!(
        multiple["A"],
        named(&[
            ("ADDED", a),
            ("MODIFIED", a),
            ("MODIFIED", a),
            ("DELETED", a)
        ])
    );
    assert_eq!(multiple["B"], named(&[("ADDED", b), ("DELETED", b)]));
    assert_eq!(
        multiple["AB"],
        named(&[
            ("ADDED", a),
            ("MODIFIED", a),
            ("MODIFIED", a),
            ("DELETED", a),
            ("ADDED", b),
            ("DELETED", b)
        ])
    );
    let from = &report["from_resource_version"];
    let events = from["events"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{from}");
    assert_eq!(
        (&events[0][0], &events[0][2]),
        (&"MODIFIED".into(), &from["second"])
    );
    assert_eq!(events[1][0], "DELETED");
    let restarted = &report["restarted"];
    let name = "e2e-watch-test-watch-closed";
    assert_eq!(
        restarted["first"],
        named(&[("ADDED", name), ("MODIFIED", name)])
    );
    let events = restarted["events"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{restarted}");
    assert_eq!(
        (&events[0][0], &events[0][2]),
        (&"MODIFIED".into(), &restarted["second"])
    );
    assert_eq!(events[1][0], "DELETED");
    let changed = &report["label_changed"];
    let events = changed["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e[0].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "ADDED", "MODIFIED", "DELETED", "ADDED", "MODIFIED", "DELETED"
        ]
    );
    assert_eq!(events[1][2], changed["first"]);
    assert_eq!(events[3][2], changed["restored"]);
    assert_eq!(events[4][2], changed["third"]);
}

#[test]
fn watch_go_watchers_with_the_python_client_on_the_embedded_store() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    watchers_observe_what_kube_apiservers_would(&server);
}

#[test]
fn watch_go_watchers_with_the_python_client_on_etcd() {
    let etcd = apfkit_test_support::etcd::Etcd::start();
    let server = Server::start(&["--etcd-servers", &etcd.endpoint, "--no-bootstrap", NO_APF]);
    watchers_observe_what_kube_apiservers_would(&server);
}

/// test/e2e/apimachinery/flowcontrol.go, "[Conformance] should support FlowSchema API
/// operations" and "…PriorityLevelConfiguration API operations" (Release v1.29), step by step
/// with the Python client: discovery of the group, version, resource and `/status`; three
/// creates from one `generateName` template; get, list and a watch from the list's
/// revision by label, whose events for the merge patch and the update must be `MODIFIED`;
/// `/status` get, merge patch and update; delete; delete-collection by label.
const FLOWCONTROL_API_OPERATIONS: &str = r#"
import json, random, string, sys, threading, time
from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
api = client.FlowcontrolApiserverV1Api()
MERGE = "application/merge-patch+json"

def discovery(plural):
    groups = client.ApisApi().get_api_versions().groups
    assert any(g.name == "flowcontrol.apiserver.k8s.io" and any(v.version == "v1" for v in g.versions)
               for g in groups), groups
    group = client.FlowcontrolApiserverApi().get_api_group()
    assert any(v.version == "v1" for v in group.versions), group
    names = [r.name for r in api.get_api_resources().resources]
    assert plural in names and plural + "/status" in names, names

def operations(kind, plural, template_spec, patch_spec, check_patched, update, check_updated, status_condition):
    discovery(plural)
    call = lambda verb, *args, **kwargs: getattr(api, verb % kind)(*args, **kwargs)
    label_key = "example-e2e-%s-label" % ("fs" if kind == "flow_schema" else "pl")
    label_value = "".join(random.choice(string.ascii_lowercase) for _ in range(8))
    label = "%s=%s" % (label_key, label_value)
    template = {
        "metadata": {"generateName": "e2e-example-%s-" % ("fs" if kind == "flow_schema" else "pl"),
                     "labels": {label_key: label_value}},
        "spec": template_spec,
    }
    created = [call("create_%s", template) for _ in range(3)][-1]
    read = call("read_%s", created.metadata.name)
    assert read.metadata.uid == created.metadata.uid
    assert int(read.metadata.resource_version) > 0
    listed = call("list_%s", label_selector=label)
    assert len(listed.items) == 3, len(listed.items)

    events = []
    def watching():
        stream = watch.Watch()
        for event in stream.stream(getattr(api, "list_%s" % kind), label_selector=label,
                                   resource_version=listed.metadata.resource_version, timeout_seconds=20):
            events.append([event["type"], event["object"].metadata.name,
                           (event["object"].metadata.annotations or {}).get("patched")])
            if len(events) == 2:
                stream.stop()
    thread = threading.Thread(target=watching, daemon=True)
    thread.start()
    time.sleep(0.3)

    patched = call("patch_%s", created.metadata.name,
                   {"metadata": {"annotations": {"patched": "true"}}, "spec": patch_spec}, _content_type=MERGE)
    assert patched.metadata.annotations["patched"] == "true"
    check_patched(patched)
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)
    current = call("read_%s", created.metadata.name)
    current.metadata.annotations["updated"] = "true"
    update(current)
    updated = call("replace_%s", created.metadata.name, current)
    assert updated.metadata.annotations["updated"] == "true"
    check_updated(updated)
    thread.join(20)

    status = call("read_%s_status", created.metadata.name)
    assert status.kind == ("FlowSchema" if kind == "flow_schema" else "PriorityLevelConfiguration")
    assert status.metadata.uid == created.metadata.uid
    status_patched = call("patch_%s_status", created.metadata.name,
                          {"status": {"conditions": [{"type": "PatchStatusFailed", "status": "False", "reason": "e2e"}]}},
                          _content_type=MERGE)
    assert any(c.type == "PatchStatusFailed" for c in status_patched.status.conditions)
    current = call("read_%s", created.metadata.name)
    current.status.conditions = (current.status.conditions or []) + [status_condition(
        type="StatusUpdateFailed", status="False", reason="E2E", message="Set from an e2e test")]
    status_updated = call("replace_%s_status", created.metadata.name, current)
    assert any(c.type == "StatusUpdateFailed" for c in status_updated.status.conditions)

    call("delete_%s", created.metadata.name)
    try:
        call("read_%s", created.metadata.name)
        gone = False
    except client.exceptions.ApiException as error:
        gone = error.status == 404
    assert gone
    assert len(call("list_%s", label_selector=label).items) == 2
    call("delete_collection_%s", label_selector=label)
    assert len(call("list_%s", label_selector=label).items) == 0
    return events

def set_precedence(fs): fs.spec.matching_precedence = 9000
def set_shares(pl): pl.spec.limited.nominal_concurrency_shares = 6

report = {
    "flow_schema": operations(
        "flow_schema", "flowschemas",
        {"matchingPrecedence": 10000, "priorityLevelConfiguration": {"name": "global-default"},
         "distinguisherMethod": {"type": "ByUser"},
         "rules": [{"subjects": [{"kind": "User", "user": {"name": "example-e2e-non-existent-user"}}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]},
        {"matchingPrecedence": 9999},
        lambda fs: fs.spec.matching_precedence == 9999 or sys.exit("not patched"),
        set_precedence,
        lambda fs: fs.spec.matching_precedence == 9000 or sys.exit("not updated"),
        client.V1FlowSchemaCondition,
    ),
    "priority_level_configuration": operations(
        "priority_level_configuration", "prioritylevelconfigurations",
        {"type": "Limited", "limited": {"nominalConcurrencyShares": 2, "limitResponse": {"type": "Reject"}}},
        {"limited": {"nominalConcurrencyShares": 4}},
        lambda pl: pl.spec.limited.nominal_concurrency_shares == 4 or sys.exit("not patched"),
        set_shares,
        lambda pl: pl.spec.limited.nominal_concurrency_shares == 6 or sys.exit("not updated"),
        client.V1PriorityLevelConfigurationCondition,
    ),
}
print(json.dumps(report))
"#;

fn flowcontrol_api_operations_hold(server: &Server) {
    let report = run_python(server, FLOWCONTROL_API_OPERATIONS);
    for kind in ["flow_schema", "priority_level_configuration"] {
        let events = report[kind].as_array().unwrap();
        let types: Vec<&str> = events.iter().map(|e| e[0].as_str().unwrap()).collect();
        // Upstream: every event the label-selected watch sees is MODIFIED (an update of an
        // object that matched before and after), the first carrying the patch.
        assert_eq!(types, ["MODIFIED", "MODIFIED"], "{kind}: {report}");
        assert_eq!(events[0][2], "true", "{kind}");
    }
}

#[test]
fn flowcontrol_go_api_operations_with_the_python_client_on_the_embedded_store() {
    flowcontrol_api_operations_hold(&Server::start(&[NO_APF]));
}

#[test]
fn flowcontrol_go_api_operations_with_the_python_client_on_etcd() {
    let etcd = apfkit_test_support::etcd::Etcd::start();
    flowcontrol_api_operations_hold(&Server::start(&["--etcd-servers", &etcd.endpoint, NO_APF]));
}
