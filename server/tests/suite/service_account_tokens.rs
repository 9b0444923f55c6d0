//! Service accounts end to end, through kube-rs: a namespace's `default` account and root CA
//! made by the server's controllers, a token requested for an account (TokenRequest) and used
//! as a bearer token, authorized by RBAC as the account (a RoleBinding's subject of kind
//! ServiceAccount), reviewed (TokenReview), and refused once its account is gone; the
//! requests kube-apiserver refuses, refused; the issuer's OpenID discovery verifying its
//! tokens for a relying party outside the cluster.

use std::time::Duration;

use apfkit_server::{Config, start};
use apfkit_test_support::requests::{Sent, admin, client, config, namespaces, send, until};
use serde_json::{Value, json};

const WITHIN: Duration = Duration::from_secs(20);

/// A client of the server that authenticates with `token` alone.
async fn bearer(kubeconfig: &std::path::Path, token: &str) -> kube::Client {
    let mut config = config(kubeconfig, "apfkit").await;
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.to_owned().into()),
        ..kube::config::AuthInfo::default()
    };
    kube::Client::try_from(config).unwrap()
}

fn body(answer: &apfkit_test_support::requests::Answer) -> Value {
    serde_json::from_str(&answer.body).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_accounts_token_authenticates_as_the_account_while_it_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new(dir.path())).await.unwrap();
    let kubeconfig = server.kubeconfig().to_owned();
    let admin_client = client(&kubeconfig, "apfkit").await;
    namespaces(&admin_client, &["robots"]).await;

    // The controllers give the namespace its account and root CA.
    let made = until(WITHIN, || async {
        let account = send(
            &admin_client,
            "GET",
            "/api/v1/namespaces/robots/serviceaccounts/default",
            &Sent::Nothing,
            None,
        )
        .await;
        let ca = send(
            &admin_client,
            "GET",
            "/api/v1/namespaces/robots/configmaps/kube-root-ca.crt",
            &Sent::Nothing,
            None,
        )
        .await;
        account.code == 200 && ca.code == 200
    })
    .await;
    assert!(made, "no default ServiceAccount or kube-root-ca.crt");

    // A token for the account, with kube's defaults.
    let token_path = "/api/v1/namespaces/robots/serviceaccounts/default/token";
    let answer = admin(
        &admin_client,
        "POST",
        token_path,
        Sent::Json(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"})),
    )
    .await;
    assert_eq!(answer.code, 201);
    let request = body(&answer);
    assert_eq!(request["spec"]["expirationSeconds"], 3600);
    assert_eq!(
        request["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(request["metadata"]["name"], "default");
    let token = request["status"]["token"].as_str().unwrap().to_owned();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");

    // It authenticates as the account, which RBAC lets do nothing until a binding says so.
    let robot = bearer(&kubeconfig, &token).await;
    let whoami = send(
        &robot,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &Sent::Json(json!({"apiVersion": "authentication.k8s.io/v1",
            "kind": "SelfSubjectReview"})),
        None,
    )
    .await;
    let user = &body(&whoami)["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:robots:default");
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:robots",
            "system:authenticated"
        ])
    );
    assert!(
        user["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .unwrap()
            .starts_with("JTI=")
    );
    let config_maps = "/api/v1/namespaces/robots/configmaps";
    let refused = send(&robot, "GET", config_maps, &Sent::Nothing, None).await;
    assert_eq!(refused.code, 403, "{}", refused.body);
    admin(
        &admin_client,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/robots/rolebindings",
        Sent::Json(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "robot-views"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "default",
                "namespace": "robots"}]}),
        ),
    )
    .await;
    let allowed = until(WITHIN, || async {
        send(&robot, "GET", config_maps, &Sent::Nothing, None)
            .await
            .code
            == 200
    })
    .await;
    assert!(
        allowed,
        "the binding did not let the account list ConfigMaps"
    );

    // Reading ConfigMaps is not making tokens: `create` on `serviceaccounts/token` is its own
    // verb, which `view` does not grant.
    let minted = send(&robot, "POST", token_path, &Sent::Json(json!({})), None).await;
    assert_eq!(minted.code, 403, "{}", minted.body);
    assert_eq!(
        body(&minted)["message"],
        "serviceaccounts \"default\" is forbidden: User \"system:serviceaccount:robots:default\" \
         cannot create resource \"serviceaccounts/token\" in API group \"\" in the namespace \
         \"robots\""
    );

    // A TokenReview says the same, with the audiences the token is for.
    let review = admin(
        &admin_client,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        Sent::Json(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token}}),
        ),
    )
    .await;
    let status = &body(&review)["status"];
    assert_eq!(status["authenticated"], true);
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:robots:default"
    );
    assert_eq!(
        status["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    // For another audience it is not.
    let review = admin(
        &admin_client,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        Sent::Json(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token, "audiences": ["vault"]}}),
        ),
    )
    .await;
    assert_eq!(body(&review)["status"]["authenticated"], Value::Null);

    // What kube refuses: a short lifetime, another account's name, an account that is not
    // there, a bound kind not served, a GET of the subresource; a forged token.
    let refusals = [
        (
            token_path,
            json!({"spec": {"expirationSeconds": 599}}),
            422,
            "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: \
             Invalid value: 599: may not specify a duration less than 10 minutes",
        ),
        (
            token_path,
            json!({"metadata": {"name": "other"}}),
            422,
            "TokenRequest.authentication.k8s.io \"default\" is invalid: metadata.name: Invalid \
             value: \"other\": must match the service account name if specified",
        ),
        (
            "/api/v1/namespaces/robots/serviceaccounts/nobody/token",
            json!({}),
            404,
            "serviceaccounts \"nobody\" not found",
        ),
        (
            token_path,
            json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                "name": "p"}}}),
            404,
            "pods \"p\" not found",
        ),
    ];
    for (path, sent, code, message) in refusals {
        let answer = send(&admin_client, "POST", path, &Sent::Json(sent), None).await;
        assert_eq!(answer.code, code, "{}", answer.body);
        assert_eq!(body(&answer)["message"], message);
    }
    // Bodies that are not a TokenRequest are refused, the server unharmed.
    for (sent, message) in [
        (
            json!([1, 2]),
            "the body is not a TokenRequest: not a JSON object",
        ),
        (
            json!({"spec": {"expirationSeconds": "soon"}}),
            "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: json: cannot \
             unmarshal string into Go struct field TokenRequestSpec.spec.expirationSeconds of \
             type int64",
        ),
    ] {
        let answer = send(&admin_client, "POST", token_path, &Sent::Json(sent), None).await;
        assert_eq!(answer.code, 400, "{}", answer.body);
        assert_eq!(body(&answer)["message"], message);
    }
    let get = send(&admin_client, "GET", token_path, &Sent::Nothing, None).await;
    assert_eq!(get.code, 405, "{}", get.body);
    let mut forged: Vec<&str> = token.split('.').collect();
    forged[2] = "AAAA";
    let forged = bearer(&kubeconfig, &forged.join(".")).await;
    let answer = send(&forged, "GET", config_maps, &Sent::Nothing, None).await;
    assert_eq!(answer.code, 401);

    // Once the account is gone (made again by its controller, with another uid), its tokens
    // are refused.
    admin(
        &admin_client,
        "DELETE",
        "/api/v1/namespaces/robots/serviceaccounts/default",
        Sent::Nothing,
    )
    .await;
    let refused = until(WITHIN, || async {
        send(&robot, "GET", config_maps, &Sent::Nothing, None)
            .await
            .code
            == 401
    })
    .await;
    assert!(refused, "a token of a deleted account still authenticates");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_issuers_discovery_verifies_its_tokens_for_a_relying_party() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new(dir.path())).await.unwrap();
    let kubeconfig = server.kubeconfig().to_owned();
    let admin_client = client(&kubeconfig, "apfkit").await;
    admin(
        &admin_client,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        Sent::Json(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "workload"}})),
    )
    .await;
    let answer = admin(
        &admin_client,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/workload/token",
        Sent::Json(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": ["vault", "https://kubernetes.default.svc.cluster.local"]}}),
        ),
    )
    .await;
    let token = body(&answer)["status"]["token"]
        .as_str()
        .unwrap()
        .to_owned();

    // The account (its token is for the server too) reads the discovery documents (kube's bootstrap policy lets every service
    // account), which say where the keys are: at the address served.
    let workload = bearer(&kubeconfig, &token).await;
    let read = |path: &'static str| {
        let workload = workload.clone();
        async move { send(&workload, "GET", path, &Sent::Nothing, None).await }
    };
    let configuration = read("/.well-known/openid-configuration").await;
    assert_eq!(configuration.code, 200, "{}", configuration.body);
    let configuration = body(&configuration);
    assert_eq!(
        configuration["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(
        configuration["jwks_uri"],
        format!("{}/openid/v1/jwks", server.url())
    );
    assert_eq!(
        configuration["id_token_signing_alg_values_supported"],
        json!(["ES256"])
    );
    let keys = read("/openid/v1/jwks").await;
    assert_eq!(keys.code, 200, "{}", keys.body);

    // The relying party verifies the token with the key its header names, for its audience.
    let keys: jsonwebtoken::jwk::JwkSet = serde_json::from_str(&keys.body).unwrap();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    let key = keys
        .find(header.kid.as_deref().unwrap())
        .expect("the token's key");
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&["vault"]);
    validation.set_issuer(&["https://kubernetes.default.svc.cluster.local"]);
    let verified = jsonwebtoken::decode::<Value>(
        &token,
        &jsonwebtoken::DecodingKey::from_jwk(key).unwrap(),
        &validation,
    )
    .unwrap();
    assert_eq!(
        verified.claims["sub"],
        "system:serviceaccount:default:workload"
    );
    // A token of another audience is not for it.
    validation.set_audience(&["elsewhere"]);
    assert!(
        jsonwebtoken::decode::<Value>(
            &token,
            &jsonwebtoken::DecodingKey::from_jwk(key).unwrap(),
            &validation,
        )
        .is_err()
    );

    // Anyone else: as RBAC says (a plain user is bound to nothing).
    let plain = client(&kubeconfig, "apfkit-user").await;
    let refused = send(&plain, "GET", "/openid/v1/jwks", &Sent::Nothing, None).await;
    assert_eq!(refused.code, 403, "{}", refused.body);
    server.shutdown().await;
}

/// What a server started in process with `jwks_uri` answers to a GET of its issuer's
/// provider configuration.
async fn configuration_in_process(jwks_uri: Option<&str>) -> apfkit_test_support::requests::Answer {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.service_account_jwks_uri = jwks_uri.map(str::to_owned);
    let server = apfkit_server::start_in_process(config).await.unwrap();
    let client = kube::Client::new(server.service(), "default");
    let path = "/.well-known/openid-configuration";
    send(&client, "GET", path, &Sent::Nothing, None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_the_issuers_discovery_needs_the_address_of_its_keys() {
    let missing = configuration_in_process(None).await;
    assert_eq!(
        (missing.code, missing.body.as_str()),
        (404, "404 page not found\n")
    );
    let found = configuration_in_process(Some("https://keys.example.com/jwks")).await;
    assert_eq!(found.code, 200, "{}", found.body);
    assert_eq!(body(&found)["jwks_uri"], "https://keys.example.com/jwks");
}
