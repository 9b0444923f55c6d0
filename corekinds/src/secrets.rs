//! core/v1 Secrets as kube-apiserver serves them (`pkg/registry/core/secret`): read as
//! k8s-openapi's `Secret` reads them, defaulted as `SetDefaults_Secret` (type `Opaque`) and
//! converted as `Convert_v1_Secret_To_core_Secret` (`stringData` written over `data`, never
//! kept), checked as `ValidateSecret` and `ValidateSecretUpdate` check them (each type's
//! required keys), warned about as `warningsForSecret` warns (a TLS Secret without PEM data),
//! printed with `kubectl get secrets`' columns.

use apfkit_apiserver::table::{
    Column, Printer, age, column, creation_column, field_doc, name_cell, name_column, now_seconds,
};
use apfkit_runtime::field::{BadValue, FieldError, Path, names};
use apfkit_runtime::scheme::{SchemeError, UnknownFields, Warning};
use apfkit_types::builtin::core::v1::Secret;
use base64::Engine as _;
use serde_json::{Map, Value};

use crate::config_maps::MAX_SIZE;
use crate::{Kind, count, decoded_len, entries, immutable_errors, metadata_errors};

pub(crate) const KIND: Kind = Kind {
    group: "",
    kind: "Secret",
    plural: "secrets",
    short_names: &[],
    normalize,
    zero: crate::empty_object,
    // core/v1's `AddFieldLabelConversionsForSecret`.
    field_labels: Some(&["type", "metadata.namespace", "metadata.name"]),
    check,
    prepare: crate::prepare_nothing,
    warn: warnings,
    printer,
    create_on_update: false,
    unconditional_updates: true,
};

const OPAQUE: &str = "Opaque";
const SERVICE_ACCOUNT_NAME_KEY: &str = "kubernetes.io/service-account.name";

/// A Secret read as kube-apiserver reads it: its type `Opaque` when it has none, each entry of
/// `stringData` written into `data` (over an entry of the same key), `stringData` dropped.
fn normalize(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    let mut kept = apfkit_apiextensions::json_kind::typed::<Secret>(object, unknown, warnings)?;
    if let Some(secret) = kept.as_object_mut() {
        let typed = secret
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
        if !typed {
            secret.insert("type".into(), OPAQUE.into());
        }
        if let Some(Value::Object(strings)) = secret.remove("stringData")
            && !strings.is_empty()
        {
            let data = secret
                .entry("data")
                .or_insert_with(|| Value::Object(Map::new()));
            if !data.is_object() {
                *data = Value::Object(Map::new());
            }
            if let Some(data) = data.as_object_mut() {
                for (key, text) in strings {
                    let text = text.as_str().unwrap_or_default();
                    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                    data.insert(key, encoded.into());
                }
            }
        }
    }
    apfkit_apiserver::go_shape::as_decoded(&mut kept);
    Ok(kept)
}

/// The bytes of `data[key]`, if the Secret has that key.
fn data_of(secret: &Value, key: &str) -> Option<Vec<u8>> {
    let text = secret.get("data")?.get(key)?;
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(text.as_str().unwrap_or_default())
            .unwrap_or_default(),
    )
}

