//! Who is asking, as kube-apiserver authenticates a request
//! (`k8s.io/apiserver/pkg/authentication`): a client certificate signed by the server's CA
//! (its subject's common name is the user, its organizations the groups), a bearer token from
//! a file in `--token-auth-file` format, or else an anonymous request, which can be refused;
//! every authenticated user is in `system:authenticated`. Impersonation, which the
//! authorizer allows, is [`crate::impersonation`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::http::HeaderMap;

use crate::error::ApiError;

/// The anonymous user.
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of anonymous requests.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group of every authenticated user.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group that may do anything, impersonation included.
pub const MASTERS: &str = "system:masters";

/// An authenticated user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name.
    pub name: String,
    /// The uid, when the authenticator knows one.
    pub uid: String,
    /// The groups.
    pub groups: Vec<String>,
    /// What else the authenticator knows of the user (`user.Info.GetExtra`), by key: a
    /// client certificate's credential id ([`CREDENTIAL_ID`]), impersonation's
    /// `Impersonate-Extra-*`, a front proxy's `X-Remote-Extra-*`; read by authorizers that
    /// care (RBAC does not) and written to audit events and `SelfSubjectReview`s.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// The extra that names the credential a user authenticated with (`user.CredentialIDKey`).
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

impl UserInfo {
    /// The anonymous user, in `system:unauthenticated`.
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS.to_owned(),
            groups: vec![UNAUTHENTICATED.to_owned()],
            ..UserInfo::default()
        }
    }

    /// The user of a client certificate (DER): the subject's common name, its organizations
    /// as groups, and the certificate's fingerprint as its credential id
    /// (`authentication.kubernetes.io/credential-id`: `X509SHA256=` and the SHA-256 of the
    /// certificate in hex, as k8s.io/apiserver's `CommonNameUserConversion` gives it); `None`
    /// for a certificate without a common name.
    pub fn of_certificate(der: &[u8]) -> Option<Self> {
        let (_, certificate) = x509_parser::parse_x509_certificate(der).ok()?;
        let subject = certificate.subject();
        let name = subject.iter_common_name().next()?.as_str().ok()?.to_owned();
        let groups = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_owned))
            .collect();
        let fingerprint: String = <sha2::Sha256 as sha2::Digest>::digest(der)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(UserInfo {
            name,
            groups,
            extra: BTreeMap::from([(
                CREDENTIAL_ID.to_owned(),
                vec![format!("X509SHA256={fingerprint}")],
            )]),
            ..UserInfo::default()
        })
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Adds `system:authenticated` unless the user is anonymous or already in it
    /// (`AuthenticatedGroupAdder`).
    pub(crate) fn with_authenticated_group(mut self) -> Self {
        if self.name != ANONYMOUS && !self.in_group(AUTHENTICATED) {
            self.groups.push(AUTHENTICATED.to_owned());
        }
        self
    }
}

/// A token file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("token file: {0}")]
pub struct TokenFileError(String);

/// The header a front proxy names a request's user in: what client-go's
/// `SetAuthProxyHeaders` sends and kube's `--requestheader-username-headers` reads by
/// default (lower-case, as HTTP/2 writes header names).
pub const REMOTE_USER_HEADER: &str = "x-remote-user";
/// The header of the user's uid (`--requestheader-uid-headers`).
pub const REMOTE_UID_HEADER: &str = "x-remote-uid";
/// The header of the user's groups, once per group (`--requestheader-group-headers`).
pub const REMOTE_GROUP_HEADER: &str = "x-remote-group";
/// The prefix of the headers of the user's extra values, the key after it, percent-encoded
/// (`--requestheader-extra-headers-prefix`).
pub const REMOTE_EXTRA_HEADER_PREFIX: &str = "x-remote-extra-";

