//! Authorization delegated to another server, as an extension API server behind
//! kube-apiserver delegates it (k8s.io/apiserver `pkg/server/options/authorization.go`,
//! `DelegatingAuthorizationOptions`): members of `system:masters` allowed, health paths
//! allowed ([`AlwaysAllowPaths`]), and every other request asked of the other server as a
//! `SubjectAccessReview` ([`SubjectAccessReviews`], the webhook authorizer of
//! `plugin/pkg/authorizer/webhook`), its answers remembered for ten seconds.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    SubjectAccessReviewStatus,
};

use super::{Attributes, Authorizer, Deciding, Decision, PrivilegedGroups, Union, Verdict};

/// How authorization is delegated (kube's `--authorization-*` flags of an extension server,
/// with their defaults).
#[derive(Debug, Clone)]
pub struct Delegation {
    /// The kubeconfig of the server asked (`--authorization-kubeconfig`), with the
    /// credentials of a user who may create `subjectaccessreviews` (kube's
    /// `system:auth-delegator`).
    pub kubeconfig: PathBuf,
    /// How long an allowing answer is remembered
    /// (`--authorization-webhook-cache-authorized-ttl`, 10 s).
    pub allowed_ttl: Duration,
    /// How long a refusing answer is remembered
    /// (`--authorization-webhook-cache-unauthorized-ttl`, 10 s).
    pub denied_ttl: Duration,
    /// Paths allowed without asking (`--authorization-always-allow-paths`: `/healthz`,
    /// `/readyz`, `/livez`); a trailing `*` matches a prefix.
    pub always_allow_paths: Vec<String>,
    /// Groups whose members are allowed everything without asking (`system:masters`).
    pub always_allow_groups: Vec<String>,
    /// How long one review may take (10 s).
    pub timeout: Duration,
    /// How failed reviews are tried again.
    pub retry: Backoff,
}

impl Delegation {
    /// Delegation to the server of `kubeconfig`, with kube's defaults.
    pub fn new(kubeconfig: impl Into<PathBuf>) -> Self {
        Delegation {
            kubeconfig: kubeconfig.into(),
            allowed_ttl: Duration::from_secs(10),
            denied_ttl: Duration::from_secs(10),
            always_allow_paths: ["/healthz", "/readyz", "/livez"]
                .map(str::to_owned)
                .to_vec(),
            always_allow_groups: vec![crate::auth::MASTERS.to_owned()],
            timeout: Duration::from_secs(10),
            retry: Backoff::default(),
        }
    }

    /// The authorizer (`toAuthorizer`): the groups, then the paths, then the reviews.
    ///
    /// # Errors
    ///
    /// A path with a `*` before its end, or a kubeconfig that does not read or has no
    /// usable cluster.
    pub async fn authorizer(&self) -> Result<Union, DelegationError> {
        let mut union: Vec<Arc<dyn Authorizer>> = Vec::new();
        if !self.always_allow_groups.is_empty() {
            union.push(Arc::new(PrivilegedGroups(self.always_allow_groups.clone())));
        }
        if !self.always_allow_paths.is_empty() {
            union.push(Arc::new(AlwaysAllowPaths::new(&self.always_allow_paths)?));
        }
        let config = config(&self.kubeconfig).await?;
        let reviews = SubjectAccessReviews::new(config, self.timeout)
            .map_err(|error| DelegationError::kubeconfig(&self.kubeconfig, error.to_string()))?;
        union.push(Arc::new(
            reviews
                .with_ttls(self.allowed_ttl, self.denied_ttl)
                .with_retry(self.retry),
        ));
        Ok(Union(union))
    }
}

/// Why delegated authorization could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DelegationError {
    /// A path of `--authorization-always-allow-paths` with a `*` before its end.
    #[error("only trailing * allowed in {0:?}")]
    Path(String),
    /// The kubeconfig could not be read or used.
    #[error("failed to get delegated authorization kubeconfig {}: {message}", path.display())]
    Kubeconfig {
        /// The kubeconfig.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
}

impl DelegationError {
    fn kubeconfig(path: &Path, message: String) -> Self {
        DelegationError::Kubeconfig {
            path: path.to_owned(),
            message,
        }
    }
}

/// The client configuration of the kubeconfig at `path`, its current context.
async fn config(path: &Path) -> Result<kube::Config, DelegationError> {
    let failed = |error: String| DelegationError::kubeconfig(path, error);
    let kubeconfig = crate::kubeconfig::read(path).map_err(failed)?;
    let options = kube::config::KubeConfigOptions::default();
    kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|error| failed(error.to_string()))
}

