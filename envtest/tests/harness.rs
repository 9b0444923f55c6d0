//! The harness as a controller's test uses it: a server per test, custom resources of a Rust
//! type, CRDs read from a directory, impersonation, HTTPS, and nothing left once dropped.

use std::time::Duration;

use apfkit_envtest::{Error, Storage, TestEnv};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::watcher;
use kube::{CustomResource, CustomResourceExt as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A user's kind, with a rule kube-apiserver enforces from its schema.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Gadget", namespaced)]
struct GadgetSpec {
    #[schemars(range(min = 1, max = 10))]
    size: i32,
}

fn gadget(name: &str, size: i32) -> Gadget {
    Gadget::new(name, GadgetSpec { size })
}

fn config_map(name: &str) -> ConfigMap {
    let mut config_map = ConfigMap::default();
    config_map.metadata.name = Some(name.to_owned());
    config_map
}

/// The `Status` of a refused request.
fn refusal(error: kube::Error) -> kube::core::Status {
    match error {
        kube::Error::Api(status) => *status,
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_of_a_rust_type_are_served_checked_and_watched() {
    let env = TestEnv::builder().crd::<Gadget>().start().await.unwrap();
    let gadgets: Api<Gadget> = Api::namespaced(env.client(), "default");
    let mut events = watcher(gadgets.clone(), watcher::Config::default()).boxed();
    // The watcher's initial list completes before the create, so the create is an event.
    loop {
        match events.next().await.unwrap().unwrap() {
            watcher::Event::InitDone => break,
            _ => continue,
        }
    }
    let created = gadgets
        .create(&PostParams::default(), &gadget("small", 3))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let seen = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("the watch saw the create in time")
        .unwrap()
        .unwrap();
    match seen {
        watcher::Event::Apply(object) => assert_eq!(object.metadata.name.as_deref(), Some("small")),
        other => panic!("not the create: {other:?}"),
    }
    // The schema's maximum, in kube-apiserver's words.
    let refused = refusal(
        gadgets
            .create(&PostParams::default(), &gadget("large", 11))
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code, 422);
    assert!(
        refused.message.contains(
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"
        ),
        "{}",
        refused.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_run_side_by_side_and_each_holds_its_own_objects() {
    let envs = futures::future::try_join_all((0..8).map(|_| TestEnv::builder().start()))
        .await
        .unwrap();
    for (n, env) in envs.iter().enumerate() {
        let config_maps: Api<ConfigMap> = Api::namespaced(env.client(), "default");
        let mut object = config_map("shared-name");
        object.data = Some([("server".to_owned(), n.to_string())].into());
        config_maps
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
    }
    for (n, env) in envs.iter().enumerate() {
        let config_maps: Api<ConfigMap> = Api::namespaced(env.client(), "default");
        let read = config_maps.get("shared-name").await.unwrap();
        assert_eq!(read.data.unwrap()["server"], n.to_string());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_server_leaves_no_task_file_or_answer_behind() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let env = TestEnv::builder().crd::<Gadget>().start().await.unwrap();
    let dir = env.data_dir().to_owned();
    let kept = env.client();
    let gadgets: Api<Gadget> = Api::namespaced(kept.clone(), "default");
    gadgets
        .create(&PostParams::default(), &gadget("one", 1))
        .await
        .unwrap();
    assert!(dir.join("service-account.key").exists());
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o700,
            "the keys' directory is its owner's alone"
        );
    }
    assert!(metrics.num_alive_tasks() > before);
    drop(env);
    assert!(!dir.exists(), "{} was left behind", dir.display());
    // A client kept past the server finds nobody there, as a connection to a stopped server.
    let error = gadgets.get("one").await.unwrap_err();
    assert!(
        error.to_string().contains("the server has stopped"),
        "{error}"
    );
    drop((gadgets, kept));
    // Informers, controllers, APF's periodic adjustment and the client's own worker end once
    // all are dropped.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while metrics.num_alive_tasks() > before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} tasks still alive, {before} before the server",
            metrics.num_alive_tasks()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn someone_else_is_allowed_what_rbac_grants_them_and_no_more() {
    let env = TestEnv::builder().start().await.unwrap();
    let alice = env.client_as("alice", &["developers"]).await.unwrap();
    let as_alice: Api<ConfigMap> = Api::namespaced(alice, "default");
    let refused = refusal(as_alice.list(&Default::default()).await.unwrap_err());
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.message,
        "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API \
         group \"\" in the namespace \"default\""
    );
    // The `view` ClusterRole bound to her group, in the namespace.
    let binding: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "developers-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "developers"}]
    }))
    .unwrap();
    Api::namespaced(env.client(), "default")
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while as_alice.list(&Default::default()).await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the binding never took effect"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = refusal(
        as_alice
            .create(&PostParams::default(), &config_map("mine"))
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code, 403);
    assert!(env.client_as("bad\nname", &[]).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_namespace_goes_away_with_its_objects() {
    let env = TestEnv::builder().crd::<Gadget>().start().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(env.client());
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some("scratch".to_owned());
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    Api::<Gadget>::namespaced(env.client(), "scratch")
        .create(&PostParams::default(), &gadget("inside", 2))
        .await
        .unwrap();
    namespaces
        .delete("scratch", &DeleteParams::default())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while namespaces.get_opt("scratch").await.unwrap().is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the namespace stayed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = Api::<Gadget>::all(env.client())
        .list(&Default::default())
        .await
        .unwrap();
    assert!(left.items.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_https_other_clients_get_a_kubeconfig_and_the_port_closes_at_the_end() {
    let env = TestEnv::builder()
        .https()
        .storage(Storage::Embedded)
        .start()
        .await
        .unwrap();
    let url = env.url().unwrap().to_owned();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let kubeconfig = std::fs::read_to_string(env.kubeconfig().unwrap()).unwrap();
    assert!(kubeconfig.contains(&url));
    assert!(env.data_dir().join("apfkit.db").exists());
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    config_maps
        .create(&PostParams::default(), &config_map("over-tls"))
        .await
        .unwrap();
    let bob: Api<ConfigMap> = Api::namespaced(env.client_as("bob", &[]).await.unwrap(), "default");
    assert_eq!(refusal(bob.get("over-tls").await.unwrap_err()).code, 403);
    let address = url.trim_start_matches("https://").to_owned();
    env.stop().await;
    assert!(tokio::net::TcpStream::connect(&address).await.is_err());
}

/// A scratch directory of CRD files, removed at the end.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn crd_yaml() -> String {
    // The derived CRD under another group, written as a user's YAML file would be.
    let mut crd = serde_json::to_value(Gadget::crd()).unwrap();
    crd["metadata"]["name"] = "gadgets.files.example.com".into();
    crd["spec"]["group"] = "files.example.com".into();
    serde_json::to_string_pretty(&crd).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crds_of_a_directory_are_served_and_its_other_files_left_alone() {
    let dir = scratch();
    // A multi-document YAML file (JSON is YAML): a ConfigMap, skipped, then the CRD.
    std::fs::write(
        dir.path().join("all.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: skipped\n---\n{}\n",
            crd_yaml()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not: [yaml").unwrap();
    // A FIFO named like a manifest: opening it would wait for a writer forever.
    let fifo = dir.path().join("pipe.yaml");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let env = tokio::time::timeout(
        Duration::from_secs(30),
        TestEnv::builder().crds_from_dir(dir.path()).start(),
    )
    .await
    .expect("started without waiting on the FIFO")
    .unwrap();
    let gadgets: Api<kube::api::DynamicObject> = Api::namespaced_with(
        env.client(),
        "default",
        &kube::api::ApiResource {
            group: "files.example.com".into(),
            version: "v1".into(),
            api_version: "files.example.com/v1".into(),
            kind: "Gadget".into(),
            plural: "gadgets".into(),
        },
    );
    assert!(
        gadgets
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// The error of starting with `path` as the directory of CRDs.
async fn start_error(path: &std::path::Path) -> String {
    match TestEnv::builder().crds_from_dir(path).start().await {
        Ok(_) => panic!("{} was accepted", path.display()),
        Err(error) => error.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_files_that_cannot_be_used_are_refused_naming_the_file_and_document() {
    let dir = scratch();
    let missing = dir.path().join("missing");
    let said = start_error(&missing).await;
    assert!(
        said.starts_with(&format!("{}: ", missing.display())),
        "{said}"
    );
    assert_eq!(
        start_error(std::path::Path::new("/dev/zero")).await,
        "/dev/zero: not a regular file or a directory"
    );
    let file = dir.path().join("crds.yaml");
    // Garbage in the second document.
    std::fs::write(&file, "kind: ConfigMap\n---\nkind: [unclosed\n").unwrap();
    let said = start_error(&file).await;
    assert!(
        said.starts_with(&format!("{}: document 2: invalid YAML", file.display())),
        "{said}"
    );
    // A key given twice, in YAML and in JSON.
    std::fs::write(
        &file,
        "kind: CustomResourceDefinition\nkind: CustomResourceDefinition\n",
    )
    .unwrap();
    assert_eq!(
        start_error(&file).await,
        format!(
            "{}: document 1: invalid YAML: duplicate key \"kind\" in a mapping (document \
             starting at line 1)",
            file.display()
        )
    );
    std::fs::write(&file, r#"{"kind": "ConfigMap"} {"kind": "X", "kind": "Y"}"#).unwrap();
    assert_eq!(
        start_error(&file).await,
        format!(
            "{}: document 2: kind: the field is given more than once",
            file.display()
        )
    );
    // Nested past the reader's depth.
    std::fs::write(
        &file,
        format!("{}1{}", "[".repeat(20_000), "]".repeat(20_000)),
    )
    .unwrap();
    let said = start_error(&file).await;
    assert!(
        said.starts_with(&format!("{}: document 1: ", file.display())),
        "{said}"
    );
    // Truncated JSON.
    std::fs::write(&file, &crd_yaml()[..200]).unwrap();
    let said = start_error(&file).await;
    assert!(
        said.starts_with(&format!("{}: document 1: ", file.display())),
        "{said}"
    );
    // More than the limit (a sparse file: nothing is written to disk).
    let large = std::fs::File::create(&file).unwrap();
    large.set_len(65 << 20).unwrap();
    assert_eq!(
        start_error(&file).await,
        format!("{}: larger than 64 MiB", file.display())
    );
    // A CRD kube-apiserver refuses: its message, with the file and document.
    let mut crd: serde_json::Value = serde_json::from_str(&crd_yaml()).unwrap();
    crd["spec"]["scope"] = "Galactic".into();
    std::fs::write(&file, format!("kind: ConfigMap\n---\n{crd}\n")).unwrap();
    match TestEnv::builder().crds_from_dir(&file).start().await {
        Err(Error::Server(apfkit_envtest::ServerError::Crd { location, message })) => {
            assert_eq!(location, format!("{} (document 2)", file.display()));
            assert!(
                message.contains("spec.scope: Unsupported value: \"Galactic\""),
                "{message}"
            );
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("accepted"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_etcd_objects_are_kept_under_kubes_keys() {
    let etcd = tokio::task::spawn_blocking(apfkit_test_support::etcd::Etcd::start)
        .await
        .unwrap();
    let env = TestEnv::builder()
        .storage(Storage::Etcd(vec![etcd.endpoint.clone()]))
        .crd::<Gadget>()
        .start()
        .await
        .unwrap();
    Api::<ConfigMap>::namespaced(env.client(), "default")
        .create(&PostParams::default(), &config_map("in-etcd"))
        .await
        .unwrap();
    Api::<Gadget>::namespaced(env.client(), "default")
        .create(&PostParams::default(), &gadget("in-etcd", 4))
        .await
        .unwrap();
    // Read back from etcd itself, under kube-apiserver's keys.
    let mut raw = etcd_client::Client::connect([etcd.endpoint.as_str()], None)
        .await
        .unwrap();
    for key in [
        "/registry/configmaps/default/in-etcd",
        "/registry/example.com/gadgets/default/in-etcd",
    ] {
        let found = raw.get(key, None).await.unwrap();
        assert_eq!(found.kvs().len(), 1, "{key}");
    }
    env.stop().await;
}

/// Servers in memory start from one bootstrap a process (decision 284): the bootstrap objects
/// of each are the same (uids included), what one server changes stays in it, and RBAC's
/// bootstrap policy decides on every copy from its first request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_in_memory_share_one_bootstrap_and_nothing_after_it() {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let uid_of_view = |env: &TestEnv| {
        let roles: Api<ClusterRole> = Api::all(env.client());
        async move { roles.get("view").await.unwrap().metadata.uid.unwrap() }
    };
    let first = TestEnv::builder().start().await.unwrap();
    let second = TestEnv::builder().start().await.unwrap();
    let uid = uid_of_view(&first).await;
    assert_eq!(uid_of_view(&second).await, uid);
    Api::<ClusterRole>::all(first.client())
        .delete("view", &DeleteParams::default())
        .await
        .unwrap();
    let third = TestEnv::builder().start().await.unwrap();
    assert_eq!(uid_of_view(&third).await, uid);
    assert_eq!(uid_of_view(&second).await, uid);
    // `system:discovery`, bound to every authenticated user, and nothing more.
    let bob = third.client_as("bob", &[]).await.unwrap();
    bob.list_api_groups().await.unwrap();
    let refused = refusal(
        Api::<ConfigMap>::namespaced(bob, "default")
            .list(&Default::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code, 403);
}
