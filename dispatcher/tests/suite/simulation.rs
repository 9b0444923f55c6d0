//! The mixed simulator and the whole-server dispatcher: determinism, every request ending
//! exactly once, borrowing at work, the dump table, and workload checks.

use std::time::Duration;

use apfkit_dispatcher::config::{ConfigError, Configuration};
use apfkit_dispatcher::dispatch::{Decision, Dispatcher};
use apfkit_dispatcher::queueset::WorkEstimate;
use apfkit_dispatcher::sim::server::{Report, simulate};
use apfkit_dispatcher::sim::workload::{Limits, Workload};

fn default_run(seed: u64) -> Report {
    let config = Configuration::kubernetes_default(600).unwrap();
    simulate(config, &Workload::embedded_default(), seed, |_| {}).unwrap()
}

#[test]
fn the_simulator_is_deterministic_for_a_seed() {
    let first = default_run(7);
    assert_eq!(first, default_run(7));
    assert_ne!(
        first.requests,
        default_run(8).requests,
        "another seed, other arrivals"
    );
}

#[test]
fn every_request_ends_exactly_once_and_nothing_is_left_over() {
    let report = default_run(1);
    let ended: u64 = report
        .streams
        .iter()
        .map(|s| s.figures.executed + s.figures.rejected.total())
        .sum();
    assert_eq!(ended, report.requests);
    let by_level: u64 = report
        .priority_levels
        .iter()
        .map(|l| l.figures.executed + l.figures.rejected.total())
        .sum();
    assert_eq!(by_level, report.requests);
    assert_eq!(report.left_over, 0);
}

#[test]
fn the_default_workload_shows_isolation_and_borrowing() {
    let report = default_run(1);
    let stream = |name: &str| {
        &report
            .streams
            .iter()
            .find(|s| s.name == name)
            .unwrap()
            .figures
    };
    let level = |name: &str| {
        report
            .priority_levels
            .iter()
            .find(|l| l.name == name)
            .unwrap()
    };
    // The noisy user waits; kubelets and controllers on their own levels do not.
    assert!(stream("noisy-user").wait_p50_ms > 100.0);
    assert_eq!(stream("kubelets").wait_p99_ms, 0.0);
    assert_eq!(stream("controllers").wait_p99_ms, 0.0);
    // global-default is busy and borrows seats lent by idle levels.
    let global = level("global-default");
    assert!(global.current_cl > global.nominal_cl, "{global:?}");
    // The text report carries both tables and the dump.
    let text = report.to_text();
    assert!(text.contains("PriorityLevelName, NominalCL"));
    assert!(text.contains(
        "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests"
    ));
}

#[test]
fn dump_priority_levels_is_aligned_like_gos_tabwriter() {
    let dispatcher = Dispatcher::new(
        Configuration::kubernetes_default(600).unwrap(),
        Duration::ZERO,
    );
    let dump = dispatcher.dump_priority_levels();
    let lines: Vec<&str> = dump.lines().collect();
    // The ten columns kube-apiserver prints since 1.26 (`apf_controller_debug.go`).
    assert_eq!(
        lines[0],
        "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests"
    );
    assert_eq!(
        lines[1],
        "catch-all,         0,            true,   false,       0,               0,                 0,                  0,                0,                0"
    );
    assert_eq!(lines.len(), 9);
}

#[test]
fn dispatcher_waits_dispatches_on_finish_and_times_out() {
    // A configuration whose global-default level has a small limit: the server limit 24.
    let config = Configuration::kubernetes_default(24).unwrap();
    let now = Duration::ZERO;
    let mut dispatcher = Dispatcher::new(config, now);
    let global = dispatcher.level_index("global-default").unwrap();
    let limit = dispatcher.level(global).current;
    assert!(limit >= 1);
    let mut running = Vec::new();
    for _ in 0..limit {
        match dispatcher
            .start(now, global, 42, WorkEstimate::ONE_SEAT)
            .decision
        {
            Decision::Execute(ticket) => running.push(ticket),
            other => panic!("{other:?}"),
        }
    }
    let Decision::Wait(waiting) = dispatcher
        .start(now, global, 42, WorkEstimate::ONE_SEAT)
        .decision
    else {
        panic!("the level is full")
    };
    let Decision::Wait(late) = dispatcher
        .start(now, global, 43, WorkEstimate::ONE_SEAT)
        .decision
    else {
        panic!("the level is full")
    };
    let finished = dispatcher.finish(now + Duration::from_millis(5), running[0]);
    assert_eq!(finished.dispatched, [waiting]);
    assert!(
        dispatcher.cancel(now + Duration::from_secs(15), late),
        "its wait limit passed"
    );
    assert!(
        !dispatcher.cancel(now + Duration::from_secs(15), waiting),
        "already executing"
    );
}