/// `ValidateSecretUpdate`'s rules (the type immutable, an immutable Secret's data kept), then
/// `ValidateSecret`: the name, the keys of `data` (in their sorted order; Go's map order is
/// random), its size, and what the Secret's type requires.
fn check(secret: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let kind_of = |secret: &Value| {
        secret
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let kind = kind_of(secret);
    let mut errors = Vec::new();
    if let Some(old) = old
        && kind_of(old) != kind
    {
        errors.push(FieldError::invalid(
            "type",
            BadValue::Str(kind.clone()),
            "field is immutable",
        ));
    }
    errors.extend(immutable_errors(secret, old, &["data"]));
    errors.extend(metadata_errors(secret, names::dns1123_subdomain));
    let data = Path::new("data");
    let mut size = 0;
    for (key, value) in entries(secret, "/data") {
        errors.extend(names::config_map_key(key).into_iter().map(|message| {
            FieldError::invalid(data.key(key), BadValue::Str(key.clone()), message)
        }));
        size += decoded_len(value);
    }
    if size > MAX_SIZE {
        errors.push(FieldError::too_long("data", MAX_SIZE as i64));
    }
    let required = |key: &str| FieldError::required(data.key(key), "");
    match kind.as_str() {
        "kubernetes.io/service-account-token" => {
            let named = secret
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(SERVICE_ACCOUNT_NAME_KEY))
                .and_then(Value::as_str)
                .is_some_and(|name| !name.is_empty());
            if !named {
                errors.push(FieldError::required(
                    Path::new("metadata")
                        .child("annotations")
                        .key(SERVICE_ACCOUNT_NAME_KEY),
                    "",
                ));
            }
        }
        kind @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if kind == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match data_of(secret, key) {
                None => errors.push(required(key)),
                Some(bytes) => {
                    if let Some(problem) = json_object_error(&bytes) {
                        errors.push(FieldError::invalid(
                            data.key(key),
                            BadValue::Str("<secret contents redacted>".to_owned()),
                            problem,
                        ));
                    }
                }
            }
        }
        // Either may be empty, but one must be there.
        "kubernetes.io/basic-auth"
            if data_of(secret, "username").is_none() && data_of(secret, "password").is_none() =>
        {
            errors.push(required("username"));
            errors.push(required("password"));
        }
        "kubernetes.io/ssh-auth"
            if data_of(secret, "ssh-privatekey").is_none_or(|key| key.is_empty()) =>
        {
            errors.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if data_of(secret, key).is_none() {
                    errors.push(required(key));
                }
            }
        }
        _ => {}
    }
    errors
}

/// What Go's `json.Unmarshal` into a `map[string]interface{}` answers for `bytes`: a syntax
/// error in Go's words, or a type error when it is JSON but not an object (null is a map).
fn json_object_error(bytes: &[u8]) -> Option<String> {
    if let Some(error) = apfkit_wire::go_scanner::syntax_error(bytes) {
        return Some(error.message);
    }
    let value: Value = serde_json::from_slice(bytes).ok()?;
    (!value.is_object() && !value.is_null()).then(|| {
        format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            apfkit_wire::go_scanner::value_kind(&value)
        )
    })
}

/// `warningsForSecret`: a TLS Secret whose certificate or key holds no PEM block of its
/// kind, in the words of Go's `tls.X509KeyPair`. (A pair whose blocks are there is taken as
/// it is: the certificate is not parsed, nor the key matched to it; decision 279.)
fn warnings(secret: &Value, _old: Option<&Value>) -> Vec<String> {
    if secret.get("type").and_then(Value::as_str) != Some("kubernetes.io/tls") {
        return Vec::new();
    }
    let certificate = data_of(secret, "tls.crt").unwrap_or_default();
    let key = data_of(secret, "tls.key").unwrap_or_default();
    key_pair_problem(&certificate, &key).into_iter().collect()
}

/// What `tls.X509KeyPair` answers for the PEM blocks of a certificate and a key, as far as
/// their block types go.
fn key_pair_problem(certificate: &[u8], key: &[u8]) -> Option<String> {
    let types = |input: &[u8]| pem_block_types(&String::from_utf8_lossy(input));
    let certificate_types = types(certificate);
    if !certificate_types.iter().any(|t| t == "CERTIFICATE") {
        return Some(match certificate_types.as_slice() {
            [] => "tls: failed to find any PEM data in certificate input".to_owned(),
            [only] if only.ends_with("PRIVATE KEY") => {
                "tls: failed to find certificate PEM data in certificate input, but did find a \
                 private key; PEM inputs may have been switched"
                    .to_owned()
            }
            skipped => format!(
                "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after \
                 skipping PEM blocks of the following types: [{}]",
                skipped.join(" ")
            ),
        });
    }
    let key_types = types(key);
    let is_key = |t: &String| t == "PRIVATE KEY" || t.ends_with(" PRIVATE KEY");
    if key_types.iter().any(is_key) {
        return None;
    }
    Some(match key_types.as_slice() {
        [] => "tls: failed to find any PEM data in key input".to_owned(),
        [only] if only == "CERTIFICATE" => {
            "tls: found a certificate rather than a key in the PEM for the private key".to_owned()
        }
        skipped => format!(
            "tls: failed to find PEM block with type ending in \"PRIVATE KEY\" in key input \
             after skipping PEM blocks of the following types: [{}]",
            skipped.join(" ")
        ),
    })
}

