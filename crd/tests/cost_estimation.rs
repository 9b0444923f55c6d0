//! apfkit-crd's estimates of the costs of apiextensions-apiserver's `TestCostEstimation`
//! cases (`apfkit_test_support::cel_costs`), every case by its name. Upstream checks an
//! expected cost only when it is not 0, and "exceeds the limit" as at least its `costLimit`
//! (100,000,000); so does this.

use apfkit_crd::schema::Schema;
use apfkit_runtime::field::Path;
use apfkit_test_support::cel_costs::{Expect, cases};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde_json::Value;

/// upstream's `costLimit`.
const COST_LIMIT: u64 = 100_000_000;

/// The estimated cost of `rule` on `schema`.
fn cost(schema: Value, rule: &str) -> u64 {
    let props: JSONSchemaProps = serde_json::from_value(schema).expect("a schema");
    let schema = Schema::compile(&props, Path::new("openAPIV3Schema")).expect("compiles");
    let program = apfkit_crd::cel::environment()
        .compile(rule)
        .expect("the rule compiles");
    apfkit_crd::cel::cost::estimate(program.expression(), &schema, false)
}

#[test]
fn test_cost_estimation() {
    let cases = cases();
    let mut wrong = Vec::new();
    for case in &cases {
        for (variant, (schema, expect)) in [
            ("calc maxLength", &case.unbounded),
            ("set maxLength", &case.bounded),
        ] {
            let got = cost(schema.clone(), case.rule);
            let ok = match *expect {
                Expect::Cost(0) => true,
                Expect::Cost(wanted) => got == wanted,
                Expect::OverLimit => got >= COST_LIMIT,
            };
            if !ok {
                let wanted = match *expect {
                    Expect::Cost(wanted) => wanted.to_string(),
                    Expect::OverLimit => format!(">= {COST_LIMIT}"),
                };
                wrong.push(format!(
                    "{} / {variant}: want {wanted}, got {got}",
                    case.name
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "estimates that differ from kube-apiserver's:\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        cases.len() * 2,
        136,
        "upstream's 68 cases, each with and without a bound"
    );
}

/// apiextensions-apiserver 1.37's `TestMetadataNameCostIsBounded`: a rule at a resource's
/// root reading `metadata.name` or `metadata.generateName` is estimated with kube's name
/// limits (253 and 252 characters), not the whole request, when the schema declares neither.
#[test]
fn test_metadata_name_cost_is_bounded() {
    const BOUNDED_CEILING: u64 = 10_000;
    let props: JSONSchemaProps =
        serde_json::from_value(serde_json::json!({"type": "object"})).expect("a schema");
    let schema = Schema::compile(&props, Path::new("openAPIV3Schema")).expect("compiles");
    for (name, rule) in [
        ("name rule", "self.metadata.name.contains('x')"),
        (
            "generateName rule",
            "self.metadata.generateName.contains('x')",
        ),
    ] {
        let program = apfkit_crd::cel::environment()
            .compile(rule)
            .expect("the rule compiles");
        let at_root = apfkit_crd::cel::cost::estimate(program.expression(), &schema, true);
        assert!(at_root > 0, "{name}: expected a non-zero cost");
        assert!(
            at_root <= BOUNDED_CEILING,
            "{name}: {at_root}, expected it bounded (<= {BOUNDED_CEILING})"
        );
        // The same rule elsewhere than at a resource's root reads an undeclared field,
        // whose size is unknown.
        let elsewhere = apfkit_crd::cel::cost::estimate(program.expression(), &schema, false);
        assert!(elsewhere > BOUNDED_CEILING, "{name}: {elsewhere}");
    }
}
