//! Upstream's "uniform scenario" (`uniformScenario` in `queueset/queueset_test.go`): clients whose threads make sequential calls
//! against one queue set, measured by the time-average of the seats each client has executing.
//!
//! ```
//! use std::time::Duration;
//! use apfkit_dispatcher::queueset::QueueSetConfig;
//! use apfkit_dispatcher::shuffle::Dealer;
//! use apfkit_dispatcher::sim::uniform::{UniformClient, UniformScenario};
//!
//! let second = Duration::from_secs(1);
//! let scenario = UniformScenario {
//!     config: QueueSetConfig::Queue { dealer: Dealer::new(9, 3).unwrap(), queue_length_limit: 8 },
//!     concurrency_limit: 1,
//!     clients: vec![UniformClient::new(1001001001, 1, 21, second, 0)],
//!     eval: 20 * second,
//! };
//! let results = scenario.run();
//! assert_eq!(results.windows[0].averages, [1.0]);
//! ```

use std::time::Duration;

use rustc_hash::FxHashMap;

use crate::borrowing::{Integrator, IntegratorResults};
use crate::queueset::{Arrival, QueueSet, QueueSetConfig, RejectReason, RequestId, WorkEstimate};
use crate::sim::events::EventQueue;

/// A client: `threads` threads, each making `calls` sequential calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniformClient {
    /// The flow hash of every call.
    pub hash: u64,
    /// Threads.
    pub threads: usize,
    /// Calls per thread.
    pub calls: usize,
    /// How long each call executes.
    pub exec: Duration,
    /// Nanoseconds between one call's end and the next call's arrival, measured from the
    /// scheduled end; negative makes the next call arrive before this one ends.
    pub think_ns: i64,
    /// Seats while executing.
    pub initial_seats: u64,
    /// Seats held after execution, for `pad`.
    pub final_seats: u64,
    /// How long the final seats linger.
    pub pad: Duration,
    /// Half the threads start at `eval / 2` and make half the calls.
    pub split: bool,
}

impl UniformClient {
    /// A client with one initial and one final seat and no padding, as upstream's
    /// `newUniformClient`.
    pub fn new(hash: u64, threads: usize, calls: usize, exec: Duration, think_ns: i64) -> Self {
        UniformClient {
            hash,
            threads,
            calls,
            exec,
            think_ns,
            initial_seats: 1,
            final_seats: 1,
            pad: Duration::ZERO,
            split: false,
        }
    }

    /// The same client with `seats` initial seats.
    pub fn width(self, seats: u64) -> Self {
        UniformClient {
            initial_seats: seats,
            ..self
        }
    }

    /// The same client holding `final_seats` for `pad` after each execution.
    pub fn pad(self, final_seats: u64, pad: Duration) -> Self {
        UniformClient {
            final_seats,
            pad,
            ..self
        }
    }

    /// The same client with half its threads starting half-way.
    pub fn split(self) -> Self {
        UniformClient {
            split: true,
            ..self
        }
    }

    fn estimate(&self) -> WorkEstimate {
        WorkEstimate {
            initial_seats: self.initial_seats,
            final_seats: self.final_seats,
            additional_latency: self.pad,
        }
    }

    /// Seats this client would keep executing with no competition, with `threads` threads:
    /// `threads × initial_seats × exec / (exec + think)`.
    pub fn demand(&self, threads: usize) -> f64 {
        let exec = self.exec.as_nanos() as f64;
        threads as f64 * self.initial_seats as f64 * exec / (exec + self.think_ns as f64)
    }
}

/// One queue set, a concurrency limit and clients, evaluated over `[0, eval]` (or its two
/// halves when a client is split).
#[derive(Debug, Clone)]
pub struct UniformScenario {
    /// The queue set's behaviour.
    pub config: QueueSetConfig,
    /// Its concurrency limit.
    pub concurrency_limit: u64,
    /// The clients.
    pub clients: Vec<UniformClient>,
    /// Length of the evaluation.
    pub eval: Duration,
}