/// Allows requests for some paths (not resources) whatever the user, and has no opinion on
/// the rest (`path.NewAuthorizer`): a path matches whole, or by prefix when it ends in `*`;
/// a leading `/` is optional.
#[derive(Debug, Clone, Default)]
pub struct AlwaysAllowPaths {
    paths: Vec<String>,
    prefixes: Vec<String>,
}

impl AlwaysAllowPaths {
    /// The authorizer of `paths`.
    ///
    /// # Errors
    ///
    /// A path with a `*` anywhere but at its end.
    pub fn new(paths: &[String]) -> Result<Self, DelegationError> {
        let mut allowed = AlwaysAllowPaths::default();
        for path in paths {
            let path = path.strip_prefix('/').unwrap_or(path);
            match path.strip_suffix('*') {
                _ if path.is_empty() => allowed.paths.push(String::new()),
                _ if path[..path.len() - 1].contains('*') => {
                    return Err(DelegationError::Path(path.to_owned()));
                }
                Some(prefix) => allowed.prefixes.push(prefix.to_owned()),
                None => allowed.paths.push(path.to_owned()),
            }
        }
        Ok(allowed)
    }

    fn decide(&self, attributes: &Attributes) -> Decision {
        if attributes.resource_request {
            return Decision::NoOpinion;
        }
        let path = attributes
            .path
            .strip_prefix('/')
            .unwrap_or(&attributes.path);
        if self.paths.iter().any(|p| p == path)
            || self.prefixes.iter().any(|p| path.starts_with(p.as_str()))
        {
            Decision::Allow
        } else {
            Decision::NoOpinion
        }
    }
}

impl Authorizer for AlwaysAllowPaths {
    fn authorize<'a>(&'a self, attributes: &'a Attributes) -> Deciding<'a> {
        Verdict::new(self.decide(attributes)).ready()
    }
}

/// How a failed review is tried again (`wait.Backoff`; kube's
/// `DefaultAuthWebhookRetryBackoff`: 500 ms, times 1.5 each time, 20 % jitter, 5 tries).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The first wait.
    pub duration: Duration,
    /// What each wait is multiplied by for the next.
    pub factor: f64,
    /// Up to this fraction of a wait is added to it, at random.
    pub jitter: f64,
    /// How many tries in all.
    pub steps: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            duration: Duration::from_millis(500),
            factor: 1.5,
            jitter: 0.2,
            steps: 5,
        }
    }
}

/// kube's `maxControlledAttrCacheSize`: answers to requests whose attributes are this long
/// or longer are not remembered.
const MAX_CACHED_ATTRIBUTES: usize = 10_000;
/// Answers remembered at most (`cache.NewLRUExpireCache(8192)`).
const CACHE_ENTRIES: usize = 8192;
/// The most of a review's answer read.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Asks another server (kube-apiserver, `apfkit serve`) whether a request may go on, with a
/// `SubjectAccessReview` of its user and attributes (the webhook authorizer of an extension
/// server). Allowed when the review allows, denied when it denies, no opinion otherwise;
/// answers remembered per review for their TTL; a review that fails is tried again when the
/// failure is one that passes (a 500, 504 or 429, a `Retry-After`, a reset connection), and
/// when it still fails the verdict is no opinion with the error, which the authorization
/// layer answers with a 500.
pub struct SubjectAccessReviews {
    client: kube::Client,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    timeout: Duration,
    retry: Backoff,
    cache: Mutex<lru::LruCache<String, (SubjectAccessReviewStatus, Instant)>>,
}

