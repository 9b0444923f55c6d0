//! Upstream's fairness scenarios (`queueset_test.go`), with upstream's parameters and margins, run on
//! the simulator's uniform harness.

use std::time::Duration;

use apfkit_dispatcher::queueset::{QueueSetConfig, RejectReason};
use apfkit_dispatcher::shuffle::Dealer;
use apfkit_dispatcher::sim::uniform::{
    UniformClient, UniformResults, UniformScenario, Window, fair_alloc,
};

const SECOND: Duration = Duration::from_secs(1);
const S: i64 = 1_000_000_000;

fn queuing(queues: i32, queue_length_limit: usize, hand: i32) -> QueueSetConfig {
    QueueSetConfig::Queue {
        dealer: Dealer::new(queues, hand).unwrap(),
        queue_length_limit,
    }
}

fn client(hash: u64, threads: usize, calls: usize, exec: Duration, think_ns: i64) -> UniformClient {
    UniformClient::new(hash, threads, calls, exec, think_ns)
}

/// Upstream's per-client check: every client's average is within `margin` (relative) of the
/// expected one, or (expected 0) within `margin` absolutely; the outcome must equal
/// `expect_fair` for every client.
fn assert_fairness(
    name: &str,
    window: &Window,
    expected: Option<&[f64]>,
    expect_fair: bool,
    margin: f64,
) {
    let expected = expected.unwrap_or(&window.fair_shares);
    for (i, (&average, &expected)) in window.averages.iter().zip(expected).enumerate() {
        let fair = if expected > 0.0 {
            ((average - expected) / expected).abs() <= margin
        } else {
            average.abs() <= margin
        };
        assert_eq!(
            fair, expect_fair,
            "{name}: client {i} averaged {average}, expected {expected} (margin {margin}, expect fair {expect_fair})"
        );
    }
}

/// The queue set's seat-demand statistics equal an independent recomputation (relative
/// error below 1e-10, as upstream's `float64close`).
fn assert_seat_demand_agrees(name: &str, window: &Window) {
    let close = |a: f64, b: f64| a == b || ((a - b) / b).abs() < 1e-10;
    let (subject, check) = (window.seat_demand, window.seat_demand_check);
    assert!(
        close(subject.duration, check.duration),
        "{name}: {subject:?} vs {check:?}"
    );
    assert!(
        close(subject.average, check.average),
        "{name}: {subject:?} vs {check:?}"
    );
    assert!(
        close(subject.deviation, check.deviation),
        "{name}: {subject:?} vs {check:?}"
    );
}

fn assert_all_served(name: &str, scenario: &UniformScenario, results: &UniformResults) {
    for (i, client) in scenario.clients.iter().enumerate() {
        assert!(
            results.rejected[i].is_empty(),
            "{name}: client {i} rejected {:?}",
            results.rejected[i]
        );
        let calls = if client.split {
            client.threads.div_ceil(2) * client.calls + client.threads / 2 * (client.calls / 2)
        } else {
            client.threads * client.calls
        };
        assert_eq!(results.executed[i], calls as u64, "{name}: client {i}");
    }
    assert_eq!(results.left_over, (0, 0, 0), "{name}: gauges back to zero");
}

/// Runs a scenario that must be fair within `margin` and serve every call.
fn expect_fair(
    name: &str,
    scenario: UniformScenario,
    expected: Option<&[f64]>,
    margin: f64,
) -> UniformResults {
    let results = scenario.run();
    let window = results.windows.last().unwrap();
    assert_fairness(name, window, expected, true, margin);
    assert_seat_demand_agrees(name, window);
    assert_all_served(name, &scenario, &results);
    results
}

#[test]
fn fair_alloc_matches_upstream() {
    assert_eq!(fair_alloc(&[0.0, 0.0], 42.0), [0.0, 0.0]);
    assert_eq!(fair_alloc(&[47.0, 0.0], 42.0), [42.0, 0.0]);
    assert_eq!(fair_alloc(&[1.0, 47.0], 42.0), [1.0, 41.0]);
    assert_eq!(
        fair_alloc(&[3.0, 7.0, 9.0, 1.0], 14.0),
        [3.0, 5.0, 5.0, 1.0]
    );
    assert_eq!(
        fair_alloc(&[1.0, 9.0, 7.0, 3.0], 21.0),
        [1.0, 9.0, 7.0, 3.0]
    );
}

#[test]
fn baseline_is_exact() {
    let scenario = UniformScenario {
        config: queuing(9, 8, 3),
        concurrency_limit: 1,
        clients: vec![client(1001001001, 1, 21, SECOND, 0)],
        eval: 20 * SECOND,
    };
    let results = expect_fair("TestBaseline", scenario, None, 0.0);
    assert_eq!(results.windows[0].averages, [1.0]);
}

