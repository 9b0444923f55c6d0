//! Property tests over random operation sequences and random workloads: seats in use stay
//! within the limit except by the wide-request rule (quirk Q8), every request ends exactly
//! once, all counters return to zero when idle, and the simulator is deterministic.

use std::collections::BTreeMap;
use std::time::Duration;

use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::queueset::{Arrival, QueueSet, QueueSetConfig, RequestId, WorkEstimate};
use apfkit_dispatcher::shuffle::Dealer;
use apfkit_dispatcher::sim::server::simulate;
use apfkit_dispatcher::sim::workload::{Stream, Workload};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Start {
        hash: u64,
        initial: u64,
        final_seats: u64,
        linger_ms: u64,
    },
    Finish(usize),
    Release(usize),
    Cancel(usize),
    Limit(u64),
    Reconfigure(Option<(i32, i32)>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<u64>(), 1u64..6, 0u64..4, 0u64..3).prop_map(|(hash, initial, final_seats, linger_ms)| Op::Start { hash, initial, final_seats, linger_ms }),
        3 => any::<usize>().prop_map(Op::Finish),
        1 => any::<usize>().prop_map(Op::Release),
        1 => any::<usize>().prop_map(Op::Cancel),
        1 => (0u64..8).prop_map(Op::Limit),
        1 => proptest::option::of((1i32..12, 1i32..4)).prop_map(Op::Reconfigure),
    ]
}

