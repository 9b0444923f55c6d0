//! API Priority and Fairness in front of `apfkit serve`: the dispatcher configured by the
//! FlowSchemas and PriorityLevelConfigurations the server stores, and the dispatcher's tower
//! layer between authentication and the handler, classifying each request by its user and
//! what kube-apiserver's `RequestInfo` says it asks for.

use apfkit_apiserver::auth::UserInfo;
use apfkit_apiserver::http::ApiServer;
use apfkit_apiserver::http::request_info::RequestInfo;
use apfkit_apiserver::objects::ListRequest;
use apfkit_apiserver::storage::Backend;
use apfkit_conversion::scheme::HubObject;
use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::guard::Guard;
use apfkit_dispatcher::layer::{ApfLayer, Attributes};
use apfkit_dispatcher::queueset::WorkEstimate;
use axum::extract::Request;

use crate::failure::{Failure, printable};

/// The configuration of the objects stored now, for a server of `limit` seats; objects it
/// leaves out are reported on standard error.
pub async fn stored_configuration<B: Backend + 'static>(
    server: &ApiServer<HubObject, B>,
    limit: i32,
) -> Result<Configuration, Failure> {
    let (mut levels, mut schemas) = (Vec::new(), Vec::new());
    for served in server.resources() {
        if served.config.group != "flowcontrol.apiserver.k8s.io" {
            continue;
        }
        let request = ListRequest {
            namespace: None,
            start: Vec::new(),
            limit: 0,
            revision: None,
            count: false,
        };
        let listed = server
            .objects()
            .list(served, &request)
            .await
            .map_err(|e| Failure::Invalid(format!("reading the APF configuration: {e}")))?;
        for object in listed.items {
            match object {
                HubObject::FlowSchema(schema) => schemas.push(schema),
                HubObject::PriorityLevelConfiguration(level) => levels.push(level),
                HubObject::APIService(_) => {}
            }
        }
    }
    let config = Configuration::new_trusted(levels, schemas, limit)
        .map_err(|e| Failure::Invalid(format!("the APF configuration: {e}")))?;
    for skipped in config.skipped() {
        eprintln!(
            "apfkit serve: warning: {} {} left out of the APF configuration: {}",
            skipped.kind,
            printable(&skipped.name),
            printable(&crate::configuration::join(&skipped.reasons))
        );
    }
    Ok(config)
}

/// What APF sees of a request: the authenticated user (anonymous when the request carries
/// none) and kube-apiserver's reading of its method and URL; one seat each, and watches
/// long-running.
pub fn attributes(request: &Request) -> Attributes {
    let user = request
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_else(UserInfo::anonymous);
    let uri = request.uri();
    let info = RequestInfo::new(request.method().as_str(), uri.path(), uri.query());
    Attributes {
        user: user.name,
        groups: user.groups,
        long_running: info.is_long_running(),
        verb: info.verb,
        is_resource_request: info.is_resource_request,
        api_group: info.api_group,
        resource: info.resource,
        subresource: info.subresource,
        namespace: info.namespace,
        name: info.name,
        path: info.path,
        estimate: WorkEstimate::ONE_SEAT,
    }
}

/// The layer guarding the server's routes.
pub fn layer(guard: Guard) -> ApfLayer<fn(&Request) -> Attributes> {
    ApfLayer::new(guard, attributes as fn(&Request) -> Attributes)
}
