//! The async guard's cost per request (classify, admit, execute, finish), without and with
//! kube-apiserver's metrics kept, beside a baseline of classification alone, so that the
//! filter's share of a request served by `apfkit serve` can be read off.
//!
//! `cargo bench -p apfkit-dispatcher --bench guard`

use std::sync::LazyLock;

use apfkit_dispatcher::classify::{Classifier, Request};
use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::guard::Guard;
use apfkit_dispatcher::metrics::ApfMetrics;
use apfkit_dispatcher::queueset::WorkEstimate;

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
});

fn alice() -> Request<'static> {
    Request {
        user: "alice",
        groups: &["system:authenticated"],
        verb: "get",
        is_resource_request: true,
        api_group: "flowcontrol.apiserver.k8s.io",
        api_version: "v1",
        resource: "flowschemas",
        name: "exempt",
        ..Request::default()
    }
}

fn guard(metrics: bool) -> Guard {
    let _entered = RUNTIME.enter();
    let guard = Guard::new(Configuration::kubernetes_default(600).unwrap());
    if metrics {
        guard.record_metrics(ApfMetrics::register(&prometheus::Registry::new()).unwrap());
    }
    guard
}

#[divan::bench]
fn classification_alone(bencher: divan::Bencher) {
    let classifier = Classifier::new(Configuration::kubernetes_default(600).unwrap());
    bencher.bench(|| divan::black_box(classifier.classify(&alice())).map(|c| c.hash));
}

#[divan::bench(args = [false, true])]
fn acquire_and_finish(bencher: divan::Bencher, metrics: bool) {
    let guard = guard(metrics);
    bencher.bench(|| {
        RUNTIME.block_on(async {
            let permit = guard
                .acquire(&alice(), WorkEstimate::ONE_SEAT)
                .await
                .unwrap();
            drop(divan::black_box(permit));
        })
    });
}

fn main() {
    divan::main();
}
