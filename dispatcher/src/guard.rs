//! An async adapter for real servers (feature `tokio`): guard a handler with
//! [`Guard::acquire`], which waits in the request's queue and returns a [`Permit`] or a
//! [`Rejection`] carrying Retry-After. Dropping the permit finishes the request; dropping a
//! pending `acquire` takes the request out of its queue.
//!
//! ```
//! use apfkit_dispatcher::classify::Request;
//! use apfkit_dispatcher::config::Configuration;
//! use apfkit_dispatcher::guard::Guard;
//! use apfkit_dispatcher::queueset::WorkEstimate;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let guard = Guard::new(Configuration::kubernetes_default(600).unwrap());
//! let request = Request { user: "alice", groups: &["system:authenticated"], verb: "get",
//!     is_resource_request: true, resource: "pods", namespace: "default", ..Request::default() };
//! match guard.acquire(&request, WorkEstimate::ONE_SEAT).await {
//!     Ok(permit) => {
//!         assert_eq!(permit.priority_level(), "global-default");
//!         // ... run the handler; dropping the permit finishes the request.
//!     }
//!     Err(rejection) => panic!("429, Retry-After: {}", rejection.retry_after),
//! }
//! # }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, SystemTime};

use rustc_hash::FxHashMap;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::classify::Request;
use crate::config::Configuration;
pub use crate::dispatch::Matched;
use crate::dispatch::{ADJUSTMENT_PERIOD, Decision, Dispatcher, Ticket, tab_table};
use crate::dump::{go_duration, rfc3339_nano};
use crate::metrics::{ApfMetrics, FlowMetrics};
use crate::queueset::{QueueSetConfig, RejectReason, WorkEstimate};

/// kube-apiserver's default wait limit: a quarter of the 60 s request timeout.
pub const DEFAULT_WAIT_LIMIT: Duration = Duration::from_secs(15);

/// Shares one [`Dispatcher`] between tasks.
#[derive(Debug, Clone)]
pub struct Guard {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    epoch: Instant,
    /// The wall-clock time of `epoch`, for the times the dumps print.
    wall_epoch: SystemTime,
    wait_limit: Duration,
    state: Mutex<State>,
    metrics: OnceLock<ApfMetrics>,
    /// The periodic adjustment's task, ended with the last reference (not at its next tick).
    adjusting: OnceLock<tokio::task::AbortHandle>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(adjusting) = self.adjusting.get() {
            adjusting.abort();
        }
    }
}

#[derive(Debug)]
struct State {
    dispatcher: Dispatcher,
    waiters: HashMap<Ticket, oneshot::Sender<()>>,
    /// What `dump_requests` shows of each admitted request beyond the dispatcher's state.
    notes: FxHashMap<Ticket, Note>,
    /// Each schema's metric children, by its position in the configuration (made when
    /// first needed, forgotten on a new configuration).
    flows: Vec<Option<Arc<FlowMetrics>>>,
}

/// A request's flow and who asked for what, for `dump_requests`: the distinguisher and the
/// user, verb, path, namespace, name, group/version, resource and subresource, kept in one
/// string.
#[derive(Debug)]
struct Note {
    matched: Arc<Matched>,
    text: String,
    ends: [u32; 9],
}

impl Note {
    fn of(request: &Request<'_>, matched: Arc<Matched>, distinguisher: &str) -> Self {
        let mut text = String::with_capacity(
            distinguisher.len()
                + request.user.len()
                + request.verb.len()
                + request.path.len()
                + request.namespace.len()
                + request.name.len()
                + request.api_group.len()
                + request.api_version.len()
                + request.resource.len()
                + request.subresource.len()
                + 1,
        );
        let mut ends = [0u32; 9];
        let before_group_version = [
            distinguisher,
            request.user,
            request.verb,
            request.path,
            request.namespace,
            request.name,
        ];
        for (index, field) in before_group_version.iter().enumerate() {
            text.push_str(field);
            ends[index] = text.len() as u32;
        }
        // Go's `schema.GroupVersion.String`: the version alone for the core group.
        if !request.api_group.is_empty() {
            text.push_str(request.api_group);
            text.push('/');
        }
        text.push_str(request.api_version);
        ends[6] = text.len() as u32;
        text.push_str(request.resource);
        ends[7] = text.len() as u32;
        text.push_str(request.subresource);
        ends[8] = text.len() as u32;
        Note {
            matched,
            text,
            ends,
        }
    }

