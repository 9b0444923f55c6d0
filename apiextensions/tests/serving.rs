//! A server of custom resources only (no kind of its own), in this process on the in-memory
//! store: requests go to its router. Hostile bodies for a custom resource, and writes racing
//! with changes of their CRD.

mod support;

use std::sync::Arc;

use apfkit_apiextensions::{CustomResources, NoKind};
use apfkit_apiserver::storage::memory::MemoryBackend;
use axum::body::Body;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;

type Server = support::Server;

use support::{Watch, request, request_as};

/// Gadgets with at most 10 replicas, a status and a scale subresource.
fn gadgets(versions: &[&str]) -> Value {
    support::gadgets(
        versions,
        json!({"replicas": {"type": "integer", "default": 1, "maximum": 10}}),
        json!({
            "status": {},
            "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
        }),
    )
}

async fn start() -> (Arc<Server>, Arc<CustomResources<NoKind>>) {
    let (server, custom) = support::serve(MemoryBackend::default()).await;
    custom.apply(&gadgets(&["v1"])).await.unwrap();
    custom.sync().await.unwrap();
    (server, custom)
}

const GADGETS: &str = "/apis/example.com/v1/namespaces/default/gadgets";

fn gadget(name: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"replicas": 2},
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespaced_resources_paths_name_a_namespace_or_all() {
    let (server, _custom) = start().await;
    let (code, _) = request(&server, "POST", GADGETS, gadget("g")).await;
    assert_eq!(code, 201);
    for (path, status, items) in [
        ("/apis/example.com/v1/gadgets", 200, Some(1)),
        (GADGETS, 200, Some(1)),
        (
            "/apis/example.com/v1/namespaces/other/gadgets",
            200,
            Some(0),
        ),
        // An empty namespace is none, and a name needs a namespace.
        ("/apis/example.com/v1/namespaces//gadgets", 404, None),
        ("/apis/example.com/v1/gadgets/g", 404, None),
    ] {
        let (code, body) = request(&server, "GET", path, Vec::new()).await;
        assert_eq!(code, status, "{path}: {body}");
        if let Some(items) = items {
            assert_eq!(
                body["items"].as_array().map(Vec::len),
                Some(items),
                "{path}"
            );
        }
    }
}

