//! The whole dispatcher of one server, sans IO: every priority level's queue set, its
//! seat-demand integrator, and the periodic borrowing adjustment (`apf_controller.go`'s
//! `updateBorrowingLocked`).
//!
//! ```
//! use std::time::Duration;
//! use apfkit_dispatcher::classify::Request;
//! use apfkit_dispatcher::config::Configuration;
//! use apfkit_dispatcher::dispatch::{Decision, Dispatcher};
//! use apfkit_dispatcher::queueset::WorkEstimate;
//!
//! let start = Duration::ZERO;
//! let mut dispatcher = Dispatcher::new(Configuration::kubernetes_default(600).unwrap(), start);
//! let request = Request { user: "alice", groups: &["system:authenticated"], verb: "get",
//!     is_resource_request: true, resource: "pods", namespace: "default", ..Request::default() };
//! let arrived = dispatcher.admit(start, &request, WorkEstimate::ONE_SEAT).unwrap();
//! let Decision::Execute(ticket) = arrived.decision else {
//!     panic!("an idle server runs it at once")
//! };
//! assert_eq!(dispatcher.level(ticket.level).name, "global-default");
//! let finished = dispatcher.finish(start + Duration::from_millis(20), ticket);
//! assert!(finished.dispatched.is_empty());
//! ```

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rustc_hash::FxHashMap;

use crate::borrowing::{Adjustment, DemandStats, Integrator, LevelInput, adjust};
use crate::classify::{Classifier, Request};
use crate::config::{Configuration, LevelBehavior, PriorityLevel, StaticLimits};
use crate::estimate::max_seats;
use crate::queueset::{
    Arrival, QueueSet, QueueSetConfig, QueueSummary, RejectReason, RequestId, WorkEstimate,
};
use crate::rejection::RetryAfterTracker;
use crate::timing::{TimingHistogram, TimingSnapshot};

/// How often the borrowing adjustment runs.
pub const ADJUSTMENT_PERIOD: Duration = Duration::from_secs(10);

/// A request admitted to a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket {
    /// Index of its priority level.
    pub level: usize,
    /// Its id in that level's queue set.
    pub id: RequestId,
}

/// What happened to an arriving request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// It executes now.
    Execute(Ticket),
    /// It waits in a queue; a later call lists it as dispatched, or it is cancelled.
    Wait(Ticket),
    /// Rejected with HTTP 429.
    Reject {
        /// Index of the level that rejected it.
        level: usize,
        /// Why.
        reason: RejectReason,
        /// The Retry-After value, in seconds.
        retry_after: i64,
    },
}

/// What an arrival did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrived {
    /// What became of the new request.
    pub decision: Decision,
    /// Other waiting requests that started executing during this call.
    pub dispatched: Vec<Ticket>,
}

/// What a finish did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Finished {
    /// When the request's lingering seats must be released with [`Dispatcher::release`];
    /// `None` when they were released now.
    pub release_at: Option<Duration>,
    /// Waiting requests that started executing as a result.
    pub dispatched: Vec<Ticket>,
}

/// One priority level's state.
#[derive(Debug, Clone)]
pub struct Level {
    /// Its name.
    pub name: String,
    /// Whether it is exempt.
    pub exempt: bool,
    /// Its static limits.
    pub limits: StaticLimits,
    /// Its current concurrency limit (the last adjustment's).
    pub current: i64,
    /// Its seat cap for the work estimator (0 for exempt and `Reject` levels).
    pub max_seats: u64,
    /// Its demand statistics as of the last adjustment.
    pub stats: DemandStats,
    /// Its queue set.
    pub queue_set: QueueSet,
    /// True while its object is gone and its requests drain (kube-apiserver's
    /// `quiescing`).
    pub quiescing: bool,
    /// True when the slot belongs to no configured level any more (the level was removed and
    /// had drained); a later level may take the slot.
    retired: bool,
    demand: Integrator,
    /// Seat demand over [`Level::demand_denominator`], through time (the `demand_seats`
    /// metric).
    demand_ratio: TimingHistogram,
    demand_denominator: f64,
}

/// What a request matched: its FlowSchema and priority level, by name and `metadata.uid`
/// (empty for objects without one), as kube-apiserver reports them in its
/// `X-Kubernetes-PF-*` response headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matched {
    /// The FlowSchema's name.
    pub flow_schema: String,
    /// The FlowSchema's uid.
    pub flow_schema_uid: String,
    /// The priority level's name.
    pub priority_level: String,
    /// The priority level's uid.
    pub priority_level_uid: String,
}

