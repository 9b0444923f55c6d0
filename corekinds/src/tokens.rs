//! Service-account tokens, as kube-apiserver issues and authenticates them: the TokenRequest
//! subresource `serviceaccounts/NAME/token` (`pkg/registry/core/serviceaccount/storage/token.go`)
//! makes a JWT signed with the server's key (ES256), for the audiences asked (the server's
//! own by default) and a lifetime of `expirationSeconds` (3600 by default, 600 at least),
//! optionally bound to a Secret; a bearer token of these authenticates as the service account
//! (`system:serviceaccount:NAMESPACE:NAME`, in `system:serviceaccounts` and
//! `system:serviceaccounts:NAMESPACE`) while it has not expired and its account (and bound
//! Secret) is there with the uid it names (`pkg/serviceaccount/claims.go`'s validator).

use std::collections::BTreeMap;

use apfkit_apiextensions::ServedObject;
use apfkit_apiserver::auth::{TokenUser, UserInfo};
use apfkit_apiserver::error::{ApiError, Cause, Subject};
use apfkit_apiserver::http::{
    ApiServer, Created, CreatedFuture, OPENID_KEYS_PATH, OpenIdMetadata, SubresourceCreator,
    TokenAuthenticator, TokenFuture,
};
use apfkit_apiserver::store::{Objects, Place, Served};
use apfkit_apiserver::tls::SigningKey;
use apfkit_runtime::Object;
use apfkit_runtime::field::{BadValue, FieldError};
use apfkit_runtime::identity::GroupVersionKind;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The issuer kube-apiserver's clusters are set up with most often (kubeadm, kind), and so
/// apfkit's: its tokens' `iss`, and the audience they are for by default.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// A token's lifetime when the request names none (`SetDefaults_TokenRequestSpec`).
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a request may ask for.
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest.
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// The extra that names a token's `jti` (`authentication.kubernetes.io/credential-id`).
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// What kube-apiserver's private claims say of a token (`kubernetes.io`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Private {
    namespace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<Reference>,
    serviceaccount: Reference,
}

/// An object a token names: its name and uid.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Reference {
    name: String,
    uid: String,
}

/// A token's claims, in the order go-jose writes them (sorted).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Claims {
    aud: Vec<String>,
    exp: i64,
    iat: i64,
    iss: String,
    jti: String,
    #[serde(rename = "kubernetes.io")]
    kubernetes: Private,
    nbf: i64,
    sub: String,
}

/// The server's service-account tokens: the TokenRequest subresource of ServiceAccounts and
/// the authenticator of the tokens it issues. Declare the subresource `token` of
/// `serviceaccounts` (`ResourceConfig::with_created_subresource`, of
/// [`token_request_kind`]), answer it with [`ApiServer::with_subresource_creator`], and set
/// it as the server's [`ApiServer::set_token_authenticator`] (`apfkit-server` does all
/// three).
pub struct ServiceAccountTokens {
    signing: EncodingKey,
    verifying: DecodingKey,
    /// The public key's point, for its JSON Web Key.
    point: EcPoint,
    key_id: String,
    issuer: String,
    audiences: Vec<String>,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountTokens")
            .field("key_id", &self.key_id)
            .field("issuer", &self.issuer)
            .field("audiences", &self.audiences)
            .finish_non_exhaustive()
    }
}

impl ServiceAccountTokens {
    /// Tokens signed with `key` (`apfkit_apiserver::tls::ensure_service_account_key`), issued
    /// by `issuer` (`--service-account-issuer`), for `audiences` by default and accepted for
    /// them (`--api-audiences`; the issuer when empty).
    ///
    /// # Errors
    ///
    /// A key that is not an ECDSA P-256 key, in words.
    pub fn new(key: &SigningKey, issuer: &str, audiences: Vec<String>) -> Result<Self, String> {
        let signing =
            EncodingKey::from_ec_pem(key.private_pem.as_bytes()).map_err(|e| e.to_string())?;
        let verifying =
            DecodingKey::from_ec_pem(key.public_pem.as_bytes()).map_err(|e| e.to_string())?;
        let point = EcPoint::of(&key.public_der)
            .ok_or_else(|| "the public key is not an ECDSA P-256 key".to_owned())?;
        let audiences = if audiences.is_empty() {
            vec![issuer.to_owned()]
        } else {
            audiences
        };
        Ok(ServiceAccountTokens {
            signing,
            verifying,
            point,
            key_id: key_id(&key.public_der),
            issuer: issuer.to_owned(),
            audiences,
        })
    }

