//! What kube-apiserver's health endpoints, `/healthz`, `/livez` and `/readyz`, check
//! (k8s.io/apiserver `pkg/server/healthz`; answered by `health_endpoints.rs`): each runs its
//! checks in order and answers `ok`,
//! or with `?verbose` a line per check and `<endpoint> check passed`; a failed check makes it
//! `500` with every line and `<endpoint> check failed`, its reason withheld (the endpoints are
//! public). `?exclude=NAME` skips a check; each check also answers alone at
//! `/<endpoint>/NAME`, with its reason.
//!
//! The checks: `ping`; `log`; `etcd`, the storage answering within 2 s (kube-apiserver's
//! `--etcd-healthcheck-timeout`); for `/readyz` also `etcd-readiness`, `informer-sync` (every
//! informer has run its first sync, whatever its outcome) and, last, `shutdown` (failing once the server stops); and
//! between them the server's own checks ([`HealthCheck`]: the post-start hooks of what the
//! embedding server did before serving, named as kube-apiserver names them).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// One of the server's own health checks, beside the generic ones.
#[derive(Clone)]
pub struct HealthCheck {
    name: String,
    probe: Probe,
}

#[derive(Clone)]
enum Probe {
    /// Passes: work finished before the server served.
    Finished,
    /// Asked on every request.
    Asked(Arc<dyn Fn() -> Result<(), String> + Send + Sync>),
}

impl HealthCheck {
    /// The post-start hook `poststarthook/NAME`, finished: the embedding server did its work
    /// before serving.
    pub fn post_start_hook(name: &str) -> Self {
        Self::finished(format!("poststarthook/{name}"))
    }

    /// A check named `name` that passes: work the embedding server finished before serving
    /// (kube-apiserver's `autoregister-completion`, for one).
    pub fn finished(name: impl Into<String>) -> Self {
        HealthCheck {
            name: name.into(),
            probe: Probe::Finished,
        }
    }

    /// A check named `name` that `probe` answers on every request (an error: why it fails).
    pub fn new(
        name: impl Into<String>,
        probe: impl Fn() -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        HealthCheck {
            name: name.into(),
            probe: Probe::Asked(Arc::new(probe)),
        }
    }

    /// The check's name, as the endpoints list it.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn check(&self) -> Result<(), String> {
        match &self.probe {
            Probe::Finished => Ok(()),
            Probe::Asked(probe) => probe(),
        }
    }
}

impl std::fmt::Debug for HealthCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HealthCheck")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The informers of a server, each marked once it has synced.
#[derive(Default)]
pub(super) struct Informers(std::sync::Mutex<Vec<Arc<AtomicBool>>>);

impl Informers {
    /// A new informer's flag, to set when it has synced.
    pub(super) fn register(&self) -> Arc<AtomicBool> {
        let synced = Arc::new(AtomicBool::new(false));
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(synced.clone());
        synced
    }

    pub(super) fn all_synced(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .all(|s| s.load(Ordering::Acquire))
    }
}

/// Which endpoint: `healthz`, `livez` or `readyz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    Healthz,
    Livez,
    Readyz,
}

impl Endpoint {
    pub(super) fn of(segment: &str) -> Option<Self> {
        match segment {
            "healthz" => Some(Endpoint::Healthz),
            "livez" => Some(Endpoint::Livez),
            "readyz" => Some(Endpoint::Readyz),
            _ => None,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
        }
    }
}
