//! What a user of the published crates writes first: read an old object, default it as
//! kube-apiserver does, convert it through the hub, validate it. Every publishable library is a
//! dependency, so that checking (or running) this program compiles each packaged crate from its
//! `.crate`. `cargo run` in the directory `.ci/package` prepares runs it.

use apfkit_scheme::prelude::*;
use apfkit_scheme::validation::{self, Options};
use apfkit_types::flowcontrol::{v1, v1beta2, v1beta3};

// The other packaged libraries, named so that each is compiled from its package.
use apfkit_apiextensions as _;
use apfkit_apiserver as _;
use apfkit_codegen as _;
use apfkit_crd as _;
use apfkit_dispatcher as _;
use apfkit_envtest as _;
use apfkit_etcd as _;
use apfkit_fieldmanager as _;
use apfkit_lint as _;
use apfkit_migrator as _;
use apfkit_roundtrip as _;
use apfkit_runtime as _;
use apfkit_server as _;
use apfkit_storage as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut level: v1beta3::PriorityLevelConfiguration = serde_json::from_str(
        r#"{"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}}"#,
    )?;
    level.apply_defaults();
    assert_eq!(
        level.spec.limited.as_ref().and_then(|l| l.nominal_concurrency_shares),
        Some(30)
    );

    let old: v1beta2::PriorityLevelConfiguration = serde_json::from_str(
        r#"{"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {"assuredConcurrencyShares": 20, "limitResponse": {"type": "Reject"}}}}"#,
    )?;
    let converted = v1::PriorityLevelConfiguration::from_hub(&old.to_hub());
    assert_eq!(
        converted.spec.limited.as_ref().and_then(|l| l.nominal_concurrency_shares),
        Some(20)
    );

    let value = serde_json::to_value(&converted)?;
    let (objects, _) = apfkit_scheme::scheme::SCHEME.to_hub_value(&value, UnknownFields::Strict)?;
    let errors: Vec<String> = objects
        .iter()
        .flat_map(|object| validation::validate(object, &Options::default()))
        .map(|error| error.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    println!("the packaged crates build and convert as the workspace's do");
    Ok(())
}
