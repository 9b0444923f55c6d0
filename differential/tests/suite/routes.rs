//! What each path serves: versions, verbs and media types.

use crate::openapi::{V2_PROTOBUF, is_gnostics_message};
use apfkit_differential::{Request, Session};
use serde_json::Value;

/// A create-only resource answers other verbs 405 (item 7).
async fn a_create_only_resource_refuses_a_get(s: &mut Session) {
    s.send(Request::get(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    ))
    .await;
    s.send(Request::get(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    ))
    .await;
}

/// Which flowcontrol versions are served (item 15).
async fn only_flowcontrol_v1_is_served(s: &mut Session) {
    for version in ["v1", "v1beta3", "v1beta2", "v1beta1", "v1alpha1"] {
        s.send(Request::get(&format!(
            "/apis/flowcontrol.apiserver.k8s.io/{version}/flowschemas/exempt"
        )))
        .await;
    }
}

/// A bootstrap object as both servers make it.
async fn the_bootstrap_flow_schemas_read_alike(s: &mut Session) {
    for name in ["exempt", "catch-all", "system-leader-election"] {
        s.send(Request::get(&format!(
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/{name}"
        )))
        .await;
    }
}

/// PartialObjectMetadata, one object and a list, in both versions of `meta.k8s.io`, and the
/// form of one asked of the other (item 10).
async fn partial_object_metadata_is_served(s: &mut Session) {
    let one = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let list = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    let levels = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
    s.send(Request::get(&format!("{levels}/exempt")).accept(one))
        .await;
    s.send(
        Request::get(&format!("{levels}/exempt"))
            .accept("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"),
    )
    .await;
    s.send(Request::get(&format!("{levels}?labelSelector=nothing%3Dhere")).accept(list))
        .await;
    s.send(Request::get(&format!("{levels}?fieldSelector=metadata.name%3Dexempt")).accept(list))
        .await;
    s.send(Request::get(&format!("{levels}/exempt")).accept(list))
        .await;
    s.send(Request::get(levels).accept(one)).await;
    // No form the server has: none of its media types (go-restful's answer), or one with
    // parameters it does not know (kube-apiserver's negotiation).
    s.send(Request::get(levels).accept("application/xml")).await;
    s.send(Request::get(&format!("{levels}/exempt")).accept("application/xml"))
        .await;
    // In protobuf, as client-go's metadata client and informers ask.
    let secrets = "/api/v1/namespaces/default/secrets";
    let secret = format!("{secrets}/metadata-in-protobuf");
    s.send(Request::post(
        secrets,
        &serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata":
            {"name": "metadata-in-protobuf", "labels": {"case": "metadata-in-protobuf"}}}),
    ))
    .await;
    let metadata_client = |kind: &str| {
        format!(
            "application/vnd.kubernetes.protobuf;as={kind};g=meta.k8s.io;v=v1,\
             application/json;as={kind};g=meta.k8s.io;v=v1,application/json"
        )
    };
    s.agreeing(
        Request::get(&secret).accept(one),
        Request::get(&secret).accept(&metadata_client("PartialObjectMetadata")),
        partial_metadata_agrees,
    )
    .await;
    let selected = format!("{secrets}?labelSelector=case%3Dmetadata-in-protobuf");
    s.agreeing(
        Request::get(&selected).accept(list),
        Request::get(&selected).accept(&metadata_client("PartialObjectMetadataList")),
        partial_metadata_agrees,
    )
    .await;
    // In v1beta1: the same message, its list's fields numbered otherwise.
    let v1beta1 = |kind: &str| {
        format!("application/vnd.kubernetes.protobuf;as={kind};g=meta.k8s.io;v=v1beta1")
    };
    s.agreeing(
        Request::get(&secret)
            .accept("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"),
        Request::get(&secret).accept(&v1beta1("PartialObjectMetadata")),
        partial_metadata_agrees,
    )
    .await;
    s.agreeing(
        Request::get(&selected)
            .accept("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"),
        Request::get(&selected).accept(&v1beta1("PartialObjectMetadataList")),
        partial_metadata_agrees,
    )
    .await;
    s.send(Request::delete(&secret)).await;
    for accept in [
        "application/json;as=Nothing;g=meta.k8s.io;v=v1",
        "application/json;as=Table;g=meta.k8s.io;v=v9",
        "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
    ] {
        s.send(Request::get(&format!("{levels}/exempt")).accept(accept))
            .await;
        s.send(Request::get(levels).accept(accept)).await;
    }
}

