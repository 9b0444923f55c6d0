//! Rejection (`filters/priority-and-fairness.go`): upstream's TestDroppedRequestsTracker table, level independence, headers.

use apfkit_dispatcher::rejection::{RetryAfterTracker, headers};

#[test]
fn dropped_requests_tracker_upstream() {
    let start = 1_700_000_000;
    let table = [
        (0, 5, 1),
        (1, 11, 2),
        (2, 1, 2),
        (3, 11, 4),
        (4, 1, 4),
        (7, 1, 8),
        (11, 1, 8),
        (15, 1, 7),
        (17, 1, 6),
        (21, 14, 5),
        (22, 1, 10),
    ];
    let mut tracker = RetryAfterTracker::new();
    for (elapsed, drops, expected) in table {
        for _ in 0..drops {
            tracker.record_dropped("pl", start + elapsed);
        }
        assert_eq!(
            tracker.retry_after("pl"),
            expected,
            "after {drops} drops at +{elapsed}s"
        );
    }
}

#[test]
fn levels_are_independent_and_start_at_one() {
    let mut tracker = RetryAfterTracker::new();
    assert_eq!(tracker.retry_after("a"), 1);
    for second in 0..3 {
        for _ in 0..20 {
            tracker.record_dropped("a", 100 + second);
        }
    }
    assert!(tracker.retry_after("a") > 1);
    assert_eq!(tracker.retry_after("b"), 1);
    tracker.record_dropped("b", 102);
    assert_eq!(tracker.retry_after("b"), 1);
}

#[test]
fn retry_after_is_capped_at_32() {
    let mut tracker = RetryAfterTracker::new();
    for second in 0..400 {
        for _ in 0..200 {
            tracker.record_dropped("busy", second);
        }
    }
    assert_eq!(tracker.retry_after("busy"), 32);
}

#[test]
fn headers_and_body() {
    assert_eq!(
        headers("pl-uid", ""),
        [
            ("X-Kubernetes-PF-PriorityLevel-UID", "pl-uid"),
            ("X-Kubernetes-PF-FlowSchema-UID", "")
        ]
    );
    let refused: http::Response<bytes::Bytes> = apfkit_https::answers::too_many_requests(1);
    assert_eq!(
        refused.body(),
        "Too many requests, please try again later.\n"
    );
}