/// The dispatcher of one server.
#[derive(Debug)]
pub struct Dispatcher {
    classifier: Classifier,
    /// What each schema of the classifier's configuration matches, by its position.
    matched: Vec<Arc<Matched>>,
    /// The configuration as given last, without held-over levels.
    desired: Configuration,
    /// Level states. A level keeps its slot (its index in tickets) for as long as it is
    /// configured; a new configuration keeps the state of every level it names again.
    levels: Vec<Level>,
    /// The slot of each level of the classifier's configuration, in its order.
    slot_of: Vec<usize>,
    nominal_sum: i64,
    next_adjustment: Duration,
    retry_after: RetryAfterTracker,
    fair_fraction: Option<f64>,
}

/// The queue set behaviour and the estimator's seat cap of a configured level.
fn queue_set_config(level: &PriorityLevel) -> (QueueSetConfig, u64) {
    match &level.behavior {
        LevelBehavior::Exempt => (QueueSetConfig::Exempt, 0),
        LevelBehavior::Reject => (QueueSetConfig::Reject, 0),
        LevelBehavior::Queue {
            hand_size,
            queue_length_limit,
            dealer,
            ..
        } => (
            QueueSetConfig::Queue {
                dealer: *dealer,
                queue_length_limit: (*queue_length_limit).max(0) as usize,
            },
            max_seats(level.limits.nominal, *hand_size),
        ),
    }
}

impl Level {
    fn new(level: &PriorityLevel, now: Duration) -> Self {
        let (queue_config, max_seats) = queue_set_config(level);
        Level {
            name: level.name().to_owned(),
            exempt: matches!(level.behavior, LevelBehavior::Exempt),
            limits: level.limits,
            current: level.limits.nominal,
            max_seats,
            stats: DemandStats::default(),
            queue_set: QueueSet::new(queue_config, level.limits.nominal.max(0) as u64, now),
            quiescing: level.quiescing,
            retired: false,
            demand: Integrator::new(now, 0.0),
            demand_ratio: TimingHistogram::new(DEMAND_SEATS_BUCKETS, 0.0, now),
            demand_denominator: 1.0,
        }
    }

    /// Takes the behaviour and limits of `level` (the same name, configured again), keeping
    /// the queues, their requests and the demand statistics. Answers what now fits.
    fn reconfigure(&mut self, level: &PriorityLevel, now: Duration) -> Vec<RequestId> {
        let (queue_config, max_seats) = queue_set_config(level);
        self.exempt = matches!(level.behavior, LevelBehavior::Exempt);
        self.limits = level.limits;
        self.max_seats = max_seats;
        self.quiescing = level.quiescing;
        self.queue_set.reconfigure(now, queue_config)
    }

    /// True when the slot belongs to no configured level.
    pub fn is_retired(&self) -> bool {
        self.retired
    }

    /// The time the level's seat demand spent at each ratio to its current limit, up to
    /// `now` (kube-apiserver's `apiserver_flowcontrol_demand_seats`; the denominator is the
    /// current limit, or a tenth of the server's limit while that is 0, as
    /// `updateBorrowingLocked` sets it).
    pub fn demand_seats(&self, now: Duration) -> TimingSnapshot {
        self.demand_ratio.snapshot(now)
    }
}

/// The buckets of kube-apiserver's `apiserver_flowcontrol_demand_seats`
/// (`k8s.io/apiserver/pkg/util/flowcontrol/metrics/metrics.go`).
pub const DEMAND_SEATS_BUCKETS: &[f64] =
    &[0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.7, 2.0, 2.8, 4.0, 6.0];

impl Dispatcher {
    /// A dispatcher for `config`, started at `now`. As the upstream controller, it runs one
    /// adjustment at once; call [`Dispatcher::tick`] to run the later ones.
    pub fn new(config: Configuration, now: Duration) -> Self {
        let mut dispatcher = Dispatcher {
            classifier: Classifier::new(config.clone()),
            matched: Vec::new(),
            desired: config.clone(),
            levels: Vec::new(),
            slot_of: Vec::new(),
            nominal_sum: 0,
            next_adjustment: now + ADJUSTMENT_PERIOD,
            retry_after: RetryAfterTracker::new(),
            fair_fraction: None,
        };
        dispatcher.install(now, config);
        dispatcher.adjust(now);
        dispatcher
    }

