//! kube-aggregator for a server of [`ServedObject`]s (`apfkit-apiextensions`): what an
//! APIService with `spec.service` is resolved through, core/v1 Services and
//! discovery.k8s.io/v1 EndpointSlices, served with kube-apiserver's defaults, checks and
//! columns (`services`, `endpoint_slices`) and stored in its protobuf ([`protobuf`]).
//!
//! **Where to start**: serve [`resources()`] beside the server's own, and read and write
//! their protobuf with [`protobuf::read`] and [`protobuf::write`] in the server's wire
//! formats (`apfkit-server` does both).
//!
//! ```
//! # use apfkit_aggregator::{Endpoints, resources};
//! let served = resources::<()>(Endpoints::AsKubeApiserver).unwrap();
//! let names: Vec<_> = served.iter().map(|s| s.plural.as_str()).collect();
//! assert_eq!(names, ["services", "endpointslices"]);
//! ```

#![forbid(unsafe_code)]

mod autoregister;
mod available;
mod client;
mod discovery;
mod endpoint_slices;
mod front_proxy;
mod openapi;
pub mod protobuf;
mod proxy;
mod routing;
mod services;

pub use client::Identity;

use std::sync::Arc;

use apfkit_apiextensions::ServedObject;
use apfkit_apiextensions::json_kind::{JsonVersion, Normalize};
use apfkit_apiserver::error::{ApiError, Cause};
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::store::{
    Generation, ResourceConfig, ResourceError, Served, SharedVersion, Strategy,
};
use apfkit_apiserver::table::Printer;
use apfkit_runtime::field::FieldError;
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::scheme::StorageEncoding;
use serde_json::Value;

/// kube-aggregator in one server: the proxy in front of its routes
/// ([`Aggregator::handler_layers`], for `ApiServer::with_handler_layers`), which also merges
/// the extensions' groups into `/apis`, and the routing table it reads, kept in step with
/// the APIServices, Services and EndpointSlices stored, with the extensions' discovery read
/// and their availability checked ([`Aggregator::start`]).
#[derive(Debug, Clone)]
pub struct Aggregator {
    routing: Arc<routing::Routing>,
    discovery: Arc<discovery::Discovery>,
    openapi: Arc<openapi::OpenApi>,
    identity: Arc<Identity>,
}

impl Aggregator {
    /// An aggregator that connects to extension servers as `identity` (the front-proxy
    /// client certificate they trust).
    pub fn new(identity: Identity) -> Self {
        Aggregator {
            routing: Arc::default(),
            discovery: Arc::default(),
            openapi: Arc::default(),
            identity: Arc::new(identity),
        }
    }

    /// The proxy around a server's routes: requests of a group-version an available
    /// APIService sends to an extension server go there; the rest go on.
    pub fn handler_layers(&self) -> impl Fn(axum::Router) -> axum::Router + Send + Sync + 'static {
        let shared = proxy::Shared {
            routing: self.routing.clone(),
            discovery: self.discovery.clone(),
            openapi: self.openapi.clone(),
        };
        move |routes: axum::Router| {
            routes.layer(axum::middleware::from_fn_with_state(
                shared.clone(),
                proxy::proxied,
            ))
        }
    }

    /// Registers now the local APIServices of every group-version `server` serves (those
    /// [`Aggregator::start`]'s autoregister controller would make first), so that they are
    /// stored before it starts.
    ///
    /// # Errors
    ///
    /// A server that does not serve APIServices, or a list of them that fails.
    pub async fn register_local<H>(
        &self,
        server: Arc<ApiServer<ServedObject<H>>>,
    ) -> Result<(), ApiError>
    where
        H: apfkit_runtime::Object + Clone + Send + Sync + 'static,
    {
        let sources = routing::Sources::of(server)?;
        autoregister::register_once(&sources).await
    }

    /// Reads the routing table from `server`'s store and keeps it in step until the server
    /// is dropped.
    ///
    /// # Errors
    ///
    /// The server does not serve APIServices, Services and EndpointSlices, or they could not
    /// be read.
    pub async fn start<H>(&self, server: Arc<ApiServer<ServedObject<H>>>) -> Result<(), ApiError>
    where
        H: apfkit_runtime::Object + Clone + Send + Sync + 'static,
    {
        let sources = Arc::new(routing::Sources::of(server)?);
        routing::keep_synced(sources.clone(), self.routing.clone(), self.identity.clone()).await?;
        sources.server.spawn_until_stopped(keep_refreshed(
            self.routing.clone(),
            self.discovery.clone(),
            self.openapi.clone(),
        ));
        autoregister::keep_registered(sources.clone(), self.routing.clone());
        available::keep_checked(sources, self.routing.clone());
        Ok(())
    }
}