/// What one evaluation window measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// Its end.
    pub end: Duration,
    /// Each client's time-average of executing seats.
    pub averages: Vec<f64>,
    /// Each client's max-min fair share of the concurrency limit (upstream `fairAlloc` of the
    /// demands).
    pub fair_shares: Vec<f64>,
    /// Seat demand as the queue set reported it.
    pub seat_demand: IntegratorResults,
    /// Seat demand recomputed independently from the calls.
    pub seat_demand_check: IntegratorResults,
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct UniformResults {
    /// One window, or two for a split scenario.
    pub windows: Vec<Window>,
    /// Calls executed, per client.
    pub executed: Vec<u64>,
    /// Calls rejected, per client, with their reasons.
    pub rejected: Vec<Vec<RejectReason>>,
    /// Epoch advances of the queue set's virtual time.
    pub epoch_advances: u64,
    /// Calls still waiting, executing or holding seats once every event has run.
    pub left_over: (usize, usize, u64),
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Call {
        client: usize,
        thread: usize,
        k: usize,
    },
    ExecEnd(RequestId),
    Release(RequestId),
    ReturnDemand(u64),
}

#[derive(Debug, Clone, Copy)]
struct Call {
    client: usize,
    thread: usize,
    k: usize,
}

struct Run<'a> {
    scenario: &'a UniformScenario,
    queue_set: QueueSet,
    events: EventQueue<Event>,
    calls: FxHashMap<RequestId, Call>,
    thread_calls: Vec<Vec<usize>>,
    exec_seats: Vec<Integrator>,
    seat_demand: Integrator,
    seat_demand_check: Integrator,
    executed: Vec<u64>,
    rejected: Vec<Vec<RejectReason>>,
}

impl UniformScenario {
    /// Runs the scenario to completion on a fake clock.
    pub fn run(&self) -> UniformResults {
        let zero = Duration::ZERO;
        let clients = self.clients.len();
        let mut run = Run {
            scenario: self,
            queue_set: QueueSet::new(self.config, self.concurrency_limit, zero),
            events: EventQueue::default(),
            calls: FxHashMap::default(),
            thread_calls: Vec::with_capacity(clients),
            exec_seats: vec![Integrator::new(zero, 0.0); clients],
            seat_demand: Integrator::new(zero, 0.0),
            seat_demand_check: Integrator::new(zero, 0.0),
            executed: vec![0; clients],
            rejected: vec![Vec::new(); clients],
        };
        for (i, client) in self.clients.iter().enumerate() {
            let mut calls = Vec::with_capacity(client.threads);
            for j in 0..client.threads {
                let mut delay = Duration::from_nanos(90 * j as u64 + 20 * i as u64);
                let mut n = client.calls;
                if client.split && j >= client.threads / 2 {
                    delay += self.eval / 2;
                    n /= 2;
                }
                calls.push(n);
                run.events.schedule(
                    delay,
                    Event::Call {
                        client: i,
                        thread: j,
                        k: 0,
                    },
                );
            }
            run.thread_calls.push(calls);
        }
        let split = self.clients.iter().any(|c| c.split);
        let mut windows = Vec::new();
        if split {
            windows.push(run.evaluate(self.eval / 2, false));
        }
        windows.push(run.evaluate(self.eval, true));
        run.run_until(None);
        UniformResults {
            windows,
            executed: run.executed,
            rejected: run.rejected,
            epoch_advances: run.queue_set.epoch_advances(),
            left_over: (
                run.queue_set.waiting(),
                run.queue_set.executing(),
                run.queue_set.seats_in_use(),
            ),
        }
    }
}