    /// A token of `claims`.
    fn sign(&self, claims: &Claims) -> Result<String, ApiError> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = None;
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.signing)
            .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))
    }

    /// The claims of `token` when it is one of these, signed, issued here, for one of
    /// `audiences` and within its lifetime.
    fn verify(&self, token: &str, audiences: &[String]) -> Option<Claims> {
        let mut validation = Validation::new(Algorithm::ES256);
        validation.leeway = 0;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, &self.verifying, &validation).ok()?;
        Some(data.claims)
    }

    /// The issuer's OpenID Connect discovery documents, as kube-apiserver renders them
    /// (`NewOpenIDMetadataProvider`): the provider configuration, whose `jwks_uri` is
    /// `jwks_uri` (`--service-account-jwks-uri`) or else `https://EXTERNAL_ADDRESS/openid/v1/jwks`,
    /// and the key set of the signing key (ES256, its key id, `use: sig`). Serve them with
    /// [`ApiServer::set_openid_metadata`].
    ///
    /// # Errors
    ///
    /// In kube's words, when the issuer is not an `https` URL without query and fragment, when
    /// neither `jwks_uri` nor `external_address` is given, or when `jwks_uri` is not `https`:
    /// kube-apiserver then serves neither document.
    pub fn openid_metadata(
        &self,
        jwks_uri: Option<&str>,
        external_address: Option<&str>,
    ) -> Result<OpenIdMetadata, String> {
        let issuer = &self.issuer;
        if issuer.is_empty() {
            return Err("empty issuer URL".to_owned());
        }
        let jwks_uri = match (jwks_uri.filter(|uri| !uri.is_empty()), external_address) {
            (Some(uri), _) => {
                if scheme(uri) != "https" {
                    return Err(format!("jwksURI requires https scheme, parsed as: {uri}"));
                }
                uri.to_owned()
            }
            (None, Some(address)) if !address.is_empty() => {
                format!("https://{address}{OPENID_KEYS_PATH}")
            }
            (None, _) => {
                return Err(
                    "either the JWKS URI or the default external address, or both, \
                            must be set"
                        .to_owned(),
                );
            }
        };
        if scheme(issuer) != "https" {
            return Err(format!("issuer URL must use https scheme, got: {issuer}"));
        }
        if issuer
            .split_once('?')
            .is_some_and(|(_, query)| !query.split('#').next().unwrap_or_default().is_empty())
        {
            return Err(format!("issuer URL may not include a query, got: {issuer}"));
        }
        if issuer
            .split_once('#')
            .is_some_and(|(_, fragment)| !fragment.is_empty())
        {
            return Err(format!(
                "issuer URL may not include a fragment, got: {issuer}"
            ));
        }
        let configuration = ProviderConfiguration {
            issuer,
            jwks_uri: &jwks_uri,
            response_types_supported: &["id_token"],
            subject_types_supported: &["public"],
            id_token_signing_alg_values_supported: &["ES256"],
        };
        let keys = KeySet {
            keys: [JsonWebKey {
                use_: "sig",
                kty: "EC",
                kid: &self.key_id,
                crv: "P-256",
                alg: "ES256",
                x: URL_SAFE_NO_PAD.encode(self.point.x),
                y: URL_SAFE_NO_PAD.encode(self.point.y),
            }],
        };
        // Neither can fail: strings and arrays of them.
        Ok(OpenIdMetadata {
            configuration: serde_json::to_vec(&configuration)
                .unwrap_or_default()
                .into(),
            keys: serde_json::to_vec(&keys).unwrap_or_default().into(),
        })
    }
}

