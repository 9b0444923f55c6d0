//! Classification against the Kubernetes default configuration and against 1,000 FlowSchemas,
//! hash and hand included, beside a baseline of SHA-256 over the same bytes alone.
//!
//! `cargo bench -p apfkit-dispatcher --bench classify`

use std::sync::LazyLock;

use apfkit_dispatcher::bootstrap;
use apfkit_dispatcher::classify::{Classifier, Request};
use apfkit_dispatcher::config::Configuration;
use apfkit_types::hub::flowcontrol::FlowSchema;
use sha2::{Digest, Sha256};

static DEFAULT: LazyLock<Classifier> =
    LazyLock::new(|| Classifier::new(Configuration::kubernetes_default(600).unwrap()));

/// The default configuration plus 1,000 schemas, one per team group, each with a resource rule
/// and a non-resource rule, ahead of global-default in matching order.
static THOUSAND: LazyLock<Classifier> = LazyLock::new(|| {
    let template = bootstrap::flow_schemas()
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some("service-accounts"))
        .unwrap();
    let mut schemas: Vec<FlowSchema> = bootstrap::flow_schemas().to_vec();
    for i in 0..1000 {
        let mut schema = template.clone();
        schema.metadata.name = Some(format!("team-{i:04}"));
        schema.spec.matching_precedence = Some(1000 + i);
        let rule = &mut schema.spec.rules.as_mut().unwrap()[0];
        rule.subjects[0].group.as_mut().unwrap().name = format!("team-{i:04}");
        rule.resource_rules.as_mut().unwrap()[0].namespaces = Some(vec![format!("ns-{i:04}")]);
        rule.resource_rules.as_mut().unwrap()[0].cluster_scope = Some(false);
        schemas.push(schema);
    }
    let config = Configuration::new(bootstrap::priority_levels().to_vec(), schemas, 600).unwrap();
    assert_eq!(config.flow_schemas().len(), 1011);
    Classifier::new(config)
});

fn alice() -> Request<'static> {
    Request {
        user: "alice",
        groups: &["system:authenticated"],
        verb: "list",
        is_resource_request: true,
        resource: "pods",
        namespace: "default",
        ..Request::default()
    }
}

fn main() {
    // Both configurations classify as expected before anything is timed.
    assert_eq!(
        DEFAULT.classify(&alice()).unwrap().flow_schema,
        "global-default"
    );
    let team = Request {
        groups: &["team-0999", "system:authenticated"],
        namespace: "ns-0999",
        ..alice()
    };
    assert_eq!(THOUSAND.classify(&team).unwrap().flow_schema, "team-0999");
    assert_eq!(
        THOUSAND.classify(&alice()).unwrap().flow_schema,
        "global-default"
    );
    divan::main();
}

/// Baseline: SHA-256 of the flow bytes alone (`global-default`, 0, `alice`).
#[divan::bench]
fn baseline_sha256_of_flow_bytes() -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(divan::black_box(b"global-default\0alice"));
    hasher.finalize().into()
}

#[divan::bench]
fn classify_default_configuration() -> u64 {
    DEFAULT.classify(divan::black_box(&alice())).unwrap().hash
}

#[divan::bench]
fn classify_1000_schemas_group_member() -> u64 {
    let team = Request {
        groups: &["team-0999", "system:authenticated"],
        namespace: "ns-0999",
        ..alice()
    };
    THOUSAND.classify(divan::black_box(&team)).unwrap().hash
}

#[divan::bench]
fn classify_1000_schemas_falls_through() -> u64 {
    THOUSAND.classify(divan::black_box(&alice())).unwrap().hash
}
