//! Authorization: SubjectAccessReviews over a matrix of users, groups, verbs, resources,
//! subresources, names and paths, and what impersonated users (anonymous among them) get
//! on the paths they ask for.

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const SARS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// A review's verdict: whether it is allowed or denied, and why it is not allowed (which of
/// several bindings allows a request depends on the order kube's informer lists them).
fn verdict(review: &Value) -> Value {
    let status = &review["status"];
    let allowed = status["allowed"].as_bool().unwrap_or_default();
    json!({"allowed": allowed, "denied": status["denied"],
        "reason": if allowed { Value::Null } else { status["reason"].clone() },
        "evaluationError": status["evaluationError"], "code": review["code"]})
}

/// The users asked about: a plain user, one in groups of its own, a service account, an
/// anonymous one, the components', and the administrators' group.
const SUBJECTS: &[(&str, &[&str])] = &[
    ("tina", &["system:authenticated"]),
    ("tom", &["reviewers", "system:authenticated"]),
    (
        "system:serviceaccount:default:default",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated",
        ],
    ),
    ("system:anonymous", &["system:unauthenticated"]),
    ("system:kube-scheduler", &["system:authenticated"]),
    ("system:kube-controller-manager", &["system:authenticated"]),
    ("system:apiserver", &["system:masters"]),
];

/// Every subject asked about every verb on kube's resources, subresources, a named object,
/// a namespace, and about the paths outside the API.
async fn subject_access_reviews_agree_over_a_matrix(s: &mut Session) {
    let attributes = [
        json!({"verb": "get", "group": "flowcontrol.apiserver.k8s.io", "resource": "flowschemas"}),
        json!({"verb": "list", "group": "flowcontrol.apiserver.k8s.io", "resource": "prioritylevelconfigurations"}),
        json!({"verb": "update", "group": "flowcontrol.apiserver.k8s.io", "resource": "flowschemas", "subresource": "status"}),
        json!({"verb": "watch", "resource": "namespaces"}),
        json!({"verb": "create", "resource": "services", "namespace": "default"}),
        json!({"verb": "delete", "group": "rbac.authorization.k8s.io", "resource": "clusterroles", "name": "admin"}),
        json!({"verb": "escalate", "group": "rbac.authorization.k8s.io", "resource": "clusterroles"}),
        json!({"verb": "bind", "group": "rbac.authorization.k8s.io", "resource": "clusterroles", "name": "view"}),
        json!({"verb": "impersonate", "resource": "users", "name": "tina"}),
        json!({"verb": "get", "group": "apiextensions.k8s.io", "resource": "customresourcedefinitions"}),
        json!({"verb": "list", "group": "apiregistration.k8s.io", "resource": "apiservices"}),
        json!({"verb": "list", "group": "discovery.k8s.io", "resource": "endpointslices", "namespace": "kube-system"}),
        json!({"verb": "create", "group": "authorization.k8s.io", "resource": "selfsubjectaccessreviews"}),
        json!({"verb": "get", "group": "coordination.k8s.io", "resource": "leases", "namespace": "kube-system"}),
        json!({"verb": "*", "group": "*", "resource": "*"}),
    ];
    let paths = [
        "/healthz",
        "/livez",
        "/readyz",
        "/version",
        "/api",
        "/apis",
        "/openapi/v2",
        "/metrics",
        "/debug/api_priority_and_fairness/dump_priority_levels",
        "/nothing",
    ];
    for (user, groups) in SUBJECTS {
        for resource in &attributes {
            s.send(
                Request::post(
                    SARS,
                    &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                        "spec": {"user": user, "groups": groups, "resourceAttributes": resource}}),
                )
                .selecting(verdict),
            )
            .await;
        }
        for path in paths {
            s.send(
                Request::post(
                    SARS,
                    &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                        "spec": {"user": user, "groups": groups,
                            "nonResourceAttributes": {"verb": "get", "path": path}}}),
                )
                .selecting(verdict),
            )
            .await;
        }
    }
}

/// The names of a list's items.
fn names(list: &Value) -> Value {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| item["metadata"]["name"].clone())
        .collect()
}

/// The namespaced bootstrap policy: the Roles and RoleBindings of `kube-system` and
/// `kube-public`, one of them whole.
async fn the_namespaced_bootstrap_policy_is_kubes(s: &mut Session) {
    for namespace in ["kube-system", "kube-public"] {
        for resource in ["roles", "rolebindings"] {
            s.send(
                Request::get(&format!(
                    "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/{resource}"
                ))
                .selecting(names),
            )
            .await;
        }
    }
    s.send(Request::get(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/system::leader-locking-kube-scheduler",
    ))
    .await;
}

/// What an impersonated user gets: a plain one, and the anonymous user, on reads, a write,
/// discovery and the paths outside the API.
async fn impersonated_users_get_what_kube_gives_them(s: &mut Session) {
    for user in ["tom", "system:anonymous"] {
        for path in [
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt",
            "/api/v1/namespaces/default/services",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/view",
            "/healthz",
            "/version",
            "/apis",
            "/api",
        ] {
            s.send(Request::get(path).impersonating(user).kind_only())
                .await;
        }
        s.send(
            Request::post(
                "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
                &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                    "metadata": {"name": "impersonated"},
                    "spec": {"priorityLevelConfiguration": {"name": "global-default"}}}),
            )
            .impersonating(user),
        )
        .await;
    }
}

