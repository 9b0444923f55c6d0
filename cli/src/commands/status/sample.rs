//! One reading of a server's flow control: the `apiserver_flowcontrol_*` families of its
//! `/metrics` (Prometheus text, read with prometheus-parse) and the rows of its
//! `/debug/api_priority_and_fairness/dump_priority_levels`, summed per priority level.

use std::collections::BTreeMap;

use prometheus_parse::{Scrape, Value};

/// What one reading says of one priority level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LevelReading {
    /// Seats of requests executing now (`current_executing_seats`, summed over schemas).
    pub executing_seats: f64,
    /// Requests waiting in queues now (`current_inqueue_requests`, summed).
    pub waiting_requests: f64,
    /// `nominal_limit_seats`.
    pub nominal_limit: f64,
    /// `lower_limit_seats`.
    pub lower_limit: f64,
    /// `upper_limit_seats`.
    pub upper_limit: f64,
    /// `current_limit_seats`: the nominal limit after lending and borrowing.
    pub current_limit: f64,
    /// `dispatched_requests_total`, summed over schemas (a counter).
    pub dispatched: f64,
    /// `rejected_requests_total` by reason, summed over schemas (counters).
    pub rejected: BTreeMap<String, f64>,
    /// `request_wait_duration_seconds`, summed over schemas: cumulative counts by upper bound
    /// (a counter per bucket, `+Inf` last).
    pub wait_buckets: Vec<(f64, f64)>,
    /// The dump's `ActiveQueues` column.
    pub active_queues: f64,
}

/// Every priority level's reading, by name.
pub type Reading = BTreeMap<String, LevelReading>;

/// The prefix of the families read.
const PREFIX: &str = "apiserver_flowcontrol_";

/// Reads the flow-control families of a `/metrics` text and a priority-level dump.
///
/// # Errors
///
/// A metrics text that is not Prometheus' text format.
pub fn read(metrics: &str, dump: &str) -> Result<Reading, String> {
    let scrape = Scrape::parse(metrics.lines().map(|line| Ok(line.to_owned())))
        .map_err(|e| format!("/metrics: {e}"))?;
    let mut levels = Reading::new();
    for sample in scrape.samples {
        let Some(family) = sample.metric.strip_prefix(PREFIX) else {
            continue;
        };
        let Some(level) = sample.labels.get("priority_level") else {
            continue;
        };
        let reading = levels.entry(level.to_owned()).or_default();
        let number = match &sample.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(buckets) => {
                if family == "request_wait_duration_seconds" {
                    add_buckets(
                        &mut reading.wait_buckets,
                        buckets.iter().map(|b| (b.less_than, b.count)),
                    );
                }
                continue;
            }
            Value::Summary(_) => continue,
        };
        match family {
            "current_executing_seats" => reading.executing_seats += number,
            "current_inqueue_requests" => reading.waiting_requests += number,
            "nominal_limit_seats" => reading.nominal_limit = number,
            "lower_limit_seats" => reading.lower_limit = number,
            "upper_limit_seats" => reading.upper_limit = number,
            "current_limit_seats" => reading.current_limit = number,
            "dispatched_requests_total" => reading.dispatched += number,
            "rejected_requests_total" => {
                let reason = sample.labels.get("reason").unwrap_or("unknown");
                *reading.rejected.entry(reason.to_owned()).or_default() += number;
            }
            _ => {}
        }
    }
    read_dump(dump, &mut levels);
    Ok(levels)
}

/// Adds one schema's cumulative bucket counts to a level's, bound by bound.
fn add_buckets(into: &mut Vec<(f64, f64)>, buckets: impl Iterator<Item = (f64, f64)>) {
    for (bound, count) in buckets {
        match into.iter_mut().find(|(b, _)| *b == bound) {
            Some((_, total)) => *total += count,
            None => into.push((bound, count)),
        }
    }
    into.sort_by(|a, b| a.0.total_cmp(&b.0));
}

