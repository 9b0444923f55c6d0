//! Recorded requests (an audit log's, read by [`super::audit_log`]) replayed through two
//! configurations side by side on the simulated clock: the one in force and a proposed one.
//! Each request arrives when it was received, holds its seats for the time it took to serve
//! (its recorded latency less the queue wait it recorded), and is classified, queued and
//! perhaps rejected by each configuration; the report says who would be queued or rejected,
//! and how that differs between them.
//!
//! A log is written in the order requests complete, not the order they arrive, so requests
//! wait in a reorder buffer until the log has moved [`ReplayOptions::reorder_window`] past
//! their arrival; one that comes later still is replayed at once and counted as late. Memory
//! is bounded whatever the log's length: the buffer holds at most
//! [`ReplayOptions::max_pending`] requests, and users past [`MAX_USERS`] share one row.
//!
//! ```
//! use std::time::Duration;
//! use apfkit_dispatcher::config::Configuration;
//! use apfkit_dispatcher::sim::replay::{Replay, ReplayOptions, TracedRequest};
//!
//! let in_force = Configuration::kubernetes_default(600).unwrap();
//! let proposed = Configuration::kubernetes_default(4).unwrap();
//! let mut replay = Replay::new(in_force, proposed, ReplayOptions::default());
//! for i in 0..40u64 {
//!     let mut request = TracedRequest::resource("ci-bot", &["system:authenticated"], "list", "", "secrets");
//!     request.received = Duration::from_millis(1_000 + i);
//!     request.logged = request.received + Duration::from_secs(1);
//!     request.service = Duration::from_secs(1);
//!     replay.push(&request).unwrap();
//! }
//! let report = replay.finish();
//! let bot = report.users.iter().find(|u| u.user == "ci-bot").unwrap();
//! assert_eq!(bot.in_force.queued, 0);
//! assert!(bot.proposed.queued > 0, "4 seats cannot serve 40 one-second lists at once");
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::convert::Infallible;
use std::time::Duration;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::classify::Request;
use crate::config::Configuration;
use crate::dispatch::{Dispatcher, tab_table};
use crate::queueset::{RejectReason, WorkEstimate};
use crate::sim::engine::{Arrival, Engine, Event, Observer};
use crate::sim::events::EventQueue;
use crate::sim::report::{Figures, LevelReport, Rejections, Tally};

/// Distinct users given a row each; the rest share the row [`OTHER_USERS`].
pub const MAX_USERS: usize = 100_000;

/// The row of the users past [`MAX_USERS`].
pub const OTHER_USERS: &str = "(other users)";

/// The longest span a replay simulates: a request received later than this after the log's
/// first one, or taking longer than this, is not replayed (as a workload's times are held to
/// 24 h): time on the simulated clock costs a borrowing adjustment every 10 s.
pub const MAX_SPAN: Duration = Duration::from_secs(24 * 3600);

/// The most distinct FlowSchemas one user's row names.
const SCHEMAS_PER_USER: usize = 4;

/// One recorded request, as APF sees it. Times are since any fixed origin (an audit log's
/// are since the Unix epoch).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TracedRequest {
    /// When the server received it.
    pub received: Duration,
    /// When its record was written (its completion; a watch's response start): how far the
    /// log has come.
    pub logged: Duration,
    /// The user APF classifies (the impersonated one, when there is one).
    pub user: String,
    /// The user's groups.
    pub groups: Vec<String>,
    /// Kubernetes verb, or the lower-case HTTP method of a non-resource request.
    pub verb: String,
    /// A resource request (else a non-resource one, by `path`).
    pub is_resource_request: bool,
    /// API group; empty for the core group.
    pub api_group: String,
    /// Resource.
    pub resource: String,
    /// Subresource; empty for none.
    pub subresource: String,
    /// Namespace; empty for cluster-scoped and all-namespace requests.
    pub namespace: String,
    /// Object name.
    pub name: String,
    /// URL path of a non-resource request.
    pub path: String,
    /// Seats held while it executes.
    pub seats: u64,
    /// How long it executes once admitted.
    pub service: Duration,
}

impl TracedRequest {
    /// A resource request of one seat, received and logged at 0, served at once.
    pub fn resource(
        user: &str,
        groups: &[&str],
        verb: &str,
        api_group: &str,
        resource: &str,
    ) -> Self {
        TracedRequest {
            user: user.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            verb: verb.to_owned(),
            is_resource_request: true,
            api_group: api_group.to_owned(),
            resource: resource.to_owned(),
            seats: 1,
            ..TracedRequest::default()
        }
    }

