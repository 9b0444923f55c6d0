//! The mixed simulator on the embedded default workload (about 90,000 requests), in requests
//! per second of CPU; the uniform harness on upstream's TestDifferentWidths scenario. The
//! baseline pushes and pops the same number of events through a binary heap alone.
//!
//! `cargo bench -p apfkit-dispatcher --bench simulate`

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::queueset::QueueSetConfig;
use apfkit_dispatcher::shuffle::Dealer;
use apfkit_dispatcher::sim::server::simulate;
use apfkit_dispatcher::sim::uniform::{UniformClient, UniformScenario};
use apfkit_dispatcher::sim::workload::Workload;
use divan::Bencher;
use divan::counter::ItemsCount;

fn main() {
    divan::main();
}

fn requests_of_default_run() -> u64 {
    let config = Configuration::kubernetes_default(600).unwrap();
    simulate(config, &Workload::embedded_default(), 1, |_| {})
        .unwrap()
        .requests
}

/// Baseline: three heap events (arrival, end of execution, next arrival) per request.
#[divan::bench(sample_count = 20)]
fn baseline_event_heap(bencher: Bencher) {
    let requests = requests_of_default_run();
    bencher.counter(ItemsCount::new(requests)).bench(|| {
        let mut heap = BinaryHeap::new();
        let mut t = 0u64;
        for i in 0..requests {
            for _ in 0..3 {
                t = t.wrapping_mul(6364136223846793005).wrapping_add(i);
                heap.push(Reverse((t >> 20, i)));
            }
            for _ in 0..3 {
                heap.pop();
            }
        }
        heap.len()
    });
}

/// The default workload against the default configuration at ServerCL 600.
#[divan::bench(sample_count = 20)]
fn mixed_default_workload(bencher: Bencher) {
    let requests = requests_of_default_run();
    let workload = Workload::embedded_default();
    bencher.counter(ItemsCount::new(requests)).bench(|| {
        let config = Configuration::kubernetes_default(600).unwrap();
        simulate(config, &workload, 1, |_| {}).unwrap()
    });
}

/// Upstream's TestDifferentWidths scenario (20 s, 64 queues, 200 calls).
#[divan::bench(sample_count = 50)]
fn uniform_different_widths(bencher: Bencher) {
    let second = Duration::from_secs(1);
    let scenario = UniformScenario {
        config: QueueSetConfig::Queue {
            dealer: Dealer::new(64, 7).unwrap(),
            queue_length_limit: 13,
        },
        concurrency_limit: 6,
        clients: vec![
            UniformClient::new(10010010010010, 13, 10, second, 999_999_999),
            UniformClient::new(20020020020020, 7, 10, second, 999_999_999).width(2),
        ],
        eval: 20 * second,
    };
    let calls: u64 = scenario.run().executed.iter().sum();
    bencher
        .counter(ItemsCount::new(calls))
        .bench(|| scenario.run());
}