#[test]
fn workload_mistakes_are_reported_with_the_stream_index() {
    let mut workload = Workload::embedded_default();
    workload.streams[2].rate = Some(5.0);
    let error = workload.check().unwrap_err();
    assert_eq!(
        error.to_string(),
        "streams[2]: set either rate or clients, not both"
    );
    let mut workload = Workload::embedded_default();
    workload.streams[0].path = "/healthz".to_owned();
    assert_eq!(
        workload.check().unwrap_err().to_string(),
        "streams[0]: set exactly one of resource and path"
    );
}

fn one_stream(stream: &str) -> Workload {
    serde_saphyr::from_str(&format!(
        "duration: 2s\nstreams:\n- {{name: s, user: u, verb: get, path: /foo, {stream}}}\n"
    ))
    .unwrap()
}

/// Closed-loop clients rejected at once wait for Retry-After (1 s here) before they send
/// again: the run ends, with at most one request per client per second.
#[test]
fn rejected_closed_loop_clients_back_off_for_retry_after() {
    let workload = one_stream("service: 10s, clients: 50");
    let config = Configuration::kubernetes_default(600).unwrap();
    let report = simulate(config, &workload, 1, |_| {}).unwrap();
    let stream = &report.streams[0];
    assert_eq!(stream.priority_level, "catch-all");
    assert!(stream.figures.rejected.concurrency_limit > 0);
    // At t = 0 every client sends; the rejected ones send again at t = 1 s and t = 2 s.
    assert!(report.requests <= 150, "{} requests", report.requests);
    assert_eq!(report.left_over, 0);
}

#[test]
fn workload_limits_name_the_field_and_the_limit() {
    let limits = Limits {
        max_requests: 1000,
        ..Limits::default()
    };
    let cases = [
        (
            "rate: 600, service: 1s",
            "streams: the streams would send up to 1200 requests, more than the limit of 1000",
        ),
        (
            "clients: 10, service: 1ms",
            "streams: the streams would send up to 20010 requests, more than the limit of 1000",
        ),
        (
            "clients: 10, service: 0s",
            "streams[0]: a closed-loop stream needs a service or think time above 0s, or its clients would resend at the same instant forever",
        ),
        (
            "rate: 1, service: 25h",
            "streams[0].service: 1day 1h is longer than the limit of 1day",
        ),
        (
            "rate: 1, service: 1s, seats: 5000",
            "streams[0].seats: 5000 is more than the limit of 1000",
        ),
    ];
    for (stream, message) in cases {
        let error = one_stream(stream).check_within(&limits).unwrap_err();
        assert_eq!(error.to_string(), message, "{stream}");
    }
    // Just within the limit: 500 expected requests of a 250/s stream over 2 s.
    one_stream("rate: 250, service: 1s")
        .check_within(&limits)
        .unwrap();
}

#[test]
fn duplicate_names_cannot_make_a_configuration() {
    let config = Configuration::kubernetes_default(600).unwrap();
    let levels: Vec<_> = config
        .priority_levels()
        .iter()
        .map(|l| l.object.clone())
        .collect();
    let schemas: Vec<_> = config
        .flow_schemas()
        .iter()
        .map(|s| s.object.clone())
        .collect();
    let twice = levels.iter().chain(&levels).cloned();
    assert_eq!(
        Configuration::new(twice, schemas.clone(), 600)
            .unwrap_err()
            .to_string(),
        "two PriorityLevelConfiguration objects are named \"catch-all\""
    );
    let twice = schemas.iter().chain(&schemas).cloned();
    assert!(matches!(
        Configuration::new(levels, twice, 600),
        Err(ConfigError::DuplicateName {
            kind: "FlowSchema",
            ..
        })
    ));
}