/// Whether `bytes` are, in protobuf, the `PartialObjectMetadata` (or its list) that `json`
/// is: the envelope's kind and version, and each object's name, uid, resource version and
/// labels (the list's resource version too).
pub(crate) fn partial_metadata_agrees(json: &Value, bytes: &[u8]) -> bool {
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use prost::Message as _;
    let Some(unknown) = bytes
        .strip_prefix(b"k8s\0")
        .and_then(|raw| k8s_pb::apimachinery::pkg::runtime::Unknown::decode(raw).ok())
    else {
        return false;
    };
    let type_meta = unknown.type_meta.unwrap_or_default();
    if Some(type_meta.api_version()) != json["apiVersion"].as_str()
        || Some(type_meta.kind()) != json["kind"].as_str()
    {
        return false;
    }
    let same = |object: &meta::ObjectMeta, json: &Value| {
        let labels: std::collections::BTreeMap<String, String> =
            serde_json::from_value(json["labels"].clone()).unwrap_or_default();
        object.name() == json["name"].as_str().unwrap_or_default()
            && object.uid() == json["uid"].as_str().unwrap_or_default()
            && object.resource_version() == json["resourceVersion"].as_str().unwrap_or_default()
            && object.labels == labels
    };
    let raw = unknown.raw.unwrap_or_default();
    match type_meta.kind() {
        "PartialObjectMetadata" => meta::PartialObjectMetadata::decode(raw.as_slice())
            .is_ok_and(|partial| same(&partial.metadata.unwrap_or_default(), &json["metadata"])),
        _ => {
            let list = if type_meta.api_version() == "meta.k8s.io/v1" {
                meta::PartialObjectMetadataList::decode(raw.as_slice()).ok()
            } else {
                // v1beta1's list: items 1, metadata 2 (its own message in k8s-pb).
                k8s_pb::apimachinery::pkg::apis::meta::v1beta1::PartialObjectMetadataList::decode(
                    raw.as_slice(),
                )
                .ok()
                .map(|list| meta::PartialObjectMetadataList {
                    metadata: list.metadata,
                    items: list.items,
                })
            };
            list.is_some_and(|list| {
                let items: Vec<Value> = json["items"].as_array().cloned().unwrap_or_default();
                list.metadata.unwrap_or_default().resource_version()
                    == json["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or_default()
                    && list.items.len() == items.len()
                    && list.items.iter().zip(&items).all(|(item, json)| {
                        same(
                            &item.metadata.clone().unwrap_or_default(),
                            &json["metadata"],
                        )
                    })
            })
        }
    }
}

/// Paths nothing is served at (a group, a version, a resource, a path outside the API), and
/// other methods on paths served to GET.
async fn paths_nothing_is_served_at_answer_404_and_other_methods_405(s: &mut Session) {
    for (method, path) in [
        ("GET", "/apis/nothing.example.com/v1/things"),
        ("GET", "/apis/nothing.example.com"),
        ("POST", "/apis/nothing.example.com/v1"),
        ("GET", "/apis/flowcontrol.apiserver.k8s.io/v9"),
        ("GET", "/apis/flowcontrol.apiserver.k8s.io/v1/nothings"),
        (
            "GET",
            "/apis/flowcontrol.apiserver.k8s.io/v1/namespaces/default/flowschemas",
        ),
        (
            "GET",
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/x/scale",
        ),
        (
            "GET",
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/x/status/more",
        ),
        ("GET", "/apis/flowcontrol.apiserver.k8s.io/v1/watch"),
        (
            "GET",
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas//status",
        ),
        ("GET", "/api/v2"),
        ("GET", "/nothing"),
        ("GET", "/versions"),
        ("GET", "/healthzx"),
        ("GET", "/healthz/nothing"),
        ("GET", "/openapi/v3/apis/nothing.example.com/v1"),
        ("GET", "/openapi/v2/nothing"),
        ("POST", "/version"),
        ("POST", "/api"),
        ("PUT", "/api/v1"),
        ("POST", "/apis/flowcontrol.apiserver.k8s.io"),
        ("DELETE", "/apis/flowcontrol.apiserver.k8s.io"),
        ("PUT", "/apis/flowcontrol.apiserver.k8s.io/v1"),
    ] {
        s.send(Request::with_method(method, path)).await;
    }
    // `/apis` lists different groups on each server; how it answers is compared.
    for method in ["DELETE", "POST"] {
        s.send(Request::with_method(method, "/apis").kind_only())
            .await;
    }
}

/// The health checks: the whole and `ping`, as load balancers and kubelets ask.
async fn health_checks_answer_ok(s: &mut Session) {
    for path in [
        "/healthz",
        "/livez",
        "/readyz",
        "/healthz/ping",
        "/livez/ping",
        "/readyz/ping",
        "/healthz/etcd",
        "/readyz/etcd-readiness",
        "/readyz/informer-sync",
        "/readyz/shutdown",
        "/healthz/shutdown",
        "/healthz/poststarthook/rbac/bootstrap-roles",
        "/readyz/poststarthook/storage-readiness",
        "/healthz/poststarthook/nothing",
        "/livez/nothing",
    ] {
        s.send(Request::get(path)).await;
    }
    for path in [
        "/healthz?verbose",
        "/livez?verbose=1",
        "/readyz?verbose",
        "/readyz?verbose&exclude=etcd&exclude=nothing&exclude=other",
    ] {
        s.send(Request::get(path).selecting(checks_both_have)).await;
    }
}

/// The checks apfkit's server has, as kube-apiserver names them (decision 251).
const CHECKS: &[&str] = &[
    "ping",
    "log",
    "etcd",
    "etcd-readiness",
    "informer-sync",
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer",
    "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/storage-readiness",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/priority-and-fairness-config-producer",
    "poststarthook/start-kube-aggregator-informers",
    "poststarthook/apiservice-status-local-available-controller",
    "poststarthook/apiservice-status-remote-available-controller",
    "poststarthook/apiservice-registration-controller",
    "poststarthook/apiservice-discovery-controller",
    "poststarthook/kube-apiserver-autoregistration",
    "autoregister-completion",
    "poststarthook/apiservice-openapiv3-controller",
    "shutdown",
];

/// The lines of a verbose health answer about the checks both servers have, in their order,
/// with its warning and last line; kube-apiserver's other checks left out.
fn checks_both_have(body: &Value) -> Value {
    let text = body.as_str().unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| {
            let Some(check) = line
                .strip_prefix("[+]")
                .or_else(|| line.strip_prefix("[-]"))
            else {
                return true;
            };
            let name = check.split(' ').next().unwrap_or_default();
            CHECKS.contains(&name)
        })
        .collect();
    serde_json::json!(lines)
}

