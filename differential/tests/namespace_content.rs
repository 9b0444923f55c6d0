//! What a new namespace gets from kube-controller-manager 1.37 beside the reference (its
//! `serviceaccount-controller` and `root-ca-certificate-publisher-controller`), and from
//! apfkit's server on etcd and on its embedded store: the `default` ServiceAccount and the
//! `kube-root-ca.crt` ConfigMap holding the server's own certificate authority, the same
//! fields and managers on each; made again when deleted, put back when changed.

use std::time::Duration;

use apfkit_differential::controllers::WithControllers;
use apfkit_test_support::requests::{api_resource, client, config, namespaces, until};
use base64::Engine as _;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

/// How long a server's controllers may take for one step.
const WITHIN: Duration = Duration::from_secs(60);
const NAMESPACE: &str = "provisioned";

/// The object's fields both servers must agree on: everything but what differs by server
/// (uid, resource version, times, the authority itself, which `ca_is_the_servers` checks).
/// Managed fields are sorted as kube sorts entries written in the same second (operation,
/// manager, subresource): its order puts the earlier second first, and whether a client's
/// write and the controller's answer to it fall in one second is chance.
fn comparable(object: &Value) -> Value {
    let mut managers: Vec<Value> = object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| {
            json!({"manager": entry["manager"], "operation": entry["operation"],
                "fieldsV1": entry["fieldsV1"], "subresource": entry["subresource"]})
        })
        .collect();
    let key = |entry: &Value| {
        ["operation", "manager", "subresource"].map(|field| entry[field].to_string())
    };
    managers.sort_by_key(key);
    let mut data = object["data"].clone();
    if let Some(ca) = data.get_mut("ca.crt") {
        *ca = json!("<the server's authority>");
    }
    json!({"name": object["metadata"]["name"], "namespace": object["metadata"]["namespace"],
        "labels": object["metadata"]["labels"],
        "annotations": object["metadata"]["annotations"], "managedFields": managers,
        "data": data, "secrets": object["secrets"],
        "automountServiceAccountToken": object["automountServiceAccountToken"]})
}

/// The DER certificates of PEM text.
fn certificates(pem: &str) -> Vec<Vec<u8>> {
    pem.split("-----BEGIN CERTIFICATE-----")
        .skip(1)
        .filter_map(|block| {
            let body: String = block
                .split("-----END CERTIFICATE-----")
                .next()?
                .split_whitespace()
                .collect();
            base64::engine::general_purpose::STANDARD.decode(body).ok()
        })
        .collect()
}

/// What one server did: the two objects after each step.
async fn scenario(client: &kube::Client, authority: &[Vec<u8>]) -> Vec<(String, Value, Value)> {
    let accounts: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &api_resource("", "v1", "ServiceAccount", "serviceaccounts"),
    );
    let config_maps: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &api_resource("", "v1", "ConfigMap", "configmaps"),
    );
    let read = |api: Api<DynamicObject>, name: &'static str| async move {
        api.get_opt(name)
            .await
            .ok()
            .flatten()
            .map(|object| serde_json::to_value(object).unwrap())
    };
    let both = || async {
        (
            read(accounts.clone(), "default").await,
            read(config_maps.clone(), "kube-root-ca.crt").await,
        )
    };
    let mut steps = Vec::new();
    let mut record = |step: &str, (account, config_map): (Option<Value>, Option<Value>)| {
        let (account, config_map) = (account.unwrap(), config_map.unwrap());
        let ca = config_map["data"]["ca.crt"].as_str().unwrap_or_default();
        assert_eq!(
            certificates(ca),
            authority,
            "{step}: the server's own authority"
        );
        steps.push((
            step.to_owned(),
            comparable(&account),
            comparable(&config_map),
        ));
    };

    namespaces(client, &[NAMESPACE]).await;
    let made = until(WITHIN, || async {
        let (account, config_map) = both().await;
        account.is_some() && config_map.is_some()
    })
    .await;
    assert!(
        made,
        "the namespace's ServiceAccount and ConfigMap were not made"
    );
    record("made", both().await);

    // Deleted: made again, with a new uid.
    let uid = |object: Option<Value>| object.map(|o| o["metadata"]["uid"].clone());
    let before = uid(read(accounts.clone(), "default").await);
    accounts
        .delete("default", &DeleteParams::default())
        .await
        .unwrap();
    let again = until(WITHIN, || async {
        let now = uid(read(accounts.clone(), "default").await);
        now.is_some() && now != before
    })
    .await;
    assert!(again, "the default ServiceAccount was not made again");

    // Changed: its data and description put back, its other changes kept.
    let changed = json!({"metadata": {"labels": {"kept": "yes"},
        "annotations": {"kubernetes.io/description": ""}}, "data": {"ca.crt": "mine", "extra": "x"}});
    config_maps
        .patch(
            "kube-root-ca.crt",
            &PatchParams::default(),
            &Patch::Merge(&changed),
        )
        .await
        .unwrap();
    let put_back = until(WITHIN, || async {
        read(config_maps.clone(), "kube-root-ca.crt")
            .await
            .is_some_and(|c| c["data"].get("extra").is_none())
    })
    .await;
    assert!(put_back, "kube-root-ca.crt was not put back");
    record("made again and put back", both().await);
    steps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_namespace_gets_its_service_account_and_root_ca_as_kube_controller_manager_gives_them()
 {
    let servers = WithControllers::start(
        "serviceaccount-controller,root-ca-certificate-publisher-controller",
    )
    .await;
    let kubeconfigs = [
        ("reference", servers.reference.kubeconfig()),
        ("apfkit on etcd", servers.on_etcd.kubeconfig().to_owned()),
        ("apfkit embedded", servers.embedded.kubeconfig().to_owned()),
    ];
    let mut runs = Vec::new();
    for (name, kubeconfig) in &kubeconfigs {
        let authority = config(kubeconfig, "apfkit")
            .await
            .root_cert
            .unwrap_or_default();
        assert!(
            !authority.is_empty(),
            "{name}: no authority in the kubeconfig"
        );
        let client = client(kubeconfig, "apfkit").await;
        runs.push(scenario(&client, &authority).await);
    }
    for ((name, _), steps) in kubeconfigs.iter().zip(&runs).skip(1) {
        for ((step, account, config_map), (_, got_account, got_config_map)) in
            runs[0].iter().zip(steps)
        {
            assert_eq!(got_account, account, "{name}: the ServiceAccount, {step}");
            assert_eq!(got_config_map, config_map, "{name}: the ConfigMap, {step}");
        }
    }
    servers.shutdown().await;
}
