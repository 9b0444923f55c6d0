//! Workload files for the mixed simulation: streams of requests described by who sends them,
//! what they ask for and how often. The format is documented in `docs/workload.md`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::classify::Request;
use crate::release::Release;

/// A workload: request streams over a simulated duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workload {
    /// Simulated time during which requests arrive (the run then drains), e.g. `60s`.
    #[serde(with = "humantime_serde")]
    pub duration: Duration,
    /// How long a request may wait in a queue (kube-apiserver: a quarter of the request
    /// timeout, 15 s by default).
    #[serde(default = "default_wait_limit", with = "humantime_serde")]
    pub wait_limit: Duration,
    /// The request streams.
    pub streams: Vec<Stream>,
    /// The Kubernetes release whose work estimator sizes the streams that give `objects`
    /// (`apfkit simulate --kubernetes-version`); not part of the file.
    #[serde(skip)]
    pub release: Release,
}

fn default_wait_limit() -> Duration {
    Duration::from_secs(15)
}

/// Requests of one kind from one set of users.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Stream {
    /// A name for reports.
    pub name: String,
    /// User name; with `users > 1`, requests rotate over `<user>-0` … `<user>-(users-1)`.
    pub user: String,
    /// Distinct users the stream rotates over.
    #[serde(default = "one")]
    pub users: u32,
    /// The user's groups.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Verb (`get`, `list`, `create`, …; for non-resource requests the lower-case HTTP method).
    pub verb: String,
    /// Resource, for resource requests.
    #[serde(default)]
    pub resource: String,
    /// Subresource.
    #[serde(default)]
    pub subresource: String,
    /// API group (empty: core).
    #[serde(default)]
    pub api_group: String,
    /// Namespace.
    #[serde(default)]
    pub namespace: String,
    /// Object name.
    #[serde(default)]
    pub object_name: String,
    /// URL path of a non-resource request (set this instead of `resource`).
    #[serde(default)]
    pub path: String,
    /// Seats while executing.
    #[serde(default = "one_seat")]
    pub seats: u64,
    /// Seats held after execution, for `additionalLatency`.
    #[serde(default)]
    pub final_seats: u64,
    /// How long final seats linger.
    #[serde(default, with = "humantime_serde")]
    pub additional_latency: Duration,
    /// How long each request executes.
    #[serde(with = "humantime_serde")]
    pub service: Duration,
    /// Open loop: requests per second, with exponentially distributed gaps.
    #[serde(default)]
    pub rate: Option<f64>,
    /// Closed loop: clients that each send a request, wait for its answer, think, repeat.
    #[serde(default)]
    pub clients: Option<u32>,
    /// Closed loop: pause between an answer and the next request.
    #[serde(default, with = "humantime_serde")]
    pub think: Duration,
    /// The stored objects a `list` (or a `watch` that is sent them first) reads: when set, the
    /// stream's seats are kube-apiserver's work estimate of it, by the workload's release and
    /// with its level's seat cap, instead of `seats`.
    #[serde(default)]
    pub objects: Option<i64>,
    /// The objects' average size in bytes, which releases that estimate by size read (1.34
    /// and later); unknown when absent.
    #[serde(default)]
    pub object_bytes: Option<i64>,
    /// The request's URL query (`limit=500`, `resourceVersion=0`), which the estimator reads.
    #[serde(default)]
    pub query: String,
}

fn one() -> u32 {
    1
}

fn one_seat() -> u64 {
    1
}

impl Stream {
    /// The request this stream sends as `user` with `groups`.
    pub fn request<'a>(&'a self, user: &'a str, groups: &'a [&'a str]) -> Request<'a> {
        Request {
            user,
            groups,
            verb: &self.verb,
            is_resource_request: !self.resource.is_empty(),
            api_group: &self.api_group,
            api_version: "",
            resource: &self.resource,
            subresource: &self.subresource,
            namespace: &self.namespace,
            name: &self.object_name,
            path: &self.path,
        }
    }
}

/// Why a workload cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct WorkloadError {
    /// The field: `streams[2].rate`, `streams[2]`, `duration`, or `streams` for the whole set.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl WorkloadError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        WorkloadError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Bounds that a workload must stay within, so that every simulation ends in bounded time and
/// memory: a simulated request costs about a microsecond and a few hundred bytes at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Requests the streams may send: the expected count for open-loop streams, the most a
    /// closed-loop stream can send for closed-loop ones (10,000,000 by default).
    pub max_requests: u64,
    /// The longest `duration`, `waitLimit`, `service`, `think` and `additionalLatency`
    /// (24 hours by default).
    pub max_time: Duration,
    /// Users over all streams (100,000 by default).
    pub max_users: u64,
    /// Closed-loop clients over all streams (100,000 by default).
    pub max_clients: u64,
    /// Streams (1,000 by default); each keeps its own wait histogram of up to about 100 KiB.
    pub max_streams: usize,
    /// Seats and final seats of one request (1,000 by default; kube-apiserver's work estimator
    /// gives at most 10).
    pub max_seats: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_requests: 10_000_000,
            max_time: Duration::from_secs(24 * 3600),
            max_users: 100_000,
            max_clients: 100_000,
            max_streams: 1_000,
            max_seats: 1_000,
        }
    }
}

