//! The queue set: a worked example of virtual-time bookkeeping step by step, the three kinds of
//! level, queue-length rejection, cancellation, lingering seats, and the rotated queue choice.

use std::time::Duration;

use super::{Arrival, QueueSet, QueueSetConfig, RejectReason, WorkEstimate};
use crate::seat_seconds::SeatSeconds;
use crate::shuffle::Dealer;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn admitted(arrival: Arrival) -> (u64, Vec<u64>) {
    match arrival {
        Arrival::Admitted { id, dispatched } => (id, dispatched),
        Arrival::Rejected(reason) => panic!("rejected: {reason:?}"),
    }
}

fn queuing(queues: i32, hand: i32, limit: usize) -> QueueSetConfig {
    QueueSetConfig::Queue {
        dealer: Dealer::new(queues, hand).unwrap(),
        queue_length_limit: limit,
    }
}

#[test]
fn worked_example_5_12() {
    // CL 1, two queues, hand 1: flow A (hash 0) lands in q0, flow B (hash 1) in q1.
    let mut set = QueueSet::new(queuing(2, 1, 10), 1, ms(0));
    let (a1, dispatched) = admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT));
    assert_eq!(dispatched, [a1]);
    assert_eq!(set.queue_virtual_start(0), Some(SeatSeconds(300_000)));
    assert_eq!(set.seats_in_use(), 1);
    let (a2, dispatched) = admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT));
    assert!(dispatched.is_empty());
    let (b1, dispatched) = admitted(set.start(ms(0), 1, WorkEstimate::ONE_SEAT));
    assert!(dispatched.is_empty());
    assert_eq!(set.queue_virtual_start(1), Some(SeatSeconds(0)));

    // t = 10 ms: A1 finishes; R = 0.5 × 10 ms = 500,000; S0 = 300,000 − (300,000 − 1,000,000).
    let (linger, dispatched) = set.finish(ms(10), a1);
    assert_eq!(linger, None);
    assert_eq!(set.virtual_time(), SeatSeconds(500_000));
    assert_eq!(set.queue_virtual_start(0), Some(SeatSeconds(1_000_000)));
    // F(q0) = 1,300,000 > F(q1) = 300,000: the newcomer B1 goes first.
    assert_eq!(dispatched, [b1]);
    assert_eq!(set.queue_virtual_start(1), Some(SeatSeconds(300_000)));

    // t = 20 ms: B1 finishes; R = 1,000,000; S1 = 1,000,000; A2 is dispatched, S0 = 1,300,000.
    let (_, dispatched) = set.finish(ms(20), b1);
    assert_eq!(set.virtual_time(), SeatSeconds(1_000_000));
    assert_eq!(set.queue_virtual_start(1), Some(SeatSeconds(1_000_000)));
    assert_eq!(dispatched, [a2]);
    assert_eq!(set.queue_virtual_start(0), Some(SeatSeconds(1_300_000)));
    set.finish(ms(30), a2);
    assert_eq!(
        (
            set.executing(),
            set.waiting(),
            set.seats_in_use(),
            set.seat_demand()
        ),
        (0, 0, 0, 0)
    );
}

#[test]
fn exempt_levels_run_everything_and_count_seats() {
    let mut set = QueueSet::new(QueueSetConfig::Exempt, 0, ms(0));
    for _ in 0..5 {
        let (id, dispatched) = admitted(set.start(ms(0), 7, WorkEstimate::ONE_SEAT));
        assert_eq!(dispatched, [id]);
    }
    assert_eq!(set.seats_in_use(), 5);
}

