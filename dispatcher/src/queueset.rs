//! A queue set: the fair-queuing state machine of one priority level (upstream's
//! `pkg/util/flowcontrol/fairqueuing/queueset/queueset.go`).
//!
//! It is sans-IO. Every call takes the current time (`now`, any monotonic clock) and returns
//! what happened, such as which requests were dispatched. Nothing inside sleeps, spawns or
//! reads a clock.

use std::collections::VecDeque;
use std::time::Duration;

use fixedbitset::FixedBitSet;
use rustc_hash::FxHashMap;

use crate::seat_seconds::{SeatSeconds, nanos_f64};
use crate::shuffle::Dealer;

/// The service time every request is charged at arrival for its initial phase (G, 3 ms).
pub const ESTIMATED_SERVICE_DURATION: Duration = Duration::from_millis(3);

/// A request's cost, as estimated at arrival (`WorkEstimate` in `request/width.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkEstimate {
    /// Seats held while the request executes.
    pub initial_seats: u64,
    /// Seats held after it finishes, for `additional_latency`.
    pub final_seats: u64,
    /// How long the final seats linger after execution.
    pub additional_latency: Duration,
}

impl WorkEstimate {
    /// One seat, no lingering: the estimate of most requests.
    pub const ONE_SEAT: WorkEstimate = WorkEstimate {
        initial_seats: 1,
        final_seats: 0,
        additional_latency: Duration::ZERO,
    };

    /// Seats reserved: the larger of the two.
    pub fn max_seats(&self) -> u64 {
        self.initial_seats.max(self.final_seats)
    }
}

/// How the queue set treats requests (`queueset.go`'s `QueuingConfig`: no queues is `Reject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueSetConfig {
    /// Never queued, never rejected (`DesiredNumQueues = −1`).
    Exempt,
    /// Admitted if the seats fit now, else rejected (`DesiredNumQueues = 0`).
    Reject,
    /// Shuffle sharding and fair queuing.
    Queue {
        /// Deals each flow's hand of queues; its deck is the number of queues.
        dealer: Dealer,
        /// Waiting requests a queue may hold while the level is full.
        queue_length_limit: usize,
    },
}

/// Why a request was not executed (the metric reasons of kube-apiserver).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// Its queue was at the length limit while the level was full.
    QueueFull,
    /// A `Reject` level had no room for its seats.
    ConcurrencyLimit,
    /// It waited until its wait deadline.
    TimeOut,
    /// Its wait was cancelled.
    Cancelled,
}

impl RejectReason {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::QueueFull => "queue-full",
            RejectReason::ConcurrencyLimit => "concurrency-limit",
            RejectReason::TimeOut => "time-out",
            RejectReason::Cancelled => "cancelled",
        }
    }
}

/// Identifies a request inside its queue set.
pub type RequestId = u64;

/// What became of an arriving request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arrival {
    /// Rejected at once.
    Rejected(RejectReason),
    /// Admitted; `dispatched` lists every request that started executing as a result, this
    /// one included if it did not have to wait.
    Admitted {
        /// The new request.
        id: RequestId,
        /// Requests dispatched by this call, in dispatch order.
        dispatched: Vec<RequestId>,
    },
}

#[derive(Debug, Clone)]
struct Request {
    queue: Option<usize>,
    /// When it arrived.
    arrived: Duration,
    /// When it arrived, then when it started executing.
    start: Duration,
    estimate: WorkEstimate,
    total_work: SeatSeconds,
    final_work: SeatSeconds,
    executing: bool,
}

impl Request {
    fn max_seats(&self) -> u64 {
        self.estimate.max_seats()
    }
}

/// A waiting request, with what the dispatch scan reads kept inline.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    id: RequestId,
    arrival_r: SeatSeconds,
    total_work: SeatSeconds,
    max_seats: u64,
}

