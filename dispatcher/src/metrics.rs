//! kube-apiserver's API Priority and Fairness metrics (feature `tokio`), with the names,
//! labels, help texts and buckets of `k8s.io/apiserver/pkg/util/flowcontrol/metrics/metrics.go`,
//! kept by a [`crate::guard::Guard`] in a [`prometheus::Registry`].
//!
//! ```
//! use apfkit_dispatcher::config::Configuration;
//! use apfkit_dispatcher::guard::Guard;
//! use apfkit_dispatcher::metrics::ApfMetrics;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let registry = prometheus::Registry::new();
//! let metrics = ApfMetrics::register(&registry).unwrap();
//! let guard = Guard::new(Configuration::kubernetes_default(600).unwrap());
//! guard.record_metrics(metrics);
//! let text = prometheus::TextEncoder::new().encode_to_string(&registry.gather()).unwrap();
//! assert!(text.contains("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"workload-low\"} 245"));
//! # drop(guard);
//! # }
//! ```

use std::sync::{Arc, Mutex};

use prometheus::core::{Collector, Desc};
use prometheus::proto::{Bucket, Histogram, LabelPair, Metric, MetricFamily, MetricType};
use prometheus::{
    Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};

use crate::dispatch::Dispatcher;
use crate::guard::Matched;
use crate::timing::TimingSnapshot;

const QUEUE_LENGTH_BUCKETS: &[f64] = &[0.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0];
const REQUEST_DURATION_BUCKETS: &[f64] = &[
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];
const WORK_ESTIMATED_SEATS_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 100.0];

const LEVEL: &str = "priority_level";
const SCHEMA: &str = "flow_schema";

/// The APF metric families, registered in one registry.
#[derive(Clone)]
pub struct ApfMetrics {
    pub(crate) rejected: IntCounterVec,
    pub(crate) dispatched: IntCounterVec,
    pub(crate) in_queue_requests: IntGaugeVec,
    pub(crate) in_queue_seats: IntGaugeVec,
    pub(crate) executing_requests: IntGaugeVec,
    pub(crate) executing_seats: IntGaugeVec,
    pub(crate) queue_length: HistogramVec,
    pub(crate) wait: HistogramVec,
    pub(crate) execution: HistogramVec,
    pub(crate) estimated_seats: HistogramVec,
    levels: LevelGauges,
    demand: Arc<DemandSeats>,
}

/// The per-level gauges set at each configuration and adjustment.
#[derive(Clone)]
struct LevelGauges {
    nominal: GaugeVec,
    lower: GaugeVec,
    upper: GaugeVec,
    current: GaugeVec,
    concurrency_limit: GaugeVec,
    high_watermark: GaugeVec,
    smoothed: GaugeVec,
    fair_fraction: Gauge,
}

impl std::fmt::Debug for ApfMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApfMetrics").finish_non_exhaustive()
    }
}

/// `[STABILITY] help`, as component-base prefixes help texts.
fn opts(name: &str, stability: &str, help: &str) -> Opts {
    Opts::new(name, format!("[{stability}] {help}"))
        .namespace("apiserver")
        .subsystem("flowcontrol")
}

fn histogram(name: &str, stability: &str, help: &str, buckets: &[f64]) -> HistogramOpts {
    HistogramOpts::from(opts(name, stability, help)).buckets(buckets.to_vec())
}

fn register<C: Collector + Clone + 'static>(
    registry: &Registry,
    collector: C,
) -> prometheus::Result<C> {
    registry.register(Box::new(collector.clone()))?;
    Ok(collector)
}

