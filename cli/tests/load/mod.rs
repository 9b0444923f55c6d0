//! Real load on `apfkit serve` over HTTPS, shared by the fairness test (`e2e`) and benchmark
//! (`benches/fairness.rs`): clients that authenticate with bearer tokens (kube-rs, each
//! keeping its own pool of connections), an elephant that LISTs many stored objects from
//! many connections, a mouse that GETs one object at a modest rate, and a flood.

#![allow(dead_code)] // Each user of this module takes the parts it needs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};

/// The users of `--token-auth-file`: the elephant and the mouse are plain users (the
/// `global-default` level, one flow each); the flood and the service-account elephant are
/// service accounts (the `service-accounts` schema, level `workload-low`).
pub const TOKENS: &str = "\
elephant-token,elephant,1001,\"team-a\"
mouse-token,mouse,1002,\"team-b\"
flood-token,system:serviceaccount:default:flood,1003,\"system:serviceaccounts,system:serviceaccounts:default\"
sa-elephant-token,system:serviceaccount:load:elephant,1004,\"system:serviceaccounts,system:serviceaccounts:load\"
";

/// Where the objects of the load live: APIServices, which play no part in the APF
/// configuration.
pub const API_SERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";

/// A client of the server whose kubeconfig is at `kubeconfig`: as its administrator, or
/// with `token` instead of the client certificate; it does not retry.
pub async fn client(kubeconfig: &std::path::Path, token: Option<&str>) -> kube::Client {
    let mut kubeconfig = Kubeconfig::read_from(kubeconfig).unwrap();
    if let Some(token) = token {
        for named in &mut kubeconfig.auth_infos {
            if let Some(auth) = named.auth_info.as_mut() {
                auth.client_certificate_data = None;
                auth.client_key_data = None;
                auth.client_certificate = None;
                auth.client_key = None;
                auth.token = Some(token.to_owned().into());
            }
        }
    }
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
    // kube-rs sends a request again after a 429 by default: the load counts each answer.
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

/// Sends a request; answers its status and how long the whole answer took.
pub async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> (u16, Duration) {
    let started = Instant::now();
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(body))
        .unwrap();
    match client.send(request).await {
        Ok(response) => {
            let status = response.status().as_u16();
            // Read the whole body: the time is the client's.
            let _ = http_body_util::BodyExt::collect(response.into_body()).await;
            (status, started.elapsed())
        }
        Err(_) => (0, started.elapsed()),
    }
}

/// Creates `count` APIServices (`v1.g<i>.load.example`), 32 at a time.
pub async fn create_api_services(client: &kube::Client, count: usize) {
    for batch in (0..count).collect::<Vec<_>>().chunks(32) {
        let sends = batch.iter().map(|i| {
            let body = serde_json::json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": format!("v1.g{i}.load.example"), "labels": {"load": "yes"}},
                "spec": {"group": format!("g{i}.load.example"), "version": "v1",
                    "groupPriorityMinimum": 1000, "versionPriority": 15},
            });
            send(
                client,
                "POST",
                API_SERVICES,
                serde_json::to_vec(&body).unwrap(),
            )
        });
        for (status, _) in futures::future::join_all(sends).await {
            assert!(status == 201 || status == 409, "create: {status}");
        }
    }
}

/// Lets the load's users (the groups of [`TOKENS`]) read APIServices, as an operator would
/// grant them under RBAC: a ClusterRole `load-reader` bound to their groups, created by the
/// administrator `client`, and waited for until the elephant may list.
pub async fn grant_readers(admin: &kube::Client, kubeconfig: &std::path::Path) {
    let role = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "load-reader"},
        "rules": [{"apiGroups": ["apiregistration.k8s.io"], "resources": ["apiservices"],
            "verbs": ["get", "list", "watch"]}],
    });
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "load-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "load-reader"},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-a"},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-b"},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:serviceaccounts"},
        ],
    });
    for (path, body) in [
        ("/apis/rbac.authorization.k8s.io/v1/clusterroles", role),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            binding,
        ),
    ] {
        let (status, _) = send(admin, "POST", path, serde_json::to_vec(&body).unwrap()).await;
        assert!(status == 201 || status == 409, "{path}: {status}");
    }
    let elephant = client(kubeconfig, Some("elephant-token")).await;
    for _ in 0..200 {
        if send(&elephant, "GET", API_SERVICES, Vec::new()).await.0 == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the load's users were not allowed to read APIServices within 10 s");
}

/// What one side of the load saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// Latencies of the answers with status 200.
    pub latencies: Vec<Duration>,
    /// Answers with 429.
    pub rejected: u64,
    /// Other answers, and transport failures.
    pub failed: u64,
}

impl Seen {
    /// The `p`-th percentile (0–100) of the latencies.
    pub fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
        sorted[rank.min(sorted.len() - 1)]
    }

    fn note(&mut self, status: u16, latency: Duration) {
        match status {
            200 => self.latencies.push(latency),
            429 => self.rejected += 1,
            _ => self.failed += 1,
        }
    }
}

