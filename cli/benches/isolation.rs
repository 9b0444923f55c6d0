//! Where API Priority and Fairness acts (issue 41 §5): `apfkit serve` (this build's binary)
//! over HTTPS, with APF and then with `--enable-priority-and-fairness=false` (kube-apiserver's
//! max-in-flight filter in its place), in the same run.
//!
//! - Priority isolation: an elephant in one priority level (a service account, level
//!   `workload-low`: 16 connections LISTing `APFKIT_ISOLATION_OBJECTS` APIServices, 5,000 by
//!   default, in a closed loop) and a mouse in another (a plain user, `global-default`: one
//!   GET ten times a second), at 2, 6 and 20 seats in all (`--max-requests-inflight` and
//!   `--max-mutating-requests-inflight` each half). The mouse behaves as client-go: a 429 is
//!   retried after its Retry-After, and its latency runs until the answer that is not a 429.
//!   The mouse is measured after its first 12 s beside the elephant (over one borrowing
//!   adjustment: an idle level lends its seats, down to its lower limit, and has them back at
//!   the next adjustment, every 10 s), its p99 in those first 12 s reported apart. Also
//!   reported: each level's current limit at the end (what borrowing did) and the elephant's
//!   LISTs a second.
//! - Fairness within a level: the elephant (a plain user) and the mouse in `global-default`,
//!   the mouse through a FlowSchema of its own (`mice`) so that its queue wait is its own
//!   series of `apiserver_flowcontrol_request_wait_duration_seconds`; its p99 over the
//!   measured period (after the same 12 s) against one elephant LIST's service time (measured
//!   alone), and the elephant's wait p99.
//!
//! `cargo bench -p apfkit --bench isolation` (`APFKIT_ISOLATION_SECONDS`, 10 by default, per
//! measurement).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[path = "../tests/load/mod.rs"]
mod load;

use load::{API_SERVICES, Seen, Serving, setting};

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// `/metrics`, read as the administrator.
async fn metrics(admin: &kube::Client) -> String {
    let request = http::Request::get("/metrics")
        .body(Vec::<u8>::new())
        .unwrap();
    admin.request_text(request).await.unwrap_or_default()
}

fn sample(text: &str, family: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(&format!("{family}{{")))
        .find(|line| labels.iter().all(|label| line.contains(label)))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The cumulative buckets (upper bound, count) of a Prometheus histogram's series: the lines