#[derive(Debug, Clone, Default)]
struct Queue {
    waiting: VecDeque<Waiting>,
    max_seats_sum: u64,
    total_work_sum: SeatSeconds,
    next_dispatch_r: SeatSeconds,
    executing: usize,
    seats_in_use: u64,
}

impl Queue {
    fn is_empty(&self) -> bool {
        self.waiting.is_empty() && self.executing == 0
    }

    /// What the virtual-time rate reads of this queue: whether it is active (waiting or
    /// executing requests) and the seats it requests (in use plus waiting).
    fn load(&self) -> Load {
        Load {
            active: !self.is_empty(),
            seats: self.seats_in_use + self.max_seats_sum,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Load {
    active: bool,
    seats: u64,
}

/// The state of one priority level's queue set.
#[derive(Debug, Clone)]
pub struct QueueSet {
    config: QueueSetConfig,
    concurrency_limit: u64,
    current_r: SeatSeconds,
    last_time: Duration,
    robin_index: usize,
    enqueues: u64,
    waiting: usize,
    seats_waiting: u64,
    executing: usize,
    seats_in_use: u64,
    queues: Vec<Queue>,
    desired_queues: usize,
    /// Σ over queues of [`Queue::load`], kept up to date so that syncing does not scan.
    active_queues: usize,
    requested_seats: u64,
    /// Queues with waiting requests: the dispatch scan visits only these, in the same
    /// round-robin order as a scan of every queue would.
    with_waiting: FixedBitSet,
    requests: FxHashMap<RequestId, Request>,
    next_id: RequestId,
    epoch_advances: u64,
    totals: Totals,
}

/// Requests a queue set has seen end one way or another, as kube-apiserver's queue set
/// counts them for `dump_priority_levels`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Requests that started executing (not counted on exempt levels, whose upstream
    /// queue set is a different type that keeps no count).
    pub dispatched: u64,
    /// Requests rejected at arrival or taken out of their queue.
    pub rejected: u64,
    /// Requests taken out of their queue (wait limit passed or client gone).
    pub cancelled: u64,
}

impl QueueSet {
    /// A queue set with the given behaviour and current concurrency limit, at time `now`.
    pub fn new(config: QueueSetConfig, concurrency_limit: u64, now: Duration) -> Self {
        let desired_queues = desired_queues(&config);
        let queues = vec![Queue::default(); desired_queues];
        QueueSet {
            config,
            concurrency_limit,
            current_r: SeatSeconds::ZERO,
            last_time: now,
            robin_index: 0,
            enqueues: 0,
            waiting: 0,
            seats_waiting: 0,
            executing: 0,
            seats_in_use: 0,
            queues,
            desired_queues,
            active_queues: 0,
            requested_seats: 0,
            with_waiting: FixedBitSet::with_capacity(desired_queues),
            requests: FxHashMap::default(),
            next_id: 0,
            epoch_advances: 0,
            totals: Totals::default(),
        }
    }

    /// Global virtual time R.
    pub fn virtual_time(&self) -> SeatSeconds {
        self.current_r
    }

    /// Seats held by requests not yet released (lingering ones included).
    pub fn seats_in_use(&self) -> u64 {
        self.seats_in_use
    }

    /// Requests in their initial (executing) phase.
    pub fn executing(&self) -> usize {
        self.executing
    }

    /// Requests waiting in queues.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Seat demand (`totSeatsInUse + totSeatsWaiting`, as `queueSet.noteSeatDemand` observes it).
    pub fn seat_demand(&self) -> u64 {
        self.seats_in_use + self.seats_waiting
    }

    /// How many times virtual time has been moved back by half its range.
    pub(crate) fn epoch_advances(&self) -> u64 {
        self.epoch_advances
    }

    /// The queue a request was put in (`None` for queueless levels or unknown requests).
    pub fn queue_of(&self, id: RequestId) -> Option<usize> {
        self.requests.get(&id).and_then(|r| r.queue)
    }

    /// How many requests wait in the queue of request `id` (itself included while it
    /// waits); 0 for queueless levels and unknown requests.
    pub fn queue_length_of(&self, id: RequestId) -> usize {
        self.queue_of(id)
            .and_then(|q| self.queues.get(q))
            .map_or(0, |queue| queue.waiting.len())
    }

    /// The virtual start (`nextDispatchR`) of queue `index`.
    pub fn queue_virtual_start(&self, index: usize) -> Option<SeatSeconds> {
        self.queues.get(index).map(|q| q.next_dispatch_r)
    }

    /// Advances R to `now` at the rate of the state since the last sync (`syncTimeLocked`).
    fn sync(&mut self, now: Duration) {
        let elapsed = now.saturating_sub(self.last_time);
        self.last_time = now.max(self.last_time);
        debug_assert_eq!(
            self.totals_recounted(),
            (self.active_queues, self.requested_seats)
        );
        let (active, requested) = (self.active_queues, self.requested_seats);
        if active == 0 {
            return;
        }
        let rate = requested.min(self.concurrency_limit) as f64 / active as f64;
        self.current_r = self
            .current_r
            .wrapping_add(SeatSeconds::seats_times_duration(rate, elapsed));
        if self.current_r >= SeatSeconds::HIGH_R {
            self.advance_epoch();
        }
    }

    /// The totals of [`Queue::load`] recounted from scratch.
    fn totals_recounted(&self) -> (usize, u64) {
        self.queues
            .iter()
            .map(Queue::load)
            .fold((0, 0), |(a, s), l| (a + usize::from(l.active), s + l.seats))
    }

    /// Recomputes the running totals and the index of queues with waiting requests, after
    /// queues were added or removed.
    fn reindex(&mut self) {
        (self.active_queues, self.requested_seats) = self.totals_recounted();
        self.with_waiting = FixedBitSet::with_capacity(self.queues.len());
        for (q, queue) in self.queues.iter().enumerate() {
            self.with_waiting.set(q, !queue.waiting.is_empty());
        }
    }

    /// Accounts for queue `q`'s change since `before` was taken.
    fn account(&mut self, q: usize, before: Load) {
        self.with_waiting.set(q, !self.queues[q].waiting.is_empty());
        let after = self.queues[q].load();
        self.active_queues =
            self.active_queues + usize::from(after.active) - usize::from(before.active);
        self.requested_seats = self.requested_seats + after.seats - before.seats;
    }

    fn advance_epoch(&mut self) {
        let decrement = SeatSeconds::R_DECREMENT;
        self.current_r = self.current_r.wrapping_sub(decrement);
        for queue in &mut self.queues {
            if queue.is_empty() {
                queue.next_dispatch_r = SeatSeconds::ZERO;
                continue;
            }
            queue.next_dispatch_r = queue.next_dispatch_r.wrapping_sub(decrement);
            for waiting in &mut queue.waiting {
                waiting.arrival_r = waiting.arrival_r.wrapping_sub(decrement);
            }
        }
        self.epoch_advances += 1;
    }

    /// `canAccommodateSeatsLocked`.
    fn can_accommodate(&self, seats: u64) -> bool {
        match self.config {
            QueueSetConfig::Exempt => true,
            _ if seats > self.concurrency_limit => self.executing == 0,
            _ => self.seats_in_use + seats <= self.concurrency_limit,
        }
    }

    fn new_request(
        &mut self,
        estimate: WorkEstimate,
        queue: Option<usize>,
        now: Duration,
    ) -> RequestId {
        let initial_work = SeatSeconds::seats_times_duration(
            estimate.initial_seats as f64,
            ESTIMATED_SERVICE_DURATION,
        );
        let final_work = SeatSeconds::seats_times_duration(
            estimate.final_seats as f64,
            estimate.additional_latency,
        );
        let id = self.next_id;
        self.next_id += 1;
        self.requests.insert(
            id,
            Request {
                queue,
                arrived: now,
                start: now,
                estimate,
                total_work: initial_work.wrapping_add(final_work),
                final_work,
                executing: false,
            },
        );
        id
    }

    fn start_executing(&mut self, id: RequestId, now: Duration) {
        let Some(request) = self.requests.get_mut(&id) else {
            return;
        };
        request.executing = true;
        request.start = now;
        if !matches!(self.config, QueueSetConfig::Exempt) {
            self.totals.dispatched += 1;
        }
        let seats = request.max_seats();
        self.executing += 1;
        self.seats_in_use += seats;
        if let Some(q) = request.queue {
            let total_work = request.total_work;
            let queue = &mut self.queues[q];
            let before = queue.load();
            queue.executing += 1;
            queue.seats_in_use += seats;
            queue.next_dispatch_r = queue.next_dispatch_r.wrapping_add(total_work);
            self.account(q, before);
        }
    }

    /// A request arrives with its flow hash and estimate (`StartRequest`).
    pub fn start(&mut self, now: Duration, hash: u64, estimate: WorkEstimate) -> Arrival {
        self.sync(now);
        match self.config {
            QueueSetConfig::Exempt => {
                let id = self.new_request(estimate, None, now);
                self.start_executing(id, now);
                Arrival::Admitted {
                    id,
                    dispatched: vec![id],
                }
            }
            QueueSetConfig::Reject => {
                if !self.can_accommodate(estimate.max_seats()) {
                    self.totals.rejected += 1;
                    return Arrival::Rejected(RejectReason::ConcurrencyLimit);
                }
                let id = self.new_request(estimate, None, now);
                self.start_executing(id, now);
                Arrival::Admitted {
                    id,
                    dispatched: vec![id],
                }
            }
            QueueSetConfig::Queue {
                dealer,
                queue_length_limit,
            } => {
                let q = self.choose_queue(&dealer, hash);
                if self.seats_in_use >= self.concurrency_limit
                    && self.queues[q].waiting.len() >= queue_length_limit
                {
                    self.totals.rejected += 1;
                    return Arrival::Rejected(RejectReason::QueueFull);
                }
                let id = self.new_request(estimate, Some(q), now);
                let (seats, work) = (estimate.max_seats(), self.requests[&id].total_work);
                let queue = &mut self.queues[q];
                let before = queue.load();
                if queue.is_empty() {
                    queue.next_dispatch_r = self.current_r;
                }
                queue.waiting.push_back(Waiting {
                    id,
                    arrival_r: self.current_r,
                    total_work: work,
                    max_seats: seats,
                });
                queue.max_seats_sum += seats;
                queue.total_work_sum = queue.total_work_sum.wrapping_add(work);
                self.account(q, before);
                self.waiting += 1;
                self.seats_waiting += seats;
                self.bound_virtual_start(q);
                let dispatched = self.dispatch_as_much_as_possible(now);
                Arrival::Admitted { id, dispatched }
            }
        }
    }

    /// Shuffle sharding with the rotating offset (`shuffleShardLocked`).
    fn choose_queue(&mut self, dealer: &Dealer, hash: u64) -> usize {
        let hand = dealer.hand(hash);
        let offset = (self.enqueues % hand.len() as u64) as usize;
        self.enqueues += 1;
        let mut best = (SeatSeconds::MAX, hand[offset]);
        for i in 0..hand.len() {
            let q = hand[(offset + i) % hand.len()];
            let work = self.queues[q].total_work_sum;
            if work < best.0 {
                best = (work, q);
            }
        }
        best.1
    }

    /// Anti-windup (`boundNextDispatchLocked`): a queue's virtual start never lags its head's arrival.
    fn bound_virtual_start(&mut self, q: usize) {
        let queue = &mut self.queues[q];
        if let Some(head) = queue.waiting.front()
            && queue.next_dispatch_r < head.arrival_r
        {
            queue.next_dispatch_r = head.arrival_r;
        }
    }

    fn dispatch_as_much_as_possible(&mut self, now: Duration) -> Vec<RequestId> {
        let mut dispatched = Vec::new();
        while self.waiting > 0 && self.seats_in_use < self.concurrency_limit {
            match self.dispatch_one(now) {
                Some(id) => dispatched.push(id),
                None => break,
            }
        }
        dispatched
    }

    /// The dispatch scan over every queue, as upstream does it; debug builds check the
    /// indexed scan against it.
    #[cfg(debug_assertions)]
    fn full_scan(&self, first: usize) -> Option<(SeatSeconds, usize)> {
        let n = self.queues.len();
        let mut best: Option<(SeatSeconds, usize)> = None;
        for i in 0..n {
            let q = (first + i) % n;
            if let Some(head) = self.queues[q].waiting.front() {
                let finish = self.queues[q].next_dispatch_r.wrapping_add(head.total_work);
                if best.is_none_or(|(f, _)| finish < f) {
                    best = Some((finish, q));
                }
            }
        }
        best
    }

    /// One dispatch step (`dispatchLocked` with `findDispatchQueueToBoundLocked`).
    fn dispatch_one(&mut self, now: Duration) -> Option<RequestId> {
        let n = self.queues.len();
        if n == 0 {
            return None;
        }
        let first = (self.robin_index + 1) % n;
        let mut best: Option<(SeatSeconds, usize)> = None;
        // Round-robin order from `first`, visiting only queues with a waiting head.
        let after = self.with_waiting.ones().skip_while(|&q| q < first);
        let before = self.with_waiting.ones().take_while(|&q| q < first);
        for q in after.chain(before) {
            let queue = &self.queues[q];
            let Some(head) = queue.waiting.front() else {
                continue;
            };
            let finish = queue.next_dispatch_r.wrapping_add(head.total_work);
            if best.is_none_or(|(f, _)| finish < f) {
                best = Some((finish, q));
            }
        }
        #[cfg(debug_assertions)]
        assert_eq!(
            best,
            self.full_scan(first),
            "the index skips no waiting queue"
        );
        let (_, q) = best?;
        let head = *self.queues[q].waiting.front()?;
        if !self.can_accommodate(head.max_seats) {
            return None;
        }
        let queue = &mut self.queues[q];
        let before = queue.load();
        queue.waiting.pop_front();
        queue.max_seats_sum -= head.max_seats;
        queue.total_work_sum = queue.total_work_sum.wrapping_sub(head.total_work);
        self.account(q, before);
        let id = head.id;
        let request = self.requests.get_mut(&id)?;
        if request.estimate.final_seats > self.concurrency_limit {
            request.estimate.final_seats = self.concurrency_limit;
            request.estimate.additional_latency = request
                .final_work
                .duration_per_seat(self.concurrency_limit as f64);
        }
        self.robin_index = q;
        self.waiting -= 1;
        // Copied from `dispatchLocked`: the waiting seats drop by the capped MaxSeats, not by
        // what the request was queued with (decision 33).
        self.seats_waiting = self.seats_waiting.saturating_sub(request.max_seats());
        self.start_executing(id, now);
        self.bound_virtual_start(q);
        Some(id)
    }

    /// The request's initial phase ended (`finishRequestLocked`). Returns the time its lingering seats
    /// must be released with [`QueueSet::release`] (none if released now) and the requests
    /// dispatched.
    pub fn finish(&mut self, now: Duration, id: RequestId) -> (Option<Duration>, Vec<RequestId>) {
        self.sync(now);
        let Some(request) = self.requests.get_mut(&id).filter(|r| r.executing) else {
            return (None, Vec::new());
        };
        request.executing = false;
        let (queue, start, initial_seats, latency) = (
            request.queue,
            request.start,
            request.estimate.initial_seats,
            request.estimate.additional_latency,
        );
        self.executing -= 1;
        if let Some(q) = queue {
            let served = nanos_f64(now.saturating_sub(start));
            let correction = SeatSeconds::seats_times_nanos(
                initial_seats as f64,
                nanos_f64(ESTIMATED_SERVICE_DURATION) - served,
            );
            let queue = &mut self.queues[q];
            let before = queue.load();
            queue.executing -= 1;
            queue.next_dispatch_r = queue.next_dispatch_r.wrapping_sub(correction);
            self.account(q, before);
            self.bound_virtual_start(q);
        }
        if latency.is_zero() {
            self.release_seats(id);
            (None, self.dispatch_as_much_as_possible(now))
        } else {
            (Some(now + latency), self.dispatch_as_much_as_possible(now))
        }
    }

    /// Releases a finished request's lingering seats (`finishRequestLocked`'s `releaseSeatsLocked`).
    pub fn release(&mut self, now: Duration, id: RequestId) -> Vec<RequestId> {
        self.sync(now);
        if self.requests.get(&id).is_none_or(|r| r.executing) {
            return Vec::new();
        }
        self.release_seats(id);
        self.dispatch_as_much_as_possible(now)
    }

    fn release_seats(&mut self, id: RequestId) {
        let Some(request) = self.requests.remove(&id) else {
            return;
        };
        let seats = request.max_seats();
        self.seats_in_use -= seats;
        if let Some(q) = request.queue {
            let before = self.queues[q].load();
            self.queues[q].seats_in_use -= seats;
            self.account(q, before);
            if self.queues.len() > self.desired_queues
                && self.queues[q].is_empty()
                && self.queues[q].seats_in_use == 0
            {
                self.queues.remove(q);
                for other in self.requests.values_mut() {
                    if let Some(index) = other.queue.as_mut().filter(|i| **i > q) {
                        *index -= 1;
                    }
                }
                if self.robin_index >= q {
                    // Upstream may reach −1, which scans from queue 0 as n − 1 does.
                    self.robin_index = match self.robin_index {
                        0 => self.queues.len().saturating_sub(1),
                        index => index - 1,
                    };
                }
                self.reindex();
            }
        }
    }

    /// The wait of a queued request ended (deadline or cancellation, `request.wait`). Returns true
    /// when it was still waiting and has been removed; it was then not executed.
    pub fn cancel(&mut self, now: Duration, id: RequestId) -> bool {
        self.sync(now);
        let Some(request) = self.requests.get(&id).filter(|r| !r.executing) else {
            return false;
        };
        let Some(q) = request.queue else { return false };
        let (seats, work) = (request.max_seats(), request.total_work);
        let queue = &mut self.queues[q];
        let before = queue.load();
        let Some(position) = queue.waiting.iter().position(|w| w.id == id) else {
            return false;
        };
        queue.waiting.remove(position);
        queue.max_seats_sum -= seats;
        queue.total_work_sum = queue.total_work_sum.wrapping_sub(work);
        self.account(q, before);
        self.waiting -= 1;
        self.seats_waiting = self.seats_waiting.saturating_sub(seats);
        self.requests.remove(&id);
        self.bound_virtual_start(q);
        self.totals.rejected += 1;
        self.totals.cancelled += 1;
        true
    }

    /// Changes the current concurrency limit and dispatches what now fits (`setConfiguration`).
    pub fn set_concurrency_limit(&mut self, now: Duration, limit: u64) -> Vec<RequestId> {
        self.sync(now);
        self.concurrency_limit = limit;
        self.dispatch_as_much_as_possible(now)
    }

    /// Changes the level's behaviour (`setConfiguration`) and dispatches what now fits.
    ///
    /// More queues are added at once; surplus queues keep their requests and are removed
    /// when they empty. Switching to `Exempt` or `Reject` lets queued requests drain, while
    /// new arrivals take the queueless path.
    pub fn reconfigure(&mut self, now: Duration, config: QueueSetConfig) -> Vec<RequestId> {
        self.sync(now);
        self.desired_queues = desired_queues(&config);
        if self.queues.len() < self.desired_queues {
            self.queues.resize_with(self.desired_queues, Queue::default);
            self.reindex();
        }
        self.config = config;
        self.dispatch_as_much_as_possible(now)
    }

    /// The current concurrency limit.
    pub fn concurrency_limit(&self) -> u64 {
        self.concurrency_limit
    }

    /// The level's behaviour.
    pub fn config(&self) -> &QueueSetConfig {
        &self.config
    }

    /// True when nothing waits, executes or holds seats.
    pub fn is_idle(&self) -> bool {
        self.waiting == 0 && self.executing == 0 && self.seats_in_use == 0
    }

    /// A summary of every queue, surplus ones included, in index order.
    pub fn queues(&self) -> impl ExactSizeIterator<Item = QueueSummary> + '_ {
        self.queues
            .iter()
            .enumerate()
            .map(|(index, queue)| QueueSummary {
                index,
                waiting: queue.waiting.len(),
                executing: queue.executing,
                seats_in_use: queue.seats_in_use,
                waiting_seats: queue.max_seats_sum,
                waiting_initial_seats: queue
                    .waiting
                    .iter()
                    .filter_map(|w| self.requests.get(&w.id))
                    .map(|r| r.estimate.initial_seats)
                    .sum(),
                waiting_work: queue.total_work_sum,
                virtual_start: queue.next_dispatch_r,
            })
    }

    /// The counts of requests dispatched, rejected and cancelled so far.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Every request, in the order of kube-apiserver's `dump_requests`: each queue's waiting
    /// requests in queue order then its executing ones, then the executing requests of no
    /// queue (exempt and `Reject` levels).
    pub fn request_summaries(&self) -> Vec<RequestSummary> {
        let summary = |id: RequestId, position: Option<usize>| {
            self.requests.get(&id).map(|r| RequestSummary {
                id,
                queue: r.queue,
                position,
                estimate: r.estimate,
                arrived: r.arrived,
                started: r.executing.then_some(r.start),
            })
        };
        let mut executing: Vec<(Option<usize>, RequestId)> = self
            .requests
            .iter()
            .filter(|(_, r)| r.executing)
            .map(|(id, r)| (r.queue, *id))
            .collect();
        executing.sort_unstable();
        let mut out = Vec::with_capacity(self.requests.len());
        for (q, queue) in self.queues.iter().enumerate() {
            out.extend(
                queue
                    .waiting
                    .iter()
                    .enumerate()
                    .filter_map(|(position, w)| summary(w.id, Some(position))),
            );
            out.extend(
                executing
                    .iter()
                    .filter(|(queue, _)| *queue == Some(q))
                    .filter_map(|(_, id)| summary(*id, None)),
            );
        }
        out.extend(
            executing
                .iter()
                .filter(|(queue, _)| queue.is_none())
                .filter_map(|(_, id)| summary(*id, None)),
        );
        out
    }

    /// How many arrivals have chosen a queue so far (upstream `enqueues`; quirk Q9: rejected
    /// arrivals count too, and it never resets).
    pub fn enqueues(&self) -> u64 {
        self.enqueues
    }

    /// The round-robin position of the dispatch scan (upstream `robinIndex`).
    pub fn robin_index(&self) -> usize {
        self.robin_index
    }
}

/// One queue, as a dump shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSummary {
    /// Its index.
    pub index: usize,
    /// Requests waiting.
    pub waiting: usize,
    /// Requests in their initial phase.
    pub executing: usize,
    /// Seats held by its requests not yet released.
    pub seats_in_use: u64,
    /// Seats of its waiting requests (the most each will hold).
    pub waiting_seats: u64,
    /// Initial seats of its waiting requests.
    pub waiting_initial_seats: u64,
    /// Work of its waiting requests.
    pub waiting_work: SeatSeconds,
    /// Its virtual start (`nextDispatchR`).
    pub virtual_start: SeatSeconds,
}