/// kube's request-header authentication (`--requestheader-*`, k8s.io/apiserver
/// `authentication/request/headerrequest`): a request whose client certificate the
/// front-proxy authority signed, with a common name allowed, is the user its headers name,
/// as an aggregator forwards it.
#[derive(Clone)]
pub struct RequestHeader {
    client_ca_pem: String,
    verifier: Arc<dyn rustls::server::danger::ClientCertVerifier>,
    /// Leaf certificates already checked: whether the authority signed each and its common
    /// name, for a minute (a connection's requests present the same certificate).
    checked: Arc<std::sync::Mutex<Checked>>,
    /// Common names the front proxy's certificate may have; empty: any
    /// (`--requestheader-allowed-names`).
    pub allowed_names: Vec<String>,
    /// Headers of the user name, the first with a value wins
    /// (`--requestheader-username-headers`).
    pub username_headers: Vec<String>,
    /// Headers of the uid (`--requestheader-uid-headers`).
    pub uid_headers: Vec<String>,
    /// Headers of the groups, every value (`--requestheader-group-headers`).
    pub group_headers: Vec<String>,
    /// Prefixes of the extra fields' headers (`--requestheader-extra-headers-prefix`).
    pub extra_header_prefixes: Vec<String>,
}

impl std::fmt::Debug for RequestHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestHeader")
            .field("allowed_names", &self.allowed_names)
            .field("username_headers", &self.username_headers)
            .finish_non_exhaustive()
    }
}

/// Leaf certificates checked by request-header authentication: the common name of those
/// the front-proxy authority signed (`None`: it did not), and when.
type Checked = HashMap<Vec<u8>, (Option<String>, std::time::Instant)>;

/// Why request-header authentication could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("requestheader client CA: {0}")]
pub struct RequestHeaderError(String);

impl RequestHeader {
    /// Request headers signed by the authority of `client_ca_pem`, with the header names an
    /// extension server takes by default (`DelegatingAuthenticationOptions`: `X-Remote-User`,
    /// `X-Remote-Uid`, `X-Remote-Group`, `X-Remote-Extra-`) and any common name.
    ///
    /// # Errors
    ///
    /// PEM that holds no usable authority.
    pub fn new(client_ca_pem: &str) -> Result<Self, RequestHeaderError> {
        use rustls::pki_types::pem::PemObject as _;
        let mut roots = rustls::RootCertStore::empty();
        for certificate in
            rustls::pki_types::CertificateDer::pem_slice_iter(client_ca_pem.as_bytes())
        {
            let certificate = certificate.map_err(|e| RequestHeaderError(e.to_string()))?;
            roots
                .add(certificate)
                .map_err(|e| RequestHeaderError(e.to_string()))?;
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .map_err(|e| RequestHeaderError(e.to_string()))?;
        let names = |name: &str| vec![name.to_owned()];
        Ok(RequestHeader {
            client_ca_pem: client_ca_pem.to_owned(),
            verifier,
            checked: Arc::default(),
            allowed_names: Vec::new(),
            username_headers: names(REMOTE_USER_HEADER),
            uid_headers: names(REMOTE_UID_HEADER),
            group_headers: names(REMOTE_GROUP_HEADER),
            extra_header_prefixes: names(REMOTE_EXTRA_HEADER_PREFIX),
        })
    }

    /// The authority, PEM, which the server's TLS must also accept client certificates of.
    pub fn client_ca_pem(&self) -> &str {
        &self.client_ca_pem
    }

    /// The common name of `chain`'s leaf when the front-proxy authority signed it (checked
    /// once a minute per certificate; at most 1,024 remembered).
    fn signed(&self, chain: &[rustls::pki_types::CertificateDer<'static>]) -> Option<String> {
        const FOR: std::time::Duration = std::time::Duration::from_secs(60);
        const REMEMBERED: usize = 1024;
        let (leaf, intermediates) = chain.split_first()?;
        let now = std::time::Instant::now();
        if let Ok(checked) = self.checked.lock()
            && let Some((name, at)) = checked.get(leaf.as_ref())
            && now.duration_since(*at) < FOR
        {
            return name.clone();
        }
        let name = self
            .verifier
            .verify_client_cert(leaf, intermediates, rustls::pki_types::UnixTime::now())
            .ok()
            .map(|_| {
                UserInfo::of_certificate(leaf)
                    .map(|user| user.name)
                    .unwrap_or_default()
            });
        if let Ok(mut checked) = self.checked.lock() {
            if checked.len() >= REMEMBERED {
                checked.clear();
            }
            checked.insert(leaf.to_vec(), (name.clone(), now));
        }
        name
    }

    /// The user the headers name (`requestHeaderAuthRequestHandler`), the headers used
    /// removed (`ClearAuthenticationHeaders`); `None` without a user name.
    fn user(&self, headers: &mut HeaderMap) -> Option<UserInfo> {
        let first = |headers: &HeaderMap, names: &[String]| {
            names.iter().find_map(|name| {
                headers
                    .get(name.as_str())
                    .and_then(|v| v.to_str().ok())
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned)
            })
        };
        let name = first(headers, &self.username_headers)?;
        let uid = first(headers, &self.uid_headers).unwrap_or_default();
        let groups = self
            .group_headers
            .iter()
            .flat_map(|name| headers.get_all(name.as_str()).iter())
            .filter_map(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .collect();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut extra_names = Vec::new();
        for prefix in &self.extra_header_prefixes {
            let prefix = prefix.to_ascii_lowercase();
            for (header, value) in headers.iter() {
                let Some(key) = header.as_str().strip_prefix(prefix.as_str()) else {
                    continue;
                };
                if let Ok(value) = value.to_str() {
                    extra
                        .entry(unescape_extra_key(key))
                        .or_default()
                        .push(value.to_owned());
                }
                extra_names.push(header.clone());
            }
        }
        for name in self
            .username_headers
            .iter()
            .chain(&self.uid_headers)
            .chain(&self.group_headers)
        {
            headers.remove(name.as_str());
        }
        for name in extra_names {
            headers.remove(name);
        }
        Some(UserInfo {
            name,
            uid,
            groups,
            extra,
        })
    }
}

/// The user a bearer token authenticates through an embedding server's
/// `http::TokenAuthenticator`, and the audiences the token was meant for among those asked (a
/// TokenReview's `status.audiences`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenUser {
    /// Who the token authenticates (without `system:authenticated`, which the server adds).
    pub user: UserInfo,
    /// The audiences asked that the token is for.
    pub audiences: Vec<String>,
}

/// How requests are authenticated.
#[derive(Debug, Clone, Default)]
pub struct Authenticator {
    tokens: HashMap<String, UserInfo>,
    anonymous: bool,
    request_header: Option<RequestHeader>,
}

impl Authenticator {
    /// Client certificates only, and anonymous requests when `anonymous`
    /// (kube-apiserver's `--anonymous-auth`, true by default).
    pub fn new(anonymous: bool) -> Self {
        Authenticator {
            tokens: HashMap::new(),
            anonymous,
            request_header: None,
        }
    }

