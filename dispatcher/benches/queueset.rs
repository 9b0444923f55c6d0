//! One arrive + dispatch + finish cycle on a backlogged 64-queue level, beside a plain
//! `VecDeque` push and pop; the fair-allocation solver with 100 priority levels, beside
//! sorting its 100 targets.
//!
//! `cargo bench -p apfkit-dispatcher --bench queueset`

use std::collections::VecDeque;
use std::time::Duration;

use apfkit_dispatcher::borrowing::{AllocationItem, allocate};
use apfkit_dispatcher::queueset::{Arrival, QueueSet, QueueSetConfig, RequestId, WorkEstimate};
use apfkit_dispatcher::shuffle::Dealer;
use divan::Bencher;

fn main() {
    divan::main();
}

const QUEUES: i32 = 64;
const LIMIT: u64 = 16;
const BACKLOG_PER_QUEUE: u64 = 10;

/// A level with 64 queues, hand 8, CL 16: 16 executing and 640 waiting requests of 640 flows.
fn backlogged() -> (QueueSet, VecDeque<RequestId>, Duration) {
    let config = QueueSetConfig::Queue {
        dealer: Dealer::new(QUEUES, 8).unwrap(),
        queue_length_limit: 10_000,
    };
    let mut set = QueueSet::new(config, LIMIT, Duration::ZERO);
    let mut executing = VecDeque::new();
    let mut now = Duration::ZERO;
    for hash in 0..(QUEUES as u64 * BACKLOG_PER_QUEUE + LIMIT) {
        now += Duration::from_micros(1);
        match set.start(
            now,
            hash.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            WorkEstimate::ONE_SEAT,
        ) {
            Arrival::Admitted { dispatched, .. } => executing.extend(dispatched),
            Arrival::Rejected(reason) => panic!("{reason:?}"),
        }
    }
    assert_eq!(executing.len() as u64, LIMIT);
    assert_eq!(set.waiting() as u64, QUEUES as u64 * BACKLOG_PER_QUEUE);
    (set, executing, now)
}

/// Baseline: push one value and pop one from a `VecDeque`.
#[divan::bench]
fn baseline_vecdeque_push_pop(bencher: Bencher) {
    let mut queue: VecDeque<u64> = (0..656).collect();
    let mut next = 656u64;
    bencher.bench_local(|| {
        queue.push_back(divan::black_box(next));
        next += 1;
        queue.pop_front()
    });
}

/// One request arrives (and waits), the oldest executing one finishes, and the fairest head
/// is dispatched: the backlog stays the same size.
#[divan::bench]
fn arrive_dispatch_finish_cycle(bencher: Bencher) {
    let (mut set, mut executing, mut now) = backlogged();
    let mut hash = 1u64;
    bencher.bench_local(|| {
        now += Duration::from_micros(1);
        hash = hash
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let arrival = set.start(now, hash, WorkEstimate::ONE_SEAT);
        let oldest = executing.pop_front().unwrap();
        let (_, dispatched) = set.finish(now, oldest);
        executing.extend(dispatched);
        arrival
    });
    assert_eq!(executing.len() as u64, LIMIT);
}

fn solver_problem() -> Vec<AllocationItem> {
    (0..100)
        .map(|i| {
            let lower = f64::from(1 + i % 7);
            AllocationItem {
                target: lower + f64::from((i * 37) % 101),
                lower_bound: lower,
                upper_bound: lower + f64::from(50 + (i * 13) % 200),
            }
        })
        .collect()
}

/// Baseline: sorting the 100 targets.
#[divan::bench]
fn baseline_sort_100_targets(bencher: Bencher) {
    let items = solver_problem();
    bencher.bench_local(|| {
        let mut targets: Vec<f64> = items.iter().map(|i| i.target).collect();
        targets.sort_by(f64::total_cmp);
        targets
    });
}

/// The fair-allocation solver with 100 levels (required sum 6,000).
#[divan::bench]
fn solver_100_levels(bencher: Bencher) {
    let items = solver_problem();
    assert!(allocate(6000, &items).is_ok());
    bencher.bench_local(|| allocate(divan::black_box(6000), &items));
}