/// A resource's discovery entry, legacy and aggregated: its verbs, short names and
/// categories (Services are in `all`: item 6).
async fn discovery_describes_services_as_kube_does(s: &mut Session) {
    // The resource itself: the `services/proxy` subresource, which apfkit does not serve, is
    // a list entry of its own there (still open).
    s.send(Request::get("/api/v1").selecting(|list| {
        list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["name"] == "services")
            .cloned()
            .unwrap_or_default()
    }))
    .await;
    s.send(
        Request::get("/api")
            .accept("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
            .selecting(|list| {
                let mut services = list
                    .pointer("/items/0/versions/0/resources")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|r| r["resource"] == "services")
                    .cloned()
                    .unwrap_or_default();
                if let Some(subresources) = services["subresources"].as_array_mut() {
                    subresources.retain(|s| s["subresource"] != "proxy");
                }
                services
            }),
    )
    .await;
}

/// `/version`'s fields (their values are each server's own: item 14).
async fn the_version_has_kubes_fields(s: &mut Session) {
    s.send(Request::get("/version").selecting(|version| {
        let mut keys: Vec<&String> = version
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys())
            .collect();
        keys.sort();
        serde_json::json!(keys)
    }))
    .await;
}

/// The discovery documents of the groups both serve whole: flowcontrol's and
/// apiregistration's resource lists, legacy.
async fn group_versions_are_discovered_alike(s: &mut Session) {
    for path in [
        "/apis/flowcontrol.apiserver.k8s.io",
        "/apis/flowcontrol.apiserver.k8s.io/v1",
        "/apis/apiregistration.k8s.io/v1",
    ] {
        s.send(Request::get(path)).await;
    }
}

/// The resources apfkit serves of kube's own groups. Not served: `services/proxy` (apfkit
/// proxies to no pods; open in docs/conformance.md).
const SERVED_PLURALS: &[&str] = &[
    "services",
    "endpointslices",
    "flowschemas",
    "prioritylevelconfigurations",
    "apiservices",
    "clusterroles",
    "clusterrolebindings",
    "roles",
    "rolebindings",
    "customresourcedefinitions",
    "namespaces",
    "selfsubjectreviews",
    "tokenreviews",
    "localsubjectaccessreviews",
    "selfsubjectaccessreviews",
    "selfsubjectrulesreviews",
    "subjectaccessreviews",
];