    /// Puts `config` in place at `now`, as kube-apiserver's configuration controller digests
    /// a change of the stored objects: every level named again keeps its queues, waiting and
    /// executing requests, current limit and demand statistics, taking its new behaviour and
    /// limits; a level that is gone but still has requests is held over, quiescing, until
    /// they drain ([`Configuration::holding_over`]); new levels start empty. New requests are
    /// classified by `config`'s schemas at once. Runs a borrowing adjustment (as upstream
    /// does after a change) and answers the waiting requests that then started.
    pub fn reconfigure(&mut self, now: Duration, config: Configuration) -> Vec<Ticket> {
        let config_now = self.classifier.config();
        let draining: Vec<PriorityLevel> = self
            .slot_of
            .iter()
            .zip(config_now.priority_levels())
            .filter(|(slot, level)| {
                !self.levels[**slot].queue_set.is_idle()
                    && config.priority_level(level.name()).is_none()
            })
            .map(|(_, level)| level.clone())
            .collect();
        let held = config.holding_over(draining);
        self.desired = config;
        let mut dispatched = self.install(now, held);
        let (_, more) = self.adjust(now);
        dispatched.extend(more);
        dispatched
    }

    /// Installs `config` (held-over levels included): level states by name, the classifier
    /// and the nominal sum.
    fn install(&mut self, now: Duration, config: Configuration) -> Vec<Ticket> {
        let mut by_name: FxHashMap<String, usize> = self
            .slot_of
            .iter()
            .map(|&slot| (self.levels[slot].name.clone(), slot))
            .collect();
        let mut dispatched = Vec::new();
        let mut slot_of = Vec::with_capacity(config.priority_levels().len());
        for level in config.priority_levels() {
            let slot = match by_name.remove(level.name()) {
                Some(slot) => {
                    let ids = self.levels[slot].reconfigure(level, now);
                    self.levels[slot].note_demand(now);
                    dispatched.extend(tickets(slot, ids));
                    slot
                }
                None => {
                    let state = Level::new(level, now);
                    // A retired slot is idle: no ticket names it any more.
                    match self.levels.iter().position(|l| l.retired) {
                        Some(free) => {
                            self.levels[free] = state;
                            free
                        }
                        None => {
                            self.levels.push(state);
                            self.levels.len() - 1
                        }
                    }
                }
            };
            slot_of.push(slot);
        }
        // Levels left out were idle (busy ones are held over).
        for slot in by_name.into_values() {
            self.levels[slot].retired = true;
        }
        self.slot_of = slot_of;
        self.nominal_sum = config
            .priority_levels()
            .iter()
            .map(|l| l.limits.nominal)
            .sum();
        let uid = |meta: &ObjectMeta| meta.uid.clone().unwrap_or_default();
        self.matched = config
            .flow_schemas()
            .iter()
            .map(|schema| {
                Arc::new(Matched {
                    flow_schema: schema.name().to_owned(),
                    flow_schema_uid: uid(&schema.object.metadata),
                    priority_level: schema.priority_level().to_owned(),
                    priority_level_uid: config
                        .priority_level(schema.priority_level())
                        .map(|level| uid(&level.object.metadata))
                        .unwrap_or_default(),
                })
            })
            .collect();
        self.classifier = Classifier::new(config);
        dispatched
    }

    /// What a request classified to the schema at `schema_index` matched
    /// ([`crate::Classification::schema_index`]).
    pub fn matched(&self, schema_index: usize) -> Option<&Arc<Matched>> {
        self.matched.get(schema_index)
    }

    /// The compiled classifier.
    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    /// Every level slot, by index (the configuration's order until it is reconfigured;
    /// retired slots included, see [`Level::is_retired`]).
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The configured levels (held-over ones included), by name, with their indexes.
    pub fn configured_levels(&self) -> impl Iterator<Item = (usize, &Level)> {
        let mut slots = self.slot_of.clone();
        slots.sort_by(|a, b| self.levels[*a].name.cmp(&self.levels[*b].name));
        slots.into_iter().map(|slot| (slot, &self.levels[slot]))
    }

    /// One level.
    pub fn level(&self, index: usize) -> &Level {
        &self.levels[index]
    }

    /// The index of the level named `name`.
    pub fn level_index(&self, name: &str) -> Option<usize> {
        let position = self.classifier.config().priority_level_index(name)?;
        self.slot_of.get(position).copied()
    }

    /// The last adjustment's fair fraction, when its solver ran and succeeded.
    pub fn fair_fraction(&self) -> Option<f64> {
        self.fair_fraction
    }

    /// When the next periodic adjustment is due.
    pub fn next_adjustment(&self) -> Duration {
        self.next_adjustment
    }