/// The types of the PEM blocks of `text`, in order, as Go's `pem.Decode` finds them: a
/// `-----BEGIN TYPE-----` line, base64 lines, and the `-----END TYPE-----` line of the same
/// type; a block that does not close is no block.
fn pem_block_types(text: &str) -> Vec<String> {
    const BEGIN: &str = "-----BEGIN ";
    const TAIL: &str = "-----";
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let after = &rest[start + BEGIN.len()..];
        let Some(line_end) = after.find('\n') else {
            break;
        };
        let line = after[..line_end].trim_end_matches('\r');
        let Some(kind) = line.strip_suffix(TAIL) else {
            rest = after;
            continue;
        };
        let end = format!("-----END {kind}{TAIL}");
        let body = &after[line_end + 1..];
        let Some(end_at) = body.find(&end) else {
            rest = after;
            continue;
        };
        let encoded: String = body[..end_at]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if base64::engine::general_purpose::STANDARD
            .decode(&encoded)
            .is_ok()
        {
            found.push(kind.to_owned());
            rest = &body[end_at + end.len()..];
        } else {
            rest = after;
        }
    }
    found
}

/// `secretColumnDefinitions`.
fn columns() -> Vec<Column> {
    let doc = |property| field_doc("io.k8s.api.core.v1.Secret", property);
    vec![
        name_column(),
        column("Type", "string", 0, doc("type")),
        column("Data", "string", 0, doc("data")),
        creation_column("Age", "string"),
    ]
}

/// `printSecret`'s cells.
fn cells(object: &Value) -> Vec<Value> {
    vec![
        name_cell(object),
        object.get("type").cloned().unwrap_or_else(|| "".into()),
        count(object, "/data").into(),
        age(object, now_seconds()),
    ]
}