impl Workload {
    /// The workload used when none is given: a cluster's usual callers plus one noisy user.
    pub fn embedded_default() -> Workload {
        serde_saphyr::from_str(DEFAULT_WORKLOAD).expect("the embedded workload parses")
    }

    /// Checks what serde cannot, with the default [`Limits`].
    pub fn check(&self) -> Result<(), WorkloadError> {
        self.check_within(&Limits::default())
    }

    /// Checks what serde cannot: each stream is open or closed loop, with sane numbers, and the
    /// whole workload stays within `limits`.
    pub fn check_within(&self, limits: &Limits) -> Result<(), WorkloadError> {
        let too_long = |field: String, value: Duration| {
            (value > limits.max_time).then(|| {
                WorkloadError::new(
                    field,
                    format!(
                        "{} is longer than the limit of {}",
                        humantime::format_duration(value),
                        humantime::format_duration(limits.max_time)
                    ),
                )
            })
        };
        for (field, value) in [("duration", self.duration), ("waitLimit", self.wait_limit)] {
            if let Some(error) = too_long(field.to_owned(), value) {
                return Err(error);
            }
        }
        if self.streams.len() > limits.max_streams {
            return Err(WorkloadError::new(
                "streams",
                format!(
                    "{} streams, more than the limit of {}",
                    self.streams.len(),
                    limits.max_streams
                ),
            ));
        }
        let (mut requests, mut users, mut clients) = (0f64, 0u64, 0u64);
        for (index, stream) in self.streams.iter().enumerate() {
            let at = |field: &str| format!("streams[{index}]{field}");
            let error = |field: &str, message: &str| Err(WorkloadError::new(at(field), message));
            match (stream.rate, stream.clients) {
                (Some(_), Some(_)) => return error("", "set either rate or clients, not both"),
                (None, None) => return error("", "set rate (open loop) or clients (closed loop)"),
                (Some(rate), None) if !(rate.is_finite() && rate > 0.0) => {
                    return error(".rate", "rate must be a positive number");
                }
                (None, Some(0)) => return error(".clients", "clients must be at least 1"),
                _ => {}
            }
            if stream.users == 0 {
                return error(".users", "users must be at least 1");
            }
            if stream.seats == 0 {
                return error(".seats", "seats must be at least 1");
            }
            if stream.objects.is_some() && stream.seats != 1 {
                return error(
                    ".objects",
                    "objects has the seats estimated: set objects or seats, not both",
                );
            }
            if stream.objects.is_some_and(|n| n < 0) {
                return error(".objects", "objects must not be negative");
            }
            if stream.object_bytes.is_some_and(|n| n < 0) {
                return error(".objectBytes", "objectBytes must not be negative");
            }
            for (field, seats) in [
                (".seats", stream.seats),
                (".finalSeats", stream.final_seats),
            ] {
                if seats > limits.max_seats {
                    return error(
                        field,
                        &format!("{seats} is more than the limit of {}", limits.max_seats),
                    );
                }
            }
            if stream.resource.is_empty() == stream.path.is_empty() {
                return error("", "set exactly one of resource and path");
            }
            for (field, value) in [
                (".service", stream.service),
                (".think", stream.think),
                (".additionalLatency", stream.additional_latency),
            ] {
                if let Some(error) = too_long(at(field), value) {
                    return Err(error);
                }
            }
            users += u64::from(stream.users);
            let seconds = self.duration.as_secs_f64();
            match (stream.rate, stream.clients) {
                (Some(rate), _) => requests += rate * seconds,
                (_, Some(count)) => {
                    clients += u64::from(count);
                    // An executed request takes service + think; a rejected one (or one that
                    // timed out) waits at least the 1 s Retry-After before the next.
                    let executed = stream.service + stream.think;
                    let rejected = stream.think.max(Duration::from_secs(1));
                    let cycle = executed.min(rejected);
                    if cycle.is_zero() {
                        return error(
                            "",
                            "a closed-loop stream needs a service or think time above 0s, \
                             or its clients would resend at the same instant forever",
                        );
                    }
                    requests += f64::from(count) * ((seconds / cycle.as_secs_f64()).floor() + 1.0);
                }
                (None, None) => unreachable!("checked above"),
            }
        }
        let totals = [
            ("users", users, limits.max_users),
            ("clients", clients, limits.max_clients),
        ];
        for (what, count, limit) in totals {
            if count > limit {
                return Err(WorkloadError::new(
                    "streams",
                    format!("{count} {what} in all, more than the limit of {limit}"),
                ));
            }
        }
        if requests > limits.max_requests as f64 {
            return Err(WorkloadError::new(
                "streams",
                format!(
                    "the streams would send up to {} requests, more than the limit of {}",
                    if requests < 1e15 {
                        format!("{requests:.0}")
                    } else {
                        format!("{requests:.2e}")
                    },
                    limits.max_requests
                ),
            ));
        }
        Ok(())
    }
}

/// The embedded default workload (YAML).
pub const DEFAULT_WORKLOAD: &str = include_str!("default-workload.yaml");