#[test]
fn reject_levels_admit_what_fits_now() {
    let mut set = QueueSet::new(QueueSetConfig::Reject, 2, ms(0));
    let (first, _) = admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT));
    admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT));
    assert_eq!(
        set.start(ms(0), 0, WorkEstimate::ONE_SEAT),
        Arrival::Rejected(RejectReason::ConcurrencyLimit)
    );
    set.finish(ms(1), first);
    admitted(set.start(ms(1), 0, WorkEstimate::ONE_SEAT));
    // Wider than the limit: admitted only while nothing executes.
    let mut idle = QueueSet::new(QueueSetConfig::Reject, 2, ms(0));
    let wide = WorkEstimate {
        initial_seats: 5,
        ..WorkEstimate::ONE_SEAT
    };
    let (id, _) = admitted(idle.start(ms(0), 0, wide));
    assert_eq!(idle.seats_in_use(), 5);
    assert_eq!(
        idle.start(ms(0), 0, WorkEstimate::ONE_SEAT),
        Arrival::Rejected(RejectReason::ConcurrencyLimit)
    );
    idle.finish(ms(1), id);
}

#[test]
fn full_queues_reject_only_while_the_level_is_full() {
    // One queue, limit 2, CL 1.
    let mut set = QueueSet::new(queuing(1, 1, 2), 1, ms(0));
    admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT)); // executing
    admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT)); // waiting 1
    admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT)); // waiting 2
    assert_eq!(
        set.start(ms(0), 0, WorkEstimate::ONE_SEAT),
        Arrival::Rejected(RejectReason::QueueFull)
    );
    assert_eq!(RejectReason::QueueFull.as_str(), "queue-full");
    // With free seats a full queue does not reject: raise CL to 5 (dispatches the two waiting).
    let dispatched = set.set_concurrency_limit(ms(1), 5);
    assert_eq!(dispatched.len(), 2);
    assert_eq!(set.waiting(), 0);
}

#[test]
fn cancellation_removes_a_waiting_request() {
    let mut set = QueueSet::new(queuing(1, 1, 10), 1, ms(0));
    let (running, _) = admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT));
    let (waiting, _) = admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT));
    assert_eq!(set.seat_demand(), 2);
    assert!(set.cancel(ms(5), waiting));
    assert!(!set.cancel(ms(5), waiting), "only once");
    assert!(
        !set.cancel(ms(5), running),
        "an executing request is not cancelled"
    );
    assert_eq!((set.waiting(), set.seat_demand()), (0, 1));
    let (_, dispatched) = set.finish(ms(6), running);
    assert!(dispatched.is_empty());
}

#[test]
fn lingering_seats_hold_until_released() {
    let mut set = QueueSet::new(queuing(1, 1, 10), 2, ms(0));
    let lingering = WorkEstimate {
        initial_seats: 1,
        final_seats: 2,
        additional_latency: ms(50),
    };
    let (first, _) = admitted(set.start(ms(0), 0, lingering));
    let (second, dispatched) = admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT));
    assert!(dispatched.is_empty(), "the first holds both seats");
    let (release_at, dispatched) = set.finish(ms(10), first);
    assert_eq!(release_at, Some(ms(60)));
    assert!(dispatched.is_empty(), "seats still lingering");
    assert_eq!(set.seats_in_use(), 2);
    assert_eq!(set.release(ms(60), first), [second]);
}

#[test]
fn rotated_queue_choice_4_2() {
    // (global-default, alice) deals [55, 62, 126, 125, 105, 1]; with enqueues = 7 the visit
    // order is 62, 126, 125, 105, 1, 55 and all queues are empty, so queue 62 is chosen.
    let hash = crate::flow::flow_hash("global-default", "alice");
    assert_eq!(
        Dealer::new(128, 6).unwrap().deal_into_hand(hash),
        [55, 62, 126, 125, 105, 1]
    );
    let mut set = QueueSet::new(queuing(128, 6, 50), 0, ms(0));
    // Seven arrivals of another flow, cancelled at once, advance the enqueue counter to 7.
    for _ in 0..7 {
        let (id, _) = admitted(set.start(ms(0), 3, WorkEstimate::ONE_SEAT));
        assert!(set.cancel(ms(0), id));
    }
    let (first, dispatched) = admitted(set.start(ms(0), hash, WorkEstimate::ONE_SEAT));
    assert!(dispatched.is_empty(), "CL 0 dispatches nothing");
    assert_eq!(set.queue_of(first), Some(62));
    // Next, offset 8 mod 6 = 2: the visit order is 126, 125, 105, 1, 55, 62; 62 is no longer
    // empty, and among the empty ones the first visited wins.
    let (second, _) = admitted(set.start(ms(0), hash, WorkEstimate::ONE_SEAT));
    assert_eq!(set.queue_of(second), Some(126));
}

