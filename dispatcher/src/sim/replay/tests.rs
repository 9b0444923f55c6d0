use std::time::Duration;

use super::*;

const AUTHENTICATED: &[&str] = &["system:authenticated"];

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A request received at `received` that took `service` to serve and was logged when done.
fn request(
    user: &str,
    groups: &[&str],
    verb: &str,
    received: Duration,
    service: Duration,
) -> TracedRequest {
    let mut request = TracedRequest::resource(user, groups, verb, "", "configmaps");
    request.namespace = "default".to_owned();
    request.received = received;
    request.logged = received + service;
    request.service = service;
    request
}

fn default_config(limit: i32) -> Configuration {
    Configuration::kubernetes_default(limit).unwrap()
}

fn replay_all(
    in_force: i32,
    proposed: i32,
    requests: &[TracedRequest],
    options: ReplayOptions,
) -> ReplayReport {
    let mut replay = Replay::new(default_config(in_force), default_config(proposed), options);
    for request in requests {
        replay.push(request).unwrap();
    }
    replay.finish()
}

/// One user's one-second lists, 40 a second for 10 s (40 seats at once: global-default has
/// 49 at 600 seats, 1 at 12), and a kubelet's gets beside them.
fn flood() -> Vec<TracedRequest> {
    let mut requests = Vec::new();
    for i in 0..400 {
        let at = ms(1_000 + i * 25);
        requests.push(request("ci-bot", AUTHENTICATED, "list", at, ms(1_000)));
        if i % 10 == 0 {
            requests.push(request(
                "system:node:n1",
                &["system:nodes", "system:authenticated"],
                "get",
                at,
                ms(5),
            ));
        }
    }
    // The log is in completion order.
    requests.sort_by_key(|r| r.logged);
    requests
}

#[test]
fn enough_seats_queue_no_one_and_every_request_is_replayed_once() {
    let requests = flood();
    let report = replay_all(600, 600, &requests, ReplayOptions::default());
    assert_eq!(report.requests, requests.len() as u64);
    assert_eq!(report.late, 0);
    assert!(report.users.is_empty(), "{:?}", report.users);
    let executed: u64 = report
        .in_force
        .priority_levels
        .iter()
        .map(|l| l.figures.executed)
        .sum();
    assert_eq!(executed, requests.len() as u64);
    assert_eq!(
        (report.in_force.left_over, report.proposed.left_over),
        (0, 0)
    );
    // From the first arrival (1 s) to the last completion (1 s + 399 × 25 ms + 1 s).
    assert!((report.seconds - 10.975).abs() < 1e-9, "{}", report.seconds);
    let schema = |name: &str| {
        report
            .in_force
            .flow_schemas
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} in {:?}", report.in_force.flow_schemas))
    };
    assert_eq!(schema("global-default").figures.executed, 400);
    assert_eq!(schema("system-nodes").figures.executed, 40);
    assert_eq!(schema("system-nodes").priority_level, "system");
}

#[test]
fn a_smaller_proposal_queues_and_rejects_the_flooding_user_only() {
    let report = replay_all(600, 12, &flood(), ReplayOptions::default());
    assert_eq!(report.users.len(), 1, "{:?}", report.users);
    let bot = &report.users[0];
    assert_eq!(bot.user, "ci-bot");
    assert_eq!((bot.in_force.queued, bot.in_force.rejected.total()), (0, 0));
    assert!(
        bot.proposed.queued > 0 && bot.proposed.rejected.total() > 0,
        "{bot:?}"
    );
    assert_eq!(bot.proposed.flow_schemas, ["global-default"]);
    assert!(bot.proposed.wait_max_ms >= bot.proposed.wait_mean_ms);
    let level = |side: &SideReport, name: &str| {
        side.priority_levels
            .iter()
            .find(|l| l.name == name)
            .unwrap()
            .figures
            .clone()
    };
    let proposed = level(&report.proposed, "global-default");
    assert_eq!(
        proposed.executed + proposed.rejected.total(),
        400,
        "every list executed or was rejected"
    );
    assert_eq!(level(&report.proposed, "system").rejected.total(), 0);
    let text = report.to_text();
    assert!(text.contains("ci-bot"), "{text}");
    assert!(text.contains("global-default"), "{text}");
}

#[test]
fn requests_logged_in_completion_order_replay_in_arrival_order() {
    let mut by_arrival = flood();
    by_arrival.sort_by_key(|r| r.received);
    let logged = flood();
    assert_ne!(
        by_arrival, logged,
        "the flood's log order is not its arrival order"
    );
    let options = ReplayOptions::default();
    assert_eq!(
        replay_all(600, 12, &logged, options),
        replay_all(600, 12, &by_arrival, options)
    );
}

#[test]
fn a_request_logged_past_the_reorder_window_is_replayed_late_and_counted() {
    let options = ReplayOptions {
        reorder_window: Duration::from_secs(1),
        ..ReplayOptions::default()
    };
    let requests = [
        request("a", AUTHENTICATED, "get", ms(0), ms(1)),
        request("a", AUTHENTICATED, "get", ms(10_000), ms(1)),
        request("a", AUTHENTICATED, "get", ms(12_000), ms(1)),
        // Received 5 s before the log's position, which is past the window.
        request("a", AUTHENTICATED, "get", ms(7_000), ms(1)),
    ];
    let report = replay_all(600, 600, &requests, options);
    assert_eq!((report.requests, report.late), (4, 1));
}

