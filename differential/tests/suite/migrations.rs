//! StorageVersionMigrations (`storagemigration.k8s.io/v1`, GA in 1.37) as kube-apiserver
//! serves them: created with their status cleared, checked, their spec immutable, their
//! status written through `/status` under apimachinery's condition rules, printed with
//! kubectl's columns, and the group in discovery. (The reference runs no
//! kube-controller-manager here, so nothing migrates; both servers answer the requests alone.)

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const MIGRATIONS: &str = "/apis/storagemigration.k8s.io/v1/storageversionmigrations";
const MERGE: &str = "application/merge-patch+json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

fn migration(name: &str, group: &str, resource: &str) -> Value {
    json!({"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
        "metadata": {"name": name},
        "spec": {"resource": {"group": group, "resource": resource}},
        "status": {"resourceVersion": "1", "conditions": []}})
}

fn condition(type_: &str, status: &str) -> Value {
    json!({"type": type_, "status": status, "lastTransitionTime": "2026-11-30T00:00:00Z",
        "reason": "Tested", "message": "set by the differential suite"})
}

async fn storage_version_migrations_are_served_as_kube_serves_them(s: &mut Session) {
    let path = format!("{MIGRATIONS}/svm-flowschemas");
    let status = format!("{path}/status");
    s.send(Request::post(
        MIGRATIONS,
        &migration(
            "svm-flowschemas",
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
        ),
    ))
    .await;
    s.send(Request::get(&path)).await;
    // Refused: no resource, names that are no DNS labels or subdomains, a bad name.
    for (name, group, resource) in [
        ("svm-missing", "apps", ""),
        ("svm-bad", "Not_A_Group", "1pods"),
        ("SVM_Bad", "", "pods"),
    ] {
        s.send(Request::post(MIGRATIONS, &migration(name, group, resource)))
            .await;
    }
    // The spec is immutable; a write to the object keeps the status.
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"spec": {"resource": {"resource": "prioritylevelconfigurations"}}}),
    ))
    .await;
    s.send(Request::patch(
        &path,
        MERGE,
        &json!({"metadata": {"labels": {"a": "b"}}, "status": {"resourceVersion": "7"}}),
    ))
    .await;
    // `/status`: the resource version once, conditions as apimachinery checks them.
    s.send(Request::patch(
        &status,
        MERGE,
        &json!({"spec": {"resource": {"resource": "ignored"}},
            "status": {"resourceVersion": "15",
                "conditions": [condition("Running", "True")]}}),
    ))
    .await;
    s.send(Request::patch(
        &status,
        MERGE,
        &json!({"status": {"resourceVersion": "16"}}),
    ))
    .await;
    s.send(Request::patch(
        &status,
        MERGE,
        &json!({"status": {"conditions": [
            {"type": "", "status": "Maybe", "observedGeneration": -1, "reason": "1bad"},
            condition("Running", "True"), condition("Running", "False")]}}),
    ))
    .await;
    s.send(Request::patch(
        &status,
        MERGE,
        &json!({"status": {"conditions": [condition("Succeeded", "True"),
            condition("Failed", "True")]}}),
    ))
    .await;
    s.send(Request::patch(
        &status,
        MERGE,
        &json!({"status": {"conditions": [condition("Running", "False"),
            condition("Succeeded", "True")]}}),
    ))
    .await;
    s.send(Request::patch(
        &status,
        MERGE,
        &json!({"status": {"conditions": [condition("Succeeded", "False")]}}),
    ))
    .await;
    // kubectl's columns.
    s.send(Request::get(&path).accept(TABLE)).await;
    s.send(
        Request::post(MIGRATIONS, &migration("svm-core", "", "secrets"))
            .selecting(|answer| json!({"kind": answer["kind"]})),
    )
    .await;
    s.send(Request::get(&format!("{MIGRATIONS}/svm-core")).accept(TABLE))
        .await;
    // An update without a resourceVersion is refused.
    s.send(Request::put(
        &path,
        &migration(
            "svm-flowschemas",
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
        ),
    ))
    .await;
    // Discovery of the group.
    s.send(Request::get("/apis/storagemigration.k8s.io")).await;
    s.send(Request::get("/apis/storagemigration.k8s.io/v1"))
        .await;
    for name in ["svm-flowschemas", "svm-core"] {
        s.send(Request::delete(&format!("{MIGRATIONS}/{name}")).kind_only())
            .await;
    }
}

crate::cases!(storage_version_migrations_are_served_as_kube_serves_them);