#[test]
fn reconfiguration_adds_queues_at_once_and_removes_surplus_ones_when_they_empty() {
    let mut set = QueueSet::new(queuing(2, 1, 10), 1, ms(0));
    set.reconfigure(ms(0), queuing(4, 1, 10));
    assert_eq!(set.queues().len(), 4);
    // With hand size 1, hash 3 always lands in queue 3.
    let (first, _) = admitted(set.start(ms(0), 3, WorkEstimate::ONE_SEAT));
    let (second, _) = admitted(set.start(ms(0), 3, WorkEstimate::ONE_SEAT));
    assert_eq!(set.queue_of(second), Some(3));
    set.reconfigure(ms(1), queuing(2, 1, 10));
    assert_eq!(set.queues().len(), 4, "surplus queues drain first");
    let (_, dispatched) = set.finish(ms(2), first);
    assert_eq!(dispatched, [second]);
    assert_eq!(
        set.queues().len(),
        4,
        "queue 3 still has an executing request"
    );
    set.finish(ms(3), second);
    // Queue 3 emptied and is removed; the empty surplus queue 2 stays until a request of its
    // own finishes, as upstream.
    assert_eq!(set.queues().len(), 3);
    // New arrivals are dealt only from the new, smaller deck.
    let (third, _) = admitted(set.start(ms(4), 3, WorkEstimate::ONE_SEAT));
    assert_eq!(set.queue_of(third), Some(1));
}

#[test]
fn switching_to_reject_drains_queued_requests_and_rejects_new_ones_when_full() {
    let mut set = QueueSet::new(queuing(2, 1, 10), 1, ms(0));
    let (first, _) = admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT));
    let (queued, _) = admitted(set.start(ms(0), 0, WorkEstimate::ONE_SEAT));
    set.reconfigure(ms(1), QueueSetConfig::Reject);
    assert_eq!(
        set.start(ms(1), 0, WorkEstimate::ONE_SEAT),
        Arrival::Rejected(RejectReason::ConcurrencyLimit)
    );
    let (_, dispatched) = set.finish(ms(2), first);
    assert_eq!(dispatched, [queued], "the queued request still drains");
    set.finish(ms(3), queued);
    assert!(set.is_idle());
    assert_eq!(set.queues().len(), 1, "the queue it used is gone");
}

#[test]
fn raising_the_limit_dispatches_and_a_zero_limit_strands_waiting_requests() {
    let mut set = QueueSet::new(queuing(4, 2, 10), 0, ms(0));
    let (waiting, dispatched) = admitted(set.start(ms(0), 9, WorkEstimate::ONE_SEAT));
    assert!(dispatched.is_empty(), "quirk Q7: CL 0 dispatches nothing");
    assert_eq!(set.set_concurrency_limit(ms(5), 1), [waiting]);
}

#[test]
fn context_cancel() {
    // Upstream's TestContextCancel, sans IO: with CL 1, request 2 waits while request 1
    // executes; its wait ends after 1 s, it leaves the queue exactly once and never runs.
    let mut set = QueueSet::new(queuing(11, 1, 11), 1, ms(0));
    let (one, dispatched) = admitted(set.start(ms(0), 1, WorkEstimate::ONE_SEAT));
    assert_eq!(dispatched, [one]);
    let (two, dispatched) = admitted(set.start(ms(0), 2, WorkEstimate::ONE_SEAT));
    assert!(dispatched.is_empty());
    assert_eq!(set.waiting(), 1);
    assert!(set.cancel(ms(1000), two));
    assert!(!set.cancel(ms(1000), two));
    assert_eq!(set.waiting(), 0);
    let (_, dispatched) = set.finish(ms(1000), one);
    assert!(dispatched.is_empty(), "request 2 must not execute");
    assert!(set.is_idle());
}
