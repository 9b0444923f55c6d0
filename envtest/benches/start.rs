//! A test server's start and memory, beside the anchor: Go's envtest, that is the reference
//! kube-apiserver 1.37 and its etcd started as envtest starts them, ready when `/readyz`
//! answers 200.
//!
//! `cargo bench -p apfkit-envtest --bench start` (the anchor needs the reference binaries:
//! `reference/build`, then `APFKIT_REFERENCE_BIN`; without them the bench fails, naming the
//! command). Measured in one run:
//! - **in-process**: from `TestEnv::builder().start()` to the answer of the client's first
//!   request (a list of ConfigMaps), objects in memory;
//! - **https**: the same over loopback HTTPS, the client made from the kubeconfig;
//! - **memory**: the growth of the process's resident memory with 100 in-process servers
//!   started and kept, divided by 100;
//! - **anchor**: from the start of etcd to kube-apiserver's `/readyz` 200.
//!
//! `APFKIT_ENVTEST_STARTS` sets how many starts are timed (30 by default; the anchor: 3).

use std::time::{Duration, Instant};

use apfkit_envtest::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;

fn starts() -> usize {
    std::env::var("APFKIT_ENVTEST_STARTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(30)
}

/// The process's resident memory, from `/proc/self/status`.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .expect("VmRSS")
        * 1024
}

/// The median and the 90th percentile.
fn summary(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9))
}

/// Starts a server and asks it one thing, returning how long that took.
async fn start_once(https: bool) -> (Duration, TestEnv) {
    let began = Instant::now();
    let builder = TestEnv::builder();
    let builder = if https { builder.https() } else { builder };
    let env = builder.start().await.expect("the server starts");
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    config_maps
        .list(&Default::default())
        .await
        .expect("the first request is answered");
    (began.elapsed(), env)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let count = starts();
    let (in_process, https, per_server) = runtime.block_on(async {
        // Warm: the first start pays for what a process does once (the CRD schemas of the
        // served kinds, rustls's provider).
        drop(start_once(false).await);
        let mut in_process = Vec::new();
        for _ in 0..count {
            let (took, env) = start_once(false).await;
            in_process.push(took);
            drop(env);
        }
        let mut https = Vec::new();
        for _ in 0..count.div_ceil(3) {
            let (took, env) = start_once(true).await;
            https.push(took);
            env.stop().await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = resident_bytes();
        let mut kept = Vec::new();
        for _ in 0..100 {
            kept.push(start_once(false).await.1);
        }
        let per_server = resident_bytes().saturating_sub(before) / 100;
        drop(kept);
        (summary(in_process), summary(https), per_server)
    });
    let mut anchor = Vec::new();
    for _ in 0..count.div_ceil(10) {
        let began = Instant::now();
        let server = apfkit_test_support::reference::KubeApiserver::start(&[]);
        anchor.push(began.elapsed());
        drop(server);
    }
    let anchor = summary(anchor);
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    let ratio = |d: Duration| format!("{:.4}", d.as_secs_f64() / anchor.0.as_secs_f64());
    println!("| figure | median | p90 | ÷ anchor (median) |");
    println!("|---|---|---|---|");
    println!(
        "| in-process start to first answer ({count} starts) | {} | {} | {} |",
        ms(in_process.0),
        ms(in_process.1),
        ratio(in_process.0)
    );
    println!(
        "| HTTPS start to first answer ({} starts) | {} | {} | {} |",
        count.div_ceil(3),
        ms(https.0),
        ms(https.1),
        ratio(https.0)
    );
    println!(
        "| anchor: etcd + kube-apiserver 1.37 to /readyz ({} starts) | {} | {} | 1 |",
        count.div_ceil(10),
        ms(anchor.0),
        ms(anchor.1)
    );
    println!(
        "| resident memory per in-process server (100 kept) | {:.1} MiB | | |",
        per_server as f64 / (1 << 20) as f64
    );
}