#[tokio::test]
async fn hostile_bodies_get_a_status_and_the_server_goes_on() {
    let (server, _custom) = start().await;
    let deep = format!(
        "{{\"apiVersion\":\"example.com/v1\",\"kind\":\"Gadget\",\"metadata\":{{\"name\":\"d\"}},\"spec\":{}{}}}",
        "{\"a\":".repeat(5000),
        "}".repeat(5000)
    );
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (b"{\"apiVersion\":\"example.com/v1\",\"kind\":\"Gad".to_vec(), 400),
        (b"\x00\xff\xfe garbage".to_vec(), 400),
        (deep.into_bytes(), 400),
        (vec![b' '; 4 << 20], 413),
        (
            br#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"x"},"spec":{"replicas":11}}"#.to_vec(),
            422,
        ),
        (
            br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}}"#.to_vec(),
            400,
        ),
        (br#"[1, 2]"#.to_vec(), 400),
    ];
    for (body, expected) in cases {
        let shown = String::from_utf8_lossy(&body[..body.len().min(60)]).into_owned();
        let (code, status) = request(&server, "POST", GADGETS, body).await;
        assert_eq!(code, expected, "{shown}: {status}");
        assert_eq!(status["kind"], "Status", "{shown}");
        assert_eq!(status["code"], expected, "{shown}");
    }
    // A repeated key: the last one wins, as in Go.
    let repeated = br#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"r"},"spec":{"replicas":3,"replicas":4}}"#;
    let (code, created) = request(&server, "POST", GADGETS, repeated.to_vec()).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["replicas"], 4);
    let (code, _) = request(&server, "POST", GADGETS, gadget("after")).await;
    assert_eq!(code, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_racing_with_changes_of_their_crd_all_land() {
    let (server, custom) = start().await;
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let server = server.clone();
            tokio::spawn(async move {
                for i in 0..25 {
                    let (code, body) =
                        request(&server, "POST", GADGETS, gadget(&format!("g-{writer}-{i}"))).await;
                    assert_eq!(code, 201, "{body}");
                }
            })
        })
        .collect();
    // Meanwhile the CRD gains a version and loses it again, each change served at once.
    for round in 0..10 {
        let versions: &[&str] = if round % 2 == 0 {
            &["v1", "v2"]
        } else {
            &["v1"]
        };
        custom.apply(&gadgets(versions)).await.unwrap();
        custom.sync().await.unwrap();
        let served: Vec<String> = server
            .resource("example.com", "gadgets")
            .unwrap()
            .versions
            .iter()
            .map(|v| v.version().to_owned())
            .collect();
        assert_eq!(served, versions.iter().rev().copied().collect::<Vec<_>>());
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let (code, list) = request(&server, "GET", GADGETS, Vec::new()).await;
    assert_eq!(code, 200);
    assert_eq!(list["items"].as_array().unwrap().len(), 4 * 25);
    // The CRD's status lists the one storage version.
    let (_, crd) = request(
        &server,
        "GET",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com",
        Vec::new(),
    )
    .await;
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_scale_bodies_get_a_status_and_leave_the_object_as_it_was() {
    let (server, _custom) = start().await;
    let (code, _) = request(&server, "POST", GADGETS, gadget("g")).await;
    assert_eq!(code, 201);
    let scale = format!("{GADGETS}/g/scale");
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let cases: Vec<(&str, &str, Vec<u8>, u16)> = vec![
        (
            "PUT",
            "application/json",
            b"{\"spec\":{\"replicas\":".to_vec(),
            400,
        ),
        ("PUT", "application/json", b"\x00\xff garbage".to_vec(), 400),
        ("PUT", "application/json", deep.into_bytes(), 400),
        ("PUT", "application/json", vec![b' '; 4 << 20], 413),
        ("PUT", "application/json", br#"[1]"#.to_vec(), 400),
        (
            "PUT",
            "application/json",
            br#"{"kind":"Deployment","spec":{"replicas":3}}"#.to_vec(),
            400,
        ),
        (
            "PUT",
            "application/json",
            br#"{"spec":{"replicas":"3"}}"#.to_vec(),
            400,
        ),
        (
            "PUT",
            "application/json",
            br#"{"spec":{"replicas":-1}}"#.to_vec(),
            422,
        ),
        (
            "PUT",
            "application/json",
            br#"{"spec":{"replicas":11}}"#.to_vec(),
            422,
        ),
        (
            "PATCH",
            "application/merge-patch+json",
            b"{not json".to_vec(),
            400,
        ),
        (
            "PATCH",
            "application/json-patch+json",
            // The JSON patch library's "Unexpected kind": kube-apiserver's generic 422.
            br#"[{"op":"nonsense"}]"#.to_vec(),
            422,
        ),
        (
            "PATCH",
            "application/apply-patch+yaml",
            b"spec: {replicas: 3}".to_vec(),
            415,
        ),
        ("DELETE", "application/json", Vec::new(), 405),
    ];
    for (method, content_type, body, expected) in cases {
        let shown = String::from_utf8_lossy(&body[..body.len().min(50)]).into_owned();
        let (code, status) = request_as(&server, method, &scale, content_type, body).await;
        assert_eq!(code, expected, "{method} {shown}: {status}");
        assert_eq!(status["kind"], "Status", "{method} {shown}");
    }
    let (_, object) = request(&server, "GET", &format!("{GADGETS}/g"), Vec::new()).await;
    assert_eq!(object["spec"]["replicas"], 2, "unchanged");
    // A repeated key: the last one wins, as in Go.
    let repeated = br#"{"spec":{"replicas":3,"replicas":4}}"#.to_vec();
    let (code, answer) = request(&server, "PUT", &scale, repeated).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["spec"]["replicas"], 4);
    let (_, object) = request(&server, "GET", &format!("{GADGETS}/g"), Vec::new()).await;
    assert_eq!(object["spec"]["replicas"], 4);
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap())
        .collect()
}

