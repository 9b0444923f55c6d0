//! The differential suite: each case is a script of requests sent to the reference
//! kube-apiserver and to apfkit's server on its embedded store and on etcd; a case passes when
//! every apfkit answer equals the reference's after normalization. The servers start once, on
//! the first case, and stop after the last; cases run side by side, each on objects of its
//! own names.
//!
//! Run by `.ci/reference` (which builds the reference first); `.ci/reference -- NAME` runs the
//! cases whose names contain NAME.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use apfkit_differential::{Case, Servers};
use libtest_mimic::{Arguments, Failed, Trial};

mod audit;
mod authorization;
mod caching;
mod configuration;
mod conversion;
mod corpora;
mod crds;
mod decoding;
mod deletion;
mod events;
mod lists;
mod migrations;
mod namespaces;
mod openapi;
mod options;
mod patches;
mod ratcheting;
mod routes;
mod sequences;
mod services;
mod subresources;
mod tables;
mod verbs;
mod writes;

fn main() -> std::process::ExitCode {
    let arguments = Arguments::from_args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    // Started by the first case; when they cannot start, every case fails with why, once.
    let servers: Arc<OnceLock<Result<Servers, String>>> = Arc::default();
    let cases: Vec<(&str, Case)> = [
        audit::CASES,
        authorization::CASES,
        caching::CASES,
        configuration::CASES,
        conversion::CASES,
        corpora::CASES,
        crds::CASES,
        decoding::CASES,
        deletion::CASES,
        events::CASES,
        lists::CASES,
        migrations::CASES,
        namespaces::CASES,
        openapi::CASES,
        options::CASES,
        patches::CASES,
        ratcheting::CASES,
        routes::CASES,
        services::CASES,
        subresources::CASES,
        tables::CASES,
        verbs::CASES,
        writes::CASES,
    ]
    .concat();
    let case_count = cases.len();
    // Requests sent to each server by the cases that passed.
    let compared: Arc<AtomicUsize> = Arc::default();
    // Random sequences run and their requests to each server.
    let random: Arc<(AtomicUsize, AtomicUsize)> = Arc::default();
    let trials = cases
        .into_iter()
        .map(|(name, case)| {
            let (servers, runtime) = (servers.clone(), runtime.handle().clone());
            let compared = compared.clone();
            Trial::test(name, move || {
                let servers = started(&servers, &runtime)?;
                let sent = runtime
                    .block_on(servers.compare(name, case))
                    .map_err(Failed::from)?;
                compared.fetch_add(sent, Ordering::Relaxed);
                Ok(())
            })
        })
        .chain(std::iter::once({
            let (servers, runtime) = (servers.clone(), runtime.handle().clone());
            let random = random.clone();
            Trial::test("random_sequences", move || {
                let servers = started(&servers, &runtime)?;
                let counted = sequences::run(servers, &runtime).map_err(Failed::from)?;
                random.0.store(counted.sequences, Ordering::Relaxed);
                random.1.store(counted.requests, Ordering::Relaxed);
                Ok(())
            })
        }))
        .collect::<Vec<_>>();
    let whole_run = arguments.filter.is_none() && arguments.skip.is_empty() && !arguments.list;
    let conclusion = libtest_mimic::run(&arguments, trials);
    // The servers stop before the runtime their tasks run on.
    drop(servers);
    drop(runtime);
    let compared = compared.load(Ordering::Relaxed);
    let (sequences, sequence_requests) = (
        random.0.load(Ordering::Relaxed),
        random.1.load(Ordering::Relaxed),
    );
    println!(
        "differential: {compared} requests of {case_count} cases and {sequence_requests} of \
         {sequences} random sequences sent to each of kube-apiserver and apfkit on two \
         backends, every answer compared ({} answers)",
        (compared + sequence_requests) * 2
    );
    let counts = Counts {
        cases: case_count,
        requests: compared,
        sequences,
        sequence_requests,
    };
    if whole_run
        && sequences::defaults()
        && conclusion.num_failed == 0
        && let Err(stale) = counts.hold()
    {
        eprintln!("{stale}");
        return std::process::ExitCode::FAILURE;
    }
    conclusion.exit_code()
}

/// The servers, started on the first call; the reason they did not start on every call.
fn started<'a>(
    servers: &'a OnceLock<Result<Servers, String>>,
    runtime: &tokio::runtime::Handle,
) -> Result<&'a Servers, Failed> {
    servers
        .get_or_init(|| {
            std::panic::catch_unwind(|| runtime.block_on(Servers::start()))
                .map_err(|panic| panic_message(&*panic))
        })
        .as_ref()
        .map_err(|why| Failed::from(format!("the servers did not start: {why}")))
}

/// What a whole run compared.
struct Counts {
    cases: usize,
    requests: usize,
    sequences: usize,
    sequence_requests: usize,
}

impl Counts {
    /// Whether docs/conformance.md gives this run's counts (after a whole run that passed, of
    /// the default random sequences).
    fn hold(&self) -> Result<(), String> {
        let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/conformance.md");
        let text =
            std::fs::read_to_string(&page).map_err(|e| format!("{}: {e}", page.display()))?;
        let count = |row: &str| {
            text.lines()
                .find(|line| line.starts_with(row))
                .and_then(|line| line.trim_end_matches('|').rsplit('|').next())
                .and_then(|cell| cell.trim().parse::<usize>().ok())
        };
        let rows = [
            ("| cases compared |", self.cases),
            ("| requests sent to each server |", self.requests),
            (
                "| answers identical after normalization |",
                self.requests * 2,
            ),
            ("| seeded random sequences compared |", self.sequences),
            ("| their requests to each server |", self.sequence_requests),
        ];
        for (row, counted) in rows {
            if count(row) != Some(counted) {
                return Err(format!(
                    "docs/conformance.md: the row `{row}` should say {counted} (this run's count)"
                ));
            }
        }
        Ok(())
    }
}

/// What a panic said.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// The cases of a module, each an `async fn(&mut Session)`, by name.
#[macro_export]
macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        pub const CASES: &[(&str, apfkit_differential::Case)] = &[$(
            (stringify!($case), |session| Box::pin($case(session))),
        )*];
    };
}
