//! The mixed simulation: a workload's request streams against a whole configuration, with
//! classification, every level's queue set, wait deadlines and borrowing every 10 s.
//!
//! ```
//! use apfkit_dispatcher::config::Configuration;
//! use apfkit_dispatcher::sim::mix::simulate;
//! use apfkit_dispatcher::sim::workload::Workload;
//!
//! let config = Configuration::kubernetes_default(600).unwrap();
//! let report = simulate(config, &Workload::embedded_default(), 1, |_| {}).unwrap();
//! let noisy = report.streams.iter().find(|s| s.name == "noisy-user").unwrap();
//! assert_eq!(noisy.priority_level, "global-default");
//! let kubelets = report.streams.iter().find(|s| s.name == "kubelets").unwrap();
//! assert_eq!(kubelets.priority_level, "node-high");
//! assert_eq!(kubelets.rejected.total(), 0, "the noisy user does not hurt other levels");
//! ```

use std::time::Duration;

use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::config::Configuration;
use crate::dispatch::{Decision, Dispatcher, Ticket, tab_table};
use crate::queueset::{RejectReason, WorkEstimate};
use crate::sim::events::EventQueue;
use crate::sim::workload::{Limits, Workload, WorkloadError};

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
    fn count(&mut self, reason: RejectReason) {
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
    /// 99th percentile wait of executed requests, in milliseconds.
    pub wait_p99_ms: f64,
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
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
}

