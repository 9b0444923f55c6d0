//! Seeded random sequences of requests (`apfkit_differential::sequence`) sent to the three
//! servers side by side; a difference is shrunk by proptest to the shortest sequence that
//! still shows it, reported with its seed.
//!
//! `APFKIT_DIFFERENTIAL_SEQUENCES` sets how many sequences (60 by default, a few thousand
//! requests), `APFKIT_DIFFERENTIAL_SEED` the seed (55 by default),
//! `APFKIT_DIFFERENTIAL_PARALLEL` how many run at once (8): the long run of
//! docs/conformance.md is `APFKIT_DIFFERENTIAL_SEQUENCES=30000 .ci/reference -- random`.

use std::sync::atomic::{AtomicUsize, Ordering};

use apfkit_differential::sequence::{self, Sequence};
use apfkit_differential::{Request, Servers, Session};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The sequences of a run unless `APFKIT_DIFFERENTIAL_SEQUENCES` says otherwise.
pub const DEFAULT_SEQUENCES: usize = 60;
/// The seed unless `APFKIT_DIFFERENTIAL_SEED` says otherwise.
pub const DEFAULT_SEED: u64 = 55;

/// What a run of sequences compared.
pub struct Counted {
    /// Sequences run (those tried while shrinking included).
    pub sequences: usize,
    /// Requests sent to each server.
    pub requests: usize,
}

/// A number from the environment variable `name`, or `default`.
fn setting<T: std::str::FromStr>(name: &str, default: T) -> Result<T, String> {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .map_err(|_| format!("{name}={text}: not a whole number")),
        Err(_) => Ok(default),
    }
}

/// Whether the run's size and seed are the defaults (the counts docs/conformance.md gives).
pub fn defaults() -> bool {
    ["APFKIT_DIFFERENTIAL_SEQUENCES", "APFKIT_DIFFERENTIAL_SEED"]
        .iter()
        .all(|name| std::env::var_os(name).is_none())
}

/// Defines the widgets on every server and waits until they are served.
async fn define_widgets(s: &mut Session) {
    s.send(Request::post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &sequence::widget_definition(),
    ))
    .await;
    s.wait_until(Request::get(&Sequence::widgets("default")), |code, _| {
        code == 200
    })
    .await;
}

/// Runs the seeded sequences, `APFKIT_DIFFERENTIAL_PARALLEL` of them at once (8 by
/// default); answers what they compared, or the smallest sequence found that differs with
/// where it differs (shrunk one candidate at a time, as proptest's runner shrinks).
pub fn run(servers: &Servers, runtime: &tokio::runtime::Handle) -> Result<Counted, String> {
    let count: usize = setting("APFKIT_DIFFERENTIAL_SEQUENCES", DEFAULT_SEQUENCES)?;
    let seed: u64 = setting("APFKIT_DIFFERENTIAL_SEED", DEFAULT_SEED)?;
    let parallel: usize = setting("APFKIT_DIFFERENTIAL_PARALLEL", 8)?.max(1);
    runtime.block_on(servers.compare("random_sequences_define_widgets", |s| {
        Box::pin(define_widgets(s))
    }))?;
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let strategy = sequence::operations(1..60);
    let numbered = AtomicUsize::new(0);
    // One sequence compared on the three servers: its requests to each, or the difference.
    let compare = |operations: Vec<sequence::Operation>| {
        let number = numbered.fetch_add(1, Ordering::Relaxed);
        let sequence = Sequence {
            namespace: format!("sequence-{seed}-{number}"),
            operations,
        };
        runtime
            .block_on(servers.compare_sequence(&sequence.namespace, &sequence))
            .map_err(|difference| format!("{sequence:?}{difference}"))
    };
    let mut requests = 0;
    let mut made = 0;
    while made < count {
        let batch = parallel.min(count - made);
        let mut trees = Vec::with_capacity(batch);
        for _ in 0..batch {
            trees.push(
                strategy
                    .new_tree(&mut runner)
                    .map_err(|why| why.to_string())?,
            );
        }
        made += batch;
        let outcomes: Vec<Result<usize, String>> = std::thread::scope(|scope| {
            let running: Vec<_> = trees
                .iter()
                .map(|tree| {
                    let operations = tree.current();
                    scope.spawn(|| compare(operations))
                })
                .collect();
            running
                .into_iter()
                .map(|thread| thread.join().unwrap_or_else(|_| Err("a panic".to_owned())))
                .collect()
        });
        for (tree, outcome) in trees.into_iter().zip(outcomes) {
            match outcome {
                Ok(sent) => requests += sent,
                Err(difference) => {
                    let smallest = shrink(tree, difference, &compare);
                    return Err(format!(
                        "seed {seed}: after {requests} requests to each server answered alike, \
                         the shortest sequence found that differs, {smallest}"
                    ));
                }
            }
        }
    }
    Ok(Counted {
        sequences: made,
        requests,
    })
}

/// How many candidates a difference is shrunk through at most.
const SHRINK_STEPS: usize = 400;

/// The smallest sequence `tree` shrinks to that still differs (proptest's simplify and
/// complicate), with where it differs.
fn shrink(
    mut tree: impl ValueTree<Value = Vec<sequence::Operation>>,
    difference: String,
    compare: &impl Fn(Vec<sequence::Operation>) -> Result<usize, String>,
) -> String {
    let mut smallest = difference;
    if !tree.simplify() {
        return smallest;
    }
    for _ in 0..SHRINK_STEPS {
        let still_differs = match compare(tree.current()) {
            Ok(_) => false,
            Err(difference) => {
                smallest = difference;
                true
            }
        };
        let moved = if still_differs {
            tree.simplify()
        } else {
            tree.complicate()
        };
        if !moved {
            break;
        }
    }
    smallest
}