#[test]
fn uniform_flows_hand_size_1() {
    let scenario = UniformScenario {
        config: queuing(9, 8, 1),
        concurrency_limit: 4,
        clients: vec![
            client(1001001001, 8, 20, SECOND, S - 1),
            client(2002002002, 8, 20, SECOND, S - 1),
        ],
        eval: 50 * SECOND,
    };
    expect_fair("TestUniformFlowsHandSize1", scenario, None, 0.01);
}

#[test]
fn uniform_flows_hand_size_3() {
    let scenario = UniformScenario {
        config: queuing(8, 16, 3),
        concurrency_limit: 4,
        clients: vec![
            client(400900100100, 8, 30, SECOND, S - 1),
            client(300900200200, 8, 30, SECOND, S - 1),
        ],
        eval: 60 * SECOND,
    };
    expect_fair("TestUniformFlowsHandSize3", scenario, None, 0.03);
}

#[test]
fn different_flows_expect_equal() {
    let scenario = UniformScenario {
        config: queuing(9, 8, 1),
        concurrency_limit: 4,
        clients: vec![
            client(1001001001, 8, 20, SECOND, S),
            client(2002002002, 7, 30, SECOND, S / 2),
        ],
        eval: 40 * SECOND,
    };
    let results = expect_fair("TestDifferentFlowsExpectEqual", scenario, None, 0.01);
    assert_eq!(results.windows[0].fair_shares, [2.0, 2.0]);
}

#[test]
fn different_flows_expect_unequal() {
    let scenario = UniformScenario {
        config: queuing(9, 6, 1),
        concurrency_limit: 3,
        clients: vec![
            client(1001001001, 4, 20, SECOND, S - 1),
            client(2002002002, 2, 20, SECOND, S - 1),
        ],
        eval: 20 * SECOND,
    };
    let results = expect_fair("TestDifferentFlowsExpectUnequal", scenario, None, 0.01);
    let shares = &results.windows[0].fair_shares;
    assert!(
        (shares[0] - 2.0).abs() < 1e-6 && (shares[1] - 1.0).abs() < 1e-6,
        "{shares:?}"
    );
}

#[test]
fn different_widths() {
    let scenario = UniformScenario {
        config: queuing(64, 13, 7),
        concurrency_limit: 6,
        clients: vec![
            client(10010010010010, 13, 10, SECOND, S - 1),
            client(20020020020020, 7, 10, SECOND, S - 1).width(2),
        ],
        eval: 20 * SECOND,
    };
    expect_fair("TestDifferentWidths", scenario, None, 0.155);
}

#[test]
fn too_wide() {
    let mut clients: Vec<UniformClient> = [
        40040040040040,
        50050050050050,
        60060060060060,
        70070070070070,
    ]
    .into_iter()
    .map(|hash| client(hash, 15, 21, SECOND, S - 1).width(2))
    .collect();
    // Seven seats against a limit of six: admitted only when nothing else executes.
    clients.push(client(90090090090090, 15, 21, SECOND, S - 1).width(7));
    let scenario = UniformScenario {
        config: queuing(64, 35, 7),
        concurrency_limit: 6,
        clients,
        eval: 400 * SECOND,
    };
    let results = expect_fair("TestTooWide", scenario, None, 0.35);
    for share in &results.windows[0].fair_shares {
        assert!((share - 1.2).abs() < 1e-6);
    }
}

fn windup() -> (UniformScenario, UniformResults) {
    let scenario = UniformScenario {
        config: queuing(9, 6, 1),
        concurrency_limit: 3,
        clients: vec![
            client(1001001001, 2, 40, SECOND, -1),
            client(2002002002, 2, 40, SECOND, -1).split(),
        ],
        eval: 40 * SECOND,
    };
    let results = scenario.run();
    (scenario, results)
}

#[test]
fn windup_both_halves() {
    let (scenario, results) = windup();
    assert_eq!(results.windows.len(), 2);
    // First half: client 1 runs one thread and can use only 1 seat; fair is (2, 1).
    assert_fairness(
        "TestWindup first half",
        &results.windows[0],
        None,
        true,
        0.01,
    );
    let shares = &results.windows[0].fair_shares;
    assert!(
        (shares[0] - 2.0).abs() < 1e-6 && (shares[1] - 1.0).abs() < 1e-6,
        "{shares:?}"
    );
    // Second half: the fair share is (1.5, 1.5); upstream bounds the windup's unfairness:
    // within 0.26 ("upper-bound") but not within 0.10 ("lower-bound").
    assert_fairness(
        "TestWindup upper bound",
        &results.windows[1],
        None,
        true,
        0.26,
    );
    assert_fairness(
        "TestWindup lower bound",
        &results.windows[1],
        None,
        false,
        0.10,
    );
    for window in &results.windows {
        assert_seat_demand_agrees("TestWindup", window);
    }
    assert_all_served("TestWindup", &scenario, &results);
}