/// Recording the course of a run changes nothing else, and the course adds up: samples at
/// even steps, each level's rejections never going down and ending at its total, every
/// stream's waits counted once.
#[test]
fn a_recorded_run_reports_the_same_and_its_course_adds_up() {
    use apfkit_dispatcher::sim::server::simulate_recording;
    use apfkit_dispatcher::sim::workload::Limits;
    let workload = Workload::embedded_default();
    let config = || Configuration::kubernetes_default(600).unwrap();
    let plain = simulate(config(), &workload, 3, |_| {}).unwrap();
    let mut recorded =
        simulate_recording(config(), &workload, &Limits::default(), 3, |_| {}).unwrap();
    let timeline = recorded.timeline.take().expect("a timeline");
    assert_eq!(recorded, plain, "recording changes nothing else");
    assert_eq!(timeline.seconds.len(), 301);
    assert_eq!(timeline.seconds[0], 0.0);
    for (series, level) in timeline.levels.iter().zip(&plain.priority_levels) {
        assert_eq!(series.name, level.name);
        assert!(
            series.rejected.windows(2).all(|w| w[0] <= w[1]),
            "{}",
            series.name
        );
        assert!(*series.rejected.last().unwrap() <= level.figures.rejected.total());
        assert_eq!(series.seats_in_use.len(), 301);
        // One source of truth: the table's current limit is the last sample's (the exempt
        // level's limit falls back to 0 once arrivals end and its demand is gone).
        assert_eq!(
            series.current_limit.last().copied(),
            Some(level.current_cl),
            "{}",
            series.name
        );
        // Utilization from the integrals: seats used over the limit offered, both averaged
        // over the arrival period; the samples' averages agree to within their coarseness.
        let mean = |values: Vec<f64>| values.iter().sum::<f64>() / values.len() as f64;
        let sampled_limit = mean(series.current_limit.iter().map(|v| *v as f64).collect());
        assert!(
            (level.average_limit - sampled_limit).abs() <= 0.02 * sampled_limit.max(1.0),
            "{}: {} against {sampled_limit}",
            series.name,
            level.average_limit
        );
        match level.utilization {
            Some(utilization) => assert!(
                (utilization - level.figures.average_seats / level.average_limit).abs() < 1e-12
            ),
            None => assert_eq!(level.average_limit, 0.0, "{}", series.name),
        }
    }
    let global = timeline
        .levels
        .iter()
        .find(|l| l.name == "global-default")
        .unwrap();
    assert!(
        global.waiting.iter().any(|w| *w > 0),
        "the noisy user queues"
    );
    for (waits, stream) in timeline.streams.iter().zip(&plain.streams) {
        let counted: u64 = waits.buckets.iter().map(|(_, n)| n).sum();
        assert_eq!(
            counted,
            stream.figures.executed + stream.figures.rejected.time_out,
            "{}",
            stream.name
        );
    }
}

/// kubernetes issue 134196 (through 1.37): a level with no shares and `Reject`, which cannot
/// borrow, still runs a request whenever none of its own executes, because a request wider
/// than the level's limit (here 0) runs alone (queueset.go, `canAccommodateSeatsLocked`). The
/// simulator models it: one request at a time executes, the rest are rejected.
#[test]
fn a_zero_share_reject_level_runs_one_request_at_a_time() {
    use apfkit_dispatcher::bootstrap;
    use apfkit_scheme::scheme::{HubObject, SCHEME, UnknownFields};
    let to_hub = |document| {
        SCHEME
            .to_hub_value(&document, UnknownFields::Strict)
            .unwrap()
            .0
            .remove(0)
    };
    let HubObject::PriorityLevelConfiguration(level) = to_hub(serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "zero"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
            "borrowingLimitPercent": 0, "limitResponse": {"type": "Reject"}}}}))
    else {
        unreachable!()
    };
    let HubObject::FlowSchema(schema) = to_hub(serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "zero"},
        "spec": {"priorityLevelConfiguration": {"name": "zero"}, "matchingPrecedence": 500,
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "u"}}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}))
    else {
        unreachable!()
    };
    let mut levels = bootstrap::priority_levels().to_vec();
    let mut schemas = bootstrap::flow_schemas().to_vec();
    levels.push(level);
    schemas.push(schema);
    let config = Configuration::new(levels, schemas, 600).unwrap();
    assert_eq!(config.priority_level("zero").unwrap().limits.nominal, 0);
    // 100 requests a second of 100 ms each for 2 s: about 200 arrive.
    let workload = one_stream("service: 100ms, rate: 100");
    let report = simulate(config, &workload, 1, |_| {}).unwrap();
    let stream = &report.streams[0];
    assert_eq!(stream.priority_level, "zero");
    let executed = stream.figures.executed;
    // One at a time for 2 s of 100 ms requests: about 20, never two at once.
    assert!((10..=22).contains(&executed), "{executed} executed");
    assert!(stream.figures.rejected.concurrency_limit > 100);
    // A zero-share level that queues is another matter: kube-apiserver dispatches from its
    // queues only while the seats in use are below the limit (queueset.go,
    // `dispatchAsMuchAsPossibleLocked`), so with a limit of 0 and nothing to borrow every
    // request waits until its wait limit and is rejected.
    let HubObject::PriorityLevelConfiguration(queuing) = to_hub(serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "zero"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
            "borrowingLimitPercent": 0, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 64, "handSize": 6, "queueLengthLimit": 50}}}}}))
    else {
        unreachable!()
    };
    let mut levels = bootstrap::priority_levels().to_vec();
    levels.push(queuing);
    let mut schemas = bootstrap::flow_schemas().to_vec();
    schemas.push(
        match to_hub(serde_json::json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "zero"},
            "spec": {"priorityLevelConfiguration": {"name": "zero"}, "matchingPrecedence": 500,
                "rules": [{"subjects": [{"kind": "User", "user": {"name": "u"}}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}))
        {
            HubObject::FlowSchema(schema) => schema,
            _ => unreachable!(),
        },
    );
    let config = Configuration::new(levels, schemas, 600).unwrap();
    let report = simulate(config, &one_stream("service: 100ms, rate: 10"), 1, |_| {}).unwrap();
    let stream = &report.streams[0];
    assert_eq!(stream.figures.executed, 0, "{stream:?}");
    assert!(stream.figures.rejected.time_out > 0, "{stream:?}");
}

