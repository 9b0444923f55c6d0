//! The work estimator (`request/width.go`): upstream's `Test_GetMaxSeats`, the list-cost vectors of
//! `width_test.go`, the watch rules and the mutating estimator's examples.

use std::time::Duration;

use apfkit_dispatcher::classify::Request;
use apfkit_dispatcher::estimate::{Estimator, EstimatorConfig, ObjectCount, Observed, max_seats};
use apfkit_dispatcher::queueset::WorkEstimate;

fn events(verb: &'static str) -> Request<'static> {
    Request {
        verb,
        is_resource_request: true,
        resource: "events",
        ..Request::default()
    }
}

fn known(count: i64) -> Observed {
    Observed {
        objects: ObjectCount::Known {
            count,
            average_size: 10_000,
        },
        watchers: 0,
    }
}

fn seats(request: &Request<'_>, query: &str, observed: &Observed) -> u64 {
    Estimator::default()
        .estimate(request, query, observed, 100)
        .initial_seats
}

#[test]
fn level_max_seats() {
    let vectors = [
        ((5, 6), 1),
        ((10, 6), 1),
        ((15, 6), 2),
        ((20, 6), 3),
        ((35, 6), 5),
        ((100, 6), 15),
        ((200, 6), 30),
        ((10, 1), 2),
        ((100, 20), 5),
    ];
    for ((nominal, hand), expected) in vectors {
        assert_eq!(max_seats(nominal, hand), expected, "({nominal}, {hand})");
    }
}

#[test]
fn size_based_list_costs() {
    let list = events("list");
    assert_eq!(seats(&list, "limit=399&resourceVersion=1", &known(699)), 40);
    assert_eq!(
        seats(&list, "resourceVersion=1", &known(699)),
        10,
        "cache, 1 MB cap"
    );
    assert_eq!(seats(&list, "resourceVersion=1", &known(69)), 7);
    assert_eq!(seats(&list, "limit=399", &known(699)), 40);
    assert_eq!(seats(&list, "", &known(399)), 40);
    assert_eq!(seats(&list, "", &Observed::default()), 1, "count unknown");
    assert_eq!(
        seats(&list, "limit=invalid", &known(399)),
        100,
        "conversion error"
    );
    // One named object; and stale statistics assume a billion objects of 1.5 MB.
    let named = Request {
        name: "one",
        ..events("list")
    };
    assert_eq!(seats(&named, "", &known(699)), 1);
    let stale = Observed {
        objects: ObjectCount::Stale,
        watchers: 0,
    };
    assert_eq!(seats(&list, "", &stale), 100);
    // A level's cap below the estimator's limit wins.
    let estimate = Estimator::default().estimate(&list, "", &known(399), 15);
    assert_eq!(estimate.initial_seats, 15);
}

#[test]
fn count_based_list_costs_when_the_gate_is_off() {
    let estimator = Estimator {
        config: EstimatorConfig {
            size_based_list_cost: false,
            maximum_list_seats: 10,
            ..EstimatorConfig::default()
        },
    };
    let list = events("list");
    // From storage without a selector: 2 × limited objects, 100 per seat.
    assert_eq!(
        estimator
            .estimate(&list, "limit=150&resourceVersion=1", &known(699), 0)
            .initial_seats,
        3
    );
    // From the cache: every object counts; capped at the global limit 10.
    assert_eq!(
        estimator
            .estimate(&list, "resourceVersion=0", &known(699), 0)
            .initial_seats,
        7
    );
    assert_eq!(
        estimator
            .estimate(&list, "resourceVersion=0", &known(5000), 0)
            .initial_seats,
        10
    );
}

#[test]
fn watches_are_cheap_unless_they_ask_for_initial_events_or_are_legacy() {
    let watch = events("watch");
    assert_eq!(seats(&watch, "resourceVersion=12", &known(699)), 1);
    assert_eq!(
        seats(
            &watch,
            "resourceVersion=12&sendInitialEvents=true",
            &known(69)
        ),
        7
    );
    assert_eq!(
        seats(&watch, "resourceVersion=0", &known(699)),
        10,
        "legacy: from the cache"
    );
    // Without the WatchList gate, a watch is one seat.
    let estimator = Estimator {
        config: EstimatorConfig {
            watch_list: false,
            ..EstimatorConfig::default()
        },
    };
    assert_eq!(
        estimator.estimate(&watch, "", &known(699), 100),
        WorkEstimate {
            initial_seats: 1,
            final_seats: 0,
            additional_latency: Duration::ZERO,
        }
    );
}

/// kubernetes-1.35.0 costs a legacy watch (`resourceVersion` unset or `0`) like a list;
/// kubernetes-1.34.0's list estimator gave it one seat unless it asked for initial events.
#[test]
fn a_legacy_watch_costs_initial_events_from_1_35_on() {
    use apfkit_dispatcher::release::Release;
    let watch = events("watch");
    let at = |release: &str, query: &str| {
        let estimator = Estimator {
            config: Release::parse(release).unwrap().estimator_config(),
        };
        estimator
            .estimate(&watch, query, &known(699), 0)
            .initial_seats
    };
    assert_eq!(at("1.34", "resourceVersion=0"), 1);
    assert_eq!(at("1.35", "resourceVersion=0"), 10);
    assert_eq!(at("1.36", ""), at("1.35", ""));
    // Asking for initial events costs in both.
    let asked = "resourceVersion=12&sendInitialEvents=true";
    assert_eq!(at("1.34", asked), at("1.35", asked));
    assert!(at("1.34", asked) > 1);
    // 1.33: WatchList off, every watch one seat.
    assert_eq!(at("1.33", asked), 1);
}

#[test]
fn other_verbs_take_one_seat() {
    for verb in ["get", "deletecollection", "proxy", "post"] {
        assert_eq!(seats(&events(verb), "", &known(10_000)), 1, "{verb}");
    }
}

#[test]
fn mutations_linger_for_interested_watches() {
    let estimator = Estimator::default();
    let create = events("create");
    let with_watchers = |watchers| Observed {
        objects: ObjectCount::Untracked,
        watchers,
    };
    assert_eq!(
        estimator.estimate(&create, "", &with_watchers(9), 0),
        WorkEstimate {
            initial_seats: 1,
            final_seats: 0,
            additional_latency: Duration::ZERO,
        }
    );
    assert_eq!(
        estimator.estimate(&create, "", &with_watchers(25), 0),
        WorkEstimate {
            initial_seats: 1,
            final_seats: 3,
            additional_latency: Duration::from_millis(5),
        }
    );
    // 250 watches would be 25 seats: capped at 10, the same work lasts 12.5 ms.
    assert_eq!(
        estimator.estimate(&create, "", &with_watchers(250), 0),
        WorkEstimate {
            initial_seats: 1,
            final_seats: 10,
            additional_latency: Duration::from_micros(12_500),
        }
    );
    // A level cap of 5 applies too.
    assert_eq!(
        estimator
            .estimate(&create, "", &with_watchers(250), 5)
            .final_seats,
        5
    );
    let token = Request {
        resource: "serviceaccounts",
        subresource: "token",
        ..events("create")
    };
    assert_eq!(
        estimator
            .estimate(&token, "", &with_watchers(250), 0)
            .final_seats,
        0
    );
}
