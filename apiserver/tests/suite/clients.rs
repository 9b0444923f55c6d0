//! The HTTPS server against raw, hostile and numerous clients: a watcher that never reads is
//! ended (its buffer bounded) without holding writers up; a thousand concurrent watches each
//! see a write; clients that hang up mid-list or send garbage leave the server serving.

use std::sync::Arc;
use std::time::{Duration, Instant};

use apfkit_apiserver::storage::memory::MemoryBackend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::support;

use support::FLOW_SCHEMAS;

type Running = support::Running;

async fn start(stalled_watch: Duration) -> Running {
    support::start(MemoryBackend::default(), stalled_watch).await
}

async fn connect(running: &Running) -> TlsStream<TcpStream> {
    let tcp = TcpStream::connect(running.address).await.unwrap();
    tls(running, tcp).await
}

async fn tls(running: &Running, tcp: TcpStream) -> TlsStream<TcpStream> {
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    running.connector.connect(name, tcp).await.unwrap()
}

/// Sends a request on a new connection and answers the connection, unread.
async fn send(running: &Running, method: &str, path: &str, body: &[u8]) -> TlsStream<TcpStream> {
    let mut stream = connect(running).await;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    stream.flush().await.unwrap();
    stream
}

/// A whole response of a request, as text.
async fn fetch(running: &Running, method: &str, path: &str, body: &[u8]) -> String {
    let mut stream = send(running, method, path, body).await;
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
    String::from_utf8_lossy(&response).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_never_reads_is_ended_without_holding_writers_up() {
    let running = start(Duration::from_millis(500)).await;
    // Watch, then never read a byte.
    let _silent = send(&running, "GET", &format!("{FLOW_SCHEMAS}?watch=true"), b"").await;
    assert!(
        support::wait_until(Duration::from_secs(5), || running.server.open_watches()
            == 1)
        .await
    );
    // 400 objects of 16 KiB: far more than the socket buffers and the watch's frames hold.
    let started = Instant::now();
    for i in 0..400 {
        running.create(&format!("fs-{i:03}"), 16 << 10).await;
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "writes were held up: {:?}",
        started.elapsed()
    );
    assert!(
        support::wait_until(Duration::from_secs(10), || running.server.open_watches()
            == 0)
        .await,
        "the stalled watch is still open"
    );
    // The server goes on serving.
    assert!(
        fetch(&running, "GET", "/healthz", b"")
            .await
            .ends_with("ok")
    );
}

/// Watchers that never read hold at most their byte budget each (1 MiB and one event), not 64
/// events of any size (issue 39: 20 stalled watches and 300 events of 100 KB took a server
/// from 25 MB to 915 MB), and once they are ended nothing stays queued for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_that_never_read_hold_a_bounded_number_of_bytes() {
    const WATCHERS: usize = 4;
    // Stalled watches are ended after 10 s: long enough for every queue to fill on a loaded
    // machine before the server gives up on them.
    let running = start(Duration::from_secs(10)).await;
    let mut watches = Vec::new();
    for _ in 0..WATCHERS {
        watches.push(send(&running, "GET", &format!("{FLOW_SCHEMAS}?watch=true"), b"").await);
    }
    assert!(
        support::wait_until(Duration::from_secs(5), || running.server.open_watches()
            == WATCHERS)
        .await
    );
    // More than the connections' buffers take, so that every watch's own queue fills.
    let mut most = 0;
    for i in 0..150 {
        running.create(&format!("big-{i:03}"), 100 << 10).await;
        most = most.max(running.server.watch_bytes_queued());
    }
    let bound = WATCHERS * ((1 << 20) + (110 << 10));
    assert!(
        most > 1 << 20,
        "at most {most} bytes were queued: the watches never filled"
    );
    assert!(most <= bound, "{most} bytes queued for {WATCHERS} watches");
    assert!(
        support::wait_until(Duration::from_secs(30), || running.server.open_watches()
            == 0
            && running.server.watch_bytes_queued() == 0)
        .await,
        "{} watches open, {} bytes queued",
        running.server.open_watches(),
        running.server.watch_bytes_queued()
    );
    drop(watches);
}