/// The `ActiveQueues` of each level from the dump: a header line of column names, then one
/// line per level, comma-separated and padded (`pkg/util/flowcontrol/debug`).
fn read_dump(dump: &str, levels: &mut Reading) {
    let mut lines = dump.lines();
    let Some(header) = lines.next() else {
        return;
    };
    let columns: Vec<&str> = header.split(',').map(str::trim).collect();
    let (Some(name), Some(active)) = (
        columns.iter().position(|c| *c == "PriorityLevelName"),
        columns.iter().position(|c| *c == "ActiveQueues"),
    ) else {
        return;
    };
    for line in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if let (Some(level), Some(Ok(queues))) =
            (cells.get(name), cells.get(active).map(|q| q.parse::<f64>()))
        {
            levels.entry((*level).to_owned()).or_default().active_queues = queues;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRICS: &str = r#"# HELP apiserver_flowcontrol_current_executing_seats [BETA] Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem
# TYPE apiserver_flowcontrol_current_executing_seats gauge
apiserver_flowcontrol_current_executing_seats{flow_schema="a",priority_level="workload-low"} 3
apiserver_flowcontrol_current_executing_seats{flow_schema="b",priority_level="workload-low"} 2
# TYPE apiserver_flowcontrol_nominal_limit_seats gauge
apiserver_flowcontrol_nominal_limit_seats{priority_level="workload-low"} 245
# TYPE apiserver_flowcontrol_current_limit_seats gauge
apiserver_flowcontrol_current_limit_seats{priority_level="workload-low"} 200
# TYPE apiserver_flowcontrol_rejected_requests_total counter
apiserver_flowcontrol_rejected_requests_total{flow_schema="a",priority_level="workload-low",reason="queue-full"} 4
apiserver_flowcontrol_rejected_requests_total{flow_schema="b",priority_level="workload-low",reason="queue-full"} 1
apiserver_flowcontrol_rejected_requests_total{flow_schema="b",priority_level="workload-low",reason="time-out"} 2
# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="a",priority_level="workload-low",le="0.1"} 5
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="a",priority_level="workload-low",le="1"} 8
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="a",priority_level="workload-low",le="+Inf"} 8
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="a",priority_level="workload-low"} 2
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="a",priority_level="workload-low"} 8
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="b",priority_level="workload-low",le="0.1"} 1
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="b",priority_level="workload-low",le="1"} 2
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="b",priority_level="workload-low",le="+Inf"} 2
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="b",priority_level="workload-low"} 1
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="b",priority_level="workload-low"} 2
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",verb="GET"} 7
"#;

    const DUMP: &str = "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests\n\
                        workload-low,      3,            false,  false,       4,               5\n\
                        exempt,            <none>,       <none>, <none>,      <none>,          <none>\n";

    #[test]
    fn families_are_summed_per_level() {
        let reading = read(METRICS, DUMP).unwrap();
        let low = &reading["workload-low"];
        assert_eq!(low.executing_seats, 5.0);
        assert_eq!(low.nominal_limit, 245.0);
        assert_eq!(low.current_limit, 200.0);
        assert_eq!(low.rejected["queue-full"], 5.0);
        assert_eq!(low.rejected["time-out"], 2.0);
        assert_eq!(
            low.wait_buckets,
            vec![(0.1, 6.0), (1.0, 10.0), (f64::INFINITY, 10.0)]
        );
        assert_eq!(low.active_queues, 3.0);
        assert_eq!(
            reading.get("exempt"),
            None,
            "a dump row of <none> adds nothing"
        );
    }

    #[test]
    fn garbage_is_refused_or_ignored_never_a_panic() {
        for text in [
            "",
            "\u{0}",
            "{{{",
            "apiserver_flowcontrol_x{priority_level=\"a\"} notanumber",
        ] {
            let _ = read(text, text);
        }
        let reading = read("", "PriorityLevelName\nno columns, here\n,,,,\n").unwrap();
        assert!(reading.is_empty());
    }
}
