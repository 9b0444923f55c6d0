//! What a rejected request gets (`filters/priority-and-fairness.go` and
//! `dropped_requests_tracker.go`): the two APF response headers and the per-level
//! Retry-After that grows while a level keeps dropping requests; the 429 itself is
//! `apfkit_https::answers::too_many_requests`.

use std::collections::{HashMap, VecDeque};

/// Header carrying the priority level's UID (empty for an imagined level).
pub const PRIORITY_LEVEL_UID_HEADER: &str = "X-Kubernetes-PF-PriorityLevel-UID";
/// Header carrying the FlowSchema's UID (empty for an imagined schema).
pub const FLOW_SCHEMA_UID_HEADER: &str = "X-Kubernetes-PF-FlowSchema-UID";

/// Largest Retry-After, in seconds.
pub const MAX_RETRY_AFTER: i64 = 32;

/// The two headers of a classified request, on executed and rejected responses alike.
pub fn headers<'a>(
    priority_level_uid: &'a str,
    flow_schema_uid: &'a str,
) -> [(&'static str, &'a str); 2] {
    [
        (PRIORITY_LEVEL_UID_HEADER, priority_level_uid),
        (FLOW_SCHEMA_UID_HEADER, flow_schema_uid),
    ]
}

/// Drop history of one level.
#[derive(Debug, Clone)]
struct LevelDrops {
    retry_after: i64,
    /// The second being counted and its drops.
    current: Option<(i64, i64)>,
    history: VecDeque<(i64, i64)>,
    last_increase: i64,
}

impl Default for LevelDrops {
    fn default() -> Self {
        LevelDrops {
            retry_after: 1,
            current: None,
            history: VecDeque::new(),
            last_increase: 0,
        }
    }
}

impl LevelDrops {
    fn record(&mut self, second: i64) {
        match &mut self.current {
            Some((current_second, count)) if *current_second == second => {
                *count += 1;
                return;
            }
            Some((previous_second, count)) => {
                let previous = (*previous_second, *count);
                self.history.push_back(previous);
                let horizon = previous.0 - (2 * self.retry_after).min(MAX_RETRY_AFTER);
                while self.history.front().is_some_and(|(s, _)| *s < horizon) {
                    self.history.pop_front();
                }
            }
            None => {}
        }
        self.current = Some((second, 1));
        let window = second - self.retry_after..second;
        let drops: i64 = self
            .history
            .iter()
            .filter(|(s, _)| window.contains(s))
            .map(|(_, c)| c)
            .sum();
        if second - self.last_increase >= self.retry_after && drops >= 3 * self.retry_after {
            self.retry_after = (2 * self.retry_after).min(MAX_RETRY_AFTER);
            self.last_increase = second;
        } else if drops < self.retry_after && self.retry_after > 1 {
            self.retry_after -= 1;
        }
    }
}

/// Retry-After per priority level, from the requests each level dropped (kube-apiserver's
/// dropped-requests tracker). It grows while drops keep coming, shrinks when they thin out, and
/// changes only when a drop lands in a new second.
#[derive(Debug, Clone, Default)]
pub struct RetryAfterTracker {
    levels: HashMap<String, LevelDrops>,
}

impl RetryAfterTracker {
    /// A tracker with no history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a request dropped by `level` at unix second `second`.
    pub fn record_dropped(&mut self, level: &str, second: i64) {
        self.levels
            .entry(level.to_owned())
            .or_default()
            .record(second);
    }

    /// The Retry-After value for `level`, in seconds: 1 for a level that dropped nothing.
    pub fn retry_after(&self, level: &str) -> i64 {
        self.levels.get(level).map_or(1, |l| l.retry_after)
    }
}