    /// Also authenticates requests forwarded by a front proxy (an aggregator), as
    /// `request_header` says; the server's TLS then accepts client certificates of its
    /// authority too.
    #[must_use]
    pub fn with_request_header(mut self, request_header: RequestHeader) -> Self {
        self.request_header = Some(request_header);
        self
    }

    /// The request-header authentication, when there is one.
    pub fn request_header(&self) -> Option<&RequestHeader> {
        self.request_header.as_ref()
    }

    /// The user of a request with the client certificate `chain` (verified by TLS; empty
    /// without one): with request-header authentication, a certificate its authority signed
    /// is a front proxy, whose request is the user its headers name (those headers then
    /// removed) if its common name is allowed, and otherwise refused; any other is
    /// [`Authenticator::authenticate`]'s.
    ///
    /// # Errors
    ///
    /// 401 `Unauthorized`.
    pub fn authenticate_request(
        &self,
        chain: &[rustls::pki_types::CertificateDer<'static>],
        headers: &mut HeaderMap,
    ) -> Result<UserInfo, ApiError> {
        if let Some(request_header) = &self.request_header
            && let Some(common_name) = request_header.signed(chain)
        {
            let allowed = request_header.allowed_names.is_empty()
                || request_header.allowed_names.contains(&common_name);
            return match request_header.user(headers).filter(|_| allowed) {
                Some(user) => Ok(user.with_authenticated_group()),
                None => Err(ApiError::unauthorized()),
            };
        }
        let peer = chain
            .first()
            .and_then(|leaf| UserInfo::of_certificate(leaf));
        self.authenticate(peer.as_ref(), headers)
    }

    /// Adds the tokens of a `--token-auth-file`: CSV lines `token,user,uid` with an
    /// optional fourth column of groups (`"group1,group2"`), as kube-apiserver's
    /// `tokenfile` reads them: fewer than three columns is an error, an empty token is
    /// skipped, a repeated token replaces the earlier one.
    ///
    /// # Errors
    ///
    /// A line with fewer than three columns, or CSV that does not parse.
    pub fn with_token_file(mut self, text: &str) -> Result<Self, TokenFileError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::Fields)
            .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
        for (line, record) in reader.records().enumerate() {
            let record = record.map_err(|e| TokenFileError(e.to_string()))?;
            if record.len() < 3 {
                return Err(TokenFileError(format!(
                    "line {}: must have at least 3 columns (token, user name, user uid), found {}",
                    line + 1,
                    record.len()
                )));
            }
            let token = &record[0];
            if token.is_empty() {
                continue;
            }
            let groups = record
                .get(3)
                .filter(|g| !g.is_empty())
                .map(|g| g.split(',').map(str::to_owned).collect())
                .unwrap_or_default();
            self.tokens.insert(
                token.to_owned(),
                UserInfo {
                    name: record[1].to_owned(),
                    uid: record[2].to_owned(),
                    groups,
                    extra: BTreeMap::new(),
                },
            );
        }
        Ok(self)
    }

