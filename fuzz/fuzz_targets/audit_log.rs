//! An audit log (`apfkit simulate --audit-log`): any bytes, split into lines, read by
//! `apfkit_dispatcher::sim::audit_log::AuditLog` and the requests it takes replayed through
//! the default configuration; nothing panics, every request taken has at least one seat, and
//! the replay replays each request once and leaves nothing held.
#![no_main]

use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::sim::audit_log::{AuditLog, Line};
use apfkit_dispatcher::sim::replay::{Replay, ReplayOptions};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let config = || Configuration::kubernetes_default(20).expect("the default configuration");
    let mut replay = Replay::new(config(), config(), ReplayOptions::default());
    let mut log = AuditLog::default();
    let mut taken = 0;
    for line in data.split(|b| *b == b'\n') {
        if let Line::Request(request) = log.read(line) {
            assert!(request.seats >= 1);
            if replay.push(&request).is_ok() {
                taken += 1;
            }
        }
    }
    let report = replay.finish();
    assert_eq!(report.requests, taken);
    assert_eq!((report.in_force.left_over, report.proposed.left_over), (0, 0));
});