/// A URL's scheme as Go's `url.Parse` reads it: before the first `:`, lower-cased (none when
/// the text before it is not a scheme).
fn scheme(url: &str) -> String {
    match url.split_once(':') {
        Some((scheme, _))
            if scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            scheme.to_ascii_lowercase()
        }
        _ => String::new(),
    }
}

/// The OpenID provider configuration kube-apiserver publishes (`openIDMetadata`, in its field
/// order).
#[derive(Serialize)]
struct ProviderConfiguration<'a> {
    issuer: &'a str,
    jwks_uri: &'a str,
    response_types_supported: &'a [&'a str],
    subject_types_supported: &'a [&'a str],
    id_token_signing_alg_values_supported: &'a [&'a str],
}

/// A JSON Web Key Set of one key, as go-jose writes it.
#[derive(Serialize)]
struct KeySet<'a> {
    keys: [JsonWebKey<'a>; 1],
}

/// An EC public key as go-jose writes a JSON Web Key (`rawJSONWebKey`, in its field order).
#[derive(Serialize)]
struct JsonWebKey<'a> {
    #[serde(rename = "use")]
    use_: &'a str,
    kty: &'a str,
    kid: &'a str,
    crv: &'a str,
    alg: &'a str,
    x: String,
    y: String,
}

/// The coordinates of a P-256 public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EcPoint {
    x: [u8; 32],
    y: [u8; 32],
}

impl EcPoint {
    /// The point of a P-256 SubjectPublicKeyInfo (DER): the algorithm `id-ecPublicKey` on
    /// `prime256v1`, then the uncompressed point `04 || X || Y`; `None` for anything else.
    fn of(der: &[u8]) -> Option<Self> {
        const P256_SPKI_PREFIX: [u8; 27] = [
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
            0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
        ];
        let point = der.strip_prefix(&P256_SPKI_PREFIX)?;
        let (x, y) = point.split_at_checked(32)?;
        Some(EcPoint {
            x: x.try_into().ok()?,
            y: y.try_into().ok()?,
        })
    }
}

/// kube's key id of a public key: the SHA-256 of its SubjectPublicKeyInfo DER, base64url
/// without padding (`keyIDFromPublicKey`).
fn key_id(public_der: &[u8]) -> String {
    use sha2::Digest as _;
    URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(public_der))
}

/// The kind of a TokenRequest, what the `token` subresource of ServiceAccounts takes.
pub fn token_request_kind() -> GroupVersionKind {
    GroupVersionKind::from_static("authentication.k8s.io", "v1", "TokenRequest")
}

/// kube's 422 about a TokenRequest (`NewInvalid(TokenRequest.authentication.k8s.io, name)`).
fn invalid(name: &str, errors: &[FieldError]) -> ApiError {
    ApiError::invalid(
        &Subject {
            group: "authentication.k8s.io".to_owned(),
            kind: "TokenRequest".to_owned(),
            name: name.to_owned(),
        },
        errors.iter().map(Cause::from).collect(),
    )
}

/// The object `name` of the resource `plural` of the core group in `namespace`, as JSON.
async fn read<H>(
    objects: &Objects<ServedObject<H>>,
    served: &Served<ServedObject<H>>,
    namespace: &str,
    name: &str,
) -> Result<Value, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let place = Place {
        namespace: Some(namespace),
        name,
    };
    match objects.get(served, place).await? {
        ServedObject::Custom(object) => Ok(object.to_value()),
        ServedObject::Builtin(_) => Err(ApiError::internal("not a kind held as JSON")),
    }
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// What a TokenRequest asks: its audiences, lifetime and bound object, defaulted.
struct Asked {
    audiences: Vec<String>,
    expiration: i64,
    bound: Option<Value>,
}

