//! The `Available` condition of every APIService, as kube-aggregator's availability
//! controllers set it (`pkg/controllers/status/local` and `remote`): local APIServices are
//! always available; a remote one is checked in upstream's order (its Service, the Service's
//! port, its EndpointSlices and their ready endpoints with the port's name) and then probed
//! with 5 parallel `GET /apis/GROUP/VERSION` as `system:kube-aggregator` in `system:masters`,
//! any 2xx or 3xx answer passing. The status is written back only when it changed, after
//! every change to the routing table and every 30 s.

use std::sync::Arc;
use std::time::Duration;

use apfkit_apiserver::auth::UserInfo;
use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::store::{Place, UpdateKind};
use apfkit_runtime::Object;
use axum::body::Body;
use axum::http::{Request, Uri};
use serde_json::{Value, json};

use crate::client::Backend;
use crate::routing::{ApiServiceFields, Remote, Routing, Sources, Table, Unresolved};

/// How often every APIService is checked again (the controllers' resync period).
const RESYNC: Duration = Duration::from_secs(30);
/// Probes sent at once; one success is enough.
const ATTEMPTS: usize = 5;
/// A probe's client timeout.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The guard around a probe ("slow dial and DNS responses").
const PROBE_GUARD: Duration = Duration::from_secs(6);

/// An `Available` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condition {
    pub(crate) status: &'static str,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl Condition {
    fn new(status: &'static str, reason: &'static str, message: String) -> Self {
        Condition {
            status,
            reason,
            message,
        }
    }
}

/// The words of an endpoint that could not be resolved, as kube's `ResolveEndpoint` errors
/// read.
fn unresolved_words(why: &Unresolved, remote: &Remote) -> String {
    match why {
        Unresolved::ServiceNotFound => format!("service \"{}\" not found", remote.service),
        Unresolved::UnsupportedType(kind) => format!("unsupported service type \"{kind}\""),
        Unresolved::NoPort => format!(
            "no service port {} found for service \"{}\"",
            remote.port, remote.service
        ),
        Unresolved::NoEndpoints => {
            format!("no endpoints available for service \"{}\"", remote.service)
        }
    }
}

/// The condition of a remote APIService (`AvailableConditionController.sync`), its server
/// probed as its proxy reaches it (1.36+, `BuildTransportConfig`): trusted as `caBundle`
/// says for `SERVICE.NAMESPACE.svc` unless `insecureSkipTLSVerify`, with the front-proxy
/// identity.
pub(crate) async fn check(
    table: &Table,
    remote: &Remote,
    api_service: &ApiServiceFields,
) -> Condition {
    let prober = &remote.backend;
    let (namespace, name) = (&remote.namespace, &remote.service);
    let key = (namespace.clone(), name.clone());
    let Some(service) = table.services.get(&key) else {
        return Condition::new(
            "False",
            "ServiceNotFound",
            format!("service/{name} in \"{namespace}\" is not present"),
        );
    };
    let spec = service.spec.clone().unwrap_or_default();
    if spec.type_.as_deref() == Some("ClusterIP") {
        let Some(port) = spec
            .ports
            .iter()
            .flatten()
            .find(|port| port.port == remote.port)
        else {
            return Condition::new(
                "False",
                "ServicePortError",
                format!(
                    "service/{name} in \"{namespace}\" is not listening on port {}",
                    remote.port
                ),
            );
        };
        let port_name = port.name.clone().unwrap_or_default();
        let slices = table
            .slices
            .get(&key)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if slices.is_empty() {
            return Condition::new(
                "False",
                "EndpointsNotFound",
                format!("cannot find endpointslices for service/{name} in \"{namespace}\""),
            );
        }
        let active = slices.iter().any(|slice| {
            let endpoints = crate::endpoint_slices::endpoints_of(slice);
            let ready = endpoints.iter().any(|endpoint| {
                endpoint
                    .conditions
                    .as_ref()
                    .and_then(|c| c.ready)
                    .unwrap_or(true)
            });
            ready
                && slice
                    .ports
                    .iter()
                    .flatten()
                    .any(|p| p.name.as_deref() == Some(port_name.as_str()) && p.port.is_some())
        });
        if !active {
            return Condition::new(
                "False",
                "MissingEndpoints",
                format!(
                    "endpointslices for service/{name} in \"{namespace}\" have no addresses \
                     with port name \"{port_name}\""
                ),
            );
        }
    }
    let path = format!("/{}", api_service.group_version.api_root());
    let mut probes = tokio::task::JoinSet::new();
    for _ in 0..ATTEMPTS {
        let resolved = table.resolve(remote);
        let (prober, path) = (prober.clone(), path.clone());
        let words = resolved
            .as_ref()
            .err()
            .map(|why| unresolved_words(why, remote));
        probes.spawn(async move {
            let (address, port) = match resolved {
                Ok(endpoint) => endpoint,
                Err(_) => return Err(words.unwrap_or_default()),
            };
            probe(&prober, &address, port, &path).await
        });
    }
    let mut last = Ok(());
    while let Some(result) = probes.join_next().await {
        last = result.unwrap_or_else(|e| Err(e.to_string()));
        if last.is_ok() {
            break;
        }
    }
    probes.abort_all();
    match last {
        Ok(()) => Condition::new("True", "Passed", "all checks passed".to_owned()),
        Err(message) => Condition::new("False", "FailedDiscoveryCheck", message),
    }
}