    /// The user of a request: the client certificate's (`peer`, verified by TLS), else the
    /// bearer token's, else anonymous. A bearer token that is not known is 401, whether or
    /// not anonymous requests are allowed (kube-apiserver does not treat a bad token as
    /// anonymous); so is a request without credentials when they are not.
    ///
    /// # Errors
    ///
    /// 401 `Unauthorized`.
    pub fn authenticate(
        &self,
        peer: Option<&UserInfo>,
        headers: &HeaderMap,
    ) -> Result<UserInfo, ApiError> {
        if let Some(user) = peer {
            return Ok(user.clone().with_authenticated_group());
        }
        let bearer = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token);
        match bearer {
            Some(token) => self.token_user(token).ok_or_else(ApiError::unauthorized),
            None if self.anonymous => Ok(UserInfo::anonymous()),
            None => Err(ApiError::unauthorized()),
        }
    }
}

impl Authenticator {
    /// The user a bearer token authenticates (with `system:authenticated`), if any: what a
    /// TokenReview asks.
    pub fn token_user(&self, token: &str) -> Option<UserInfo> {
        self.tokens
            .get(token)
            .map(|user| user.clone().with_authenticated_group())
    }
}

/// The token of an `Authorization` header, read as k8s.io/apiserver's bearer-token
/// authenticator reads it (`pkg/authentication/request/bearertoken/bearertoken.go`): the
/// header trimmed, split at its first two single spaces, the first part `bearer` in any case,
/// the second the token, anything after it ignored. `Bearer  token` (two spaces) has an empty
/// token, so no token at all.
pub(crate) fn bearer_token(header: &str) -> Option<&str> {
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.to_lowercase() == "bearer" && !token.is_empty()).then_some(token)
}

