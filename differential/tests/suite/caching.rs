//! Answers compressed and cached as kube-apiserver writes them: an API answer over 128 KiB
//! gzipped for a client whose `Accept-Encoding` has the token `gzip`
//! (`APIResponseCompression`), the OpenAPI v2 document through kube-openapi's `gziphandler`,
//! what is never compressed; the entity tags and `Cache-Control` of aggregated discovery and
//! the OpenAPI v3 documents, and `no-cache, private` on everything else.

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const BULKS: &str = "/apis/compressed.example.com/v1/bulks";
/// Over the 128 KiB an answer must exceed to be compressed.
const LARGE: usize = 140 * 1024;

/// A custom resource carrying `size` bytes of text.
fn bulk(name: &str, size: usize) -> Value {
    json!({"apiVersion": "compressed.example.com/v1", "kind": "Bulk",
        "metadata": {"name": name}, "data": "x".repeat(size)})
}

/// An object or list by what tells them apart, not their bulk.
fn shape(answer: &Value) -> Value {
    let sizes = |object: &Value| {
        json!({"name": object["metadata"]["name"],
            "data": object["data"].as_str().map(str::len)})
    };
    match answer["items"].as_array() {
        Some(items) => json!({"kind": answer["kind"],
            "items": items.iter().map(sizes).collect::<Vec<_>>()}),
        None if answer["kind"] == "Status" => {
            json!({"code": answer["code"], "reason": answer["reason"],
                "message": answer["message"].as_str().map(str::len)})
        }
        None => json!({"kind": answer["kind"], "object": sizes(answer)}),
    }
}

