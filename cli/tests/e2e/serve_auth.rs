//! Who is asking, on `apfkit serve`: the client certificates it writes for an administrator
//! and a plain user (kubeconfig contexts `apfkit` and `apfkit-user`), a token file, anonymous
//! requests (and refusing them), impersonation as the authorizer allows it (RBAC lets
//! `system:masters`), and certificates of another authority refused. `kubectl auth whoami` asks the server's SelfSubjectReview.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::serve::Server;

const REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

/// (user name, groups) of `kubectl auth whoami -o json` with `args`.
fn whoami(server: &Server, args: &[&str]) -> (String, Vec<String>) {
    let mut all = args.to_vec();
    all.extend_from_slice(&["auth", "whoami", "-o", "json"]);
    let review: Value = serde_json::from_str(&server.kubectl_ok(&all, b"")).unwrap();
    user_of(&review)
}

/// `kubectl auth whoami -o json` as the administrator impersonating `user` with `extras`,
/// through a kubeconfig whose user entry says so (kubectl 1.32 has no `--as-user-extra`).
fn whoami_with_extras(server: &Server, user: &str, extras: &[(&str, &[&str])]) -> Value {
    let mut config: Value =
        serde_json::from_str(&server.kubectl_ok(&["config", "view", "--raw", "-o", "json"], b""))
            .unwrap();
    let current = config["current-context"].as_str().unwrap().to_owned();
    let context = config["contexts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == current.as_str())
        .unwrap()["context"]["user"]
        .as_str()
        .unwrap()
        .to_owned();
    let entry = config["users"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|u| u["name"] == context.as_str())
        .unwrap();
    entry["user"]["as"] = user.into();
    entry["user"]["as-user-extra"] = extras
        .iter()
        .map(|(key, values)| ((*key).to_owned(), serde_json::json!(values)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), config.to_string()).unwrap();
    let kubeconfig = file.path().display().to_string();
    serde_json::from_str(&server.kubectl_ok(
        &["--kubeconfig", &kubeconfig, "auth", "whoami", "-o", "json"],
        b"",
    ))
    .unwrap()
}

fn user_of(review: &Value) -> (String, Vec<String>) {
    let info = &review["status"]["userInfo"];
    let groups = info["groups"]
        .as_array()
        .map(|g| g.iter().map(|g| g.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    (
        info["username"].as_str().unwrap_or_default().to_owned(),
        groups,
    )
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

#[test]
fn kubectls_contexts_are_the_administrator_and_a_plain_user() {
    let server = Server::start(&["--no-bootstrap"]);
    assert_eq!(
        whoami(&server, &[]),
        (
            "apfkit-admin".into(),
            strings(&["system:masters", "system:authenticated"])
        )
    );
    assert_eq!(
        whoami(&server, &["--context", "apfkit-user"]),
        ("apfkit-user".into(), strings(&["system:authenticated"]))
    );
    // The administrator may impersonate; the plain user may not.
    assert_eq!(
        whoami(&server, &["--as", "dave", "--as-group", "qa"]),
        ("dave".into(), strings(&["qa", "system:authenticated"]))
    );
    // Extras, as client-go sends a kubeconfig's `as-user-extra` (Impersonate-Extra-*).
    let extra = whoami_with_extras(&server, "dave", &[("scopes", &["read", "write"])]);
    assert_eq!(
        extra["status"]["userInfo"],
        serde_json::json!({"username": "dave", "groups": ["system:authenticated"],
                           "extra": {"scopes": ["read", "write"]}})
    );
    let dir = server.data_dir();
    let user_cert = dir.join("user.crt").display().to_string();
    let user_key = dir.join("user.key").display().to_string();
    let (code, status) = server.curl_json(
        REVIEWS,
        &[
            "-X",
            "POST",
            "--cert",
            &user_cert,
            "--key",
            &user_key,
            "-H",
            "Impersonate-User: dave",
            "-d",
            "{}",
        ],
        b"",
    );
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        // Constrained impersonation's first mode that applies (1.36+, as the reference).
        "selfsubjectreviews.authentication.k8s.io is forbidden: User \"apfkit-user\" cannot impersonate-on:user-info:create resource \"selfsubjectreviews\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
    // Without a certificate or token: anonymous, which RBAC's bootstrap policy lets read
    // only /healthz, /livez, /readyz and /version (system:basic-user is bound to
    // system:authenticated), so its review is refused, naming it.
    let (code, status) = server.curl_anonymous(REVIEWS, &["-X", "POST", "-d", "{}"], b"");
    let status: Value = serde_json::from_slice(&status).unwrap();
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "selfsubjectreviews.authentication.k8s.io is forbidden: User \"system:anonymous\" \
         cannot create resource \"selfsubjectreviews\" in API group \"authentication.k8s.io\" \
         at the cluster scope"
    );
}

#[test]
fn tokens_authenticate_and_anonymous_requests_can_be_refused() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), "secret-1,carol,42,\"dev,ops\"\n").unwrap();
    let path = tokens.path().display().to_string();
    let server = Server::start(&[
        "--no-bootstrap",
        "--token-auth-file",
        &path,
        "--anonymous-auth=false",
    ]);
    let (code, review) = server.curl_json(
        REVIEWS,
        &[
            "-X",
            "POST",
            "-H",
            "Authorization: Bearer secret-1",
            "-d",
            "{}",
        ],
        b"",
    );
    assert_eq!(code, 201);
    assert_eq!(
        user_of(&review),
        (
            "carol".into(),
            strings(&["dev", "ops", "system:authenticated"])
        )
    );
    assert_eq!(review["status"]["userInfo"]["uid"], "42");
    for headers in [vec![], vec!["-H", "Authorization: Bearer wrong"]] {
        let (code, status) = server.curl_anonymous("/apis", &headers, b"");
        let status: Value = serde_json::from_slice(&status).unwrap();
        assert_eq!(
            (code, status["reason"].as_str()),
            (401, Some("Unauthorized")),
            "{status}"
        );
    }
    // Refused or answered without needing it, a large body is still read, so that an HTTP/2
    // client gets the answer rather than a reset stream.
    let large = vec![b' '; 200 << 10];
    for (token, code) in [("wrong", 401), ("secret-1", 201)] {
        let header = format!("Authorization: Bearer {token}");
        let (got, _) = server.curl_json(
            REVIEWS,
            &["-X", "POST", "-H", &header, "--data-binary", "@-"],
            &large,
        );
        assert_eq!(got, code, "{token}");
    }
    // kubectl's client certificate still works.
    assert_eq!(whoami(&server, &[]).0, "apfkit-admin");
}

