//! The Greetings controller's story (`tests/controller.rs`: a Greeting made, changed and
//! deleted, its ConfigMap collected, its namespace deleted) timed on `apfkit-envtest` and on
//! the anchor, Go's envtest with what the story needs beside it: the reference etcd and
//! kube-apiserver 1.37 started as envtest starts them, and kube-controller-manager 1.37 (the
//! garbage collector and the namespace controller, which envtest lacks and the story needs).
//!
//! `cargo bench -p apfkit-envtest --bench controller` (the anchor needs the reference
//! binaries: `reference/build`, then `APFKIT_REFERENCE_BIN`). Each side: from nothing to the
//! story's end, with the server's start, and the story alone; `APFKIT_ENVTEST_STORIES` runs
//! (5 by default, the anchor 2).

#[path = "../examples/greetings/controller.rs"]
#[allow(dead_code)]
mod controller;
#[path = "../tests/greetings/story.rs"]
mod story;

use std::time::{Duration, Instant};

use apfkit_envtest::TestEnv;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};

fn runs() -> usize {
    std::env::var("APFKIT_ENVTEST_STORIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5)
}

/// The median of `times`.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The story on apfkit: (with the start, alone).
async fn on_apfkit() -> (Duration, Duration) {
    let began = Instant::now();
    let env = TestEnv::builder()
        .crd_manifest("greetings", controller::crd())
        .start()
        .await
        .expect("the server starts");
    let told = Instant::now();
    story::story(env.client(), None, Duration::from_secs(60))
        .await
        .expect("the story holds on apfkit");
    (began.elapsed(), told.elapsed())
}

/// The story on the anchor: (with the start, alone).
async fn on_anchor() -> (Duration, Duration) {
    let began = Instant::now();
    let server = tokio::task::spawn_blocking(|| {
        let server = apfkit_test_support::reference::KubeApiserver::start(&[]);
        let manager = server.start_controller_manager();
        (server, manager)
    })
    .await
    .expect("the reference starts");
    let client = apfkit_test_support::requests::client(&server.0.kubeconfig(), "apfkit").await;
    let crd: CustomResourceDefinition = serde_json::from_value(controller::crd()).expect("the CRD");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("the CRD is made");
    let name = crd.metadata.name.clone().unwrap_or_default();
    loop {
        let read = crds.get(&name).await.expect("the CRD is read");
        let established = read
            .status
            .and_then(|s| s.conditions)
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let told = Instant::now();
    story::story(client, None, Duration::from_secs(60))
        .await
        .expect("the story holds on the anchor");
    let alone = told.elapsed();
    let total = began.elapsed();
    drop(server);
    (total, alone)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let count = runs();
    let (apfkit, anchor) = runtime.block_on(async {
        // Warm: the first start pays for what a process does once.
        on_apfkit().await;
        let mut apfkit = Vec::new();
        for _ in 0..count {
            apfkit.push(on_apfkit().await);
        }
        let mut anchor = Vec::new();
        for _ in 0..count.div_ceil(3) {
            anchor.push(on_anchor().await);
        }
        (apfkit, anchor)
    });
    let split = |runs: &[(Duration, Duration)]| {
        (
            median(runs.iter().map(|r| r.0).collect()),
            median(runs.iter().map(|r| r.1).collect()),
        )
    };
    let (apfkit, anchor) = (split(&apfkit), split(&anchor));
    let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1000.0);
    let ratio = |a: Duration, b: Duration| format!("{:.3}", a.as_secs_f64() / b.as_secs_f64());
    println!("| the Greetings story (median) | apfkit-envtest | anchor | ÷ |");
    println!("|---|---|---|---|");
    println!(
        "| from nothing: server started, story told | {} | {} | {} |",
        ms(apfkit.0),
        ms(anchor.0),
        ratio(apfkit.0, anchor.0)
    );
    println!(
        "| the story alone | {} | {} | {} |",
        ms(apfkit.1),
        ms(anchor.1),
        ratio(apfkit.1, anchor.1)
    );
}
