//! What a whole-server simulation measured (a workload's, `super::server`, or a replay's,
//! `super::replay`), and its text form; the running figures both keep.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::dispatch::tab_table;
use crate::queueset::RejectReason;

/// Requests rejected, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejections {
    /// The chosen queue was full.
    pub queue_full: u64,
    /// A `Reject` level had no room.
    pub concurrency_limit: u64,
    /// The wait limit passed in a queue.
    pub time_out: u64,
}

impl Rejections {
    pub(crate) fn count(&mut self, reason: RejectReason) {
        match reason {
            RejectReason::QueueFull => self.queue_full += 1,
            RejectReason::ConcurrencyLimit => self.concurrency_limit += 1,
            RejectReason::TimeOut | RejectReason::Cancelled => self.time_out += 1,
        }
    }

    /// All rejections.
    pub fn total(&self) -> u64 {
        self.queue_full + self.concurrency_limit + self.time_out
    }
}

/// Figures of a stream or a level.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    /// Requests executed.
    pub executed: u64,
    /// Requests rejected.
    pub rejected: Rejections,
    /// Median wait of executed requests, in milliseconds.
    pub wait_p50_ms: f64,
    /// 90th percentile wait of executed requests, in milliseconds.
    pub wait_p90_ms: f64,
    /// 99th percentile wait of executed requests, in milliseconds.
    pub wait_p99_ms: f64,
    /// The longest wait of an executed request, in milliseconds.
    pub wait_max_ms: f64,
    /// Time-average of seats executing (initial phase) over the workload's duration.
    pub average_seats: f64,
}

/// One stream's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamReport {
    /// The stream's name.
    pub name: String,
    /// The FlowSchema its requests matched.
    pub flow_schema: String,
    /// Their priority level.
    pub priority_level: String,
    /// The seats each of its requests holds while executing (its `seats`, or the release's
    /// estimate when it gives `objects`).
    pub seats: u64,
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// One level's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LevelReport {
    /// The level's name.
    pub name: String,
    /// Its nominal concurrency limit.
    #[serde(rename = "nominalCL")]
    pub nominal_cl: i64,
    /// Its current limit when arrivals ended (what the timeline's last sample and the
    /// dump_priority_levels table show).
    #[serde(rename = "currentCL")]
    pub current_cl: i64,
    /// The time-average of its current limit over the arrival period.
    pub average_limit: f64,
    /// Seat-seconds used over seat-seconds its current limit offered, both integrated over
    /// the arrival period (not a gauge divided by a limit); none when it offered none (an
    /// exempt level).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization: Option<f64>,
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// What a simulation measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The seed of the random arrivals.
    pub seed: u64,
    /// Simulated time, drain included, in seconds.
    pub simulated_seconds: f64,
    /// Requests that arrived.
    pub requests: u64,
    /// Per level, in the configuration's order.
    pub priority_levels: Vec<LevelReport>,
    /// Per stream, in the workload's order.
    pub streams: Vec<StreamReport>,
    /// The dump_priority_levels table at the end of the arrivals.
    pub dump_priority_levels: String,
    /// Requests, executing requests and seats still held once every event has run (0 unless
    /// something leaked).
    pub left_over: u64,
    /// What happened over time, when it was recorded ([`super::server::simulate_recording`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
}

/// A simulation's course: every level sampled at even steps through the arrival period, and
/// every stream's waits.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    /// The sample times, in seconds.
    pub seconds: Vec<f64>,
    /// Per level, in the configuration's order.
    pub levels: Vec<LevelTimeline>,
    /// Per stream, in the workload's order.
    pub streams: Vec<StreamWaits>,
}

/// One level through time.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LevelTimeline {
    /// The level's name.
    pub name: String,
    /// Whether it is exempt (its limit follows its demand; it neither lends nor borrows).
    pub exempt: bool,
    /// Its nominal, lower and upper limits (seats).
    pub nominal: i64,
    /// Its lower limit.
    pub lower: i64,
    /// Its upper limit.
    pub upper: i64,
    /// Seats in use at each sample.
    pub seats_in_use: Vec<u64>,
    /// The current limit at each sample.
    pub current_limit: Vec<i64>,
    /// Requests waiting in its queues at each sample.
    pub waiting: Vec<u64>,
    /// Requests rejected so far at each sample.
    pub rejected: Vec<u64>,
}

/// How long one stream's requests waited.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamWaits {
    /// The stream's name.
    pub name: String,
    /// (upper bound in milliseconds, requests) per bucket, buckets doubling from 1 ms; the
    /// first holds the waits of at most 1 ms (those that did not wait included).
    pub buckets: Vec<(f64, u64)>,
}

