//! `cargo bench -p apfkit-apiserver --bench serve`: the server against baselines measured in
//! the same run (ratios; the machine is shared and noisy).
//!
//! - **GET**: one FlowSchema in v1beta3, stored in v1 in the embedded SQLite store (so a
//!   conversion is on the path), by 64 keep-alive HTTPS connections, against a bare handler
//!   that answers the same bytes, served by the same TLS and HTTP stack. Target ≥ 0.5×.
//! - **LIST**: 10,000 FlowSchemas streamed as JSON in v1beta3, against converting the same
//!   objects with the scheme (what `apfkit convert` does) in the same process. Target ≥ 1.0×
//!   in MB/s, and the server's peak resident memory grows by at most 32 MiB.
//!
//! - **Watch fan-out**: 1,000 watchers each receiving 1,000 events (FlowSchemas created one
//!   after another); the delay from each write to its arrival at each watcher, p50 and p99.
//! - **Create on etcd**: FlowSchemas POSTed by 64 connections to a server on a real etcd
//!   (started here), against 64 concurrent writers of values of the same size straight to the
//!   same etcd: plain puts (the baseline, target ≥ 0.5×) and the put-if-absent
//!   transaction that a create is, in kube-apiserver as here.
//!
//! - **Apply**: a server-side apply (`PATCH` `application/apply-patch+yaml`) of a FlowSchema
//!   whose `matchingPrecedence` changes each time, against an update (`PUT`) of the same
//!   object making the same change, one connection each, in alternating rounds: the time of
//!   one apply over the time of one update. Target ≤ 2.0×.
//!
//! - **APF**: GET as above through API Priority and Fairness (the dispatcher's tower layer,
//!   kube-apiserver's default configuration with 10,000 seats so that nothing queues, every
//!   request classified as anonymous), against the same server without it. Target ≥ 0.9×.
//!
//! `APFKIT_BENCH_SECONDS` sets each GET and create run's length (default 5). Arguments `get`,
//! `list`, `watch`, `create`, `apply` and `apf` choose among them (all by default):
//! `cargo bench --bench serve -- list`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use apfkit_apiserver::http::serve_router;
use apfkit_apiserver::storage::etcd::EtcdBackend;
use apfkit_apiserver::storage::sqlite::SqliteBackend;
use apfkit_scheme::scheme::{Encoding, Limits, SCHEME, Target, UnknownFields};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

#[path = "../tests/support/mod.rs"]
mod support;

const CONNECTIONS: usize = 64;
const GET_PATH: &str = "/apis/flowcontrol.apiserver.k8s.io/v1beta3/flowschemas/exempt";
const LIST_OBJECTS: usize = 10_000;

type Running = support::Running;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("a directory");
        let backend = SqliteBackend::open(&dir.path().join("apfkit.db")).expect("the store");
        let running = support::start(backend, Duration::from_secs(30)).await;
        running.create("exempt", 0).await;
        if chosen("get") {
            get_against_a_bare_handler(&running).await;
        }
        if chosen("list") {
            list_against_convert(&running).await;
        }
        if chosen("watch") {
            watch_fan_out(&running).await;
        }
        if chosen("create") {
            create_on_etcd().await;
        }
        if chosen("apply") {
            apply_against_update(&running).await;
        }
        if chosen("apf") {
            get_through_priority_and_fairness(&running).await;
        }
    });
}

/// Whether the command line chose the benchmark `name`: no names (other than cargo's
/// `--bench`) choose all.
fn chosen(name: &str) -> bool {
    let names: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    names.is_empty() || names.iter().any(|n| n == name)
}

