//! A new configuration put in place while requests wait and execute, as kube-apiserver's
//! configuration controller digests one (`apf_controller.go`: `digestConfigObjects`,
//! `processOldPLsLocked`, `finishQueueSetReconfigsLocked`): levels named again keep their
//! queues, removed levels quiesce until they drain and then go, and the levels that remain
//! share the server's concurrency with the quiescing ones meanwhile.

use std::time::Duration;

use apfkit_dispatcher::bootstrap;
use apfkit_dispatcher::classify::Request;
use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::dispatch::{ADJUSTMENT_PERIOD, Decision, Dispatcher, Ticket};
use apfkit_dispatcher::guard::{DEFAULT_WAIT_LIMIT, Guard};
use apfkit_dispatcher::queueset::WorkEstimate;
use apfkit_scheme::scheme::{HubObject, SCHEME, UnknownFields};
use serde_json::json;

use super::support::{fill, global_default, request};

const SERVER: i32 = 600;

fn alice() -> Request<'static> {
    request("alice")
}

/// The bootstrap objects plus, when `team` is set, a level `team` (shares 30) and a schema
/// sending alice's requests to it.
fn configuration(team: bool) -> Configuration {
    let mut levels = bootstrap::priority_levels().to_vec();
    let mut schemas = bootstrap::flow_schemas().to_vec();
    if team {
        let to_hub = |document| {
            SCHEME
                .to_hub_value(&document, UnknownFields::Strict)
                .unwrap()
                .0
                .remove(0)
        };
        let HubObject::PriorityLevelConfiguration(level) = to_hub(json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": "team"},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 30,
                "limitResponse": {"type": "Queue", "queuing": {}}}}}))
        else {
            unreachable!()
        };
        let HubObject::FlowSchema(schema) = to_hub(json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "team"},
            "spec": {"priorityLevelConfiguration": {"name": "team"}, "matchingPrecedence": 500,
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [{"subjects": [{"kind": "User", "user": {"name": "alice"}}],
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                        "namespaces": ["*"]}]}]}}))
        else {
            unreachable!()
        };
        levels.push(level);
        schemas.push(schema);
    }
    Configuration::new(levels, schemas, SERVER).unwrap()
}

fn executes(dispatcher: &mut Dispatcher, now: Duration) -> Ticket {
    match dispatcher
        .admit(now, &alice(), WorkEstimate::ONE_SEAT)
        .unwrap()
        .decision
    {
        Decision::Execute(ticket) => ticket,
        other => panic!("expected to execute, got {other:?}"),
    }
}

fn configured(dispatcher: &Dispatcher) -> Vec<String> {
    dispatcher
        .configured_levels()
        .map(|(_, level)| level.name.clone())
        .collect()
}

fn nominal(dispatcher: &Dispatcher, name: &str) -> i64 {
    let index = dispatcher.level_index(name).unwrap();
    dispatcher.level(index).limits.nominal
}

#[test]
fn a_removed_level_quiesces_while_its_requests_run_then_goes() {
    let start = Duration::ZERO;
    let mut dispatcher = Dispatcher::new(configuration(true), start);
    let ticket = executes(&mut dispatcher, start);
    let team = dispatcher.level_index("team").unwrap();
    assert_eq!(ticket.level, team);

    // The level and its schema are deleted while alice's request runs.
    let later = start + Duration::from_secs(1);
    dispatcher.reconfigure(later, configuration(false));
    assert_eq!(dispatcher.level_index("team"), Some(team), "held over");
    assert!(dispatcher.level(team).quiescing);
    let dump = dispatcher.dump_priority_levels();
    let row = dump.lines().find(|l| l.starts_with("team,")).unwrap();
    let cells: Vec<&str> = row.split(',').map(str::trim).collect();
    assert_eq!(
        cells,
        ["team", "0", "false", "true", "0", "1", "1", "0", "0", "0"],
        "{dump}"
    );
    // Meanwhile its shares still count: global-default's nominal limit is below the one of
    // a server without the level.
    let without = Dispatcher::new(configuration(false), start);
    assert!(nominal(&dispatcher, "global-default") < nominal(&without, "global-default"));
    // Alice's next request is classified by the new schemas.
    let next = executes(&mut dispatcher, later);
    assert_eq!(dispatcher.level(next.level).name, "global-default");

    // Its request ends; the next periodic adjustment removes the drained level.
    dispatcher.finish(later, ticket);
    dispatcher.finish(later, next);
    dispatcher.tick(start + ADJUSTMENT_PERIOD);
    assert_eq!(dispatcher.level_index("team"), None);
    assert!(!configured(&dispatcher).contains(&"team".to_owned()));
    assert!(dispatcher.level(team).is_retired());
    assert_eq!(
        nominal(&dispatcher, "global-default"),
        nominal(&without, "global-default")
    );
    assert!(!dispatcher.dump_priority_levels().contains("team"));

    // Created again, the level takes the retired slot.
    dispatcher.reconfigure(start + ADJUSTMENT_PERIOD, configuration(true));
    assert_eq!(dispatcher.level_index("team"), Some(team));
    assert!(!dispatcher.level(team).quiescing);
    assert!(dispatcher.level(team).queue_set.is_idle());
}

