//! Where each group-version's requests go, as kube-aggregator's `proxyHandler`s and
//! `serviceResolver` know it: every APIService (local, or behind a Service with its TLS
//! settings and whether it is available), the Services and EndpointSlices an extension
//! server is found through, read from the server's own store and kept in step by watches.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::error::ApiError;
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::informer::Informer;
use apfkit_apiserver::store::{ListRequest, Served};
use apfkit_runtime::Object;
use apfkit_runtime::identity::GroupVersion;
use apfkit_runtime::scheme::UnknownFields;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::Value;

use crate::client::Backend;

/// An APIService whose requests go to an extension server.
#[derive(Debug)]
pub(crate) struct Remote {
    /// The APIService's name (`VERSION.GROUP`).
    pub(crate) name: String,
    /// The Service's namespace.
    pub(crate) namespace: String,
    /// The Service's name.
    pub(crate) service: String,
    /// The Service's port (`spec.service.port`, 443 by default).
    pub(crate) port: i32,
    /// Whether its `Available` condition is `True`.
    pub(crate) available: bool,
    /// `spec.groupPriorityMinimum`.
    pub(crate) group_priority: i64,
    /// `spec.versionPriority`.
    pub(crate) version_priority: i64,
    /// How it is reached: TLS as `caBundle` and `insecureSkipTLSVerify` say, with the
    /// front-proxy identity.
    pub(crate) backend: Backend,
}

/// Where requests for a group-version go.
#[derive(Debug, Clone)]
pub(crate) enum Route {
    /// Served here (`spec.service` unset).
    Local,
    /// An extension server.
    Remote(Arc<Remote>),
}

/// What the table was made from.
#[derive(Debug, Default)]
pub(crate) struct Table {
    /// By `group/version`.
    pub(crate) routes: HashMap<GroupVersion, Route>,
    /// By (namespace, name).
    pub(crate) services: HashMap<(String, String), Service>,
    /// By (namespace, the `kubernetes.io/service-name` label).
    pub(crate) slices: HashMap<(String, String), Vec<EndpointSlice>>,
    /// The highest `groupPriorityMinimum` of each group's APIServices, local or not.
    pub(crate) group_priorities: HashMap<String, i64>,
}

/// Why an APIService's endpoint could not be had (kube's `ResolveEndpoint`); a proxied
/// request gets 503 "service unavailable" whatever it is, the availability check its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unresolved {
    /// No such Service.
    ServiceNotFound,
    /// A type that is not ClusterIP, NodePort or LoadBalancer.
    UnsupportedType(String),
    /// No port of the Service is the APIService's.
    NoPort,
    /// No ready endpoint with the port.
    NoEndpoints,
}

impl Table {
    /// The address to send `remote`'s requests to, as kube's `ResolveEndpoint` finds it: the
    /// Service's port that is the APIService's, then a slice of the Service with a port of
    /// that name, and a ready endpoint of it from a random start.
    pub(crate) fn resolve(&self, remote: &Remote) -> Result<(String, u16), Unresolved> {
        let key = (remote.namespace.clone(), remote.service.clone());
        let service = self.services.get(&key).ok_or(Unresolved::ServiceNotFound)?;
        let spec = service.spec.clone().unwrap_or_default();
        let service_type = spec.type_.unwrap_or_default();
        if !matches!(
            service_type.as_str(),
            "ClusterIP" | "LoadBalancer" | "NodePort"
        ) {
            return Err(Unresolved::UnsupportedType(service_type));
        }
        let port = spec
            .ports
            .iter()
            .flatten()
            .find(|port| port.port == remote.port)
            .ok_or(Unresolved::NoPort)?;
        let port_name = port.name.clone().unwrap_or_default();
        for slice in self.slices.get(&key).into_iter().flatten() {
            if !matches!(slice.address_type.as_str(), "IPv4" | "IPv6") {
                continue;
            }
            for slice_port in slice.ports.iter().flatten() {
                if slice_port.name.as_deref() != Some(port_name.as_str()) {
                    continue;
                }
                let Some(number) = slice_port.port.and_then(|p| u16::try_from(p).ok()) else {
                    continue;
                };
                let endpoints = crate::endpoint_slices::endpoints_of(slice);
                if endpoints.is_empty() {
                    continue;
                }
                let offset = rand::random_range(0..endpoints.len());
                for at in 0..endpoints.len() {
                    let endpoint = &endpoints[(at + offset) % endpoints.len()];
                    let ready = endpoint.conditions.as_ref().and_then(|c| c.ready);
                    if ready.unwrap_or(true)
                        && let Some(address) = endpoint.addresses.first()
                    {
                        return Ok((address.clone(), number));
                    }
                }
            }
        }
        Err(Unresolved::NoEndpoints)
    }
}

