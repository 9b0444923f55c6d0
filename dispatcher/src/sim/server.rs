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

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::Configuration;
use crate::dispatch::Dispatcher;
use crate::queueset::{RejectReason, WorkEstimate};
use crate::sim::engine::{Arrival, Engine, Event, Observer};
use crate::sim::events::EventQueue;
use crate::sim::report::Tally;
pub use crate::sim::report::{
    Figures, LevelReport, LevelTimeline, Rejections, Report, StreamReport, StreamWaits, Timeline,
};
use crate::sim::workload::{Limits, Workload, WorkloadError};

/// A request of a stream: which stream, and which closed-loop client sent it.
#[derive(Debug, Clone, Copy)]
struct Sent {
    stream: usize,
    client: Option<u32>,
}

/// Where a stream's users are classified to, and what their requests cost there.
#[derive(Debug, Clone)]
struct Flow {
    level: usize,
    hash: u64,
    flow_schema: String,
    estimate: WorkEstimate,
}

/// The streams' side of a run: their figures, and closed-loop clients sending again.
struct Streams<'w> {
    workload: &'w Workload,
    tallies: Vec<Tally>,
}

struct Simulation<'w> {
    engine: Engine<Sent, Sent>,
    streams: Streams<'w>,
    rng: ChaCha8Rng,
    flows: Vec<Vec<Flow>>,
    next_user: Vec<u32>,
    dump: Option<String>,
    /// Every level's current limit when arrivals ended (taken with the dump).
    currents_at_end: Option<Vec<i64>>,
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
                .engine
                .dispatcher
                .levels()
                .iter()
                .map(|level| LevelTimeline {
                    name: level.name.clone(),
                    exempt: level.exempt,
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
                estimate: stream_estimate(workload, stream, &request, dispatcher.level(level)),
            });
        }
        flows.push(users);
    }
    Ok(flows)
}

/// What one request of `stream` costs at `level`: its given seats, or, when it gives the
/// objects it reads, the estimate of the workload's release (kube-apiserver's work estimator,
/// `crate::estimate`) with the level's seat cap.
fn stream_estimate(
    workload: &Workload,
    stream: &crate::sim::workload::Stream,
    request: &crate::classify::Request<'_>,
    level: &crate::dispatch::Level,
) -> WorkEstimate {
    use crate::estimate::{Estimator, ObjectCount, Observed};
    match stream.objects {
        None => WorkEstimate {
            initial_seats: stream.seats,
            final_seats: stream.final_seats,
            additional_latency: stream.additional_latency,
        },
        Some(count) => {
            let estimator = Estimator {
                config: workload.release.estimator_config(),
            };
            let observed = Observed {
                objects: ObjectCount::Known {
                    count,
                    average_size: stream.object_bytes.unwrap_or(0),
                },
                watchers: 0,
            };
            estimator.estimate(request, &stream.query, &observed, level.max_seats)
        }
    }
}

impl<'w> Simulation<'w> {
    fn new(
        workload: &'w Workload,
        dispatcher: Dispatcher,
        flows: Vec<Vec<Flow>>,
        seed: u64,
    ) -> Self {
        let stream_count = workload.streams.len();
        Simulation {
            engine: Engine::new(dispatcher, workload.wait_limit, workload.duration),
            streams: Streams {
                workload,
                tallies: (0..stream_count)
                    .map(|_| Tally::new(workload.duration))
                    .collect(),
            },
            rng: ChaCha8Rng::seed_from_u64(seed),
            flows,
            next_user: vec![0; stream_count],
            dump: None,
            currents_at_end: None,
            timeline: None,
        }
    }

    /// Takes the samples due up to `now` (the state is the same since the last event).
    fn sample_until(&mut self, now: Duration, next: &mut Duration, step: Duration) {
        let Some(timeline) = self.timeline.as_mut() else {
            return;
        };
        while *next <= now && *next <= self.streams.workload.duration {
            timeline.seconds.push(next.as_secs_f64());
            for ((series, level), tally) in timeline
                .levels
                .iter_mut()
                .zip(self.engine.dispatcher.levels())
                .zip(&self.engine.levels)
            {
                series.seats_in_use.push(level.queue_set.seats_in_use());
                series.current_limit.push(level.current);
                series.waiting.push(level.queue_set.waiting() as u64);
                series.rejected.push(tally.figures.rejected.total());
            }
            *next += step;
        }
    }

