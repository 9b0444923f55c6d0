//! `simulate`.

use std::io::{IsTerminal, Read};
use std::time::{Duration, Instant};

use apfkit_dispatcher::sim::server::{simulate_recording, simulate_within};
use apfkit_dispatcher::sim::workload::{Limits, Workload};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::{ReportFormat, emit, print_json};
use crate::configuration;
use crate::failure::{Failure, Location};

/// Simulate a workload against a configuration and report what each level and flow gets.
///
/// The simulation is deterministic for a seed. The workload file (YAML, see docs/workload.md)
/// names request streams by user, groups, verb and resource, with open-loop rates or
/// closed-loop clients; without --workload the embedded default workload runs. The report has
/// a table per priority level and per flow (executed, rejected by reason, wait p50/p99,
/// average seats) and kube-apiserver's dump_priority_levels table.
///
/// With --audit-log, replays kube-apiserver's audit log instead (audit.k8s.io/v1 Events, one
/// JSON object per line, as --audit-log-path writes them; apfkit serve's too) through two
/// configurations side by side: the proposed one (-f, else the embedded default) and the one
/// in force (--in-force, else the cluster of --kubeconfig/--context, else the embedded
/// default). Each request arrives when it was received and executes for the time it took
/// less its recorded queue wait, with apfkit's recorded seats or 1. The report names the
/// users queued or rejected under either, and each level under both. The log is read as a
/// stream (bounded memory for any size); lines that cannot be used are named on standard
/// error.
///
/// With --report, also writes one self-contained HTML page (no script, no network) with the
/// tables and, as inline SVG charts, every busy level's seats against its limits, its queues
/// and its rejections over time, and every stream's wait times; --plot writes the charts alone
/// as SVG files into a directory.
///
/// Examples:
///   apfkit simulate
///   apfkit simulate -f apf/ --workload load.yaml --server-concurrency 400 --seed 7 -o json
///   apfkit simulate --report report.html --plot charts/
///   apfkit simulate --audit-log audit.log -f proposed/ --kubeconfig ~/.kube/config
///   apfkit simulate --audit-log audit.log -f proposed/ --in-force current/ -o json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct SimulateArgs {
    /// Configuration: file, directory or - (repeatable); the embedded default when absent.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    paths: Vec<String>,
    #[command(flatten)]
    input: crate::input::InputArgs,
    #[command(flatten)]
    cluster: crate::cluster::ClusterArgs,
    /// Workload file (YAML or JSON), or - for standard input.
    #[arg(long, value_name = "FILE")]
    workload: Option<String>,
    /// Replay this audit log (JSON lines of audit.k8s.io/v1 Events, or - for standard input)
    /// through the -f configuration and the one in force.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["workload", "report", "plot"])]
    audit_log: Option<String>,
    /// With --audit-log: the configuration in force, file, directory or - (repeatable);
    /// else the cluster of --kubeconfig/--context, else the embedded default.
    #[arg(long, value_name = "PATH", requires = "audit_log")]
    in_force: Vec<String>,
    /// Most requests the workload may send (expected for open-loop streams, at most for
    /// closed-loop ones); each costs about a microsecond. Workloads are also limited to
    /// 100,000 users, 100,000 clients, 1,000 seats per request and 24 h for every duration.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_requests)]
    max_requests: u64,
    /// The server's concurrency limit.
    #[arg(long, value_name = "N", default_value_t = 600)]
    server_concurrency: i32,
    /// Seed of the random arrivals.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: ReportFormat,
    /// Also write the report as one HTML page with charts to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<std::path::PathBuf>,
    /// Also write the charts as SVG files into DIR (made if missing).
    #[arg(long, value_name = "DIR")]
    plot: Option<std::path::PathBuf>,
}