/// of `family_bucket` holding `labels`.
fn buckets(text: &str, family: &str, labels: &[&str]) -> Vec<(f64, f64)> {
    let mut buckets: Vec<(f64, f64)> = text
        .lines()
        .filter(|line| line.starts_with(&format!("{family}_bucket{{")))
        .filter(|line| labels.iter().all(|label| line.contains(label)))
        .filter_map(|line| {
            let le = line.split("le=\"").nth(1)?.split('"').next()?;
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((bound, line.rsplit(' ').next()?.parse().ok()?))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    buckets
}

/// The `q` quantile of what a histogram counted between the scrapes `before` and `after`,
/// as Prometheus' `histogram_quantile` of its growth estimates it.
fn quantile_between(
    before: &str,
    after: &str,
    family: &str,
    labels: &[&str],
    q: f64,
) -> Option<f64> {
    let earlier = buckets(before, family, labels);
    let grown: Vec<(f64, f64)> = buckets(after, family, labels)
        .into_iter()
        .map(|(bound, count)| {
            let was = earlier
                .iter()
                .find(|(b, _)| *b == bound)
                .map_or(0.0, |(_, c)| *c);
            (bound, count - was)
        })
        .collect();
    quantile(grown, q)
}

/// The `q` quantile of cumulative `buckets`, linear within a bucket.
fn quantile(buckets: Vec<(f64, f64)>, q: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let (mut lower, mut below) = (0.0, 0.0);
    for (bound, count) in buckets {
        if count >= rank {
            if bound.is_infinite() {
                return Some(lower);
            }
            let share = if count > below {
                (rank - below) / (count - below)
            } else {
                0.0
            };
            return Some(lower + (bound - lower) * share);
        }
        (lower, below) = (bound, count);
    }
    None
}

/// How long the mouse runs beside the elephant before it is measured: over one borrowing
/// adjustment (every 10 s), after which its level has its seats back.
const WARM: Duration = Duration::from_secs(12);

/// One priority-isolation measurement.
struct Isolation {
    /// The mouse's first `WARM` seconds beside the elephant: its level may have lent its
    /// seats while idle, and gets them back at the next adjustment (every 10 s).
    cold: Seen,
    /// The mouse after that.
    mouse: Seen,
    retries: u64,
    elephant_rate: f64,
    /// Each level's (current, nominal) limit at the end: workload-low, global-default.
    limits: [(f64, f64); 2],
}

async fn isolation(serving: &Serving, seconds: u64) -> Isolation {
    let period = Duration::from_secs(seconds);
    let elephant = load::clients(&serving.kubeconfig, "sa-elephant-token", 16).await;
    let mouse_client = load::client(&serving.kubeconfig, Some("mouse-token")).await;
    let admin = load::client(&serving.kubeconfig, None).await;
    let one = format!("{API_SERVICES}/v1.g7.load.example");
    let stop = Arc::new(AtomicBool::new(false));
    let trampling = {
        let stop = stop.clone();
        tokio::spawn(
            async move { load::closed_loop(&elephant, "GET", API_SERVICES, 16, stop).await },
        )
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let started = Instant::now();
    let (cold, _) = load::mouse_retrying(&mouse_client, &one, 10.0, WARM, 30).await;
    let (mouse, retries) = load::mouse_retrying(&mouse_client, &one, 10.0, period, 30).await;
    let elapsed = started.elapsed();
    let text = metrics(&admin).await;
    stop.store(true, Ordering::Relaxed);
    let elephant = trampling.await.unwrap();
    let limit = |level: &str| {
        let label = format!("priority_level=\"{level}\"");
        (
            sample(
                &text,
                "apiserver_flowcontrol_current_limit_seats",
                &[&label],
            ),
            sample(
                &text,
                "apiserver_flowcontrol_nominal_limit_seats",
                &[&label],
            ),
        )
    };
    Isolation {
        cold,
        mouse,
        retries,
        elephant_rate: elephant.latencies.len() as f64 / (elapsed.as_secs_f64() + 2.0),
        limits: [limit("workload-low"), limit("global-default")],
    }
}

/// A FlowSchema `mice` sending the plain user `mouse` to `global-default`, so that its
/// queue wait is a series of its own.
const MICE: &str = r#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
"metadata":{"name":"mice"},"spec":{"priorityLevelConfiguration":{"name":"global-default"},
"matchingPrecedence":9000,"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[
{"kind":"User","user":{"name":"mouse"}}],"resourceRules":[{"verbs":["*"],"apiGroups":["*"],
"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}"#;

fn main() {
    let objects = setting("APFKIT_ISOLATION_OBJECTS", 5000) as usize;
    let seconds = setting("APFKIT_ISOLATION_SECONDS", 10);
    let (runtime, _folder, tokens, store) = load::ground(objects);
    println!(
        "isolation: {objects} objects; elephant (service account, workload-low) 16 connections LISTing them; mouse (plain user, global-default) 10 GET/s retried after 429s as client-go; {seconds} s each"
    );
    println!(
        "| seats | APF | mouse p50 | mouse p99 | mouse p99 in its first 12 s | mouse retries after 429 | elephant LISTs/s | workload-low limit (nominal) | global-default limit (nominal) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for seats in [2u32, 6, 20] {
        let half = (seats / 2).to_string();
        let mut sides = Vec::new();
        for (name, flag) in [
            ("on", "--enable-priority-and-fairness=true"),
            ("off", "--enable-priority-and-fairness=false"),
        ] {
            let args = [
                "--max-requests-inflight".to_owned(),
                half.clone(),
                "--max-mutating-requests-inflight".to_owned(),
                half.clone(),
                flag.to_owned(),
            ];
            let serving = Serving::start(&store, &tokens, &args);
            let side = runtime.block_on(isolation(&serving, seconds));
            drop(serving);
            let limits = |(current, nominal): (f64, f64)| {
                if current.is_nan() {
                    "-".to_owned()
                } else {
                    format!("{current} ({nominal})")
                }
            };
            println!(
                "| {seats} | {name} | {:.1} ms | {:.1} ms | {:.1} ms | {} | {:.1} | {} | {} |",
                ms(side.mouse.percentile(50.0)),
                ms(side.mouse.percentile(99.0)),
                ms(side.cold.percentile(99.0)),
                side.retries,
                side.elephant_rate,
                limits(side.limits[0]),
                limits(side.limits[1]),
            );
            sides.push(side);
        }
        let (on, off) = (&sides[0], &sides[1]);
        println!(
            "|   | on ÷ off | p50 {:.3} | p99 {:.3} | | | | | |",
            ms(on.mouse.percentile(50.0)) / ms(off.mouse.percentile(50.0)),
            ms(on.mouse.percentile(99.0)) / ms(off.mouse.percentile(99.0)),
        );
    }
    // Fairness within a level, with APF's defaults.
    runtime.block_on(async {
        let serving = Serving::start(&store, &tokens, &[] as &[&str]);
        let admin = load::client(&serving.kubeconfig, None).await;
        let (status, _) = load::send(
            &admin,
            "POST",
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
            MICE.as_bytes().to_vec(),
        )
        .await;
        assert!(status == 201 || status == 409, "mice: {status}");
        let elephant = load::clients(&serving.kubeconfig, "elephant-token", 16).await;
        // One elephant LIST's service time: alone, on the idle server.
        let mut alone = Seen::default();
        for _ in 0..20 {
            let (status, latency) = load::send(&elephant[0], "GET", API_SERVICES, Vec::new()).await;
            assert_eq!(status, 200);
            alone.latencies.push(latency);
        }
        let service = alone.percentile(50.0);
        let before = metrics(&admin).await;
        let stop = Arc::new(AtomicBool::new(false));
        let trampling = {
            let stop = stop.clone();
            let elephant = elephant.clone();
            tokio::spawn(async move {
                load::closed_loop(&elephant, "GET", API_SERVICES, 100, stop).await
            })
        };
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mouse_client = load::client(&serving.kubeconfig, Some("mouse-token")).await;
        let one = format!("{API_SERVICES}/v1.g7.load.example");
        let _ = load::mouse_retrying(&mouse_client, &one, 10.0, WARM, 30).await;
        let warm = metrics(&admin).await;
        let (seen, _) = load::mouse_retrying(&mouse_client, &one, 10.0, Duration::from_secs(seconds), 30).await;
        let after = metrics(&admin).await;
        stop.store(true, Ordering::Relaxed);
        let elephant_seen = trampling.await.unwrap();
        let wait = "apiserver_flowcontrol_request_wait_duration_seconds";
        let mice = quantile_between(
            &warm,
            &after,
            wait,
            &["flow_schema=\"mice\"", "execute=\"true\""],
            0.99,
        );
        let elephants = quantile_between(
            &warm,
            &after,
            wait,
            &["flow_schema=\"global-default\"", "execute=\"true\""],
            0.99,
        );
        let before_elephants = quantile(
            buckets(
                &before,
                wait,
                &["flow_schema=\"global-default\"", "execute=\"true\""],
            ),
            0.99,
        );
        println!();
        println!("| within global-default | value |");
        println!("|---|---|");
        println!(
            "| one elephant LIST alone (service time, p50) | {:.1} ms |",
            ms(service)
        );
        println!(
            "| mouse queue wait p99 (flow schema mice) | {} |",
            mice.map_or("-".to_owned(), |s| format!("{:.1} ms", s * 1e3))
        );
        println!(
            "| elephant queue wait p99 (flow schema global-default), before → during | {} → {} |",
            before_elephants.map_or("-".to_owned(), |s| format!("{:.1} ms", s * 1e3)),
            elephants.map_or("-".to_owned(), |s| format!("{:.1} ms", s * 1e3))
        );
        println!(
            "| mouse end-to-end p50 / p99 | {:.1} / {:.1} ms |",
            ms(seen.percentile(50.0)),
            ms(seen.percentile(99.0))
        );
        println!(
            "| elephant LISTs answered / 429 | {} / {} |",
            elephant_seen.latencies.len(),
            elephant_seen.rejected
        );
        let executed = quantile_between(
            &warm,
            &after,
            "apiserver_flowcontrol_request_execution_seconds",
            &["flow_schema=\"global-default\""],
            0.5,
        );
        println!(
            "| one elephant LIST's execution under the load (p50, flow schema global-default) | {} |",
            executed.map_or("-".to_owned(), |s| format!("{:.1} ms", s * 1e3))
        );
        println!(
            "| mouse wait p99 ≤ one elephant LIST alone / under the load | {} / {} |",
            mice.is_some_and(|s| s <= service.as_secs_f64()),
            mice.zip(executed).is_some_and(|(m, e)| m <= e)
        );
    });
}