/// A stream that gives the objects it reads takes the seats the release's work estimator
/// gives it (issue 41 §3; `Release::estimator_config`, read from k8s.io/apiserver at each tag):
/// a service account LISTing 5,000 objects of 10 kB is 10 seats in 1.33 (count-based, at most
/// 10) and workload-low's cap of 37 from 1.34 (size-based: 500 seats wanted, at most 100, then
/// the level's cap, `max(1, min(ceil(245 × 0.15), 245 / 6))`); a legacy watch
/// (`resourceVersion=0`) costs one seat until 1.35, which costs its initial events (10 seats
/// here, as `estimate.rs`'s `a_legacy_watch_costs_initial_events_from_1_35_on`).
#[test]
fn a_stream_of_objects_takes_the_seats_its_release_estimates() {
    use apfkit_dispatcher::release::Release;
    let workload = |release: &str| {
        let mut workload: Workload = serde_saphyr::from_str(
            "duration: 2s\nstreams:\n\
             - {name: lists, user: 'system:serviceaccount:ci:bot', groups: [system:serviceaccounts, system:authenticated], verb: list, resource: pods, objects: 5000, objectBytes: 10000, service: 100ms, rate: 5}\n\
             - {name: watches, user: 'system:serviceaccount:ci:bot', groups: [system:serviceaccounts, system:authenticated], verb: watch, resource: pods, objects: 5000, objectBytes: 10000, query: 'resourceVersion=0', service: 10ms, rate: 5}\n\
             - {name: plain, user: 'system:serviceaccount:ci:bot', groups: [system:serviceaccounts, system:authenticated], verb: list, resource: pods, seats: 3, service: 10ms, rate: 5}\n",
        )
        .unwrap();
        workload.release = Release::parse(release).unwrap();
        workload
    };
    let seats = |release: &str| {
        let report = simulate(
            Configuration::kubernetes_default(600).unwrap(),
            &workload(release),
            1,
            |_| {},
        )
        .unwrap();
        report.streams.iter().map(|s| s.seats).collect::<Vec<_>>()
    };
    assert_eq!(seats("1.33"), [10, 1, 3]);
    assert_eq!(seats("1.34"), [37, 1, 3]);
    assert_eq!(seats("1.35"), [37, 10, 3]);
    assert_eq!(seats("1.36"), seats("1.35"));
    // Both seats and objects: refused, naming the field.
    let mut both = workload("1.36");
    both.streams[0].seats = 2;
    assert_eq!(
        both.check().unwrap_err().to_string(),
        "streams[0].objects: objects has the seats estimated: set objects or seats, not both"
    );
    let mut negative = workload("1.36");
    negative.streams[0].objects = Some(-1);
    assert_eq!(
        negative.check().unwrap_err().to_string(),
        "streams[0].objects: objects must not be negative"
    );
    let mut negative = workload("1.36");
    negative.streams[1].object_bytes = Some(i64::MIN);
    assert_eq!(
        negative.check().unwrap_err().to_string(),
        "streams[1].objectBytes: objectBytes must not be negative"
    );
    // Garbage in the query is read as kube-apiserver reads a query it cannot parse.
    let mut garbage = workload("1.36");
    garbage.streams[0].query = "limit=%zz&&resourceVersion=\u{0}".to_owned();
    garbage.check().unwrap();
    let report = simulate(
        Configuration::kubernetes_default(600).unwrap(),
        &garbage,
        1,
        |_| {},
    )
    .unwrap();
    assert!(report.streams[0].seats >= 1);
}