impl Report {
    /// The report as text tables for a person.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "Simulated {:.1} s, {} requests, seed {}.\n\nPriority levels:\n",
            self.simulated_seconds, self.requests, self.seed
        );
        let header = |first: &str, extra: &[&str]| {
            let mut row: Vec<String> = vec![first.to_owned()];
            row.extend(extra.iter().map(|s| (*s).to_owned()));
            row.extend(
                [
                    "Executed",
                    "QueueFull",
                    "ConcurrencyLimit",
                    "TimedOut",
                    "WaitP50ms",
                    "WaitP99ms",
                    "AvgSeats",
                ]
                .iter()
                .map(|s| (*s).to_owned()),
            );
            row
        };
        let figures = |f: &Figures| {
            vec![
                f.executed.to_string(),
                f.rejected.queue_full.to_string(),
                f.rejected.concurrency_limit.to_string(),
                f.rejected.time_out.to_string(),
                format!("{:.1}", f.wait_p50_ms),
                format!("{:.1}", f.wait_p99_ms),
                format!("{:.2}", f.average_seats),
            ]
        };
        let mut rows = vec![header("PriorityLevelName", &["NominalCL", "CurrentCL"])];
        for level in &self.priority_levels {
            let mut row = vec![
                level.name.clone(),
                level.nominal_cl.to_string(),
                level.current_cl.to_string(),
            ];
            row.extend(figures(&level.figures));
            rows.push(row);
        }
        out.push_str(&tab_table(&rows));
        out.push_str("\nFlows (streams):\n");
        let mut rows = vec![header("Stream", &["FlowSchema", "PriorityLevel", "Seats"])];
        for stream in &self.streams {
            let mut row = vec![
                stream.name.clone(),
                stream.flow_schema.clone(),
                stream.priority_level.clone(),
                stream.seats.to_string(),
            ];
            row.extend(figures(&stream.figures));
            rows.push(row);
        }
        out.push_str(&tab_table(&rows));
        out.push_str("\ndump_priority_levels (end of arrivals):\n");
        out.push_str(&self.dump_priority_levels);
        out
    }
}

/// A stream's or a level's running figures.
pub(crate) struct Tally {
    /// The figures counted so far.
    pub(crate) figures: Figures,
    /// Waits in microseconds, to three significant digits, in memory that grows with the
    /// logarithm of the longest wait only (about 50 KiB for waits up to 10 s).
    pub(crate) waits: Histogram<u32>,
    pub(crate) seats: SeatTime,
}

/// Time-integral of seats executing, over `[0, end]` only.
pub(crate) struct SeatTime {
    end: Duration,
    last: Duration,
    seats: f64,
    integral: f64,
}

impl SeatTime {
    pub(crate) fn add(&mut self, now: Duration, delta: f64) {
        let now = now.min(self.end);
        self.integral += self.seats * now.saturating_sub(self.last).as_secs_f64();
        self.last = now;
        self.seats += delta;
    }

    /// Averages over `[0, end]` from now on (a replay learns its end last).
    pub(crate) fn end_at(&mut self, end: Duration) {
        self.end = end;
    }

    pub(crate) fn average(&mut self) -> f64 {
        self.add(self.end, 0.0);
        if self.end.is_zero() {
            0.0
        } else {
            self.integral / self.end.as_secs_f64()
        }
    }
}

impl SeatTime {
    /// Starts at `seats` at time 0, averaged over `[0, end]`.
    pub(crate) fn new(end: Duration, seats: f64) -> Self {
        SeatTime {
            end,
            last: Duration::ZERO,
            seats,
            integral: 0.0,
        }
    }
}

impl Tally {
    pub(crate) fn new(end: Duration) -> Self {
        Tally {
            figures: Figures::default(),
            waits: Histogram::new(3).expect("3 significant digits are supported"),
            seats: SeatTime::new(end, 0.0),
        }
    }

    /// A request started executing after waiting `wait`, holding `seats`.
    pub(crate) fn start(&mut self, now: Duration, wait: Duration, seats: u64) {
        self.figures.executed += 1;
        // The histogram grows to hold any wait the workload limits allow.
        let _ = self
            .waits
            .record(u64::try_from(wait.as_micros()).unwrap_or(u64::MAX));
        self.seats.add(now, seats as f64);
    }

    /// The waits counted so far, in buckets doubling from 1 ms.
    pub(crate) fn wait_buckets(&self) -> Vec<(f64, u64)> {
        let mut buckets = Vec::new();
        let mut upper_us = 1_000u64;
        let mut counted = 0;
        let total = self.waits.len();
        while counted < total {
            let count = self.waits.count_between(0, upper_us) - counted;
            counted += count;
            buckets.push((upper_us as f64 / 1e3, count));
            upper_us = upper_us.saturating_mul(2);
            if upper_us == u64::MAX {
                break;
            }
        }
        buckets
    }

    pub(crate) fn finish(mut self) -> Figures {
        let milliseconds = |quantile| self.waits.value_at_quantile(quantile) as f64 / 1e3;
        self.figures.wait_p50_ms = milliseconds(0.50);
        self.figures.wait_p90_ms = milliseconds(0.90);
        self.figures.wait_p99_ms = milliseconds(0.99);
        self.figures.wait_max_ms = self.waits.max() as f64 / 1e3;
        self.figures.average_seats = self.seats.average();
        self.figures
    }
}
