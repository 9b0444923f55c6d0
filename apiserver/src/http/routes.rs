//! Where a request goes: authenticated first (its user put in the request's extensions beside
//! its [`crate::request_info::RequestInfo`], for every layer behind), then to the version,
//! health, discovery and OpenAPI documents, or to a resource's verbs by the request's
//! information.

use std::sync::Arc;

use apfkit_runtime::Object;
use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::response::Response;

use super::action::Action;
use super::audited::AuditId;
use super::compression;
use super::health::Endpoint;
use super::media::{self, Wanted};
use super::openid;
use super::request::{Target, drain, read_body};
use super::resource;
use super::response::{error_format, error_response_in, json_response, respond};
use super::server::{ApiServer, Catalog};
use super::{discovery, openapi, openapi_answers, reviews};
use crate::audit::AuditContext;
use crate::error::ApiError;
use crate::request_info;

pub(super) async fn handle<H>(State(server): State<Arc<ApiServer<H>>>, request: Request) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    let answers = Answers::of(
        request.uri().path(),
        request
            .headers()
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok()),
    );
    // Read only if the route fails.
    let accept = request.headers().get(header::ACCEPT).cloned();
    let response = match route(&server, request).await {
        Ok(response) => response,
        Err(error) => error_response_in(&error, error_format(accept.as_ref())),
    };
    match answers {
        Answers::Api { gzip } => compression::api_answer(response, gzip).await,
        Answers::OpenApiV2 { gzip } => compression::openapi_v2_answer(response, gzip).await,
        Answers::Other => response,
    }
}

/// Who writes the answers of a path in kube-apiserver, for how they are compressed, with
/// whether that writer takes the client's `Accept-Encoding` to ask for gzip.
enum Answers {
    /// The API's handlers (resources, discovery) through `responsewriters`.
    Api { gzip: bool },
    /// kube-openapi's v2 handler, behind `gziphandler`.
    OpenApiV2 { gzip: bool },
    /// Handlers that never compress (`/version`, health, the OpenAPI v3 documents).
    Other,
}

impl Answers {
    fn of(path: &str, accept_encoding: Option<&str>) -> Answers {
        let path = path.trim_start_matches('/');
        match path.split('/').next().unwrap_or_default() {
            "api" | "apis" => Answers::Api {
                gzip: compression::accepts_gzip(accept_encoding),
            },
            "openapi" if path.trim_end_matches('/') == "openapi/v2" => Answers::OpenApiV2 {
                gzip: compression::gziphandler_accepts_gzip(accept_encoding),
            },
            _ => Answers::Other,
        }
    }
}

/// Authenticates every request before the layers behind see it: 401 in kube-apiserver's
/// words (audited as `WithFailedAuthenticationAudit` audits it), else the user in the
/// request's extensions, beside kube-apiserver's reading of its method and URL
/// (`RequestInfo`), which the deadline layer in front made once for every layer behind (the
/// request metrics, APF).
pub(super) async fn authenticated<H>(
    State(server): State<Arc<ApiServer<H>>>,
    mut request: Request,
    next: axum::middleware::Next,
) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    match authenticate(&server, &mut request).await {
        Ok(user) => {
            request.extensions_mut().insert(user);
            next.run(request).await
        }
        Err(error) => {
            if let (Some(auditor), Some(id)) =
                (&server.auditor, request.extensions().get::<AuditId>())
            {
                let info = request_info::of(&request);
                crate::audit::failed_authentication(auditor, &request, &info, &id.0, error.code);
            }
            let format = error_format(request.headers().get(header::ACCEPT));
            drain(request.into_body()).await;
            error_response_in(&error, format)
        }
    }
}

/// The user a request's credentials authenticate: its client certificate (which TLS
/// verified against the server's authorities), front-proxy headers, bearer token, or
/// anonymous.
/// A bearer token none of those knows is asked of the embedding server's token
/// authenticator (a service account's token) before it is refused.
async fn authenticate<H>(
    server: &ApiServer<H>,
    request: &mut Request,
) -> Result<crate::auth::UserInfo, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let chain = request
        .extensions()
        .get::<apfkit_https::serve::PeerCertificates>()
        .map(|certificates| certificates.0.clone())
        .unwrap_or_default();
    let refused = match server
        .authenticator
        .authenticate_request(&chain, request.headers_mut())
    {
        Ok(user) => return Ok(user),
        Err(refused) => refused,
    };
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(crate::auth::bearer_token);
    match token {
        Some(token) if chain.is_empty() => match server.token_user(token, &[]).await {
            Some(found) => Ok(found.user.with_authenticated_group()),
            None => Err(refused),
        },
        _ => Err(refused),
    }
}