#[test]
fn the_reorder_buffer_is_bounded() {
    let options = ReplayOptions {
        max_pending: 10,
        ..ReplayOptions::default()
    };
    let mut replay = Replay::new(default_config(600), default_config(600), options);
    for i in 0..1_000 {
        // All within the reorder window, so none would be replayed for the window alone.
        replay
            .push(&request("a", AUTHENTICATED, "get", ms(i), ms(1)))
            .unwrap();
        assert!(replay.pending.len() <= 10, "{}", replay.pending.len());
    }
    let report = replay.finish();
    assert_eq!((report.requests, report.late), (1_000, 0));
}

#[test]
fn users_past_the_limit_share_one_row() {
    let mut replay = Replay::new(
        default_config(600),
        default_config(600),
        ReplayOptions::default(),
    );
    for i in 0..MAX_USERS {
        assert_eq!(replay.user(&format!("user-{i}")) as usize, i);
    }
    let first = replay.user("one-too-many");
    assert_eq!(replay.user("another"), first);
    assert_eq!(replay.user("user-7"), 7);
    assert_eq!(
        replay.user_names.last().map(String::as_str),
        Some(OTHER_USERS)
    );
    assert_eq!(replay.user_names.len(), MAX_USERS + 1);
}

#[test]
fn the_same_log_gives_the_same_report() {
    let requests = flood();
    let options = ReplayOptions::default();
    let first = replay_all(600, 8, &requests, options);
    assert_eq!(first, replay_all(600, 8, &requests, options));
    assert_eq!(
        serde_json::to_string(&first).unwrap(),
        serde_json::to_string(&replay_all(600, 8, &requests, options)).unwrap()
    );
}

#[test]
fn a_request_holds_its_recorded_seats() {
    // Two requests of 3 seats each cannot both execute in global-default's 5 seats (the
    // default configuration at 60 seats: 60 × 20 / 245 shares, rounded up).
    let mut requests = Vec::new();
    for i in 0..2 {
        let mut heavy = request("heavy", AUTHENTICATED, "list", ms(1_000 + i), ms(1_000));
        heavy.seats = 3;
        requests.push(heavy);
    }
    let light = |seats| {
        let mut requests = requests.clone();
        for r in &mut requests {
            r.seats = seats;
        }
        requests
    };
    let report = replay_all(60, 60, &light(3), ReplayOptions::default());
    let limit = |report: &ReplayReport| {
        let level = report
            .proposed
            .priority_levels
            .iter()
            .find(|l| l.name == "global-default");
        level.map(|l| l.nominal_cl)
    };
    assert_eq!(limit(&report), Some(5));
    let heavy = report.users.iter().find(|u| u.user == "heavy");
    assert!(
        heavy.is_some_and(|u| u.proposed.queued == 1),
        "{:?}",
        report.users
    );
    let report = replay_all(60, 60, &light(1), ReplayOptions::default());
    assert!(report.users.is_empty(), "{:?}", report.users);
}

#[test]
fn utilization_is_seat_seconds_used_over_seat_seconds_offered() {
    // Two one-second lists at once through global-default (no adjustment within the second,
    // so its limit stays as configured): 2 seats over 1 s of that limit.
    let requests = [
        request("a", AUTHENTICATED, "list", ms(0), ms(1_000)),
        request("b", AUTHENTICATED, "list", ms(0), ms(1_000)),
    ];
    let report = replay_all(600, 600, &requests, ReplayOptions::default());
    let level = report
        .in_force
        .priority_levels
        .iter()
        .find(|l| l.name == "global-default")
        .unwrap();
    assert!((report.seconds - 1.0).abs() < 1e-9);
    assert!(
        (level.figures.average_seats - 2.0).abs() < 1e-9,
        "{level:?}"
    );
    let limit = level.current_cl as f64;
    assert!(limit >= 49.0, "{level:?}");
    assert!((level.average_limit - limit).abs() < 1e-9, "{level:?}");
    assert!(
        (level.utilization.unwrap() - 2.0 / limit).abs() < 1e-9,
        "{level:?}"
    );
    let exempt = report
        .in_force
        .priority_levels
        .iter()
        .find(|l| l.name == "exempt")
        .unwrap();
    assert_eq!(exempt.utilization, None, "an exempt level offers no seats");
}

/// A log's times are held to a day, so that a hostile timestamp (a year 9999) cannot make the
/// simulated clock run for millennia of borrowing adjustments (found by fuzzing).
#[test]
fn times_beyond_a_day_are_refused_and_the_replay_ends_at_once() {
    let mut replay = Replay::new(
        default_config(600),
        default_config(600),
        ReplayOptions::default(),
    );
    replay
        .push(&request("a", AUTHENTICATED, "get", ms(0), ms(1)))
        .unwrap();
    let far = request("a", AUTHENTICATED, "get", MAX_SPAN + ms(1), ms(1));
    assert_eq!(
        replay.push(&far).unwrap_err().to_string(),
        "it was received more than 24 h after the log's first request"
    );
    let mut slow = request("a", AUTHENTICATED, "get", ms(10), ms(1));
    slow.logged = Duration::from_secs(253_402_300_799); // 9999-12-31T23:59:59Z
    assert_eq!(
        replay.push(&slow).unwrap_err().to_string(),
        "it took more than 24 h (its stageTimestamp is that far after its arrival)"
    );
    let started = std::time::Instant::now();
    let report = replay.finish();
    assert_eq!(report.requests, 1);
    assert!(report.seconds < 1.0, "{}", report.seconds);
    assert!(started.elapsed() < Duration::from_secs(5));
}
