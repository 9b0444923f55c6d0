//! The whole-server simulation: a workload's request streams against a whole configuration,
//! as one API server's filter sees them: classification, every level's queue set, wait
//! deadlines and borrowing every 10 s. (The [`uniform`](super::uniform) harness, by contrast,
//! drives one queue set with upstream's uniform clients.)
//!
//! ```
//! use apfkit_dispatcher::config::Configuration;
//! use apfkit_dispatcher::sim::server::simulate;
//! use apfkit_dispatcher::sim::workload::Workload;
//!
//! let config = Configuration::kubernetes_default(600).unwrap();
//! let report = simulate(config, &Workload::embedded_default(), 1, |_| {}).unwrap();
//! let noisy = report.streams.iter().find(|s| s.name == "noisy-user").unwrap();
//! assert_eq!(noisy.priority_level, "global-default");
//! let kubelets = report.streams.iter().find(|s| s.name == "kubelets").unwrap();
//! assert_eq!(kubelets.priority_level, "node-high");
//! assert_eq!(kubelets.figures.rejected.total(), 0, "the noisy user does not hurt other levels");
//! ```

mod report;

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;

use crate::config::Configuration;
use crate::dispatch::{Decision, Dispatcher, Ticket};
use crate::queueset::{RejectReason, WorkEstimate};
use crate::sim::events::EventQueue;
use crate::sim::workload::{Limits, Workload, WorkloadError};
use report::Tally;
pub use report::{
    Figures, LevelReport, LevelTimeline, Rejections, Report, StreamReport, StreamWaits, Timeline,
};

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
    /// The samples taken so far, when recording.
    timeline: Option<Timeline>,
}

/// How many samples a recorded run takes through its arrival period.
const SAMPLES: u32 = 300;

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
    progress: impl FnMut(f64),
) -> Result<Report, WorkloadError> {
    run(config, workload, limits, seed, progress, false)
}

/// [`simulate_within`], also recording what happened over time ([`Report::timeline`]): every
/// level's seats in use, current limit, waiting and rejected requests at 300 even steps
/// through the arrival period, and every stream's waits. Sampling reads the state between
/// events and changes nothing: the rest of the report is the same as without it.
pub fn simulate_recording(
    config: Configuration,
    workload: &Workload,
    limits: &Limits,
    seed: u64,
    progress: impl FnMut(f64),
) -> Result<Report, WorkloadError> {
    run(config, workload, limits, seed, progress, true)
}

fn run(
    config: Configuration,
    workload: &Workload,
    limits: &Limits,
    seed: u64,
    progress: impl FnMut(f64),
    record: bool,
) -> Result<Report, WorkloadError> {
    workload.check_within(limits)?;
    let dispatcher = Dispatcher::new(config, Duration::ZERO);
    let flows = classify_streams(&dispatcher, workload)?;
    let mut sim = Simulation::new(workload, dispatcher, flows, seed);
    if record {
        sim.timeline = Some(Timeline {
            seconds: Vec::new(),
            levels: sim
                .dispatcher
                .levels()
                .iter()
                .map(|level| LevelTimeline {
                    name: level.name.clone(),
                    nominal: level.limits.nominal,
                    lower: level.limits.min,
                    upper: level.limits.max,
                    seats_in_use: Vec::new(),
                    current_limit: Vec::new(),
                    waiting: Vec::new(),
                    rejected: Vec::new(),
                })
                .collect(),
            streams: Vec::new(),
        });
    }
    sim.start();
    sim.run(limits, progress)?;
    Ok(sim.report(seed))
}

/// Where each user of each stream goes: level and flow hash, by the dispatcher's classifier.
fn classify_streams(
    dispatcher: &Dispatcher,
    workload: &Workload,
) -> Result<Vec<Vec<Flow>>, WorkloadError> {
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
    Ok(flows)
}

impl<'w> Simulation<'w> {
    fn new(
        workload: &'w Workload,
        dispatcher: Dispatcher,
        flows: Vec<Vec<Flow>>,
        seed: u64,
    ) -> Self {
        let stream_count = workload.streams.len();
        let level_count = dispatcher.levels().len();
        Simulation {
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
            timeline: None,
        }
    }

