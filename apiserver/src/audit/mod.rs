//! Auditing, as kube-apiserver audits requests (`k8s.io/apiserver/pkg/audit`,
//! `pkg/endpoints/filters/audit.go`): a [`policy::Policy`] gives each request a [`Level`]
//! from who asks and for what; a request audited at all has an `audit.k8s.io/v1` [`Event`]
//! written at each [`Stage`] the policy does not omit (`RequestReceived`, `ResponseStarted`
//! for watches, `ResponseComplete`), with the request's body from `Request` and the
//! response's from `RequestResponse`, and the annotations the layers give it
//! (`authorization.k8s.io/decision` and `reason`; flow control's, from the embedding
//! server). Events go to a [`Sink`]: [`log::LogSink`] writes them as JSON lines to a file
//! it rotates as kube-apiserver's `--audit-log-*` flags say, buffered so that a slow disk
//! never holds a request.
//!
//! ```
//! use apfkit_apiserver::audit::{Auditor, Level, policy::Policy};
//! use apfkit_apiserver::auth::UserInfo;
//! use apfkit_apiserver::authz::Attributes;
//!
//! let (policy, warnings) = Policy::from_bytes(br#"
//! apiVersion: audit.k8s.io/v1
//! kind: Policy
//! rules:
//! - level: None
//!   nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
//! - level: RequestResponse
//!   resources: [{group: flowcontrol.apiserver.k8s.io}]
//! - level: Metadata
//! "#).unwrap();
//! assert!(warnings.is_empty());
//! let health = Attributes {
//!     user: UserInfo::anonymous(),
//!     verb: "get".into(),
//!     path: "/healthz".into(),
//!     ..Attributes::default()
//! };
//! assert_eq!(policy.evaluate(&health).level, Level::None);
//! let change = Attributes {
//!     verb: "update".into(),
//!     resource_request: true,
//!     api_group: "flowcontrol.apiserver.k8s.io".into(),
//!     resource: "flowschemas".into(),
//!     ..health
//! };
//! assert_eq!(policy.evaluate(&change).level, Level::RequestResponse);
//! # let _ = Auditor::new;
//! ```

mod context;
mod event;
pub mod log;
pub mod policy;

use std::sync::Arc;

use prometheus::{IntCounter, IntCounterVec, Opts, Registry};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use context::AuditContext;
pub(crate) use context::{ResponseStatus, begin, failed_authentication};
pub(crate) use event::compact_json;
pub use event::{AuthenticationMetadata, Event, ObjectReference, UserInfo};

/// The request header a client may send its own audit ID in, and the response header that
/// carries the ID every response has (`Audit-ID`).
pub const AUDIT_ID_HEADER: &str = "audit-id";

/// How much of a request an event records (`audit.k8s.io/v1` `Level`), in increasing order.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A rule without a level: only in a policy that failed validation.
    #[default]
    Unset,
    /// Not audited.
    None,
    /// Who asked for what, when, and the answer's status.
    Metadata,
    /// And the request's body.
    Request,
    /// And the response's body.
    RequestResponse,
    /// A level kube-apiserver does not know: only in a policy that failed validation.
    Unknown(String),
}

impl Level {
    /// The level's name in the API.
    pub fn as_str(&self) -> &str {
        match self {
            Level::Unset => "",
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
            Level::Unknown(name) => name,
        }
    }

    fn from_name(name: &str) -> Self {
        match name {
            "" => Level::Unset,
            "None" => Level::None,
            "Metadata" => Level::Metadata,
            "Request" => Level::Request,
            "RequestResponse" => Level::RequestResponse,
            other => Level::Unknown(other.to_owned()),
        }
    }
}

/// The point of a request's handling an event is written at (`audit.k8s.io/v1` `Stage`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Stage {
    /// As soon as the request is received, before anything else handles it.
    RequestReceived,
    /// When a long-running request's (a watch's) response headers are sent.
    ResponseStarted,
    /// When the response is complete.
    ResponseComplete,
    /// When handling the request panicked.
    Panic,
    /// A stage kube-apiserver does not know: only in a policy that failed validation.
    Unknown(String),
}

impl Stage {
    /// The stage's name in the API.
    pub fn as_str(&self) -> &str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
            Stage::Unknown(name) => name,
        }
    }

    fn from_name(name: &str) -> Self {
        match name {
            "RequestReceived" => Stage::RequestReceived,
            "ResponseStarted" => Stage::ResponseStarted,
            "ResponseComplete" => Stage::ResponseComplete,
            "Panic" => Stage::Panic,
            other => Stage::Unknown(other.to_owned()),
        }
    }
}

macro_rules! serde_by_name {
    ($type:ty) => {
        impl Serialize for $type {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = String::deserialize(deserializer)?;
                Ok(<$type>::from_name(&name))
            }
        }
    };
}

serde_by_name!(Level);
serde_by_name!(Stage);

/// Where events go. An implementation must not block: it is called on the request's path.
pub trait Sink: Send + Sync {
    /// Takes one event; `false` when the event was dropped (a full buffer), which the
    /// auditor counts against [`Sink::name`].
    fn process(&self, event: &Event) -> bool;

