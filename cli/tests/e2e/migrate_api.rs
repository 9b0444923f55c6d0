//! `apfkit storage migrate-api` against `apfkit serve` on a real etcd: FlowSchemas an older
//! release stored as v1beta3 protobuf are written back through the API, which stores them in
//! v1; a run stopped by the server going away goes on from its `--state`; a concurrent writer
//! and deletions meanwhile lose nothing.

use std::process::Command;
use std::time::{Duration, Instant};

use apfkit_runtime::scheme::StorageEncoding;
use apfkit_scheme::scheme::{SCHEME, UnknownFields};
use apfkit_storage::etcd::{EtcdOptions, RESOURCES, Store};
use apfkit_storage::object;
use apfkit_test_support::etcd::Etcd;
use apfkit_types::flowcontrol::v1;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use super::serve::{NO_APF, Server};
use super::serve_clients::kube_client;

async fn store(etcd: &Etcd) -> Store {
    Store::connect(&EtcdOptions {
        endpoints: vec![etcd.endpoint.clone()],
        ..EtcdOptions::default()
    })
    .await
    .unwrap()
}

/// A FlowSchema as a release that stored v1beta3 left it in etcd.
fn stored_v1beta3(name: &str, precedence: i64) -> Vec<u8> {
    let v1 = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "creationTimestamp": "2024-01-02T03:04:05Z"},
        "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": precedence}
    });
    let old = SCHEME
        .convert_value(&v1, &"v1beta3".parse().unwrap(), UnknownFields::Strict)
        .unwrap()
        .object;
    object::encode(&old, StorageEncoding::Protobuf).unwrap()
}