impl std::ops::Deref for StreamReport {
    type Target = Figures;
    fn deref(&self) -> &Figures {
        &self.figures
    }
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
    /// Its current limit at the end of the run.
    #[serde(rename = "currentCL")]
    pub current_cl: i64,
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
        let mut rows = vec![header("Stream", &["FlowSchema", "PriorityLevel"])];
        for stream in &self.streams {
            let mut row = vec![
                stream.name.clone(),
                stream.flow_schema.clone(),
                stream.priority_level.clone(),
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

#[derive(Debug, Clone, Copy)]
enum Event {
    Arrive { stream: usize, client: Option<u32> },
    ExecEnd(Ticket),
    Release(Ticket),
    Deadline(Ticket),
    Adjust,
}

/// A request in flight.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    stream: usize,
    client: Option<u32>,
    arrived: Duration,
}

/// Where a stream's users are classified to.
#[derive(Debug, Clone)]
struct Flow {
    level: usize,
    hash: u64,
    flow_schema: String,
}

struct Tally {
    figures: Figures,
    /// Waits in microseconds, to three significant digits, in memory that grows with the
    /// logarithm of the longest wait only (about 50 KiB for waits up to 10 s).
    waits: Histogram<u32>,
    seats: SeatTime,
}

/// Time-integral of seats executing, over `[0, end]` only.
struct SeatTime {
    end: Duration,
    last: Duration,
    seats: f64,
    integral: f64,
}

impl SeatTime {
    fn add(&mut self, now: Duration, delta: f64) {
        let now = now.min(self.end);
        self.integral += self.seats * now.saturating_sub(self.last).as_secs_f64();
        self.last = now;
        self.seats += delta;
    }

    fn average(&mut self) -> f64 {
        self.add(self.end, 0.0);
        if self.end.is_zero() {
            0.0
        } else {
            self.integral / self.end.as_secs_f64()
        }
    }
}

impl Tally {
    fn new(end: Duration) -> Self {
        Tally {
            figures: Figures::default(),
            waits: Histogram::new(3).expect("3 significant digits are supported"),
            seats: SeatTime {
                end,
                last: Duration::ZERO,
                seats: 0.0,
                integral: 0.0,
            },
        }
    }

    fn finish(mut self) -> Figures {
        let milliseconds = |quantile| self.waits.value_at_quantile(quantile) as f64 / 1e3;
        self.figures.wait_p50_ms = milliseconds(0.50);
        self.figures.wait_p99_ms = milliseconds(0.99);
        self.figures.average_seats = self.seats.average();
        self.figures
    }
}

struct Simulation<'w> {
    workload: &'w Workload,
    dispatcher: Dispatcher,
    events: EventQueue<Event>,
    rng: ChaCha8Rng,
    flows: Vec<Vec<Flow>>,
    next_user: Vec<u32>,
    in_flight: FxHashMap<Ticket, InFlight>,
    streams: Vec<Tally>,
    levels: Vec<Tally>,
    requests: u64,
    dump: Option<String>,
}

/// Runs `workload` against `config` with arrivals drawn from `seed`, calling `progress` with
/// the fraction of the arrival period simulated so far. The same inputs give the same report.
/// The workload must stay within the default [`Limits`].
pub fn simulate(
    config: Configuration,
    workload: &Workload,
    seed: u64,
    progress: impl FnMut(f64),
) -> Result<Report, WorkloadError> {
    simulate_within(config, workload, &Limits::default(), seed, progress)
}

/// [`simulate`] with other [`Limits`].
pub fn simulate_within(
    config: Configuration,
    workload: &Workload,
    limits: &Limits,
    seed: u64,
    mut progress: impl FnMut(f64),
) -> Result<Report, WorkloadError> {
    workload.check_within(limits)?;
    // Open-loop arrivals are random: stop a run that strays far past its expected count.
    let request_cap = limits.max_requests.saturating_mul(2).saturating_add(1000);
    let dispatcher = Dispatcher::new(config, Duration::ZERO);
    let mut flows = Vec::with_capacity(workload.streams.len());
    for (index, stream) in workload.streams.iter().enumerate() {
        let groups: Vec<&str> = stream.groups.iter().map(String::as_str).collect();
        let mut users = Vec::with_capacity(stream.users as usize);
        for u in 0..stream.users {
            let user = if stream.users > 1 {
                format!("{}-{u}", stream.user)
            } else {
                stream.user.clone()
            };
            let request = stream.request(&user, &groups);
            let classification = dispatcher.classifier().classify(&request).ok_or_else(|| {
                WorkloadError::new(
                    format!("streams[{index}]"),
                    "the configuration has no catch-all FlowSchema to classify it",
                )
            })?;
            let level = dispatcher
                .level_index(classification.priority_level)
                .ok_or_else(|| {
                    WorkloadError::new(
                        format!("streams[{index}]"),
                        format!(
                            "priority level {} is missing",
                            classification.priority_level
                        ),
                    )
                })?;
            users.push(Flow {
                level,
                hash: classification.hash,
                flow_schema: classification.flow_schema.to_owned(),
            });
        }
        flows.push(users);
    }
    let stream_count = workload.streams.len();
    let level_count = dispatcher.levels().len();
    let mut sim = Simulation {
        workload,
        dispatcher,
        events: EventQueue::default(),
        rng: ChaCha8Rng::seed_from_u64(seed),
        flows,
        next_user: vec![0; stream_count],
        in_flight: FxHashMap::default(),
        streams: (0..stream_count)
            .map(|_| Tally::new(workload.duration))
            .collect(),
        levels: (0..level_count)
            .map(|_| Tally::new(workload.duration))
            .collect(),
        requests: 0,
        dump: None,
    };
    sim.events
        .schedule(sim.dispatcher.next_adjustment(), Event::Adjust);
    for (index, stream) in workload.streams.iter().enumerate() {
        match stream.clients {
            Some(clients) => {
                for client in 0..clients {
                    sim.events.schedule(
                        Duration::from_nanos(u64::from(client)),
                        Event::Arrive {
                            stream: index,
                            client: Some(client),
                        },
                    );
                }
            }
            None => sim.schedule_arrival(Duration::ZERO, index),
        }
    }
    let end = workload.duration;
    let step = (end / 100).max(Duration::from_millis(1));
    let mut checkpoint = Duration::ZERO;
    while let Some((now, event)) = sim.events.next_until(None) {
        if now >= checkpoint && now <= end {
            progress(now.as_secs_f64() / end.as_secs_f64().max(f64::MIN_POSITIVE));
            checkpoint = now + step;
        }
        if now > end && sim.dump.is_none() {
            sim.dump = Some(sim.dispatcher.dump_priority_levels());
        }
        sim.handle(now, event);
        if sim.requests > request_cap {
            return Err(WorkloadError::new(
                "streams",
                format!(
                    "the run passed {request_cap} requests, far more than expected; the \
                     workload is too large for the limit of {} requests",
                    limits.max_requests
                ),
            ));
        }
    }
    progress(1.0);
    let finished = sim.events.now().max(end);
    let dump = sim
        .dump
        .take()
        .unwrap_or_else(|| sim.dispatcher.dump_priority_levels());
    let streams = workload
        .streams
        .iter()
        .zip(sim.streams)
        .zip(&sim.flows)
        .map(|((stream, tally), flows)| {
            let level = sim.dispatcher.level(flows[0].level);
            StreamReport {
                name: stream.name.clone(),
                flow_schema: flows[0].flow_schema.clone(),
                priority_level: level.name.clone(),
                figures: tally.finish(),
            }
        })
        .collect();
    let priority_levels = sim
        .levels
        .into_iter()
        .enumerate()
        .map(|(index, tally)| {
            let level = sim.dispatcher.level(index);
            LevelReport {
                name: level.name.clone(),
                nominal_cl: level.limits.nominal,
                current_cl: level.current,
                figures: tally.finish(),
            }
        })
        .collect();
    let left_over = sim
        .dispatcher
        .levels()
        .iter()
        .map(|l| {
            (l.queue_set.waiting() + l.queue_set.executing()) as u64 + l.queue_set.seats_in_use()
        })
        .sum();
    Ok(Report {
        left_over,
        seed,
        simulated_seconds: finished.as_secs_f64(),
        requests: sim.requests,
        priority_levels,
        streams,
        dump_priority_levels: dump,
    })
}

impl Simulation<'_> {
    /// Schedules the next open-loop arrival of `stream` after an exponential gap from `now`;
    /// none if it falls after the arrival period.
    fn schedule_arrival(&mut self, now: Duration, stream: usize) {
        let rate = self.workload.streams[stream].rate.unwrap_or(1.0);
        let uniform: f64 = self.rng.random();
        let gap =
            Duration::try_from_secs_f64(-(1.0 - uniform).ln() / rate).unwrap_or(Duration::MAX);
        if let Some(at) = now
            .checked_add(gap)
            .filter(|at| *at <= self.workload.duration)
        {
            self.events.schedule(
                at,
                Event::Arrive {
                    stream,
                    client: None,
                },
            );
        }
    }

