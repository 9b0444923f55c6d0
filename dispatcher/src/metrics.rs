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

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use prometheus::core::{Collector, Desc};
use prometheus::proto::{self, Bucket, LabelPair, Metric, MetricFamily, MetricType};
use prometheus::{
    Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry,
};

use crate::dispatch::{Dispatcher, Matched};
use crate::queueset::RejectReason;
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
    rejected: IntCounterVec,
    dispatched: IntCounterVec,
    in_queue_requests: IntGaugeVec,
    in_queue_seats: IntGaugeVec,
    executing_requests: IntGaugeVec,
    executing_seats: IntGaugeVec,
    queue_length: HistogramVec,
    wait: HistogramVec,
    execution: HistogramVec,
    estimated_seats: HistogramVec,
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
            let mut histogram = proto::Histogram::default();
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

/// One flow's metric children (priority level and FlowSchema), each looked up in its family
/// once, when first used (so that, as with client_golang, a flow shows only in the families
/// it has touched).
pub(crate) struct FlowMetrics {
    families: ApfMetrics,
    level: String,
    schema: String,
    estimated_seats: OnceLock<Histogram>,
    dispatched: OnceLock<IntCounter>,
    waited_executed: OnceLock<Histogram>,
    waited_rejected: OnceLock<Histogram>,
    in_queue_requests: OnceLock<IntGauge>,
    in_queue_seats: OnceLock<IntGauge>,
    queue_length: OnceLock<Histogram>,
    executing_requests: OnceLock<IntGauge>,
    executing_seats: OnceLock<IntGauge>,
    execution_regular: OnceLock<Histogram>,
    execution_watch: OnceLock<Histogram>,
}

impl FlowMetrics {
    pub(crate) fn new(families: &ApfMetrics, matched: &Matched) -> Self {
        FlowMetrics {
            families: families.clone(),
            level: matched.priority_level.clone(),
            schema: matched.flow_schema.clone(),
            estimated_seats: OnceLock::new(),
            dispatched: OnceLock::new(),
            waited_executed: OnceLock::new(),
            waited_rejected: OnceLock::new(),
            in_queue_requests: OnceLock::new(),
            in_queue_seats: OnceLock::new(),
            queue_length: OnceLock::new(),
            executing_requests: OnceLock::new(),
            executing_seats: OnceLock::new(),
            execution_regular: OnceLock::new(),
            execution_watch: OnceLock::new(),
        }
    }

    fn labels(&self) -> [&str; 2] {
        [&self.level, &self.schema]
    }

    fn with<'a>(&'a self, third: &'a str) -> [&'a str; 3] {
        [&self.level, &self.schema, third]
    }

    /// The request's estimated seats (the most it will hold).
    pub(crate) fn estimated(&self, seats: u64) {
        self.estimated_seats
            .get_or_init(|| {
                self.families
                    .estimated_seats
                    .with_label_values(&self.labels())
            })
            .observe(seats as f64);
    }

    /// A request entered its queue, which then held `length` requests.
    pub(crate) fn enqueued(&self, seats: u64, length: usize) {
        self.in_queue_requests
            .get_or_init(|| {
                self.families
                    .in_queue_requests
                    .with_label_values(&self.labels())
            })
            .inc();
        self.in_queue_seats
            .get_or_init(|| {
                self.families
                    .in_queue_seats
                    .with_label_values(&self.labels())
            })
            .add(gauge(seats));
        self.queue_length
            .get_or_init(|| self.families.queue_length.with_label_values(&self.labels()))
            .observe(length as f64);
    }

    /// A request entered an empty queue and left it at once (its queue held one request).
    pub(crate) fn passed_queue(&self) {
        self.queue_length
            .get_or_init(|| self.families.queue_length.with_label_values(&self.labels()))
            .observe(1.0);
    }

    /// A request left its queue.
    pub(crate) fn dequeued(&self, seats: u64) {
        self.in_queue_requests
            .get_or_init(|| {
                self.families
                    .in_queue_requests
                    .with_label_values(&self.labels())
            })
            .dec();
        self.in_queue_seats
            .get_or_init(|| {
                self.families
                    .in_queue_seats
                    .with_label_values(&self.labels())
            })
            .sub(gauge(seats));
    }

    /// A request started executing with `seats`, after `waited` in its queue (`None` on
    /// levels without queues, whose waits are not observed).
    pub(crate) fn started(&self, seats: u64, waited: Option<Duration>) {
        self.dispatched
            .get_or_init(|| self.families.dispatched.with_label_values(&self.labels()))
            .inc();
        if let Some(waited) = waited {
            self.waited_executed
                .get_or_init(|| self.families.wait.with_label_values(&self.with("true")))
                .observe(waited.as_secs_f64());
        }
        self.executing_requests
            .get_or_init(|| {
                self.families
                    .executing_requests
                    .with_label_values(&self.labels())
            })
            .inc();
        self.executing_seats
            .get_or_init(|| {
                self.families
                    .executing_seats
                    .with_label_values(&self.labels())
            })
            .add(gauge(seats));
    }

    /// A request dispatched from its queue whose waiter was gone: it finished at once.
    pub(crate) fn dispatched_unserved(&self) {
        self.dispatched
            .get_or_init(|| self.families.dispatched.with_label_values(&self.labels()))
            .inc();
    }

    /// A request ended its execution of `took`, holding `seats`.
    pub(crate) fn finished(&self, seats: u64, took: Duration, watch: bool) {
        self.executing_requests
            .get_or_init(|| {
                self.families
                    .executing_requests
                    .with_label_values(&self.labels())
            })
            .dec();
        self.executing_seats
            .get_or_init(|| {
                self.families
                    .executing_seats
                    .with_label_values(&self.labels())
            })
            .sub(gauge(seats));
        let cell = if watch {
            &self.execution_watch
        } else {
            &self.execution_regular
        };
        cell.get_or_init(|| {
            let kind = if watch { "watch" } else { "regular" };
            self.families.execution.with_label_values(&self.with(kind))
        })
        .observe(took.as_secs_f64());
    }

    /// A rejection by reason; with its wait when the request had queued.
    pub(crate) fn rejected(&self, reason: RejectReason, waited: Option<Duration>) {
        self.families
            .rejected
            .with_label_values(&self.with(reason.as_str()))
            .inc();
        if let Some(waited) = waited {
            self.waited_rejected
                .get_or_init(|| self.families.wait.with_label_values(&self.with("false")))
                .observe(waited.as_secs_f64());
        }
    }
}

impl std::fmt::Debug for FlowMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowMetrics")
            .field("level", &self.level)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// Whole seats as a gauge delta.
fn gauge(seats: u64) -> i64 {
    i64::try_from(seats).unwrap_or(i64::MAX)
}
