//! The RBAC policy as a client meets it, on `apfkit-server` started in the test and asked
//! through kube-rs as the administrator and as the plain user of its kubeconfig: a binding
//! grants and its deletion revokes, an aggregated ClusterRole takes the rules of the roles it
//! selects, and a user cannot bind a role that grants more than it holds.

use std::time::Duration;

use apfkit_test_support::requests;
use k8s_openapi::api::flowcontrol::v1::FlowSchema;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, ListParams, PostParams};

const USER: &str = "apfkit-user";

async fn client(server: &apfkit_server::Server, context: &str) -> kube::Client {
    requests::client(server.kubeconfig(), context).await
}

fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// Creates `value` through `api`, which must take it.
async fn create<K>(api: &Api<K>, value: serde_json::Value)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    api.create(&PostParams::default(), &object(value))
        .await
        .unwrap();
}

/// A ClusterRoleBinding `name` of the ClusterRole `role` to the plain user.
fn user_binding(name: &str, role: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
    })
}

/// A server with RBAC, in `dir`.
async fn start(dir: &tempfile::TempDir) -> apfkit_server::Server {
    apfkit_server::start(apfkit_server::Config::new(dir.path()))
        .await
        .unwrap()
}

/// Asks `probe` every 50 ms until it holds, for 10 s at most.
async fn until<F: std::future::Future<Output = bool>>(probe: impl FnMut() -> F) -> bool {
    requests::until(Duration::from_secs(10), probe).await
}

/// The user's list of FlowSchemas: `Ok`, or the refusal's code and message.
async fn user_lists(user: &kube::Client) -> Result<(), (u16, String)> {
    let schemas: Api<FlowSchema> = Api::all(user.clone());
    match schemas.list(&ListParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) => Err((status.code, status.message)),
        Err(other) => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_grants_and_its_deletion_revokes() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir).await;
    let (admin, user) = (client(&server, "apfkit").await, client(&server, USER).await);
    assert_eq!(
        user_lists(&user).await,
        Err((
            403,
            "flowschemas.flowcontrol.apiserver.k8s.io is forbidden: User \"apfkit-user\" cannot \
             list resource \"flowschemas\" in API group \"flowcontrol.apiserver.k8s.io\" at the \
             cluster scope"
                .to_owned()
        ))
    );
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    create(
        &roles,
        serde_json::json!({
            "metadata": {"name": "schema-reader"},
            "rules": [{"apiGroups": ["flowcontrol.apiserver.k8s.io"],
                       "resources": ["flowschemas"], "verbs": ["get", "list"]}],
        }),
    )
    .await;
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    create(&bindings, user_binding("schema-reader", "schema-reader")).await;
    assert!(
        until(|| async { user_lists(&user).await.is_ok() }).await,
        "granted"
    );
    bindings
        .delete("schema-reader", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        until(|| async { user_lists(&user).await.is_err() }).await,
        "revoked"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aggregated_cluster_role_takes_the_rules_of_the_roles_it_selects() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir).await;
    let roles: Api<ClusterRole> = Api::all(client(&server, "apfkit").await);
    create(
        &roles,
        serde_json::json!({
            "metadata": {"name": "team-a"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"team": "a"}}]},
        }),
    )
    .await;
    create(
        &roles,
        serde_json::json!({
            "metadata": {"name": "team-a-schemas", "labels": {"team": "a"}},
            "rules": [{"apiGroups": ["flowcontrol.apiserver.k8s.io"],
                       "resources": ["flowschemas"], "verbs": ["watch"]}],
        }),
    )
    .await;
    let aggregated = until(|| async {
        let role = roles.get("team-a").await.unwrap();
        role.rules.is_some_and(|rules| {
            rules.iter().any(|rule| {
                rule.verbs == ["watch"] && rule.resources == Some(vec!["flowschemas".to_owned()])
            })
        })
    })
    .await;
    assert!(aggregated, "{:?}", roles.get("team-a").await.unwrap().rules);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_cannot_bind_a_role_granting_more_than_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir).await;
    let (admin, user) = (client(&server, "apfkit").await, client(&server, USER).await);
    // The user may create ClusterRoleBindings, and holds nothing else.
    create(
        &Api::<ClusterRole>::all(admin.clone()),
        serde_json::json!({
            "metadata": {"name": "binder"},
            "rules": [{"apiGroups": ["rbac.authorization.k8s.io"],
                       "resources": ["clusterrolebindings"], "verbs": ["create"]}],
        }),
    )
    .await;
    let binding = |name: &str, role: &str| object::<ClusterRoleBinding>(user_binding(name, role));
    create(
        &Api::<ClusterRoleBinding>::all(admin),
        user_binding("binder", "binder"),
    )
    .await;
    let as_user: Api<ClusterRoleBinding> = Api::all(user);
    let refused = until(|| async {
        match as_user
            .create(
                &PostParams::default(),
                &binding("self-admin", "cluster-admin"),
            )
            .await
        {
            Err(kube::Error::Api(status)) => {
                status.code == 403
                    && status.message.starts_with(
                        "clusterrolebindings.rbac.authorization.k8s.io \"self-admin\" is \
                         forbidden: user \"apfkit-user\"",
                    )
            }
            _ => false,
        }
    })
    .await;
    assert!(refused, "binding cluster-admin is an escalation");
    // Binding a role it holds is no escalation.
    as_user
        .create(&PostParams::default(), &binding("binder-again", "binder"))
        .await
        .unwrap();
    server.shutdown().await;
}