    fn handle(&mut self, now: Duration, event: Event) {
        match event {
            Event::Arrive { stream, client } => self.arrive(now, stream, client),
            Event::ExecEnd(ticket) => {
                let flight = self.in_flight[&ticket];
                let seats = self.workload.streams[flight.stream].seats as f64;
                self.streams[flight.stream].seats.add(now, -seats);
                self.levels[ticket.level].seats.add(now, -seats);
                let finished = self.dispatcher.finish(now, ticket);
                match finished.release_at {
                    Some(at) => self.events.schedule(at, Event::Release(ticket)),
                    None => {
                        self.in_flight.remove(&ticket);
                    }
                }
                self.answered(now, flight, 0);
                self.started(now, &finished.dispatched);
            }
            Event::Release(ticket) => {
                self.in_flight.remove(&ticket);
                let dispatched = self.dispatcher.release(now, ticket);
                self.started(now, &dispatched);
            }
            Event::Deadline(ticket) => {
                if self.dispatcher.cancel(now, ticket)
                    && let Some(flight) = self.in_flight.remove(&ticket)
                {
                    self.streams[flight.stream]
                        .figures
                        .rejected
                        .count(RejectReason::TimeOut);
                    self.levels[ticket.level]
                        .figures
                        .rejected
                        .count(RejectReason::TimeOut);
                    let retry_after = self.dispatcher.retry_after(ticket.level);
                    self.answered(now, flight, retry_after);
                }
            }
            Event::Adjust => {
                let dispatched = self.dispatcher.tick(now);
                self.started(now, &dispatched);
                if now < self.workload.duration || !self.in_flight.is_empty() {
                    self.events
                        .schedule(self.dispatcher.next_adjustment(), Event::Adjust);
                }
            }
        }
    }

    fn arrive(&mut self, now: Duration, stream: usize, client: Option<u32>) {
        if now > self.workload.duration {
            return;
        }
        if client.is_none() {
            self.schedule_arrival(now, stream);
        }
        let spec = &self.workload.streams[stream];
        let user = self.next_user[stream];
        self.next_user[stream] = (user + 1) % spec.users;
        let flow = &self.flows[stream][user as usize];
        let (level, hash) = (flow.level, flow.hash);
        let estimate = WorkEstimate {
            initial_seats: spec.seats,
            final_seats: spec.final_seats,
            additional_latency: spec.additional_latency,
        };
        self.requests += 1;
        let flight = InFlight {
            stream,
            client,
            arrived: now,
        };
        let arrived = self.dispatcher.start(now, level, hash, estimate);
        self.started(now, &arrived.dispatched);
        match arrived.decision {
            Decision::Execute(ticket) => {
                self.in_flight.insert(ticket, flight);
                self.started(now, &[ticket]);
            }
            Decision::Wait(ticket) => {
                self.in_flight.insert(ticket, flight);
                self.events
                    .schedule(now + self.workload.wait_limit, Event::Deadline(ticket));
            }
            Decision::Reject {
                level,
                reason,
                retry_after,
            } => {
                self.streams[stream].figures.rejected.count(reason);
                self.levels[level].figures.rejected.count(reason);
                self.answered(now, flight, retry_after);
            }
        }
    }

    /// A closed-loop client got its answer: it thinks, then sends the next request. A 429
    /// answer carries a Retry-After of `retry_after` seconds, which clients such as client-go
    /// wait before they send again.
    fn answered(&mut self, now: Duration, flight: InFlight, retry_after: i64) {
        if let Some(client) = flight.client {
            let think = self.workload.streams[flight.stream].think;
            let back_off = Duration::from_secs(retry_after.max(0).unsigned_abs());
            self.events.schedule(
                now + think.max(back_off),
                Event::Arrive {
                    stream: flight.stream,
                    client: Some(client),
                },
            );
        }
    }

    fn started(&mut self, now: Duration, tickets: &[Ticket]) {
        for &ticket in tickets {
            let Some(flight) = self.in_flight.get(&ticket).copied() else {
                continue;
            };
            let spec = &self.workload.streams[flight.stream];
            let wait =
                u64::try_from(now.saturating_sub(flight.arrived).as_micros()).unwrap_or(u64::MAX);
            let seats = spec.seats as f64;
            for tally in [
                &mut self.streams[flight.stream],
                &mut self.levels[ticket.level],
            ] {
                tally.figures.executed += 1;
                // The histogram grows to hold any wait the workload limits allow.
                let _ = tally.waits.record(wait);
                tally.seats.add(now, seats);
            }
            self.events
                .schedule(now + spec.service, Event::ExecEnd(ticket));
        }
    }
}