    fn as_request<'a>(&'a self, groups: &'a [&'a str]) -> Request<'a> {
        Request {
            user: &self.user,
            groups,
            verb: &self.verb,
            is_resource_request: self.is_resource_request,
            api_group: &self.api_group,
            api_version: "",
            resource: &self.resource,
            subresource: &self.subresource,
            namespace: &self.namespace,
            name: &self.name,
            path: &self.path,
        }
    }
}

/// How a replay runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayOptions {
    /// How long a request may wait in a queue (kube-apiserver's default: 15 s, a quarter of
    /// its 60 s request timeout).
    pub wait_limit: Duration,
    /// How far the log must have moved past a request's arrival before it is replayed: the
    /// longest a request takes (kube-apiserver's 60 s request timeout) and some slack.
    pub reorder_window: Duration,
    /// The most requests held in the reorder buffer; past it the earliest is replayed.
    pub max_pending: usize,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            wait_limit: Duration::from_secs(15),
            reorder_window: Duration::from_secs(70),
            max_pending: 500_000,
        }
    }
}

/// Why a request cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReplayError(String);

/// Where one configuration put a request.
#[derive(Debug, Clone, Copy)]
struct Placed {
    level: usize,
    hash: u64,
    schema: u32,
}

/// A request waiting in the reorder buffer.
#[derive(Debug, Clone, Copy)]
struct Pending {
    received: Duration,
    sequence: u64,
    user: u32,
    seats: u64,
    service: Duration,
    placed: [Placed; 2],
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.received, self.sequence) == (other.received, other.sequence)
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.received, self.sequence).cmp(&(other.received, other.sequence))
    }
}

/// Which user's request, classified to which FlowSchema.
#[derive(Debug, Clone, Copy)]
struct Tag {
    user: u32,
    schema: u32,
}

/// One user's running figures under one configuration.
#[derive(Debug, Clone, Default)]
struct UserTally {
    executed: u64,
    queued: u64,
    rejected: Rejections,
    wait_total: Duration,
    wait_max: Duration,
    schemas: Vec<u32>,
}

/// One configuration's side of a replay.
struct Side {
    engine: Engine<Tag, Infallible>,
    figures: SideFigures,
}

/// A side's figures per FlowSchema and per user: what its engine's observer keeps.
struct SideFigures {
    schemas: FxHashMap<u32, Tally>,
    users: Vec<UserTally>,
}

impl Observer<Tag, Infallible> for SideFigures {
    fn started(&mut self, now: Duration, tag: &Tag, wait: Duration, seats: u64) {
        self.schema(tag.schema).start(now, wait, seats);
        let user = &mut self.users[tag.user as usize];
        user.executed += 1;
        if !wait.is_zero() {
            user.queued += 1;
            user.wait_total += wait;
            user.wait_max = user.wait_max.max(wait);
        }
    }

    fn executed(&mut self, now: Duration, tag: &Tag, seats: u64) {
        self.schema(tag.schema).seats.add(now, -(seats as f64));
    }

    fn rejected(&mut self, tag: &Tag, reason: RejectReason) {
        self.schema(tag.schema).figures.rejected.count(reason);
        self.users[tag.user as usize].rejected.count(reason);
    }

    fn answered(&mut self, _: Duration, _: &Tag, _: i64, _: &mut EventQueue<Event<Infallible>>) {}
}

impl SideFigures {
    fn schema(&mut self, schema: u32) -> &mut Tally {
        self.schemas
            .entry(schema)
            .or_insert_with(|| Tally::new(Duration::MAX))
    }
}

impl Side {
    fn new(config: Configuration, options: &ReplayOptions) -> Self {
        Side {
            engine: Engine::new(
                Dispatcher::new(config, Duration::ZERO),
                options.wait_limit,
                Duration::MAX,
            ),
            figures: SideFigures {
                schemas: FxHashMap::default(),
                users: Vec::new(),
            },
        }
    }