/// (stored apiVersion, name) of every stored FlowSchema.
async fn stored_versions(store: &Store) -> Vec<(String, String)> {
    let flow_schemas = &RESOURCES[0];
    let mut found = Vec::new();
    let mut cursor = Some(apfkit_storage::etcd::Cursor::FIRST);
    while let Some(at) = cursor {
        let page = store.page(flow_schemas, at).await.unwrap();
        for raw in page.values {
            let decoded =
                object::decode(&raw.value, raw.mod_revision, &Default::default()).unwrap();
            let name = decoded.object["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned();
            found.push((decoded.api_version().to_owned(), name));
        }
        cursor = page.next;
    }
    found
}

fn migrate_api(server_dir: &std::path::Path, state: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_apfkit"));
    command
        .args([
            "storage",
            "migrate-api",
            "--resource",
            "flowschemas.flowcontrol.apiserver.k8s.io",
        ])
        .args(["--page-size", "5", "-o", "json", "--kubeconfig"])
        .arg(server_dir.join("kubeconfig"))
        .arg("--state")
        .arg(state);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_schemas_stored_as_v1beta3_are_rewritten_in_v1_through_the_api() {
    let etcd = Etcd::start();
    let store = store(&etcd).await;
    for i in 0..400 {
        let name = format!("team-{i:03}");
        store
            .put(
                format!("/registry/flowschemas/{name}").as_bytes(),
                stored_v1beta3(&name, 1000 + i),
            )
            .await
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_owned();
    let serve_args = [
        "--etcd-servers",
        etcd.endpoint.as_str(),
        "--no-bootstrap",
        NO_APF,
    ];
    let state = dir.path().join("migration.state");

    // The first run is stopped by the server going away once some objects are written back.
    let server = Server::start_in(&data, &serve_args);
    let first = std::thread::spawn({
        let mut command = migrate_api(dir.path(), &state);
        move || command.output().unwrap()
    });
    let started = Instant::now();
    loop {
        let migrated = stored_versions(&store)
            .await
            .iter()
            .filter(|(version, _)| version == "flowcontrol.apiserver.k8s.io/v1")
            .count();
        if migrated >= 40 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the migration never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(server);
    let first = first.join().unwrap();
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the server stopped answering") && stderr.contains("--state"),
        "{stderr}"
    );
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(
        saved["resource"],
        "flowschemas.flowcontrol.apiserver.k8s.io"
    );
    assert!(saved["continue"].is_string(), "{saved}");
    let left = stored_versions(&store)
        .await
        .iter()
        .filter(|(version, _)| version.ends_with("/v1beta3"))
        .count();
    assert!(left > 0, "the first run was stopped before its end");

    // The second run goes on from the state, beside a writer and deletions.
    let server = Server::start_in(&data, &serve_args);
    let client = kube_client(&server).await;
    let schemas: Api<v1::FlowSchema> = Api::all(client);
    let writer = tokio::spawn({
        let schemas = schemas.clone();
        async move {
            for round in 0..5 {
                for i in (300..400).step_by(10) {
                    let name = format!("team-{i:03}");
                    let mut schema = schemas.get(&name).await.unwrap();
                    schema.spec.matching_precedence = Some(2000 + round);
                    let _ = schemas
                        .replace(&name, &PostParams::default(), &schema)
                        .await;
                }
            }
            for i in (390..400).step_by(3) {
                schemas
                    .delete(&format!("team-{i:03}"), &DeleteParams::default())
                    .await
                    .unwrap();
            }
        }
    });
    let second = migrate_api(dir.path(), &state).output().unwrap();
    writer.await.unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{stderr}");
    assert!(!state.exists(), "the state is removed once the run is done");
    let summaries: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
    let summary = &summaries[0];
    assert_eq!(
        summary["resource"],
        "flowschemas.flowcontrol.apiserver.k8s.io"
    );
    assert_eq!(summary["failed"], json!([]));
    assert_eq!(
        summary["listed"],
        summary["migrated"].as_u64().unwrap() + summary["deletedMeanwhile"].as_u64().unwrap()
    );

    // Everything is stored in v1 now; the writer's changes and the deletions stand.
    let stored = stored_versions(&store).await;
    assert!(
        stored
            .iter()
            .all(|(version, _)| version == "flowcontrol.apiserver.k8s.io/v1"),
        "{stored:?}"
    );
    assert_eq!(stored.len(), 400 - 4);
    let written = schemas.get("team-310").await.unwrap();
    assert_eq!(written.spec.matching_precedence, Some(2004));
    assert_eq!(written.metadata.uid.as_deref(), Some("uid-team-310"));
    drop(server);
}

/// Hostile inputs of `migrate-api`: a state or kubeconfig that is garbage, endless
/// (`/dev/zero`) or a directory is refused naming the flag and the file, at once, in little
/// memory; a server that does not answer is an error, not a hang.
#[test]
fn hostile_states_and_kubeconfigs_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, "{\"resource\": 3").unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n\
         users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
    )
    .unwrap();
    let run = |extra: &[&std::ffi::OsStr]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_apfkit"));
        command.args([
            "storage",
            "migrate-api",
            "--resource",
            "flowschemas.flowcontrol.apiserver.k8s.io",
        ]);
        command.args(extra);
        super::run_within(command, b"", Duration::from_secs(60), |_| {})
    };
    for (flag, file) in [
        ("--state", garbage.as_os_str()),
        ("--state", std::ffi::OsStr::new("/dev/zero")),
        ("--kubeconfig", garbage.as_os_str()),
        ("--kubeconfig", std::ffi::OsStr::new("/dev/zero")),
        ("--kubeconfig", dir.path().as_os_str()),
    ] {
        let mut args = vec![std::ffi::OsStr::new(flag), file];
        if flag == "--state" {
            args.extend([std::ffi::OsStr::new("--kubeconfig"), kubeconfig.as_os_str()]);
        }
        let output = run(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_ne!(output.status.code(), Some(0), "{flag} {file:?}");
        assert!(
            stderr.contains(flag) && stderr.contains(&*file.to_string_lossy()),
            "{flag} {file:?}: {stderr}"
        );
    }
    // Nothing listens on port 1: an error naming the resource, well within the time limit.
    let output = run(&[std::ffi::OsStr::new("--kubeconfig"), kubeconfig.as_os_str()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("flowschemas.flowcontrol.apiserver.k8s.io"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `apfkit storage migrate-api --server-side` against `server`, with `args`.
fn migrate_server_side(server: &Server, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_apfkit"))
        .args(["storage", "migrate-api", "--server-side", "--kubeconfig"])
        .arg(server.kubeconfig())
        .args(args)
        .output()
        .unwrap()
}

/// The cluster migrates: a StorageVersionMigration is made and followed until the server's
/// controller says every FlowSchema was written back.
#[test]
fn a_server_side_migration_is_followed_to_its_end() {
    let server = Server::start(&[NO_APF]);
    let schemas = server.kubectl_ok(&["get", "flowschemas", "--no-headers"], b"");
    let count = schemas.lines().count();
    let output = migrate_server_side(
        &server,
        &["--resource", "flowschemas.flowcontrol.apiserver.k8s.io"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (head, message) = stdout.trim_end().split_once(" succeeded: ").unwrap();
    assert!(
        head.starts_with(
            "flowschemas.flowcontrol.apiserver.k8s.io: StorageVersionMigration \
             flowschemas.flowcontrol.apiserver.k8s.io-"
        ),
        "{stdout}"
    );
    assert_eq!(
        message,
        format!("The migration is running, {count} objects verified migrated")
    );
    // The same as JSON, and a second migration of the resource runs after the first.
    let output = migrate_server_side(
        &server,
        &[
            "--resource",
            "flowschemas.flowcontrol.apiserver.k8s.io",
            "-o",
            "json",
        ],
    );
    assert!(output.status.success());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report[0]["step"], "Succeeded");
    assert_eq!(
        report[0]["resource"],
        "flowschemas.flowcontrol.apiserver.k8s.io"
    );
    let migrations = server.kubectl_ok(&["get", "storageversionmigrations", "--no-headers"], b"");
    assert_eq!(migrations.lines().count(), 2, "{migrations}");
}

/// Without a controller to run it, the migration does not end: the command says so after
/// --timeout, names the migration left, and fails; a resource the server does not serve is
/// refused before anything is made.
#[test]
fn a_server_side_migration_that_does_not_end_in_time_is_reported() {
    let server = Server::start(&[
        NO_APF,
        "--controllers=*,-storage-version-migrator-controller",
    ]);
    let output = migrate_server_side(
        &server,
        &[
            "--resource",
            "flowschemas.flowcontrol.apiserver.k8s.io",
            "--timeout",
            "2s",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("did not end within 2s (it was Waiting); it is left to the controller: kubectl get storageversionmigration flowschemas.flowcontrol.apiserver.k8s.io-"),
        "{stderr}"
    );
    let output = migrate_server_side(&server, &["--resource", "nothings.example.com"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "--resource nothings.example.com: the server serves no resource nothings.example.com"
        ),
        "{stderr}"
    );
    let migrations = server.kubectl_ok(&["get", "storageversionmigrations", "--no-headers"], b"");
    assert_eq!(
        migrations.lines().count(),
        1,
        "only the first: {migrations}"
    );
}
