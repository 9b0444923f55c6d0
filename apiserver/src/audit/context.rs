//! The audit of one request while it is handled (`audit.AuditContext`): its event, filled in
//! by the layers it passes (the impersonated user, annotations, the response's status and
//! bodies) and written at each stage the policy does not omit.

use std::sync::{Arc, Mutex};

use axum::extract::Request;
use serde::Serialize;
use serde_json::value::RawValue;

use super::event::{Event, ObjectReference, UserInfo, micro_time_now};
use super::{Auditor, Level, Stage};
use crate::request_info::RequestInfo;

/// kube-apiserver's limit on the `User-Agent` an event keeps (`maxUserAgentLength`).
const MAX_USER_AGENT: usize = 1024;

/// The audit of a request being handled, in its extensions for the layers behind the audit
/// layer: [`AuditContext::annotate`] adds to its event.
#[derive(Clone)]
pub struct AuditContext {
    auditor: Arc<Auditor>,
    omit_stages: Arc<[Stage]>,
    event: Arc<Mutex<Event>>,
}

impl std::fmt::Debug for AuditContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditContext").finish_non_exhaustive()
    }
}

/// The `Status` a response answers with, in its extensions, for the event's `responseStatus`.
#[derive(Debug, Clone)]
pub(crate) struct ResponseStatus(pub(crate) Arc<serde_json::Value>);

/// `responseStatus`: a `metav1.Status` as Go writes it (`metadata` always, the rest when set).
#[derive(Serialize)]
struct StatusJson<'a> {
    metadata: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "str::is_empty")]
    status: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "is_zero")]
    code: u16,
}

fn is_zero(code: &u16) -> bool {
    *code == 0
}

fn status_json(status: Option<&serde_json::Value>, message: &str, code: u16) -> serde_json::Value {
    let text = |key: &str| {
        status
            .and_then(|s| s.get(key))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
    };
    let json = StatusJson {
        metadata: serde_json::Map::new(),
        status: text("status"),
        message: if message.is_empty() {
            text("message")
        } else {
            message
        },
        reason: text("reason"),
        details: status.and_then(|s| s.get("details")),
        code,
    };
    serde_json::to_value(json).unwrap_or_default()
}

impl AuditContext {
    /// The audit of the request whose extensions these are, if it is audited.
    pub fn of(extensions: &axum::http::Extensions) -> Option<AuditContext> {
        extensions.get::<AuditContext>().cloned()
    }

    /// The request's level.
    pub fn level(&self) -> Level {
        self.lock().level.clone()
    }

    /// The request's audit ID.
    pub fn audit_id(&self) -> String {
        self.lock().audit_id.clone()
    }