/// kube's groups apfkit serves, but the core group.
const GROUPS: &[&str] = &[
    "flowcontrol.apiserver.k8s.io",
    "apiregistration.k8s.io",
    "rbac.authorization.k8s.io",
    "discovery.k8s.io",
    "apiextensions.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
];

/// The part of an OpenAPI document (v3, or v2: `swagger`) of what apfkit serves: the paths
/// of `SERVED_PLURALS` (but `proxy`) and each document's own path, the schemas (and v2's
/// shared parameters) they reach; `info.version` is each server's release (item 14), left
/// out.
pub(crate) fn served_part(document: &Value) -> Value {
    let paths: serde_json::Map<String, Value> = document["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(path, _)| {
            let segments: Vec<&str> = path.split('/').collect();
            // `namespaces/{namespace}` leads to a namespaced resource, which may be another
            // case's custom resource.
            let plural = |(i, s): (usize, &&str)| {
                SERVED_PLURALS.contains(s)
                    && !(*s == "namespaces" && segments.get(i + 1) == Some(&"{namespace}"))
            };
            // A root: `/api/`, `/apis/`, `/version/`, a served group's or version's.
            let root = matches!(segments.as_slice(), ["", "api" | "apis" | "version", ..])
                && (segments[1] != "apis" || segments.len() == 3 || GROUPS.contains(&segments[2]));
            (path.ends_with('/') && root)
                || (segments.iter().enumerate().any(plural) && !segments.contains(&"proxy"))
        })
        .map(|(path, item)| (path.clone(), item.clone()))
        .collect();
    reached_from(document, paths)
}