    /// The sink's name in `apiserver_audit_error_total{plugin}` (kube-apiserver's plugin
    /// names: `buffered` for a buffered log).
    fn name(&self) -> &str;

    /// Events the sink took but failed to write since it was last asked (a full disk),
    /// which the auditor counts in `apiserver_audit_error_total{plugin="log"}`.
    fn take_failed_writes(&self) -> u64 {
        0
    }

    /// Waits until the sink has room for another request's events: a sink that blocks
    /// requests rather than drop their events (kube-apiserver's `--audit-log-mode=blocking`)
    /// holds them here, before they are served; others are ready at once.
    fn room(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::ready(()))
    }

    /// Events dropped since it was last asked because they were too large even truncated,
    /// which the auditor counts in `apiserver_audit_error_total{plugin="truncate"}`.
    fn take_truncation_drops(&self) -> u64 {
        0
    }
}

/// The policy and the sink of a server's auditing, with kube-apiserver's audit metrics
/// (`k8s.io/apiserver/pkg/audit/metrics.go`) when registered.
pub struct Auditor {
    policy: policy::Policy,
    sink: Arc<dyn Sink>,
    metrics: Option<AuditMetrics>,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor")
            .field("policy", &self.policy)
            .field("sink", &self.sink.name())
            .finish_non_exhaustive()
    }
}

/// `apiserver_audit_event_total`, `apiserver_audit_error_total{plugin}` and
/// `apiserver_audit_level_total{level}`.
#[derive(Clone)]
struct AuditMetrics {
    events: IntCounter,
    errors: IntCounterVec,
    levels: IntCounterVec,
}

impl Auditor {
    /// Requests audited as `policy` says, their events given to `sink`.
    pub fn new(policy: policy::Policy, sink: Arc<dyn Sink>) -> Self {
        Auditor {
            policy,
            sink,
            metrics: None,
        }
    }

    /// The auditor counting in `registry`, as kube-apiserver's audit metrics count: every
    /// event written (`apiserver_audit_event_total`), every event a sink dropped
    /// (`apiserver_audit_error_total{plugin}`), every request's level
    /// (`apiserver_audit_level_total{level}`).
    ///
    /// # Errors
    ///
    /// The registry has families of those names already.
    pub fn with_metrics(mut self, registry: &Registry) -> prometheus::Result<Self> {
        let events = IntCounter::with_opts(Opts::new(
            "apiserver_audit_event_total",
            "[ALPHA] Counter of audit events generated and sent to the audit backend.",
        ))?;
        let errors = IntCounterVec::new(
            Opts::new(
                "apiserver_audit_error_total",
                "[ALPHA] Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
            ),
            &["plugin"],
        )?;
        let levels = IntCounterVec::new(
            Opts::new(
                "apiserver_audit_level_total",
                "[ALPHA] Counter of policy levels for audit events (1 per request).",
            ),
            &["level"],
        )?;
        registry.register(Box::new(events.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        registry.register(Box::new(levels.clone()))?;
        self.metrics = Some(AuditMetrics {
            events,
            errors,
            levels,
        });
        Ok(self)
    }

    /// The policy.
    pub fn policy(&self) -> &policy::Policy {
        &self.policy
    }

    /// Waits until the sink has room for another request's events ([`Sink::room`]).
    pub async fn room(&self) {
        self.sink.room().await;
    }

    /// What the policy says of a request, counted in `apiserver_audit_level_total`.
    fn evaluate(&self, attributes: &crate::authz::Attributes) -> policy::RequestAuditConfig {
        let config = self.policy.evaluate(attributes);
        if let Some(metrics) = &self.metrics {
            metrics
                .levels
                .with_label_values(&[config.level.as_str()])
                .inc();
        }
        config
    }

    /// Gives one event to the sink, counting it, and counting it again as an error when the
    /// sink dropped it.
    fn process(&self, event: &Event) {
        let taken = self.sink.process(event);
        if let Some(metrics) = &self.metrics {
            metrics.events.inc();
            if !taken {
                metrics.errors.with_label_values(&[self.sink.name()]).inc();
            }
            let failed = self.sink.take_failed_writes();
            if failed > 0 {
                metrics.errors.with_label_values(&["log"]).inc_by(failed);
            }
            let too_large = self.sink.take_truncation_drops();
            if too_large > 0 {
                metrics
                    .errors
                    .with_label_values(&["truncate"])
                    .inc_by(too_large);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A sink keeping events in memory, for tests.

    use std::sync::Mutex;

    use super::{Event, Sink};

    /// Every event taken, as JSON.
    #[derive(Default)]
    pub(crate) struct Kept(pub(crate) Mutex<Vec<serde_json::Value>>);

    impl Sink for Kept {
        fn process(&self, event: &Event) -> bool {
            let value = serde_json::to_value(event).expect("an event serializes");
            self.0.lock().expect("not poisoned").push(value);
            true
        }

        fn name(&self) -> &str {
            "kept"
        }
    }
}
