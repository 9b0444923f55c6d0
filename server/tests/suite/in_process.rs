//! The server started in-process, as a controller's integration test starts it, and used
//! through kube-rs with the kubeconfig it writes.

use apfkit_server::{Config, Error, start};
use apfkit_types::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use kube::api::{Api, ListParams, PostParams};

use apfkit_test_support::requests::client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_starts_the_server_and_uses_it_with_kube_rs() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new(dir.path().join("data"))).await.unwrap();
    let client = client(server.kubeconfig(), "apfkit").await;

    // kube-apiserver's bootstrap configuration is there.
    let schemas: Api<FlowSchema> = Api::all(client.clone());
    let names: Vec<String> = schemas
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|schema| schema.metadata.name)
        .collect();
    for mandatory in ["exempt", "catch-all"] {
        assert!(names.iter().any(|n| n == mandatory), "{names:?}");
    }
    let levels: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    assert!(levels.get("workload-low").await.is_ok());

    // A write goes through kube-apiserver's defaults and validation.
    let schema: FlowSchema = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "controller-under-test"},
        "spec": {"priorityLevelConfiguration": {"name": "workload-low"}}
    }))
    .unwrap();
    let created = schemas
        .create(&PostParams::default(), &schema)
        .await
        .unwrap();
    assert_eq!(created.spec.matching_precedence, Some(1000));
    let invalid: FlowSchema = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "too-high"},
        "spec": {"priorityLevelConfiguration": {"name": "workload-low"}, "matchingPrecedence": 10001}
    }))
    .unwrap();
    let refused = schemas
        .create(&PostParams::default(), &invalid)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains(
            "spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"
        ),
        "{refused}"
    );

    // Shut down: the port stops answering, the background work ends and lets the store go:
    // SQLite's write-ahead log is folded into the database when its last connection closes.
    let address = server.url().trim_start_matches("https://").to_owned();
    let log = dir.path().join("data/apfkit.db-wal");
    assert!(log.exists(), "the store is open while serving");
    server.shutdown().await;
    assert!(tokio::net::TcpStream::connect(&address).await.is_err());
    let mut closed = false;
    for _ in 0..50 {
        closed = !log.exists();
        if closed {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(closed, "the store is still open after shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_run_side_by_side_on_their_own_stores() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut without_bootstrap = Config::new(b.path());
    without_bootstrap.bootstrap = false;
    let first = start(Config::new(a.path())).await.unwrap();
    let second = start(without_bootstrap).await.unwrap();
    assert_ne!(first.url(), second.url());
    let schemas: Api<FlowSchema> = Api::all(client(second.kubeconfig(), "apfkit").await);
    assert!(
        schemas
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "no bootstrap objects without `bootstrap`"
    );
    let first_schemas: Api<FlowSchema> = Api::all(client(first.kubeconfig(), "apfkit").await);
    assert!(first_schemas.get("exempt").await.is_ok());
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_that_cannot_be_served_are_errors_before_anything_listens() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config
        .storage_versions
        .insert("apps".to_owned(), "v1".to_owned());
    let Err(Error::Settings(message)) = start(config).await else {
        panic!("an unknown group is a settings error");
    };
    assert_eq!(message, "--storage-version apps: not a served group");

    let mut config = Config::new(dir.path());
    config.max_requests_inflight = 0;
    config.max_mutating_requests_inflight = 0;
    assert!(matches!(start(config).await, Err(Error::Settings(_))));

    let mut config = Config::new(dir.path());
    config.crds = vec![("crds.yaml: document 1".to_owned(), {
        let mut crd = apfkit_test_support::crd::definition(
            "gadgets.example.com",
            "Gadget",
            serde_json::json!([]),
        );
        crd["metadata"]["name"] = "wrong.example.com".into();
        crd
    })];
    let Err(error @ Error::Crd { .. }) = start(config).await else {
        panic!("a CRD kube-apiserver refuses is an error naming where it was read");
    };
    assert!(
        error.to_string().starts_with("crds.yaml: document 1: "),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_in_memory_take_the_first_ones_credentials_unless_they_have_their_own() {
    use apfkit_server::{Storage, start_in_process};
    use std::os::unix::fs::PermissionsExt as _;
    let in_memory = |dir: &std::path::Path| {
        let mut config = Config::new(dir);
        config.storage = Storage::Memory;
        config
    };
    let read = |dir: &tempfile::TempDir, name: &str| std::fs::read(dir.path().join(name)).unwrap();
    let (first_dir, second_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = start_in_process(in_memory(first_dir.path())).await.unwrap();
    let second = start_in_process(in_memory(second_dir.path()))
        .await
        .unwrap();
    for name in [
        "ca.crt",
        "ca.key",
        "serving.key",
        "admin.crt",
        "front-proxy-ca.crt",
        "service-account.key",
    ] {
        assert_eq!(read(&first_dir, name), read(&second_dir, name), "{name}");
    }
    let mode = |dir: &tempfile::TempDir, name: &str| {
        std::fs::metadata(dir.path().join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(&second_dir, "ca.key"), 0o600);
    assert_eq!(mode(&second_dir, "ca.crt"), mode(&first_dir, "ca.crt"));

    // A directory that holds credentials keeps its own.
    let own_dir = tempfile::tempdir().unwrap();
    apfkit_apiserver::tls::ensure(own_dir.path(), &[], apfkit_apiserver::tls::Flush::Never)
        .unwrap();
    let own = read(&own_dir, "ca.crt");
    let third = start_in_process(in_memory(own_dir.path())).await.unwrap();
    assert_eq!(read(&own_dir, "ca.crt"), own);
    assert_ne!(own, read(&first_dir, "ca.crt"));

    // Each serves its own store through its own client.
    for server in [&first, &second, &third] {
        let client = kube::Client::new(server.service(), "default");
        let levels: Api<PriorityLevelConfiguration> = Api::all(client);
        assert!(
            !levels
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty()
        );
    }
}