#[test]
fn an_idle_removed_level_goes_at_once_and_a_quiescing_level_named_again_revives() {
    let start = Duration::ZERO;
    let mut dispatcher = Dispatcher::new(configuration(true), start);
    dispatcher.reconfigure(start, configuration(false));
    assert_eq!(dispatcher.level_index("team"), None, "idle: not held over");

    let mut dispatcher = Dispatcher::new(configuration(true), start);
    let ticket = executes(&mut dispatcher, start);
    dispatcher.reconfigure(start, configuration(false));
    assert!(dispatcher.level(ticket.level).quiescing);
    dispatcher.reconfigure(start, configuration(true));
    assert_eq!(dispatcher.level_index("team"), Some(ticket.level));
    assert!(!dispatcher.level(ticket.level).quiescing, "desired again");
    assert_eq!(dispatcher.level(ticket.level).queue_set.executing(), 1);
    dispatcher.finish(start, ticket);
    assert!(dispatcher.level(ticket.level).queue_set.is_idle());
}

/// Through the async guard: requests queued before a new configuration stay in their
/// queues (the level is named again; the adjustment that follows may lend it seats and start
/// some), none is lost or rejected, and every one runs as seats free.
#[tokio::test(start_paused = true)]
async fn queued_requests_keep_their_place_across_a_new_configuration() {
    let guard = Guard::with_wait_limit(
        Configuration::kubernetes_default(24).unwrap(),
        DEFAULT_WAIT_LIMIT,
    );
    let (level, limit) = global_default(&guard);
    let permits = fill(&guard, limit).await;
    const USERS: [&str; 40] = [
        "u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8", "u9", "u10", "u11", "u12", "u13",
        "u14", "u15", "u16", "u17", "u18", "u19", "u20", "u21", "u22", "u23", "u24", "u25", "u26",
        "u27", "u28", "u29", "u30", "u31", "u32", "u33", "u34", "u35", "u36", "u37", "u38", "u39",
    ];
    let (done, mut finished) = tokio::sync::mpsc::unbounded_channel();
    for user in USERS {
        let guard = guard.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let request = Request { user, ..alice() };
            let permit = guard.acquire(&request, WorkEstimate::ONE_SEAT).await;
            // Each holds its seat a moment, so that the others have to wait for seats.
            tokio::time::sleep(Duration::from_millis(10)).await;
            let _ = done.send(permit.is_ok());
        });
    }
    drop(done);
    tokio::time::sleep(Duration::from_millis(1)).await;
    let load = |guard: &Guard| {
        guard.inspect(|d| {
            let set = &d.level(level).queue_set;
            (set.waiting(), set.executing())
        })
    };
    assert_eq!(load(&guard), (USERS.len(), limit as usize));
    guard.reconfigure(Configuration::kubernetes_default(24).unwrap());
    assert_eq!(
        guard.inspect(|d| d.level_index("global-default")),
        Some(level)
    );
    let (waiting, executing) = load(&guard);
    assert_eq!(
        waiting + executing,
        USERS.len() + limit as usize,
        "no request lost"
    );
    assert!(waiting > 0, "some still queued: {waiting}");
    drop(permits);
    let mut ran = 0;
    while let Some(ok) = finished.recv().await {
        assert!(ok, "every queued request ran");
        ran += 1;
    }
    assert_eq!(ran, USERS.len());
    assert!(guard.inspect(|d| d.level(level).queue_set.is_idle()));
}