    /// Field `index`: 0 the distinguisher, then user, verb, path, namespace, name,
    /// group/version, resource and subresource.
    fn field(&self, index: usize) -> &str {
        let start = index
            .checked_sub(1)
            .and_then(|i| self.ends.get(i))
            .map_or(0, |e| *e as usize);
        let end = self.ends.get(index).map_or(start, |e| *e as usize);
        self.text.get(start..end).unwrap_or_default()
    }
}

/// A request allowed to execute. Dropping it finishes the request.
pub struct Permit {
    shared: Arc<Shared>,
    ticket: Ticket,
    matched: Arc<Matched>,
    metrics: Option<Arc<FlowMetrics>>,
    /// When it started executing, its initial seats and whether it is a watch (for the
    /// metrics).
    started: Instant,
    seats: u64,
    watch: bool,
}

/// A request rejected with HTTP 429.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rejected by priority level {priority_level} ({}), retry after {retry_after} s", reason.as_str())]
pub struct Rejection {
    /// The FlowSchema it matched.
    pub flow_schema: String,
    /// Its priority level.
    pub priority_level: String,
    /// What it matched, with the objects' uids.
    pub matched: Matched,
    /// Why.
    pub reason: RejectReason,
    /// The Retry-After header value, in seconds.
    pub retry_after: i64,
}

impl Shared {
    /// A dispatcher for `config`, with its periodic borrowing adjustment (which ends when
    /// the last reference to it goes).
    fn start(config: Configuration, wait_limit: Duration) -> Arc<Shared> {
        let shared = Arc::new(Shared {
            epoch: Instant::now(),
            wall_epoch: SystemTime::now(),
            wait_limit,
            state: Mutex::new(State {
                dispatcher: Dispatcher::new(config, Duration::ZERO),
                waiters: HashMap::new(),
                notes: FxHashMap::default(),
                flows: Vec::new(),
            }),
            metrics: OnceLock::new(),
            adjusting: OnceLock::new(),
        });
        let adjusting = tokio::spawn(adjust_periodically(Arc::downgrade(&shared)));
        let _ = shared.adjusting.set(adjusting.abort_handle());
        shared
    }

    fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.epoch)
    }

    /// Takes a waiting request out of its queue, with its waiter and note; false when it
    /// was dispatched meanwhile (it then executes, or finishes at once).
    fn leave_queue(&self, ticket: Ticket) -> bool {
        let mut state = self.lock();
        let now = self.now();
        state.waiters.remove(&ticket);
        let cancelled = state.dispatcher.cancel(now, ticket);
        if cancelled {
            state.notes.remove(&ticket);
        }
        cancelled
    }

    fn metrics(&self) -> Option<&ApfMetrics> {
        self.metrics.get()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl State {
    /// Wakes the waiters of dispatched requests.
    fn wake(&mut self, dispatched: &[Ticket]) {
        for ticket in dispatched {
            if let Some(waiter) = self.waiters.remove(ticket) {
                // A waiter that is gone finishes its request when its wait is dropped.
                let _ = waiter.send(());
            }
        }
    }
}

impl Guard {
    /// A guard for `config` with the default wait limit. Must be called inside a tokio
    /// runtime: it starts the periodic borrowing adjustment, which stops when the last clone
    /// of the guard is dropped.
    pub fn new(config: Configuration) -> Self {
        Self::with_wait_limit(config, DEFAULT_WAIT_LIMIT)
    }

    /// Like [`Guard::new`] with another wait limit.
    pub fn with_wait_limit(config: Configuration, wait_limit: Duration) -> Self {
        Guard {
            shared: Shared::start(config, wait_limit),
        }
    }

    /// Puts `config` in place (the configuration controller's step when stored objects
    /// change), as [`Dispatcher::reconfigure`] does: levels named again keep their queues
    /// and requests, removed levels drain, new requests are classified by `config`.
    pub fn reconfigure(&self, config: Configuration) {
        let mut state = self.shared.lock();
        let now = self.shared.now();
        let dispatched = state.dispatcher.reconfigure(now, config);
        state.wake(&dispatched);
        state.flows.clear();
        if let Some(metrics) = self.shared.metrics() {
            metrics.note_levels(&state.dispatcher);
        }
    }

    /// kube-apiserver's `/debug/api_priority_and_fairness/dump_requests`: a row per request
    /// waiting or executing (levels by name; in each, every queue's waiting requests in order
    /// and then its executing ones, then those of no queue), with who asked for what when
    /// `details` is set (upstream's `includeRequestDetails`).
    pub fn dump_requests(&self, details: bool) -> String {
        let mut header: Vec<String> = [
            "PriorityLevelName",
            "FlowSchemaName",
            "QueueIndex",
            "RequestIndexInQueue",
            "FlowDistingsher",
            "ArriveTime",
            "InitialSeats",
            "FinalSeats",
            "AdditionalLatency",
            "StartTime",
        ]
        .map(str::to_owned)
        .to_vec();
        if details {
            header.extend(
                [
                    "UserName",
                    "Verb",
                    "APIPath",
                    "Namespace",
                    "Name",
                    "APIVersion",
                    "Resource",
                    "SubResource",
                ]
                .map(str::to_owned),
            );
        }
        let wall = |at: Duration| self.shared.wall_epoch + at;
        let index = |i: Option<usize>| i.map_or("-1".to_owned(), |i| i.to_string());
        let mut rows = vec![header];
        let state = self.shared.lock();
        for (slot, level) in state.dispatcher.configured_levels() {
            for request in level.queue_set.request_summaries() {
                let note = state.notes.get(&Ticket {
                    level: slot,
                    id: request.id,
                });
                let mut row = vec![
                    level.name.clone(),
                    note.map(|n| n.matched.flow_schema.clone())
                        .unwrap_or_default(),
                    index(request.queue),
                    index(request.position),
                    note.map(|n| n.field(0).to_owned()).unwrap_or_default(),
                    rfc3339_nano(Some(wall(request.arrived))),
                    request.estimate.initial_seats.to_string(),
                    request.estimate.final_seats.to_string(),
                    go_duration(request.estimate.additional_latency),
                    rfc3339_nano(request.started.map(wall)),
                ];
                if details {
                    row.extend(
                        (1..=8).map(|i| note.map(|n| n.field(i).to_owned()).unwrap_or_default()),
                    );
                }
                rows.push(row);
            }
        }
        tab_table(&rows)
    }

    /// Keeps kube-apiserver's APF metrics in `metrics` from now on (once; later calls are
    /// ignored): per flow, requests and seats waiting and executing, dispatches, rejections
    /// by reason, wait and execution times, queue lengths and estimated seats; per level,
    /// its limits and `demand_seats`.
    pub fn record_metrics(&self, metrics: ApfMetrics) {
        let weak = Arc::downgrade(&self.shared);
        metrics.read_demand_with(Box::new(move || {
            let Some(shared) = weak.upgrade() else {
                return Vec::new();
            };
            let now = shared.now();
            let state = shared.lock();
            state
                .dispatcher
                .configured_levels()
                .map(|(_, level)| (level.name.clone(), level.demand_seats(now)))
                .collect()
        }));
        if self.shared.metrics.set(metrics).is_ok()
            && let Some(metrics) = self.shared.metrics()
        {
            metrics.note_levels(&self.shared.lock().dispatcher);
        }
    }

    /// Reads the dispatcher's state (levels, queue sets, the dump table).
    pub fn inspect<R>(&self, read: impl FnOnce(&Dispatcher) -> R) -> R {
        read(&self.shared.lock().dispatcher)
    }

    /// Classifies `request` and waits until it may execute, it is rejected, or its wait
    /// limit passes. Cancel-safe: dropping the future takes the request out of its queue.
    pub async fn acquire(
        &self,
        request: &Request<'_>,
        estimate: WorkEstimate,
    ) -> Result<Permit, Rejection> {
        self.acquire_with(request, |_| estimate).await
    }

    /// Like [`Guard::acquire`], with the work estimate made once the request's priority
    /// level is known, from that level's seat cap ([`crate::dispatch::Level::max_seats`];
    /// 0 for exempt and `Reject` levels), as kube-apiserver calls its work estimator.
    pub async fn acquire_with(
        &self,
        request: &Request<'_>,
        estimate: impl FnOnce(u64) -> WorkEstimate,
    ) -> Result<Permit, Rejection> {
        let shared = &self.shared;
        let watch = request.verb == "watch";
        let (admitted, matched, metrics, estimate) = {
            let mut state = shared.lock();
            let now = shared.now();
            let Some((schema, hash, note)) =
                state.dispatcher.classifier().classify(request).map(|c| {
                    let matched = state
                        .dispatcher
                        .matched(c.schema_index)
                        .cloned()
                        .unwrap_or_default();
                    (
                        c.schema_index,
                        c.hash,
                        Note::of(request, matched, c.distinguisher),
                    )
                })
            else {
                return Err(Rejection::new(
                    Matched::default(),
                    RejectReason::ConcurrencyLimit,
                    1,
                ));
            };
            let matched = note.matched.clone();
            let Some(level) = state.dispatcher.level_index(&matched.priority_level) else {
                return Err(Rejection::new(
                    (*matched).clone(),
                    RejectReason::ConcurrencyLimit,
                    1,
                ));
            };
            let estimate = estimate(state.dispatcher.level(level).max_seats);
            let metrics = state.flow_metrics(shared, schema, &matched);
            let arrived = state.dispatcher.start(now, level, hash, estimate);
            state.wake(&arrived.dispatched);
            let admitted = match arrived.decision {
                Decision::Execute(ticket) => {
                    state.notes.insert(ticket, note);
                    // On a level with queues a request is enqueued, then dispatched at once
                    // when it can be: kube-apiserver observes its (empty) wait and its queue
                    // of one; exempt and `Reject` levels have no queue to observe.
                    let queued = matches!(
                        state.dispatcher.level(ticket.level).queue_set.config(),
                        QueueSetConfig::Queue { .. }
                    );
                    Admitted::Now(ticket, queued)
                }
                Decision::Reject {
                    reason,
                    retry_after,
                    ..
                } => Admitted::No(reason, retry_after),
                Decision::Wait(ticket) => {
                    let (sender, receiver) = oneshot::channel();
                    state.waiters.insert(ticket, sender);
                    state.notes.insert(ticket, note);
                    let length = state
                        .dispatcher
                        .level(ticket.level)
                        .queue_set
                        .queue_length_of(ticket.id);
                    Admitted::Later(ticket, receiver, length)
                }
            };
            (admitted, matched, metrics, estimate)
        };
        if let Some(metrics) = &metrics {
            metrics.estimated(estimate.max_seats());
        }
        let (ticket, woken) = match admitted {
            Admitted::Now(ticket, queued) => {
                let now = Instant::now();
                if queued && let Some(metrics) = &metrics {
                    metrics.passed_queue();
                }
                return Ok(Permit::start(
                    shared,
                    ticket,
                    matched,
                    metrics,
                    estimate,
                    watch,
                    queued.then_some(now),
                ));
            }
            Admitted::No(reason, retry_after) => {
                if let Some(metrics) = &metrics {
                    metrics.rejected(reason, None);
                }
                return Err(Rejection::new((*matched).clone(), reason, retry_after));
            }
            Admitted::Later(ticket, woken, length) => {
                if let Some(metrics) = &metrics {
                    metrics.enqueued(estimate.max_seats(), length);
                }
                (ticket, woken)
            }
        };
        let enqueued = Instant::now();
        let mut wait = PendingWait {
            shared: shared.clone(),
            ticket,
            settled: false,
            metrics: metrics.as_deref(),
            enqueued,
            estimate,
        };
        let outcome = tokio::time::timeout(shared.wait_limit, woken).await;
        let executing = match outcome {
            Ok(Ok(())) => true,
            // The wait limit passed, or the sender is gone: leave the queue unless the
            // request was dispatched meanwhile.
            _ => !shared.leave_queue(ticket),
        };
        wait.settled = true;
        drop(wait);
        if let Some(metrics) = &metrics {
            metrics.dequeued(estimate.max_seats());
        }
        if executing {
            Ok(Permit::start(
                shared,
                ticket,
                matched,
                metrics,
                estimate,
                watch,
                Some(enqueued),
            ))
        } else {
            if let Some(metrics) = &metrics {
                metrics.rejected(RejectReason::TimeOut, Some(enqueued.elapsed()));
            }
            let retry_after = shared.lock().dispatcher.retry_after(ticket.level);
            Err(Rejection::new(
                (*matched).clone(),
                RejectReason::TimeOut,
                retry_after,
            ))
        }
    }
}

/// How an arriving request was admitted.
enum Admitted {
    /// It executes now; true when its level has queues.
    Now(Ticket, bool),
    /// Rejected, with the Retry-After value.
    No(RejectReason, i64),
    /// It waits in its queue, which then held this many requests.
    Later(Ticket, oneshot::Receiver<()>, usize),
}

impl State {
    /// The metric children of the schema at `schema`, made when first needed; `None` when
    /// the guard keeps no metrics.
    fn flow_metrics(
        &mut self,
        shared: &Shared,
        schema: usize,
        matched: &Matched,
    ) -> Option<Arc<FlowMetrics>> {
        let families = shared.metrics()?;
        if self.flows.len() <= schema {
            self.flows.resize(schema + 1, None);
        }
        Some(
            self.flows[schema]
                .get_or_insert_with(|| Arc::new(FlowMetrics::new(families, matched)))
                .clone(),
        )
    }
}

impl Rejection {
    fn new(matched: Matched, reason: RejectReason, retry_after: i64) -> Self {
        Rejection {
            flow_schema: matched.flow_schema.clone(),
            priority_level: matched.priority_level.clone(),
            matched,
            reason,
            retry_after,
        }
    }
}

impl Permit {
    /// A request starts executing; `enqueued` is when it entered its queue, if its level
    /// has queues (its wait is observed then, as kube-apiserver observes queued requests').
    fn start(
        shared: &Arc<Shared>,
        ticket: Ticket,
        matched: Arc<Matched>,
        metrics: Option<Arc<FlowMetrics>>,
        estimate: WorkEstimate,
        watch: bool,
        enqueued: Option<Instant>,
    ) -> Permit {
        let started = Instant::now();
        if let Some(metrics) = &metrics {
            metrics.started(
                estimate.initial_seats,
                enqueued.map(|at| started.duration_since(at)),
            );
        }
        Permit {
            shared: shared.clone(),
            ticket,
            matched,
            metrics,
            started,
            seats: estimate.initial_seats,
            watch,
        }
    }

    /// The FlowSchema the request matched.
    pub fn flow_schema(&self) -> &str {
        &self.matched.flow_schema
    }

    /// Its priority level.
    pub fn priority_level(&self) -> &str {
        &self.matched.priority_level
    }

    /// The seats the request holds (its initial seats).
    pub fn seats(&self) -> u64 {
        self.seats
    }

    /// What the request matched, with the objects' uids (shared with the other requests of
    /// its flow schema).
    pub fn matched(&self) -> &Arc<Matched> {
        &self.matched
    }
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit")
            .field("ticket", &self.ticket)
            .field("matched", &self.matched)
            .finish_non_exhaustive()
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        finish(&self.shared, self.ticket);
        if let Some(metrics) = &self.metrics {
            metrics.finished(self.seats, self.started.elapsed(), self.watch);
        }
    }
}

