//! The service-account issuer's OpenID Connect discovery, as kube-apiserver serves it
//! (`pkg/routes/openidmetadata.go`): the provider's configuration at
//! `/.well-known/openid-configuration` and the keys that verify its tokens at
//! `/openid/v1/jwks`, both rendered once by the embedding server and cacheable by anyone for
//! an hour. Relying parties outside the cluster (a cloud's workload identity, Vault) read them
//! to verify service-account tokens; kube's bootstrap policy lets every service account read
//! them (`system:service-account-issuer-discovery`).

use axum::http::{HeaderValue, header};
use axum::response::Response;

/// The path of the provider's configuration (`serviceaccount.OpenIDConfigPath`).
pub const CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
/// The path of its JSON Web Key Set (`serviceaccount.JWKSPath`).
pub const KEYS_PATH: &str = "/openid/v1/jwks";

/// The two documents of the issuer's discovery, as the embedding server renders them
/// (`apfkit-corekinds`' `ServiceAccountTokens::openid_metadata`) and
/// [`super::ApiServer::set_openid_metadata`] serves them.
#[derive(Debug, Clone)]
pub struct OpenIdMetadata {
    /// The OpenID provider configuration: issuer, `jwks_uri`, response and subject types,
    /// signing algorithms.
    pub configuration: bytes::Bytes,
    /// The JSON Web Key Set of the keys that sign the issuer's tokens.
    pub keys: bytes::Bytes,
}

/// Which of the two documents a path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Document {
    Configuration,
    Keys,
}

impl Document {
    /// The document whose path `segments` (the path's, slashes trimmed) is or lies under,
    /// with the segments past it (none: the document itself).
    pub(super) fn at<'a>(segments: &'a [&'a str]) -> Option<(Self, &'a [&'a str])> {
        [
            (Document::Configuration, CONFIGURATION_PATH),
            (Document::Keys, KEYS_PATH),
        ]
        .into_iter()
        .find_map(|(document, path)| {
            let root = path.trim_start_matches('/').split('/');
            let depth = root.clone().count();
            let under = segments.len() >= depth && root.zip(segments).all(|(a, b)| a == *b);
            under.then(|| (document, &segments[depth..]))
        })
    }
}

/// The answer to a GET of `document`: its JSON, as `application/json` or
/// `application/jwk-set+json` (RFC 7517), `Cache-Control: public, max-age=3600` in place of
/// the API's `no-cache, private`.
pub(super) fn answer(metadata: &OpenIdMetadata, document: Document) -> Response {
    let (content_type, body) = match document {
        Document::Configuration => ("application/json", metadata.configuration.clone()),
        Document::Keys => ("application/jwk-set+json", metadata.keys.clone()),
    };
    let mut response = Response::new(axum::body::Body::from(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    response
}