impl ServiceAccountTokens {
    /// `TokenREST.Create`, up to the claims: the request checked against the account and
    /// defaulted, its bound object read.
    async fn request<H>(
        &self,
        server: &ApiServer<ServedObject<H>>,
        served: &Served<ServedObject<H>>,
        namespace: &str,
        name: &str,
        body: &mut Value,
    ) -> Result<(Value, Asked, Option<Reference>), ApiError>
    where
        H: Object + Clone + Send + Sync + 'static,
    {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the body is not a TokenRequest: not a JSON object",
            ));
        }
        let kind = text(body, "/kind");
        if !kind.is_empty() && kind != "TokenRequest" {
            return Err(ApiError::bad_request(format!(
                "TokenRequest in version \"v1\" cannot be handled as a {kind}"
            )));
        }
        for (field, own) in [("name", name), ("namespace", namespace)] {
            let given = text(body, &format!("/metadata/{field}"));
            if !given.is_empty() && given != own {
                let error = FieldError::invalid(
                    format!("metadata.{field}"),
                    BadValue::Str(given.to_owned()),
                    format!("must match the service account {field} if specified"),
                );
                return Err(invalid(name, &[error]));
            }
        }
        let account = read(server.objects(), served, namespace, name).await?;
        let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
        let mut audiences: Vec<String> = spec
            .get("audiences")
            .and_then(|a| serde_json::from_value(a.clone()).ok())
            .unwrap_or_default();
        if audiences.is_empty() {
            audiences.clone_from(&self.audiences);
        }
        let expiration = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
            Some(seconds) => seconds.as_i64().ok_or_else(|| {
                ApiError::bad_request(format!(
                    "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: json: \
                     cannot unmarshal {} into Go struct field \
                     TokenRequestSpec.spec.expirationSeconds of type int64",
                    apfkit_wire::go_scanner::value_kind(seconds)
                ))
            })?,
        };
        let too = |detail: &str| {
            FieldError::invalid(
                "spec.expirationSeconds",
                BadValue::Int(expiration),
                detail.to_owned(),
            )
        };
        if expiration < MIN_EXPIRATION_SECONDS {
            return Err(invalid(
                "",
                &[too("may not specify a duration less than 10 minutes")],
            ));
        }
        if expiration > MAX_EXPIRATION_SECONDS {
            return Err(invalid(
                "",
                &[too("may not specify a duration larger than 2^32 seconds")],
            ));
        }
        let bound = spec.get("boundObjectRef").filter(|r| !r.is_null()).cloned();
        let secret = match &bound {
            None => None,
            Some(reference) => Some(bound_secret(server, namespace, reference).await?),
        };
        Ok((
            account,
            Asked {
                audiences,
                expiration,
                bound,
            },
            secret,
        ))
    }
}