/// test/e2e/apimachinery/crd_selectable_fields.go, "MUST list and watch custom resources
/// matching the field selector" (CustomResourceFieldSelectors, GA in 1.32): lists and
/// watches in each version select on that version's `selectableFields`; a delete-collection
/// with a field selector deletes what it selects; an update that stops matching is `DELETED`
/// for the watch. Upstream's v1 reads `hostPort` through a conversion webhook from v2's
/// `host` and `port`; here conversion is `None` and each object carries all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_are_listed_and_watched_by_their_selectable_fields() {
    let (server, custom) = start().await;
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "host": {"type": "string"}, "port": {"type": "string"}, "hostPort": {"type": "string"},
    }}});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "e2e-test-crds.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "names": {"kind": "E2eTestCrd", "plural": "e2e-test-crds"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema,
                 "selectableFields": [{"jsonPath": ".hostPort"}]},
                {"name": "v2", "served": true, "storage": false, "schema": schema,
                 "selectableFields": [{"jsonPath": ".host"}, {"jsonPath": ".port"}]},
            ],
        },
    });
    custom.apply(&crd).await.unwrap();
    custom.sync().await.unwrap();
    const V1: &str = "/apis/stable.example.com/v1/namespaces/default/e2e-test-crds";
    const V2: &str = "/apis/stable.example.com/v2/namespaces/default/e2e-test-crds";
    let mut v2_host =
        Watch::start(&server, &format!("{V2}?watch=1&fieldSelector=host%3Dhost1")).await;
    let mut v2_host_port = Watch::start(
        &server,
        &format!("{V2}?watch=1&fieldSelector=host%3Dhost1,port%3D80"),
    )
    .await;
    let mut v1_host_port = Watch::start(
        &server,
        &format!("{V1}?watch=1&fieldSelector=hostPort%3Dhost1:80"),
    )
    .await;
    for (name, host, port) in [
        ("cr-0", "host1", "80"),
        ("cr-1", "host1", "8080"),
        ("cr-2", "host2", ""),
    ] {
        let object = json!({
            "apiVersion": "stable.example.com/v2", "kind": "E2eTestCrd",
            "metadata": {"name": name},
            "host": host, "port": port, "hostPort": format!("{host}:{port}"),
        });
        let (code, body) = request(&server, "POST", V2, serde_json::to_vec(&object).unwrap()).await;
        assert_eq!(code, 201, "{body}");
    }
    let list = |selector: &'static str, base: &'static str| {
        let server = server.clone();
        async move {
            let (code, list) = request(
                &server,
                "GET",
                &format!("{base}?fieldSelector={selector}"),
                Vec::new(),
            )
            .await;
            assert_eq!(code, 200, "{selector}: {list}");
            names(&list)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list("host%3Dhost1", V2).await, ["cr-0", "cr-1"]);
    assert_eq!(list("host%3Dhost1,port%3D80", V2).await, ["cr-0"]);
    assert_eq!(list("hostPort%3Dhost1:80", V1).await, ["cr-0"]);
    assert_eq!(list("hostPort%3Dhost1:8080", V1).await, ["cr-1"]);
    let added = |names: &[&str]| -> Vec<(String, String)> {
        names
            .iter()
            .map(|n| ("ADDED".to_owned(), (*n).to_owned()))
            .collect()
    };
    assert_eq!(v2_host.events().await, added(&["cr-0", "cr-1"]));
    assert_eq!(v2_host_port.events().await, added(&["cr-0"]));
    assert_eq!(v1_host_port.events().await, added(&["cr-0"]));

    // Deletions and updates are observed.
    let (code, body) = request(
        &server,
        "DELETE",
        &format!("{V2}?fieldSelector=host%3Dhost1,port%3D80"),
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = request_as(
        &server,
        "PATCH",
        &format!("{V2}/cr-1"),
        "application/merge-patch+json",
        br#"{"host":"host2"}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(list("host%3Dhost1", V2).await.is_empty());
    assert!(list("host%3Dhost1,port%3D80", V2).await.is_empty());
    let deleted = |name: &str| vec![("DELETED".to_owned(), name.to_owned())];
    assert_eq!(
        v2_host.events().await,
        [deleted("cr-0"), deleted("cr-1")].concat()
    );
    assert_eq!(v2_host_port.events().await, deleted("cr-0"));
    assert_eq!(v1_host_port.events().await, deleted("cr-0"));

    // A label a version does not make selectable is refused as kube-apiserver refuses it.
    for (base, selector, label) in [
        (V1, "host%3Dhost1", "host"),
        (V2, "hostPort%3Dx", "hostPort"),
        (V2, "spec.nothing%3Dx", "spec.nothing"),
    ] {
        let (code, status) = request(
            &server,
            "GET",
            &format!("{base}?fieldSelector={selector}"),
            Vec::new(),
        )
        .await;
        assert_eq!(code, 400, "{status}");
        assert_eq!(
            status["message"],
            format!("field label not supported: {label}")
        );
    }
}

/// A CustomResourceDefinition is a built-in type: it takes a strategic merge patch (and so
/// does its `/status`), which merges as a JSON merge patch since none of its fields has a
/// patch strategy; custom resources refuse it (415), as kube-apiserver's do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_takes_a_strategic_merge_patch_and_a_custom_resource_refuses_it() {
    let (server, _custom) = start().await;
    const CRD: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com";
    let smp = "application/strategic-merge-patch+json";
    let (code, patched) = request_as(
        &server,
        "PATCH",
        CRD,
        smp,
        br#"{"metadata":{"labels":{"team":"a"},"finalizers":["x/y"]},"spec":{"names":{"shortNames":["gd"]}}}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["metadata"]["labels"]["team"], "a");
    assert_eq!(patched["spec"]["names"]["shortNames"], json!(["gd"]));
    // Unchanged fields stay (a merge, not a replacement).
    assert_eq!(patched["spec"]["group"], "example.com");
    let (code, status) = request_as(
        &server,
        "PATCH",
        &format!("{CRD}/status"),
        smp,
        br#"{"metadata":{"labels":{"status":"patched"}}}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 200, "{status}");
    let (code, _) = request(&server, "POST", GADGETS, gadget("g")).await;
    assert_eq!(code, 201);
    let (code, refused) = request_as(
        &server,
        "PATCH",
        &format!("{GADGETS}/g"),
        smp,
        br#"{"spec":{"replicas":3}}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 415, "{refused}");
}

/// test/e2e/apimachinery/crd_watch.go, "[Conformance] watch on custom resource definition
/// objects": apiextensions-apiserver's Noxu fixture (cluster-scoped, unknown fields kept),
/// two watches each selecting one name; each sees only its own object created, patched
/// (a JSON patch adding `/dummy`) and deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_watch_go_watch_on_custom_resource_definition_objects() {
    let (server, custom) = start().await;
    let noxu = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "noxus.mygroup.example.com"},
        "spec": {
            "group": "mygroup.example.com",
            "names": {"kind": "WishIHadChosenNoxu", "plural": "noxus", "singular": "nonenglishnoxu",
                      "listKind": "NoxuItemList", "shortNames": ["foo", "bar", "abc", "def"],
                      "categories": ["all"]},
            "scope": "Cluster",
            "versions": [{"name": "v1beta1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    });
    custom.apply(&noxu).await.unwrap();
    custom.sync().await.unwrap();
    const NOXUS: &str = "/apis/mygroup.example.com/v1beta1/noxus";
    let watch = |name: &'static str| {
        let server = server.clone();
        async move {
            Watch::start(
                &server,
                &format!("{NOXUS}?watch=1&fieldSelector=metadata.name%3D{name}&timeoutSeconds=600"),
            )
            .await
        }
    };
    let (mut watch_a, mut watch_b) = (watch("name1").await, watch("name2").await);
    let instance = |name: &str| {
        serde_json::to_vec(&json!({
            "apiVersion": "mygroup.example.com/v1beta1", "kind": "WishIHadChosenNoxu",
            "metadata": {"name": name},
            "content": {"key": "value"},
            "num": {"num1": 9_223_372_036_854_775_807_i64, "num2": 1_000_000},
        }))
        .unwrap()
    };
    let event = |kind: &str, name: &str| vec![(kind.to_owned(), name.to_owned())];
    for (step, name) in [
        ("create", "name1"),
        ("create", "name2"),
        ("patch", "name1"),
        ("patch", "name2"),
        ("delete", "name1"),
        ("delete", "name2"),
    ] {
        let (code, body) = match step {
            "create" => request(&server, "POST", NOXUS, instance(name)).await,
            "patch" => {
                request_as(
                    &server,
                    "PATCH",
                    &format!("{NOXUS}/{name}"),
                    "application/json-patch+json",
                    br#"[{ "op": "add", "path": "/dummy", "value": "test" }]"#.to_vec(),
                )
                .await
            }
            _ => request(&server, "DELETE", &format!("{NOXUS}/{name}"), Vec::new()).await,
        };
        assert!(code == 200 || code == 201, "{step} {name}: {body}");
        if step == "create" {
            assert_eq!(body["apiVersion"], "mygroup.example.com/v1beta1");
            assert_eq!(body["kind"], "WishIHadChosenNoxu");
            assert!(
                body["metadata"]["uid"]
                    .as_str()
                    .is_some_and(|uid| !uid.is_empty())
            );
        }
        let kind = match step {
            "create" => "ADDED",
            "patch" => "MODIFIED",
            _ => "DELETED",
        };
        let (seen, quiet) = if name == "name1" {
            (watch_a.events().await, watch_b.events().await)
        } else {
            (watch_b.events().await, watch_a.events().await)
        };
        assert_eq!(seen, event(kind, name), "{step} {name}");
        assert_eq!(quiet, [], "{step} {name}: the other watch sees nothing");
    }
}

/// A GET of `path` with `accept`, answered with its status, `Content-Type` and JSON body.
async fn get_accepting(server: &Arc<Server>, path: &str, accept: &str) -> (u16, String, Value) {
    let request = axum::http::Request::get(path)
        .header("accept", accept)
        .body(Body::empty())
        .unwrap();
    let response = server.clone().router().oneshot(request).await.unwrap();
    let code = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        code,
        content_type,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Whether an `APIGroupDiscoveryList` lists the resource of a group and version.
fn discovered(list: &Value, group: &str, version: &str, resource: &str) -> bool {
    list["items"].as_array().into_iter().flatten().any(|g| {
        g["metadata"]["name"] == group
            && g["versions"].as_array().into_iter().flatten().any(|v| {
                v["version"] == version
                    && v["resources"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|r| r["resource"] == resource)
            })
    })
}

/// aggregated_discovery.go, "should support raw aggregated discovery endpoint Accept headers"
/// and "should support raw aggregated discovery request for CRDs" ([Conformance], v1.30):
/// `/apis` and `/api` with client-go's aggregated Accept answer `APIGroupDiscoveryList`s in
/// that media type; the served groups' resources are in it (upstream lists core kinds, which
/// this server has not: here the CRD resource), and a new CRD's resource appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_discovery_go_raw_requests_list_the_resources_and_new_crds() {
    const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let (server, custom) = start().await;
    let (code, content_type, apis) = get_accepting(&server, "/apis", AGGREGATED).await;
    assert_eq!((code, content_type.as_str()), (200, AGGREGATED));
    assert_eq!(apis["kind"], "APIGroupDiscoveryList");
    assert!(
        discovered(
            &apis,
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions"
        ),
        "{apis}"
    );
    assert!(discovered(&apis, "example.com", "v1", "gadgets"), "{apis}");
    let (code, content_type, legacy) = get_accepting(&server, "/api", AGGREGATED).await;
    assert_eq!((code, content_type.as_str()), (200, AGGREGATED));
    assert_eq!(legacy["kind"], "APIGroupDiscoveryList");

    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "testcrds.group-abc12.example.com"},
        "spec": {
            "group": "group-abc12.example.com",
            "names": {"plural": "testcrds", "singular": "testcrd", "kind": "testcrd", "listKind": "testcrdList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    });
    let (code, body) = request(
        &server,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        serde_json::to_vec(&crd).unwrap(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    custom.sync().await.unwrap();
    let (_, _, apis) = get_accepting(&server, "/apis", AGGREGATED).await;
    assert!(
        discovered(&apis, "group-abc12.example.com", "v1", "testcrds"),
        "{apis}"
    );
}

/// apiextensions-apiserver's CRD strategy (`pkg/registry/customresourcedefinition/strategy.go`,
/// `PrepareForCreate` and `PrepareForUpdate`): `status.storedVersions` is the storage version
/// in the create's own answer, and an update that moves the storage version adds the new one
/// in the update's answer, not later when the controller catches up (a client that writes in
/// the new version and reads the CRD at once, as upstream's conversion e2e test does, saw
/// only the old one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_versions_are_written_with_the_crd() {
    const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (server, _custom) = support::serve(MemoryBackend::default()).await;
    let mut crd = gadgets(&["v1", "v2"]);
    let (code, created) = request(&server, "POST", CRDS, serde_json::to_vec(&crd).unwrap()).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["status"]["storedVersions"], json!(["v1"]));

    crd["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["versions"][1]["storage"] = json!(true);
    let path = format!("{CRDS}/gadgets.example.com");
    let (code, updated) = request(&server, "PUT", &path, serde_json::to_vec(&crd).unwrap()).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["status"]["storedVersions"], json!(["v1", "v2"]));

    // Moving it back adds nothing: v1 is stored already.
    crd["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"].clone();
    crd["spec"]["versions"][0]["storage"] = json!(true);
    crd["spec"]["versions"][1]["storage"] = json!(false);
    let (code, back) = request(&server, "PUT", &path, serde_json::to_vec(&crd).unwrap()).await;
    assert_eq!(code, 200, "{back}");
    assert_eq!(back["status"]["storedVersions"], json!(["v1", "v2"]));
}