#[test]
fn a_bad_token_file_stops_the_server_naming_it() {
    let short = b"only,two\n".to_vec();
    let oversized = vec![b'a'; (4 << 20) + 1];
    let garbage = vec![0xff, 0xfe, b',', 0x80];
    let unclosed = b"t,\"u,1\n".to_vec();
    for (contents, expected) in [
        (short, "token file: line 1: must have at least 3 columns"),
        (oversized, "larger than 4 MiB"),
        (garbage, "not UTF-8 text"),
        (unclosed, "token file: "),
    ] {
        let tokens = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(tokens.path(), &contents).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_apfkit"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .arg("--token-auth-file")
            .arg(tokens.path());
        let output = super::run_within(command, b"", Duration::from_secs(30), |_| {});
        assert_eq!(output.status.code(), Some(1), "{expected}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!(
                "--token-auth-file {}: {expected}",
                tokens.path().display()
            )),
            "{stderr}"
        );
    }
    // A directory, or nothing at all, is refused the same way.
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_apfkit"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--token-auth-file")
        .arg(dir.path());
    let output = super::run_within(command, b"", Duration::from_secs(30), |_| {});
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--token-auth-file"));
}

#[test]
fn certificates_of_another_authority_are_refused() {
    let server = Server::start(&["--no-bootstrap"]);
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "mallory");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:masters");
    let forged = params.self_signed(&key).unwrap();
    std::fs::write(dir.path().join("forged.crt"), forged.pem()).unwrap();
    std::fs::write(dir.path().join("forged.key"), key.serialize_pem()).unwrap();
    let mut command = Command::new("curl");
    command
        .args(["--silent", "--show-error", "--cacert"])
        .arg(server.ca())
        .arg("--cert")
        .arg(dir.path().join("forged.crt"))
        .arg("--key")
        .arg(dir.path().join("forged.key"))
        .args(["-X", "POST", "-d", "{}"])
        .arg(format!("{}{REVIEWS}", server.url()));
    let output = super::run_within(command, b"", Duration::from_secs(30), |_| {});
    assert!(!output.status.success(), "the handshake succeeded");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("mallory"));
}