/// The Secret a TokenRequest binds its token to (the one kind of bound object served here;
/// Pods and Nodes are not, and are not found).
async fn bound_secret<H>(
    server: &ApiServer<ServedObject<H>>,
    namespace: &str,
    reference: &Value,
) -> Result<Reference, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let (kind, api_version, name) = (
        text(reference, "/kind"),
        text(reference, "/apiVersion"),
        text(reference, "/name"),
    );
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let not_found = |plural: &str| {
        ApiError::not_found(&Subject {
            group: String::new(),
            kind: plural.to_owned(),
            name: name.to_owned(),
        })
    };
    match (group, kind) {
        ("", "Secret") => {}
        ("", "Pod") => return Err(not_found("pods")),
        ("", "Node") => return Err(not_found("nodes")),
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    }
    let secrets = server
        .resource("", "secrets")
        .ok_or_else(|| not_found("secrets"))?;
    let secret = read(server.objects(), &secrets, namespace, name).await?;
    let uid = text(&secret, "/metadata/uid");
    let asked = text(reference, "/uid");
    if !asked.is_empty() && asked != uid {
        return Err(ApiError::conflict(
            &Subject {
                group: String::new(),
                kind: kind.to_owned(),
                name: name.to_owned(),
            },
            &format!(
                "the UID in the bound object reference ({asked}) does not match the UID in \
                 record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(Reference {
        name: name.to_owned(),
        uid: uid.to_owned(),
    })
}

impl<H> SubresourceCreator<ServedObject<H>> for ServiceAccountTokens
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// A TokenRequest as Go writes its zero value (`audiences` and the status are not
    /// `omitempty`), with an empty `boundObjectRef`: kube-apiserver's managed fields of a
    /// request that binds its token own the reference's fields but not the reference itself,
    /// as for a struct the zero value holds (the reference's answer; decision 279).
    fn zero(&self) -> Value {
        json!({"metadata": {}, "spec": {"audiences": null, "boundObjectRef": {}},
            "status": {"token": "", "expirationTimestamp": null}})
    }

    fn default(&self, body: &mut Value) {
        default_expiration(body);
    }

    fn create<'a>(
        &'a self,
        server: &'a ApiServer<ServedObject<H>>,
        served: &'a Served<ServedObject<H>>,
        place: Place<'a>,
        body: Value,
        _dry_run: bool,
    ) -> CreatedFuture<'a> {
        Box::pin(async move {
            let namespace = place
                .namespace
                .ok_or_else(|| ApiError::bad_request("namespace is required"))?;
            let mut body = body;
            let (account, asked, secret) = self
                .request(server, served, namespace, place.name, &mut body)
                .await?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
            let account_uid = text(&account, "/metadata/uid").to_owned();
            let claims = Claims {
                aud: asked.audiences.clone(),
                exp: now.saturating_add(asked.expiration),
                iat: now,
                iss: self.issuer.clone(),
                jti: uuid::Uuid::new_v4().to_string(),
                kubernetes: Private {
                    namespace: namespace.to_owned(),
                    secret,
                    serviceaccount: Reference {
                        name: place.name.to_owned(),
                        uid: account_uid.clone(),
                    },
                },
                nbf: now,
                sub: format!("system:serviceaccount:{namespace}:{}", place.name),
            };
            let token = self.sign(&claims)?;
            let timestamp = |seconds: i64| {
                k8s_openapi::jiff::Timestamp::from_second(seconds)
                    .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
                    .unwrap_or_default()
            };
            let mut spec = json!({"audiences": asked.audiences,
                "expirationSeconds": asked.expiration, "boundObjectRef": asked.bound});
            if spec["boundObjectRef"].is_null() {
                spec["boundObjectRef"] = Value::Null;
            }
            let mut metadata = body.get("metadata").cloned().unwrap_or_else(|| json!({}));
            if !metadata.is_object() {
                metadata = json!({});
            }
            metadata["name"] = place.name.into();
            metadata["namespace"] = namespace.into();
            if text(&metadata, "/uid").is_empty() {
                metadata["uid"] = account_uid.into();
            }
            metadata["creationTimestamp"] = timestamp(now).into();
            let object = json!({
                "kind": "TokenRequest",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": metadata,
                "spec": spec,
                "status": {"token": token, "expirationTimestamp": timestamp(claims.exp)},
            });
            Ok(Created {
                object,
                warnings: Vec::new(),
            })
        })
    }
}

impl<H> TokenAuthenticator<ServedObject<H>> for ServiceAccountTokens
where
    H: Object + Clone + Send + Sync + 'static,
{
    fn authenticate<'a>(
        &'a self,
        server: &'a ApiServer<ServedObject<H>>,
        token: &'a str,
        audiences: &'a [String],
    ) -> TokenFuture<'a> {
        Box::pin(async move {
            let accepted = if audiences.is_empty() {
                &self.audiences[..]
            } else {
                audiences
            };
            let claims = self.verify(token, accepted)?;
            let private = &claims.kubernetes;
            // `claims.Validate`: the account (and a bound Secret) there, of the uid the token
            // names, and not being deleted.
            live(
                server,
                "serviceaccounts",
                &private.namespace,
                &private.serviceaccount,
            )
            .await?;
            if let Some(secret) = &private.secret {
                live(server, "secrets", &private.namespace, secret).await?;
            }
            let namespace = &private.namespace;
            let mut extra = BTreeMap::new();
            extra.insert(
                CREDENTIAL_ID.to_owned(),
                vec![format!("JTI={}", claims.jti)],
            );
            Some(TokenUser {
                user: UserInfo {
                    name: format!(
                        "system:serviceaccount:{namespace}:{}",
                        private.serviceaccount.name
                    ),
                    uid: private.serviceaccount.uid.clone(),
                    groups: vec![
                        "system:serviceaccounts".to_owned(),
                        format!("system:serviceaccounts:{namespace}"),
                    ],
                    extra,
                },
                audiences: accepted
                    .iter()
                    .filter(|a| claims.aud.contains(a))
                    .cloned()
                    .collect(),
            })
        })
    }
}

