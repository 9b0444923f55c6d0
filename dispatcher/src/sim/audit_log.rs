//! kube-apiserver's audit log, one `audit.k8s.io/v1` Event per line (`--audit-log-path`,
//! or `apfkit serve`'s), read into the requests a [`super::replay::Replay`] replays.
//!
//! A request is taken from the event written when it completed (`ResponseComplete`, or
//! `Panic`), a watch from the one written when its response started (`ResponseStarted`:
//! APF holds a watch's seats only until then), or from its completion when the policy
//! left that stage out. Its arrival is `requestReceivedTimestamp`; its service time is the
//! time from there to the event's `stageTimestamp`, less the queue wait the server noted
//! (`apiserver.latency.k8s.io/apf-queue-wait`, which kube-apiserver writes for requests
//! slower than 500 ms, or apfkit's `flowcontrol.apfkit/queue-wait`); its seats are apfkit's
//! `flowcontrol.apfkit/seats`, else 1 (kube-apiserver does not record them). The user is the
//! impersonated one when there is one, as APF classifies after impersonation.
//!
//! Requests that never reach APF are passed over, as kube-apiserver's filter passes them:
//! those that failed authentication (401), and long-running requests other than watches
//! (`WithPriorityAndFairness` in k8s.io/apiserver `pkg/server/filters/priority-and-fairness.go`:
//! "Skip tracking long running non-watch requests"; kube-apiserver's long-running check is
//! the verbs `watch` and `proxy` and the subresources `attach`, `exec`, `proxy`, `log` and
//! `portforward`).
//!
//! ```
//! use apfkit_dispatcher::sim::audit_log::{AuditLog, Line};
//!
//! let line = br#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata",
//!   "auditID":"a1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods",
//!   "verb":"list","user":{"username":"alice","groups":["system:authenticated"]},
//!   "objectRef":{"resource":"pods","namespace":"default","apiVersion":"v1"},
//!   "responseStatus":{"code":200},
//!   "requestReceivedTimestamp":"2026-11-28T10:00:00.000000Z",
//!   "stageTimestamp":"2026-11-28T10:00:00.250000Z"}"#;
//! let Line::Request(request) = AuditLog::default().read(line) else { panic!() };
//! assert_eq!((request.user.as_str(), request.verb.as_str()), ("alice", "list"));
//! assert_eq!(request.service.as_millis(), 250);
//! ```

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use rustc_hash::FxHashMap;
use serde::Deserialize;

use crate::sim::replay::TracedRequest;

/// The most seats a recorded request is replayed with (as a workload's `seats`).
const MAX_SEATS: u64 = 1_000;

/// The most watches remembered between their `ResponseStarted` and `ResponseComplete`.
const MAX_OPEN_WATCHES: usize = 100_000;

/// What one line of an audit log is to a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A request to replay.
    Request(Box<TracedRequest>),
    /// A line that is not replayed, on purpose.
    Passed(Passed),
    /// A line that cannot be used, and why.
    Unusable(String),
}

/// Why a line is passed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passed {
    /// An empty line.
    Blank,
    /// Another stage of a request taken from another line (`RequestReceived`, a watch's
    /// completion).
    OtherStage,
    /// It failed authentication, before flow control.
    Unauthenticated,
    /// A long-running request other than a watch, which flow control does not track.
    LongRunning,
}

/// Reads an audit log's lines in order; it remembers the watches whose response started
/// (by audit ID, how many times), so that their completions are not taken again.
#[derive(Debug, Default)]
pub struct AuditLog {
    open_watches: FxHashMap<String, u32>,
    /// Some watch starts were not remembered (past [`MAX_OPEN_WATCHES`]): a watch's
    /// completion is then never taken.
    forgot_watches: bool,
}