#[test]
fn seat_seconds_rollover_advances_eight_epochs() {
    const QUARTER: Duration = Duration::from_secs(91 * 24 * 3600);
    let q = QUARTER.as_nanos() as i64;
    let scenario = UniformScenario {
        config: queuing(9, 8, 1),
        concurrency_limit: 2000,
        clients: vec![
            client(1001001001, 8, 20, QUARTER, q).width(500),
            client(2002002002, 7, 30, QUARTER, q / 2).width(500),
        ],
        eval: 40 * QUARTER,
    };
    let results = expect_fair("TestSeatSecondsRollover", scenario, None, 0.01);
    assert_eq!(results.epoch_advances, 8);
}

#[test]
fn different_flows_without_queuing_are_unfair_and_rejected() {
    let scenario = UniformScenario {
        config: QueueSetConfig::Reject,
        concurrency_limit: 4,
        clients: vec![
            client(1001001001, 6, 10, SECOND, 57_000_000),
            client(2002002002, 4, 15, SECOND, 750_000_000),
        ],
        eval: 13 * SECOND,
    };
    let results = scenario.run();
    assert_fairness(
        "TestDifferentFlowsWithoutQueuing",
        &results.windows[0],
        None,
        false,
        0.20,
    );
    assert_seat_demand_agrees("TestDifferentFlowsWithoutQueuing", &results.windows[0]);
    let rejected: Vec<&RejectReason> = results.rejected.iter().flatten().collect();
    assert!(!rejected.is_empty(), "some calls must be rejected");
    assert!(
        rejected
            .iter()
            .all(|r| **r == RejectReason::ConcurrencyLimit)
    );
    assert_eq!(results.left_over, (0, 0, 0));
}

#[test]
fn no_restraint_is_fair_only_without_competition() {
    // Upstream's no-restraint double admits everything: an exempt queue set does the same.
    for (concurrency_limit, margin, fair) in [(10, 0.001, true), (2, 0.25, false)] {
        let scenario = UniformScenario {
            config: QueueSetConfig::Exempt,
            concurrency_limit,
            clients: vec![
                client(1001001001, 5, 15, SECOND, S),
                client(2002002002, 2, 15, SECOND, S / 2),
            ],
            eval: 18 * SECOND,
        };
        let results = scenario.run();
        assert_fairness("TestNoRestraint", &results.windows[0], None, fair, margin);
        assert_all_served("TestNoRestraint", &scenario, &results);
    }
}

#[test]
fn exempt_runs_everything_at_once() {
    for concurrency_limit in [0, 2] {
        let scenario = UniformScenario {
            config: QueueSetConfig::Exempt,
            concurrency_limit,
            clients: vec![client(1001001001, 5, 20, SECOND, S).width(3)],
            eval: 40 * SECOND,
        };
        expect_fair("TestExampt", scenario, Some(&[7.5]), 1e-8);
    }
}

#[test]
fn separations_all_24() {
    let half = Duration::from_millis(500);
    let cases: [(i64, Duration); 4] =
        [(S, Duration::ZERO), (0, SECOND), (S, half), (S / 2, SECOND)];
    let mut count = 0;
    for (think, pad) in cases {
        for (final_seats, concurrency_limit) in [(1, 1), (1, 2), (2, 2)] {
            for clients in [1, 2] {
                let expected: Option<Vec<f64>> = match (
                    think,
                    pad == SECOND,
                    final_seats,
                    concurrency_limit,
                    clients,
                ) {
                    (_, true, 1, 1, 1) | (_, true, 2, 2, 1) => Some(vec![0.5]),
                    (_, true, 1, 1, 2) | (_, true, 2, 2, 2) => Some(vec![0.25, 0.25]),
                    (_, true, 1, 2, 2) => Some(vec![0.5, 0.5]),
                    (t, false, 1, 1, 2) | (t, false, 2, 2, 2) if t == S && pad == half => {
                        Some(vec![1.0 / 3.0, 1.0 / 3.0])
                    }
                    _ => None,
                };
                let scenario = UniformScenario {
                    config: queuing(9, 8, 3),
                    concurrency_limit,
                    clients: [1001001001, 2002002002][..clients]
                        .iter()
                        .map(|&hash| client(hash, 1, 25, SECOND, think).pad(final_seats, pad))
                        .collect(),
                    eval: 24 * SECOND,
                };
                let name = format!(
                    "TestSeparations think={think}ns pad={pad:?} finalSeats={final_seats} conc={concurrency_limit} clients={clients}"
                );
                expect_fair(&name, scenario, expected.as_deref(), 0.0);
                count += 1;
            }
        }
    }
    assert_eq!(count, 24);
}
