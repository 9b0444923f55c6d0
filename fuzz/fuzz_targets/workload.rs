//! Workload files: parse, check against small limits, simulate against the default
//! configuration. A simulation must end, with nothing left over.
#![no_main]

use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::sim::server::simulate_within;
use apfkit_dispatcher::sim::workload::{Limits, Workload};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(workload) = serde_saphyr::from_str::<Workload>(text) else {
        return;
    };
    let limits = Limits {
        max_requests: 2_000,
        max_users: 200,
        max_clients: 200,
        max_streams: 20,
        ..Limits::default()
    };
    let config = Configuration::kubernetes_default(600).expect("the default configuration");
    if let Ok(report) = simulate_within(config, &workload, &limits, 1, |_| {}) {
        assert_eq!(report.left_over, 0, "a request leaked");
        assert!(report.requests <= 2 * limits.max_requests + 1000);
    }
});