/// Impersonation (`WithConstrainedImpersonation`), behind the audit layer: the user the
/// request asks to act as, when the authorizer lets it, replaces the authenticated one for
/// every layer behind (and the audit event names both, and the constrained mode that allowed
/// it); a refusal is kube-apiserver's 403.
pub(super) async fn impersonating<H>(
    State(server): State<Arc<ApiServer<H>>>,
    mut request: Request,
    next: axum::middleware::Next,
) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    let impersonates = request.headers().contains_key("impersonate-user");
    let user = request
        .extensions()
        .get::<crate::auth::UserInfo>()
        .cloned()
        .unwrap_or_default();
    // What the request asks for, which the constrained modes ask about (`impersonate-on:`).
    let info = request_info::of(&request);
    match crate::impersonation::impersonated(
        user,
        request.headers(),
        &info,
        server.authorizer.as_deref(),
        &server.impersonation_modes,
    )
    .await
    {
        Ok(impersonation) => {
            if let Some(context) = AuditContext::of(request.extensions()).filter(|_| impersonates) {
                context.set_impersonated(&impersonation.user, impersonation.constraint);
            }
            if impersonates {
                crate::impersonation::remove_headers(request.headers_mut());
            }
            request.extensions_mut().insert(impersonation.user);
            next.run(request).await
        }
        Err(error) => {
            let format = error_format(request.headers().get(header::ACCEPT));
            drain(request.into_body()).await;
            error_response_in(&error, format)
        }
    }
}

/// Authorizes every request that passed flow control, as kube-apiserver's `WithAuthorization`
/// does: its attributes (its `RequestInfo` and user) to the server's authorizer, the decision
/// and reason noted in its audit event, and the 403 of kube-apiserver when it does not allow
/// them.
pub(super) async fn authorized<H>(
    State(server): State<Arc<ApiServer<H>>>,
    request: Request,
    next: axum::middleware::Next,
) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    let Some(authorizer) = &server.authorizer else {
        return next.run(request).await;
    };
    let info = request_info::of(&request);
    let user = request
        .extensions()
        .get::<crate::auth::UserInfo>()
        .cloned()
        .unwrap_or_default();
    let attributes = crate::authz::Attributes::of_request(&info, &user);
    let verdict = authorizer.authorize(&attributes).await;
    let audit = AuditContext::of(request.extensions());
    let annotate = |decision: Option<&str>, reason: &str| {
        if let Some(audit) = &audit {
            if let Some(decision) = decision {
                audit.annotate(crate::authz::DECISION_ANNOTATION, decision);
            }
            audit.annotate(crate::authz::REASON_ANNOTATION, reason);
        }
    };
    if verdict.allowed() {
        annotate(Some("allow"), &verdict.reason);
        return next.run(request).await;
    }
    // Go's `RequestURI`: the path and query as sent.
    let uri = request
        .uri()
        .path_and_query()
        .map_or_else(|| request.uri().path().to_owned(), ToString::to_string);
    let format = error_format(request.headers().get(header::ACCEPT));
    drain(request.into_body()).await;
    // An authorizer that could not decide: kube-apiserver's `responsewriters.InternalError`.
    if let Some(error) = &verdict.error {
        annotate(None, "internal error");
        return super::response::internal_error_text(&uri, error);
    }
    annotate(Some("forbid"), &verdict.reason);
    error_response_in(&attributes.forbidden(&verdict.reason), format)
}