    /// Classifies `request` and starts it with `estimate`. `None` only for a configuration
    /// without a catch-all schema.
    pub fn admit(
        &mut self,
        now: Duration,
        request: &Request<'_>,
        estimate: WorkEstimate,
    ) -> Option<Arrived> {
        let classification = self.classifier.classify(request)?;
        let hash = classification.hash;
        let level = self.level_index(classification.priority_level)?;
        Some(self.start(now, level, hash, estimate))
    }

    /// Starts a request of flow `hash` on level `level`.
    pub fn start(
        &mut self,
        now: Duration,
        level: usize,
        hash: u64,
        estimate: WorkEstimate,
    ) -> Arrived {
        let state = &mut self.levels[level];
        let arrival = state.queue_set.start(now, hash, estimate);
        state.note_demand(now);
        match arrival {
            Arrival::Rejected(reason) => {
                let second = now.as_secs() as i64;
                self.retry_after.record_dropped(&state.name, second);
                Arrived {
                    decision: Decision::Reject {
                        level,
                        reason,
                        retry_after: self.retry_after.retry_after(&state.name),
                    },
                    dispatched: Vec::new(),
                }
            }
            Arrival::Admitted { id, mut dispatched } => {
                let ticket = Ticket { level, id };
                let decision = match dispatched.iter().position(|d| *d == id) {
                    Some(position) => {
                        dispatched.remove(position);
                        Decision::Execute(ticket)
                    }
                    None => Decision::Wait(ticket),
                };
                Arrived {
                    decision,
                    dispatched: tickets(level, dispatched),
                }
            }
        }
    }

    /// The request's execution ended.
    pub fn finish(&mut self, now: Duration, ticket: Ticket) -> Finished {
        let state = &mut self.levels[ticket.level];
        let (release_at, dispatched) = state.queue_set.finish(now, ticket.id);
        state.note_demand(now);
        Finished {
            release_at,
            dispatched: tickets(ticket.level, dispatched),
        }
    }

    /// Releases a finished request's lingering seats.
    pub fn release(&mut self, now: Duration, ticket: Ticket) -> Vec<Ticket> {
        let state = &mut self.levels[ticket.level];
        let dispatched = state.queue_set.release(now, ticket.id);
        state.note_demand(now);
        tickets(ticket.level, dispatched)
    }

    /// The wait of a queued request ended (deadline or cancellation). True when it was still
    /// waiting: it has left its queue and counts as dropped for Retry-After.
    pub fn cancel(&mut self, now: Duration, ticket: Ticket) -> bool {
        let state = &mut self.levels[ticket.level];
        let removed = state.queue_set.cancel(now, ticket.id);
        state.note_demand(now);
        if removed {
            self.retry_after
                .record_dropped(&state.name, now.as_secs() as i64);
        }
        removed
    }

    /// The Retry-After value of a level, in seconds.
    pub fn retry_after(&self, level: usize) -> i64 {
        self.retry_after.retry_after(&self.levels[level].name)
    }

    /// Runs the borrowing adjustment if it is due (every [`ADJUSTMENT_PERIOD`], the first at
    /// construction). Returns the requests that the new limits dispatched.
    ///
    /// Held-over levels that have drained are removed then, with a new adjustment, as
    /// kube-apiserver's controller reloads its configuration when one goes idle.
    pub fn tick(&mut self, now: Duration) -> Vec<Ticket> {
        if now < self.next_adjustment {
            return Vec::new();
        }
        self.next_adjustment = now + ADJUSTMENT_PERIOD;
        let drained = self
            .slot_of
            .iter()
            .any(|&slot| self.levels[slot].quiescing && self.levels[slot].queue_set.is_idle());
        if drained {
            return self.reconfigure(now, self.desired.clone());
        }
        self.adjust(now).1
    }

    /// Runs the borrowing adjustment now: ends every level's demand period, updates its
    /// statistics, computes new current limits and applies them.
    pub fn adjust(&mut self, now: Duration) -> (Adjustment, Vec<Ticket>) {
        let slots = &self.slot_of;
        let levels = &mut self.levels;
        let inputs: Vec<LevelInput> = slots
            .iter()
            .map(|&slot| {
                let level = &mut levels[slot];
                let results = level.demand.reset(now);
                level.stats.update(&results);
                LevelInput {
                    exempt: level.exempt,
                    limits: level.limits,
                    stats: level.stats,
                    current: level.current,
                }
            })
            .collect();
        let adjustment = adjust(&inputs, self.nominal_sum);
        self.fair_fraction = adjustment.fair_fraction;
        let mut dispatched = Vec::new();
        let server_limit = f64::from(self.classifier.config().server_concurrency_limit());
        for (&index, &current) in self.slot_of.iter().zip(&adjustment.current) {
            let level = &mut self.levels[index];
            level.current = current;
            level.demand_denominator = if current > 0 {
                current as f64
            } else {
                (server_limit / 10.0).round().max(1.0)
            };
            let ids = level
                .queue_set
                .set_concurrency_limit(now, current.max(0) as u64);
            level.note_demand(now);
            dispatched.extend(tickets(index, ids));
        }
        (adjustment, dispatched)
    }