    /// Notes `value` under `key` in the event's annotations; a key noted already keeps its
    /// first value, as kube-apiserver keeps it.
    pub fn annotate(&self, key: &str, value: &str) {
        self.lock()
            .annotations
            .entry(key.to_owned())
            .or_insert_with(|| value.to_owned());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Event> {
        self.event
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The user the request impersonates, and the verb of the constrained mode that allowed
    /// it (`LogImpersonatedUser`).
    pub(crate) fn set_impersonated(
        &self,
        user: &crate::auth::UserInfo,
        constraint: Option<&'static str>,
    ) {
        let mut event = self.lock();
        event.impersonated_user = Some(UserInfo::from(user));
        event.authentication_metadata =
            constraint.map(|constraint| super::event::AuthenticationMetadata {
                impersonation_constraint: constraint,
            });
    }

    /// The response's code, and its `Status` when it answered with one.
    pub(crate) fn set_response(&self, code: u16, status: Option<&serde_json::Value>) {
        self.lock().response_status = Some(status_json(status, "", code));
    }

    /// The request's body as it came (a patch's, a delete's), from level `Request`.
    pub(crate) fn set_request_object(&self, object: Box<RawValue>) {
        let mut event = self.lock();
        if event.level >= Level::Request {
            event.request_object = Some(object);
        }
    }

    /// The object a write decoded (`LogRequestObject`): its namespace, name, uid and
    /// resource version fill what the object reference lacks, and from level `Request` the
    /// object, as `encode` writes it in the request's version (defaults applied), is the
    /// event's request object.
    pub(crate) fn log_request_object(
        &self,
        metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        encode: impl FnOnce() -> Option<Box<RawValue>>,
    ) {
        // Encoded before the event is locked: the object may be large.
        let object = (self.level() >= Level::Request).then(encode).flatten();
        let mut event = self.lock();
        if let Some(reference) = &mut event.object_ref {
            let fill = |field: &mut String, value: &Option<String>| {
                if field.is_empty()
                    && let Some(value) = value
                {
                    field.clone_from(value);
                }
            };
            fill(&mut reference.namespace, &metadata.namespace);
            fill(&mut reference.name, &metadata.name);
            fill(&mut reference.uid, &metadata.uid);
            fill(&mut reference.resource_version, &metadata.resource_version);
        }
        if let Some(object) = object {
            event.request_object = Some(object);
        }
    }

    /// The response's body, at level `RequestResponse`.
    pub(crate) fn set_response_object(&self, object: Box<RawValue>) {
        let mut event = self.lock();
        if event.level >= Level::RequestResponse {
            event.response_object = Some(object);
        }
    }

    /// Writes the event at `stage`, unless the policy omits it (`ProcessEventStage`).
    pub(crate) fn process(&self, stage: Stage) {
        if self.omit_stages.contains(&stage) {
            return;
        }
        let mut event = self.lock();
        event.stage_timestamp = if stage == Stage::RequestReceived {
            event.request_received_timestamp.clone()
        } else {
            micro_time_now()
        };
        event.stage = stage;
        self.auditor.process(&event);
    }
}

/// Starts the audit of a request as `WithAudit` does: the policy's level for its attributes
/// (its information and its authenticated user), and unless that is `None`, an event with
/// the request's metadata (`LogRequestMetadata`). `None` when the request is not audited.
pub(crate) fn begin(
    auditor: &Arc<Auditor>,
    request: &Request,
    info: &RequestInfo,
    user: Option<&crate::auth::UserInfo>,
    audit_id: &str,
) -> Option<AuditContext> {
    // A request that failed authentication has no user at all (not system:anonymous).
    let nobody = crate::auth::UserInfo::default();
    let attributes = crate::authz::Attributes::of_request(info, user.unwrap_or(&nobody));
    let config = auditor.evaluate(&attributes);
    if config.level <= Level::None {
        return None;
    }
    let object_ref = info.is_resource_request.then(|| ObjectReference {
        resource: info.resource.clone(),
        namespace: info.namespace.clone(),
        name: info.name.clone(),
        api_group: info.api_group.clone(),
        api_version: info.api_version.clone(),
        subresource: info.subresource.clone(),
        ..ObjectReference::default()
    });
    let now = micro_time_now();
    let event = Event {
        kind: "Event",
        api_version: "audit.k8s.io/v1",
        level: config.level,
        audit_id: audit_id.to_owned(),
        stage: Stage::RequestReceived,
        request_uri: request.uri().path_and_query().map_or_else(
            || request.uri().path().to_owned(),
            |p| p.as_str().to_owned(),
        ),
        verb: info.verb.clone(),
        user: user.map(UserInfo::from).unwrap_or_default(),
        impersonated_user: None,
        authentication_metadata: None,
        source_ips: source_ips(request),
        user_agent: user_agent(request),
        object_ref,
        response_status: None,
        request_object: None,
        response_object: None,
        request_received_timestamp: now.clone(),
        stage_timestamp: now,
        annotations: std::collections::BTreeMap::new(),
    };
    Some(AuditContext {
        auditor: auditor.clone(),
        omit_stages: config.omit_stages.into(),
        event: Arc::new(Mutex::new(event)),
    })
}

/// The audit of a request that failed authentication (`WithFailedAuthenticationAudit`): its
/// one event, at `ResponseStarted`, says which credentials it tried.
pub(crate) fn failed_authentication(
    auditor: &Arc<Auditor>,
    request: &Request,
    info: &RequestInfo,
    audit_id: &str,
    code: u16,
) {
    let Some(context) = begin(auditor, request, info, None, audit_id) else {
        return;
    };
    context.lock().response_status = Some(status_json(None, &attempted(request), code));
    context.process(Stage::ResponseStarted);
}

/// `getAuthMethods`: the credentials a request tried.
fn attempted(request: &Request) -> String {
    let headers = request.headers();
    let authorization = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim();
    let mut methods = Vec::new();
    let mut parts = authorization.split(' ');
    if let Some(scheme) = parts.next() {
        if scheme.eq_ignore_ascii_case("basic") && parts.clone().next().is_some() {
            methods.push("basic");
        }
        if scheme.eq_ignore_ascii_case("bearer") && parts.next().is_some() {
            methods.push("bearer");
        }
    }
    let token = request.uri().query().is_some_and(|query| {
        form_urlencoded::parse(query.as_bytes())
            .any(|(key, value)| key == "access_token" && !value.trim().is_empty())
    });
    if token {
        methods.push("access_token");
    }
    if request
        .extensions()
        .get::<apfkit_https::serve::PeerCertificates>()
        .is_some()
    {
        methods.push("x509");
    }
    if methods.is_empty() {
        "Authentication failed, no credentials provided".to_owned()
    } else {
        format!("Authentication failed, attempted: {}", methods.join(", "))
    }
}

/// `utilnet.SourceIPs`: the addresses of `X-Forwarded-For`, then `X-Real-Ip` unless listed,
/// then the peer's unless it is the last one listed.
fn source_ips(request: &Request) -> Vec<String> {
    use std::net::IpAddr;
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    let mut ips: Vec<IpAddr> = header("x-forwarded-for")
        .split(',')
        .filter_map(|part| part.trim().parse().ok())
        .collect();
    if let Ok(real) = header("x-real-ip").parse::<IpAddr>()
        && !ips.contains(&real)
    {
        ips.push(real);
    }
    if let Some(peer) = request
        .extensions()
        .get::<apfkit_https::serve::RemoteAddress>()
        .map(|address| address.0.ip())
        && ips.last() != Some(&peer)
    {
        ips.push(peer);
    }
    ips.iter().map(ToString::to_string).collect()
}

/// `maybeTruncateUserAgent`.
fn user_agent(request: &Request) -> String {
    let agent = request
        .headers()
        .get(axum::http::header::USER_AGENT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if agent.len() <= MAX_USER_AGENT {
        return agent;
    }
    let mut cut = MAX_USER_AGENT;
    while !agent.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...TRUNCATED", &agent[..cut])
}