impl std::fmt::Debug for SubjectAccessReviews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubjectAccessReviews")
            .field("allowed_ttl", &self.allowed_ttl)
            .field("denied_ttl", &self.denied_ttl)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl SubjectAccessReviews {
    /// Reviews sent to the server of `config`, each given at most `timeout` (kube's 10 s),
    /// answers kept 10 s, failures tried again as [`Backoff::default`] says. The client made
    /// of `config` does not try again on its own (kube-rs's default retry is turned off: the
    /// backoff here is kube's).
    ///
    /// # Errors
    ///
    /// A client could not be made of `config` (its TLS settings).
    pub fn new(mut config: kube::Config, timeout: Duration) -> Result<Self, kube::Error> {
        config.default_retry = false;
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        config.write_timeout = Some(timeout);
        Ok(SubjectAccessReviews {
            client: kube::Client::try_from(config)?,
            allowed_ttl: Duration::from_secs(10),
            denied_ttl: Duration::from_secs(10),
            timeout,
            retry: Backoff::default(),
            cache: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(CACHE_ENTRIES).expect("not zero"),
            )),
        })
    }

    /// Allowing answers kept `allowed`, refusing ones `denied` (zero: not kept).
    #[must_use]
    pub fn with_ttls(mut self, allowed: Duration, denied: Duration) -> Self {
        self.allowed_ttl = allowed;
        self.denied_ttl = denied;
        self
    }

    /// Failed reviews tried again as `retry` says.
    #[must_use]
    pub fn with_retry(mut self, retry: Backoff) -> Self {
        self.retry = retry;
        self
    }

    async fn decide(&self, attributes: &Attributes) -> Verdict {
        let spec = spec_of(attributes);
        let key = serde_json::to_string(&spec).unwrap_or_default();
        let status = match self.remembered(&key) {
            Some(status) => status,
            None => match self.review(spec).await {
                Ok(status) => {
                    if cacheable(attributes) {
                        self.remember(key, &status);
                    }
                    status
                }
                Err(error) => {
                    tracing::warn!(%error, "Failed to make webhook authorizer request");
                    return Verdict {
                        error: Some(error),
                        ..Verdict::new(Decision::NoOpinion)
                    };
                }
            },
        };
        let reason = status.reason.clone().unwrap_or_default();
        let denied = status.denied == Some(true);
        match (status.allowed, denied) {
            (true, true) => Verdict {
                error: Some(
                    "webhook subject access review returned both allow and deny response"
                        .to_owned(),
                ),
                ..Verdict::because(Decision::Deny, &reason)
            },
            (_, true) => Verdict::because(Decision::Deny, &reason),
            (true, false) => Verdict::because(Decision::Allow, &reason),
            (false, false) => Verdict::because(Decision::NoOpinion, &reason),
        }
    }

    fn remembered(&self, key: &str) -> Option<SubjectAccessReviewStatus> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        match cache.get(key) {
            Some((status, until)) if Instant::now() < *until => Some(status.clone()),
            Some(_) => {
                cache.pop(key);
                None
            }
            None => None,
        }
    }

    fn remember(&self, key: String, status: &SubjectAccessReviewStatus) {
        let ttl = if status.allowed {
            self.allowed_ttl
        } else {
            self.denied_ttl
        };
        if ttl.is_zero() {
            return;
        }
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.put(key, (status.clone(), Instant::now() + ttl));
    }

    /// The review's status, tried again while the failure is one that passes
    /// (`webhook.WithExponentialBackoff` with `DefaultShouldRetry`).
    async fn review(
        &self,
        spec: SubjectAccessReviewSpec,
    ) -> Result<SubjectAccessReviewStatus, String> {
        let body = serde_json::to_vec(&SubjectAccessReview {
            metadata: Default::default(),
            spec,
            status: None,
        })
        .map_err(|error| error.to_string())?;
        let mut wait = self.retry.duration;
        let mut tries = 0;
        loop {
            tries += 1;
            match self.review_once(&body).await {
                Ok(status) => return Ok(status),
                Err(Failure { message, passes }) if !passes || tries >= self.retry.steps => {
                    return Err(message);
                }
                Err(_) => {
                    let jitter = wait.mul_f64(self.retry.jitter * fastrand::f64());
                    tokio::time::sleep(wait + jitter).await;
                    wait = wait.mul_f64(self.retry.factor);
                }
            }
        }
    }

    async fn review_once(&self, body: &[u8]) -> Result<SubjectAccessReviewStatus, Failure> {
        let request = http::Request::post("/apis/authorization.k8s.io/v1/subjectaccessreviews")
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(kube::client::Body::from(body.to_vec()))
            .map_err(|error| Failure::fatal(error.to_string()))?;
        let answer = tokio::time::timeout(self.timeout, async {
            let response = self
                .client
                .send(request)
                .await
                .map_err(Failure::of_client)?;
            let (parts, body) = response.into_parts();
            let bytes = http_body_util::Limited::new(body, MAX_ANSWER_BYTES);
            let bytes = http_body_util::BodyExt::collect(bytes)
                .await
                .map_err(|error| Failure::fatal(error.to_string()))?
                .to_bytes();
            Ok::<_, Failure>((parts, bytes))
        })
        .await
        .map_err(|_| Failure {
            message: format!(
                "Post \"/apis/authorization.k8s.io/v1/subjectaccessreviews\": context deadline \
                 exceeded (Client.Timeout exceeded after {:?})",
                self.timeout
            ),
            passes: true,
        })??;
        let (parts, bytes) = answer;
        if parts.status.is_success() {
            // Its status is all that is read (a webhook may leave out the rest, `kind`
            // too, as upstream's test server does).
            let review: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|error| Failure::fatal(format!("the review's answer: {error}")))?;
            let status = review.get("status").cloned().unwrap_or_default();
            return serde_json::from_value(status)
                .map_err(|error| Failure::fatal(format!("the review's status: {error}")));
        }
        Err(Failure::of_status(parts.status, &parts.headers, &bytes))
    }
}

