//! A timing histogram (component-base's `TimingHistogram`): how long a variable spends in
//! each bucket, counted in nanoseconds, as kube-apiserver keeps its `*_seats` and
//! `*_utilization` ratio metrics. Sans IO: the caller says what time it is.

use std::time::Duration;

/// The time a variable spent in each bucket up to its last change.
#[derive(Debug, Clone)]
pub struct TimingHistogram {
    upper_bounds: &'static [f64],
    /// Nanoseconds spent at or below each bound (not cumulative), then above the last one.
    nanos: Vec<u128>,
    /// Σ value × nanoseconds.
    sum: f64,
    value: f64,
    since: Duration,
}

/// What a scrape reads of a [`TimingHistogram`].
#[derive(Debug, Clone, PartialEq)]
pub struct TimingSnapshot {
    /// The bucket bounds with the nanoseconds spent at or below each (cumulative).
    pub buckets: Vec<(f64, u64)>,
    /// All nanoseconds counted.
    pub count: u64,
    /// Σ value × nanoseconds.
    pub sum: f64,
}

impl TimingHistogram {
    /// A histogram over `upper_bounds` (increasing) of a variable worth `value` since `now`.
    pub fn new(upper_bounds: &'static [f64], value: f64, now: Duration) -> Self {
        TimingHistogram {
            upper_bounds,
            nanos: vec![0; upper_bounds.len() + 1],
            sum: 0.0,
            value,
            since: now,
        }
    }

    /// The variable's value from `now` on. Time before the last change is never counted
    /// twice, and a clock that goes back counts nothing.
    pub fn set(&mut self, now: Duration, value: f64) {
        self.settle(now);
        self.value = value;
    }

    /// The variable's current value.
    pub fn value(&self) -> f64 {
        self.value
    }

    fn settle(&mut self, now: Duration) {
        let elapsed = now.saturating_sub(self.since).as_nanos();
        self.since = self.since.max(now);
        if elapsed == 0 || self.value.is_nan() {
            return;
        }
        let bucket = self
            .upper_bounds
            .partition_point(|bound| *bound < self.value);
        self.nanos[bucket] += elapsed;
        self.sum += self.value * elapsed as f64;
    }

    /// The histogram as of `now`, the time since the last change counted at the current
    /// value.
    pub fn snapshot(&self, now: Duration) -> TimingSnapshot {
        let mut settled = self.clone();
        settled.settle(now);
        let mut cumulative = 0u128;
        let buckets = self
            .upper_bounds
            .iter()
            .zip(&settled.nanos)
            .map(|(bound, nanos)| {
                cumulative += nanos;
                (*bound, saturating(cumulative))
            })
            .collect();
        let count = saturating(settled.nanos.iter().sum());
        TimingSnapshot {
            buckets,
            count,
            sum: settled.sum,
        }
    }
}

fn saturating(nanos: u128) -> u64 {
    u64::try_from(nanos).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: &[f64] = &[0.5, 1.0, 2.0];

    #[test]
    fn time_is_counted_in_the_bucket_of_the_value_it_was_spent_at() {
        let second = Duration::from_secs(1);
        let mut histogram = TimingHistogram::new(BOUNDS, 0.25, Duration::ZERO);
        histogram.set(second, 1.0);
        histogram.set(3 * second, 5.0);
        let snapshot = histogram.snapshot(4 * second);
        let nanos = 1_000_000_000u64;
        assert_eq!(
            snapshot.buckets,
            vec![(0.5, nanos), (1.0, 3 * nanos), (2.0, 3 * nanos)]
        );
        assert_eq!(
            snapshot.count,
            4 * nanos,
            "the +Inf bucket holds the last second"
        );
        assert_eq!(snapshot.sum, 0.25 * 1e9 + 2e9 + 5e9);
        // A snapshot does not change the histogram; a clock going back counts nothing.
        assert_eq!(histogram.snapshot(4 * second), snapshot);
        histogram.set(2 * second, 0.0);
        assert_eq!(histogram.snapshot(3 * second).count, 3 * nanos);
    }

    #[test]
    fn a_value_on_a_bound_counts_in_that_bucket_and_nan_counts_nowhere() {
        let mut histogram = TimingHistogram::new(BOUNDS, 1.0, Duration::ZERO);
        histogram.set(Duration::from_nanos(10), f64::NAN);
        let snapshot = histogram.snapshot(Duration::from_nanos(30));
        assert_eq!(snapshot.buckets, vec![(0.5, 0), (1.0, 10), (2.0, 10)]);
        assert_eq!(snapshot.count, 10);
    }
}
