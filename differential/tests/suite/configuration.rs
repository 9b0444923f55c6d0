//! ConfigMaps, Secrets, ServiceAccounts and Leases (issue 57 §1, "the kinds controllers
//! touch"): what a create, an update, a patch and a delete answer, their checks and
//! warnings in kube's words, their columns and their protobuf. Each case on objects of its
//! own in `default`.

use apfkit_differential::{Request, Session};
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message as _;
use serde_json::{Value, json};

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";
const SECRETS: &str = "/api/v1/namespaces/default/secrets";
const SERVICE_ACCOUNTS: &str = "/api/v1/namespaces/default/serviceaccounts";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const MERGE: &str = "application/merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

fn config_map(name: &str, fields: &Value) -> Value {
    let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    merge(&mut object, fields);
    object
}

fn secret(name: &str, fields: &Value) -> Value {
    let mut object = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}});
    merge(&mut object, fields);
    object
}

fn lease(name: &str, spec: &Value) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name}, "spec": spec})
}

/// `message` of `kind` in the `k8s\0` envelope, as client-go's typed clients send it.
fn enveloped(api_version: &str, kind: &str, message: &impl prost::Message) -> Vec<u8> {
    let envelope = k8s_pb::apimachinery::pkg::runtime::Unknown {
        type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
        }),
        raw: Some(message.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(envelope.encode_to_vec());
    body
}

/// A POST of `body` in protobuf, answered in JSON.
fn protobuf_post(path: &str, body: &[u8]) -> Request {
    Request::with_method("POST", path)
        .raw(PROTOBUF, body)
        .accept("application/json")
}

fn named(name: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: Some(name.to_owned()),
        ..Default::default()
    })
}

fn merge(object: &mut Value, fields: &Value) {
    if let (Some(object), Some(fields)) = (object.as_object_mut(), fields.as_object()) {
        object.extend(fields.clone());
    }
}

/// A table's cells but its `Age`'s, with its columns.
fn rows(table: &Value) -> Value {
    let cells: Vec<Value> = table["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| {
            let mut cells = row["cells"].as_array().cloned().unwrap_or_default();
            cells.pop();
            Value::Array(cells)
        })
        .collect();
    json!({"columnDefinitions": table["columnDefinitions"], "cells": cells})
}

/// A ConfigMap made, read (JSON, protobuf, table), checked (keys, duplicates, size), made
/// immutable and then refused a change of its data.
async fn config_maps_are_made_checked_and_kept_immutable(s: &mut Session) {
    let path = format!("{CONFIG_MAPS}/settings");
    s.send(Request::post(
        CONFIG_MAPS,
        &config_map(
            "settings",
            &json!({"data": {"a": "1", "b.txt": "two"}, "binaryData": {"c": "AAH/"}}),
        ),
    ))
    .await;
    s.send(Request::get(&path)).await;
    s.send(Request::get(&path).accept(TABLE).selecting(rows))
        .await;
    // In protobuf, as client-go sends it.
    let sent = core::ConfigMap {
        metadata: named("sent"),
        data: [("a".to_owned(), "1".to_owned())].into(),
        binary_data: [("b".to_owned(), vec![0, 1, 255])].into(),
        immutable: Some(false),
    };
    s.send(protobuf_post(
        CONFIG_MAPS,
        &enveloped("v1", "ConfigMap", &sent),
    ))
    .await;
    for fields in [
        json!({"data": {"..bad": "x"}}),
        // One bad key a request: Go's map order, which orders two keys' errors, is random.
        json!({"data": {"a*b": "x"}}),
        json!({"data": {"dup": "x"}, "binaryData": {"dup": "eA=="}}),
        json!({"data": {"big": "x".repeat(1024 * 1024 + 1)}}),
        json!({"data": {"n": 1}}),
        json!({"binaryData": {"c": "not base64"}}),
    ] {
        s.send(Request::post(CONFIG_MAPS, &config_map("refused", &fields)))
            .await;
    }
    // Made immutable, with new data: then neither its data nor its flag change.
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"immutable": true, "data": {"a": "one"}}),
    ))
    .await;
    s.send(Request::patch(&path, MERGE, &json!({"data": {"a": "uno"}})))
        .await;
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"immutable": false, "binaryData": null}),
    ))
    .await;
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"metadata": {"labels": {"kept": "yes"}}}),
    ))
    .await;
    s.send(Request::delete(&path)).await;
}