impl ApfMetrics {
    /// Creates the families and registers them in `registry`.
    ///
    /// # Errors
    ///
    /// A family of the same name is registered already.
    pub fn register(registry: &Registry) -> prometheus::Result<Self> {
        let by_flow = [LEVEL, SCHEMA];
        let levels = LevelGauges {
            nominal: register(
                registry,
                GaugeVec::new(
                    opts(
                        "nominal_limit_seats",
                        "BETA",
                        "Nominal number of execution seats configured for each priority level",
                    ),
                    &[LEVEL],
                )?,
            )?,
            lower: register(
                registry,
                GaugeVec::new(
                    opts(
                        "lower_limit_seats",
                        "ALPHA",
                        "Configured lower bound on number of execution seats available to each priority level",
                    ),
                    &[LEVEL],
                )?,
            )?,
            upper: register(
                registry,
                GaugeVec::new(
                    opts(
                        "upper_limit_seats",
                        "ALPHA",
                        "Configured upper bound on number of execution seats available to each priority level",
                    ),
                    &[LEVEL],
                )?,
            )?,
            current: register(
                registry,
                GaugeVec::new(
                    opts(
                        "current_limit_seats",
                        "ALPHA",
                        "current derived number of execution seats available to each priority level",
                    ),
                    &[LEVEL],
                )?,
            )?,
            concurrency_limit: register(
                registry,
                GaugeVec::new(
                    opts(
                        "request_concurrency_limit",
                        "ALPHA",
                        "(Deprecated since 1.30.0) Nominal number of execution seats configured for each priority level",
                    ),
                    &[LEVEL],
                )?,
            )?,
            high_watermark: register(
                registry,
                GaugeVec::new(
                    opts(
                        "demand_seats_high_watermark",
                        "ALPHA",
                        "High watermark, over last adjustment period, of demand_seats",
                    ),
                    &[LEVEL],
                )?,
            )?,
            smoothed: register(
                registry,
                GaugeVec::new(
                    opts("demand_seats_smoothed", "ALPHA", "Smoothed seat demands"),
                    &[LEVEL],
                )?,
            )?,
            fair_fraction: register(
                registry,
                Gauge::with_opts(opts(
                    "seat_fair_frac",
                    "ALPHA",
                    "Fair fraction of server's concurrency to allocate to each priority level that can use it",
                ))?,
            )?,
        };
        let demand = Arc::new(DemandSeats::new()?);
        registry.register(Box::new(DemandSeatsCollector(demand.clone())))?;
        Ok(ApfMetrics {
            rejected: register(
                registry,
                IntCounterVec::new(
                    opts(
                        "rejected_requests_total",
                        "BETA",
                        "Number of requests rejected by API Priority and Fairness subsystem",
                    ),
                    &[LEVEL, SCHEMA, "reason"],
                )?,
            )?,
            dispatched: register(
                registry,
                IntCounterVec::new(
                    opts(
                        "dispatched_requests_total",
                        "BETA",
                        "Number of requests executed by API Priority and Fairness subsystem",
                    ),
                    &by_flow,
                )?,
            )?,
            in_queue_requests: register(
                registry,
                IntGaugeVec::new(
                    opts(
                        "current_inqueue_requests",
                        "BETA",
                        "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
                    ),
                    &by_flow,
                )?,
            )?,
            in_queue_seats: register(
                registry,
                IntGaugeVec::new(
                    opts(
                        "current_inqueue_seats",
                        "ALPHA",
                        "Number of seats currently pending in queues of the API Priority and Fairness subsystem",
                    ),
                    &by_flow,
                )?,
            )?,
            executing_requests: register(
                registry,
                IntGaugeVec::new(
                    opts(
                        "current_executing_requests",
                        "BETA",
                        "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
                    ),
                    &by_flow,
                )?,
            )?,
            executing_seats: register(
                registry,
                IntGaugeVec::new(
                    opts(
                        "current_executing_seats",
                        "BETA",
                        "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem",
                    ),
                    &by_flow,
                )?,
            )?,
            queue_length: register(
                registry,
                HistogramVec::new(
                    histogram(
                        "request_queue_length_after_enqueue",
                        "ALPHA",
                        "Length of queue in the API Priority and Fairness subsystem, as seen by each request after it is enqueued",
                        QUEUE_LENGTH_BUCKETS,
                    ),
                    &by_flow,
                )?,
            )?,
            wait: register(
                registry,
                HistogramVec::new(
                    histogram(
                        "request_wait_duration_seconds",
                        "BETA",
                        "Length of time a request spent waiting in its queue",
                        REQUEST_DURATION_BUCKETS,
                    ),
                    &[LEVEL, SCHEMA, "execute"],
                )?,
            )?,
            execution: register(
                registry,
                HistogramVec::new(
                    histogram(
                        "request_execution_seconds",
                        "ALPHA",
                        "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem",
                        REQUEST_DURATION_BUCKETS,
                    ),
                    &[LEVEL, SCHEMA, "type"],
                )?,
            )?,
            estimated_seats: register(
                registry,
                HistogramVec::new(
                    histogram(
                        "work_estimated_seats",
                        "ALPHA",
                        "Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness",
                        WORK_ESTIMATED_SEATS_BUCKETS,
                    ),
                    &by_flow,
                )?,
            )?,
            levels,
            demand,
        })
    }