impl Authorizer for SubjectAccessReviews {
    fn authorize<'a>(&'a self, attributes: &'a Attributes) -> Deciding<'a> {
        Box::pin(self.decide(attributes))
    }
}

/// A review that failed, and whether trying again may help.
struct Failure {
    message: String,
    passes: bool,
}

impl Failure {
    fn fatal(message: String) -> Self {
        Failure {
            message,
            passes: false,
        }
    }

    /// A request that got no answer: tried again when the connection was reset
    /// (`utilnet.IsConnectionReset`).
    fn of_client(error: kube::Error) -> Self {
        let message = error.to_string();
        let mut source: Option<&dyn std::error::Error> = Some(&error);
        let mut reset = false;
        while let Some(error) = source {
            if let Some(io) = error.downcast_ref::<std::io::Error>() {
                reset |= io.kind() == std::io::ErrorKind::ConnectionReset;
            }
            source = error.source();
        }
        Failure {
            message,
            passes: reset,
        }
    }

    /// An answer other than success: the `Status`'s message, or client-go's words for a
    /// status without one; tried again for internal errors, timeouts, 429s and answers
    /// asking for a retry.
    fn of_status(code: http::StatusCode, headers: &http::HeaderMap, body: &[u8]) -> Self {
        let status: Option<serde_json::Value> = serde_json::from_slice(body)
            .ok()
            .filter(|v: &serde_json::Value| v["kind"] == "Status");
        let text = |field: &str| {
            status
                .as_ref()
                .and_then(|s| s[field].as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let (message, reason) = (text("message"), text("reason"));
        let message = if message.is_empty() {
            format!(
                "the server responded with the status code {} but did not return more \
                 information (post subjectaccessreviews.authorization.k8s.io)",
                code.as_u16()
            )
        } else {
            message
        };
        let retry_after = (code == http::StatusCode::TOO_MANY_REQUESTS || code.is_server_error())
            && headers.contains_key(http::header::RETRY_AFTER);
        let passes = retry_after
            || matches!(code.as_u16(), 429 | 500 | 504)
            || matches!(
                reason.as_str(),
                "InternalError" | "Timeout" | "TooManyRequests"
            );
        Failure { message, passes }
    }
}

/// Whether an answer on `attributes` may be remembered (`shouldCache`).
fn cacheable(attributes: &Attributes) -> bool {
    let size = [
        &attributes.namespace,
        &attributes.verb,
        &attributes.api_group,
        &attributes.api_version,
        &attributes.resource,
        &attributes.subresource,
        &attributes.name,
        &attributes.path,
    ]
    .iter()
    .map(|s| s.len())
    .sum::<usize>();
    size < MAX_CACHED_ATTRIBUTES
}

/// The review of `attributes` (`WebhookAuthorizer.Authorize`): the user, and the resource or
/// the path; what is empty left out, as Go's `omitempty` leaves it.
fn spec_of(attributes: &Attributes) -> SubjectAccessReviewSpec {
    let given = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let user = &attributes.user;
    let mut spec = SubjectAccessReviewSpec {
        user: given(&user.name),
        uid: given(&user.uid),
        groups: (!user.groups.is_empty()).then(|| user.groups.clone()),
        extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
        ..SubjectAccessReviewSpec::default()
    };
    if attributes.resource_request {
        spec.resource_attributes = Some(ResourceAttributes {
            namespace: given(&attributes.namespace),
            verb: given(&attributes.verb),
            group: given(&attributes.api_group),
            version: given(&attributes.api_version),
            resource: given(&attributes.resource),
            subresource: given(&attributes.subresource),
            name: given(&attributes.name),
            ..ResourceAttributes::default()
        });
    } else {
        spec.non_resource_attributes = Some(NonResourceAttributes {
            path: given(&attributes.path),
            verb: given(&attributes.verb),
        });
    }
    spec
}

#[cfg(test)]
mod tests;