fn seconds() -> u64 {
    std::env::var("APFKIT_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
}

/// Requests per second of `CONNECTIONS` keep-alive connections to `address` asking `path`
/// for `seconds`, after a second of warming up.
async fn request_rate(
    address: std::net::SocketAddr,
    connector: &tokio_rustls::TlsConnector,
    path: &'static str,
) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let warm_until = Instant::now() + Duration::from_secs(1);
    let stop_at = warm_until + Duration::from_secs(seconds());
    let mut clients = Vec::new();
    for _ in 0..CONNECTIONS {
        let connector = connector.clone();
        let done = done.clone();
        clients.push(tokio::spawn(async move {
            let mut sender = connect(address, &connector).await;
            loop {
                let now = Instant::now();
                if now >= stop_at {
                    return;
                }
                let request = Request::get(path)
                    .header("host", "localhost")
                    .body(Empty::<Bytes>::new())
                    .expect("a request");
                let response = sender.send_request(request).await.expect("an answer");
                assert_eq!(response.status(), 200);
                let body = response.into_body().collect().await.expect("a body");
                assert!(!body.to_bytes().is_empty());
                if now >= warm_until {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for client in clients {
        client.await.expect("a client");
    }
    done.load(Ordering::Relaxed) as f64 / seconds() as f64
}

async fn get_against_a_bare_handler(running: &Running) {
    // The bytes the API answers, served by a handler that only returns them.
    let served = fetch(running, GET_PATH).await;
    let bare = axum::Router::new().fallback(move || {
        let served = served.clone();
        async move { ([("content-type", "application/json")], served) }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let bare_address = listener.local_addr().expect("bound");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_router(
        bare,
        listener,
        running.tls.clone(),
        async {
            let _ = stopped.await;
        },
        Duration::from_secs(1),
    ));
    println!("GET of one FlowSchema in v1beta3 (stored in v1, SQLite), {CONNECTIONS} connections:");
    println!("| run | apfkit serve (req/s) | bare handler (req/s) | ratio |");
    println!("|---|---|---|---|");
    for run in 1..=2 {
        let api = request_rate(running.address, &running.connector, GET_PATH).await;
        let baseline = request_rate(bare_address, &running.connector, GET_PATH).await;
        println!(
            "| {run} | {api:.0} | {baseline:.0} | {:.2} |",
            api / baseline
        );
    }
    let _ = stop.send(());
}

/// A new keep-alive HTTP/1.1 connection over TLS to the server at `address`.
async fn connect<B>(
    address: std::net::SocketAddr,
    connector: &tokio_rustls::TlsConnector,
) -> hyper::client::conn::http1::SendRequest<B>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let tcp = TcpStream::connect(address).await.expect("connects");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
    let tls = connector.connect(name, tcp).await.expect("TLS");
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("HTTP/1.1");
    tokio::spawn(connection);
    sender
}

/// A GET of `path` on a new connection, answered with its status checked.
async fn get(running: &Running, path: &str) -> hyper::body::Incoming {
    get_from(running.address, &running.connector, path).await
}

/// A GET of `path` from the server at `address` on a new connection, its status checked.
async fn get_from(
    address: std::net::SocketAddr,
    connector: &tokio_rustls::TlsConnector,
    path: &str,
) -> hyper::body::Incoming {
    let mut sender = connect(address, connector).await;
    let request = Request::get(path)
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .expect("a request");
    let response = sender.send_request(request).await.expect("an answer");
    assert_eq!(response.status(), 200, "{path}");
    response.into_body()
}

/// One GET's whole body.
async fn fetch(running: &Running, path: &str) -> Bytes {
    get(running, path)
        .await
        .collect()
        .await
        .expect("a body")
        .to_bytes()
}

/// Peak resident memory of this process, in KiB (`VmHWM`), after resetting it.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

async fn list_against_convert(running: &Running) {
    for i in 1..LIST_OBJECTS {
        running.create(&format!("fs-{i:05}"), 0).await;
    }
    // The same objects as the scheme reads them: the v1 stream they are stored as.
    let v1 = fetch(running, support::FLOW_SCHEMAS).await;
    let value: serde_json::Value = serde_json::from_slice(&v1).expect("a list");
    let mut stream = Vec::new();
    for item in value["items"].as_array().expect("items") {
        serde_json::to_writer(&mut stream, item).expect("JSON");
        stream.push(b'\n');
    }
    println!();
    println!("LIST of {LIST_OBJECTS} FlowSchemas in v1beta3, streamed (stored in v1, SQLite):");
    println!("| run | apfkit serve (MB/s) | scheme convert (MB/s) | ratio | peak RSS growth |");
    println!("|---|---|---|---|---|");
    for run in 1..=rounds() {
        let (listed, list_time, growth_mib) = list_once(running).await;
        let (converted, convert_time) = convert_once(&stream);
        let list_rate = listed as f64 / list_time.as_secs_f64() / 1e6;
        let convert_rate = converted as f64 / convert_time.as_secs_f64() / 1e6;
        println!(
            "| {run} | {list_rate:.1} | {convert_rate:.1} | {:.2} | {growth_mib:.1} MiB |",
            list_rate / convert_rate
        );
    }
}

/// `APFKIT_BENCH_ROUNDS`: how many times LIST and its baseline run (default 3).
fn rounds() -> usize {
    std::env::var("APFKIT_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

/// One LIST of the FlowSchemas in v1beta3, streamed through a client that reads and drops
/// each chunk, on its own thread and runtime as a client process would be: its bytes, its
/// time and the growth of peak resident memory in MiB.
async fn list_once(running: &Running) -> (usize, Duration, f64) {
    let path = "/apis/flowcontrol.apiserver.k8s.io/v1beta3/flowschemas";
    let (address, connector) = (running.address, running.connector.clone());
    let before = resident_kib();
    reset_peak();
    let started = Instant::now();
    let client = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a client runtime");
        runtime.block_on(async {
            let mut body = get_from(address, &connector, path).await;
            let mut listed = 0usize;
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame.expect("a frame").into_data() {
                    listed += data.len();
                }
            }
            listed
        })
    });
    let listed = tokio::task::spawn_blocking(move || client.join().expect("the client"))
        .await
        .expect("joined");
    let took = started.elapsed();
    let growth_mib = peak_kib().saturating_sub(before) as f64 / 1024.0;
    (listed, took, growth_mib)
}

/// The objects of `stream` converted to v1beta3 JSON by the scheme, as `apfkit convert`
/// does: the bytes written and the time taken.
fn convert_once(stream: &[u8]) -> (usize, Duration) {
    let target: Target = "v1beta3".parse().expect("a version");
    let started = Instant::now();
    let mut converted = 0usize;
    SCHEME
        .read(stream, &Limits::default(), |input| {
            let written = SCHEME
                .convert(input, &target, UnknownFields::Warn, Encoding::Json)
                .expect("converts");
            converted += written.bytes.len();
            Ok::<(), apfkit_scheme::scheme::ReadError>(())
        })
        .expect("reads");
    (converted, started.elapsed())
}

const WATCHERS: usize = 1_000;
const EVENTS: usize = 1_000;

/// Microseconds since the Unix epoch.
fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// The write times (`sent-<micros>` annotations) found in a watch body's bytes, after what
/// was left of the previous chunk.
fn sent_times(carry: &mut Vec<u8>, chunk: &[u8], arrived: u64, delays: &mut Vec<u64>) {
    carry.extend_from_slice(chunk);
    let mut consumed = 0;
    let finder = memchr::memmem::Finder::new(b"sent-");
    while let Some(at) = finder.find(&carry[consumed..]) {
        let start = consumed + at + 5;
        let Some(end) = carry[start..].iter().position(|b| !b.is_ascii_digit()) else {
            break;
        };
        if let Ok(sent) = std::str::from_utf8(&carry[start..start + end])
            .unwrap_or_default()
            .parse::<u64>()
        {
            delays.push(arrived.saturating_sub(sent));
        }
        consumed = start + end;
    }
    carry.drain(..consumed);
}

async fn watch_fan_out(running: &Running) {
    let revision = running
        .server
        .objects()
        .current_revision()
        .await
        .expect("a revision");
    let path = format!(
        "{}?watch=true&resourceVersion={revision}",
        support::FLOW_SCHEMAS
    );
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let mut body = get(running, &path).await;
        watchers.push(tokio::spawn(async move {
            let mut delays = Vec::with_capacity(EVENTS);
            let mut carry = Vec::new();
            while delays.len() < EVENTS {
                match body.frame().await {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            sent_times(&mut carry, &data, now_micros(), &mut delays);
                        }
                    }
                    _ => break,
                }
            }
            delays
        }));
    }
    let started = Instant::now();
    for i in 0..EVENTS {
        running
            .create_annotated(&format!("fan-{i:04}"), format!("sent-{}", now_micros()))
            .await;
    }
    let written = started.elapsed();
    let mut delays = Vec::with_capacity(WATCHERS * EVENTS);
    for watcher in watchers {
        delays.extend(watcher.await.expect("a watcher"));
    }
    let delivered = started.elapsed();
    delays.sort_unstable();
    let at = |q: f64| delays[((delays.len() as f64 * q) as usize).min(delays.len() - 1)];
    println!();
    println!("Watch fan-out: {WATCHERS} watchers, {EVENTS} events each (SQLite):");
    println!("| events delivered | writes took | all delivered after | p50 delay | p99 delay |");
    println!("|---|---|---|---|---|");
    println!(
        "| {} of {} | {:.2} s | {:.2} s | {:.1} ms | {:.1} ms |",
        delays.len(),
        WATCHERS * EVENTS,
        written.as_secs_f64(),
        delivered.as_secs_f64(),
        at(0.50) as f64 / 1000.0,
        at(0.99) as f64 / 1000.0
    );
}

/// Requests per second of `CONNECTIONS` keep-alive connections creating FlowSchemas (each
/// with a new name) for `seconds`, after a second of warming up.
async fn create_rate(running: &support::Running, run: usize) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let warm_until = Instant::now() + Duration::from_secs(1);
    let stop_at = warm_until + Duration::from_secs(seconds());
    let mut clients = Vec::new();
    for client in 0..CONNECTIONS {
        let (address, connector) = (running.address, running.connector.clone());
        let done = done.clone();
        clients.push(tokio::spawn(async move {
            let mut sender = connect(address, &connector).await;
            for n in 0.. {
                let now = Instant::now();
                if now >= stop_at {
                    return;
                }
                let body = serde_json::json!({
                    "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                    "kind": "FlowSchema",
                    "metadata": {"name": format!("create-{run}-{client}-{n}")},
                    "spec": {
                        "priorityLevelConfiguration": {"name": "global-default"},
                        "matchingPrecedence": 1000,
                        "rules": [{
                            "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                               "resources": ["*"], "clusterScope": true}],
                        }],
                    },
                });
                let request = Request::post(support::FLOW_SCHEMAS)
                    .header("host", "localhost")
                    .header("content-type", "application/json")
                    .body(http_body_util::Full::new(Bytes::from(body.to_string())))
                    .expect("a request");
                let response = sender.send_request(request).await.expect("an answer");
                assert_eq!(response.status(), 201);
                response.into_body().collect().await.expect("a body");
                if now >= warm_until {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for client in clients {
        client.await.expect("a client");
    }
    done.load(Ordering::Relaxed) as f64 / seconds() as f64
}

/// Writes per second of `CONNECTIONS` concurrent writers putting `value` under new keys straight
/// to etcd for `seconds`, after a second of warming up: plain puts, or (`conditional`) the
/// transaction kube-apiserver's create sends, a put if the key does not exist
/// (k8s.io/apiserver/pkg/storage/etcd3/store.go, `Create`: `If(notFound(key)).Then(OpPut)`).
async fn put_rate(client: &etcd_client::Client, value: &[u8], tag: &str, conditional: bool) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let warm_until = Instant::now() + Duration::from_secs(1);
    let stop_at = warm_until + Duration::from_secs(seconds());
    let mut writers = Vec::new();
    for writer in 0..CONNECTIONS {
        let (mut client, value, done) = (client.clone(), value.to_vec(), done.clone());
        let tag = tag.to_owned();
        writers.push(tokio::spawn(async move {
            for n in 0.. {
                let now = Instant::now();
                if now >= stop_at {
                    return;
                }
                let key = format!("/bench/puts/{tag}-{writer}-{n}");
                if conditional {
                    let txn = etcd_client::Txn::new()
                        .when([etcd_client::Compare::create_revision(
                            key.clone(),
                            etcd_client::CompareOp::Equal,
                            0,
                        )])
                        .and_then([etcd_client::TxnOp::put(key, value.clone(), None)]);
                    client.txn(txn).await.expect("a transaction");
                } else {
                    client.put(key, value.clone(), None).await.expect("a put");
                }
                if now >= warm_until {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for writer in writers {
        writer.await.expect("a writer");
    }
    done.load(Ordering::Relaxed) as f64 / seconds() as f64
}

async fn create_on_etcd() {
    let etcd = apfkit_test_support::etcd::Etcd::start();
    let endpoints = [etcd.endpoint.clone()];
    let backend = EtcdBackend::connect(&endpoints).await.expect("etcd");
    let running = support::start(backend, Duration::from_secs(30)).await;
    running.create("sized", 0).await;
    let mut client = etcd_client::Client::connect(&endpoints, None)
        .await
        .expect("etcd");
    // What the server stores for one FlowSchema, so that both write values of one size.
    let stored = client
        .get("/registry/flowschemas/sized", None)
        .await
        .expect("a read");
    let value = stored.kvs().first().expect("stored").value().to_vec();
    println!();
    println!(
        "Create of a FlowSchema on etcd, {CONNECTIONS} connections, against etcd puts of {} bytes:",
        value.len()
    );
    println!(
        "| run | apfkit serve (creates/s) | etcd put-if-absent (txn/s) | etcd put (puts/s) | \
         ratio to txn | ratio to put |"
    );
    println!("|---|---|---|---|---|---|");
    for run in 1..=2 {
        let api = create_rate(&running, run).await;
        let txn = put_rate(&client, &value, &format!("txn-{run}"), true).await;
        let put = put_rate(&client, &value, &format!("put-{run}"), false).await;
        println!(
            "| {run} | {api:.0} | {txn:.0} | {put:.0} | {:.2} | {:.2} |",
            api / txn,
            api / put
        );
    }
}

/// The FlowSchema both sides write, with `precedence`: as applied (no resourceVersion) and as
/// put (the same object).
fn changed_flow_schema(name: &str, precedence: u32) -> Vec<u8> {
    serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name, "labels": {"team": "bench"}},
        "spec": {
            "priorityLevelConfiguration": {"name": "global-default"},
            "matchingPrecedence": precedence,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{
                "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                "resourceRules": [{"verbs": ["get", "list"], "apiGroups": ["*"],
                                   "resources": ["*"], "namespaces": ["*"]}],
            }],
        },
    })
    .to_string()
    .into_bytes()
}

/// Writes of one object for `seconds`, one after another on one connection, each changing
/// `matchingPrecedence`: apply patches or puts. Answers the mean time of one.
async fn write_time(running: &Running, apply: bool, from: u32) -> Duration {
    let name = if apply { "applied" } else { "updated" };
    let path = format!("{}/{name}", support::FLOW_SCHEMAS);
    let uri = if apply {
        format!("{path}?fieldManager=bench")
    } else {
        format!("{path}?fieldManager=bench-update")
    };
    let mut sender = connect(running.address, &running.connector).await;
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds());
    let mut writes = 0u32;
    while Instant::now() < until {
        let body = changed_flow_schema(name, 1 + (from + writes) % 9000);
        let request = if apply {
            Request::patch(uri.as_str()).header("content-type", "application/apply-patch+yaml")
        } else {
            Request::put(uri.as_str()).header("content-type", "application/json")
        }
        .header("host", "localhost")
        .body(http_body_util::Full::new(Bytes::from(body)))
        .expect("a request");
        sender.ready().await.expect("the connection is ready");
        let response = sender.send_request(request).await.expect("an answer");
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        assert!(
            status.is_success(),
            "{status}: {}",
            String::from_utf8_lossy(&body)
        );
        writes += 1;
    }
    started.elapsed() / writes.max(1)
}

async fn apply_against_update(running: &Running) {
    // Both objects exist, each with its manager.
    let mut sender = connect(running.address, &running.connector).await;
    for (name, method) in [("applied", "PATCH"), ("updated", "POST")] {
        let uri = match method {
            "PATCH" => format!("{}/{name}?fieldManager=bench", support::FLOW_SCHEMAS),
            _ => format!("{}?fieldManager=bench-update", support::FLOW_SCHEMAS),
        };
        let content_type = match method {
            "PATCH" => "application/apply-patch+yaml",
            _ => "application/json",
        };
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "localhost")
            .header("content-type", content_type)
            .body(http_body_util::Full::new(Bytes::from(changed_flow_schema(
                name, 1,
            ))))
            .expect("a request");
        sender.ready().await.expect("the connection is ready");
        let response = sender.send_request(request).await.expect("an answer");
        assert!(response.status().is_success(), "{}", response.status());
        let _ = response.into_body().collect().await;
    }
    println!("apply of a changed FlowSchema against an update of it (one connection, SQLite)");
    for round in 0..3u32 {
        let update = write_time(running, false, round * 1000).await;
        let apply = write_time(running, true, round * 1000).await;
        println!(
            "  round {}: apply {:.0} µs, update {:.0} µs: {:.2}x (target <= 2.0)",
            round + 1,
            apply.as_secs_f64() * 1e6,
            update.as_secs_f64() * 1e6,
            apply.as_secs_f64() / update.as_secs_f64()
        );
    }
}

/// The GET rate of a second server whose routes are behind API Priority and Fairness,
/// against the plain one, in alternating runs.
async fn get_through_priority_and_fairness(running: &Running) {
    use apfkit_dispatcher::layer::{ApfLayer, Attributes};
    let dir = tempfile::tempdir().expect("a directory");
    let backend = SqliteBackend::open(&dir.path().join("apfkit.db")).expect("the store");
    let config = apfkit_dispatcher::config::Configuration::kubernetes_default(10_000)
        .expect("the default configuration");
    let guard = apfkit_dispatcher::guard::Guard::new(config);
    // As `apfkit serve` runs it: the metrics kept, the work estimated from (empty) statistics.
    guard.record_metrics(
        apfkit_dispatcher::metrics::ApfMetrics::register(&prometheus::Registry::new())
            .expect("the metrics"),
    );
    let classify = |request: &axum::extract::Request| {
        let path = request.uri().path();
        let name = path.rsplit('/').next().unwrap_or_default();
        let mut attributes = Attributes::resource(
            "system:anonymous",
            &["system:unauthenticated"],
            "get",
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
            "",
        );
        attributes.name = name.to_owned();
        attributes.observed = Some(apfkit_dispatcher::estimate::Observed::default());
        attributes.query = request.uri().query().unwrap_or_default().to_owned();
        attributes
    };
    let layers: support::Layers =
        Box::new(move |routes| routes.layer(ApfLayer::new(guard.clone(), classify)));
    let guarded = support::start_layered(backend, Duration::from_secs(30), Some(layers)).await;
    guarded.create("exempt", 0).await;
    println!("GET of one FlowSchema in v1beta3, {CONNECTIONS} connections, with and without APF:");
    println!("| run | through APF (req/s) | without (req/s) | ratio | target |");
    println!("|---|---|---|---|---|");
    let mut ratios = Vec::new();
    for run in 1..=6 {
        // Which side goes first alternates, so that neither always follows the other.
        let (through, without) = if run % 2 == 1 {
            let through = request_rate(guarded.address, &guarded.connector, GET_PATH).await;
            (
                through,
                request_rate(running.address, &running.connector, GET_PATH).await,
            )
        } else {
            let without = request_rate(running.address, &running.connector, GET_PATH).await;
            (
                request_rate(guarded.address, &guarded.connector, GET_PATH).await,
                without,
            )
        };
        ratios.push(through / without);
        println!(
            "| {run} | {through:.0} | {without:.0} | {:.2} | >= 0.9 |",
            through / without
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median ratio: {:.2} (target >= 0.9)",
        ratios[ratios.len() / 2]
    );
}
