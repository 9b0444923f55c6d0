//! Workload files for the mixed simulation: streams of requests described by who sends them,
//! what they ask for and how often. The format is documented in `docs/workload.md`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::classify::Request;

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
#[error("streams[{index}]: {message}")]
pub struct WorkloadError {
    /// Index of the stream.
    pub index: usize,
    /// What is wrong.
    pub message: String,
}

impl Workload {
    /// The workload used when none is given: a cluster's usual callers plus one noisy user.
    pub fn embedded_default() -> Workload {
        serde_saphyr::from_str(DEFAULT_WORKLOAD).expect("the embedded workload parses")
    }

    /// Checks what serde cannot: each stream is open or closed loop, with sane numbers.
    pub fn check(&self) -> Result<(), WorkloadError> {
        for (index, stream) in self.streams.iter().enumerate() {
            let error = |message: &str| {
                Err(WorkloadError {
                    index,
                    message: message.to_owned(),
                })
            };
            match (stream.rate, stream.clients) {
                (Some(_), Some(_)) => return error("set either rate or clients, not both"),
                (None, None) => return error("set rate (open loop) or clients (closed loop)"),
                (Some(rate), None) if !(rate.is_finite() && rate > 0.0) => {
                    return error("rate must be a positive number");
                }
                (None, Some(0)) => return error("clients must be at least 1"),
                _ => {}
            }
            if stream.users == 0 {
                return error("users must be at least 1");
            }
            if stream.seats == 0 {
                return error("seats must be at least 1");
            }
            if stream.resource.is_empty() == stream.path.is_empty() {
                return error("set exactly one of resource and path");
            }
        }
        Ok(())
    }
}

/// The embedded default workload (YAML).
pub const DEFAULT_WORKLOAD: &str = include_str!("default-workload.yaml");