fn read_workload(path: &str, limits: &Limits) -> Result<Workload, Failure> {
    let location = Location {
        file: path.to_owned(),
        document: None,
    };
    // A workload is one document: it gets the same byte limit as any other.
    let limit = crate::input::limits().max_document_bytes;
    let reader: Box<dyn Read> = if path == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(path).map_err(|e| Failure::at(&location, e))?)
    };
    let mut text = String::new();
    reader
        .take(limit as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| Failure::at(&location, e))?;
    if text.len() > limit {
        return Err(Failure::at(
            &location,
            format!("larger than {limit} bytes (raise the limit with --max-document-size)"),
        ));
    }
    // The message once, with its line and column, after the file's name (serde-saphyr's
    // snippet would repeat the message and name the file `<input>`).
    let workload: Workload =
        serde_saphyr::from_str(&text).map_err(|e| Failure::at(&location, e.without_snippet()))?;
    workload
        .check_within(limits)
        .map_err(|e| Failure::at(&location, e))?;
    Ok(workload)
}

/// `apfkit simulate --audit-log`.
fn replay(args: &SimulateArgs, log: &str) -> Result<(), Failure> {
    let concurrency = Some(args.server_concurrency);
    let in_force = if args.in_force.is_empty() {
        configuration::load(&[], &args.cluster, concurrency)?
    } else {
        configuration::load(&args.in_force, &args.cluster.without_cluster(), concurrency)?
    };
    let proposed = configuration::load(&args.paths, &args.cluster.without_cluster(), concurrency)?;
    super::replay::run(
        log,
        in_force,
        proposed,
        args.output,
        progress_bar("replaying"),
    )
}

/// A progress bar on a terminal, shown once a run has lasted a second, fed fractions done.
fn progress_bar(label: &str) -> impl FnMut(f64) {
    let started = Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let mut bar: Option<ProgressBar> = None;
    let template = format!("{label} {{bar:40}} {{percent}}% ({{elapsed}})");
    move |fraction: f64| {
        if !terminal || started.elapsed() < Duration::from_secs(1) {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::new(1000);
            if let Ok(style) = ProgressStyle::with_template(&template) {
                bar.set_style(style);
            }
            bar
        });
        bar.set_position((fraction * 1000.0) as u64);
    }
}

/// `apfkit simulate`.
pub fn run(args: SimulateArgs) -> Result<(), Failure> {
    args.input.apply();
    let limits = Limits {
        max_requests: args.max_requests,
        ..Limits::default()
    };
    if let Some(log) = &args.audit_log {
        return replay(&args, log);
    }
    let mut workload = match &args.workload {
        Some(path) => read_workload(path, &limits)?,
        None => Workload::embedded_default(),
    };
    let (config, release) = configuration::load_with_release(
        &args.paths,
        &args.cluster,
        Some(args.server_concurrency),
    )?;
    // Streams that give the objects they read are sized by this release's work estimator.
    workload.release = release;
    let progress = progress_bar("simulating");
    let record = args.report.is_some() || args.plot.is_some();
    let simulated = if record {
        simulate_recording(config, &workload, &limits, args.seed, progress)
    } else {
        simulate_within(config, &workload, &limits, args.seed, progress)
    };
    let mut report = simulated.map_err(|e| {
        Failure::Invalid(format!(
            "{}: {e}",
            args.workload.as_deref().unwrap_or("embedded workload")
        ))
    })?;
    if let Some(timeline) = report.timeline.take() {
        let charts = super::report::charts(&timeline)?;
        if let Some(dir) = &args.plot {
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::output(&dir.display().to_string(), e))?;
            for chart in charts.all() {
                super::report::write_whole(&dir.join(&chart.file_name), chart.svg.as_bytes())?;
            }
        }
        if let Some(path) = &args.report {
            let page = super::report::simulation_page(&report, &timeline, &charts);
            super::report::write_whole(path, super::report::page(&page).as_bytes())?;
        }
    }
    match args.output {
        ReportFormat::Json => print_json(&report),
        ReportFormat::Text => emit(&report.to_text()),
    }
}