    /// Where this configuration puts `request`.
    fn place(&self, request: &TracedRequest) -> Result<Placed, ReplayError> {
        let groups: Vec<&str> = request.groups.iter().map(String::as_str).collect();
        let dispatcher = &self.engine.dispatcher;
        let classification = dispatcher
            .classifier()
            .classify(&request.as_request(&groups))
            .ok_or_else(|| ReplayError("no FlowSchema matches it (no catch-all)".to_owned()))?;
        let level = dispatcher
            .level_index(classification.priority_level)
            .ok_or_else(|| {
                ReplayError(format!(
                    "priority level {} is missing",
                    classification.priority_level
                ))
            })?;
        Ok(Placed {
            level,
            hash: classification.hash,
            schema: u32::try_from(classification.schema_index).unwrap_or(u32::MAX),
        })
    }

    /// Runs every event before `at`, then the arrival at `at`.
    fn arrive(&mut self, at: Duration, pending: &Pending, placed: Placed) {
        self.run_until(at);
        self.engine.events.advance_to(at);
        let user = &mut self.figures.users[pending.user as usize];
        if !user.schemas.contains(&placed.schema) && user.schemas.len() < SCHEMAS_PER_USER {
            user.schemas.push(placed.schema);
        }
        let arrival = Arrival {
            tag: Tag {
                user: pending.user,
                schema: placed.schema,
            },
            level: placed.level,
            hash: placed.hash,
            estimate: WorkEstimate {
                initial_seats: pending.seats,
                ..WorkEstimate::ONE_SEAT
            },
            service: pending.service,
        };
        self.engine.arrive(at, arrival, &mut self.figures);
    }

    fn run_until(&mut self, until: Duration) {
        while let Some((now, event)) = self.engine.events.next_until(Some(until)) {
            // A replay's arrivals are not events: its engine has none of its own.
            let Event::Engine(internal) = event;
            self.engine.handle(now, internal, &mut self.figures);
        }
    }

    /// Ends arrivals at `end` and runs what is left.
    fn drain(&mut self, end: Duration) {
        self.engine.end_arrivals(end);
        for tally in self.figures.schemas.values_mut() {
            tally.seats.end_at(end);
        }
        self.run_until(Duration::MAX);
    }
}

/// A replay in progress: push requests in log order, then [`Replay::finish`].
pub struct Replay {
    sides: [Side; 2],
    options: ReplayOptions,
    pending: BinaryHeap<Reverse<Pending>>,
    users: FxHashMap<String, u32>,
    user_names: Vec<String>,
    origin: Option<Duration>,
    logged: Duration,
    sequence: u64,
    late: u64,
    requests: u64,
}

impl Replay {
    /// A replay of requests through `in_force` and `proposed`.
    pub fn new(in_force: Configuration, proposed: Configuration, options: ReplayOptions) -> Self {
        Replay {
            sides: [Side::new(in_force, &options), Side::new(proposed, &options)],
            options,
            pending: BinaryHeap::new(),
            users: FxHashMap::default(),
            user_names: Vec::new(),
            origin: None,
            logged: Duration::ZERO,
            sequence: 0,
            late: 0,
            requests: 0,
        }
    }

    /// Adds the next request of the log and replays those the log has moved past.
    ///
    /// # Errors
    ///
    /// When its times leave [`MAX_SPAN`], or a configuration cannot classify it (no catch-all
    /// FlowSchema, or a missing priority level); nothing is replayed for it.
    pub fn push(&mut self, request: &TracedRequest) -> Result<(), ReplayError> {
        if request.logged.saturating_sub(request.received) > MAX_SPAN {
            return Err(ReplayError(
                "it took more than 24 h (its stageTimestamp is that far after its arrival)"
                    .to_owned(),
            ));
        }
        if let Some(origin) = self.origin
            && request.received.saturating_sub(origin) > MAX_SPAN
        {
            return Err(ReplayError(
                "it was received more than 24 h after the log's first request".to_owned(),
            ));
        }
        let placed = [self.sides[0].place(request)?, self.sides[1].place(request)?];
        let origin = *self.origin.get_or_insert(request.received);
        let user = self.user(&request.user);
        self.pending.push(Reverse(Pending {
            received: request.received.saturating_sub(origin),
            sequence: self.sequence,
            user,
            seats: request.seats.max(1),
            service: request.service,
            placed,
        }));
        self.sequence += 1;
        self.logged = self.logged.max(request.logged.saturating_sub(origin));
        let ready = self.logged.saturating_sub(self.options.reorder_window);
        while let Some(Reverse(next)) = self.pending.peek() {
            if next.received > ready && self.pending.len() <= self.options.max_pending {
                break;
            }
            let Some(Reverse(next)) = self.pending.pop() else {
                break;
            };
            self.replay(next);
        }
        Ok(())
    }