fn printer() -> Printer {
    Printer::of("v1", columns(), cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(secret: &Value, old: Option<&Value>) -> Vec<String> {
        check(secret, old).iter().map(ToString::to_string).collect()
    }

    fn read(secret: Value) -> Value {
        normalize(secret, UnknownFields::Strict, &mut Vec::new()).unwrap()
    }

    #[test]
    fn string_data_is_written_into_data_and_the_type_defaulted() {
        let secret = read(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "ns"},
            "data": {"a": "YQ==", "b": "Yg=="}, "stringData": {"b": "bee", "c": "sea"}}));
        assert_eq!(
            secret["data"],
            json!({"a": "YQ==", "b": "YmVl", "c": "c2Vh"})
        );
        assert_eq!(secret.get("stringData"), None);
        assert_eq!(secret["type"], OPAQUE);
        let typed = read(json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls"}));
        assert_eq!(typed["type"], "kubernetes.io/tls");
    }

    /// Cases of upstream's `TestValidateSecret`, `TestValidateDockerConfigSecret`,
    /// `TestValidateBasicAuthSecret`, `TestValidateSSHAuth` and `TestValidateSecretUpdate`
    /// (`pkg/apis/core/validation/validation_test.go`), with kube's messages.
    #[test]
    fn secrets_are_checked_as_kube_apiserver_checks_them() {
        let meta = json!({"name": "valid", "namespace": "validns"});
        let secret =
            |kind: &str, data: Value| json!({"metadata": meta, "type": kind, "data": data});
        let valid = [
            secret("Opaque", json!({"data-1": "dmFsdWU="})),
            secret("Opaque", json!({})),
            secret("kubernetes.io/dockercfg", json!({".dockercfg": "e30="})),
            secret(
                "kubernetes.io/dockerconfigjson",
                json!({".dockerconfigjson": "bnVsbA=="}),
            ),
            secret("kubernetes.io/basic-auth", json!({"password": ""})),
            secret("kubernetes.io/ssh-auth", json!({"ssh-privatekey": "a2V5"})),
            secret("kubernetes.io/tls", json!({"tls.crt": "", "tls.key": ""})),
            json!({"metadata": {"name": "t", "namespace": "ns",
                "annotations": {SERVICE_ACCOUNT_NAME_KEY: "sa"}},
                "type": "kubernetes.io/service-account-token"}),
        ];
        for secret in valid {
            assert!(messages(&secret, None).is_empty(), "{secret}");
        }
        assert_eq!(
            messages(&secret("Opaque", json!({"a*b": "", "..": ""})), None),
            [
                "data[..]: Invalid value: \"..\": must not be '..'",
                "data[a*b]: Invalid value: \"a*b\": a valid config key must consist of \
                 alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or \
                 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
            ]
        );
        assert_eq!(
            messages(&secret("kubernetes.io/dockercfg", json!({})), None),
            ["data[.dockercfg]: Required value"]
        );
        assert_eq!(
            messages(
                &secret(
                    "kubernetes.io/dockerconfigjson",
                    json!({".dockerconfigjson": "e30K"})
                ),
                None
            ),
            Vec::<String>::new()
        );
        // `{"a"` and `[]`: Go's syntax and type errors.
        assert_eq!(
            messages(
                &secret("kubernetes.io/dockercfg", json!({".dockercfg": "eyJhIg=="})),
                None
            ),
            [
                "data[.dockercfg]: Invalid value: \"<secret contents redacted>\": unexpected end \
              of JSON input"
            ]
        );
        assert_eq!(
            messages(
                &secret(
                    "kubernetes.io/dockerconfigjson",
                    json!({".dockerconfigjson": "W10="})
                ),
                None
            ),
            [
                "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": json: \
              cannot unmarshal array into Go value of type map[string]interface {}"
            ]
        );
        assert_eq!(
            messages(&secret("kubernetes.io/basic-auth", json!({})), None),
            [
                "data[username]: Required value",
                "data[password]: Required value"
            ]
        );
        assert_eq!(
            messages(
                &secret("kubernetes.io/ssh-auth", json!({"ssh-privatekey": ""})),
                None
            ),
            ["data[ssh-privatekey]: Required value"]
        );
        assert_eq!(
            messages(&secret("kubernetes.io/tls", json!({"tls.key": ""})), None),
            ["data[tls.crt]: Required value"]
        );
        assert_eq!(
            messages(
                &json!({"metadata": meta, "type": "kubernetes.io/service-account-token"}),
                None
            ),
            ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_SIZE + 1]);
        assert_eq!(
            messages(&secret("Opaque", json!({"big": big})), None),
            ["data: Too long: may not be more than 1048576 bytes"]
        );
        // An update keeps the type, and an immutable Secret its data.
        let old = json!({"metadata": meta, "type": "Opaque", "immutable": true,
                         "data": {"a": "YQ=="}});
        assert_eq!(
            messages(
                &json!({"metadata": meta, "type": "kubernetes.io/basic-auth",
                        "data": {"username": "YQ=="}}),
                Some(&old)
            ),
            [
                "type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable",
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
    }

    #[test]
    fn tls_secrets_without_pem_blocks_are_warned_of_in_gos_words() {
        let pem = |kind: &str| format!("-----BEGIN {kind}-----\nAAEC\n-----END {kind}-----\n");
        let cert = pem("CERTIFICATE");
        let key = pem("EC PRIVATE KEY");
        assert_eq!(key_pair_problem(cert.as_bytes(), key.as_bytes()), None);
        assert_eq!(
            key_pair_problem(b"", key.as_bytes()).unwrap(),
            "tls: failed to find any PEM data in certificate input"
        );
        assert!(
            key_pair_problem(key.as_bytes(), cert.as_bytes())
                .unwrap()
                .contains("PEM inputs may have been switched")
        );
        assert_eq!(
            key_pair_problem(pem("X").as_bytes(), key.as_bytes()).unwrap(),
            "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after skipping \
             PEM blocks of the following types: [X]"
        );
        assert_eq!(
            key_pair_problem(cert.as_bytes(), b"garbage").unwrap(),
            "tls: failed to find any PEM data in key input"
        );
        assert_eq!(
            key_pair_problem(cert.as_bytes(), cert.as_bytes()).unwrap(),
            "tls: found a certificate rather than a key in the PEM for the private key"
        );
        // A block that never closes, or whose body is not base64, is no block.
        assert_eq!(
            pem_block_types("-----BEGIN CERTIFICATE-----\nAAEC\n"),
            Vec::<String>::new()
        );
        assert_eq!(
            pem_block_types("-----BEGIN A-----\n!!\n-----END A-----\n"),
            Vec::<String>::new()
        );
        let secret = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(warnings(&secret, None).len(), 1);
        assert!(warnings(&json!({"type": "Opaque"}), None).is_empty());
    }

    #[test]
    fn kubectl_get_secrets_columns() {
        let cells = cells(&json!({"metadata": {"name": "s"}, "type": "Opaque",
            "data": {"a": "YQ=="}}));
        assert_eq!(cells[..3], [json!("s"), json!("Opaque"), json!(1)]);
        assert_eq!(printer().columns.len(), 4);
    }
}