/// `SetDefaults_TokenRequestSpec`: an hour when no lifetime is asked.
fn default_expiration(body: &mut Value) {
    let Some(request) = body.as_object_mut() else {
        return;
    };
    let spec = request.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        let seconds = spec.entry("expirationSeconds").or_insert(Value::Null);
        if seconds.is_null() {
            *seconds = DEFAULT_EXPIRATION_SECONDS.into();
        }
    }
}

/// Whether the object `reference` names in `namespace` is there with its uid and not being
/// deleted.
async fn live<H>(
    server: &ApiServer<ServedObject<H>>,
    plural: &str,
    namespace: &str,
    reference: &Reference,
) -> Option<()>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let served = server.resource("", plural)?;
    let object = read(server.objects(), &served, namespace, &reference.name)
        .await
        .ok()?;
    let deleted = object.pointer("/metadata/deletionTimestamp").is_some();
    (text(&object, "/metadata/uid") == reference.uid && !deleted).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(issuer: &str) -> (ServiceAccountTokens, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let key = apfkit_apiserver::tls::ensure_service_account_key(
            dir.path(),
            apfkit_apiserver::tls::Flush::Never,
        )
        .unwrap();
        (
            ServiceAccountTokens::new(&key, issuer, Vec::new()).unwrap(),
            dir,
        )
    }

    fn claims(issuer: &str, audiences: &[&str], from: i64, lifetime: i64) -> Claims {
        Claims {
            aud: audiences.iter().map(|a| (*a).to_owned()).collect(),
            exp: from + lifetime,
            iat: from,
            iss: issuer.to_owned(),
            jti: "7c0c5a08-7d2b-4e1a-9d71-0e6a0a3a0f51".to_owned(),
            kubernetes: Private {
                namespace: "team".to_owned(),
                secret: None,
                serviceaccount: Reference {
                    name: "robot".to_owned(),
                    uid: "u".to_owned(),
                },
            },
            nbf: from,
            sub: "system:serviceaccount:team:robot".to_owned(),
        }
    }

    fn now() -> i64 {
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
        )
        .unwrap()
    }

    #[test]
    fn a_token_is_accepted_only_as_issued_for_its_audiences_and_lifetime() {
        let (tokens, _dir) = tokens(DEFAULT_ISSUER);
        let audiences = vec![DEFAULT_ISSUER.to_owned()];
        let valid = claims(DEFAULT_ISSUER, &[DEFAULT_ISSUER], now(), 600);
        let token = tokens.sign(&valid).unwrap();
        assert_eq!(tokens.verify(&token, &audiences), Some(valid));
        // Its header: ES256 and the key's id, no `typ`, as go-jose writes it.
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(header.alg, Algorithm::ES256);
        assert_eq!(header.kid.as_deref(), Some(tokens.key_id.as_str()));
        assert_eq!(header.typ, None);
        // Not for another audience, not once expired or before it is valid, not from another
        // issuer, not signed with another key, not tampered with, not garbage.
        assert_eq!(tokens.verify(&token, &["vault".to_owned()]), None);
        let expired = tokens
            .sign(&claims(DEFAULT_ISSUER, &[DEFAULT_ISSUER], now() - 700, 600))
            .unwrap();
        assert_eq!(tokens.verify(&expired, &audiences), None);
        let mut early = claims(DEFAULT_ISSUER, &[DEFAULT_ISSUER], now(), 600);
        early.nbf = now() + 300;
        assert_eq!(
            tokens.verify(&tokens.sign(&early).unwrap(), &audiences),
            None
        );
        let elsewhere = tokens
            .sign(&claims("https://elsewhere", &[DEFAULT_ISSUER], now(), 600))
            .unwrap();
        assert_eq!(tokens.verify(&elsewhere, &audiences), None);
        let (other, _other_dir) = tokens_of_another_key();
        let foreign = other.sign(&claims(DEFAULT_ISSUER, &[DEFAULT_ISSUER], now(), 600));
        assert_eq!(tokens.verify(&foreign.unwrap(), &audiences), None);
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        parts[1] = URL_SAFE_NO_PAD.encode(br#"{"sub":"system:serviceaccount:kube-system:admin"}"#);
        assert_eq!(tokens.verify(&parts.join("."), &audiences), None);
        for garbage in ["", "a.b.c", "not a token", &"x".repeat(100_000)] {
            assert_eq!(tokens.verify(garbage, &audiences), None);
        }
    }

    fn tokens_of_another_key() -> (ServiceAccountTokens, tempfile::TempDir) {
        tokens(DEFAULT_ISSUER)
    }

    #[test]
    fn requests_are_defaulted_and_key_ids_are_kubes() {
        let (tokens, _dir) = tokens(DEFAULT_ISSUER);
        let mut body = json!({"spec": {"audiences": ["a"]}});
        default_expiration(&mut body);
        assert_eq!(body["spec"]["expirationSeconds"], 3600);
        let mut given = json!({"spec": {"expirationSeconds": 700}});
        default_expiration(&mut given);
        assert_eq!(given["spec"]["expirationSeconds"], 700);
        // `keyIDFromPublicKey`: SHA-256 of the DER, base64url without padding (43 characters).
        assert_eq!(
            key_id(b"der"),
            "UFDYDSLs1HHqVd9wNAQsHgQTQf9AZuf2_zjiC3IN-Oo"
        );
        assert_eq!(tokens.key_id.len(), 43);
        assert_eq!(tokens.audiences, [DEFAULT_ISSUER]);
    }

    #[test]
    fn the_issuers_discovery_documents_verify_its_tokens() {
        let (tokens, _dir) = tokens(DEFAULT_ISSUER);
        let metadata = tokens
            .openid_metadata(None, Some("127.0.0.1:6443"))
            .unwrap();
        // kube's provider configuration, byte for byte (`openIDMetadata`'s field order).
        assert_eq!(
            std::str::from_utf8(&metadata.configuration).unwrap(),
            r#"{"issuer":"https://kubernetes.default.svc.cluster.local","jwks_uri":"https://127.0.0.1:6443/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256"]}"#
        );
        // One key, as go-jose writes it, whose id is the tokens' and which verifies them.
        let keys: Value = serde_json::from_slice(&metadata.keys).unwrap();
        let key = &keys["keys"][0];
        let fields: Vec<&str> = key
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut order = fields.clone();
        order.sort_unstable();
        assert_eq!(order, ["alg", "crv", "kid", "kty", "use", "x", "y"]);
        assert_eq!(keys["keys"].as_array().unwrap().len(), 1);
        assert_eq!(
            (&key["use"], &key["kty"], &key["crv"], &key["alg"]),
            (
                &json!("sig"),
                &json!("EC"),
                &json!("P-256"),
                &json!("ES256")
            )
        );
        assert_eq!(key["kid"], tokens.key_id.as_str());
        let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(key.clone()).unwrap();
        let verifying = DecodingKey::from_jwk(&jwk).unwrap();
        let valid = claims(DEFAULT_ISSUER, &[DEFAULT_ISSUER], now(), 600);
        let token = tokens.sign(&valid).unwrap();
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_audience(&[DEFAULT_ISSUER]);
        let read = jsonwebtoken::decode::<Claims>(&token, &verifying, &validation).unwrap();
        assert_eq!(read.claims, valid);
        // Another server's key does not verify them.
        let (other, _other_dir) = tokens_of_another_key();
        let foreign: Value =
            serde_json::from_slice(&other.openid_metadata(None, Some("h:1")).unwrap().keys)
                .unwrap();
        let jwk: jsonwebtoken::jwk::Jwk =
            serde_json::from_value(foreign["keys"][0].clone()).unwrap();
        let foreign = DecodingKey::from_jwk(&jwk).unwrap();
        assert!(jsonwebtoken::decode::<Claims>(&token, &foreign, &validation).is_err());
        // `--service-account-jwks-uri` wins over the address served.
        let given = tokens
            .openid_metadata(
                Some("https://keys.example.com/jwks"),
                Some("127.0.0.1:6443"),
            )
            .unwrap();
        let configuration: Value = serde_json::from_slice(&given.configuration).unwrap();
        assert_eq!(configuration["jwks_uri"], "https://keys.example.com/jwks");
    }

    #[test]
    fn discovery_is_refused_in_kubes_words_where_kube_serves_none() {
        let refused = |issuer: &str, jwks_uri: Option<&str>, address: Option<&str>| {
            let (tokens, _dir) = tokens(issuer);
            tokens.openid_metadata(jwks_uri, address).unwrap_err()
        };
        assert_eq!(
            refused(DEFAULT_ISSUER, None, None),
            "either the JWKS URI or the default external address, or both, must be set"
        );
        assert_eq!(
            refused(DEFAULT_ISSUER, Some(""), Some("")),
            "either the JWKS URI or the default external address, or both, must be set"
        );
        assert_eq!(
            refused("http://issuer.example", None, Some("h:1")),
            "issuer URL must use https scheme, got: http://issuer.example"
        );
        assert_eq!(
            refused("kubernetes", None, Some("h:1")),
            "issuer URL must use https scheme, got: kubernetes"
        );
        assert_eq!(
            refused("https://issuer.example/?a=b", None, Some("h:1")),
            "issuer URL may not include a query, got: https://issuer.example/?a=b"
        );
        assert_eq!(
            refused("https://issuer.example/#part", None, Some("h:1")),
            "issuer URL may not include a fragment, got: https://issuer.example/#part"
        );
        assert_eq!(
            refused(DEFAULT_ISSUER, Some("http://keys.example/jwks"), None),
            "jwksURI requires https scheme, parsed as: http://keys.example/jwks"
        );
        // Go's parser lower-cases the scheme; an empty query or fragment is none.
        let (tokens, _dir) = tokens("HTTPS://issuer.example/?#");
        assert!(tokens.openid_metadata(None, Some("h:1")).is_ok());
    }

    #[test]
    fn a_public_key_is_read_only_as_a_p256_point() {
        let dir = tempfile::tempdir().unwrap();
        let key = apfkit_apiserver::tls::ensure_service_account_key(
            dir.path(),
            apfkit_apiserver::tls::Flush::Never,
        )
        .unwrap();
        let point = EcPoint::of(&key.public_der).unwrap();
        assert_eq!(key.public_der.len(), 91);
        assert_eq!(&key.public_der[27..59], &point.x);
        assert_eq!(&key.public_der[59..], &point.y);
        // Truncated, longer, another algorithm's or curve's header, garbage: none.
        let der = &key.public_der;
        assert_eq!(EcPoint::of(&der[..90]), None);
        assert_eq!(EcPoint::of(&der[..27]), None);
        assert_eq!(EcPoint::of(&[der.as_slice(), &[0]].concat()), None);
        let mut other_curve = der.clone();
        other_curve[22] = 0x22;
        assert_eq!(EcPoint::of(&other_curve), None);
        assert_eq!(EcPoint::of(&[]), None);
        assert_eq!(EcPoint::of(&[0x30; 91]), None);
        // A key that is not P-256 is refused where the tokens are made.
        let not_ec = SigningKey {
            private_pem: key.private_pem.clone(),
            public_pem: key.public_pem.clone(),
            public_der: der[..90].to_vec(),
        };
        assert_eq!(
            ServiceAccountTokens::new(&not_ec, DEFAULT_ISSUER, Vec::new()).unwrap_err(),
            "the public key is not an ECDSA P-256 key"
        );
    }
}