/// A Secret's `stringData` written into its `data`, its type defaulted and kept, each type's
/// required keys, a TLS Secret's warning, the field selector on `type`, and its columns.
async fn secrets_are_made_by_type_and_keep_it(s: &mut Session) {
    let path = format!("{SECRETS}/credentials");
    s.send(Request::post(
        SECRETS,
        &secret(
            "credentials",
            &json!({"data": {"user": "YWRtaW4=", "password": "b2xk"},
                "stringData": {"password": "new", "token": "t0k3n"}}),
        ),
    ))
    .await;
    s.send(Request::get(&path)).await;
    s.send(Request::get(&path).accept(TABLE).selecting(rows))
        .await;
    let sent = core::Secret {
        metadata: named("sent"),
        data: [("k".to_owned(), b"v".to_vec())].into(),
        string_data: [("s".to_owned(), "t".to_owned())].into(),
        r#type: Some("Opaque".to_owned()),
        immutable: None,
    };
    s.send(protobuf_post(SECRETS, &enveloped("v1", "Secret", &sent)))
        .await;
    // The type never changes; `stringData` in a patch lands in `data`.
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"type": "kubernetes.io/basic-auth"}),
    ))
    .await;
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"stringData": {"extra": "more"}}),
    ))
    .await;
    for (name, fields) in [
        ("docker", json!({"type": "kubernetes.io/dockercfg"})),
        (
            "docker-json",
            json!({"type": "kubernetes.io/dockerconfigjson",
                "stringData": {".dockerconfigjson": "{\"auths\""}}),
        ),
        (
            "docker-list",
            json!({"type": "kubernetes.io/dockercfg", "stringData": {".dockercfg": "[]"}}),
        ),
        ("basic", json!({"type": "kubernetes.io/basic-auth"})),
        (
            "ssh",
            json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}}),
        ),
        (
            "token",
            json!({"type": "kubernetes.io/service-account-token"}),
        ),
        ("keys", json!({"data": {"a b": "eA=="}})),
        ("bytes", json!({"data": {"a": "eA="}})),
    ] {
        s.send(Request::post(SECRETS, &secret(name, &fields))).await;
    }
    // A TLS Secret is taken with a warning when its certificate is not PEM.
    s.send(Request::post(
        SECRETS,
        &secret(
            "tls",
            &json!({"type": "kubernetes.io/tls",
                "stringData": {"tls.crt": "not pem", "tls.key": "not pem"}}),
        ),
    ))
    .await;
    s.send(Request::get(&format!(
        "{SECRETS}?fieldSelector=type=kubernetes.io/tls"
    )))
    .await;
    s.send(Request::get(&format!("{SECRETS}?fieldSelector=data=x")))
        .await;
    s.send(Request::delete(&format!("{SECRETS}/tls"))).await;
}

/// A ServiceAccount's secret references reduced to their names, the deprecated annotation
/// warned of, its columns and protobuf.
async fn service_accounts_keep_their_secrets_by_name(s: &mut Session) {
    let path = format!("{SERVICE_ACCOUNTS}/robot");
    s.send(Request::post(
        SERVICE_ACCOUNTS,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "robot",
                "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
            "secrets": [{"name": "token", "namespace": "elsewhere", "uid": "u1"}],
            "imagePullSecrets": [{"name": "registry"}],
            "automountServiceAccountToken": false}),
    ))
    .await;
    s.send(Request::get(&path).accept(TABLE).selecting(rows))
        .await;
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"secrets": [{"name": "other", "kind": "Secret"}]}),
    ))
    .await;
    s.send(Request::post(
        SERVICE_ACCOUNTS,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "Robot"}}),
    ))
    .await;
}

