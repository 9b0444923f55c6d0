//! Helpers the test modules share.

use apfkit_dispatcher::classify::Request;
use apfkit_dispatcher::guard::{Guard, Permit};
use apfkit_dispatcher::queueset::WorkEstimate;

/// A GET of pods in `default` by `user`, an authenticated user (the `global-default` flow).
pub fn request(user: &'static str) -> Request<'static> {
    Request {
        user,
        groups: &["system:authenticated"],
        verb: "get",
        is_resource_request: true,
        resource: "pods",
        namespace: "default",
        ..Request::default()
    }
}

/// global-default's index and current limit in `guard`.
pub fn global_default(guard: &Guard) -> (usize, u64) {
    guard.inspect(|d| {
        let level = d.level_index("global-default").unwrap();
        (level, d.level(level).current as u64)
    })
}

/// `count` permits of alice's requests (global-default's seats, when `count` is its limit).
pub async fn fill(guard: &Guard, count: u64) -> Vec<Permit> {
    let mut permits = Vec::new();
    for _ in 0..count {
        let permit = guard
            .acquire(&request("alice"), WorkEstimate::ONE_SEAT)
            .await;
        permits.push(permit.expect("a free seat"));
    }
    permits
}