    /// Takes the samples due up to `now` (the state is the same since the last event).
    fn sample_until(&mut self, now: Duration, next: &mut Duration, step: Duration) {
        let Some(timeline) = self.timeline.as_mut() else {
            return;
        };
        while *next <= now && *next <= self.workload.duration {
            timeline.seconds.push(next.as_secs_f64());
            for ((series, level), tally) in timeline
                .levels
                .iter_mut()
                .zip(self.dispatcher.levels())
                .zip(&self.levels)
            {
                series.seats_in_use.push(level.queue_set.seats_in_use());
                series.current_limit.push(level.current);
                series.waiting.push(level.queue_set.waiting() as u64);
                series.rejected.push(tally.figures.rejected.total());
            }
            *next += step;
        }
    }

    /// Schedules the first borrowing adjustment and every stream's first arrivals.
    fn start(&mut self) {
        self.events
            .schedule(self.dispatcher.next_adjustment(), Event::Adjust);
        for (index, stream) in self.workload.streams.iter().enumerate() {
            match stream.clients {
                Some(clients) => {
                    for client in 0..clients {
                        self.events.schedule(
                            Duration::from_nanos(u64::from(client)),
                            Event::Arrive {
                                stream: index,
                                client: Some(client),
                            },
                        );
                    }
                }
                None => self.schedule_arrival(Duration::ZERO, index),
            }
        }
    }

    /// Runs every event, reporting progress through the arrival period; takes the
    /// dump_priority_levels table when the arrivals end.
    fn run(&mut self, limits: &Limits, mut progress: impl FnMut(f64)) -> Result<(), WorkloadError> {
        // Open-loop arrivals are random: stop a run that strays far past its expected count.
        let request_cap = limits.max_requests.saturating_mul(2).saturating_add(1000);
        let end = self.workload.duration;
        let step = (end / 100).max(Duration::from_millis(1));
        let mut checkpoint = Duration::ZERO;
        let sample_step = (end / SAMPLES).max(Duration::from_micros(1));
        let mut next_sample = Duration::ZERO;
        while let Some((now, event)) = self.events.next_until(None) {
            self.sample_until(now, &mut next_sample, sample_step);
            if now >= checkpoint && now <= end {
                progress(now.as_secs_f64() / end.as_secs_f64().max(f64::MIN_POSITIVE));
                checkpoint = now + step;
            }
            if now > end && self.dump.is_none() {
                self.dump = Some(self.dispatcher.dump_priority_levels());
            }
            self.handle(now, event);
            if self.requests > request_cap {
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
        self.sample_until(end, &mut next_sample, sample_step);
        progress(1.0);
        Ok(())
    }

    /// The figures of every stream and level once every event has run.
    fn report(mut self, seed: u64) -> Report {
        let finished = self.events.now().max(self.workload.duration);
        let timeline = self.timeline.take().map(|mut timeline| {
            timeline.streams = self
                .workload
                .streams
                .iter()
                .zip(&self.streams)
                .map(|(stream, tally)| StreamWaits {
                    name: stream.name.clone(),
                    buckets: tally.wait_buckets(),
                })
                .collect();
            timeline
        });
        let dump = self
            .dump
            .take()
            .unwrap_or_else(|| self.dispatcher.dump_priority_levels());
        let streams = self
            .workload
            .streams
            .iter()
            .zip(self.streams)
            .zip(&self.flows)
            .map(|((stream, tally), flows)| {
                let level = self.dispatcher.level(flows[0].level);
                StreamReport {
                    name: stream.name.clone(),
                    flow_schema: flows[0].flow_schema.clone(),
                    priority_level: level.name.clone(),
                    figures: tally.finish(),
                }
            })
            .collect();
        let priority_levels = self
            .levels
            .into_iter()
            .enumerate()
            .map(|(index, tally)| {
                let level = self.dispatcher.level(index);
                LevelReport {
                    name: level.name.clone(),
                    nominal_cl: level.limits.nominal,
                    current_cl: level.current,
                    figures: tally.finish(),
                }
            })
            .collect();
        let left_over = self
            .dispatcher
            .levels()
            .iter()
            .map(|l| {
                (l.queue_set.waiting() + l.queue_set.executing()) as u64
                    + l.queue_set.seats_in_use()
            })
            .sum();
        Report {
            left_over,
            seed,
            simulated_seconds: finished.as_secs_f64(),
            requests: self.requests,
            priority_levels,
            streams,
            dump_priority_levels: dump,
            timeline,
        }
    }
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
