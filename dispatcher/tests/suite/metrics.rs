//! kube-apiserver's APF metrics kept by the guard: per flow, requests and seats waiting and
//! executing, dispatches, rejections by reason, wait times; per level, its limits and
//! `demand_seats` (`k8s.io/apiserver/pkg/util/flowcontrol/metrics/metrics.go`).

use std::time::Duration;

use apfkit_dispatcher::config::Configuration;

use super::support::{fill, global_default, request};
use apfkit_dispatcher::guard::Guard;
use apfkit_dispatcher::metrics::ApfMetrics;
use apfkit_dispatcher::queueset::WorkEstimate;

/// The value of the sample `name{labels}` in the text format, labels in any order (the
/// values here hold no commas or braces).
fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
    let sorted = |labels: &str| {
        let mut pairs: Vec<String> = labels.split(',').map(str::to_owned).collect();
        pairs.sort();
        pairs
    };
    let wanted = sorted(labels);
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix('{')?;
        let (labels, value) = rest.split_once("} ")?;
        (sorted(labels) == wanted).then(|| value.parse().unwrap())
    })
}

fn scrape(registry: &prometheus::Registry) -> String {
    prometheus::TextEncoder::new()
        .encode_to_string(&registry.gather())
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_guard_counts_dispatches_waits_rejections_and_seats_per_flow() {
    let registry = prometheus::Registry::new();
    let guard = Guard::with_wait_limit(
        Configuration::kubernetes_default(24).unwrap(),
        Duration::from_secs(5),
    );
    guard.record_metrics(ApfMetrics::register(&registry).unwrap());
    let (_, limit) = global_default(&guard);
    let permits = fill(&guard, limit).await;
    let flow = r#"flow_schema="global-default",priority_level="global-default""#;
    let text = scrape(&registry);
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_current_executing_requests",
            flow
        ),
        Some(limit as f64)
    );
    assert_eq!(
        sample(&text, "apiserver_flowcontrol_current_executing_seats", flow),
        Some(limit as f64)
    );
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_dispatched_requests_total",
            flow
        ),
        Some(limit as f64)
    );

    // Bob waits; while he does, one request and one seat are in a queue.
    let waiting = {
        let guard = guard.clone();
        tokio::spawn(async move {
            guard
                .acquire(&request("bob"), WorkEstimate::ONE_SEAT)
                .await
                .map(drop)
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let text = scrape(&registry);
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_current_inqueue_requests",
            flow
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "apiserver_flowcontrol_current_inqueue_seats", flow),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_request_queue_length_after_enqueue_bucket",
            &format!("{flow},le=\"0\"")
        ),
        Some(0.0),
        "every request saw at least itself in its queue"
    );
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_request_queue_length_after_enqueue_count",
            flow
        ),
        Some(limit as f64 + 1.0),
        "alice's requests went through a queue too, dispatched at once"
    );
    // His wait reaches its limit: a time-out, with the wait observed as not executed.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(waiting.await.unwrap().is_err());
    let text = scrape(&registry);
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_current_inqueue_requests",
            flow
        ),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_rejected_requests_total",
            &format!("{flow},reason=\"time-out\"")
        ),
        Some(1.0)
    );
    let waited = |execute: &str, suffix: &str| {
        sample(
            &text,
            &format!("apiserver_flowcontrol_request_wait_duration_seconds_{suffix}"),
            &format!("{flow},execute=\"{execute}\""),
        )
    };
    assert_eq!(waited("false", "count"), Some(1.0));
    assert!(waited("false", "sum").unwrap() >= 5.0);
    assert_eq!(
        waited("true", "count"),
        Some(limit as f64),
        "immediate dispatches wait 0"
    );
    assert_eq!(waited("true", "sum"), Some(0.0));

    // Finishing counts execution times and frees the gauges.
    drop(permits);
    let text = scrape(&registry);
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_current_executing_requests",
            flow
        ),
        Some(0.0)
    );
    assert_eq!(
        sample(&text, "apiserver_flowcontrol_current_executing_seats", flow),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_request_execution_seconds_count",
            &format!("{flow},type=\"regular\"")
        ),
        Some(limit as f64)
    );
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_work_estimated_seats_count",
            flow
        ),
        Some(limit as f64 + 1.0)
    );
}

#[tokio::test(start_paused = true)]
async fn level_gauges_follow_the_configuration_and_demand_seats_counts_nanoseconds() {
    let registry = prometheus::Registry::new();
    let guard = Guard::new(Configuration::kubernetes_default(600).unwrap());
    guard.record_metrics(ApfMetrics::register(&registry).unwrap());
    let text = scrape(&registry);
    // The bootstrap levels of a 600-seat server (the limits command's table).
    for (level, nominal, lower, upper) in [
        ("workload-low", 245.0, 24.0, 845.0),
        ("exempt", 0.0, 0.0, 600.0),
    ] {
        let labels = format!("priority_level=\"{level}\"");
        assert_eq!(
            sample(&text, "apiserver_flowcontrol_nominal_limit_seats", &labels),
            Some(nominal),
            "{level}"
        );
        // Removed in 1.37, with `request_concurrency_in_use`.
        assert_eq!(
            sample(
                &text,
                "apiserver_flowcontrol_request_concurrency_limit",
                &labels
            ),
            None
        );
        assert_eq!(
            sample(&text, "apiserver_flowcontrol_lower_limit_seats", &labels),
            Some(lower),
            "{level}"
        );
        assert_eq!(
            sample(&text, "apiserver_flowcontrol_upper_limit_seats", &labels),
            Some(upper),
            "{level}"
        );
    }
    assert!(text.contains("# HELP apiserver_flowcontrol_nominal_limit_seats [BETA] Nominal number of execution seats configured for each priority level\n"));
    assert!(text.contains("# TYPE apiserver_flowcontrol_demand_seats histogram\n"));

    // One seat of global-default in use for 2 s: its demand ratio (1 / current limit) sits
    // in the lowest bucket for all that time.
    let permit = guard
        .acquire(&request("alice"), WorkEstimate::ONE_SEAT)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    drop(permit);
    let text = scrape(&registry);
    let labels = "priority_level=\"global-default\"";
    let count = sample(&text, "apiserver_flowcontrol_demand_seats_count", labels).unwrap();
    assert!(count >= 2e9, "nanoseconds counted: {count}");
    let sum = sample(&text, "apiserver_flowcontrol_demand_seats_sum", labels).unwrap();
    let current =
        guard.inspect(|d| d.level(d.level_index("global-default").unwrap()).current) as f64;
    assert!(
        (sum - 2e9 / current).abs() < 1e6,
        "sum {sum} against {}",
        2e9 / current
    );
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_demand_seats_bucket",
            &format!("{labels},le=\"0.2\"")
        ),
        Some(count)
    );
}
