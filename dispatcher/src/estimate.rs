//! The default work estimator (upstream's `pkg/util/flowcontrol/request/width.go`,
//! `list_work_estimator.go` and `mutating_work_estimator.go`): how many seats a request occupies, and for how long
//! after it finishes.
//!
//! ```
//! use apfkit_dispatcher::classify::Request;
//! use apfkit_dispatcher::estimate::{Estimator, ObjectCount, Observed, max_seats};
//!
//! let estimator = Estimator::default();
//! let list = Request { verb: "list", is_resource_request: true, resource: "events", ..Request::default() };
//! let observed = Observed { objects: ObjectCount::Known { count: 699, average_size: 10_000 }, watchers: 0 };
//! // Served from storage: 399 objects of 10 kB is 40 seats of 100 kB.
//! let estimate = estimator.estimate(&list, "limit=399&resourceVersion=1", &observed, 100);
//! assert_eq!(estimate.initial_seats, 40);
//! assert_eq!(max_seats(100, 6), 15);
//! ```

use std::time::Duration;

use crate::classify::Request;
use crate::queueset::WorkEstimate;
use crate::seat_seconds::SeatSeconds;

/// The estimator's parameters; [`Default`] gives the current release's (size-based list cost
/// and `WatchList` on, as since 1.34; legacy watches costed, as since 1.35), and
/// [`crate::release::Release::estimator_config`] an earlier release's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EstimatorConfig {
    /// Seats of the cheapest request.
    pub minimum_seats: u64,
    /// Most seats a list may take (100 with size-based costs, 10 without).
    pub maximum_list_seats: u64,
    /// Most final seats a mutation may take.
    pub maximum_mutating_seats: u64,
    /// Objects per seat, for count-based list costs.
    pub objects_per_seat: i64,
    /// Interested watches per final seat of a mutation.
    pub watches_per_seat: u64,
    /// Seat time each final seat of a mutation stands for.
    pub event_additional_duration: Duration,
    /// Whether mutations get final seats at all.
    pub mutating_enabled: bool,
    /// Bytes per seat, for size-based list costs.
    pub bytes_per_seat: i64,
    /// Memory cap of a list served from the watch cache.
    pub cache_max_memory: i64,
    /// Feature gate `SizeBasedListCostEstimate`.
    pub size_based_list_cost: bool,
    /// Feature gate `WatchList`: watches are estimated like lists.
    pub watch_list: bool,
    /// Whether consistent reads (`resourceVersion` unset) are served from the watch cache; this
    /// depends on etcd at run time (`storage/cacher/delegator`), upstream's unit tests assume not.
    pub consistent_reads_from_cache: bool,
    /// Whether a legacy watch (`resourceVersion` unset or `0`, which sends the current objects
    /// first) is estimated like a list, as since 1.35; before, only `sendInitialEvents=true`
    /// was (k8s.io/apiserver `pkg/util/flowcontrol/request/list_work_estimator.go`).
    pub legacy_watch_costs: bool,
}

impl Default for EstimatorConfig {
    fn default() -> Self {
        EstimatorConfig {
            minimum_seats: 1,
            maximum_list_seats: 100,
            maximum_mutating_seats: 10,
            objects_per_seat: 100,
            watches_per_seat: 10,
            event_additional_duration: Duration::from_millis(5),
            mutating_enabled: true,
            bytes_per_seat: 100_000,
            cache_max_memory: 1_000_000,
            size_based_list_cost: true,
            watch_list: true,
            consistent_reads_from_cache: false,
            legacy_watch_costs: true,
        }
    }
}

/// Object size assumed when statistics are stale or missing.
const MAX_OBJECT_SIZE: i64 = 1_500_000;

/// Object count assumed when statistics are stale.
const INFINITE_OBJECT_COUNT: i64 = 1_000_000_000;

/// What the server knows of the stored objects of a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectCount {
    /// The resource is not tracked: lists cost one seat.
    Untracked,
    /// Statistics are stale (not updated for 3 minutes) or failed: assume the worst.
    Stale,
    /// Current statistics.
    Known {
        /// Objects stored.
        count: i64,
        /// Their average size in bytes (0 or less: unknown).
        average_size: i64,
    },
}

/// The server state the estimate depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    /// Stored objects of the request's resource (for lists).
    pub objects: ObjectCount,
    /// Registered watches interested in the request's object (for mutations).
    pub watchers: u64,
}

impl Default for Observed {
    fn default() -> Self {
        Observed {
            objects: ObjectCount::Untracked,
            watchers: 0,
        }
    }
}

/// The per-level seat cap (upstream `MaxSeatsTracker`) of a queuing level:
/// `max(1, min(ceil(NominalCL × 0.15), NominalCL / handSize))`. Exempt and `Reject` levels have
/// none (0), and the estimator then uses its global limits.
pub fn max_seats(nominal_cl: i64, hand_size: i32) -> u64 {
    let fifteen_percent = (nominal_cl as f64 * 0.15).ceil() as i64;
    let per_hand = nominal_cl / i64::from(hand_size.max(1));
    fifteen_percent.min(per_hand).max(1) as u64
}

/// A level's cap limited by an estimator's global one (0 or above it means the global one).
fn capped(level_max_seats: u64, limit: u64) -> u64 {
    if level_max_seats == 0 || level_max_seats > limit {
        limit
    } else {
        level_max_seats
    }
}

/// The list options of a query, as far as the estimator reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ListOptions {
    limit: i64,
    resource_version: String,
    resource_version_match: String,
    continue_token: String,
    has_selector: bool,
    send_initial_events: Option<bool>,
}