pub(crate) const CLUSTER_ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
pub(crate) const CLUSTER_ROLE_BINDINGS: &str =
    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";

/// Grants the plain user `apfkit-user` the cluster role `name` of `rules`.
pub(crate) async fn grant_plain_user(s: &mut Session, name: &str, rules: Value) {
    s.send(Request::post(
        CLUSTER_ROLES,
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}, "rules": rules}),
    ))
    .await;
    s.send(Request::post(
        CLUSTER_ROLE_BINDINGS,
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                "name": "apfkit-user"}]}),
    ))
    .await;
    // Until the authorizer has the binding (each server's informer at its own pace).
    let rule = &rules[0];
    let attributes = json!({"verb": rule["verbs"][0], "group": rule["apiGroups"][0],
        "resource": rule["resources"][0], "name": rule["resourceNames"][0]});
    s.wait_until(
        Request::post(
            SARS,
            &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": "apfkit-user", "resourceAttributes": attributes}}),
        )
        .selecting(verdict),
        |_, review| review["status"]["allowed"] == true,
    )
    .await;
}

/// The plain user lists at `path` impersonating a node, then a service account: each by a
/// mode of its own.
async fn impersonate_a_node_and_a_service_account(s: &mut Session, path: &str) {
    for user in [
        "system:node:node-1",
        "system:serviceaccount:default:default",
    ] {
        s.send(Request::get(path).as_plain_user().impersonating(user))
            .await;
    }
}

/// Constrained impersonation (1.36+, KEP 5284): a user allowed `impersonate:user-info` on
/// users (and `impersonate-on:user-info:VERB` on what it asks for) impersonates for that verb
/// only; nodes and service accounts by their own modes; `system:masters` and the empty group
/// never; extras' keys domain-prefixed paths; and the `impersonate` verb of before still
/// works. Each refusal names the first mode's check that failed.
async fn constrained_impersonation_is_kubes(s: &mut Session) {
    let flow_schemas = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
    let levels = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
    let as_tina = || {
        Request::get(flow_schemas)
            .as_plain_user()
            .impersonating("tina")
    };
    // Nothing granted yet: the first mode that applies (user-info) is refused.
    s.send(as_tina()).await;
    impersonate_a_node_and_a_service_account(s, flow_schemas).await;
    s.send(
        Request::get(flow_schemas)
            .as_plain_user()
            .header("Impersonate-Uid", "u-1"),
    )
    .await;
    s.send(
        Request::get(flow_schemas)
            .as_plain_user()
            .header("Impersonate-Group", "g-1")
            .header("Impersonate-Extra-Scopes", "a"),
    )
    .await;
    // Impersonating on `list` only, not yet the user.
    grant_plain_user(
        s,
        "impersonate-on-list",
        json!([{"apiGroups": ["flowcontrol.apiserver.k8s.io"],
            "resources": ["flowschemas", "prioritylevelconfigurations"],
            "verbs": ["impersonate-on:user-info:list", "impersonate-on:arbitrary-node:list",
                "impersonate-on:serviceaccount:list"]}]),
    )
    .await;
    s.send(as_tina()).await;
    grant_plain_user(
        s,
        "impersonate-user-info",
        json!([{"apiGroups": ["authentication.k8s.io"],
            "resources": ["users", "groups", "uids", "userextras/scopes"],
            "verbs": ["impersonate:user-info"]}]),
    )
    .await;
    // Now tina, on lists only; as tina the list itself is hers to be allowed.
    s.send(as_tina()).await;
    s.send(Request::get(levels).as_plain_user().impersonating("tina"))
        .await;
    s.send(
        Request::get(&format!("{flow_schemas}/exempt"))
            .as_plain_user()
            .impersonating("tina"),
    )
    .await;
    for (group, uid) in [("g-1", "u-1"), ("system:masters", ""), ("", "")] {
        let mut request = as_tina().header("Impersonate-Group", group);
        if !uid.is_empty() {
            request = request.header("Impersonate-Uid", uid);
        }
        s.send(request).await;
    }
    for (key, value) in [
        ("Impersonate-Extra-Scopes", "view"),
        ("Impersonate-Extra-Example.com%2fteam", "a"),
        ("Impersonate-Extra-Other", "b"),
    ] {
        s.send(as_tina().header(key, value)).await;
    }
    // Nodes and service accounts have modes of their own, not granted here.
    impersonate_a_node_and_a_service_account(s, flow_schemas).await;
    // The `impersonate` verb of before (its users in the core group) still works.
    grant_plain_user(
        s,
        "impersonate-tom",
        json!([{"apiGroups": [""], "resources": ["users"], "resourceNames": ["tom"],
            "verbs": ["impersonate"]}]),
    )
    .await;
    s.send(
        Request::get(&format!("{flow_schemas}/exempt"))
            .as_plain_user()
            .impersonating("tom"),
    )
    .await;
    for name in [
        "impersonate-on-list",
        "impersonate-user-info",
        "impersonate-tom",
    ] {
        s.send(Request::delete(&format!("{CLUSTER_ROLE_BINDINGS}/{name}")).kind_only())
            .await;
        s.send(Request::delete(&format!("{CLUSTER_ROLES}/{name}")).kind_only())
            .await;
    }
}

crate::cases!(
    subject_access_reviews_agree_over_a_matrix,
    the_namespaced_bootstrap_policy_is_kubes,
    impersonated_users_get_what_kube_gives_them,
    constrained_impersonation_is_kubes,
);
