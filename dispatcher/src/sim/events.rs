//! A deterministic event queue on a fake clock: events fire in time order, and events due at
//! the same instant fire in the order they were scheduled.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// Events of type `E`, each due at a time on the simulated clock.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    scheduled: u64,
    now: Duration,
}

#[derive(Debug)]
struct Entry<E> {
    /// Nanoseconds (a `u64` keeps entries small; 584 years of simulated time).
    at: u64,
    sequence: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.sequence) == (other.at, other.sequence)
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.sequence).cmp(&(other.at, other.sequence))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            scheduled: 0,
            now: Duration::ZERO,
        }
    }
}

impl<E> EventQueue<E> {
    /// The simulated time: that of the last event taken, or the last `advance_to`.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// Schedules `event` at `at` (an event in the past fires at once, at the current time).
    pub fn schedule(&mut self, at: Duration, event: E) {
        let at = at.max(self.now);
        self.heap.push(Reverse(Entry {
            at: u64::try_from(at.as_nanos()).unwrap_or(u64::MAX),
            sequence: self.scheduled,
            event,
        }));
        self.scheduled += 1;
    }

    /// Takes the next event due at or before `until` (`None`: no limit) and moves the clock
    /// to its time.
    pub fn next_until(&mut self, until: Option<Duration>) -> Option<(Duration, E)> {
        let due = Duration::from_nanos(self.heap.peek()?.0.at);
        if until.is_some_and(|until| due > until) {
            return None;
        }
        let Reverse(entry) = self.heap.pop()?;
        self.now = due;
        Some((due, entry.event))
    }

    /// Moves the clock forward to `at` (never backward).
    pub fn advance_to(&mut self, at: Duration) {
        self.now = self.now.max(at);
    }

    /// Events not yet taken.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}
