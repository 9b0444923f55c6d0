//! apfkit-migrator against a server started in this process (`apfkit-server`, embedded
//! store): pages, a run resumed where it stopped, a refused place, a server gone, resources
//! found or not by discovery, and a CRD's stored versions trimmed once its objects are
//! written in its storage version.

use apfkit_migrator::{MigrateError, Options, TrimError, migrate, resource, trim_stored_versions};
use apfkit_test_support::crd;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};

/// A server without the bootstrap configuration, and a client of it.
async fn serve(dir: &std::path::Path) -> (apfkit_server::Server, kube::Client) {
    let mut config = apfkit_server::Config::new(dir);
    config.bootstrap = false;
    let server = apfkit_server::start(config).await.unwrap();
    let client = apfkit_test_support::requests::client(server.kubeconfig(), "apfkit").await;
    (server, client)
}

async fn flow_schemas(client: &kube::Client, count: usize) -> ApiResource {
    let (resource, namespaced) = resource(client, "flowschemas.flowcontrol.apiserver.k8s.io")
        .await
        .unwrap();
    assert!(!namespaced);
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    for i in 0..count {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": format!("fs-{i:03}")},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"}},
        }))
        .unwrap();
        api.create(&PostParams::default(), &object).await.unwrap();
    }
    resource
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_is_written_back_page_by_page() {
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = serve(dir.path()).await;
    let resource = flow_schemas(&client, 23).await;
    let options = Options {
        page_size: 5,
        ..Options::default()
    };
    let seen = std::sync::Mutex::new(Vec::new());
    let summary = migrate(&client, &resource, false, &options, &|done| {
        seen.lock().unwrap().push(done)
    })
    .await
    .unwrap();
    assert_eq!(summary.resource, "flowschemas.flowcontrol.apiserver.k8s.io");
    assert_eq!((summary.listed, summary.migrated), (23, 23));
    assert!(summary.failed.is_empty() && summary.restarts == 0);
    assert_eq!(*seen.lock().unwrap(), (1..=23).collect::<Vec<u64>>());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumed_from_a_place_writes_only_what_is_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = serve(dir.path()).await;
    let resource = flow_schemas(&client, 12).await;
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let first = api.list(&ListParams::default().limit(5)).await.unwrap();
    let place = first.metadata.continue_.clone().expect("a next page");
    let options = Options {
        page_size: 4,
        resume_from: Some(place),
        ..Options::default()
    };
    let summary = migrate(&client, &resource, false, &options, &|_| {})
        .await
        .unwrap();
    assert_eq!((summary.listed, summary.migrated), (7, 7));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_place_the_server_refuses_and_a_server_gone_stop_the_run_saying_where() {
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = serve(dir.path()).await;
    let resource = flow_schemas(&client, 3).await;
    let options = Options {
        resume_from: Some("not-a-continue-token".to_owned()),
        ..Options::default()
    };
    let stopped = migrate(&client, &resource, false, &options, &|_| {})
        .await
        .unwrap_err();
    assert_eq!(stopped.resume_from.as_deref(), Some("not-a-continue-token"));
    assert!(
        matches!(&stopped.error, kube::Error::Api(status) if status.code == 400),
        "{:?}",
        stopped.error
    );
    assert_eq!(stopped.summary.listed, 0);

    server.shutdown().await;
    let gone = migrate(&client, &resource, false, &Options::default(), &|_| {})
        .await
        .unwrap_err();
    assert_eq!(gone.resume_from, None, "nothing was listed: start again");
    assert_eq!(gone.summary.migrated, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_found_by_discovery_or_said_missing() {
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = serve(dir.path()).await;
    let (services, namespaced) = resource(&client, "services").await.unwrap();
    assert_eq!((services.group.as_str(), namespaced), ("", true));
    for missing in [
        "widgets.example.com",
        "gadgets.flowcontrol.apiserver.k8s.io",
    ] {
        let error = resource(&client, missing).await.unwrap_err();
        assert!(
            matches!(&error, MigrateError::NoSuchResource(name) if name == missing),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            format!("the server serves no resource {missing}")
        );
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crds_stored_versions_are_trimmed_to_its_storage_version() {
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = serve(dir.path()).await;
    let name = "gadgets.example.com";
    let root = serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let crd = |storage: &str| {
        let version = |v: &str| crd::version(v, v == storage, root.clone());
        crd::definition(
            name,
            "Gadget",
            serde_json::json!([version("v1beta1"), version("v1")]),
        )
    };
    let definitions: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
        },
    );
    let created: DynamicObject = serde_json::from_value(crd("v1beta1")).unwrap();
    definitions
        .create(&PostParams::default(), &created)
        .await
        .unwrap();
    // The storage version moves to v1: v1beta1 stays among the stored versions. A merge patch
    // (no resourceVersion): the CRD controller writes the status meanwhile.
    let moved = serde_json::json!({"spec": crd("v1")["spec"].clone()});
    definitions
        .patch(name, &PatchParams::default(), &Patch::Merge(&moved))
        .await
        .unwrap();
    let stored = definitions.get(name).await.unwrap().data["status"]["storedVersions"].clone();
    assert_eq!(stored, serde_json::json!(["v1beta1", "v1"]));

    // A run that read another storage version trims nothing.
    let changed = trim_stored_versions(&client, name, "v1beta1")
        .await
        .unwrap_err();
    assert!(
        matches!(&changed, TrimError::StorageVersionChanged { now, .. } if now == "v1"),
        "{changed}"
    );
    let removed = trim_stored_versions(&client, name, "v1").await.unwrap();
    assert_eq!(removed, ["v1beta1"]);
    let stored = definitions.get(name).await.unwrap().data["status"]["storedVersions"].clone();
    assert_eq!(stored, serde_json::json!(["v1"]));
    assert!(
        trim_stored_versions(&client, name, "v1")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        trim_stored_versions(&client, "nothing.example.com", "v1")
            .await
            .unwrap()
            .is_empty()
    );
    server.shutdown().await;
}