/// A Lease made by a PUT, renewed as client-go's leader election renews it (never without a
/// `resourceVersion`), its times with six digits of a second, the gated fields dropped, its
/// checks and columns.
async fn leases_are_held_renewed_and_checked(s: &mut Session) {
    let path = format!("{LEASES}/leader");
    let held = json!({"holderIdentity": "me", "leaseDurationSeconds": 15,
        "acquireTime": "2026-12-01T10:00:00.123456Z",
        "renewTime": "2026-12-01T10:00:00.123456Z", "leaseTransitions": 0,
        "strategy": "OldestEmulationVersion", "preferredHolder": "me"});
    s.send(Request::put(&path, &lease("leader", &held))).await;
    s.send(Request::get(&path).accept(TABLE).selecting(rows))
        .await;
    // An update without a resourceVersion is refused; a patch reads the stored one.
    s.send(Request::put(
        &path,
        &lease(
            "leader",
            &json!({"holderIdentity": "you", "renewTime": "2026-12-01T10:00:15.000000Z"}),
        ),
    ))
    .await;
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"spec": {"renewTime": "2026-12-01T10:00:15.000001Z", "leaseTransitions": 1}}),
    ))
    .await;
    s.send(Request::patch(
        &format!("{path}?fieldManager=elector"),
        APPLY,
        &lease("leader", &json!({"holderIdentity": "elector"})),
    ))
    .await;
    // In protobuf, as client-go's leader election sends it: below a microsecond is dropped.
    let sent = coordination::Lease {
        metadata: named("elected"),
        spec: Some(coordination::LeaseSpec {
            holder_identity: Some("pod-1".to_owned()),
            lease_duration_seconds: Some(15),
            renew_time: Some(meta::MicroTime {
                seconds: Some(1_796_119_200),
                nanos: Some(123_456_789),
            }),
            ..Default::default()
        }),
    };
    s.send(protobuf_post(
        LEASES,
        &enveloped("coordination.k8s.io/v1", "Lease", &sent),
    ))
    .await;
    // A time without six digits of a second is not a MicroTime.
    for time in [
        "2026-12-01T10:00:00Z",
        "2026-12-01T10:00:00.5Z",
        "2026-12-01T10:00:00.123456789Z",
    ] {
        s.send(Request::post(
            LEASES,
            &lease("timed", &json!({"renewTime": time})),
        ))
        .await;
    }
    for spec in [
        json!({"leaseDurationSeconds": 0, "leaseTransitions": -1}),
        json!({"leaseDurationSeconds": "15"}),
        json!({"preferredHolder": "me"}),
    ] {
        s.send(Request::post(LEASES, &lease("refused", &spec)))
            .await;
    }
    s.send(Request::delete(&path)).await;
}

crate::cases!(
    service_account_tokens_are_issued_as_kube_issues_them,
    the_issuers_discovery_is_published_as_kube_publishes_it,
    config_maps_are_made_checked_and_kept_immutable,
    secrets_are_made_by_type_and_keep_it,
    service_accounts_keep_their_secrets_by_name,
    leases_are_held_renewed_and_checked,
);

/// A TokenRequest's answer with its token read: the JWT's header and claims, the times as the
/// token's lifetime, the issuer (each server's own, which is also its audience by default)
/// as `<issuer>`.
fn token_answer(answer: &Value) -> Value {
    let mut answer = answer.clone();
    let Some(token) = answer
        .pointer("/status/token")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return answer;
    };
    let part = |index: usize| -> Value {
        use base64::Engine as _;
        token
            .split('.')
            .nth(index)
            .and_then(|p| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(p)
                    .ok()
            })
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or(Value::Null)
    };
    let (header, mut claims) = (part(0), part(1));
    let issuer = claims["iss"].clone();
    let number = |name: &str| claims[name].as_i64().unwrap_or_default();
    let (lifetime, not_before) = (number("exp") - number("iat"), number("nbf") - number("iat"));
    if let Some(claims) = claims.as_object_mut() {
        for time in ["exp", "iat", "nbf"] {
            claims.remove(time);
        }
    }
    if claims["jti"].as_str().is_some_and(|jti| jti.len() == 36) {
        claims["jti"] = json!("<a random uuid>");
    }
    claims["lifetime"] = lifetime.into();
    claims["notBeforeIssued"] = not_before.into();
    answer["status"]["token"] = json!({"header": {"alg": header["alg"],
        "hasKeyId": header["kid"].is_string(), "typ": header["typ"]}, "claims": claims});
    let text = serde_json::to_string(&answer).unwrap_or_default();
    match issuer.as_str() {
        Some(issuer) if !issuer.is_empty() => {
            let quoted = serde_json::to_string(issuer).unwrap_or_default();
            serde_json::from_str(&text.replace(&quoted, "\"<issuer>\"")).unwrap_or(answer)
        }
        _ => answer,
    }
}