/// The mouse: GETs of `path`, one every `1 / rate` seconds (sent on time whatever the
/// previous answer's delay, as an open-loop client), for `duration`.
pub async fn mouse(client: &kube::Client, path: &str, rate: f64, duration: Duration) -> Seen {
    mouse_retrying(client, path, rate, duration, 0).await.0
}

/// [`mouse`] as client-go: a GET answered 429 is sent again after the Retry-After second, at
/// most `retries` times, and its latency runs until the answer that is not a 429. Answers
/// what it saw and how many times it sent again.
pub async fn mouse_retrying(
    client: &kube::Client,
    path: &str,
    rate: f64,
    duration: Duration,
    retries: u64,
) -> (Seen, u64) {
    let period = Duration::from_secs_f64(1.0 / rate);
    let started = Instant::now();
    let mut sends = Vec::new();
    let mut next = started;
    while next < started + duration {
        tokio::time::sleep_until(next.into()).await;
        let (client, path) = (client.clone(), path.to_owned());
        sends.push(tokio::spawn(async move {
            let first = Instant::now();
            let mut tried = 0;
            loop {
                let (status, _) = send(&client, "GET", &path, Vec::new()).await;
                if status != 429 || tried == retries {
                    return (status, first.elapsed(), tried);
                }
                tried += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }));
        next += period;
    }
    let mut seen = Seen::default();
    let mut sent_again = 0;
    for sent in sends {
        let (status, latency, tried) = sent.await.unwrap();
        sent_again += tried;
        seen.note(status, latency);
    }
    (seen, sent_again)
}

/// A benchmark's setting: the environment variable `name` as a number, else `default`.
pub fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `apfkit serve` (this build's binary) on a data directory, with the load's tokens; stopped
/// when dropped.
pub struct Serving {
    child: std::process::Child,
    /// The kubeconfig it wrote.
    pub kubeconfig: std::path::PathBuf,
}

impl Serving {
    /// Starts the server on `data` with the token file `tokens` and `extra` arguments, and
    /// waits until it listens.
    pub fn start(
        data: &std::path::Path,
        tokens: &std::path::Path,
        extra: &[impl AsRef<std::ffi::OsStr>],
    ) -> Serving {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_apfkit"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data)
            .arg("--token-auth-file")
            .arg(tokens)
            .args(extra);
        let (child, _url) = apfkit_test_support::process::start_server(command);
        Serving {
            child,
            kubeconfig: data.join("kubeconfig"),
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Clients of one user, `count` of them: each keeps its own connection (an HTTP/2
/// connection carries a client's concurrent requests, so "many connections" needs many
/// clients).
pub async fn clients(kubeconfig: &std::path::Path, token: &str, count: usize) -> Vec<kube::Client> {
    let mut clients = Vec::with_capacity(count);
    for _ in 0..count {
        clients.push(client(kubeconfig, Some(token)).await);
    }
    clients
}

/// A closed-loop load: `tasks` tasks, spread over `clients`, each sending `method path`
/// again as soon as the last answer came (after `Retry-After`'s second when rejected),
/// until `stop` is set.
pub async fn closed_loop(
    clients: &[kube::Client],
    method: &str,
    path: &str,
    tasks: usize,
    stop: Arc<AtomicBool>,
) -> Seen {
    let sent = Arc::new(AtomicU64::new(0));
    let loops = (0..tasks).map(|task| {
        let client = clients[task % clients.len()].clone();
        let (stop, sent) = (stop.clone(), sent.clone());
        let (method, path) = (method.to_owned(), path.to_owned());
        tokio::spawn(async move {
            let mut seen = Seen::default();
            while !stop.load(Ordering::Relaxed) {
                let (status, latency) = send(&client, &method, &path, Vec::new()).await;
                sent.fetch_add(1, Ordering::Relaxed);
                seen.note(status, latency);
                if status == 429 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            seen
        })
    });
    let mut all = Seen::default();
    for seen in futures::future::join_all(loops).await {
        let seen = seen.unwrap();
        all.latencies.extend(seen.latencies);
        all.rejected += seen.rejected;
        all.failed += seen.failed;
    }
    all
}

/// A benchmark's ground: a two-thread runtime, a folder holding the load's token file and a
/// server's data directory in which `objects` APIServices are stored, readable by the load's
/// users. Answers the runtime, the folder (removed when dropped), the token file and the data
/// directory.
pub fn ground(
    objects: usize,
) -> (
    tokio::runtime::Runtime,
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let folder = tempfile::tempdir().unwrap();
    let tokens = folder.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let store = folder.path().join("server");
    runtime.block_on(async {
        let serving = Serving::start(&store, &tokens, &[] as &[&str]);
        let admin = client(&serving.kubeconfig, None).await;
        grant_readers(&admin, &serving.kubeconfig).await;
        create_api_services(&admin, objects).await;
    });
    (runtime, folder, tokens, store)
}
