//! `apfkit lint` of a large configuration: 1,000 FlowSchemas and 100 priority levels (target
//! ≤ 1 s), beside a baseline of building the same configuration's classifier alone.
//!
//! `cargo bench -p apfkit-lint --bench lint`

use std::sync::LazyLock;

use apfkit_dispatcher::bootstrap;
use apfkit_dispatcher::classify::Classifier;
use apfkit_dispatcher::config::Configuration;
use apfkit_lint::{Input, Options, lint};

/// The bootstrap objects plus 100 levels and 1,000 schemas: team `i` in group `team-i`,
/// namespace `ns-i`, on level `level-(i mod 100)`; every tenth schema repeats an earlier one's
/// rules at a higher precedence number, so it is shadowed.
static INPUT: LazyLock<Input> = LazyLock::new(|| {
    let level_template = bootstrap::priority_levels()
        .iter()
        .find(|l| l.metadata.name.as_deref() == Some("workload-low"))
        .unwrap();
    let schema_template = bootstrap::flow_schemas()
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some("service-accounts"))
        .unwrap();
    let mut levels = bootstrap::priority_levels().to_vec();
    for i in 0..100 {
        let mut level = level_template.clone();
        level.metadata.name = Some(format!("level-{i:03}"));
        levels.push(level);
    }
    let mut schemas = bootstrap::flow_schemas().to_vec();
    for i in 0..1000 {
        let team = if i % 10 == 9 { i - 1 } else { i };
        let mut schema = schema_template.clone();
        schema.metadata.name = Some(format!("team-{i:04}"));
        schema.spec.matching_precedence = Some(1000 + i);
        schema.spec.priority_level_configuration.name = format!("level-{:03}", i % 100);
        let rule = &mut schema.spec.rules.as_mut().unwrap()[0];
        rule.subjects[0].group.as_mut().unwrap().name = format!("team-{team:04}");
        let resources = &mut rule.resource_rules.as_mut().unwrap()[0];
        resources.namespaces = Some(vec![format!("ns-{team:04}")]);
        resources.cluster_scope = Some(false);
        rule.non_resource_rules = None;
        schemas.push(schema);
    }
    Input::new(
        levels.into_iter().map(|l| (l, None)),
        schemas.into_iter().map(|s| (s, None)),
    )
});

#[divan::bench(sample_count = 10)]
fn lint_1000_schemas_100_levels() -> usize {
    let report = lint(&INPUT, &Options::default()).unwrap();
    assert_eq!(
        report
            .findings
            .iter()
            .filter(|f| f.rule.id == "APF001")
            .count(),
        100
    );
    report.findings.len()
}

#[divan::bench(sample_count = 10)]
fn baseline_classifier_alone() -> usize {
    let config = Configuration::new(
        INPUT.levels.iter().map(|(l, _)| l.clone()),
        INPUT.schemas.iter().map(|(s, _)| s.clone()),
        600,
    )
    .unwrap();
    Classifier::new(config).config().flow_schemas().len()
}

fn main() {
    divan::main();
}