/// A request waiting in a queue; if the waiting future is dropped before it settles, the
/// request leaves its queue (or, dispatched meanwhile, finishes at once).
struct PendingWait<'a> {
    shared: Arc<Shared>,
    ticket: Ticket,
    settled: bool,
    metrics: Option<&'a FlowMetrics>,
    enqueued: Instant,
    estimate: WorkEstimate,
}

impl Drop for PendingWait<'_> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let cancelled = self.shared.leave_queue(self.ticket);
        if let Some(metrics) = self.metrics {
            metrics.dequeued(self.estimate.max_seats());
            if cancelled {
                // kube-apiserver's queue set counts every request taken out of its queue,
                // for its wait limit or its client gone, with the reason `time-out`.
                metrics.rejected(RejectReason::TimeOut, Some(self.enqueued.elapsed()));
            } else {
                metrics.dispatched_unserved();
            }
        }
        if !cancelled {
            finish(&self.shared, self.ticket);
        }
    }
}

/// Finishes a request; lingering seats are released later by a task.
fn finish(shared: &Arc<Shared>, ticket: Ticket) {
    let release_at = {
        let mut state = shared.lock();
        let now = shared.now();
        let finished = state.dispatcher.finish(now, ticket);
        state.wake(&finished.dispatched);
        if finished.release_at.is_none() {
            state.notes.remove(&ticket);
        }
        finished.release_at
    };
    let Some(at) = release_at else { return };
    let weak = Arc::downgrade(shared);
    let release = move || {
        if let Some(shared) = weak.upgrade() {
            let mut state = shared.lock();
            let now = shared.now().max(at);
            let dispatched = state.dispatcher.release(now, ticket);
            state.wake(&dispatched);
            state.notes.remove(&ticket);
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            let deadline = shared.epoch + at;
            runtime.spawn(async move {
                tokio::time::sleep_until(deadline).await;
                release();
            });
        }
        Err(_) => release(),
    }
}

async fn adjust_periodically(shared: Weak<Shared>) {
    loop {
        tokio::time::sleep(ADJUSTMENT_PERIOD).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let mut state = shared.lock();
        let now = shared.now();
        let dispatched = state.dispatcher.tick(now);
        state.wake(&dispatched);
        if let Some(metrics) = shared.metrics() {
            metrics.note_levels(&state.dispatcher);
        }
    }
}