    /// The table of kube-apiserver's `/debug/api_priority_and_fairness/dump_priority_levels`:
    /// one row per level, by name, columns separated by `,` and aligned as Go's tabwriter
    /// does. `TimedoutRequests` is always 0, as upstream never counts it (its queue set
    /// counts a request that leaves its queue as rejected and cancelled).
    pub fn dump_priority_levels(&self) -> String {
        let header = [
            "PriorityLevelName",
            "ActiveQueues",
            "IsIdle",
            "IsQuiescing",
            "WaitingRequests",
            "ExecutingRequests",
            "DispatchedRequests",
            "RejectedRequests",
            "TimedoutRequests",
            "CancelledRequests",
        ];
        let mut rows = vec![header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>()];
        for (_, level) in self.configured_levels() {
            let set = &level.queue_set;
            let active = set
                .queues()
                .filter(|q: &QueueSummary| q.waiting > 0)
                .count();
            let totals = set.totals();
            rows.push(vec![
                level.name.clone(),
                active.to_string(),
                set.is_idle().to_string(),
                level.quiescing.to_string(),
                set.waiting().to_string(),
                set.executing().to_string(),
                totals.dispatched.to_string(),
                totals.rejected.to_string(),
                "0".to_owned(),
                totals.cancelled.to_string(),
            ]);
        }
        tab_table(&rows)
    }

    /// The table of kube-apiserver's `/debug/api_priority_and_fairness/dump_queues`: one row
    /// per queue of every level (levels without queues have none), levels by name.
    pub fn dump_queues(&self) -> String {
        let header = [
            "PriorityLevelName",
            "Index",
            "PendingRequests",
            "ExecutingRequests",
            "SeatsInUse",
            "NextDispatchR",
            "InitialSeatsSum",
            "MaxSeatsSum",
            "TotalWorkSum",
        ];
        let mut rows = vec![header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>()];
        for (_, level) in self.configured_levels() {
            for queue in level.queue_set.queues() {
                rows.push(vec![
                    level.name.clone(),
                    queue.index.to_string(),
                    queue.waiting.to_string(),
                    queue.executing.to_string(),
                    queue.seats_in_use.to_string(),
                    queue.virtual_start.to_string(),
                    queue.waiting_initial_seats.to_string(),
                    queue.waiting_seats.to_string(),
                    queue.waiting_work.to_string(),
                ]);
            }
        }
        tab_table(&rows)
    }
}

impl Level {
    /// Feeds the integrator when the demand changed (an unchanged value integrates the same).
    fn note_demand(&mut self, now: Duration) {
        let demand = self.queue_set.seat_demand() as f64;
        if demand != self.demand.value() {
            self.demand.set(now, demand);
        }
        let ratio = demand / self.demand_denominator;
        if ratio != self.demand_ratio.value() {
            self.demand_ratio.set(now, ratio);
        }
    }
}

fn tickets(level: usize, ids: Vec<RequestId>) -> Vec<Ticket> {
    ids.into_iter().map(|id| Ticket { level, id }).collect()
}

/// Rows whose cells are joined by `",\t"` and aligned like Go's
/// `tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)`: every cell but the last of a row is padded to
/// its column's width (widest cell plus one, at least 8).
pub fn tab_table(rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<Cow<'_, str>>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| printable(cell)).collect())
        .collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![8usize; columns];
    for row in &rows {
        for (i, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
            widths[i] = widths[i].max(cell.chars().count() + 2);
        }
    }
    let mut out = String::new();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                out.push_str(cell);
            } else {
                let text = format!("{cell},");
                out.push_str(&format!("{text:<width$}", width = widths[i]));
            }
        }
        out.push('\n');
    }
    out
}

/// `text` with every control character (newline included) and every bidirectional formatting
/// character escaped (`\n`, `\u{1b}`), so that text from the input cannot forge lines, move
/// the cursor or colour a terminal. Text without them is borrowed as it is.
pub fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}
