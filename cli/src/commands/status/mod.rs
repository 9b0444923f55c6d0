//! `status`: a live cluster's API Priority and Fairness over an interval, from what
//! kube-apiserver publishes of it (`/metrics` and the priority-level dump), for the people who
//! tune it on a running cluster.

mod page;
mod sample;
mod summary;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use super::{ReportFormat, emit, print_json};
use crate::failure::{Failure, printable};
use summary::LevelStatus;

/// Sample a live cluster's priority levels: seats in use against their limits, queues,
/// rejections by reason, wait p99, lending and borrowing.
///
/// Reads kube-apiserver's /metrics and /debug/api_priority_and_fairness/dump_priority_levels
/// (apfkit serve writes both) every --every for --interval, with a progress line on a
/// terminal. Gauges are reported as their mean and peak, counters as what they counted during
/// the interval. A level is saturated when its seats in use reached its current limit, and
/// starved when its requests waited or were rejected while it had lent seats (its current
/// limit below its nominal one). The identity needs get on the nonResourceURLs /metrics and
/// /debug/api_priority_and_fairness/*.
///
/// With --report, also writes one self-contained HTML page (no script, no network): what
/// matters first (rejections, queues, saturated and starved levels, what borrowing did), the
/// table, and every level's seats against its limits, queues and rejections over the run as
/// charts, the same page as apfkit simulate --report.
///
/// Examples:
///   apfkit status --kubeconfig ~/.kube/config
///   apfkit status --context prod --interval 1m --every 5s -o json
///   apfkit status --interval 30s --report status.html
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct StatusArgs {
    /// The kubeconfig file [default: $KUBECONFIG, else ~/.kube/config].
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context [default: its current context].
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// How long to sample (a Go duration: 10s, 1m30s).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = super::duration_flag)]
    interval: Duration,
    /// The time between two samples.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = super::duration_flag)]
    every: Duration,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: ReportFormat,
    /// Also write the run as one HTML page with charts to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
}

/// The report.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    samples: usize,
    seconds: f64,
    priority_levels: Vec<LevelStatus>,
}

/// `apfkit status`.
pub fn run(args: StatusArgs) -> Result<(), Failure> {
    if args.every.is_zero() {
        return Err(Failure::Usage("--every must be above zero".to_owned()));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Invalid(format!("starting the runtime: {e}")))?;
    let (timed, seconds) = runtime.block_on(sample_all(&args))?;
    let readings: Vec<sample::Reading> = timed.iter().map(|(_, r)| r.clone()).collect();
    let status = Status {
        samples: readings.len(),
        seconds,
        priority_levels: summary::summarize(&readings),
    };
    if let Some(path) = &args.report {
        let timeline = page::timeline(&timed);
        let charts = super::report::charts(&timeline)?;
        let page = page::page(&status.priority_levels, &timeline, &charts, seconds);
        super::report::write_whole(path, super::report::page(&page).as_bytes())?;
    }
    match args.output {
        ReportFormat::Json => print_json(&status),
        ReportFormat::Text => emit(&text(&status)),
    }
}

/// Reads every `--every` until `--interval` is over (once at least, and once at its end),
/// each reading with its time in seconds since the first.
async fn sample_all(args: &StatusArgs) -> Result<(Vec<(f64, sample::Reading)>, f64), Failure> {
    let client =
        crate::cluster::client(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let started = Instant::now();
    let total = (args.interval.as_secs_f64() / args.every.as_secs_f64()).floor() as u64 + 1;
    let progress = super::progress_bar(total, "sampling {pos}/{len} {bar:30}");
    let mut readings = Vec::new();
    loop {
        let metrics = crate::cluster::get(&client, "/metrics").await?;
        let dump = crate::cluster::get(
            &client,
            "/debug/api_priority_and_fairness/dump_priority_levels",
        )
        .await?;
        let at = started.elapsed().as_secs_f64();
        readings.push((at, sample::read(&metrics, &dump).map_err(Failure::Invalid)?));
        progress.inc(1);
        let elapsed = started.elapsed();
        if elapsed >= args.interval {
            break;
        }
        tokio::time::sleep(args.every.min(args.interval - elapsed)).await;
    }
    progress.finish_and_clear();
    Ok((readings, started.elapsed().as_secs_f64()))
}

fn text(status: &Status) -> String {
    let mut rows = vec![
        [
            "PriorityLevel",
            "Seats(mean/max)",
            "CurrentCL(mean)",
            "NominalCL",
            "Lower/UpperCL",
            "Waiting(mean/max)",
            "ActiveQueues(max)",
            "Dispatched",
            "Rejected",
            "WaitP99",
            "Lending",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for level in &status.priority_levels {
        let rejected: Vec<String> = level
            .rejected
            .iter()
            .map(|(reason, count)| format!("{reason}={count}"))
            .collect();
        rows.push(vec![
            level.name.clone(),
            format!(
                "{:.1}/{}",
                level.executing_seats.mean, level.executing_seats.max
            ),
            format!("{:.1}", level.current_limit.mean),
            level.nominal_limit.to_string(),
            format!("{}/{}", level.lower_limit, level.upper_limit),
            format!(
                "{:.1}/{}",
                level.waiting_requests.mean, level.waiting_requests.max
            ),
            level.active_queues.max.to_string(),
            level.dispatched.to_string(),
            if rejected.is_empty() {
                "0".to_owned()
            } else {
                rejected.join(" ")
            },
            level
                .wait_p99_seconds
                .map_or("-".to_owned(), |s| format!("{:.3}s", s)),
            level.lending.to_owned(),
        ]);
    }
    let mut out = format!(
        "{} samples over {:.1}s\n{}",
        status.samples,
        status.seconds,
        apfkit_dispatcher::dispatch::tab_table(&rows)
    );
    for level in &status.priority_levels {
        if level.saturated {
            out.push_str(&format!(
                "Saturated: {}: seats in use reached its current limit\n",
                printable(&level.name)
            ));
        }
        if level.starved {
            out.push_str(&format!(
                "Starved:   {}: requests waited or were rejected while it lent seats (current limit {:.1} below nominal {})\n",
                printable(&level.name),
                level.current_limit.mean,
                level.nominal_limit
            ));
        }
    }
    out
}