    /// Replays what is left and reports.
    pub fn finish(mut self) -> ReplayReport {
        while let Some(Reverse(next)) = self.pending.pop() {
            self.replay(next);
        }
        let end = self.logged.max(self.sides[0].engine.events.now());
        for side in &mut self.sides {
            side.drain(end);
        }
        let [in_force, proposed] = self.sides;
        let users = user_changes(&self.user_names, &in_force, &proposed);
        ReplayReport {
            requests: self.requests,
            seconds: end.as_secs_f64(),
            late: self.late,
            users,
            in_force: side_report(in_force),
            proposed: side_report(proposed),
        }
    }

    /// The row of `name`: its own, or the shared one past [`MAX_USERS`].
    fn user(&mut self, name: &str) -> u32 {
        if let Some(&index) = self.users.get(name) {
            return index;
        }
        let name = if self.users.len() < MAX_USERS {
            name
        } else {
            OTHER_USERS
        };
        if let Some(&index) = self.users.get(name) {
            return index;
        }
        let index = u32::try_from(self.user_names.len()).unwrap_or(u32::MAX);
        self.users.insert(name.to_owned(), index);
        self.user_names.push(name.to_owned());
        for side in &mut self.sides {
            side.figures.users.push(UserTally::default());
        }
        index
    }

    fn replay(&mut self, pending: Pending) {
        self.requests += 1;
        let mut at = pending.received;
        let now = self.sides[0].engine.events.now();
        if at < now {
            self.late += 1;
            at = now;
        }
        for (side, placed) in self.sides.iter_mut().zip(pending.placed) {
            side.arrive(at, &pending, placed);
        }
    }
}

/// The rows of the users queued or rejected under either configuration, the most rejected
/// first.
fn user_changes(names: &[String], in_force: &Side, proposed: &Side) -> Vec<UserChange> {
    let figures = |side: &Side, index: usize| {
        let tally = &side.figures.users[index];
        let config = side.engine.dispatcher.classifier().config();
        let schemas: Vec<String> = tally
            .schemas
            .iter()
            .filter_map(|&s| config.flow_schemas().get(s as usize))
            .map(|schema| schema.name().to_owned())
            .collect();
        UserFigures {
            flow_schemas: schemas,
            executed: tally.executed,
            queued: tally.queued,
            rejected: tally.rejected,
            wait_max_ms: tally.wait_max.as_secs_f64() * 1e3,
            wait_mean_ms: if tally.queued == 0 {
                0.0
            } else {
                tally.wait_total.as_secs_f64() * 1e3 / tally.queued as f64
            },
        }
    };
    let mut rows: Vec<UserChange> = names
        .iter()
        .enumerate()
        .map(|(index, name)| UserChange {
            user: name.clone(),
            in_force: figures(in_force, index),
            proposed: figures(proposed, index),
        })
        .filter(|row| row.in_force.hurt() || row.proposed.hurt())
        .collect();
    rows.sort_by(|a, b| {
        let key = |row: &UserChange| {
            (
                Reverse(
                    row.proposed
                        .rejected
                        .total()
                        .max(row.in_force.rejected.total()),
                ),
                Reverse(row.proposed.queued.max(row.in_force.queued)),
            )
        };
        key(a).cmp(&key(b)).then_with(|| a.user.cmp(&b.user))
    });
    rows
}

fn side_report(mut side: Side) -> SideReport {
    let left_over = side.engine.left_over();
    let priority_levels = side.engine.level_reports(None);
    let dispatcher = &side.engine.dispatcher;
    let config = dispatcher.classifier().config();
    let mut flow_schemas: Vec<(u32, Tally)> = side.figures.schemas.into_iter().collect();
    flow_schemas.sort_by_key(|(index, _)| *index);
    let flow_schemas = flow_schemas
        .into_iter()
        .filter_map(|(index, tally)| {
            let schema = config.flow_schemas().get(index as usize)?;
            Some(SchemaReport {
                name: schema.name().to_owned(),
                priority_level: schema.priority_level().to_owned(),
                figures: tally.finish(),
            })
        })
        .collect();

    SideReport {
        priority_levels,
        flow_schemas,
        left_over,
    }
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayReport {
    /// Requests replayed.
    pub requests: u64,
    /// From the first arrival to the end of the log, in seconds.
    pub seconds: f64,
    /// Requests that came after the log had moved a reorder window past their arrival,
    /// replayed when they came.
    pub late: u64,
    /// The users queued or rejected under either configuration, the most rejected first.
    pub users: Vec<UserChange>,
    /// Under the configuration in force.
    pub in_force: SideReport,
    /// Under the proposed configuration.
    pub proposed: SideReport,
}

/// One configuration's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SideReport {
    /// Per level, in the configuration's order.
    pub priority_levels: Vec<LevelReport>,
    /// Per FlowSchema that classified a request, in the configuration's order.
    pub flow_schemas: Vec<SchemaReport>,
    /// Requests and seats still held once every event has run (0 unless something leaked).
    pub left_over: u64,
}

