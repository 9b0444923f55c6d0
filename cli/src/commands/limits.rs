//! `limits`.

use apfkit_dispatcher::borrowing::{DemandStats, LevelInput, adjust};
use apfkit_dispatcher::config::LevelBehavior;
use apfkit_dispatcher::dispatch::tab_table;
use clap::Args;
use serde::Serialize;

use super::{ReportFormat, emit, print_json};
use crate::configuration;
use crate::failure::Failure;

/// Compute each priority level's concurrency limits for a server.
///
/// nominalCL, lendableCL, borrowingCL, minCL and maxCL follow from the configuration and the
/// server's limit; currentCL is the result of one borrowing adjustment with the given seat
/// demand (0 for levels without --demand).
///
/// Examples:
///   apfkit limits
///   apfkit limits -f apf/ --server-concurrency 1000 --demand global-default=300:250.5 -o json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct LimitsArgs {
    /// Configuration: file, directory or - (repeatable); the embedded default when absent.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    paths: Vec<String>,
    #[command(flatten)]
    input: crate::input::InputArgs,
    #[command(flatten)]
    cluster: crate::cluster::ClusterArgs,
    /// The server's concurrency limit (--max-requests-inflight + --max-mutating-requests-inflight).
    #[arg(long, value_name = "N", default_value_t = 600)]
    server_concurrency: i32,
    /// A level's seat demand over the last period: its high watermark and smoothed envelope
    /// (repeatable).
    #[arg(long, value_name = "PL=HIGHWATERMARK:SMOOTHED", value_parser = parse_demand)]
    demand: Vec<(String, DemandStats)>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: ReportFormat,
}

fn parse_demand(value: &str) -> Result<(String, DemandStats), String> {
    let expected =
        || format!("{value:?}: expected PL=HIGHWATERMARK:SMOOTHED, such as workload-low=40:35.5");
    let (level, numbers) = value.split_once('=').ok_or_else(expected)?;
    let (high, smoothed) = numbers.split_once(':').ok_or_else(expected)?;
    let high_watermark: i64 = high.parse().map_err(|_| expected())?;
    let smoothed: f64 = smoothed.parse().map_err(|_| expected())?;
    if level.is_empty() || high_watermark < 0 || !(smoothed.is_finite() && smoothed >= 0.0) {
        return Err(expected());
    }
    Ok((
        level.to_owned(),
        DemandStats {
            high_watermark,
            smoothed,
        },
    ))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Limits {
    server_concurrency_limit: i32,
    priority_levels: Vec<LevelLimits>,
}

#[derive(Debug, Serialize)]
struct LevelLimits {
    name: String,
    #[serde(rename = "type")]
    type_: String,
    #[serde(rename = "nominalCL")]
    nominal: i64,
    #[serde(rename = "lendableCL")]
    lendable: i64,
    #[serde(rename = "borrowingCL")]
    borrowing: i64,
    #[serde(rename = "minCL")]
    min: i64,
    #[serde(rename = "maxCL")]
    max: i64,
    #[serde(rename = "currentCL")]
    current: i64,
}

/// `apfkit limits`.
pub fn run(args: LimitsArgs) -> Result<(), Failure> {
    args.input.apply();
    let config = configuration::load(&args.paths, &args.cluster, Some(args.server_concurrency))?;
    for (name, _) in &args.demand {
        if config.priority_level(name).is_none() {
            return Err(Failure::Invalid(format!(
                "--demand {name}: no such priority level"
            )));
        }
    }
    let levels = config.priority_levels();
    let inputs: Vec<LevelInput> = levels
        .iter()
        .map(|level| LevelInput {
            exempt: matches!(level.behavior, LevelBehavior::Exempt),
            limits: level.limits,
            stats: args
                .demand
                .iter()
                .rev()
                .find(|(name, _)| name == level.name())
                .map(|(_, stats)| *stats)
                .unwrap_or_default(),
            current: level.limits.nominal,
        })
        .collect();
    let nominal_sum = levels.iter().map(|l| l.limits.nominal).sum();
    let adjustment = adjust(&inputs, nominal_sum);
    let limits = Limits {
        server_concurrency_limit: config.server_concurrency_limit(),
        priority_levels: levels
            .iter()
            .zip(&adjustment.current)
            .map(|(level, &current)| LevelLimits {
                name: level.name().to_owned(),
                type_: level.object.spec.type_.clone(),
                nominal: level.limits.nominal,
                lendable: level.limits.lendable,
                borrowing: level.limits.borrowing,
                min: level.limits.min,
                max: level.limits.max,
                current,
            })
            .collect(),
    };
    match args.output {
        ReportFormat::Json => print_json(&limits),
        ReportFormat::Text => {
            let mut rows = vec![
                [
                    "PriorityLevel",
                    "Type",
                    "NominalCL",
                    "LendableCL",
                    "BorrowingCL",
                    "MinCL",
                    "MaxCL",
                    "CurrentCL",
                ]
                .map(str::to_owned)
                .to_vec(),
            ];
            for l in &limits.priority_levels {
                rows.push(vec![
                    l.name.clone(),
                    l.type_.clone(),
                    l.nominal.to_string(),
                    l.lendable.to_string(),
                    l.borrowing.to_string(),
                    l.min.to_string(),
                    l.max.to_string(),
                    l.current.to_string(),
                ]);
            }
            emit(&format!(
                "Server concurrency limit: {}\n{}",
                limits.server_concurrency_limit,
                tab_table(&rows)
            ))
        }
    }
}
