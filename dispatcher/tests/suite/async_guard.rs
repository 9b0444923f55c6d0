//! The async adapter with real tokio tasks: permits up to the limit, waiting and waking in
//! fair order, the wait limit with Retry-After, and cancelled waits leaving their queue
//! (upstream's TestContextCancel: the wait ends after exactly 1 s of fake time).

use std::time::Duration;

use apfkit_dispatcher::config::Configuration;

use super::support::{fill, global_default, request};
use apfkit_dispatcher::guard::{DEFAULT_WAIT_LIMIT, Guard};
use apfkit_dispatcher::queueset::{RejectReason, WorkEstimate};
use tokio::time::Instant;

/// A guard with a small server limit (24), and global-default's index and current limit.
fn small_guard(wait_limit: Duration) -> (Guard, usize, u64) {
    let guard = Guard::with_wait_limit(Configuration::kubernetes_default(24).unwrap(), wait_limit);
    let (level, limit) = global_default(&guard);
    assert!(limit >= 1);
    (guard, level, limit)
}

fn waiting(guard: &Guard, level: usize) -> usize {
    guard.inspect(|d| d.level(level).queue_set.waiting())
}

#[tokio::test(start_paused = true)]
async fn permits_up_to_the_limit_then_waiters_wake_when_permits_drop() {
    let (guard, level, limit) = small_guard(DEFAULT_WAIT_LIMIT);
    let mut permits = fill(&guard, limit).await;
    let task = {
        let guard = guard.clone();
        tokio::spawn(async move {
            guard
                .acquire(&request("bob"), WorkEstimate::ONE_SEAT)
                .await
                .map(|p| p.priority_level().to_owned())
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(waiting(&guard, level), 1, "bob waits in a queue");
    drop(permits.pop());
    let woken = tokio::time::timeout(Duration::from_secs(1), task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(woken.unwrap(), "global-default");
    drop(permits);
    assert!(guard.inspect(|d| d.level(level).queue_set.is_idle()));
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_reaches_its_limit_is_rejected_with_retry_after() {
    // A 5 s limit, shorter than the 10 s borrowing period: at 10 s the idle levels would lend
    // global-default enough seats to dispatch the waiting request.
    let (guard, level, limit) = small_guard(Duration::from_secs(5));
    let _permits = fill(&guard, limit).await;
    let started = Instant::now();
    let rejection = guard
        .acquire(&request("bob"), WorkEstimate::ONE_SEAT)
        .await
        .unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(5), "the wait limit");
    assert_eq!(rejection.reason, RejectReason::TimeOut);
    assert_eq!(rejection.priority_level, "global-default");
    assert!(rejection.retry_after >= 1);
    assert_eq!(waiting(&guard, level), 0);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_wait_leaves_its_queue_after_exactly_one_second() {
    let (guard, level, limit) = small_guard(DEFAULT_WAIT_LIMIT);
    let permits = fill(&guard, limit).await;
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(1),
        guard.acquire(&request("bob"), WorkEstimate::ONE_SEAT),
    )
    .await;
    assert!(outcome.is_err(), "still waiting when cancelled");
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(
        waiting(&guard, level),
        0,
        "the cancelled request left its queue"
    );
    // It never executes: freeing every seat dispatches nothing.
    drop(permits);
    assert!(guard.inspect(|d| d.level(level).queue_set.is_idle()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_real_tasks_all_finish_and_leave_the_dispatcher_idle() {
    let (guard, level, _) = small_guard(DEFAULT_WAIT_LIMIT);
    let mut tasks = Vec::new();
    for i in 0..200 {
        let guard = guard.clone();
        tasks.push(tokio::spawn(async move {
            let user = if i % 2 == 0 { "alice" } else { "bob" };
            let permit = guard
                .acquire(&request(user), WorkEstimate::ONE_SEAT)
                .await?;
            tokio::time::sleep(Duration::from_millis(2)).await;
            drop(permit);
            Ok::<_, apfkit_dispatcher::guard::Rejection>(())
        }));
    }
    let mut executed = 0;
    for task in tasks {
        if task.await.unwrap().is_ok() {
            executed += 1;
        }
    }
    assert!(executed > 0);
    assert!(guard.inspect(|d| d.level(level).queue_set.is_idle()));
}