/// One discovery probe, answered in the words kube-aggregator's would be.
async fn probe(prober: &Backend, address: &str, port: u16, path: &str) -> Result<(), String> {
    let host = if address.contains(':') {
        format!("[{address}]:{port}")
    } else {
        format!("{address}:{port}")
    };
    let url = format!("https://{host}{path}");
    let (client, _in_flight) = prober
        .client()
        .map_err(|why| format!("failing or missing response from {url}: {why}"))?;
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("failing or missing response from {url}: {e}"))?;
    let mut request = Request::get(uri)
        .body(Body::empty())
        .map_err(|e| e.to_string())?;
    let kube_aggregator = UserInfo {
        name: "system:kube-aggregator".to_owned(),
        groups: vec!["system:masters".to_owned()],
        ..UserInfo::default()
    };
    crate::front_proxy::forward_headers(request.headers_mut(), &kube_aggregator);
    let sent = tokio::time::timeout(PROBE_TIMEOUT, client.request(request));
    match tokio::time::timeout(PROBE_GUARD, sent).await {
        Err(_) => Err(format!("timed out waiting for {url}")),
        Ok(Err(_)) => Err(format!(
            "failing or missing response from {url}: Get \"{url}\": context deadline exceeded \
             (Client.Timeout exceeded while awaiting headers)"
        )),
        Ok(Ok(Err(error))) => Err(format!(
            "failing or missing response from {url}: Get \"{url}\": {}",
            crate::client::reach_error(&error, &host)
        )),
        Ok(Ok(Ok(response))) if (200..400).contains(&response.status().as_u16()) => Ok(()),
        Ok(Ok(Ok(response))) => Err(format!(
            "bad status from {url}: {}",
            response.status().as_u16()
        )),
    }
}

/// `SetAPIServiceCondition` on an APIService's v1 JSON: the condition replaced, its
/// `lastTransitionTime` kept unless its status changed.
pub(crate) fn set_condition(object: &mut Value, condition: &Condition, now: &str) {
    if !object["status"].is_object() {
        object["status"] = json!({});
    }
    if !object["status"]["conditions"].is_array() {
        object["status"]["conditions"] = json!([]);
    }
    let Some(conditions) = object["status"]["conditions"].as_array_mut() else {
        return;
    };
    match conditions.iter_mut().find(|c| c["type"] == "Available") {
        Some(existing) => {
            if existing["status"] != condition.status {
                existing["status"] = condition.status.into();
                existing["lastTransitionTime"] = now.into();
            }
            existing["reason"] = condition.reason.into();
            existing["message"] = condition.message.clone().into();
        }
        None => conditions.push(json!({
            "type": "Available",
            "status": condition.status,
            "lastTransitionTime": now,
            "reason": condition.reason,
            "message": condition.message,
        })),
    }
}

/// Checks every APIService and writes the conditions that changed.
async fn sync_all<H>(sources: &Sources<H>, routing: &Routing) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let table = routing.table();
    let now = serde_json::to_value(apfkit_apiserver::store::now())
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    for mut object in sources.list(&sources.api_services).await? {
        let fields = ApiServiceFields::of(&object);
        let condition = match (&fields.service, table.routes.get(&fields.group_version)) {
            (None, _) => Condition::new(
                "True",
                "Local",
                "Local APIServices are always available".to_owned(),
            ),
            (Some(_), Some(crate::routing::Route::Remote(remote)))
                if remote.name == fields.name =>
            {
                check(&table, remote, &fields).await
            }
            // Not yet in the table: checked once the table has it.
            (Some(_), _) => continue,
        };
        let before = object["status"].clone();
        set_condition(&mut object, &condition, &now);
        if object["status"] == before {
            continue;
        }
        write_status(sources, &fields.name, &object).await?;
    }
    Ok(())
}

/// Writes an APIService's status (`UpdateStatus`), at the revision it was read at, recording
/// the write in its managed fields as kube-aggregator's client request is recorded.
async fn write_status<H>(sources: &Sources<H>, name: &str, object: &Value) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let served = &sources.api_services;
    let hub = sources.api_service(object)?;
    let api_version = "apiregistration.k8s.io/v1";
    let codec = served.version("v1").unwrap_or(&*served.storage);
    sources
        .server
        .objects()
        .update_with(
            served,
            Place {
                namespace: None,
                name,
            },
            hub,
            api_version,
            UpdateKind::Status,
            false,
            |live, new| {
                apfkit_apiserver::fields::record_update(
                    served,
                    codec,
                    Some("status"),
                    Some(live),
                    new,
                    crate::LOOPBACK_MANAGER,
                )
            },
        )
        .await
        .map(|_| ())
}

/// Keeps every APIService's condition up to date until the server stops.
pub(crate) fn keep_checked<H>(sources: Arc<Sources<H>>, routing: Arc<Routing>)
where
    H: Object + Clone + Send + Sync + 'static,
{
    let server = sources.server.clone();
    server.spawn_until_stopped(async move {
        loop {
            let _ = sync_all(&sources, &routing).await;
            tokio::select! {
                () = routing.changed() => {}
                () = tokio::time::sleep(RESYNC) => {}
            }
        }
    });
}
