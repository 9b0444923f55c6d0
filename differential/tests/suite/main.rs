//! The differential suite: each case is a script of requests sent to the reference
//! kube-apiserver and to apfkit's server on its embedded store and on etcd; a case passes when
//! every apfkit answer equals the reference's after normalization. The servers start once, on
//! the first case, and stop after the last; cases run side by side, each on objects of its
//! own names.
//!
//! Run by `.ci/reference` (which builds the reference first); `.ci/reference -- NAME` runs the
//! cases whose names contain NAME.

use std::sync::{Arc, OnceLock};

use apfkit_differential::{Case, Servers};
use libtest_mimic::{Arguments, Failed, Trial};

mod deletion;
mod patches;
mod routes;

fn main() -> std::process::ExitCode {
    let arguments = Arguments::from_args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    // Started by the first case; when they cannot start, every case fails with why, once.
    let servers: Arc<OnceLock<Result<Servers, String>>> = Arc::default();
    let cases: Vec<(&str, Case)> = [deletion::CASES, patches::CASES, routes::CASES].concat();
    let trials = cases
        .into_iter()
        .map(|(name, case)| {
            let (servers, runtime) = (servers.clone(), runtime.handle().clone());
            Trial::test(name, move || {
                let servers = servers
                    .get_or_init(|| {
                        std::panic::catch_unwind(|| runtime.block_on(Servers::start()))
                            .map_err(|panic| panic_message(&*panic))
                    })
                    .as_ref()
                    .map_err(|why| Failed::from(format!("the servers did not start: {why}")))?;
                runtime
                    .block_on(servers.compare(name, case))
                    .map(|_| ())
                    .map_err(Failed::from)
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&arguments, trials);
    // The servers stop before the runtime their tasks run on.
    drop(servers);
    drop(runtime);
    conclusion.exit_code()
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