pub(super) async fn route<H>(
    server: &Arc<ApiServer<H>>,
    request: Request,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let path = request.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let accept = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let is_get = request.method() == Method::GET;
    let catalog = server.catalog();
    let info = request_info::of(&request);
    if let Some(review) = reviews::asked(&info, server.authorizer.is_some()) {
        let user = request
            .extensions()
            .get::<crate::auth::UserInfo>()
            .cloned()
            .unwrap_or_default();
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let user_agent = request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        let field_manager =
            form_urlencoded::parse(request.uri().query().unwrap_or_default().as_bytes())
                .find(|(key, _)| key == "fieldManager")
                .map(|(_, value)| value.into_owned());
        let manager = crate::fields::manager_name(field_manager.as_deref(), user_agent);
        let body = read_body(request).await?;
        let object = if review.kind == "SelfSubjectReview" {
            // Its body says nothing the answer needs, but it was read (bounded).
            serde_json::Value::Null
        } else {
            super::request::body_value(server, content_type.as_deref(), &body)?
        };
        // A TokenReview's token may be one the embedding server's code authenticates.
        let from_tokens = match reviews::token_and_audiences(review, &object) {
            Some((token, audiences)) => server.token_user(&token, &audiences).await,
            None => None,
        };
        let answer = reviews::answer(
            review,
            &object,
            &info,
            user,
            (&server.authenticator, from_tokens),
            server.authorizer.as_deref(),
            &manager,
        )
        .await?;
        return Ok(json_response(201, &answer));
    }
    if reviews::at(&info, server.authorizer.is_some()).is_some() {
        return Err(ApiError::method_not_allowed());
    }
    // A group nothing serves is no API path at all: Go's `http.NotFound`, as kube-apiserver's
    // handler chain ends for it (the core group's `/api` always is one).
    if segments.first() == Some(&"apis")
        && segments
            .get(1)
            .is_some_and(|group| !group.is_empty() && catalog.group(group).is_none())
    {
        return Ok(page_not_found());
    }
    // The core group under `/api` only, every other group under `/apis`.
    if info.is_resource_request
        && matches!(info.api_prefix.as_str(), "api" | "apis")
        && (info.api_prefix == "api") == info.api_group.is_empty()
    {
        let target = Target::resolve(&catalog, &info)?;
        // The verb the request was authorized as decides what it does, on every path (the
        // deprecated `/watch/` ones included, which Ruby's kubeclient still watches through).
        let action = Action::of(&info, request.method(), &target)?;
        return resource::serve(server, target, request, action).await;
    }
    // What a client already has of a document (its entity tag): read only past the resources.
    let if_none_match = request
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // The service-account issuer's discovery, once the embedding server has published it.
    let openid = server.openid.get().zip(openid::Document::at(&segments));
    if let (true, Some((metadata, (document, [])))) = (is_get, openid) {
        return Ok(openid::answer(metadata, document));
    }
    let openid_document = matches!(openid, Some((_, (_, []))));
    match segments.as_slice() {
        ["version"] if is_get => Ok(json_response(
            200,
            &serde_json::to_value(&server.version).unwrap_or_default(),
        )),
        [endpoint, check @ ..] if is_get && Endpoint::of(endpoint).is_some() => {
            let endpoint = Endpoint::of(endpoint).expect("matched");
            Ok(server
                .health(endpoint, &check.join("/"), request.uri().query())
                .await)
        }
        ["api"] if is_get => {
            match media::negotiate(accept.as_deref(), false, true, media::Protobuf::No, false)? {
                Wanted::Discovery(version) => Ok(discovery_response(
                    version,
                    &discovery::aggregated(
                        &catalog.resources,
                        &catalog.reviews,
                        &catalog.groups,
                        true,
                        version,
                    ),
                    if_none_match.as_deref(),
                )),
                _ => Ok(json_response(
                    200,
                    &discovery::core_versions(&catalog.groups),
                )),
            }
        }
        ["api", version] if is_get => {
            if !catalog.serves_version("", version) {
                return Err(ApiError::no_route());
            }
            Ok(json_response(
                200,
                &discovery::resource_list(&catalog.resources, &catalog.reviews, "", version),
            ))
        }
        // kube-aggregator's `/apis` handler answers every method alike.
        ["apis"] => {
            match media::negotiate(accept.as_deref(), false, true, media::Protobuf::No, false)? {
                Wanted::Discovery(version) => Ok(discovery_response(
                    version,
                    &discovery::aggregated(
                        &catalog.resources,
                        &catalog.reviews,
                        &catalog.groups,
                        false,
                        version,
                    ),
                    if_none_match.as_deref(),
                )),
                _ => Ok(json_response(200, &discovery::group_list(&catalog.groups))),
            }
        }
        // As is each group's own document.
        ["apis", group] if !group.is_empty() => {
            let group = catalog.group(group).ok_or_else(ApiError::no_route)?;
            Ok(json_response(200, &discovery::group_document(group)))
        }
        ["apis", group, version] if is_get => {
            if group.is_empty() || !catalog.serves_version(group, version) {
                return Err(ApiError::no_route());
            }
            Ok(json_response(
                200,
                &discovery::resource_list(&catalog.resources, &catalog.reviews, group, version),
            ))
        }
        // kube-openapi answers the index through Go's `http.ServeContent`, whose sniffing
        // finds JSON to be text.
        ["openapi", "v3"] if is_get => Ok(respond(
            200,
            "text/plain; charset=utf-8",
            serde_json::to_vec(&openapi::index(catalog.openapi_documents(&server.version)))
                .unwrap_or_default(),
        )),
        ["openapi", "v2"] if is_get => Ok(openapi_answers::swagger_response(
            catalog.swagger(&server.version),
            accept.as_deref(),
            request.headers().get(header::IF_NONE_MATCH),
        )),
        ["openapi", "v3", root @ ..] if is_get && !root.is_empty() => {
            let wanted = root.join("/");
            let found = catalog
                .openapi_documents(&server.version)
                .iter()
                .find(|document| document.root == wanted);
            // kube-openapi's handler answers a document it does not have with a bare 404.
            let Some(document) = found else {
                let mut response = Response::new(axum::body::Body::empty());
                *response.status_mut() = axum::http::StatusCode::NOT_FOUND;
                return Ok(response);
            };
            let asked = openapi_answers::V3Asked {
                root: &wanted,
                query: request.uri().query(),
                accept: accept.as_deref(),
                if_none_match: if_none_match.as_deref(),
            };
            Ok(openapi_answers::openapi_v3_response(&asked, document))
        }
        _ if !is_get && (served_on_get(&catalog, &segments) || openid_document) => {
            Err(ApiError::method_not_allowed())
        }
        ["api" | "apis", ..] => Err(ApiError::no_route()),
        // Under a go-restful web service's root, a path none of its routes takes is
        // go-restful's 404, a `Status` (kube's service error handler).
        ["version", _, ..] => Err(ApiError::no_route()),
        _ if openid.is_some() => Err(ApiError::no_route()),
        _ => Ok(page_not_found()),
    }
}