async fn large_answers_are_gzipped_for_clients_that_ask(s: &mut Session) {
    s.send(Request::post(
        CRDS,
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "bulks.compressed.example.com"},
            "spec": {"group": "compressed.example.com", "scope": "Cluster",
                "names": {"plural": "bulks", "singular": "bulk", "kind": "Bulk"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    ))
    .await;
    s.wait_until(Request::get(BULKS), |code, _| code == 200)
        .await;
    s.send(Request::post(BULKS, &bulk("large", LARGE)).selecting(shape))
        .await;
    s.send(Request::post(BULKS, &bulk("small", 10)).selecting(shape))
        .await;
    let large = format!("{BULKS}/large");
    // Without `Accept-Encoding`, and with one kube-apiserver does not read as gzip: as it is.
    s.send(Request::get(&large).selecting(shape)).await;
    for accept_encoding in ["gzip;q=1", "GZIP", "x-gzip", "deflate"] {
        s.send(
            Request::get(&large)
                .header("Accept-Encoding", accept_encoding)
                .selecting(shape),
        )
        .await;
    }
    // The token `gzip` among others: gzipped, with `Vary: Accept-Encoding`.
    for accept_encoding in ["gzip", "br, gzip", " gzip , deflate"] {
        s.send(
            Request::get(&large)
                .header("Accept-Encoding", accept_encoding)
                .selecting(shape),
        )
        .await;
    }
    // Small answers never are; lists, tables and errors by their own size.
    let small = format!("{BULKS}/small");
    let first_page = format!("{BULKS}?limit=1&continue=");
    for path in [small.as_str(), BULKS, first_page.as_str()] {
        s.send(
            Request::get(path)
                .header("Accept-Encoding", "gzip")
                .selecting(shape),
        )
        .await;
    }
    let with_objects = format!("{BULKS}?includeObject=Object");
    for path in [BULKS, with_objects.as_str()] {
        s.send(
            Request::get(path)
                .header("Accept-Encoding", "gzip")
                .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
                .selecting(|table| {
                    json!({"kind": table["kind"], "rows": table["rows"].as_array().map(Vec::len)})
                }),
        )
        .await;
    }
    s.send(
        Request::post(BULKS, &bulk("large", LARGE))
            .header("Accept-Encoding", "gzip")
            .selecting(shape),
    )
    .await;
    // A write's answer is compressed as a read's.
    s.send(
        Request::put(&large, &bulk("large", LARGE + 1))
            .header("Accept-Encoding", "gzip")
            .selecting(shape),
    )
    .await;
    // A watch is a stream: never compressed unless it is a WatchList.
    s.send(
        Request::get(&format!("{BULKS}?watch=true&timeoutSeconds=1"))
            .header("Accept-Encoding", "gzip")
            .selecting(|events| {
                json!(events.as_array().map(|events| {
                    events
                        .iter()
                        .map(|event| json!([event["type"], event["object"]["metadata"]["name"]]))
                        .collect::<Vec<_>>()
                }))
            }),
    )
    .await;
    s.send(
        Request::delete(&large)
            .header("Accept-Encoding", "gzip")
            .selecting(shape),
    )
    .await;
    s.send(Request::delete(&format!("{CRDS}/bulks.compressed.example.com")).kind_only())
        .await;
}

async fn the_openapi_v2_document_is_gzipped_by_kube_openapis_handler(s: &mut Session) {
    let swagger = |document: &Value| json!({"swagger": document["swagger"]});
    // `gziphandler` weighs q-values, unlike the API's handlers.
    for accept_encoding in ["gzip", "gzip;q=0.5", "GZIP", "gzip;q=0", "deflate"] {
        s.send(
            Request::get("/openapi/v2")
                .header("Accept-Encoding", accept_encoding)
                .selecting(swagger),
        )
        .await;
    }
    s.send(Request::get("/openapi/v2").selecting(swagger)).await;
    // A form it does not serve: 406, empty, with both `Vary`s.
    s.send(
        Request::get("/openapi/v2")
            .header("Accept-Encoding", "gzip")
            .header("Accept", "application/xml")
            .selecting(swagger),
    )
    .await;
    // Neither the v3 documents, nor the version, nor health are compressed.
    s.send(
        Request::get("/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1")
            .header("Accept-Encoding", "gzip")
            .selecting(|document| json!({"openapi": document["openapi"]})),
    )
    .await;
    s.send(
        Request::get("/version")
            .header("Accept-Encoding", "gzip")
            .selecting(|version| json!({"major": version["major"]})),
    )
    .await;
    s.send(Request::get("/readyz").header("Accept-Encoding", "gzip"))
        .await;
}

const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// A discovery document by its kind alone (its groups differ between the servers).
fn kind_of(document: &Value) -> Value {
    json!({"kind": document["kind"]})
}

async fn aggregated_discovery_is_tagged_for_clients_caches(s: &mut Session) {
    for path in ["/api", "/apis"] {
        s.send(Request::get(path).accept(AGGREGATED).selecting(kind_of))
            .await;
        let tag = s.last_etag().unwrap_or_default();
        // The tag sent back: 304, empty; another tag, or a list of tags, or `*`: the document.
        s.send(
            Request::get(path)
                .accept(AGGREGATED)
                .header("If-None-Match", &tag)
                .selecting(kind_of),
        )
        .await;
        for other in [format!("W/{tag}"), format!("{tag}, \"x\""), "*".to_owned()] {
            s.send(
                Request::get(path)
                    .accept(AGGREGATED)
                    .header("If-None-Match", &other)
                    .selecting(kind_of),
            )
            .await;
        }
        // The legacy documents carry no tag.
        s.send(
            Request::get(path)
                .header("If-None-Match", &tag)
                .selecting(kind_of),
        )
        .await;
    }
    s.send(Request::get("/apis/flowcontrol.apiserver.k8s.io/v1").selecting(kind_of))
        .await;
    s.send(Request::get("/version").selecting(|version| json!({"major": version["major"]})))
        .await;
    s.send(Request::get("/apis/nothing.example.com/v1/things"))
        .await;
    s.send(Request::get("/healthz")).await;
}

async fn openapi_v3_documents_are_tagged_and_cacheable_by_hash(s: &mut Session) {
    const DOCUMENT: &str = "/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1";
    let openapi = |document: &Value| json!({"openapi": document["openapi"]});
    let index = s
        .send(Request::get("/openapi/v3").selecting(|_| json!({})))
        .await;
    let hashed = index["paths"]["apis/flowcontrol.apiserver.k8s.io/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // By its current hash: cacheable for good; by another: moved to the current one.
    s.send(Request::get(&hashed).selecting(openapi)).await;
    s.send(Request::get(&format!("{DOCUMENT}?hash=0123")).selecting(openapi))
        .await;
    s.send(Request::get(DOCUMENT).selecting(openapi)).await;
    let tag = s.last_etag().unwrap_or_default();
    for if_none_match in [
        tag.clone(),
        format!("W/{tag}"),
        format!("\"x\", {tag}"),
        "*".to_owned(),
        "\"x\"".to_owned(),
    ] {
        s.send(
            Request::get(DOCUMENT)
                .header("If-None-Match", &if_none_match)
                .selecting(openapi),
        )
        .await;
    }
    // Forms it does not serve, and an `Accept` without a clause it reads.
    s.send(Request::get(DOCUMENT).accept("text/html")).await;
    s.send(Request::get(DOCUMENT).accept("nonsense")).await;
    s.send(
        Request::get(DOCUMENT)
            .accept("application/*")
            .selecting(openapi),
    )
    .await;
}

crate::cases!(
    large_answers_are_gzipped_for_clients_that_ask,
    the_openapi_v2_document_is_gzipped_by_kube_openapis_handler,
    aggregated_discovery_is_tagged_for_clients_caches,
    openapi_v3_documents_are_tagged_and_cacheable_by_hash,
);