/// The routing table of one server, shared by its proxy and its controllers.
#[derive(Debug, Default)]
pub(crate) struct Routing {
    table: RwLock<Arc<Table>>,
    changes: tokio::sync::Notify,
    discovery_changes: tokio::sync::Notify,
    registration_changes: tokio::sync::Notify,
}

impl Routing {
    /// The table as last read.
    pub(crate) fn table(&self) -> Arc<Table> {
        self.table.read().map(|t| t.clone()).unwrap_or_default()
    }

    pub(crate) fn set(&self, table: Table) {
        if let Ok(mut current) = self.table.write() {
            *current = Arc::new(table);
        }
        self.changes.notify_one();
        self.discovery_changes.notify_one();
        self.registration_changes.notify_one();
    }

    /// Completes when the table was read again since the last call (the availability
    /// checks wait on it).
    pub(crate) async fn changed(&self) {
        self.changes.notified().await;
    }

    /// The same, for the discovery refresh.
    pub(crate) async fn discovery_changed(&self) {
        self.discovery_changes.notified().await;
    }

    /// The same, for the autoregistration of local APIServices.
    pub(crate) async fn registration_changed(&self) {
        self.registration_changes.notified().await;
    }
}

/// An APIService's fields the routing needs, from its v1 JSON.
pub(crate) struct ApiServiceFields {
    pub(crate) name: String,
    pub(crate) group_version: GroupVersion,
    /// (namespace, name, port) of `spec.service`.
    pub(crate) service: Option<(String, String, i32)>,
    pub(crate) ca_bundle: Vec<u8>,
    pub(crate) insecure: bool,
    pub(crate) available: bool,
    pub(crate) group_priority: i64,
    pub(crate) version_priority: i64,
}

impl ApiServiceFields {
    pub(crate) fn of(object: &Value) -> Self {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        use base64::Engine as _;
        let service = object
            .pointer("/spec/service")
            .filter(|s| s.is_object())
            .map(|_| {
                let port = object
                    .pointer("/spec/service/port")
                    .and_then(Value::as_i64)
                    .and_then(|p| i32::try_from(p).ok())
                    .unwrap_or(443);
                (
                    text("/spec/service/namespace"),
                    text("/spec/service/name"),
                    port,
                )
            });
        let available = object
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Available" && c["status"] == "True");
        ApiServiceFields {
            name: text("/metadata/name"),
            group_version: GroupVersion::new(text("/spec/group"), text("/spec/version")),
            service,
            ca_bundle: base64::engine::general_purpose::STANDARD
                .decode(text("/spec/caBundle"))
                .unwrap_or_default(),
            insecure: object
                .pointer("/spec/insecureSkipTLSVerify")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            available,
            group_priority: object
                .pointer("/spec/groupPriorityMinimum")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            version_priority: object
                .pointer("/spec/versionPriority")
                .and_then(Value::as_i64)
                .unwrap_or(0),
        }
    }
}

/// The three resources the table is read from.
pub(crate) struct Sources<H: 'static> {
    pub(crate) server: Arc<ApiServer<ServedObject<H>>>,
    pub(crate) api_services: Arc<Served<ServedObject<H>>>,
    pub(crate) services: Arc<Served<ServedObject<H>>>,
    pub(crate) slices: Arc<Served<ServedObject<H>>>,
}

