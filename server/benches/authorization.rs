//! `cargo bench -p apfkit-server --bench authorization`: what RBAC costs a request.
//!
//! Two servers in this process, as `apfkit serve` runs them: one with
//! `--authorization-mode=RBAC` and 1,000 ClusterRoleBindings of other users (the plain user's
//! own binding sorts after them all, so every request walks them), one with `AlwaysAllow`.
//! The plain user GETs one FlowSchema from each, 64 requests at a time through kube-rs, for
//! `APFKIT_BENCH_SECONDS` (default 5) per side, sides alternating over six rounds. Target: the
//! RBAC server answers at ≥ 0.9× the rate of the other (issue 39).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use apfkit_server::{AuthorizationMode, Config};
use kube::config::{KubeConfigOptions, Kubeconfig};

const BINDINGS: usize = 1_000;
const CONCURRENCY: usize = 64;
const PATH: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt";

/// A client of `server` in its kubeconfig's `context`.
async fn client(server: &apfkit_server::Server, context: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).expect("the kubeconfig");
    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("a client configuration");
    kube::Client::try_from(config).expect("a client")
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> Result<String, kube::Error> {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body)
        .expect("a request");
    client.request_text(request).await
}

/// The plain user's GETs answered per second, `CONCURRENCY` at a time for `seconds`.
async fn rate(client: &kube::Client, seconds: u64) -> f64 {
    let answered = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for _ in 0..CONCURRENCY {
        let (client, answered) = (client.clone(), answered.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                send(&client, "GET", PATH, Vec::new())
                    .await
                    .expect("GET answered 200");
                answered.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await.expect("a sender");
    }
    answered.load(Ordering::Relaxed) as f64 / seconds as f64
}

/// 1,000 bindings of other users, then the plain user's own (last in name order).
async fn bind(admin: &kube::Client, user: &kube::Client) {
    let post = |path: &'static str, body: serde_json::Value| {
        let admin = admin.clone();
        async move {
            send(
                &admin,
                "POST",
                path,
                serde_json::to_vec(&body).expect("JSON"),
            )
            .await
            .expect("created");
        }
    };
    post(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "flowschema-reader"},
            "rules": [{"apiGroups": ["flowcontrol.apiserver.k8s.io"], "resources": ["flowschemas"], "verbs": ["get"]}]}),
    )
    .await;
    let binding = |name: String, user: String| {
        serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "flowschema-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    };
    for chunk in (0..BINDINGS).collect::<Vec<_>>().chunks(50) {
        let sends = chunk.iter().map(|i| {
            post(
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                binding(format!("bench-{i:04}"), format!("user-{i}")),
            )
        });
        futures::future::join_all(sends).await;
    }
    post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        binding("zz-plain-user".into(), "apfkit-user".into()),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while send(user, "GET", PATH, Vec::new()).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the binding did not hold within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn main() {
    let seconds: u64 = std::env::var("APFKIT_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (rbac_dir, open_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let start = |dir: &tempfile::TempDir, mode| {
            let mut config = Config::new(dir.path());
            config.authorization_mode = mode;
            // Nothing queues: the cost measured is authorization's.
            config.max_requests_inflight = 10_000;
            apfkit_server::start(config)
        };
        let rbac = start(&rbac_dir, AuthorizationMode::Rbac).await.expect("the RBAC server");
        let open = start(&open_dir, AuthorizationMode::AlwaysAllow)
            .await
            .expect("the AlwaysAllow server");
        let rbac_user = client(&rbac, "apfkit-user").await;
        let open_user = client(&open, "apfkit-user").await;
        bind(&client(&rbac, "apfkit").await, &rbac_user).await;
        println!(
            "GET of one FlowSchema by the plain user, {CONCURRENCY} at a time, {seconds} s per side: \
             RBAC with {BINDINGS} other bindings against AlwaysAllow"
        );
        println!("| round | RBAC (req/s) | AlwaysAllow (req/s) | ratio | target |");
        println!("|---|---|---|---|---|");
        let mut ratios = Vec::new();
        for round in 1..=6 {
            let (with, without) = if round % 2 == 1 {
                let with = rate(&rbac_user, seconds).await;
                (with, rate(&open_user, seconds).await)
            } else {
                let without = rate(&open_user, seconds).await;
                (rate(&rbac_user, seconds).await, without)
            };
            ratios.push(with / without);
            println!("| {round} | {with:.0} | {without:.0} | {:.2} | >= 0.9 |", with / without);
        }
        ratios.sort_by(f64::total_cmp);
        println!("median ratio: {:.2} (target >= 0.9)", ratios[ratios.len() / 2]);
        rbac.shutdown().await;
        open.shutdown().await;
    });
}