/// One request, as `dump_requests` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSummary {
    /// Its id.
    pub id: RequestId,
    /// Its queue (`None` on levels without queues).
    pub queue: Option<usize>,
    /// Its place in its queue while it waits.
    pub position: Option<usize>,
    /// Its work estimate.
    pub estimate: WorkEstimate,
    /// When it arrived.
    pub arrived: Duration,
    /// When it started executing.
    pub started: Option<Duration>,
}

fn desired_queues(config: &QueueSetConfig) -> usize {
    match config {
        QueueSetConfig::Queue { dealer, .. } => dealer.deck_size(),
        QueueSetConfig::Exempt | QueueSetConfig::Reject => 0,
    }
}

#[cfg(test)]
mod scenarios;

#[cfg(test)]
mod tests {
    //! Upstream's `TestFindDispatchQueueLocked`, which sets queue state directly.

    use super::*;

    const SS: u64 = 100_000_000;

    /// Two queues whose heads have the given widths and whose virtual starts are the given
    /// seat-seconds; robinIndex at −1 (≡ n − 1), as upstream's test sets it.
    fn set_with_heads(heads: &[(u64, u64)], limit: u64, in_use: u64) -> QueueSet {
        let dealer = Dealer::new(heads.len() as i32, 1).unwrap();
        let config = QueueSetConfig::Queue {
            dealer,
            queue_length_limit: 10,
        };
        let mut set = QueueSet::new(config, limit, Duration::ZERO);
        set.robin_index = heads.len() - 1;
        set.seats_in_use = in_use;
        for (q, &(width, start)) in heads.iter().enumerate() {
            let estimate = WorkEstimate {
                initial_seats: width,
                ..WorkEstimate::ONE_SEAT
            };
            let id = set.new_request(estimate, Some(q), Duration::ZERO);
            let total_work = set.requests[&id].total_work;
            let queue = &mut set.queues[q];
            queue.next_dispatch_r = SeatSeconds(start * SS);
            queue.waiting.push_back(Waiting {
                id,
                arrival_r: SeatSeconds::ZERO,
                total_work,
                max_seats: width,
            });
            queue.max_seats_sum += width;
            set.waiting += 1;
            set.seats_waiting += width;
        }
        set.reindex();
        set
    }