/// The fields of an Event a replay reads (audit.k8s.io/v1, k8s.io/apiserver
/// `pkg/apis/audit/v1/types.go`); the others are skipped.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    kind: Option<String>,
    api_version: Option<String>,
    #[serde(rename = "auditID")]
    audit_id: String,
    stage: String,
    #[serde(rename = "requestURI", default)]
    request_uri: String,
    verb: String,
    user: UserInfo,
    impersonated_user: Option<UserInfo>,
    object_ref: Option<ObjectReference>,
    response_status: Option<ResponseStatus>,
    request_received_timestamp: String,
    stage_timestamp: String,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct UserInfo {
    #[serde(default)]
    username: String,
    #[serde(default)]
    groups: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ObjectReference {
    #[serde(default)]
    resource: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    api_group: String,
    #[serde(default)]
    subresource: String,
}

#[derive(Deserialize)]
struct ResponseStatus {
    code: Option<i64>,
}

/// The annotations that carry the queue wait: kube-apiserver's latency trackers
/// (k8s.io/apiserver `pkg/endpoints/request/webhook_duration.go`,
/// `AuditAnnotationsFromLatencyTrackers`) and apfkit's.
const QUEUE_WAIT_ANNOTATIONS: [&str; 2] = [
    "apiserver.latency.k8s.io/apf-queue-wait",
    "flowcontrol.apfkit/queue-wait",
];

/// apfkit's annotation of the seats a request held.
const SEATS_ANNOTATION: &str = "flowcontrol.apfkit/seats";

impl AuditLog {
    /// What `line` (one JSON object, without its newline) is to a replay.
    pub fn read(&mut self, line: &[u8]) -> Line {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Line::Passed(Passed::Blank);
        }
        let event: Event = match serde_json::from_slice(line) {
            Ok(event) => event,
            Err(e) => return Line::Unusable(format!("not an audit event: {e}")),
        };
        match self.request(event) {
            Ok(line) => line,
            Err(reason) => Line::Unusable(reason),
        }
    }

    fn request(&mut self, event: Event) -> Result<Line, String> {
        if let Some(kind) = event.kind.as_deref().filter(|kind| *kind != "Event") {
            return Err(format!("kind {kind:?} is not Event"));
        }
        if let Some(version) = event
            .api_version
            .as_deref()
            .filter(|version| *version != "audit.k8s.io/v1")
        {
            return Err(format!("apiVersion {version:?} is not audit.k8s.io/v1"));
        }
        let code = event.response_status.as_ref().and_then(|s| s.code);
        let watch = event.verb == "watch";
        match event.stage.as_str() {
            "RequestReceived" => return Ok(Line::Passed(Passed::OtherStage)),
            _ if code == Some(401) => return Ok(Line::Passed(Passed::Unauthenticated)),
            "ResponseStarted" if watch => {
                if let Some(count) = self.open_watches.get_mut(&event.audit_id) {
                    *count += 1;
                } else if self.open_watches.len() < MAX_OPEN_WATCHES {
                    self.open_watches.insert(event.audit_id.clone(), 1);
                } else {
                    self.forgot_watches = true;
                }
            }
            "ResponseStarted" => return Ok(Line::Passed(Passed::OtherStage)),
            "ResponseComplete" | "Panic" if watch => {
                if let Some(count) = self.open_watches.get_mut(&event.audit_id) {
                    *count -= 1;
                    if *count == 0 {
                        self.open_watches.remove(&event.audit_id);
                    }
                    return Ok(Line::Passed(Passed::OtherStage));
                }
                if self.forgot_watches {
                    return Ok(Line::Passed(Passed::OtherStage));
                }
            }
            "ResponseComplete" | "Panic" => {}
            other => return Err(format!("stage {other:?} is not an audit stage")),
        }
        let object = event.object_ref;
        let is_resource_request = object.as_ref().is_some_and(|o| !o.resource.is_empty());
        let subresource = object
            .as_ref()
            .map(|o| o.subresource.as_str())
            .unwrap_or("");
        if is_resource_request
            && (event.verb == "proxy"
                || matches!(
                    subresource,
                    "attach" | "exec" | "proxy" | "log" | "portforward"
                ))
        {
            return Ok(Line::Passed(Passed::LongRunning));
        }
        let received = timestamp(
            "requestReceivedTimestamp",
            &event.request_received_timestamp,
        )?;
        let logged = timestamp("stageTimestamp", &event.stage_timestamp)?;
        let queue_wait = QUEUE_WAIT_ANNOTATIONS
            .iter()
            .find_map(|key| event.annotations.get(*key))
            .map(|text| {
                apfkit_runtime::go_duration::parse_go_duration(text)
                    .map(|nanos| Duration::from_nanos(nanos.max(0).unsigned_abs()))
                    .map_err(|e| format!("annotation queue wait {text:?}: {e}"))
            })
            .transpose()?
            .unwrap_or_default();
        let seats = match event.annotations.get(SEATS_ANNOTATION) {
            Some(text) => text
                .parse::<u64>()
                .map_err(|e| format!("annotation {SEATS_ANNOTATION} {text:?}: {e}"))?
                .clamp(1, MAX_SEATS),
            None => 1,
        };
        let user = event.impersonated_user.unwrap_or(event.user);
        let object = object.unwrap_or_default();
        let path = if is_resource_request {
            String::new()
        } else {
            event
                .request_uri
                .split(['?', '#'])
                .next()
                .unwrap_or_default()
                .to_owned()
        };
        Ok(Line::Request(Box::new(TracedRequest {
            received,
            logged,
            user: user.username,
            groups: user.groups,
            verb: event.verb,
            is_resource_request,
            api_group: object.api_group,
            resource: object.resource,
            subresource: object.subresource,
            namespace: object.namespace,
            name: object.name,
            path,
            seats,
            service: logged.saturating_sub(received).saturating_sub(queue_wait),
        })))
    }
}

/// A `MicroTime` (RFC 3339 in UTC, as Kubernetes writes it) as time since the Unix epoch.
fn timestamp(field: &str, text: &str) -> Result<Duration, String> {
    let time = humantime::parse_rfc3339(text).map_err(|e| format!("{field} {text:?}: {e}"))?;
    time.duration_since(UNIX_EPOCH)
        .map_err(|_| format!("{field} {text:?} is before 1970"))
}

#[cfg(test)]
mod tests;
