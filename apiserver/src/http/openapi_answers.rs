//! The OpenAPI documents' answers as kube-openapi's handlers write them: `/openapi/v2` in
//! JSON or protobuf with its entity tag, and each `/openapi/v3/<group-version>` document with
//! its hash as entity tag, `?hash=` answered as cacheable or redirected to the current hash,
//! and `304` to a client that has it.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::media;
use super::openapi;
use super::response::respond;

/// `/openapi/v2` as kube-openapi's handler answers it: in JSON or in protobuf (gnostic's
/// messages), the first of those the client's `Accept` takes (its clauses ordered as
/// goautoneg orders them), 406 to a client that takes neither, with the document's entity
/// tag, and `304` to a client that has the document already.
pub(super) fn swagger_response(
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

/// A client's request for a `/openapi/v3/<group-version>` document: what decides the answer.
pub(super) struct V3Asked<'a> {
    /// The group-version's path after `/openapi/v3/` (`apis/g/v1`, `api/v1`).
    pub(super) root: &'a str,
    /// The request's query (`hash=`).
    pub(super) query: Option<&'a str>,
    pub(super) accept: Option<&'a str>,
    pub(super) if_none_match: Option<&'a str>,
}

/// A `/openapi/v3/<group-version>` document as kube-openapi's `HandleGroupVersion` answers
/// it: `Vary: Accept`; the document in JSON, the first form of the client's `Accept` (a
/// protobuf one is refused, decision 271), with its hash as entity tag; to `?hash=` of
/// another hash a `301` to the current one, to the current hash a cacheable answer
/// (`Cache-Control: public, immutable`, expiring in a year); `304` to a client whose
/// `If-None-Match` names the tag. An `Accept` with no clause at all is the bare `200` its
/// handler leaves.
pub(super) fn openapi_v3_response(asked: &V3Asked<'_>, document: &openapi::Document) -> Response {
    let accept = asked.accept.filter(|a| !a.is_empty()).unwrap_or("*/*");
    // Its handler returns without writing: the headers it set stay in the timeout filter's
    // copy, and the client gets a bare 200.
    if accept_clauses(accept).is_empty() {
        return Response::new(axum::body::Body::empty());
    }
    let mut response = openapi_v3_answer(accept, asked, document);
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    response
}

fn openapi_v3_answer(accept: &str, asked: &V3Asked<'_>, document: &openapi::Document) -> Response {
    let bare = |code: StatusCode| {
        let mut response = Response::new(axum::body::Body::empty());
        *response.status_mut() = code;
        response
    };
    let json = accept_clauses(accept)
        .iter()
        .find_map(|(kind, subtype, _)| {
            ((*kind == "application" || *kind == "*") && (*subtype == "json" || *subtype == "*"))
                .then_some(())
        });
    if json.is_none() {
        return bare(StatusCode::NOT_ACCEPTABLE);
    }
    let hash = &document.hash;
    let tag = format!("\"{hash}\"");
    let asked_hash = form_urlencoded::parse(asked.query.unwrap_or_default().as_bytes())
        .find(|(key, _)| key == "hash")
        .map(|(_, value)| value.into_owned())
        .filter(|value| !value.is_empty());
    let mut response = match &asked_hash {
        // Go's `http.Redirect` after the content type was set: no body.
        Some(other) if other != hash => {
            let mut response = bare(StatusCode::MOVED_PERMANENTLY);
            if let Ok(location) =
                HeaderValue::from_str(&format!("/openapi/v3/{}?hash={hash}", asked.root))
            {
                response.headers_mut().insert(header::LOCATION, location);
            }
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(media::JSON));
            response
        }
        _ if asked
            .if_none_match
            .is_some_and(|tags| names_tag(tags, &tag)) =>
        {
            bare(StatusCode::NOT_MODIFIED)
        }
        _ => respond(200, media::JSON, document.json.clone()),
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, value);
    }
    if asked_hash.as_deref() == Some(hash.as_str()) {
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, immutable"),
        );
        let in_a_year = k8s_openapi::jiff::Timestamp::now()
            .to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC)
            .checked_add(k8s_openapi::jiff::Span::new().years(1))
            .ok();
        if let Some(expires) = in_a_year
            .and_then(|t| {
                k8s_openapi::jiff::fmt::strtime::format("%a, %d %b %Y %H:%M:%S UTC", &t).ok()
            })
            .and_then(|text| HeaderValue::from_str(&text).ok())
        {
            headers.insert(header::EXPIRES, expires);
        }
    }
    response
}

/// Whether an `If-None-Match` names `tag` as Go's `checkIfNoneMatch` reads it: `*`, or a
/// listed tag equal to it once a weak tag's `W/` is set aside.
fn names_tag(if_none_match: &str, tag: &str) -> bool {
    if_none_match.split(',').any(|listed| {
        let listed = listed.trim();
        listed == "*" || listed.trim_start_matches("W/") == tag
    })
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
    let clauses = accept_clauses(accept);
    clauses.iter().find_map(|(kind, subtype, _)| {
        FORMS.iter().find_map(|(form_subtype, form)| {
            ((*kind == "application" || *kind == "*")
                && (subtype == form_subtype || *subtype == "*"))
                .then_some(*form)
        })
    })
}

/// goautoneg's clauses of an `Accept` (type, subtype, `q`), sorted as it sorts them: a
/// higher `q`, then a type, then a subtype that is not `*`, by Go's insertion sort for short
/// lists. A media range without `/` (other than `*`) is no clause.
fn accept_clauses(accept: &str) -> Vec<(&str, &str, f64)> {
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
    clauses
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
