//! What every whole-server simulation shares: requests taken through the dispatcher on the
//! simulated clock (queues, wait deadlines, lingering seats, borrowing every 10 s) and the
//! figures of each priority level. Where the requests come from is the driver's: a
//! workload's streams ([`super::server`]) or an audit log's requests ([`super::replay`]).
//! The driver hears of each request's fate through an [`Observer`], at the moment it happens.

use std::time::Duration;

use rustc_hash::FxHashMap;

use crate::dispatch::{Decision, Dispatcher, Ticket};
use crate::queueset::{RejectReason, WorkEstimate};
use crate::sim::events::EventQueue;
use crate::sim::report::{LevelReport, SeatTime, Tally};

/// An event on the simulated clock: an arrival of the driver's (`A`), or the engine's own.
#[derive(Debug, Clone, Copy)]
pub(super) enum Event<A> {
    Arrive(A),
    Engine(Internal),
}

/// The engine's events.
#[derive(Debug, Clone, Copy)]
pub(super) enum Internal {
    ExecEnd(Ticket),
    Release(Ticket),
    Deadline(Ticket),
    Adjust,
}

/// A request in flight, with the driver's tag `T` (which stream or user it is).
#[derive(Debug, Clone, Copy)]
struct Flight<T> {
    tag: T,
    arrived: Duration,
    seats: u64,
    service: Duration,
}

/// A request the driver hands over: where it was classified and what it costs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Arrival<T> {
    pub(super) tag: T,
    pub(super) level: usize,
    pub(super) hash: u64,
    pub(super) estimate: WorkEstimate,
    pub(super) service: Duration,
}

/// What the driver hears of its requests.
pub(super) trait Observer<T, A> {
    /// The request started executing after waiting `wait`, holding `seats`.
    fn started(&mut self, now: Duration, tag: &T, wait: Duration, seats: u64);
    /// It finished executing (its seats are given back, or linger).
    fn executed(&mut self, now: Duration, tag: &T, seats: u64);
    /// It was rejected.
    fn rejected(&mut self, tag: &T, reason: RejectReason);
    /// Its client got the answer: after `executed`, or a 429 with a Retry-After of
    /// `retry_after` seconds after `rejected`. A closed-loop client sends again here.
    fn answered(
        &mut self,
        now: Duration,
        tag: &T,
        retry_after: i64,
        events: &mut EventQueue<Event<A>>,
    );
}

/// The dispatcher on the simulated clock, and the figures of its levels.
pub(super) struct Engine<T, A> {
    pub(super) dispatcher: Dispatcher,
    pub(super) events: EventQueue<Event<A>>,
    in_flight: FxHashMap<Ticket, Flight<T>>,
    /// Per level, in the configuration's order.
    pub(super) levels: Vec<Tally>,
    /// Per level, the time-integral of its current limit.
    limits: Vec<SeatTime>,
    /// Per level, its current limit as of the last adjustment.
    currents: Vec<i64>,
    /// Requests that arrived.
    pub(super) requests: u64,
    wait_limit: Duration,
    /// When arrivals end: borrowing goes on past it only while requests are in flight.
    arrivals_end: Duration,
}

impl<T: Copy, A> Engine<T, A> {
    /// An engine whose requests wait at most `wait_limit` in a queue, with level figures
    /// averaged over `[0, arrivals_end]`; the first borrowing adjustment is scheduled.
    pub(super) fn new(
        dispatcher: Dispatcher,
        wait_limit: Duration,
        arrivals_end: Duration,
    ) -> Self {
        let levels = (0..dispatcher.levels().len())
            .map(|_| Tally::new(arrivals_end))
            .collect();
        let currents: Vec<i64> = dispatcher.levels().iter().map(|l| l.current).collect();
        let limits = currents
            .iter()
            .map(|current| SeatTime::new(arrivals_end, *current as f64))
            .collect();
        let mut events = EventQueue::default();
        events.schedule(
            dispatcher.next_adjustment(),
            Event::Engine(Internal::Adjust),
        );
        Engine {
            dispatcher,
            events,
            in_flight: FxHashMap::default(),
            levels,
            limits,
            currents,
            requests: 0,
            wait_limit,
            arrivals_end,
        }
    }

    /// Sets when arrivals end (a replay learns it at the end of its log).
    pub(super) fn end_arrivals(&mut self, at: Duration) {
        self.arrivals_end = at;
        for tally in &mut self.levels {
            tally.seats.end_at(at);
        }
        for limit in &mut self.limits {
            limit.end_at(at);
        }
    }