/// Go's `http.NotFound`: what kube-apiserver answers at a path outside its API (and under a
/// group it does not serve).
fn page_not_found() -> Response {
    respond(404, "text/plain; charset=utf-8", "404 page not found\n")
}

/// Whether a path that is not a resource's is served to a GET: another method there is 405,
/// any other path 404, as kube-apiserver answers for paths it has no route for (`/api/v1`
/// included when no core resource is served here).
pub(super) fn served_on_get<H>(catalog: &Catalog<H>, segments: &[&str]) -> bool {
    match segments {
        ["version" | "api" | "apis"] | ["healthz" | "livez" | "readyz", ..] => true,
        ["openapi", "v2"] | ["openapi", "v3", ..] => true,
        ["api", version] => catalog.serves_version("", version),
        ["apis", group] => !group.is_empty() && catalog.group(group).is_some(),
        ["apis", group, version] => !group.is_empty() && catalog.serves_version(group, version),
        _ => false,
    }
}

/// An aggregated discovery document (`body`, written in `content_type`) as kube's
/// `ServeHTTPWithETag` answers it: `ETag` (the document's SHA-512 in upper-case hex),
/// `Vary: Accept`, `Cache-Control: public`, and an empty `304` when the client's
/// `If-None-Match` is exactly that tag. The aggregator answers its merged `/apis` through it.
pub fn aggregated_discovery_answer(
    content_type: &str,
    body: Vec<u8>,
    if_none_match: Option<&str>,
) -> Response {
    let tag = format!("\"{}\"", super::entity_tag::sha512_hex(&body));
    let mut response = if if_none_match == Some(tag.as_str()) {
        let mut response = Response::new(axum::body::Body::empty());
        *response.status_mut() = axum::http::StatusCode::NOT_MODIFIED;
        response
    } else {
        respond(200, content_type, body)
    };
    let headers = response.headers_mut();
    if let Ok(tag) = axum::http::HeaderValue::from_str(&tag) {
        headers.insert(axum::http::header::ETAG, tag);
    }
    headers.insert(
        axum::http::header::VARY,
        axum::http::HeaderValue::from_static("Accept"),
    );
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("public"),
    );
    response
}

/// Aggregated discovery (`APIGroupDiscoveryList` of `version`) as its handler answers it:
/// with its entity tag, and `304` to a client that has it.
fn discovery_response(
    version: &str,
    document: &serde_json::Value,
    if_none_match: Option<&str>,
) -> Response {
    let content_type = if version == "v2" {
        media::DISCOVERY_V2
    } else {
        media::DISCOVERY_V2BETA1
    };
    aggregated_discovery_answer(
        content_type,
        serde_json::to_vec(document).unwrap_or_default(),
        if_none_match,
    )
}
