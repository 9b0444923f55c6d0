//! Where a request goes: authenticated first (its user put in the request's extensions beside
//! its [`crate::request_info::RequestInfo`], for every layer behind), then to the version,
//! health, discovery and OpenAPI documents, or to a resource's verbs by the request's
//! information.

use std::sync::Arc;

use apfkit_runtime::Object;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::Response;

use super::action::Action;
use super::audited::AuditId;
use super::health::Endpoint;
use super::media::{self, Wanted};
use super::request::{Target, drain, read_body};
use super::resource;
use super::response::{error_response, json_response, respond};
use super::server::{ApiServer, Catalog};
use super::{discovery, openapi, reviews};
use crate::audit::AuditContext;
use crate::error::ApiError;
use crate::request_info;

pub(super) async fn handle<H>(State(server): State<Arc<ApiServer<H>>>, request: Request) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    match route(&server, request).await {
        Ok(response) => response,
        Err(error) => error_response(&error),
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
    match authenticate(&server, &mut request) {
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
            drain(request.into_body()).await;
            error_response(&error)
        }
    }
}

/// The user a request's credentials authenticate: its client certificate (which TLS
/// verified against the server's authorities), front-proxy headers, bearer token, or
/// anonymous.
fn authenticate<H>(
    server: &ApiServer<H>,
    request: &mut Request,
) -> Result<crate::auth::UserInfo, ApiError> {
    let chain = request
        .extensions()
        .get::<apfkit_https::serve::PeerCertificates>()
        .map(|certificates| certificates.0.clone())
        .unwrap_or_default();
    server
        .authenticator
        .authenticate_request(&chain, request.headers_mut())
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
            drain(request.into_body()).await;
            error_response(&error)
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
    drain(request.into_body()).await;
    // An authorizer that could not decide: kube-apiserver's `responsewriters.InternalError`.
    if let Some(error) = &verdict.error {
        annotate(None, "internal error");
        return super::response::internal_error_text(&uri, error);
    }
    annotate(Some("forbid"), &verdict.reason);
    error_response(&attributes.forbidden(&verdict.reason))
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
        let answer = reviews::answer(
            review,
            &object,
            &info,
            user,
            &server.authenticator,
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
            match media::negotiate(accept.as_deref(), false, true, false, false)? {
                Wanted::Discovery(version) => Ok(discovery_response(
                    version,
                    &discovery::aggregated(
                        &catalog.resources,
                        &catalog.reviews,
                        &catalog.groups,
                        true,
                        version,
                    ),
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
        ["apis"] => match media::negotiate(accept.as_deref(), false, true, false, false)? {
            Wanted::Discovery(version) => Ok(discovery_response(
                version,
                &discovery::aggregated(
                    &catalog.resources,
                    &catalog.reviews,
                    &catalog.groups,
                    false,
                    version,
                ),
            )),
            _ => Ok(json_response(200, &discovery::group_list(&catalog.groups))),
        },
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
        ["openapi", "v2"] if is_get => Ok(swagger_response(
            catalog.swagger(&server.version),
            accept.as_deref(),
            request.headers().get(header::IF_NONE_MATCH),
        )),
        ["openapi", "v3", root @ ..] if is_get && !root.is_empty() => {
            let wanted = root.join("/");
            let found = catalog
                .openapi_documents(&server.version)
                .iter()
                .find(|(group_version, _)| *group_version == wanted)
                .map(|(_, document)| document.clone());
            // kube-openapi's handler answers a document it does not have with a bare 404.
            Ok(found.map_or_else(
                || {
                    let mut response = Response::new(axum::body::Body::empty());
                    *response.status_mut() = axum::http::StatusCode::NOT_FOUND;
                    response
                },
                |document| respond(200, media::JSON, document),
            ))
        }
        _ if !is_get && served_on_get(&catalog, &segments) => Err(ApiError::method_not_allowed()),
        ["api" | "apis", ..] => Err(ApiError::no_route()),
        _ => Ok(page_not_found()),
    }
}

/// `/openapi/v2` as kube-openapi's handler answers it: in JSON or in protobuf (gnostic's
/// messages), the first of those the client's `Accept` takes (its clauses ordered as
/// goautoneg orders them), 406 to a client that takes neither, with the document's entity
/// tag, and `304` to a client that has the document already.
fn swagger_response(
    document: Option<&openapi::Swagger>,
    accept: Option<&str>,
    if_none_match: Option<&axum::http::HeaderValue>,
) -> Response {
    let bare = |code: StatusCode| {
        let mut response = Response::new(axum::body::Body::empty());
        *response.status_mut() = code;
        response
    };
    let Some(document) = document else {
        return bare(StatusCode::NOT_FOUND);
    };
    let accept = accept.filter(|a| !a.is_empty()).unwrap_or("*/*");
    let format = swagger_format(accept);
    let mut response = match format {
        None => bare(StatusCode::NOT_ACCEPTABLE),
        Some(_)
            if if_none_match
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| {
                    v.split(',').any(|t| {
                        t.trim().trim_start_matches("W/") == format!("\"{}\"", document.tag)
                    })
                }) =>
        {
            bare(StatusCode::NOT_MODIFIED)
        }
        Some(SwaggerFormat::Json) => respond(200, media::JSON, document.json.clone()),
        Some(SwaggerFormat::Protobuf) => respond(200, SWAGGER_PROTOBUF, document.protobuf.clone()),
    };
    let headers = response.headers_mut();
    headers.insert(header::VARY, axum::http::HeaderValue::from_static("Accept"));
    // Only an answer of the document carries its tag: a client's HTTP cache (kubectl's)
    // that kept a 406 must not have it confirmed by a 304.
    if format.is_some()
        && let Ok(tag) = axum::http::HeaderValue::from_str(&format!("\"{}\"", document.tag))
    {
        headers.insert(header::ETAG, tag);
    }
    response
}

/// The media type `/openapi/v2` answers protobuf in (also to a client that asks for its
/// deprecated name, `…spec.v2@v1.0+protobuf`).
const SWAGGER_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// A form of the v2 document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SwaggerFormat {
    Json,
    Protobuf,
}

/// The form kube-openapi's handler answers to `accept`: goautoneg's clauses (type and
/// subtype, `q`), sorted by its order (a higher `q`, then a type, then a subtype that is not
/// `*`, by Go's insertion sort for short lists), and the first clause that matches JSON, the
/// deprecated protobuf name or the protobuf one, in that order.
fn swagger_format(accept: &str) -> Option<SwaggerFormat> {
    const FORMS: [(&str, SwaggerFormat); 3] = [
        ("json", SwaggerFormat::Json),
        (
            "com.github.proto-openapi.spec.v2@v1.0+protobuf",
            SwaggerFormat::Protobuf,
        ),
        (
            "com.github.proto-openapi.spec.v2.v1.0+protobuf",
            SwaggerFormat::Protobuf,
        ),
    ];
    let mut clauses: Vec<(&str, &str, f64)> = accept
        .split(',')
        .filter_map(|part| {
            let part = part.trim_matches(' ');
            let mut pieces = part.split(';');
            let media = pieces.next().unwrap_or_default();
            let (kind, subtype) = match media.split_once('/') {
                None if media.trim_matches(' ') == "*" => ("*", "*"),
                None => return None,
                Some((_, subtype)) if subtype.contains('/') => return None,
                Some((kind, subtype)) => (kind.trim_matches(' '), subtype.trim_matches(' ')),
            };
            let mut q = 1.0;
            for parameter in pieces {
                if let Some((name, value)) = parameter.split_once('=')
                    && !value.contains('=')
                    && name.trim_matches(' ') == "q"
                {
                    q = value.parse::<f32>().map_or(0.0, f64::from);
                }
            }
            Some((kind, subtype, q))
        })
        .collect();
    let before = |a: &(&str, &str, f64), b: &(&str, &str, f64)| {
        a.2 > b.2 || (a.0 != "*" && b.0 == "*") || (a.1 != "*" && b.1 == "*")
    };
    for i in 1..clauses.len() {
        let mut j = i;
        while j > 0 && before(&clauses[j], &clauses[j - 1]) {
            clauses.swap(j, j - 1);
            j -= 1;
        }
    }
    clauses.iter().find_map(|(kind, subtype, _)| {
        FORMS.iter().find_map(|(form_subtype, form)| {
            ((*kind == "application" || *kind == "*")
                && (subtype == form_subtype || *subtype == "*"))
                .then_some(*form)
        })
    })
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

pub(super) fn discovery_response(version: &str, document: &serde_json::Value) -> Response {
    let content_type = if version == "v2" {
        media::DISCOVERY_V2
    } else {
        media::DISCOVERY_V2BETA1
    };
    respond(
        200,
        content_type,
        serde_json::to_vec(document).unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_document_is_answered_in_the_form_accepted_with_its_tag() {
        let document = openapi::Swagger {
            json: b"{}".to_vec(),
            protobuf: vec![0x0a, 0x03, b'2', b'.', b'0'],
            tag: "AB12".to_owned(),
        };
        let answered = |accept: Option<&str>, tag: Option<&str>| {
            let tag = tag.map(|t| axum::http::HeaderValue::from_str(t).unwrap());
            let response = swagger_response(Some(&document), accept, tag.as_ref());
            let etag = response.headers().get(header::ETAG).cloned();
            let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
            (response.status().as_u16(), etag, content_type)
        };
        let (code, etag, content_type) = answered(None, None);
        assert_eq!(code, 200);
        assert_eq!(etag.unwrap(), "\"AB12\"");
        assert_eq!(content_type.unwrap(), "application/json");
        assert_eq!(answered(Some("application/json, */*"), None).0, 200);
        assert_eq!(answered(Some("application/*;q=0.5"), None).0, 200);
        // A client that has it already.
        assert_eq!(answered(None, Some("\"AB12\"")).0, 304);
        assert_eq!(answered(None, Some("\"other\"")).0, 200);
        // Protobuf, under either name, answered under the current one with the same tag.
        let deprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        for accept in [deprecated, SWAGGER_PROTOBUF] {
            let (code, etag, content_type) = answered(Some(accept), None);
            assert_eq!(code, 200, "{accept}");
            assert_eq!(etag.unwrap(), "\"AB12\"");
            assert_eq!(content_type.unwrap(), SWAGGER_PROTOBUF);
        }
        // The clauses in goautoneg's order: a higher q first; then a specific type or
        // subtype before a wildcard; then the header's order.
        let form = |accept: &str| swagger_format(accept);
        assert_eq!(
            form(&format!("{deprecated}, application/json")),
            Some(SwaggerFormat::Protobuf)
        );
        assert_eq!(
            form(&format!("application/json;q=0.5, {deprecated}")),
            Some(SwaggerFormat::Protobuf)
        );
        assert_eq!(
            form(&format!("*/*, {deprecated}")),
            Some(SwaggerFormat::Protobuf)
        );
        assert_eq!(form("application/*"), Some(SwaggerFormat::Json));
        assert_eq!(form("*"), Some(SwaggerFormat::Json));
        // goautoneg keeps a clause of q=0, and an unreadable q is 0.
        assert_eq!(form("application/json;q=0"), Some(SwaggerFormat::Json));
        assert_eq!(form("application/json;q=x"), Some(SwaggerFormat::Json));
        assert_eq!(form("application/yaml"), None);
        assert_eq!(form("text/*, application"), None);
        let (code, etag, _) = answered(Some("application/yaml"), None);
        assert_eq!((code, etag), (406, None));
        assert!(swagger_response(None, None, None).status() == StatusCode::NOT_FOUND);
    }
}
