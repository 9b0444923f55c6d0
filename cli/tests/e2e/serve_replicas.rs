//! Two `apfkit serve` replicas on one three-member etcd serve one API: a write through one is
//! seen by a watch through the other (kube-rs's watcher), and with a member killed under load
//! every create that was acknowledged (201) is listed by the other replica.

use std::time::Duration;

use apfkit_test_support::etcd::Cluster;
use apfkit_types::flowcontrol::{v1, v1beta3};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::watcher;

use super::serve::{NO_APF, OLDER_VERSIONS, Server};
use super::serve_clients::{flow_schema, kube_client};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_three_etcd_members_serve_one_api() {
    let mut cluster = Cluster::start(3);
    let endpoints = cluster.endpoints().join(",");
    // Both bootstrap, as two kube-apiservers do: the second finds the objects there.
    let first = Server::start(&[OLDER_VERSIONS, "--etcd-servers", &endpoints, NO_APF]);
    let second = Server::start(&[OLDER_VERSIONS, "--etcd-servers", &endpoints, NO_APF]);
    let writer: Api<v1beta3::FlowSchema> = Api::all(kube_client(&first).await);
    let reader: Api<v1::FlowSchema> = Api::all(kube_client(&second).await);

    // A write through the first is seen by a watch through the second.
    let (seen_sender, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let watched = reader.clone();
    let watching = tokio::spawn(async move {
        let mut events = watcher(watched, watcher::Config::default()).boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let name = match event {
                watcher::Event::Apply(fs) => fs.metadata.name.unwrap_or_default(),
                watcher::Event::InitDone => "init done".to_owned(),
                _ => continue,
            };
            if seen_sender.send(name).is_err() {
                break;
            }
        }
    });
    wait_for(&mut seen, "init done").await;
    writer
        .create(&PostParams::default(), &flow_schema("through-first", 400))
        .await
        .unwrap();
    wait_for(&mut seen, "through-first").await;
    watching.abort();

    // Creates go on through the first replica while a member is killed; every create that was
    // acknowledged is listed by the second.
    let load = tokio::spawn(async move {
        let mut acknowledged = Vec::new();
        for n in 0..200 {
            let name = format!("load-{n:04}");
            let attempt = tokio::time::timeout(
                Duration::from_secs(10),
                writer.create(&PostParams::default(), &flow_schema(&name, 500)),
            )
            .await;
            if let Ok(Ok(_)) = attempt {
                acknowledged.push(name);
            }
        }
        acknowledged
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!load.is_finished(), "the member is killed under load");
    cluster.members[2].stop();
    let acknowledged = load.await.unwrap();
    assert!(
        acknowledged.len() >= 100,
        "most creates go through with two of three members up: {}",
        acknowledged.len()
    );
    let listed: Vec<String> = reader
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|fs| fs.metadata.name)
        .collect();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|n| !listed.contains(n))
        .collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
}

/// Waits (at most 20 s) until the watch reports `name`.
async fn wait_for(seen: &mut tokio::sync::mpsc::UnboundedReceiver<String>, name: &str) {
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(got) = seen.recv().await {
            if got == name {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        found,
        Ok(true),
        "the second replica's watch did not see {name}"
    );
}