/// With `watch` open and unread, writes 400 objects of 16 KiB (more than the connection's
/// buffers and the watch's queue hold), waits until the server has ended the watch, then
/// reads what reaches the client.
async fn stall_until_ended(running: &Running, watch: &mut TlsStream<TcpStream>) -> Vec<u8> {
    assert!(
        support::wait_until(Duration::from_secs(5), || running.server.open_watches()
            == 1)
        .await
    );
    for i in 0..400 {
        running.create(&format!("fs-{i:03}"), 16 << 10).await;
    }
    assert!(
        support::wait_until(Duration::from_secs(10), || running.server.open_watches()
            == 0)
        .await,
        "the stalled watch is still open"
    );
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), watch.read_to_end(&mut response))
        .await
        .expect("the ended watch's response ends")
        .unwrap_or_default();
    response
}

/// What a stalled watch holds beyond its own queue (issue 54), measured as what its client
/// drains before the 410 once the server has ended the watch (the queue is dropped then):
/// the kernel's buffers on both sides and what hyper holds for the connection, with the
/// kernel's own receive buffer and with a 4 KiB one (a small window).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_stalled_watch_holds_beyond_its_queue_is_the_connections_buffers() {
    for receive_buffer in [None, Some(4096u32)] {
        let running = start(Duration::from_millis(300)).await;
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        if let Some(bytes) = receive_buffer {
            socket.set_recv_buffer_size(bytes).unwrap();
        }
        let tcp = socket.connect(running.address).await.unwrap();
        let mut watch = tls(&running, tcp).await;
        let head = format!(
            "GET {FLOW_SCHEMAS}?watch=true HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        );
        watch.write_all(head.as_bytes()).await.unwrap();
        watch.flush().await.unwrap();
        let response = stall_until_ended(&running, &mut watch).await;
        let drained = String::from_utf8_lossy(&response)
            .rfind("{\"type\":\"ERROR\"")
            .expect("the 410 comes last");
        eprintln!(
            "a stalled watch, receive buffer {}: {} KiB drained before its 410",
            receive_buffer.map_or("the kernel's".to_owned(), |b| format!("{b} B")),
            drained >> 10
        );
        assert!(drained < 16 << 20, "{drained} bytes on their way");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_stops_reading_gets_an_error_event_last_when_it_reads_again() {
    let running = start(Duration::from_millis(300)).await;
    let mut watch = send(&running, "GET", &format!("{FLOW_SCHEMAS}?watch=true"), b"").await;
    // Reading again: what was already on its way, then the ERROR event, then the end.
    let response = stall_until_ended(&running, &mut watch).await;
    let text = String::from_utf8_lossy(&response);
    // Each event is a line of its own (`{"type":"ADDED","object":{...}}`).
    let events: Vec<&str> = text
        .match_indices("{\"type\":\"")
        .map(|(at, _)| &text[at + 9..])
        .filter_map(|event| event.split_once("\",\"object\":").map(|(kind, _)| kind))
        .filter(|kind| ["ADDED", "MODIFIED", "DELETED", "ERROR"].contains(kind))
        .collect();
    assert!(
        events.len() < 400,
        "{} events: the queued ones were not dropped",
        events.len()
    );
    assert!(
        events.last() == Some(&"ERROR"),
        "last events: {:?}",
        &events[events.len().saturating_sub(3)..]
    );
    let last = &text[text.rfind("{\"type\":\"ERROR\"").unwrap()..];
    let last = &last[..=last.find("}}").unwrap() + 1];
    let event: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(event["object"]["kind"], "Status");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
    assert!(
        event["object"]["message"]
            .as_str()
            .unwrap()
            .contains("the client read nothing"),
        "{event}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_watches_each_see_a_write() {
    const WATCHES: usize = 1000;
    let running = Arc::new(start(Duration::from_secs(30)).await);
    let (seen, mut seen_by) = tokio::sync::mpsc::channel::<usize>(WATCHES);
    let mut watchers = Vec::new();
    for i in 0..WATCHES {
        let running = running.clone();
        let seen = seen.clone();
        watchers.push(tokio::spawn(async move {
            let mut stream =
                send(&running, "GET", &format!("{FLOW_SCHEMAS}?watch=true"), b"").await;
            let mut read = Vec::new();
            let mut buffer = [0u8; 4096];
            loop {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => read.extend_from_slice(&buffer[..n]),
                }
                if read.windows(9).any(|w| w == b"\"the-one\"") {
                    let _ = seen.send(i).await;
                    return;
                }
            }
        }));
    }
    drop(seen);
    assert!(
        support::wait_until(Duration::from_secs(60), || running.server.open_watches()
            == WATCHES)
        .await,
        "{} watches open",
        running.server.open_watches()
    );
    let written = Instant::now();
    running.create("the-one", 0).await;
    let mut count = 0;
    while count < WATCHES {
        match tokio::time::timeout(Duration::from_secs(30), seen_by.recv()).await {
            Ok(Some(_)) => count += 1,
            _ => break,
        }
    }
    assert_eq!(count, WATCHES, "watches that saw the write");
    eprintln!(
        "{WATCHES} watches saw one write within {:?}",
        written.elapsed()
    );
    for watcher in watchers {
        watcher.abort();
    }
    // Closed connections end their watches.
    assert!(
        support::wait_until(Duration::from_secs(30), || running.server.open_watches()
            == 0)
        .await,
        "{} watches still open",
        running.server.open_watches()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_hang_up_or_send_garbage_leave_the_server_serving() {
    let running = start(Duration::from_secs(30)).await;
    for i in 0..300 {
        running.create(&format!("fs-{i:03}"), 2 << 10).await;
    }
    // Hang up after the first bytes of a large list.
    for _ in 0..20 {
        let mut stream = send(&running, "GET", FLOW_SCHEMAS, b"").await;
        let mut first = [0u8; 64];
        let _ = stream.read(&mut first).await;
        drop(stream);
    }
    // Garbage instead of HTTP, a request line without headers' end, a huge header.
    for garbage in [
        b"\x16\x03\x01 not http at all\r\n\r\n".to_vec(),
        b"GET / HTTP/1.1\r\nHost".to_vec(),
        format!(
            "GET /healthz HTTP/1.1\r\nX-Big: {}\r\n\r\n",
            "a".repeat(1 << 20)
        )
        .into_bytes(),
    ] {
        let mut stream = connect(&running).await;
        let _ = stream.write_all(&garbage).await;
        let _ = stream.shutdown().await;
        let mut answer = Vec::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(15), stream.read_to_end(&mut answer)).await;
    }
    // Bodies that lie about their length.
    let mut stream = connect(&running).await;
    let head = format!(
        "POST {FLOW_SCHEMAS} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: 100000\r\n\r\n{{\"apiVersion\":"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    drop(stream);
    let list = fetch(&running, "GET", &format!("{FLOW_SCHEMAS}?limit=1"), b"").await;
    assert!(list.starts_with("HTTP/1.1 200"), "{list}");
    assert!(list.contains("\"remainingItemCount\":299"), "{list}");
}

/// The JSON body of an HTTP/1.0 request (close-delimited: no chunked encoding to undo).
async fn fetch_json(running: &Running, path: &str) -> serde_json::Value {
    let mut stream = connect(running).await;
    let head = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a header block");
    serde_json::from_slice(&response[split + 4..])
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&response[..split])))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_lists_are_streamed_a_page_at_a_time_at_one_revision() {
    let running = start(Duration::from_secs(30)).await;
    for i in 0..1_200 {
        running.create(&format!("fs-{i:04}"), 0).await;
    }
    let names = |list: &serde_json::Value| -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    // Everything: three pages of storage, one list.
    let all = fetch_json(&running, FLOW_SCHEMAS).await;
    let expected: Vec<String> = (0..1_200).map(|i| format!("fs-{i:04}")).collect();
    assert_eq!(names(&all), expected);
    assert_eq!(all["kind"], "FlowSchemaList");
    assert!(all["metadata"].get("continue").is_none());
    let revision = all["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    // More than a page, less than all: a continue token at the same revision.
    let first = fetch_json(&running, &format!("{FLOW_SCHEMAS}?limit=700")).await;
    assert_eq!(names(&first), expected[..700]);
    assert_eq!(first["metadata"]["remainingItemCount"], 500);
    assert_eq!(first["metadata"]["resourceVersion"], revision.as_str());
    running.create("written-between-pages", 0).await;
    let token = first["metadata"]["continue"].as_str().unwrap();
    let rest = fetch_json(
        &running,
        &format!("{FLOW_SCHEMAS}?limit=700&continue={token}"),
    )
    .await;
    assert_eq!(
        names(&rest),
        expected[700..],
        "the rest, at the first page's revision"
    );
    assert_eq!(rest["metadata"]["resourceVersion"], revision.as_str());
    assert!(rest["metadata"].get("continue").is_none());
}

/// A WatchList client (`sendInitialEvents=true`) that never reads: the initial events for
/// 400 objects of 16 KiB fill what the watch may hold, and the watch is ended like any other
/// stalled watch, without holding writers up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_list_client_that_never_reads_is_ended() {
    let running = start(Duration::from_millis(500)).await;
    for i in 0..400 {
        running.create(&format!("fs-{i:03}"), 16 << 10).await;
    }
    let _silent = send(
        &running,
        "GET",
        &format!(
            "{FLOW_SCHEMAS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
             &allowWatchBookmarks=true"
        ),
        b"",
    )
    .await;
    assert!(
        support::wait_until(Duration::from_secs(20), || running.server.open_watches()
            == 0)
        .await,
        "the stalled WatchList is still open"
    );
    running.create("after", 0).await;
    assert!(
        fetch(&running, "GET", "/healthz", b"")
            .await
            .ends_with("ok")
    );
}

/// WatchList's and continue's parameters, hostile: each is a 400 or 422 `Status`, and the
/// server goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_watch_list_and_continue_parameters_are_refused() {
    use base64::Engine as _;
    let running = start(Duration::from_secs(30)).await;
    let token = |json: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
    for (query, status) in [
        // (`sendInitialEvents=perhaps` is no error: apimachinery reads any value but `false`
        // and `0` as true.)
        ("watch=1&timeoutSeconds=soon".to_owned(), 400),
        (
            "watch=1&sendInitialEvents=true&resourceVersionMatch=".to_owned() + &"x".repeat(10_000),
            422,
        ),
        (
            "watch=1&sendInitialEvents=true&sendInitialEvents=false&resourceVersionMatch=Exact"
                .to_owned(),
            422,
        ),
        (
            format!(
                "continue={}",
                token(r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"../other"}"#)
            ),
            400,
        ),
        (
            format!(
                "continue={}",
                token(r#"{"v":"meta.k8s.io/v1","rv":-1,"start":""}"#)
            ),
            400,
        ),
        (
            format!(
                "continue={}",
                token(r#"{"v":"meta.k8s.io/v1","rv":-1.5,"start":"a"}"#)
            ),
            400,
        ),
        (
            format!(
                "continue={}&resourceVersion=3",
                token(r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"a"}"#)
            ),
            400,
        ),
        // A query past hyper's URI limit never reaches the handlers.
        (
            format!("fieldSelector={}", "metadata.name%3Da,".repeat(20_000)),
            414,
        ),
    ] {
        let answer = fetch(&running, "GET", &format!("{FLOW_SCHEMAS}?{query}"), b"").await;
        let status_line = answer.lines().next().unwrap_or_default().to_owned();
        assert!(
            status_line.starts_with(&format!("HTTP/1.1 {status} ")),
            "{}: {status_line}",
            &query[..query.len().min(80)]
        );
    }
    // A deprecated watch path of a name far too long is a watch of nothing, ended on time.
    let long = format!(
        "/apis/flowcontrol.apiserver.k8s.io/v1/watch/flowschemas/{}",
        "n".repeat(5000)
    );
    let answer = fetch(&running, "GET", &format!("{long}?timeoutSeconds=1"), b"").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(!answer.contains("\"type\":\"ADDED\""), "{answer}");
    assert!(
        fetch(&running, "GET", "/healthz", b"")
            .await
            .ends_with("ok")
    );
}
