//! An APIService's life as kube-aggregator leads it: `Available` only once its Service, its
//! EndpointSlices and its server answer (each missing piece said by kube's reason), its group
//! in discovery and its paths proxied while it is registered and gone once it is deleted, its
//! server verified against its `caBundle` unless it skips verification; a CRD's group
//! registered as a local APIService and removed with the CRD.

use std::time::Duration;

use apfkit_test_support::crd;
use apfkit_test_support::requests::{Answer, Sent, admin, client, send, until};
use serde_json::{Value, json};

use super::support::{GROUP, api_service, endpoint_slice, serve, service};

const API_SERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";

/// The `Available` condition of the APIService `name`, if it has one.
async fn condition(client: &kube::Client, name: &str) -> Option<Value> {
    let answer = send(
        client,
        "GET",
        &format!("{API_SERVICES}/{name}"),
        &Sent::Nothing,
        None,
    )
    .await;
    let object: Value = serde_json::from_str(&answer.body).ok()?;
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")
        .cloned()
}

/// The `Available` condition of the APIService `name`: its status and reason.
async fn available(client: &kube::Client, name: &str) -> Option<(String, String)> {
    let condition = condition(client, name).await?;
    Some((
        condition["status"].as_str()?.to_owned(),
        condition["reason"].as_str()?.to_owned(),
    ))
}

/// The message of the APIService `name`'s `Available` condition.
async fn message(client: &kube::Client, name: &str) -> String {
    condition(client, name)
        .await
        .and_then(|c| c["message"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Waits (30 s at most) for the APIService `name` to be `Available` as `status` for `reason`.
async fn becomes(client: &kube::Client, name: &str, status: &str, reason: &str) {
    let expected = Some((status.to_owned(), reason.to_owned()));
    let reached = until(Duration::from_secs(30), || async {
        available(client, name).await == expected
    })
    .await;
    assert!(
        reached,
        "{name}: Available is {:?}, not {expected:?}",
        available(client, name).await
    );
}

/// The groups `/apis` lists.
async fn groups(client: &kube::Client) -> Vec<String> {
    let answer: Answer = send(client, "GET", "/apis", &Sent::Nothing, None).await;
    let list: Value = serde_json::from_str(&answer.body).unwrap();
    list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_service_is_available_once_its_service_endpoints_and_server_answer() {
    let (port, certificate) = apfkit_test_support::extension::http2_certified().await;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir).await;
    let client = client(server.kubeconfig(), "apfkit").await;
    let name = format!("v1.{GROUP}");
    let root = format!("/apis/{GROUP}/v1");

    let (path, object) = api_service();
    admin(&client, "POST", path, Sent::Json(object)).await;
    becomes(&client, &name, "False", "ServiceNotFound").await;
    // Not available: kube-aggregator answers 503 for its paths.
    let unavailable = send(&client, "GET", &root, &Sent::Nothing, None).await;
    assert_eq!(unavailable.code, 503, "{}", unavailable.body);

    let (path, object) = service(port);
    admin(&client, "POST", path, Sent::Json(object)).await;
    becomes(&client, &name, "False", "EndpointsNotFound").await;

    // An endpoint that is not ready is no endpoint.
    let (path, mut slice) = endpoint_slice(port);
    slice["endpoints"][0]["conditions"]["ready"] = json!(false);
    admin(&client, "POST", path, Sent::Json(slice)).await;
    becomes(&client, &name, "False", "MissingEndpoints").await;
    admin(
        &client,
        "PATCH",
        &format!("{path}/api-1"),
        Sent::Merge(json!({"endpoints": [{"addresses": ["127.0.0.1"],
                                          "conditions": {"ready": true}}]})),
    )
    .await;
    becomes(&client, &name, "True", "Passed").await;

    // Registered: in discovery, and its paths are the extension server's answers.
    assert!(groups(&client).await.contains(&GROUP.to_owned()));
    // The routing table follows the stored condition a moment later, as kube-aggregator's
    // does.
    let things = format!("{root}/things");
    let proxied = until(Duration::from_secs(10), || async {
        let answer = send(&client, "GET", &things, &Sent::Nothing, None).await;
        (answer.code, answer.body.as_str()) == (200, "{}")
    })
    .await;
    assert!(proxied, "the available APIService's paths are not proxied");

    // Verified (1.36+: the probe trusts `caBundle` for `SERVICE.NAMESPACE.svc`): another
    // authority's bundle fails the check in Go's words, the server's own passes it.
    let (_, other) = apfkit_test_support::extension::http2_certified().await;
    for (bundle, status, reason) in [
        (other.as_str(), "False", "FailedDiscoveryCheck"),
        (certificate.as_str(), "True", "Passed"),
    ] {
        use base64::Engine as _;
        let bundle = base64::engine::general_purpose::STANDARD.encode(bundle);
        admin(
            &client,
            "PATCH",
            &format!("{API_SERVICES}/{name}"),
            Sent::Merge(json!({"spec": {"insecureSkipTLSVerify": false, "caBundle": bundle}})),
        )
        .await;
        becomes(&client, &name, status, reason).await;
        let message = message(&client, &name).await;
        if status == "False" {
            assert!(
                message.ends_with(
                    "tls: failed to verify certificate: x509: certificate signed by unknown \
                     authority"
                ),
                "{message}"
            );
        }
    }

    // Deleted: out of discovery, and its paths are nobody's.
    admin(
        &client,
        "DELETE",
        &format!("{API_SERVICES}/{name}"),
        Sent::Nothing,
    )
    .await;
    let gone = until(Duration::from_secs(10), || async {
        send(&client, "GET", &root, &Sent::Nothing, None).await.code == 404
    })
    .await;
    assert!(gone, "the deleted APIService's group is still served");
    assert!(!groups(&client).await.contains(&GROUP.to_owned()));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crds_group_is_a_local_api_service_while_the_crd_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir).await;
    let client = client(server.kubeconfig(), "apfkit").await;
    let root = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let definition = crd::definition(
        "gadgets.local.example.com",
        "Gadget",
        json!([crd::version("v1", true, root)]),
    );
    admin(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Sent::Json(definition),
    )
    .await;
    let name = "v1.local.example.com";
    becomes(&client, name, "True", "Local").await;
    let registered = admin(
        &client,
        "GET",
        &format!("{API_SERVICES}/{name}"),
        Sent::Nothing,
    )
    .await;
    let registered: Value = serde_json::from_str(&registered.body).unwrap();
    // As kube-apiserver's CRD registration writes it: no service, priorities 1000 and 100,
    // kept by the controller for as long as the group is served.
    assert_eq!(registered["spec"]["service"], Value::Null);
    assert_eq!(registered["spec"]["groupPriorityMinimum"], 1000);
    assert_eq!(registered["spec"]["versionPriority"], 100);
    assert_eq!(
        registered["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    // Created by kube-aggregator's client, available from its create on (its strategy marks
    // a local APIService so): one entry, no status write.
    let managers: Vec<(&str, &str)> = registered["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["manager"].as_str().unwrap(),
                entry["subresource"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(managers, [("kube-apiserver", "-")], "{registered}");

    admin(
        &client,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.local.example.com",
        Sent::Nothing,
    )
    .await;
    let path = format!("{API_SERVICES}/{name}");
    let removed = until(Duration::from_secs(30), || async {
        send(&client, "GET", &path, &Sent::Nothing, None).await.code == 404
    })
    .await;
    assert!(removed, "the CRD's APIService outlived it");
    server.shutdown().await;
}
