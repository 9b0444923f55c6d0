//! What a run of readings says per priority level: gauges as their mean and peak, counters as
//! what they counted during the run, the wait p99 from the histogram's growth, and whether the
//! level lent, borrowed, was saturated or starved.

use std::collections::BTreeMap;

use serde::Serialize;

use super::sample::{LevelReading, Reading};

/// A gauge over the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Gauge {
    /// Its mean over the readings.
    pub mean: f64,
    /// Its highest reading.
    pub max: f64,
}

/// One priority level over the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LevelStatus {
    pub name: String,
    pub executing_seats: Gauge,
    pub current_limit: Gauge,
    pub nominal_limit: f64,
    pub lower_limit: f64,
    pub upper_limit: f64,
    pub waiting_requests: Gauge,
    pub active_queues: Gauge,
    /// Requests dispatched during the run.
    pub dispatched: f64,
    /// Requests rejected during the run, by reason.
    pub rejected: BTreeMap<String, f64>,
    /// The 99th percentile of the waits of requests that left their queue during the run, in
    /// seconds, as Prometheus' `histogram_quantile` estimates it; none when none left.
    pub wait_p99_seconds: Option<f64>,
    /// `lends` when its current limit was below its nominal one on average, `borrows` when
    /// above, else `neither`.
    pub lending: &'static str,
    /// Seats in use reached the current limit at some reading.
    pub saturated: bool,
    /// Requests waited or were rejected while the level had lent seats (its current limit
    /// below its nominal limit at some reading): others held seats it needed.
    pub starved: bool,
}

/// The levels over the readings, which are in time order; an empty run has none.
pub fn summarize(readings: &[Reading]) -> Vec<LevelStatus> {
    let (Some(first), Some(last)) = (readings.first(), readings.last()) else {
        return Vec::new();
    };
    last.iter()
        .map(|(name, end)| {
            let start = first.get(name).cloned().unwrap_or_default();
            let series: Vec<&LevelReading> = readings.iter().filter_map(|r| r.get(name)).collect();
            let gauge = |of: fn(&LevelReading) -> f64| gauge(series.iter().map(|r| of(r)));
            let current_limit = gauge(|r| r.current_limit);
            let waiting = gauge(|r| r.waiting_requests);
            let rejected: BTreeMap<String, f64> = end
                .rejected
                .iter()
                .map(|(reason, count)| {
                    let before = start.rejected.get(reason).copied().unwrap_or(0.0);
                    (reason.clone(), grown(before, *count))
                })
                .filter(|(_, count)| *count > 0.0)
                .collect();
            let lent = series.iter().any(|r| r.current_limit < r.nominal_limit);
            LevelStatus {
                name: name.clone(),
                executing_seats: gauge(|r| r.executing_seats),
                current_limit,
                nominal_limit: end.nominal_limit,
                lower_limit: end.lower_limit,
                upper_limit: end.upper_limit,
                waiting_requests: waiting,
                active_queues: gauge(|r| r.active_queues),
                dispatched: grown(start.dispatched, end.dispatched),
                wait_p99_seconds: quantile(0.99, &bucket_growth(&start, end)),
                lending: if current_limit.mean < end.nominal_limit {
                    "lends"
                } else if current_limit.mean > end.nominal_limit {
                    "borrows"
                } else {
                    "neither"
                },
                saturated: series
                    .iter()
                    .any(|r| r.current_limit > 0.0 && r.executing_seats >= r.current_limit),
                starved: lent && (waiting.max > 0.0 || !rejected.is_empty()),
                rejected,
            }
        })
        .collect()
}

fn gauge(values: impl Iterator<Item = f64>) -> Gauge {
    let (mut sum, mut count, mut max) = (0.0, 0.0, 0.0f64);
    for value in values {
        sum += value;
        count += 1.0;
        max = max.max(value);
    }
    Gauge {
        mean: if count > 0.0 { sum / count } else { 0.0 },
        max,
    }
}

/// What a counter counted between two readings; a counter that went down was reset (the
/// server restarted), and counted from zero.
fn grown(before: f64, after: f64) -> f64 {
    if after >= before {
        after - before
    } else {
        after
    }
}

