//! What `--report` adds to `apfkit simulate` (target ≤ 20%): the default simulation run by
//! this build's binary with and without `--report FILE`, alternating, seven times each; the
//! medians compared.
//!
//! `cargo bench -p apfkit --bench report`

use std::process::Command;
use std::time::{Duration, Instant};

fn run(report: Option<&std::path::Path>) -> Duration {
    let mut command = Command::new(env!("CARGO_BIN_EXE_apfkit"));
    command.arg("simulate").stdout(std::process::Stdio::null());
    if let Some(path) = report {
        command.arg("--report").arg(path);
    }
    let started = Instant::now();
    let status = command.status().expect("apfkit runs");
    assert!(status.success());
    started.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let (mut plain, mut reported) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        plain.push(run(None));
        reported.push(run(Some(&page)));
    }
    let (plain, reported) = (median(plain), median(reported));
    println!("| simulate (median of 7) | with --report | added | target |");
    println!("|---|---|---|---|");
    println!(
        "| {:.1} ms | {:.1} ms | {:.1}% | ≤ 20% |",
        plain.as_secs_f64() * 1e3,
        reported.as_secs_f64() * 1e3,
        (reported.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0
    );
}