/// One FlowSchema's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaReport {
    /// The FlowSchema's name.
    pub name: String,
    /// Its priority level.
    pub priority_level: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// One user under both configurations.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserChange {
    /// The user's name ([`OTHER_USERS`] for the users past [`MAX_USERS`]).
    pub user: String,
    /// Under the configuration in force.
    pub in_force: UserFigures,
    /// Under the proposed configuration.
    pub proposed: UserFigures,
}

/// One user's requests under one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserFigures {
    /// The FlowSchemas its requests matched (the first four).
    pub flow_schemas: Vec<String>,
    /// Requests executed.
    pub executed: u64,
    /// Of those, requests that waited in a queue.
    pub queued: u64,
    /// Requests rejected, by reason.
    pub rejected: Rejections,
    /// The longest wait, in milliseconds.
    pub wait_max_ms: f64,
    /// The mean wait of the requests that waited, in milliseconds.
    pub wait_mean_ms: f64,
}

impl UserFigures {
    fn hurt(&self) -> bool {
        self.queued > 0 || self.rejected.total() > 0
    }
}

impl ReplayReport {
    /// The report as text for a person: who is queued or rejected under each configuration,
    /// then each level under both.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "Replayed {} requests over {:.1} s ({} late).\n",
            self.requests, self.seconds, self.late
        );
        if self.users.is_empty() {
            out.push_str("\nNo user is queued or rejected under either configuration.\n");
        } else {
            out.push_str("\nUsers queued or rejected (in force -> proposed):\n");
            let mut rows = vec![
                [
                    "User",
                    "FlowSchema",
                    "Queued",
                    "Rejected",
                    "WaitMaxMs",
                    "ProposedFlowSchema",
                    "ProposedQueued",
                    "ProposedRejected",
                    "ProposedWaitMaxMs",
                ]
                .map(str::to_owned)
                .to_vec(),
            ];
            for row in &self.users {
                let mut cells = vec![row.user.clone()];
                for side in [&row.in_force, &row.proposed] {
                    cells.extend([
                        side.flow_schemas.join(","),
                        side.queued.to_string(),
                        side.rejected.total().to_string(),
                        format!("{:.1}", side.wait_max_ms),
                    ]);
                }
                rows.push(cells);
            }
            out.push_str(&tab_table(&rows));
        }
        out.push_str("\nPriority levels (in force -> proposed):\n");
        let mut rows = vec![
            [
                "PriorityLevelName",
                "Executed",
                "Rejected",
                "WaitP99ms",
                "ProposedExecuted",
                "ProposedRejected",
                "ProposedWaitP99ms",
            ]
            .map(str::to_owned)
            .to_vec(),
        ];
        let mut names: Vec<&str> = self
            .in_force
            .priority_levels
            .iter()
            .map(|l| l.name.as_str())
            .collect();
        for level in &self.proposed.priority_levels {
            if !names.contains(&level.name.as_str()) {
                names.push(&level.name);
            }
        }
        for name in names {
            let mut cells = vec![name.to_owned()];
            for side in [&self.in_force, &self.proposed] {
                match side.priority_levels.iter().find(|l| l.name == name) {
                    Some(level) => cells.extend([
                        level.figures.executed.to_string(),
                        level.figures.rejected.total().to_string(),
                        format!("{:.1}", level.figures.wait_p99_ms),
                    ]),
                    None => cells.extend(["-", "-", "-"].map(str::to_owned)),
                }
            }
            rows.push(cells);
        }
        out.push_str(&tab_table(&rows));
        out
    }
}

#[cfg(test)]
mod tests;