impl ListOptions {
    /// Parses a URL query; `None` when a typed parameter does not parse (upstream's conversion
    /// error).
    fn parse(query: &str) -> Option<ListOptions> {
        let mut options = ListOptions::default();
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "limit" => options.limit = value.parse().ok()?,
                "timeoutSeconds" => {
                    value.parse::<i64>().ok()?;
                }
                "allowWatchBookmarks" | "watch" => {
                    value.parse::<bool>().ok()?;
                }
                "sendInitialEvents" => options.send_initial_events = Some(value.parse().ok()?),
                "resourceVersion" => options.resource_version = value.into_owned(),
                "resourceVersionMatch" => options.resource_version_match = value.into_owned(),
                "continue" => options.continue_token = value.into_owned(),
                "labelSelector" | "fieldSelector" => options.has_selector |= !value.is_empty(),
                _ => {}
            }
        }
        Some(options)
    }

    fn is_legacy_watch(&self) -> bool {
        matches!(self.resource_version.as_str(), "" | "0")
    }

    /// Upstream `ShouldDelegateListMeta`: whether the list is served from storage.
    fn served_from_storage(&self, consistent_reads_from_cache: bool) -> bool {
        match self.resource_version_match.as_str() {
            "Exact" => true,
            "NotOlderThan" => false,
            "" if !self.continue_token.is_empty() => true,
            "" if self.limit > 0 && !self.is_legacy_watch() => true,
            "" if self.resource_version.is_empty() => !consistent_reads_from_cache,
            "" => false,
            _ => true,
        }
    }
}

/// The default estimator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Estimator {
    /// Its parameters.
    pub config: EstimatorConfig,
}

impl Estimator {
    /// The estimate of `request` with URL query `query`, for a level whose cap is
    /// `level_max_seats` (see [`max_seats`]; 0 for exempt and `Reject` levels). Called for
    /// exempt requests too, as upstream (quirk Q4).
    pub fn estimate(
        &self,
        request: &Request<'_>,
        query: &str,
        observed: &Observed,
        level_max_seats: u64,
    ) -> WorkEstimate {
        match request.verb {
            "list" => self.list(request, query, observed, level_max_seats),
            "watch" if self.config.watch_list => {
                self.list(request, query, observed, level_max_seats)
            }
            "create" | "update" | "patch" | "delete" => {
                self.mutating(request, observed, level_max_seats)
            }
            _ => self.seats(self.config.minimum_seats),
        }
    }

    fn seats(&self, initial_seats: u64) -> WorkEstimate {
        WorkEstimate {
            initial_seats,
            final_seats: 0,
            additional_latency: Duration::ZERO,
        }
    }

    fn list(
        &self,
        request: &Request<'_>,
        query: &str,
        observed: &Observed,
        level_max_seats: u64,
    ) -> WorkEstimate {
        let config = &self.config;
        let max_seats = capped(level_max_seats, config.maximum_list_seats);
        let Some(options) = ListOptions::parse(query) else {
            return self.seats(max_seats);
        };
        let is_watch = request.verb == "watch";
        let costs_initial_events = options.send_initial_events == Some(true)
            || (config.legacy_watch_costs && options.is_legacy_watch());
        if is_watch && !costs_initial_events {
            return self.seats(1);
        }
        let matches_single = !request.name.is_empty();
        let from_cache =
            is_watch || !options.served_from_storage(config.consistent_reads_from_cache);
        let (count, mut average_size) = match observed.objects {
            ObjectCount::Untracked => return self.seats(1),
            ObjectCount::Stale => (INFINITE_OBJECT_COUNT, MAX_OBJECT_SIZE),
            ObjectCount::Known {
                count,
                average_size,
            } => (count, average_size),
        };
        let limited = if options.limit > 0 {
            count.min(options.limit)
        } else {
            count
        };
        let seats = if config.size_based_list_cost {
            if average_size <= 0 && count != 0 {
                average_size = MAX_OBJECT_SIZE;
            }
            let objects = if matches_single {
                1
            } else if from_cache {
                limited
            } else if options.has_selector {
                limited.max(count / 2)
            } else {
                limited
            };
            let mut memory = objects.saturating_mul(average_size);
            if from_cache {
                memory = memory.min(config.cache_max_memory);
            }
            div_ceil(memory, config.bytes_per_seat)
        } else {
            let objects = if matches_single {
                1
            } else if from_cache {
                count
            } else if options.has_selector {
                count.saturating_add(limited)
            } else {
                limited.saturating_mul(2)
            };
            div_ceil(objects, config.objects_per_seat)
        };
        self.seats((seats.max(0) as u64).clamp(1, max_seats.max(1)))
    }

    fn mutating(
        &self,
        request: &Request<'_>,
        observed: &Observed,
        level_max_seats: u64,
    ) -> WorkEstimate {
        let config = &self.config;
        if !config.mutating_enabled
            || (request.resource == "serviceaccounts" && request.subresource == "token")
        {
            return self.seats(1);
        }
        let max_seats = capped(level_max_seats, config.maximum_mutating_seats);
        let watchers = observed.watchers;
        if watchers < config.watches_per_seat {
            return self.seats(1);
        }
        let wanted = watchers.div_ceil(config.watches_per_seat);
        let final_work =
            SeatSeconds::seats_times_duration(wanted as f64, config.event_additional_duration);
        let final_seats = wanted.min(max_seats);
        WorkEstimate {
            initial_seats: 1,
            final_seats,
            additional_latency: final_work.duration_per_seat(final_seats as f64),
        }
    }
}

fn div_ceil(numerator: i64, denominator: i64) -> i64 {
    if denominator <= 0 {
        return numerator;
    }
    let (n, d) = (i128::from(numerator), i128::from(denominator));
    ((n + d - 1).div_euclid(d)) as i64
}