    /// Every level's figures (taken: call once, when every event has run), with its current
    /// limit as `currents` gives it (when arrivals ended), else as it is now.
    pub(super) fn level_reports(&mut self, currents: Option<&[i64]>) -> Vec<LevelReport> {
        let tallies = std::mem::take(&mut self.levels);
        tallies
            .into_iter()
            .zip(&mut self.limits)
            .enumerate()
            .map(|(index, (tally, limit))| {
                let level = self.dispatcher.level(index);
                let figures = tally.finish();
                let average_limit = limit.average();
                LevelReport {
                    name: level.name.clone(),
                    nominal_cl: level.limits.nominal,
                    current_cl: currents
                        .and_then(|c| c.get(index).copied())
                        .unwrap_or(level.current),
                    average_limit,
                    utilization: (average_limit > 0.0)
                        .then(|| figures.average_seats / average_limit),
                    figures,
                }
            })
            .collect()
    }

    /// Requests waiting or executing, and seats still held.
    pub(super) fn left_over(&self) -> u64 {
        self.dispatcher
            .levels()
            .iter()
            .map(|l| {
                (l.queue_set.waiting() + l.queue_set.executing()) as u64
                    + l.queue_set.seats_in_use()
            })
            .sum()
    }

    /// A request arrives at `now`.
    pub(super) fn arrive(
        &mut self,
        now: Duration,
        arrival: Arrival<T>,
        observer: &mut impl Observer<T, A>,
    ) {
        self.requests += 1;
        let flight = Flight {
            tag: arrival.tag,
            arrived: now,
            seats: arrival.estimate.initial_seats,
            service: arrival.service,
        };
        let arrived = self
            .dispatcher
            .start(now, arrival.level, arrival.hash, arrival.estimate);
        self.started(now, &arrived.dispatched, observer);
        match arrived.decision {
            Decision::Execute(ticket) => {
                self.in_flight.insert(ticket, flight);
                self.started(now, &[ticket], observer);
            }
            Decision::Wait(ticket) => {
                self.in_flight.insert(ticket, flight);
                self.events.schedule(
                    now + self.wait_limit,
                    Event::Engine(Internal::Deadline(ticket)),
                );
            }
            Decision::Reject {
                level,
                reason,
                retry_after,
            } => {
                observer.rejected(&flight.tag, reason);
                self.levels[level].figures.rejected.count(reason);
                observer.answered(now, &flight.tag, retry_after, &mut self.events);
            }
        }
    }

    /// Runs one of the engine's events.
    pub(super) fn handle(
        &mut self,
        now: Duration,
        event: Internal,
        observer: &mut impl Observer<T, A>,
    ) {
        match event {
            Internal::ExecEnd(ticket) => {
                let flight = self.in_flight[&ticket];
                observer.executed(now, &flight.tag, flight.seats);
                self.levels[ticket.level]
                    .seats
                    .add(now, -(flight.seats as f64));
                let finished = self.dispatcher.finish(now, ticket);
                match finished.release_at {
                    Some(at) => self
                        .events
                        .schedule(at, Event::Engine(Internal::Release(ticket))),
                    None => {
                        self.in_flight.remove(&ticket);
                    }
                }
                observer.answered(now, &flight.tag, 0, &mut self.events);
                self.started(now, &finished.dispatched, observer);
            }
            Internal::Release(ticket) => {
                self.in_flight.remove(&ticket);
                let dispatched = self.dispatcher.release(now, ticket);
                self.started(now, &dispatched, observer);
            }
            Internal::Deadline(ticket) => {
                if self.dispatcher.cancel(now, ticket)
                    && let Some(flight) = self.in_flight.remove(&ticket)
                {
                    observer.rejected(&flight.tag, RejectReason::TimeOut);
                    self.levels[ticket.level]
                        .figures
                        .rejected
                        .count(RejectReason::TimeOut);
                    let retry_after = self.dispatcher.retry_after(ticket.level);
                    observer.answered(now, &flight.tag, retry_after, &mut self.events);
                }
            }
            Internal::Adjust => {
                let dispatched = self.dispatcher.tick(now);
                for ((level, current), limit) in self
                    .dispatcher
                    .levels()
                    .iter()
                    .zip(&mut self.currents)
                    .zip(&mut self.limits)
                {
                    if level.current != *current {
                        limit.add(now, (level.current - *current) as f64);
                        *current = level.current;
                    }
                }
                self.started(now, &dispatched, observer);
                if now < self.arrivals_end || !self.in_flight.is_empty() {
                    self.events.schedule(
                        self.dispatcher.next_adjustment(),
                        Event::Engine(Internal::Adjust),
                    );
                }
            }
        }
    }

    fn started(&mut self, now: Duration, tickets: &[Ticket], observer: &mut impl Observer<T, A>) {
        for &ticket in tickets {
            let Some(flight) = self.in_flight.get(&ticket).copied() else {
                continue;
            };
            let wait = now.saturating_sub(flight.arrived);
            observer.started(now, &flight.tag, wait, flight.seats);
            self.levels[ticket.level].start(now, wait, flight.seats);
            self.events.schedule(
                now + flight.service,
                Event::Engine(Internal::ExecEnd(ticket)),
            );
        }
    }
}
