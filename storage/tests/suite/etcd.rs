//! Listing stored objects from a real etcd: every encoding, broken values, keys outside the
//! resources, paging past one request, and unreachable servers.

use std::time::{Duration, Instant};

use apfkit_runtime::scheme::StorageEncoding;
use apfkit_storage::envelope::{EnvelopeError, StoredAs, ValueError, wrap};
use apfkit_storage::etcd::{EtcdOptions, StorageError, Store, Swap, Swapped};
use apfkit_test_support::etcd::{Cluster, Etcd};

fn options(etcd: &Etcd) -> EtcdOptions {
    EtcdOptions {
        endpoints: vec![etcd.endpoint.clone()],
        ..EtcdOptions::default()
    }
}

async fn put(etcd: &Etcd, key: &str, value: &[u8]) {
    let mut client = etcd_client::Client::connect([etcd.endpoint.as_str()], None)
        .await
        .unwrap();
    client.put(key, value, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stored_object_is_listed_with_its_encoding_and_version() {
    let etcd = Etcd::start();
    let flow_schema = wrap(
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "FlowSchema",
        b"\x0a\x00",
    );
    put(&etcd, "/registry/flowschemas/catch-all", &flow_schema).await;
    put(
        &etcd,
        "/registry/prioritylevelconfigurations/global-default",
        &wrap(
            "flowcontrol.apiserver.k8s.io/v1",
            "PriorityLevelConfiguration",
            b"",
        ),
    )
    .await;
    put(
        &etcd,
        "/registry/prioritylevelconfigurations/secret",
        b"k8s:enc:aescbc:v1:key1:\x01\x02",
    )
    .await;
    put(
        &etcd,
        "/registry/prioritylevelconfigurations/broken",
        b"k8s\0\x0a\xff",
    )
    .await;
    put(
        &etcd,
        "/registry/apiregistration.k8s.io/apiservices/v1.apps",
        br#"{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"v1.apps"}}"#,
    )
    .await;
    // Not ours: other resources and look-alike prefixes.
    put(&etcd, "/registry/pods/default/p", b"k8s\0").await;
    put(&etcd, "/registry/flowschemasX/x", b"{}").await;
    put(&etcd, "/other/flowschemas/x", b"{}").await;

    let store = Store::connect(&options(&etcd)).await.unwrap();
    let entries = store.list().await.unwrap();
    let keys: Vec<String> = entries.iter().map(|e| e.key.to_string()).collect();
    assert_eq!(
        keys,
        [
            "/registry/flowschemas/catch-all",
            "/registry/prioritylevelconfigurations/broken",
            "/registry/prioritylevelconfigurations/global-default",
            "/registry/prioritylevelconfigurations/secret",
            "/registry/apiregistration.k8s.io/apiservices/v1.apps",
        ]
    );
    let first = entries[0].stored.as_ref().unwrap();
    assert_eq!(
        first.stored_as,
        StoredAs::Encoded(StorageEncoding::Protobuf)
    );
    assert_eq!(
        first.api_version.as_deref(),
        Some("flowcontrol.apiserver.k8s.io/v1beta3")
    );
    assert_eq!(entries[0].size, flow_schema.len());
    assert!(entries[0].mod_revision > 0);
    assert!(matches!(
        entries[1].stored,
        Err(ValueError::Envelope(EnvelopeError::Protobuf(_)))
    ));
    assert_eq!(
        entries[3].stored.as_ref().unwrap().stored_as,
        StoredAs::Encrypted {
            provider: "aescbc:v1:key1".to_owned()
        }
    );
    assert_eq!(
        entries[4].stored.as_ref().unwrap().stored_as,
        StoredAs::Encoded(StorageEncoding::Json)
    );
    assert_eq!(entries[4].resource.resource.resource, "apiservices");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_objects_than_one_page_are_all_listed_once() {
    let etcd = Etcd::start();
    let mut client = etcd_client::Client::connect([etcd.endpoint.as_str()], None)
        .await
        .unwrap();
    let value = wrap("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", b"");
    for i in 0..450 {
        client
            .put(
                format!("/registry/flowschemas/fs-{i:04}"),
                value.clone(),
                None,
            )
            .await
            .unwrap();
    }
    let store = Store::connect(&options(&etcd)).await.unwrap();
    let entries = store.list().await.unwrap();
    assert_eq!(entries.len(), 450);
    assert!(
        entries.windows(2).all(|w| w[0].key < w[1].key),
        "in key order, no repeats"
    );
    assert_eq!(
        entries[449].key.to_string(),
        "/registry/flowschemas/fs-0449"
    );

    // Another prefix, as kube-apiserver's --etcd-prefix allows.
    client
        .put("/custom/flowschemas/a", value, None)
        .await
        .unwrap();
    let custom = Store::connect(&EtcdOptions {
        prefix: "/custom/".to_owned(),
        ..options(&etcd)
    })
    .await
    .unwrap();
    assert_eq!(custom.list().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_or_misconfigured_etcd_is_a_clear_error_in_time() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let options = EtcdOptions {
        endpoints: vec![format!("http://127.0.0.1:{closed}")],
        timeout: Duration::from_secs(2),
        ..EtcdOptions::default()
    };
    let started = Instant::now();
    let Err(err) = Store::connect(&options).await else {
        panic!("connected to a closed port")
    };
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(matches!(err, StorageError::Connect { .. }), "{err}");
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{closed}")),
        "{err}"
    );

    let half = EtcdOptions {
        cert: Some("/x/client.crt".into()),
        ..options.clone()
    };
    assert!(matches!(
        Store::connect(&half).await,
        Err(StorageError::HalfIdentity)
    ));
    let missing = EtcdOptions {
        ca: Some("/nonexistent/ca.crt".into()),
        ..options
    };
    let Err(err) = Store::connect(&missing).await else {
        panic!()
    };
    assert!(
        err.to_string().starts_with("--cacert /nonexistent/ca.crt:"),
        "{err}"
    );
}

/// Issue 24, item 8: every file named by a flag is bounded and checked before connecting, and
/// `--key` without `--cert` is refused like `--cert` without `--key`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_files_are_bounded_and_say_what_is_wrong_with_which_file() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let ca = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let ca_pem = write("ca.crt", &ca.cert.pem());
    let key_pem = write("ca.key", &ca.signing_key.serialize_pem());
    let other_key = write("other.key", &other.signing_key.serialize_pem());
    let junk = write("junk.crt", "not a certificate\n");
    let broken = write(
        "broken.crt",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    );
    let base = EtcdOptions {
        endpoints: vec!["https://127.0.0.1:1".to_owned()],
        timeout: Duration::from_secs(2),
        ..EtcdOptions::default()
    };
    let refused = |options: EtcdOptions| async move {
        let started = Instant::now();
        let Err(err) = Store::connect(&options).await else {
            panic!("connected with {options:?}")
        };
        assert!(started.elapsed() < Duration::from_secs(10), "{err}");
        err.to_string()
    };

    let zero = refused(EtcdOptions {
        ca: Some("/dev/zero".into()),
        ..base.clone()
    })
    .await;
    assert_eq!(
        zero,
        "--cacert /dev/zero: larger than 4 MiB; not a PEM file"
    );
    let key_as_ca = refused(EtcdOptions {
        ca: Some(key_pem.clone()),
        ..base.clone()
    })
    .await;
    assert!(
        key_as_ca.starts_with("--cacert ")
            && key_as_ca.ends_with("holds a private key, not a certificate"),
        "{key_as_ca}"
    );
    let junk_ca = refused(EtcdOptions {
        ca: Some(junk.clone()),
        ..base.clone()
    })
    .await;
    assert!(
        junk_ca.ends_with("holds no PEM section, not a certificate"),
        "{junk_ca}"
    );
    let broken_ca = refused(EtcdOptions {
        ca: Some(broken),
        ..base.clone()
    })
    .await;
    assert!(
        broken_ca.contains("certificate 1 does not parse"),
        "{broken_ca}"
    );
    let directory = refused(EtcdOptions {
        ca: Some(dir.path().to_owned()),
        ..base.clone()
    })
    .await;
    assert!(directory.ends_with("is a directory"), "{directory}");

    let only_key = refused(EtcdOptions {
        key: Some(key_pem.clone()),
        ..base.clone()
    })
    .await;
    assert_eq!(only_key, "a client certificate needs both --cert and --key");
    let mismatched = refused(EtcdOptions {
        ca: Some(ca_pem.clone()),
        cert: Some(ca_pem.clone()),
        key: Some(other_key),
        ..base.clone()
    })
    .await;
    assert!(
        mismatched.starts_with("--key ")
            && mismatched.contains("does not go with the certificate in"),
        "{mismatched}"
    );
    let certificate_as_key = refused(EtcdOptions {
        cert: Some(ca_pem.clone()),
        key: Some(ca_pem.clone()),
        ..base.clone()
    })
    .await;
    assert!(
        certificate_as_key.ends_with("holds a certificate, not a private key"),
        "{certificate_as_key}"
    );
    // The right files pass the checks and fail only at the connection.
    let good = refused(EtcdOptions {
        ca: Some(ca_pem.clone()),
        cert: Some(ca_pem),
        key: Some(key_pem),
        ..base
    })
    .await;
    assert!(
        good.starts_with("connecting to etcd at https://127.0.0.1:1"),
        "{good}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_swaps_is_written_whole_or_not_at_all() {
    let etcd = Etcd::start();
    let store = Store::connect(&options(&etcd)).await.unwrap();
    for key in ["/k/a", "/k/b", "/k/c"] {
        store.put(key.as_bytes(), b"old".to_vec()).await.unwrap();
    }
    let read = |raw: Option<apfkit_storage::etcd::RawValue>| raw.unwrap();
    let a = read(store.get(b"/k/a").await.unwrap());
    let b = read(store.get(b"/k/b").await.unwrap());
    let c = read(store.get(b"/k/c").await.unwrap());
    let swap = |raw: &apfkit_storage::etcd::RawValue| Swap {
        key: raw.key.clone(),
        value: b"new".to_vec(),
        mod_revision: raw.mod_revision,
    };
    // Another writer changes b and deletes c: nothing is written, and the answer carries the
    // current value of every key, in order.
    store.put(b"/k/b", b"theirs".to_vec()).await.unwrap();
    etcd_client::Client::connect([etcd.endpoint.as_str()], None)
        .await
        .unwrap()
        .delete("/k/c", None)
        .await
        .unwrap();
    let Swapped::None { current } = store
        .swap_batch(&[swap(&a), swap(&b), swap(&c)])
        .await
        .unwrap()
    else {
        panic!("a changed key must stop the whole batch");
    };
    assert_eq!(current.len(), 3);
    assert_eq!(current[0].as_ref(), Some(&a));
    let b_now = current[1].clone().unwrap();
    assert_eq!(b_now.value, b"theirs");
    assert!(b_now.mod_revision > b.mod_revision);
    assert_eq!(current[2], None);
    assert_eq!(read(store.get(b"/k/a").await.unwrap()).value, b"old");

    // With the current revisions, the batch goes through whole.
    assert_eq!(
        store.swap_batch(&[swap(&a), swap(&b_now)]).await.unwrap(),
        Swapped::All
    );
    assert_eq!(read(store.get(b"/k/a").await.unwrap()).value, b"new");
    assert_eq!(read(store.get(b"/k/b").await.unwrap()).value, b"new");
}

/// Issue 24, item 5: with one member of a three-member cluster stopped (the normal case in an
/// upgrade), every order of the endpoints lists, reads and migrates; so does a list with an
/// address nothing listens on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_member_is_passed_over_in_any_order() {
    let mut cluster = Cluster::start(3);
    let endpoints = cluster.endpoints();
    let value = wrap(
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "FlowSchema",
        b"\x0a\x03\x0a\x01a",
    );
    {
        let store = Store::connect(&EtcdOptions {
            endpoints: endpoints.clone(),
            ..EtcdOptions::default()
        })
        .await
        .unwrap();
        store
            .put(b"/registry/flowschemas/a", value.clone())
            .await
            .unwrap();
    }
    cluster.members[1].stop();
    // If it led, the others elect a new leader first (etcdctl fails meanwhile too).
    cluster.wait_until_writable(0);
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    let (a, dead, c) = (&endpoints[0], &endpoints[1], &endpoints[2]);
    let orders: [[&String; 3]; 6] = [
        [a, dead, c],
        [dead, a, c],
        [dead, c, a],
        [c, dead, a],
        [a, c, dead],
        [c, a, dead],
    ];
    for order in orders {
        let live: Vec<&String> = order.iter().copied().filter(|e| *e != dead).collect();
        for endpoints in [
            order.to_vec(),
            vec![live[0], &closed],
            vec![&closed, live[1]],
        ] {
            let options = EtcdOptions {
                endpoints: endpoints.iter().map(|e| (*e).clone()).collect(),
                timeout: Duration::from_secs(2),
                ..EtcdOptions::default()
            };
            let started = Instant::now();
            let store = Store::connect(&options)
                .await
                .unwrap_or_else(|err| panic!("{endpoints:?}: {err}"));
            assert_eq!(store.list().await.unwrap().len(), 1, "{endpoints:?}");
            let raw = store
                .get(b"/registry/flowschemas/a")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(raw.value, value);
            // A write that etcd must agree on (a transaction) goes through a live member too.
            assert!(
                store
                    .swap(b"/registry/flowschemas/a", &value, raw.mod_revision)
                    .await
                    .unwrap()
            );
            assert!(started.elapsed() < Duration::from_secs(15), "{endpoints:?}");
        }
    }
    // With every member down the error names each.
    cluster.members[0].stop();
    cluster.members[2].stop();
    let Err(err) = Store::connect(&EtcdOptions {
        endpoints: endpoints.clone(),
        timeout: Duration::from_secs(2),
        ..EtcdOptions::default()
    })
    .await
    else {
        panic!("connected to a stopped cluster")
    };
    for endpoint in &endpoints {
        assert!(err.to_string().contains(endpoint.as_str()), "{err}");
    }
}

/// Issue 24, item 6: the prefix means what kube-apiserver makes of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefixes_are_normalised_as_kube_apiserver_does() {
    let etcd = Etcd::start();
    put(
        &etcd,
        "/registry/flowschemas/a",
        &wrap("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", b""),
    )
    .await;
    put(
        &etcd,
        "/flowschemas/root",
        &wrap("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", b""),
    )
    .await;
    for prefix in [
        "/registry",
        "registry",
        "//registry",
        "/registry/./",
        "/registry/",
        "/x/../registry",
    ] {
        let store = Store::connect(&EtcdOptions {
            prefix: prefix.to_owned(),
            ..options(&etcd)
        })
        .await
        .unwrap();
        assert_eq!(store.prefix(), "/registry/", "{prefix}");
        let listed = store.list().await.unwrap();
        assert_eq!(listed.len(), 1, "{prefix}");
        assert_eq!(listed[0].key.to_string(), "/registry/flowschemas/a");
    }
    for prefix in ["", "/", "."] {
        let store = Store::connect(&EtcdOptions {
            prefix: prefix.to_owned(),
            ..options(&etcd)
        })
        .await
        .unwrap();
        let listed = store.list().await.unwrap();
        assert_eq!(listed[0].key.to_string(), "/flowschemas/root", "{prefix:?}");
    }
}
