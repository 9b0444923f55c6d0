//! Simulations always end: closed-loop clients answered at once make progress, hostile
//! numbers are refused with the field and the limit, and random workloads neither panic nor
//! hang.

use std::process::Output;
use std::time::Duration;

use proptest::prelude::*;

use super::apfkit_within;

/// Runs `simulate` on a workload from standard input, failing after `limit`.
fn simulate(workload: &str, extra: &[&str], limit: Duration) -> Output {
    let mut args = vec!["simulate", "--workload", "-", "-o", "json"];
    args.extend(extra);
    apfkit_within(&args, workload.as_bytes(), limit)
}

/// The JSON report of a simulation that must succeed within a minute.
fn report(workload: &str) -> serde_json::Value {
    let output = simulate(workload, &[], Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    serde_json::from_slice(&output.stdout).unwrap()
}

fn one_stream(stream: &str) -> String {
    format!("duration: 1s\nstreams:\n- {{name: s, user: anon, verb: get, path: /foo, {stream}}}\n")
}

/// Clients answered at once (a Reject level, a full queue, zero service) wait for the
/// Retry-After of their 429 before sending again, so simulated time moves on.
#[test]
fn closed_loop_clients_answered_at_once_make_progress() {
    let report = report(&one_stream("service: 1s, clients: 50"));
    let stream = &report["streams"][0];
    assert_eq!(stream["priorityLevel"], "catch-all");
    assert!(
        stream["rejected"]["concurrencyLimit"].as_u64().unwrap() > 0,
        "{stream}"
    );
    assert_eq!(report["leftOver"], 0);
    // With zero service and zero think, nothing would ever advance the clock: refused.
    let output = simulate(
        &one_stream("service: 0s, clients: 50"),
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("streams[0]: a closed-loop stream needs a service or think time above 0s")
    );
}

#[test]
fn hostile_numbers_are_refused_with_the_field_and_the_limit() {
    let cases = [
        (
            "rate: 1e300, service: 1s",
            "streams: the streams would send up to 1.00e300 requests, more than the limit of 10000000",
        ),
        (
            "rate: 1, service: 18446744073709551615s",
            "streams[0].service: ",
        ),
        (
            "rate: 1, service: 1s, additionalLatency: 18446744073709551615s",
            "streams[0].additionalLatency: ",
        ),
        (
            "rate: 1, service: 1s, users: 4294967295",
            "streams: 4294967295 users in all, more than the limit of 100000",
        ),
        (
            "service: 1s, clients: 4294967295",
            "streams: 4294967295 clients in all, more than the limit of 100000",
        ),
        (
            "rate: 1, service: 1s, finalSeats: 4294967296",
            "streams[0].finalSeats: 4294967296 is more than the limit of 1000",
        ),
        (
            "rate: 1, service: 1s, seats: 1001",
            "streams[0].seats: 1001 is more than the limit of 1000",
        ),
    ];
    for (stream, message) in cases {
        let output = simulate(&one_stream(stream), &[], Duration::from_secs(60));
        assert_eq!(output.status.code(), Some(1), "{stream}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{stream}: {stderr}");
    }
    let long = "duration: 18446744073709551615s\nstreams: []\n";
    let output = simulate(long, &[], Duration::from_secs(60));
    assert!(String::from_utf8_lossy(&output.stderr).contains("duration: "));
    // A rate so low that the first gap overflows a duration: no request, no panic.
    assert_eq!(
        report(&one_stream("rate: 1e-300, service: 1s"))["requests"],
        0
    );
    // A workload is held to the document size limit while it is read.
    let endless = format!("duration: 1s\nstreams: []\n# {}\n", "x".repeat(2 << 20));
    let output = simulate(
        &endless,
        &["--max-document-size", "1M"],
        Duration::from_secs(60),
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("larger than 1048576 bytes"));
    // The request limit can be raised.
    let output = simulate(
        &one_stream("rate: 20000, service: 1ms"),
        &["--max-requests", "10000"],
        Duration::from_secs(60),
    );
    assert_eq!(output.status.code(), Some(1));
    let output = simulate(
        &one_stream("rate: 20000, service: 1ms"),
        &["--max-requests", "30000"],
        Duration::from_secs(120),
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn duration() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0s".to_owned()),
        (0u64..2000).prop_map(|ms| format!("{ms}ms")),
        Just("18446744073709551615s".to_owned()),
        Just("25h".to_owned()),
    ]
}

fn count() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..40).prop_map(|n| n.to_string()),
        Just("4294967295".to_owned()),
        Just("4294967296".to_owned()),
        Just("-1".to_owned()),
    ]
}

fn stream() -> impl Strategy<Value = String> {
    let arrivals = prop_oneof![
        prop_oneof![
            Just(1e-300),
            Just(1e300),
            Just(0.0),
            Just(-1.0),
            0.1f64..5000.0
        ]
        .prop_map(|rate| format!("rate: {rate:e}")),
        count().prop_map(|clients| format!("clients: {clients}")),
    ];
    (
        arrivals,
        duration(),
        duration(),
        count(),
        count(),
        count(),
        duration(),
        any::<bool>(),
    )
        .prop_map(
            |(arrivals, service, think, users, seats, final_seats, latency, path)| {
                let target = if path {
                    "path: /healthz"
                } else {
                    "resource: pods"
                };
                format!(
                    "{{name: s, user: u, verb: get, {target}, {arrivals}, service: {service}, \
                 think: {think}, users: {users}, seats: {seats}, finalSeats: {final_seats}, \
                 additionalLatency: {latency}}}"
                )
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Random workloads, extremes included, end in bounded time with 0 or 1 and no panic.
    #[test]
    fn random_workloads_end(streams in proptest::collection::vec(stream(), 1..4), seconds in 0u64..5, wait in duration()) {
        let workload = format!("duration: {seconds}s\nwaitLimit: {wait}\nstreams:\n{}",
            streams.iter().map(|s| format!("- {s}\n")).collect::<String>());
        let output = simulate(&workload, &["--max-requests", "20000"], Duration::from_secs(120));
        let stderr = String::from_utf8_lossy(&output.stderr);
        prop_assert!(!stderr.contains("panicked"), "{}\n{}", workload, stderr);
        prop_assert!(matches!(output.status.code(), Some(0 | 1)), "{}\n{:?} {}", workload, output.status, stderr);
        if output.status.success() {
            let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            prop_assert_eq!(&report["leftOver"], &serde_json::json!(0), "{}", workload);
        }
    }
}