impl<H> Sources<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// The three resources of `server`.
    pub(crate) fn of(server: Arc<ApiServer<ServedObject<H>>>) -> Result<Self, ApiError> {
        let find = |group: &str, plural: &str| {
            server
                .resource(group, plural)
                .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))
        };
        Ok(Sources {
            api_services: find("apiregistration.k8s.io", "apiservices")?,
            services: find("", "services")?,
            slices: find("discovery.k8s.io", "endpointslices")?,
            server,
        })
    }

    /// Every object of `served` as v1 JSON.
    pub(crate) async fn list(
        &self,
        served: &Served<ServedObject<H>>,
    ) -> Result<Vec<Value>, ApiError> {
        let listed = self
            .server
            .objects()
            .list(served, &ListRequest::default())
            .await?;
        let codec = served
            .version("v1")
            .ok_or_else(|| ApiError::internal("no v1"))?;
        let mut values = Vec::with_capacity(listed.items.len());
        for item in listed.items {
            values.push(
                codec
                    .encode(item, &mut Vec::new())
                    .map_err(ApiError::internal)?,
            );
        }
        Ok(values)
    }

    /// An APIService's v1 JSON as the object the store holds.
    pub(crate) fn api_service(&self, object: &Value) -> Result<ServedObject<H>, ApiError> {
        let codec = self
            .api_services
            .version("v1")
            .ok_or_else(|| ApiError::internal("no v1"))?;
        codec
            .decode_as_is(object)
            .or_else(|_| codec.decode(object, UnknownFields::Ignore, &mut Vec::new()))
            .map_err(ApiError::internal)
    }

    /// The table as the store holds it now, the clients of unchanged APIServices kept.
    pub(crate) async fn read(
        &self,
        before: &Table,
        identity: &crate::client::Identity,
    ) -> Result<Table, ApiError> {
        let mut table = Table::default();
        for object in self.list(&self.services).await? {
            if let Ok(service) = serde_json::from_value::<Service>(object) {
                let key = (
                    service.metadata.namespace.clone().unwrap_or_default(),
                    service.metadata.name.clone().unwrap_or_default(),
                );
                table.services.insert(key, service);
            }
        }
        for object in self.list(&self.slices).await? {
            if let Ok(slice) = serde_json::from_value::<EndpointSlice>(object) {
                let namespace = slice.metadata.namespace.clone().unwrap_or_default();
                let Some(service) = slice
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|labels| labels.get("kubernetes.io/service-name"))
                    .cloned()
                else {
                    continue;
                };
                table
                    .slices
                    .entry((namespace, service))
                    .or_default()
                    .push(slice);
            }
        }
        for object in self.list(&self.api_services).await? {
            let fields = ApiServiceFields::of(&object);
            let key = fields.group_version.clone();
            let priority = table
                .group_priorities
                .entry(fields.group_version.group.to_string())
                .or_insert(fields.group_priority);
            *priority = (*priority).max(fields.group_priority);
            let route = match fields.service {
                None => Route::Local,
                Some((namespace, service, port)) => {
                    let server_name = format!("{service}.{namespace}.svc");
                    let reused = match before.routes.get(&key) {
                        Some(Route::Remote(old))
                            if old.backend.serves(
                                &server_name,
                                &fields.ca_bundle,
                                fields.insecure,
                            ) =>
                        {
                            Some(old.backend.clone())
                        }
                        _ => None,
                    };
                    let backend = match reused {
                        Some(backend) => backend,
                        None => {
                            Backend::new(&server_name, &fields.ca_bundle, fields.insecure, identity)
                        }
                    };
                    Route::Remote(Arc::new(Remote {
                        name: fields.name,
                        namespace,
                        service,
                        port,
                        available: fields.available,
                        group_priority: fields.group_priority,
                        version_priority: fields.version_priority,
                        backend,
                    }))
                }
            };
            table.routes.insert(key, route);
        }
        Ok(table)
    }
}

/// Reads the table now, then again after every change to the three resources, until the
/// server stops (an informer of the three). Answers once the first table is read.
pub(crate) async fn keep_synced<H>(
    sources: Arc<Sources<H>>,
    routing: Arc<Routing>,
    identity: Arc<crate::client::Identity>,
) -> Result<(), ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let first = sources.read(&routing.table(), &identity).await?;
    routing.set(first);
    let resources = vec![
        sources.api_services.clone(),
        sources.services.clone(),
        sources.slices.clone(),
    ];
    Informer::new(sources.server.clone(), resources).run(move || {
        let (sources, routing, identity) = (sources.clone(), routing.clone(), identity.clone());
        async move {
            let table = sources.read(&routing.table(), &identity).await?;
            routing.set(table);
            Ok::<(), ApiError>(())
        }
    });
    Ok(())
}
