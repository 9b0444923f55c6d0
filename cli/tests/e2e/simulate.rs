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

/// `--kubernetes-version` sizes the streams that give the objects they read by that
/// release's work estimator (issue 41 §3): 10 seats for a LIST of 5,000 objects of 10 kB in
/// 1.33 (count-based), workload-low's cap of 37 in 1.34 and later (size-based).
#[test]
fn the_release_estimates_the_seats_of_a_stream_of_objects() {
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("lists.yaml");
    std::fs::write(
        &workload,
        "duration: 2s\nstreams:\n- {name: lists, user: 'system:serviceaccount:ci:bot', groups: [system:serviceaccounts], verb: list, resource: pods, objects: 5000, objectBytes: 10000, service: 100ms, rate: 5}\n",
    )
    .unwrap();
    let workload = workload.to_str().unwrap();
    let seats = |release: &[&str]| {
        let mut args = vec!["simulate", "--workload", workload, "-o", "json"];
        args.extend_from_slice(release);
        let output = super::apfkit(&args, b"");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        report["streams"][0]["seats"].as_u64().unwrap()
    };
    assert_eq!(seats(&["--kubernetes-version", "1.33"]), 10);
    assert_eq!(seats(&["--kubernetes-version", "1.34"]), 37);
    assert_eq!(seats(&[]), 37, "the newest release by default");
}

/// Debian's Chromium (`.ci/run` installs it); the test fails, naming the package, without it.
fn chromium() -> String {
    let candidates = ["chromium", "chromium-browser", "google-chrome"];
    candidates
        .iter()
        .find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(|c| (*c).to_owned())
        .unwrap_or_else(|| {
            panic!("headless Chromium is needed (apt-get install chromium; .ci/run installs it)")
        })
}

/// Runs headless Chromium on `page` with `arguments` (the flags a sandboxed root needs and
/// that keep it off the network), in a fresh profile.
fn browse(page: &std::path::Path, profile: &std::path::Path, arguments: &[&str]) -> Output {
    let mut command = std::process::Command::new(chromium());
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(arguments)
        .arg(format!("file://{}", page.display()));
    super::run_within(command, b"", Duration::from_secs(120), |_| {})
}

/// The simulation report is one self-contained page that a real browser renders: the
/// screenshot is not blank, and the charts are there with their titles.
#[test]
fn the_report_renders_in_headless_chromium_with_its_charts() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let plots = dir.path().join("charts");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_apfkit"));
    command
        .args(["simulate", "--report"])
        .arg(&page)
        .arg("--plot")
        .arg(&plots);
    let output = super::run_within(command, b"", Duration::from_secs(120), |_| {});
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: no script, nothing loaded (the SVG namespace is a name, not a link).
    let links = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(
        !html.contains("<script")
            && !links.contains("http")
            && !html.contains("src=")
            && !html.contains("href="),
        "self-contained"
    );
    let svgs: Vec<_> = std::fs::read_dir(&plots)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(svgs.len() >= 8, "{svgs:?}");
    assert_eq!(
        html.matches("<svg").count(),
        svgs.len(),
        "the page holds every chart"
    );

    // What matters first (issue 41 §6): the headline, then real tables, then each level's
    // charts side by side; the raw dump folded at the end.
    let order = [
        "<h2>What matters</h2>",
        "noisy-user (global-default → global-default) queued: waits p50",
        "global-default was saturated: it used",
        "global-default used up to",
        "<h2>Priority levels</h2>\n<table>",
        "<h2>Flows</h2>\n<table>",
        "<section><h3>global-default</h3><div class=\"charts\">\n<figure title=\"global-default: seats in use and limits\">",
        "<h2>Wait times per flow</h2>",
        "<details><summary>dump_priority_levels at the end of arrivals</summary><pre>",
    ];
    let mut from = 0;
    for expected in order {
        let at = html[from..]
            .find(expected)
            .unwrap_or_else(|| panic!("{expected} after byte {from}"));
        from += at + expected.len();
    }
    assert_eq!(
        html.matches("<pre>").count(),
        1,
        "only the appendix is preformatted"
    );
    // The flows' wait percentiles are in their table.
    assert!(html.contains("<th class=\"n\">Wait p90 ms</th>"), "{html}");

    // The DOM Chromium builds has every chart, titled.
    let profile = dir.path().join("profile");
    let dom = browse(&page, &profile, &["--dump-dom"]);
    // plotters writes each text on a line of its own.
    let dom = String::from_utf8_lossy(&dom.stdout).replace('\n', "");
    for title in [
        "global-default: seats in use and limits",
        "global-default: requests waiting",
        "noisy-user: wait times",
        "kubelets: wait times",
    ] {
        assert!(
            dom.contains(&format!("<figure title=\"{title}\">")),
            "{title}"
        );
        assert!(dom.contains(&format!(">{title}</text>")), "{title} drawn");
    }
    // Its screenshot is not blank: a good share of its pixels are not white.
    let shot = dir.path().join("shot.png");
    let taken = browse(
        &page,
        &profile,
        &[
            "--window-size=1400,2400",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    assert!(shot.exists(), "{}", String::from_utf8_lossy(&taken.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let channels = info.color_type.samples();
    let drawn = pixels[..info.buffer_size()]
        .chunks(channels)
        .filter(|p| p.iter().take(3).any(|c| *c < 200))
        .count();
    let total = (info.width * info.height) as usize;
    assert!(drawn * 100 > total, "{drawn} of {total} pixels drawn");
}

/// A run that takes over a second shows a progress bar on a terminal (a pseudo-terminal
/// from util-linux's `script`), and none when standard error is a pipe.
#[test]
fn a_long_simulation_shows_a_progress_bar_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("long.yaml");
    std::fs::write(
        &workload,
        "duration: 600s\nstreams:\n- {name: s, user: u, verb: get, resource: pods, namespace: default, rate: 4000, service: 10ms}\n",
    )
    .unwrap();
    let run = format!(
        "{} simulate --workload {} --max-requests 3000000 > /dev/null",
        env!("CARGO_BIN_EXE_apfkit"),
        workload.display()
    );
    progress_shows_on_a_terminal_only(&run, "simulating");
}

/// Runs the shell command `run` on a pseudo-terminal (util-linux's `script`), where a bar
/// labelled `label` must show, then with standard error a pipe, where it must not.
pub(super) fn progress_shows_on_a_terminal_only(run: &str, label: &str) {
    let mut on_terminal = std::process::Command::new("script");
    on_terminal.args(["-qec", run, "/dev/null"]);
    let output = super::run_within(on_terminal, b"", Duration::from_secs(120), |_| {});
    assert!(
        output.status.success(),
        "util-linux's script runs the command on a pseudo-terminal: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let shown = String::from_utf8_lossy(&output.stdout);
    // The bar redraws at most a few times a second, so which percentages show depends on the
    // machine's speed: assert a drawn bar with a percentage, not a particular one.
    assert!(
        shown.contains(label) && shown.contains('█') && shown.contains("% ("),
        "{shown}"
    );
    let mut piped = std::process::Command::new("bash");
    piped.args(["-c", run]);
    let output = super::run_within(piped, b"", Duration::from_secs(120), |_| {});
    assert!(output.status.success());
    assert!(!String::from_utf8_lossy(&output.stderr).contains(label));
}