/// TokenRequests (`serviceaccounts/NAME/token`): a token's claims and lifetime as kube issues
/// them, bound to a Secret or not, and the requests kube refuses.
async fn service_account_tokens_are_issued_as_kube_issues_them(s: &mut Session) {
    s.send(Request::post(
        SERVICE_ACCOUNTS,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "issued"}}),
    ))
    .await;
    s.send(Request::post(
        SECRETS,
        &secret("issued-bound", &json!({"stringData": {"k": "v"}})),
    ))
    .await;
    let token = format!("{SERVICE_ACCOUNTS}/issued/token");
    let request = |spec: Value| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    for spec in [
        json!({}),
        json!({"audiences": ["vault", "https://example.com"], "expirationSeconds": 7200}),
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Secret",
            "name": "issued-bound"}}),
    ] {
        s.send(Request::post(&token, &request(spec)).selecting(token_answer))
            .await;
    }
    for (path, body) in [
        (token.clone(), request(json!({"expirationSeconds": 599}))),
        (token.clone(), request(json!({"expirationSeconds": "soon"}))),
        (
            token.clone(),
            request(json!({"expirationSeconds": 4_294_967_297_i64})),
        ),
        (
            token.clone(),
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "metadata": {"name": "other"}}),
        ),
        (
            format!("{SERVICE_ACCOUNTS}/nobody/token"),
            request(json!({})),
        ),
        (
            token.clone(),
            request(json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                "name": "p"}})),
        ),
        (
            token.clone(),
            request(
                json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Secret",
                "name": "issued-bound", "uid": "not-its-uid"}}),
            ),
        ),
        (
            token.clone(),
            request(
                json!({"boundObjectRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                "name": "d"}}),
            ),
        ),
    ] {
        s.send(Request::post(&path, &body)).await;
    }
    s.send(Request::get(&token)).await;
    s.send(Request::put(&token, &request(json!({})))).await;
}

/// The service-account issuer's OpenID provider configuration with its issuer as `<issuer>`
/// and the address of its keys as `<address>` (each server's own); any other answer as it is.
fn provider_configuration(answer: &Value) -> Value {
    let mut answer = answer.clone();
    if answer["issuer"].is_string() {
        answer["issuer"] = json!("<issuer>");
    }
    if let Some(uri) = answer["jwks_uri"].as_str() {
        let path = uri
            .strip_prefix("https://")
            .and_then(|rest| rest.find('/').map(|at| rest[at..].to_owned()))
            .unwrap_or_default();
        answer["jwks_uri"] = json!(format!("https://<address>{path}"));
    }
    answer
}

/// The issuer's key set with each key's id and coordinates (each server's own key) as what
/// they are: 43 characters of base64url, a SHA-256 and P-256's 32 bytes.
fn key_set(answer: &Value) -> Value {
    let mut answer = answer.clone();
    if let Some(keys) = answer["keys"].as_array_mut() {
        for key in keys {
            for field in ["kid", "x", "y"] {
                if let Some(text) = key[field].as_str() {
                    use base64::Engine as _;
                    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text);
                    let length = bytes.map(|b| b.len()).unwrap_or_default();
                    key[field] = json!(format!("<{length} bytes>"));
                }
            }
        }
    }
    answer
}

/// `/.well-known/openid-configuration` and `/openid/v1/jwks`: their documents, media types
/// and caching, as the administrator, a service account (kube's bootstrap policy lets every
/// one read them), anonymous and a plain user; with a trailing slash; another method.
async fn the_issuers_discovery_is_published_as_kube_publishes_it(s: &mut Session) {
    const CONFIGURATION: &str = "/.well-known/openid-configuration";
    const KEYS: &str = "/openid/v1/jwks";
    for path in [CONFIGURATION, "/.well-known/openid-configuration/"] {
        s.send(Request::get(path).selecting(provider_configuration))
            .await;
    }
    for path in [KEYS, "/openid/v1/jwks/"] {
        s.send(Request::get(path).selecting(key_set)).await;
    }
    for user in [
        "system:serviceaccount:default:discovering",
        "system:anonymous",
    ] {
        s.send(
            Request::get(CONFIGURATION)
                .impersonating(user)
                .selecting(provider_configuration),
        )
        .await;
        s.send(Request::get(KEYS).impersonating(user).selecting(key_set))
            .await;
    }
    s.send(Request::get(KEYS).as_plain_user()).await;
    s.send(Request::post(KEYS, &json!({}))).await;
    s.send(Request::delete(CONFIGURATION)).await;
    for path in [
        "/openid/v1/jwks/other",
        "/.well-known/openid-configuration/other",
        "/openid/v1",
        "/.well-known",
        "/version/other",
    ] {
        s.send(Request::get(path)).await;
    }
}