/// Each bucket's growth during the run.
fn bucket_growth(start: &LevelReading, end: &LevelReading) -> Vec<(f64, f64)> {
    end.wait_buckets
        .iter()
        .map(|(bound, count)| {
            let before = start
                .wait_buckets
                .iter()
                .find(|(b, _)| b == bound)
                .map_or(0.0, |(_, c)| *c);
            (*bound, grown(before, *count))
        })
        .collect()
}

/// Prometheus' `histogram_quantile` over cumulative buckets sorted by bound, `+Inf` last:
/// linear within the bucket the rank falls in, from the bucket below's bound (0 for the
/// first); in the `+Inf` bucket, the highest finite bound.
fn quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut below = (0.0, 0.0);
    for &(bound, count) in buckets {
        if count >= rank {
            if bound.is_infinite() {
                return Some(below.0);
            }
            let within = count - below.1;
            let share = if within > 0.0 {
                (rank - below.1) / within
            } else {
                1.0
            };
            return Some(below.0 + (bound - below.0) * share);
        }
        below = (bound, count);
    }
    Some(below.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(current: f64, executing: f64, waiting: f64, dispatched: f64) -> LevelReading {
        LevelReading {
            executing_seats: executing,
            waiting_requests: waiting,
            nominal_limit: 10.0,
            lower_limit: 5.0,
            upper_limit: 20.0,
            current_limit: current,
            dispatched,
            ..LevelReading::default()
        }
    }

    fn reading(level: LevelReading) -> Reading {
        Reading::from([("workload-low".to_owned(), level)])
    }

    #[test]
    fn quantiles_are_prometheus_histogram_quantile() {
        let buckets = [(0.1, 50.0), (1.0, 100.0), (f64::INFINITY, 100.0)];
        assert_eq!(quantile(0.5, &buckets), Some(0.1));
        assert!((quantile(0.99, &buckets).unwrap() - 0.982).abs() < 1e-9);
        // Past the last finite bound: that bound.
        let beyond = [(0.1, 1.0), (f64::INFINITY, 100.0)];
        assert_eq!(quantile(0.99, &beyond), Some(0.1));
        assert_eq!(quantile(0.99, &[(1.0, 0.0), (f64::INFINITY, 0.0)]), None);
        assert_eq!(quantile(0.99, &[]), None);
    }

    #[test]
    fn counters_count_the_run_and_survive_a_restart() {
        assert_eq!(grown(10.0, 15.0), 5.0);
        assert_eq!(grown(10.0, 3.0), 3.0);
    }

    #[test]
    fn a_level_that_lends_while_its_requests_wait_is_starved() {
        let mut end = level(6.0, 6.0, 4.0, 110.0);
        end.rejected.insert("queue-full".into(), 3.0);
        end.wait_buckets = vec![(1.0, 20.0), (f64::INFINITY, 20.0)];
        let mut start = level(8.0, 2.0, 0.0, 100.0);
        start.wait_buckets = vec![(1.0, 10.0), (f64::INFINITY, 10.0)];
        let status = &summarize(&[reading(start), reading(end)])[0];
        assert_eq!(status.dispatched, 10.0);
        assert_eq!(status.rejected["queue-full"], 3.0);
        assert_eq!(status.lending, "lends");
        assert!(status.saturated, "6 seats in use of 6");
        assert!(status.starved);
        assert_eq!(
            status.executing_seats,
            Gauge {
                mean: 4.0,
                max: 6.0
            }
        );
        assert_eq!(
            status.current_limit,
            Gauge {
                mean: 7.0,
                max: 8.0
            }
        );
        assert!((status.wait_p99_seconds.unwrap() - 0.99).abs() < 1e-9);
    }

    #[test]
    fn a_borrowing_level_with_room_is_neither_saturated_nor_starved() {
        let status = &summarize(&[reading(level(15.0, 1.0, 0.0, 0.0))])[0];
        assert_eq!(status.lending, "borrows");
        assert!(!status.saturated && !status.starved);
        assert_eq!(status.wait_p99_seconds, None);
        assert!(summarize(&[]).is_empty());
    }
}
