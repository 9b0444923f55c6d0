//! The examples in docs/ work as written.

use std::time::Duration;

use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::sim::server::simulate;
use apfkit_dispatcher::sim::workload::Workload;

/// The workload example of docs/workload.md parses, checks, and simulates to the end.
#[test]
fn the_workload_example_in_the_docs_runs() {
    let doc = std::fs::read_to_string(apfkit_tests::repo_root().join("docs/workload.md")).unwrap();
    let start = doc.find("```yaml\n").expect("a YAML example") + "```yaml\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let workload: Workload = serde_saphyr::from_str(&doc[start..end]).unwrap();
    workload.check().unwrap();
    assert_eq!(workload.wait_limit, Duration::from_secs(15));
    assert_eq!(workload.streams[0].users, 30);
    let report = simulate(
        Configuration::kubernetes_default(600).unwrap(),
        &workload,
        1,
        |_| {},
    )
    .unwrap();
    assert_eq!(report.streams.len(), 2);
    assert_eq!(report.left_over, 0);
}