/// `document` with only `paths`, and the schemas (v3's components, v2's definitions) and
/// v2's shared parameters they reach.
pub(crate) fn reached_from(document: &Value, paths: serde_json::Map<String, Value>) -> Value {
    fn references(node: &Value, prefix: &str, names: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                if let Some(name) = map
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix(prefix))
                {
                    names.push(name.to_owned());
                }
                map.values().for_each(|v| references(v, prefix, names));
            }
            Value::Array(items) => items.iter().for_each(|v| references(v, prefix, names)),
            _ => {}
        }
    }
    fn reach(from: &Value, table: &Value, prefix: &str) -> serde_json::Map<String, Value> {
        let mut pending = Vec::new();
        references(from, prefix, &mut pending);
        let mut reached = serde_json::Map::new();
        while let Some(name) = pending.pop() {
            if !reached.contains_key(&name) {
                let schema = table[&name].clone();
                references(&schema, prefix, &mut pending);
                reached.insert(name, schema);
            }
        }
        reached
    }
    let paths = Value::Object(paths);
    if document.get("swagger").is_some() {
        let parameters = Value::Object(reach(&paths, &document["parameters"], "#/parameters/"));
        let mut definitions = reach(&paths, &document["definitions"], "#/definitions/");
        definitions.extend(reach(
            &parameters,
            &document["definitions"],
            "#/definitions/",
        ));
        return serde_json::json!({
            "swagger": document["swagger"],
            "info": {"title": document["info"]["title"]},
            "paths": paths,
            "definitions": definitions,
            "parameters": parameters,
            "security": document["security"],
            "securityDefinitions": document["securityDefinitions"],
        });
    }
    let schemas = reach(
        &paths,
        &document["components"]["schemas"],
        "#/components/schemas/",
    );
    serde_json::json!({
        "openapi": document["openapi"],
        "info": {"title": document["info"]["title"]},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

/// The OpenAPI v3 documents of kube's groups apfkit serves, which `kubectl explain` reads
/// (item 5): the index names them, and each is kube's for what apfkit serves.
async fn openapi_documents_of_kubes_groups_are_kubes(s: &mut Session) {
    fn published(root: &str) -> bool {
        matches!(root, "api" | "api/v1" | "apis" | "version")
            || root.strip_prefix("apis/").is_some_and(|group| {
                let group = group.strip_suffix("/v1").unwrap_or(group);
                GROUPS.contains(&group)
            })
    }
    s.send(Request::get("/openapi/v3").selecting(|index| {
        let listed: Vec<&String> = index["paths"]
            .as_object()
            .into_iter()
            .flat_map(|paths| paths.keys())
            .filter(|root| published(root))
            .collect();
        serde_json::json!(listed)
    }))
    .await;
    let mut roots = vec![
        "api".to_owned(),
        "api/v1".to_owned(),
        "apis".to_owned(),
        "version".to_owned(),
    ];
    for group in GROUPS {
        roots.push(format!("apis/{group}"));
        roots.push(format!("apis/{group}/v1"));
    }
    for root in roots {
        s.send(Request::get(&format!("/openapi/v3/{root}")).selecting(served_part))
            .await;
    }
}

/// `/openapi/v2`, which the OpenAPI v2 clients read (client-go's `OpenAPISchema` in
/// protobuf, which kubectl's client-side validation falls back to for a kind without a
/// PATCH in v3; upstream's e2e tests of CRD publishing in JSON): kube's document for what
/// apfkit serves, in JSON and as gnostic's protobuf message of that JSON, under either
/// protobuf name and as `Accept`'s order picks them.
async fn the_openapi_v2_document_is_kubes_for_what_is_served(s: &mut Session) {
    s.send(Request::get("/openapi/v2").selecting(served_part))
        .await;
    s.send(
        Request::get("/openapi/v2")
            .accept("application/json")
            .kind_only(),
    )
    .await;
    for accept in [
        V2_PROTOBUF,
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        "application/json;q=0.9, application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    ] {
        s.agreeing(
            Request::get("/openapi/v2").selecting(served_part),
            Request::get("/openapi/v2").accept(accept),
            is_gnostics_message,
        )
        .await;
    }
    // Neither form accepted.
    s.send(Request::get("/openapi/v2").accept("application/yaml"))
        .await;
}

/// A TokenReview's status as both servers can have it: kube-apiserver's tokens carry its
/// `--api-audiences` (the service account issuer), apfkit's none (decision 252).
fn without_audiences(review: &Value) -> Value {
    let mut review = review.clone();
    if let Some(status) = review.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("audiences");
    }
    review
}

/// `tokenreviews` (item 5's authentication group): who a bearer token of the token file
/// is, a token nobody has, and the reviews kube refuses.
async fn a_token_review_says_whom_a_token_authenticates(s: &mut Session) {
    const REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
    let review = |spec: Value| {
        serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": spec})
    };
    for spec in [
        serde_json::json!({"token": "token-of-tina"}),
        serde_json::json!({"token": "token-of-tom"}),
        serde_json::json!({"token": "token-of-nobody"}),
        serde_json::json!({"token": ""}),
        serde_json::json!({}),
    ] {
        s.send(Request::post(REVIEWS, &review(spec)).selecting(without_audiences))
            .await;
    }
    s.send(Request::get(REVIEWS)).await;
}

/// A SelfSubjectReview's metadata and status, a client certificate's fingerprint in the
/// credential id (each server made its own certificates) replaced by its form: 64 lower-case
/// hex digits.
fn status_but_fingerprints(review: &Value) -> Value {
    let mut status = review["status"].clone();
    if let Some(ids) = status
        .pointer_mut("/userInfo/extra/authentication.kubernetes.io~1credential-id")
        .and_then(Value::as_array_mut)
    {
        for id in ids {
            let form = id
                .as_str()
                .and_then(|id| id.strip_prefix("X509SHA256="))
                .filter(|hex| {
                    hex.len() == 64
                        && hex
                            .chars()
                            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
                })
                .map_or("not a fingerprint", |_| "X509SHA256=<sha256>");
            *id = form.into();
        }
    }
    serde_json::json!({"metadata": review["metadata"], "status": status})
}

/// The reviews answered without storage, as `kubectl auth whoami` and `kubectl auth can-i`
/// send them: who the client is, whether it or another user may do something.
async fn access_reviews_are_answered_as_kube_answers_them(s: &mut Session) {
    let review = |kind: &str, spec: Value| serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec});
    s.send(
        Request::post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &serde_json::json!({"apiVersion": "authentication.k8s.io/v1",
                "kind": "SelfSubjectReview"}),
        )
        .selecting(status_but_fingerprints),
    )
    .await;
    s.send(Request::post(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &review(
            "SelfSubjectAccessReview",
            serde_json::json!({"resourceAttributes": {"verb": "delete",
                    "group": "flowcontrol.apiserver.k8s.io", "resource": "flowschemas",
                    "name": "exempt"}}),
        ),
    ))
    .await;
    for groups in [
        serde_json::json!(["system:authenticated"]),
        serde_json::json!(["system:masters"]),
    ] {
        s.send(Request::post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &review(
                "SubjectAccessReview",
                serde_json::json!({"user": "tina", "groups": groups,
                        "resourceAttributes": {"verb": "list", "resource": "namespaces"}}),
            ),
        ))
        .await;
    }
    // The components' and controllers' users, by the bootstrap policy's roles for them.
    for (user, verb, group, resource) in [
        ("system:kube-scheduler", "watch", "", "pods"),
        ("system:kube-scheduler", "create", "", "bindings"),
        (
            "system:kube-controller-manager",
            "create",
            "authentication.k8s.io",
            "tokenreviews",
        ),
        ("system:kube-controller-manager", "delete", "", "pods"),
        (
            "system:serviceaccount:kube-system:namespace-controller",
            "deletecollection",
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
        ),
        (
            "system:serviceaccount:kube-system:generic-garbage-collector",
            "delete",
            "apps",
            "deployments",
        ),
    ] {
        s.send(Request::post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &review(
                "SubjectAccessReview",
                serde_json::json!({"user": user, "groups": ["system:authenticated"],
                    "resourceAttributes": {"verb": verb, "group": group,
                        "resource": resource}}),
            ),
        ))
        .await;
    }
    s.send(Request::post(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &review(
            "SubjectAccessReview",
            serde_json::json!({"user": "tina",
                    "nonResourceAttributes": {"verb": "get", "path": "/healthz"}}),
        ),
    ))
    .await;
    // Refused: neither or both attributes, no subject, metadata, another namespace.
    const SARS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    const LSARS: &str =
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews";
    let both = serde_json::json!({"user": "tina", "resourceAttributes": {"verb": "get"},
        "nonResourceAttributes": {"verb": "get", "path": "/x"}});
    s.send(Request::post(
        SARS,
        &review("SubjectAccessReview", serde_json::json!({})),
    ))
    .await;
    s.send(Request::post(
        SARS,
        &review("SubjectAccessReview", both.clone()),
    ))
    .await;
    s.send(Request::post(
        LSARS,
        &review("LocalSubjectAccessReview", both),
    ))
    .await;
    let mut named = review(
        "SelfSubjectAccessReview",
        serde_json::json!({"resourceAttributes": {"verb": "get", "resource": "pods"}}),
    );
    named["metadata"] = serde_json::json!({"name": "x", "namespace": "default",
        "labels": {"a": "b"}});
    s.send(Request::post(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &named,
    ))
    .await;
    let mut elsewhere = review(
        "LocalSubjectAccessReview",
        serde_json::json!({"user": "tina",
            "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "other"}}),
    );
    elsewhere["metadata"] = serde_json::json!({"namespace": "default", "name": "x"});
    s.send(Request::post(LSARS, &elsewhere)).await;
}

/// An error answered to a client that asks for protobuf first, as client-go's typed clients
/// of kube-controller-manager and the kubelet ask: kube writes the `Status` in the media type
/// negotiated, protobuf; a range that asks for another kind (a table) is passed over for the
/// error. (In YAML too, but go-yaml v2's style is not apfkit's: recorded open.)
async fn errors_are_written_in_the_media_type_asked_for(s: &mut Session) {
    const PROTOBUF_FIRST: &str = "application/vnd.kubernetes.protobuf, application/json";
    for accept in [
        PROTOBUF_FIRST,
        "application/vnd.kubernetes.protobuf",
        "application/json;as=Table;g=meta.k8s.io;v=v1, application/vnd.kubernetes.protobuf",
    ] {
        s.send(
            Request::get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/absent").accept(accept),
        )
        .await;
        s.send(Request::get("/api/v1/namespaces/default/configmaps/absent").accept(accept))
            .await;
        s.send(Request::get("/api/v1/namespaces/absent").accept(accept))
            .await;
        let invalid = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "Not Valid"}});
        s.send(Request::post("/api/v1/namespaces/default/configmaps", &invalid).accept(accept))
            .await;
    }
}

crate::cases!(
    errors_are_written_in_the_media_type_asked_for,
    access_reviews_are_answered_as_kube_answers_them,
    a_token_review_says_whom_a_token_authenticates,
    openapi_documents_of_kubes_groups_are_kubes,
    the_openapi_v2_document_is_kubes_for_what_is_served,
    group_versions_are_discovered_alike,
    discovery_describes_services_as_kube_does,
    the_version_has_kubes_fields,
    health_checks_answer_ok,
    paths_nothing_is_served_at_answer_404_and_other_methods_405,
    a_create_only_resource_refuses_a_get,
    only_flowcontrol_v1_is_served,
    the_bootstrap_flow_schemas_read_alike,
    partial_object_metadata_is_served,
);
