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

crate::cases!(
    subject_access_reviews_agree_over_a_matrix,
    the_namespaced_bootstrap_policy_is_kubes,
    impersonated_users_get_what_kube_gives_them,
);
