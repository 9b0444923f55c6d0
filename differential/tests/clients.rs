//! The clients most controllers use, against apfkit's server (issue 55, part 4): client-go
//! 1.37 (`reference/clients/client-go`: an informer filled by WatchList, the typed client's
//! errors, the dynamic client, server-side apply with conflicts, force and extraction) and a
//! controller-runtime 0.25 manager (`reference/clients/controller-runtime`: a two-version CRD
//! converted by the manager's own webhook, a reconciler with a finalizer). Each program runs
//! first against the reference kube-apiserver, which shows that what it expects is kube's
//! behaviour, then against apfkit's server on its embedded store and on etcd; every step must
//! pass on all three, and the steps must read alike.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use apfkit_server::{Config, Storage};
use apfkit_test_support::etcd::Etcd;
use apfkit_test_support::process::run_within;
use apfkit_test_support::reference::{KubeApiserver, binary};

/// Runs the client program `name` against the server of `kubeconfig` (its `apfkit`
/// context) and answers the steps it printed; fails the test, quoting them, when one failed.
fn steps(name: &str, kubeconfig: &Path, server: &str) -> Vec<String> {
    let mut command = Command::new(binary(name));
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--context", "apfkit"]);
    let output = run_within(command, b"", Duration::from_secs(120), |_| {});
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{name} against {server}:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let steps: Vec<String> = stdout.lines().map(str::to_owned).collect();
    assert!(
        !steps.is_empty() && steps.iter().all(|s| s.starts_with("ok ")),
        "{name} against {server}: {steps:?}"
    );
    steps
}

/// Runs the program `name` against the reference, then against apfkit's server on each
/// backend, each started here.
async fn held_alike(name: &'static str) {
    let reference = tokio::task::spawn_blocking(|| KubeApiserver::start(&[]))
        .await
        .expect("the reference starts");
    let expected =
        tokio::task::spawn_blocking(move || steps(name, &reference.kubeconfig(), "kube-apiserver"))
            .await
            .expect("the program ran");

    let data = tempfile::tempdir().expect("a temporary folder");
    let etcd = Etcd::start_binary(&binary("etcd").display().to_string(), &[]);
    let mut on_etcd = Config::new(data.path().join("etcd"));
    on_etcd.storage = Storage::Etcd(vec![etcd.endpoint.clone()]);
    for (backend, config) in [
        (
            "the embedded store",
            Config::new(data.path().join("embedded")),
        ),
        ("etcd", on_etcd),
    ] {
        let server = apfkit_server::start(config)
            .await
            .expect("apfkit's server starts");
        let kubeconfig = server.kubeconfig().to_owned();
        let server_name = format!("apfkit on {backend}");
        let answered = tokio::task::spawn_blocking(move || steps(name, &kubeconfig, &server_name))
            .await
            .expect("the program ran");
        assert_eq!(answered, expected, "apfkit on {backend}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_go_works_against_apfkit_as_against_kube_apiserver() {
    held_alike("apfkit-client-go").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_runtime_manager_works_against_apfkit_as_against_kube_apiserver() {
    held_alike("apfkit-controller-runtime").await;
}
