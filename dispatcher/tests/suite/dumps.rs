//! kube-apiserver's `/debug/api_priority_and_fairness/dump_*` tables from a running guard
//! (`apf_controller_debug.go`): every queue of every level, and every request with its
//! flow, queue, place, times and, on request, who asked for what.

use std::time::Duration;

use apfkit_dispatcher::classify::Request;
use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::guard::Guard;
use apfkit_dispatcher::queueset::WorkEstimate;

use super::support::{fill, global_default};

fn request(user: &'static str) -> Request<'static> {
    Request {
        user,
        groups: &["system:authenticated"],
        verb: "list",
        is_resource_request: true,
        api_group: "apps",
        api_version: "v1",
        resource: "deployments",
        namespace: "default",
        ..Request::default()
    }
}

fn cells(line: &str) -> Vec<&str> {
    line.split(',').map(str::trim).collect()
}

#[tokio::test(start_paused = true)]
async fn queues_and_requests_are_dumped_with_their_flows_places_and_times() {
    let guard = Guard::with_wait_limit(
        Configuration::kubernetes_default(24).unwrap(),
        Duration::from_secs(5),
    );
    let (_, seats) = global_default(&guard);
    let permits = fill(&guard, seats).await;
    let limit = seats as usize;
    let bob = {
        let guard = guard.clone();
        tokio::spawn(async move {
            guard
                .acquire(&request("bob"), WorkEstimate::ONE_SEAT)
                .await
                .map(drop)
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;

    let queues = guard.inspect(|d| d.dump_queues());
    let mut lines = queues.lines();
    assert_eq!(
        cells(lines.next().unwrap()),
        [
            "PriorityLevelName",
            "Index",
            "PendingRequests",
            "ExecutingRequests",
            "SeatsInUse",
            "NextDispatchR",
            "InitialSeatsSum",
            "MaxSeatsSum",
            "TotalWorkSum"
        ]
    );
    let rows: Vec<Vec<&str>> = lines.map(cells).collect();
    let global: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "global-default").collect();
    assert_eq!(global.len(), 128, "one row per queue");
    assert!(
        rows.iter().all(|r| r[0] != "exempt"),
        "exempt has no queues"
    );
    let waiting: Vec<&&Vec<&str>> = global.iter().filter(|r| r[2] != "0").collect();
    assert_eq!(waiting.len(), 1, "{queues}");
    let bobs_queue = waiting[0][1];
    assert_eq!(
        &waiting[0][6..8],
        ["1", "1"],
        "initial and max seats waiting"
    );
    // Seat-seconds as upstream prints them: 8 decimals and `ss`.
    let work = waiting[0][8];
    assert!(
        work.ends_with("ss") && work.split('.').nth(1).unwrap().len() == 10,
        "{work}"
    );
    let executing: usize = global.iter().map(|r| r[3].parse::<usize>().unwrap()).sum();
    assert_eq!(executing, limit);

    let requests = guard.dump_requests(true);
    let mut lines = requests.lines();
    let header = cells(lines.next().unwrap());
    assert_eq!(header.len(), 18);
    assert_eq!(header[4], "FlowDistingsher", "upstream's spelling");
    let rows: Vec<Vec<&str>> = lines.map(cells).collect();
    assert_eq!(rows.len(), limit + 1);
    let bob_row = rows.iter().find(|r| r[4] == "bob").unwrap();
    assert_eq!(
        &bob_row[..5],
        ["global-default", "global-default", bobs_queue, "0", "bob"]
    );
    assert_eq!(&bob_row[6..9], ["1", "0", "0s"]);
    assert_eq!(bob_row[9], "0001-01-01T00:00:00Z", "not started");
    assert!(
        bob_row[5].ends_with('Z') && bob_row[5].starts_with("20"),
        "{}",
        bob_row[5]
    );
    assert_eq!(
        &bob_row[10..],
        [
            "bob",
            "list",
            "",
            "default",
            "",
            "apps/v1",
            "deployments",
            ""
        ]
    );
    let alice = rows.iter().find(|r| r[4] == "alice").unwrap();
    assert_eq!(
        alice[3], "-1",
        "executing requests have no place in their queue"
    );
    assert_ne!(alice[9], "0001-01-01T00:00:00Z");
    assert_eq!(
        guard
            .dump_requests(false)
            .lines()
            .next()
            .map(|l| cells(l).len()),
        Some(10)
    );

    // Bob's wait ends at its limit: one rejected and cancelled, as upstream counts it.
    assert!(bob.await.unwrap().is_err());
    let levels = guard.inspect(|d| d.dump_priority_levels());
    let row = levels
        .lines()
        .map(cells)
        .find(|r| r[0] == "global-default")
        .unwrap();
    assert_eq!(&row[6..], [limit.to_string().as_str(), "1", "0", "1"]);
    drop(permits);
    assert_eq!(
        guard.dump_requests(false).lines().count(),
        1,
        "only the header"
    );
}