    /// Schedules every stream's first arrivals (the engine scheduled the first borrowing
    /// adjustment).
    fn start(&mut self) {
        for (index, stream) in self.streams.workload.streams.iter().enumerate() {
            match stream.clients {
                Some(clients) => {
                    for client in 0..clients {
                        self.engine.events.schedule(
                            Duration::from_nanos(u64::from(client)),
                            Event::Arrive(Sent {
                                stream: index,
                                client: Some(client),
                            }),
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
        let end = self.streams.workload.duration;
        let step = (end / 100).max(Duration::from_millis(1));
        let mut checkpoint = Duration::ZERO;
        let sample_step = (end / SAMPLES).max(Duration::from_micros(1));
        let mut next_sample = Duration::ZERO;
        while let Some((now, event)) = self.engine.events.next_until(None) {
            self.sample_until(now, &mut next_sample, sample_step);
            if now >= checkpoint && now <= end {
                progress(now.as_secs_f64() / end.as_secs_f64().max(f64::MIN_POSITIVE));
                checkpoint = now + step;
            }
            if now > end && self.dump.is_none() {
                self.dump = Some(self.engine.dispatcher.dump_priority_levels());
                self.currents_at_end = Some(
                    self.engine
                        .dispatcher
                        .levels()
                        .iter()
                        .map(|l| l.current)
                        .collect(),
                );
            }
            match event {
                Event::Arrive(sent) => self.arrive(now, sent),
                Event::Engine(internal) => self.engine.handle(now, internal, &mut self.streams),
            }
            if self.engine.requests > request_cap {
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
        let workload = self.streams.workload;
        let finished = self.engine.events.now().max(workload.duration);
        let timeline = self.timeline.take().map(|mut timeline| {
            timeline.streams = workload
                .streams
                .iter()
                .zip(&self.streams.tallies)
                .map(|(stream, tally)| StreamWaits {
                    name: stream.name.clone(),
                    buckets: tally.wait_buckets(),
                })
                .collect();
            timeline
        });
        let dispatcher = &self.engine.dispatcher;
        let dump = self
            .dump
            .take()
            .unwrap_or_else(|| dispatcher.dump_priority_levels());
        let streams = workload
            .streams
            .iter()
            .zip(self.streams.tallies)
            .zip(&self.flows)
            .map(|((stream, tally), flows)| {
                let level = dispatcher.level(flows[0].level);
                StreamReport {
                    name: stream.name.clone(),
                    flow_schema: flows[0].flow_schema.clone(),
                    priority_level: level.name.clone(),
                    seats: flows[0].estimate.initial_seats,
                    figures: tally.finish(),
                }
            })
            .collect();
        let left_over = self.engine.left_over();
        let priority_levels = self.engine.level_reports(self.currents_at_end.as_deref());
        Report {
            left_over,
            seed,
            simulated_seconds: finished.as_secs_f64(),
            requests: self.engine.requests,
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
        let workload = self.streams.workload;
        let rate = workload.streams[stream].rate.unwrap_or(1.0);
        let uniform: f64 = self.rng.random();
        let gap =
            Duration::try_from_secs_f64(-(1.0 - uniform).ln() / rate).unwrap_or(Duration::MAX);
        if let Some(at) = now.checked_add(gap).filter(|at| *at <= workload.duration) {
            self.engine.events.schedule(
                at,
                Event::Arrive(Sent {
                    stream,
                    client: None,
                }),
            );
        }
    }

    fn arrive(&mut self, now: Duration, sent: Sent) {
        let workload = self.streams.workload;
        if now > workload.duration {
            return;
        }
        if sent.client.is_none() {
            self.schedule_arrival(now, sent.stream);
        }
        let spec = &workload.streams[sent.stream];
        let user = self.next_user[sent.stream];
        self.next_user[sent.stream] = (user + 1) % spec.users;
        let flow = &self.flows[sent.stream][user as usize];
        let arrival = Arrival {
            tag: sent,
            level: flow.level,
            hash: flow.hash,
            estimate: flow.estimate,
            service: spec.service,
        };
        self.engine.arrive(now, arrival, &mut self.streams);
    }
}

impl Observer<Sent, Sent> for Streams<'_> {
    fn started(&mut self, now: Duration, sent: &Sent, wait: Duration, seats: u64) {
        self.tallies[sent.stream].start(now, wait, seats);
    }

    fn executed(&mut self, now: Duration, sent: &Sent, seats: u64) {
        self.tallies[sent.stream].seats.add(now, -(seats as f64));
    }

    fn rejected(&mut self, sent: &Sent, reason: RejectReason) {
        self.tallies[sent.stream].figures.rejected.count(reason);
    }

    /// A closed-loop client got its answer: it thinks, then sends the next request. A 429
    /// answer carries a Retry-After of `retry_after` seconds, which clients such as client-go
    /// wait before they send again.
    fn answered(
        &mut self,
        now: Duration,
        sent: &Sent,
        retry_after: i64,
        events: &mut EventQueue<Event<Sent>>,
    ) {
        if sent.client.is_some() {
            let think = self.workload.streams[sent.stream].think;
            let back_off = Duration::from_secs(retry_after.max(0).unsigned_abs());
            events.schedule(now + think.max(back_off), Event::Arrive(*sent));
        }
    }
}
