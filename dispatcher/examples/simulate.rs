//! Runs the embedded default workload against the Kubernetes default configuration and
//! prints the report: `cargo run --release -p apfkit-dispatcher --example simulate`.

use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::sim::server::simulate;
use apfkit_dispatcher::sim::workload::Workload;

fn main() {
    let config =
        Configuration::kubernetes_default(600).expect("the default configuration is valid");
    let started = std::time::Instant::now();
    let report = simulate(config, &Workload::embedded_default(), 1, |_| {})
        .expect("the default workload is valid");
    let elapsed = started.elapsed();
    print!("{}", report.to_text());
    eprintln!("{} requests in {elapsed:?}", report.requests);
}