/// An extra's key from its header, impersonated or forwarded by a front proxy
/// (`unescapeExtraKey`): percent-decoded as Go's
/// `url.PathUnescape` decodes it, or kept as sent when its escapes are malformed.
pub(crate) fn unescape_extra_key(encoded: &str) -> String {
    let bytes = encoded.as_bytes();
    let well_formed = bytes.iter().enumerate().all(|(i, byte)| {
        *byte != b'%'
            || (bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    if !well_formed {
        return encoded.to_owned();
    }
    percent_encoding::percent_decode_str(encoded)
        .decode_utf8_lossy()
        .into_owned()
}

/// The prefix of a service account's user name: `system:serviceaccount:NAMESPACE:NAME`.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The namespace and name of a service account's user name, split without checking them as
/// names (RBAC matches subjects so, `serviceaccount.MatchesUsername`; impersonation also
/// checks them, as `serviceaccount.SplitUsername` does), `None` for any other user.
pub fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use axum::http::HeaderValue;

    /// Request headers of `pairs`, repeated names appended (impersonation's tests use it too).
    pub(crate) fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn tokens_are_read_as_kube_apiservers_token_file() {
        let auth = Authenticator::new(true)
            .with_token_file(
                "\u{feff}t1,alice,1,\"dev,ops\"\n,nobody,2\nt2, bob ,3\nt1,alice2,4,admins\n",
            )
            .unwrap();
        let by = |token: &str| {
            auth.authenticate(
                None,
                &headers(&[("authorization", &format!("Bearer {token}"))]),
            )
        };
        assert_eq!(
            by("t1").unwrap(),
            UserInfo {
                name: "alice2".into(),
                uid: "4".into(),
                groups: vec!["admins".into(), AUTHENTICATED.into()],
                extra: BTreeMap::new(),
            }
        );
        assert_eq!(by("t2").unwrap().name, "bob");
        assert_eq!(by("t2").unwrap().groups, [AUTHENTICATED]);
        let unknown = by("t3").unwrap_err();
        assert_eq!((unknown.code, unknown.reason), (401, "Unauthorized"));
        assert!(Authenticator::new(true).with_token_file("t,u\n").is_err());
        assert!(Authenticator::new(true).with_token_file("t,\"u\n").is_err());
    }

    /// k8s.io/apiserver `pkg/authentication/request/bearertoken/bearertoken_test.go`: what
    /// follows the token is ignored (`TestAuthenticateRequestIncludingValueAfterToken`); a
    /// header without a token is no credential at all, so the request is anonymous
    /// (`TestAuthenticateRequestBadValue`, and `TestBearerToken`'s empty, `Basic`, `Bearer `
    /// and two-space cases).
    #[test]
    fn bearer_tokens_are_parsed_as_kube_apiserver_parses_them() {
        let auth = Authenticator::new(true)
            .with_token_file("token,alice,1\n")
            .unwrap();
        let user = |value: &str| auth.authenticate(None, &headers(&[("authorization", value)]));
        for value in [
            "Bearer token",
            "Bearer token a",
            "Bearer token a b c",
            "Bearer token   a",
            "bearer token",
            "BEARER token",
            "  Bearer token  ",
        ] {
            assert_eq!(user(value).unwrap().name, "alice", "{value:?}");
        }
        for value in [
            "",
            "Bearer",
            "Bearer ",
            "bear token",
            "Bearer: token",
            "Basic 123",
            "Bearer  token",
        ] {
            assert_eq!(user(value).unwrap(), UserInfo::anonymous(), "{value:?}");
        }
    }

    #[test]
    fn anonymous_requests_unless_refused() {
        let open = Authenticator::new(true);
        assert_eq!(
            open.authenticate(None, &HeaderMap::new()).unwrap(),
            UserInfo::anonymous()
        );
        let closed = Authenticator::new(false);
        assert_eq!(
            closed
                .authenticate(None, &HeaderMap::new())
                .unwrap_err()
                .code,
            401
        );
        // A client certificate's user wins over any token.
        let peer = UserInfo {
            name: "admin".into(),
            groups: vec![MASTERS.into()],
            ..UserInfo::default()
        };
        let user = closed
            .authenticate(Some(&peer), &headers(&[("authorization", "Bearer nope")]))
            .unwrap();
        assert_eq!(user.groups, [MASTERS, AUTHENTICATED]);
    }

    #[test]
    fn certificates_name_the_user_and_groups() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "dev");
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate = params.self_signed(&key).unwrap();
        let user = UserInfo::of_certificate(certificate.der()).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["dev"]);
        // Its credential id: the certificate's SHA-256, as `sha256sum` prints it.
        let id = &user.extra[CREDENTIAL_ID];
        assert_eq!(id.len(), 1);
        let hex = id[0].strip_prefix("X509SHA256=").unwrap();
        assert_eq!(hex.len(), 64);
        assert!(
            hex.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert!(UserInfo::of_certificate(b"not a certificate").is_none());
    }

    #[test]
    fn service_account_names_split_as_kube_splits_them() {
        assert_eq!(
            service_account("system:serviceaccount:ns:name"),
            Some(("ns", "name"))
        );
        assert_eq!(service_account("system:serviceaccount:ns"), None);
        assert_eq!(service_account("system:serviceaccount::name"), None);
        assert_eq!(service_account("system:serviceaccount:ns:a:b"), None);
        assert_eq!(service_account("alice"), None);
    }
}