    /// Sets the per-level gauges from `dispatcher` after a configuration or an adjustment;
    /// levels no longer configured disappear from them. `now` is the dispatcher's clock.
    pub(crate) fn note_levels(&self, dispatcher: &Dispatcher) {
        let gauges = &self.levels;
        for vec in [
            &gauges.nominal,
            &gauges.lower,
            &gauges.upper,
            &gauges.current,
            &gauges.concurrency_limit,
            &gauges.high_watermark,
            &gauges.smoothed,
        ] {
            vec.reset();
        }
        for (_, level) in dispatcher.configured_levels() {
            let name = [level.name.as_str()];
            gauges
                .nominal
                .with_label_values(&name)
                .set(level.limits.nominal as f64);
            gauges
                .concurrency_limit
                .with_label_values(&name)
                .set(level.limits.nominal as f64);
            gauges
                .lower
                .with_label_values(&name)
                .set(level.limits.min as f64);
            gauges
                .upper
                .with_label_values(&name)
                .set(level.limits.max as f64);
            gauges
                .current
                .with_label_values(&name)
                .set(level.current as f64);
            gauges
                .high_watermark
                .with_label_values(&name)
                .set(level.stats.high_watermark as f64);
            gauges
                .smoothed
                .with_label_values(&name)
                .set(level.stats.smoothed);
        }
        gauges
            .fair_fraction
            .set(dispatcher.fair_fraction().unwrap_or(0.0));
    }

    /// Gives the `demand_seats` collector what to read at each scrape: every configured
    /// level's name and timing histogram.
    pub(crate) fn read_demand_with(&self, read: ReadDemand) {
        *self.demand.read.lock().unwrap_or_else(|p| p.into_inner()) = Some(read);
    }

    /// The label values of a request's flow.
    pub(crate) fn flow(matched: &Matched) -> [&str; 2] {
        [&matched.priority_level, &matched.flow_schema]
    }
}

/// Reads every configured level's name and `demand_seats` histogram.
pub(crate) type ReadDemand = Box<dyn Fn() -> Vec<(String, TimingSnapshot)> + Send + Sync>;

/// `apiserver_flowcontrol_demand_seats`, a timing ratio histogram per level, read from the
/// dispatcher's levels at each scrape.
struct DemandSeats {
    desc: Desc,
    read: Mutex<Option<ReadDemand>>,
}

impl DemandSeats {
    fn new() -> prometheus::Result<Self> {
        let desc = Desc::new(
            "apiserver_flowcontrol_demand_seats".to_owned(),
            "[ALPHA] Observations, at the end of every nanosecond, of (the number of seats each priority level could use) / (nominal number of seats for that level)".to_owned(),
            vec![LEVEL.to_owned()],
            Default::default(),
        )?;
        Ok(DemandSeats {
            desc,
            read: Mutex::new(None),
        })
    }
}

struct DemandSeatsCollector(Arc<DemandSeats>);

impl Collector for DemandSeatsCollector {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.0.desc]
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let read = self.0.read.lock().unwrap_or_else(|p| p.into_inner());
        let Some(read) = read.as_ref() else {
            return Vec::new();
        };
        let mut family = MetricFamily::default();
        family.set_name(self.0.desc.fq_name.clone());
        family.set_help(self.0.desc.help.clone());
        family.set_field_type(MetricType::HISTOGRAM);
        let mut metrics = Vec::new();
        for (level, snapshot) in read() {
            let mut label = LabelPair::default();
            label.set_name(LEVEL.to_owned());
            label.set_value(level);
            let mut histogram = Histogram::default();
            histogram.set_sample_count(snapshot.count);
            histogram.set_sample_sum(snapshot.sum);
            histogram.set_bucket(
                snapshot
                    .buckets
                    .iter()
                    .map(|(bound, count)| {
                        let mut bucket = Bucket::default();
                        bucket.set_upper_bound(*bound);
                        bucket.set_cumulative_count(*count);
                        bucket
                    })
                    .collect(),
            );
            let mut metric = Metric::default();
            metric.set_label(vec![label]);
            metric.set_histogram(histogram);
            metrics.push(metric);
        }
        family.set_metric(metrics);
        vec![family]
    }
}
