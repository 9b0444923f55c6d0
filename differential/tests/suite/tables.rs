//! Tables (`as=Table`): each kind's columns, their descriptions (issue 55, item 18) and the
//! rows of objects both servers hold alike.

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";

/// A table's column definitions alone: the rows list what each server holds.
fn columns(table: &Value) -> Value {
    json!({"kind": table["kind"], "columnDefinitions": table["columnDefinitions"]})
}

/// A table with the cells of its `Age` and date columns (which differ by the seconds between
/// the servers' starts) as `<age>`.
fn aged(table: &Value) -> Value {
    let mut table = table.clone();
    let timed: Vec<usize> = table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, c)| c["name"] == "Age" || c["type"] == "date")
        .map(|(i, _)| i)
        .collect();
    if let Some(rows) = table["rows"].as_array_mut() {
        for row in rows {
            for &i in &timed {
                if let Some(cell) = row["cells"].get_mut(i) {
                    *cell = json!("<age>");
                }
            }
        }
    }
    table
}

/// Every kind's columns, and the rows of the bootstrap objects and of objects made here.
async fn tables_have_kubes_columns_and_rows(s: &mut Session) {
    for path in [
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
        "/apis/apiregistration.k8s.io/v1/apiservices",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        "/api/v1/namespaces",
        "/api/v1/namespaces/default/services",
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/secrets",
        "/api/v1/namespaces/default/serviceaccounts",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
    ] {
        s.send(Request::get(path).accept(TABLE).selecting(columns))
            .await;
    }
    for path in [
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt",
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/exempt",
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/global-default",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/view",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-admin",
        "/api/v1/namespaces/kube-public",
    ] {
        s.send(Request::get(path).accept(TABLE).selecting(aged))
            .await;
    }
    let services = "/api/v1/namespaces/default/services";
    s.send(Request::post(
        services,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "tabled"},
            "spec": {"clusterIP": "None", "selector": {"app": "tabled"},
                "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP", "name": "dns"}]}}),
    ))
    .await;
    s.send(
        Request::get(&format!("{services}/tabled"))
            .accept(TABLE)
            .selecting(aged),
    )
    .await;
    let slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    s.send(Request::post(
        slices,
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "tabled"}, "addressType": "IPv4",
            "ports": [{"port": 80}], "endpoints": [{"addresses": ["10.0.0.1"]},
                {"addresses": ["10.0.0.2"]}]}),
    ))
    .await;
    s.send(
        Request::get(&format!("{slices}/tabled"))
            .accept(TABLE)
            .selecting(aged),
    )
    .await;
    // Without the object itself, and with it whole.
    s.send(
        Request::get(&format!("{slices}/tabled?includeObject=None"))
            .accept(TABLE)
            .selecting(aged),
    )
    .await;
    s.send(
        Request::get(&format!("{slices}/tabled?includeObject=Object"))
            .accept(TABLE)
            .selecting(aged),
    )
    .await;
    s.send(Request::delete(&format!("{slices}/tabled"))).await;
    // A CRD's row: its scope, served versions, group, kind, short names, establishment.
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    s.send(Request::post(
        crds,
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "tabs.tables.example.com"},
            "spec": {"group": "tables.example.com", "scope": "Namespaced",
                "names": {"plural": "tabs", "singular": "tab", "kind": "Tab",
                    "shortNames": ["tb", "tbs"]},
                "versions": [
                    {"name": "v2", "served": true, "storage": false,
                        "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v0", "served": false, "storage": false,
                        "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
    ))
    .await;
    s.wait_until(
        Request::get(&format!("{crds}/tabs.tables.example.com"))
            .accept(TABLE)
            .selecting(aged),
        |_, table| table["rows"][0]["cells"][7] == true,
    )
    .await;
    s.send(Request::delete(&format!("{crds}/tabs.tables.example.com")))
        .await;
    s.send(Request::delete(&format!("{services}/tabled"))).await;
}

crate::cases!(tables_have_kubes_columns_and_rows);