/// How often every extension's discovery and OpenAPI index are read again.
/// The field manager of kube-aggregator's own writes (the autoregister controller's creates
/// and updates, the availability controller's status): its loopback client's user agent,
/// `kube-apiserver/v1.37.2 (…)`, as `managedFields` names it.
const LOOPBACK_MANAGER: &str = "kube-apiserver";

const REFRESH: std::time::Duration = std::time::Duration::from_secs(60);

/// Keeps the extensions' group-versions and OpenAPI indexes read, after every change of the
/// routing table and every minute.
async fn keep_refreshed(
    routing: Arc<routing::Routing>,
    discovery: Arc<discovery::Discovery>,
    openapi: Arc<openapi::OpenApi>,
) {
    loop {
        discovery::refresh(&routing, &discovery).await;
        openapi::refresh(&routing, &openapi).await;
        tokio::select! {
            () = routing.discovery_changed() => {}
            () = tokio::time::sleep(REFRESH) => {}
        }
    }
}

/// Which endpoint addresses EndpointSlices may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoints {
    /// kube-apiserver's rule: no unspecified, loopback, link-local or link-local multicast
    /// addresses.
    AsKubeApiserver,
    /// The same, but loopback addresses allowed: for extension servers that run beside this
    /// one and listen on loopback (kube-apiserver refuses them; docs/decisions.md).
    LoopbackAllowed,
}

/// An object of a namespaced kind read as its type `T` for checking, with
/// `ValidateObjectMeta`'s errors (its name by `name_check`, a namespace required); an object
/// that does not read is an internal error.
fn typed_with_metadata<
    T: k8s_openapi::serde::de::DeserializeOwned
        + k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
>(
    object: &Value,
    name_check: fn(&str) -> Vec<String>,
) -> Result<(T, Vec<FieldError>), Vec<FieldError>> {
    let typed: T = serde_json::from_value(object.clone())
        .map_err(|error| vec![FieldError::internal("", error.to_string())])?;
    let meta = typed.metadata();
    let mut errors = apfkit_runtime::field::names::object_name(
        meta.name.as_deref().unwrap_or_default(),
        meta.generate_name.as_deref().unwrap_or_default(),
        name_check,
    );
    if meta.namespace.as_deref().unwrap_or_default().is_empty() {
        errors.push(FieldError::required("metadata.namespace", ""));
    }
    Ok((typed, errors))
}

/// How an object of a kind here is checked: the object and, on an update, the stored one.
type Check = Arc<dyn Fn(&Value, Option<&Value>) -> Vec<FieldError> + Send + Sync>;

/// A kind's checks and columns.
struct KindStrategy {
    check: Check,
    printer: Printer,
    /// What the kind's REST storage fills in on every write (Services: their IP families),
    /// given the stored object on an update.
    prepare: fn(&mut Value, Option<&Value>),
    /// The kind's `Warning`s on a write.
    warn: fn(&Value) -> Vec<String>,
    /// `AllowCreateOnUpdate`.
    create_on_update: bool,
}

impl<H> Strategy<ServedObject<H>> for KindStrategy {
    fn validate(
        &self,
        object: &ServedObject<H>,
        old: Option<&ServedObject<H>>,
        _api_version: &str,
    ) -> Vec<Cause> {
        apfkit_apiextensions::json_kind::json_causes(object, old, &*self.check)
    }
    fn printer(&self) -> Option<&Printer> {
        Some(&self.printer)
    }
    fn prepare_for_create(&self, stored: &mut Value) {
        (self.prepare)(stored, None);
    }
    fn prepare_for_update(&self, stored: &mut Value, old: &Value) {
        (self.prepare)(stored, Some(old));
    }
    fn warnings(&self, stored: &Value, _old: Option<&Value>) -> Vec<String> {
        (self.warn)(stored)
    }
    fn allows_create_on_update(&self) -> bool {
        self.create_on_update
    }
    /// Services, the one kind here with a status: their status strategy resets only the
    /// spec.
    fn status_writes_metadata(&self) -> bool {
        true
    }
}