impl Run<'_> {
    fn evaluate(&mut self, end: Duration, last: bool) -> Window {
        self.run_until(Some(end));
        self.events.advance_to(end);
        let demands: Vec<f64> = self
            .scenario
            .clients
            .iter()
            .map(|c| {
                let threads = if c.split && !last {
                    c.threads / 2
                } else {
                    c.threads
                };
                c.demand(threads)
            })
            .collect();
        Window {
            end,
            averages: self
                .exec_seats
                .iter_mut()
                .map(|i| i.reset(end).average)
                .collect(),
            fair_shares: fair_alloc(&demands, self.scenario.concurrency_limit as f64),
            seat_demand: self.seat_demand.results(end),
            seat_demand_check: self.seat_demand_check.results(end),
        }
    }

    fn run_until(&mut self, until: Option<Duration>) {
        while let Some((now, event)) = self.events.next_until(until) {
            match event {
                Event::Call { client, thread, k } => self.call(now, client, thread, k),
                Event::ExecEnd(id) => {
                    let call = self.calls[&id];
                    let spec = self.scenario.clients[call.client];
                    self.exec_seats[call.client].add(now, -(spec.initial_seats as f64));
                    let (release_at, dispatched) = self.queue_set.finish(now, id);
                    self.note_demand(now);
                    self.events.schedule(
                        now + spec.pad,
                        Event::ReturnDemand(spec.estimate().max_seats()),
                    );
                    match release_at {
                        Some(at) => self.events.schedule(at, Event::Release(id)),
                        None => {
                            self.calls.remove(&id);
                        }
                    }
                    self.started(now, &dispatched);
                }
                Event::Release(id) => {
                    self.calls.remove(&id);
                    let dispatched = self.queue_set.release(now, id);
                    self.note_demand(now);
                    self.started(now, &dispatched);
                }
                Event::ReturnDemand(seats) => self.seat_demand_check.add(now, -(seats as f64)),
            }
        }
    }

    fn note_demand(&mut self, now: Duration) {
        self.seat_demand
            .set(now, self.queue_set.seat_demand() as f64);
    }

    fn call(&mut self, now: Duration, client: usize, thread: usize, k: usize) {
        let calls = self.thread_calls[client][thread];
        if k >= calls {
            return;
        }
        let spec = self.scenario.clients[client];
        let estimate = spec.estimate();
        self.seat_demand_check.add(now, estimate.max_seats() as f64);
        let arrival = self.queue_set.start(now, spec.hash, estimate);
        self.note_demand(now);
        match arrival {
            Arrival::Rejected(reason) => {
                self.rejected[client].push(reason);
                self.seat_demand_check
                    .add(now, -(estimate.max_seats() as f64));
            }
            Arrival::Admitted { id, dispatched } => {
                self.calls.insert(id, Call { client, thread, k });
                self.started(now, &dispatched);
            }
        }
    }

    fn started(&mut self, now: Duration, dispatched: &[RequestId]) {
        for id in dispatched {
            let call = self.calls[id];
            let spec = self.scenario.clients[call.client];
            self.executed[call.client] += 1;
            self.exec_seats[call.client].add(now, spec.initial_seats as f64);
            if call.k + 1 < self.thread_calls[call.client][call.thread] {
                let next = (now + spec.exec).as_nanos() as i128 + i128::from(spec.think_ns);
                self.events.schedule(
                    Duration::from_nanos(next.max(0) as u64),
                    Event::Call {
                        client: call.client,
                        thread: call.thread,
                        k: call.k + 1,
                    },
                );
            }
            self.events.schedule(now + spec.exec, Event::ExecEnd(*id));
        }
    }
}

/// The max-min fair allocation of `capacity` to `demands` (upstream `fairAlloc`): demands
/// are met in ascending order while the rest can still each get as much; the others share
/// what is left equally.
///
/// ```
/// use apfkit_dispatcher::sim::uniform::fair_alloc;
/// assert_eq!(fair_alloc(&[3.0, 7.0, 9.0, 1.0], 14.0), [3.0, 5.0, 5.0, 1.0]);
/// ```
pub fn fair_alloc(demands: &[f64], capacity: f64) -> Vec<f64> {
    let count = demands.len();
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by(|&a, &b| demands[a].total_cmp(&demands[b]));
    let mut alloc = vec![0.0; count];
    let (mut next, mut previous, mut capacity) = (0, 0.0, capacity);
    while next < count {
        let demand = demands[order[next]];
        if demand > 0.0 {
            let bite = (count - next) as f64 * (demand - previous);
            if bite > capacity {
                break;
            }
            previous = demand;
            alloc[order[next]] = demand;
            capacity -= bite;
        }
        next += 1;
    }
    for &index in &order[next..] {
        alloc[index] = previous + capacity / (count - next) as f64;
    }
    alloc
}