fn config(shape: Option<(i32, i32)>, exempt: bool) -> QueueSetConfig {
    match shape {
        Some((queues, hand)) => QueueSetConfig::Queue {
            dealer: Dealer::new(queues, hand.min(queues)).unwrap(),
            queue_length_limit: 3,
        },
        None if exempt => QueueSetConfig::Exempt,
        None => QueueSetConfig::Reject,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Executing,
    Lingering,
}

/// A model of what every admitted request is doing.
struct Model {
    requests: BTreeMap<RequestId, (State, WorkEstimate, bool)>,
    limit: u64,
    /// Quirk Q3: seats the waiting total keeps after capped dispatches.
    q3_drift: u64,
    /// Whether the set is exempt now (dispatch is then never limited).
    exempt: bool,
}

impl Model {
    fn seats(&self) -> u64 {
        self.requests
            .values()
            .filter(|(s, _, _)| *s != State::Waiting)
            .map(|(_, e, _)| e.max_seats())
            .sum()
    }

    fn executing(&self) -> usize {
        self.requests
            .values()
            .filter(|(s, _, _)| *s == State::Executing)
            .count()
    }

    /// Applies dispatches in order, checking each against `canAccommodate` with Q8.
    fn dispatched(&mut self, ids: &[RequestId]) -> Result<(), TestCaseError> {
        for id in ids {
            let seats = self.requests[id].1.max_seats();
            let fits = self.seats() + seats <= self.limit;
            let wide_rule = seats > self.limit && self.executing() == 0;
            prop_assert!(
                self.exempt || fits || wide_rule,
                "dispatched {id} ({seats} seats) with {} in use, CL {}",
                self.seats(),
                self.limit
            );
            let limit = self.limit;
            let entry = self.requests.get_mut(id).unwrap();
            prop_assert_ne!(entry.0, State::Executing, "dispatched twice");
            entry.0 = State::Executing;
            // Spec 5.7 step 4: a queued request's final seats are capped at the limit.
            if entry.2 {
                let before = entry.1.max_seats();
                entry.1.final_seats = entry.1.final_seats.min(limit);
                self.q3_drift += before - entry.1.max_seats();
            }
        }
        Ok(())
    }

    fn pick(&self, state: State, index: usize) -> Option<RequestId> {
        let ids: Vec<_> = self
            .requests
            .iter()
            .filter(|(_, (s, _, _))| *s == state)
            .map(|(id, _)| *id)
            .collect();
        (!ids.is_empty()).then(|| ids[index % ids.len()])
    }
}

fn check_counters(set: &QueueSet, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(set.seats_in_use(), model.seats());
    prop_assert_eq!(set.executing(), model.executing());
    let waiting = model
        .requests
        .values()
        .filter(|(s, _, _)| *s == State::Waiting)
        .count();
    prop_assert_eq!(set.waiting(), waiting);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn queue_sets_keep_their_invariants(
        shape in proptest::option::of((1i32..12, 1i32..4)),
        exempt in any::<bool>(),
        limit in 0u64..8,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let mut now = Duration::ZERO;
        let mut set = QueueSet::new(config(shape, exempt), limit, now);
        let mut model = Model { requests: BTreeMap::new(), limit, q3_drift: 0, exempt: shape.is_none() && exempt };
        let mut ended = 0usize;
        let mut started = 0usize;
        for op in ops {
            now += Duration::from_micros(700);
            match op {
                Op::Start { hash, initial, final_seats, linger_ms } => {
                    let estimate = WorkEstimate { initial_seats: initial, final_seats, additional_latency: Duration::from_millis(linger_ms) };
                    started += 1;
                    let queued = matches!(set.config(), QueueSetConfig::Queue { .. });
                    match set.start(now, hash, estimate) {
                        Arrival::Rejected(_) => ended += 1,
                        Arrival::Admitted { id, dispatched } => {
                            prop_assert!(model.requests.insert(id, (State::Waiting, estimate, queued)).is_none());
                            model.dispatched(&dispatched)?;
                        }
                    }
                }
                Op::Finish(i) => {
                    if let Some(id) = model.pick(State::Executing, i) {
                        let (release_at, dispatched) = set.finish(now, id);
                        if release_at.is_some() {
                            model.requests.get_mut(&id).unwrap().0 = State::Lingering;
                        } else {
                            model.requests.remove(&id);
                            ended += 1;
                        }
                        model.dispatched(&dispatched)?;
                    }
                }
                Op::Release(i) => {
                    if let Some(id) = model.pick(State::Lingering, i) {
                        model.requests.remove(&id);
                        ended += 1;
                        let dispatched = set.release(now, id);
                        model.dispatched(&dispatched)?;
                    }
                }
                Op::Cancel(i) => {
                    if let Some(id) = model.pick(State::Waiting, i) {
                        prop_assert!(set.cancel(now, id));
                        prop_assert!(!set.cancel(now, id), "a request leaves its queue once");
                        model.requests.remove(&id);
                        ended += 1;
                    }
                    if let Some(id) = model.pick(State::Executing, i) {
                        prop_assert!(!set.cancel(now, id), "executing requests are not cancelled");
                    }
                }
                Op::Limit(new) => {
                    model.limit = new;
                    let dispatched = set.set_concurrency_limit(now, new);
                    model.dispatched(&dispatched)?;
                }
                Op::Reconfigure(shape) => {
                    model.exempt = shape.is_none() && exempt;
                    let dispatched = set.reconfigure(now, config(shape, exempt));
                    model.dispatched(&dispatched)?;
                }
            }
            check_counters(&set, &model)?;
        }
        // Drain: raise the limit, finish and release everything, cancel what still waits.
        now += Duration::from_secs(1);
        let dispatched = set.set_concurrency_limit(now, 1_000);
        model.limit = 1_000;
        model.dispatched(&dispatched)?;
        while let Some(id) = model.pick(State::Executing, 0).or_else(|| model.pick(State::Lingering, 0)) {
            now += Duration::from_millis(10);
            let dispatched = if model.requests[&id].0 == State::Executing {
                let (release_at, dispatched) = set.finish(now, id);
                if let Some(at) = release_at {
                    let mut more = set.release(at, id);
                    now = at;
                    more.extend(dispatched);
                    more
                } else {
                    dispatched
                }
            } else {
                set.release(now, id)
            };
            model.requests.remove(&id);
            ended += 1;
            model.dispatched(&dispatched)?;
        }
        while let Some(id) = model.pick(State::Waiting, 0) {
            prop_assert!(set.cancel(now, id));
            model.requests.remove(&id);
            ended += 1;
        }
        prop_assert_eq!(ended, started, "every request ends exactly once");
        prop_assert!(set.is_idle());
        // Every counter is back to zero, but for the waiting-seats drift of quirk Q3.
        prop_assert_eq!(set.seat_demand(), model.q3_drift);
        prop_assert!(set.queues().all(|q| q.waiting == 0 && q.executing == 0 && q.seats_in_use == 0 && q.waiting_seats == 0));
    }
}

fn stream() -> impl Strategy<Value = Stream> {
    (
        prop::sample::select(vec!["get", "list", "create", "watch"]),
        prop::sample::select(vec![
            "alice",
            "system:node:n1",
            "system:serviceaccount:kube-system:x",
            "system:kube-scheduler",
        ]),
        1u32..4,
        1u64..4,
        1u64..300,
        prop_oneof![
            (1.0f64..200.0).prop_map(|r| (Some(r), None)),
            (1u32..20).prop_map(|c| (None, Some(c)))
        ],
    )
        .prop_map(
            |(verb, user, users, seats, service_ms, (rate, clients))| Stream {
                name: format!("{user}-{verb}"),
                user: user.to_owned(),
                users,
                groups: vec!["system:authenticated".to_owned()],
                verb: verb.to_owned(),
                resource: "pods".to_owned(),
                subresource: String::new(),
                api_group: String::new(),
                namespace: "default".to_owned(),
                object_name: String::new(),
                path: String::new(),
                seats,
                final_seats: seats.saturating_sub(1),
                additional_latency: Duration::from_millis(seats),
                service: Duration::from_millis(service_ms),
                rate,
                clients,
                think: Duration::from_millis(20),
                objects: None,
                object_bytes: None,
                query: String::new(),
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_workloads_are_deterministic_and_end_every_request(
        streams in proptest::collection::vec(stream(), 1..5),
        server_cl in 4i32..200,
        seed in any::<u64>(),
    ) {
        let workload = Workload {
            duration: Duration::from_secs(5),
            wait_limit: Duration::from_secs(2),
            streams,
            release: Default::default(),
        };
        let run = || simulate(Configuration::kubernetes_default(server_cl).unwrap(), &workload, seed, |_| {}).unwrap();
        let report = run();
        prop_assert_eq!(&report, &run());
        let ended: u64 = report.streams.iter().map(|s| s.figures.executed + s.figures.rejected.total()).sum();
        prop_assert_eq!(ended, report.requests);
        prop_assert_eq!(report.left_over, 0);
    }
}
