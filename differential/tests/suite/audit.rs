//! Audit events for the same requests, field by field: each server audits with the suite's
//! policy (`apfkit_differential::servers::AUDIT_POLICY`), and every request sent
//! `.audited()` has its events compared after its answer: the stages, the level's objects,
//! the user and the impersonated one, the object reference, the response status and the
//! annotations of authorization.

use apfkit_differential::{Request, Session};
use serde_json::json;

const NAMESPACE: &str = "audited";

/// Writes and reads in the audited namespace (`RequestResponse`), FlowSchemas (`Metadata`)
/// and `/version` (`Request`), answers of every kind: created, read, listed, patched,
/// refused as a conflict, not found, forbidden, invalid, dry run, watched, deleted.
async fn audit_events_are_kubes(s: &mut Session) {
    s.send(Request::post(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    ))
    .await;
    s.send(Request::get(&format!("/api/v1/namespaces/{NAMESPACE}")).audited())
        .await;
    let roles = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/roles");
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "reader", "labels": {"tier": "audit"}},
        "rules": [{"apiGroups": [""], "resources": ["services"], "verbs": ["get"]}]});
    s.send(Request::post(&roles, &role).audited()).await;
    s.send(Request::post(&format!("{roles}?dryRun=All"), &role).audited())
        .await;
    let reader = format!("{roles}/reader");
    s.send(Request::get(&reader).audited()).await;
    s.send(Request::get(&format!("{roles}?limit=1&labelSelector=tier%3Daudit")).audited())
        .await;
    s.send(
        Request::patch(
            &reader,
            "application/merge-patch+json",
            &json!({"metadata": {"annotations": {"audited": "yes"}}}),
        )
        .audited(),
    )
    .await;
    let mut stale = role.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    s.send(Request::put(&reader, &stale).audited()).await;
    s.send(Request::get(&format!("{roles}/missing")).audited())
        .await;
    s.send(
        Request::post(
            &roles,
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "Not-Valid"}, "rules": []}),
        )
        .audited(),
    )
    .await;
    // Impersonated: the administrator impersonates by constrained impersonation's
    // `user-info` mode, which the event notes in `authenticationMetadata`; a service account
    // by the `serviceaccount` mode.
    s.send(Request::get(&reader).impersonating("tom").audited())
        .await;
    s.send(
        Request::get(&reader)
            .impersonating("system:serviceaccount:default:default")
            .audited(),
    )
    .await;
    s.send(
        Request::get(&format!(
            "{roles}?watch=true&resourceVersion=0&timeoutSeconds=1"
        ))
        .audited(),
    )
    .await;
    s.send(
        Request::post(
            &format!("/api/v1/namespaces/{NAMESPACE}/services"),
            &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
                "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}),
        )
        .audited(),
    )
    .await;
    s.send(Request::delete(&reader).audited()).await;
    s.send(
        Request::get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt")
            .kind_only()
            .audited(),
    )
    .await;
    s.send(Request::get("/version").kind_only().audited()).await;
}

crate::cases!(audit_events_are_kubes);