/// What sets a kind here apart.
struct Kind {
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    short_names: &'static [&'static str],
    /// Its categories (Services are in `all`).
    categories: &'static [&'static str],
    /// Where kube-apiserver keeps its objects, under the prefix.
    key_path: &'static str,
    status: bool,
    normalize: Normalize,
    /// Whether a delete answers the deleted object (kube-apiserver's Services do).
    return_deleted_object: bool,
    /// Whether an update of an object that does not exist creates it (Services).
    create_on_update: bool,
    /// A new object as Go writes it ([`apfkit_apiextensions::json_kind::JsonVersion::with_zero`]).
    zero: fn() -> serde_json::Value,
    /// When `metadata.generation` grows (Services track none).
    generation: Generation,
    /// What the REST storage fills in on every write (given the stored object on an update).
    prepare: fn(&mut Value, Option<&Value>),
    /// The `Warning`s of a write.
    warn: fn(&Value) -> Vec<String>,
    /// The field labels of the kind's own conversion, if it registers one
    /// ([`JsonVersion::with_field_labels`]).
    field_labels: Option<&'static [&'static str]>,
}

fn resource<H: Send + Sync + 'static>(
    kind: &Kind,
    check: Check,
    printer: Printer,
) -> Result<Served<ServedObject<H>>, ResourceError> {
    let config = ResourceConfig::builtin(
        GroupVersionKind::from_static(kind.group, "v1", kind.kind),
        kind.plural,
        true,
    )
    .with_short_names(kind.short_names.iter().copied())
    .with_categories(kind.categories.iter().copied())
    .with_status(kind.status)
    .with_generation(kind.generation)
    .stored_at(kind.key_path, StorageEncoding::Protobuf)
    .with_kube_openapi();
    let config = if kind.return_deleted_object {
        config.returning_deleted_objects()
    } else {
        config
    };
    let version = JsonVersion::new(kind.group, "v1", kind.kind, kind.plural, kind.normalize)
        .with_zero(kind.zero)
        .stored_as_kube_stores_it();
    let version = match kind.field_labels {
        Some(labels) => version.with_field_labels(labels),
        None => version,
    }
    .with_protobuf(
        |object| {
            protobuf::write(object)
                .unwrap_or_else(|| Err("not a Service or an EndpointSlice".to_owned()))
        },
        protobuf::read_stored,
    );
    let versions = vec![Arc::new(version) as SharedVersion<ServedObject<H>>];
    Ok(
        Served::with_versions(config, kind.plural.to_owned(), versions)?.with_strategy(
            KindStrategy {
                check,
                printer,
                prepare: kind.prepare,
                warn: kind.warn,
                create_on_update: kind.create_on_update,
            },
        ),
    )
}

/// Services (`/api/v1/namespaces/NS/services`, kept under `services/specs` as
/// kube-apiserver keeps them, with a `status` subresource) and EndpointSlices
/// (`/apis/discovery.k8s.io/v1/namespaces/NS/endpointslices`), their endpoint addresses held
/// as `endpoints` says.
///
/// # Errors
///
/// None in practice: each has its one version as its storage version.
pub fn resources<H: Send + Sync + 'static>(
    endpoints: Endpoints,
) -> Result<Vec<Served<ServedObject<H>>>, ResourceError> {
    let loopback = match endpoints {
        Endpoints::AsKubeApiserver => endpoint_slices::Loopback::Refused,
        Endpoints::LoopbackAllowed => endpoint_slices::Loopback::Allowed,
    };
    Ok(vec![
        resource(
            &Kind {
                group: "",
                kind: "Service",
                plural: "services",
                short_names: &["svc"],
                categories: &["all"],
                key_path: "services/specs",
                status: true,
                normalize: services::normalize,
                return_deleted_object: true,
                create_on_update: true,
                zero: services::zero,
                generation: Generation::Untracked,
                prepare: services::init_ip_families,
                warn: services::warnings,
                // core/v1's `AddFieldLabelConversionsForService`.
                field_labels: Some(&[
                    "metadata.namespace",
                    "metadata.name",
                    "spec.clusterIP",
                    "spec.type",
                ]),
            },
            Arc::new(services::validate),
            services::printer(),
        )?,
        resource(
            &Kind {
                group: "discovery.k8s.io",
                kind: "EndpointSlice",
                plural: "endpointslices",
                short_names: &[],
                categories: &[],
                key_path: "endpointslices",
                status: false,
                normalize: endpoint_slices::normalize,
                return_deleted_object: false,
                create_on_update: false,
                zero: endpoint_slices::zero,
                generation: Generation::OnAnyChange,
                prepare: |_, _| {},
                warn: |_| Vec::new(),
                field_labels: None,
            },
            Arc::new(move |object: &Value, old: Option<&Value>| {
                endpoint_slices::validate(object, old, loopback)
            }),
            endpoint_slices::printer(),
        )?,
    ])
}