    #[test]
    fn smallest_virtual_finish_wins() {
        let mut set = set_with_heads(&[(1, 200), (1, 100)], 1, 0);
        let id = set.dispatch_one(Duration::ZERO);
        assert_eq!(id.and_then(|id| set.queue_of(id)), Some(1));
        assert_eq!(set.robin_index, 1);
    }

    #[test]
    fn nothing_dispatches_without_seats() {
        let mut set = set_with_heads(&[(1, 0)], 1, 1);
        assert_eq!(set.dispatch_one(Duration::ZERO), None);
        assert_eq!(set.robin_index, 0);
    }

    #[test]
    fn a_wide_head_that_fits_is_dispatched() {
        let mut set = set_with_heads(&[(50, 200), (25, 100)], 50, 25);
        let id = set.dispatch_one(Duration::ZERO);
        assert_eq!(id.and_then(|id| set.queue_of(id)), Some(1));
    }

    #[test]
    fn a_head_that_does_not_fit_blocks_the_level() {
        let mut set = set_with_heads(&[(10, 200), (25, 100)], 50, 26);
        for _ in 0..3 {
            assert_eq!(
                set.dispatch_one(Duration::ZERO),
                None,
                "not even the narrower head"
            );
            assert_eq!(set.robin_index, 1);
        }
        let mut set = set_with_heads(&[(10, 200), (25, 100)], 50, 26);
        assert_eq!(set.dispatch_one(Duration::ZERO), None);
        assert_eq!(set.dispatch_one(Duration::ZERO), None);
        set.seats_in_use = 25;
        let id = set.dispatch_one(Duration::ZERO);
        assert_eq!(id.and_then(|id| set.queue_of(id)), Some(1));
    }
}
