//! Helpers shared by the cross-crate tests: where the repository, its fixtures and the shared
//! reference data are, and how to read multi-document YAML fixtures.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// The Rust examples of README.md, compiled and run by `cargo test` as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;

/// The Rust examples of the guides under docs/, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/library.md")]
#[doc = include_str!("../../docs/command.md")]
#[doc = include_str!("../../docs/custom-resources.md")]
#[doc = include_str!("../../docs/storage.md")]
#[doc = include_str!("../../docs/serving.md")]
#[doc = include_str!("../../docs/envtest.md")]
pub struct GuideExamples;

use serde_json::Value;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `tests/fixtures` of the repository.
pub fn fixtures() -> PathBuf {
    repo_root().join("tests").join("fixtures")
}

/// Objects written by Kubernetes' own Go code for every flowcontrol kind and version
/// (`tests/fixtures/upstream-wire`, see its README): `<group>.<version>.<Kind>.pb`, the stored
/// protobuf value, and `.json`, Go's indented JSON.
pub fn upstream_wire_fixtures() -> PathBuf {
    fixtures().join("upstream-wire")
}

/// The OpenAPI documents Kubernetes 1.23 to 1.35 serve for the flowcontrol and
/// apiregistration groups, kept unmodified as test data (`tests/fixtures/upstream-openapi`,
/// see its README): `<release>/<group>/<version>.json`.
pub fn upstream_openapi() -> PathBuf {
    fixtures().join("upstream-openapi")
}

/// The flowcontrol versions, oldest first, from the generated kind registry (so a version added
/// to the schemas is tested without editing a list).
pub fn flowcontrol_versions() -> Vec<&'static str> {
    let mut versions: Vec<&'static str> = apfkit_types::KINDS
        .iter()
        .filter(|kind| kind.group == "flowcontrol.apiserver.k8s.io")
        .map(|kind| kind.version)
        .collect();
    // `Greater` ranks first, so this sort puts the lowest-ranked (oldest) version first.
    versions.sort_by(|a, b| apfkit_scheme::discovery::compare_kube_aware_version_strings(a, b));
    versions.dedup();
    versions
}

/// Reads every document of a multi-document YAML file as JSON values.
pub fn yaml_documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The bootstrap objects of one flowcontrol version: (priority levels, flow schemas). The v1
/// objects are embedded in `apfkit-types` (`types/data/bootstrap`); the older versions are
/// fixtures in `tests/fixtures/bootstrap`.
pub fn bootstrap(version: &str) -> (Vec<Value>, Vec<Value>) {
    if version == "v1" {
        let parse = |text: &str| -> Vec<Value> {
            serde_saphyr::from_multiple(text).expect("the embedded bootstrap objects parse")
        };
        return (
            parse(apfkit_types::bootstrap::PRIORITY_LEVELS_YAML),
            parse(apfkit_types::bootstrap::FLOW_SCHEMAS_YAML),
        );
    }
    let dir = fixtures().join("bootstrap").join(version);
    (
        yaml_documents(&dir.join("prioritylevelconfigurations.yaml")),
        yaml_documents(&dir.join("flowschemas.yaml")),
    )
}

/// The APIService fixture objects of one apiregistration version.
pub fn apiservices(version: &str) -> Vec<Value> {
    yaml_documents(
        &fixtures()
            .join("apiservices")
            .join(format!("{version}.yaml")),
    )
}

#[cfg(test)]
mod architecture {
    use super::repo_root;

    /// docs/architecture.md names each crate with its folder; both must exist and agree.
    #[test]
    fn docs_name_crates_that_exist() {
        let map = std::fs::read_to_string(repo_root().join("docs/architecture.md")).unwrap();
        let rows: Vec<(String, String)> = map
            .lines()
            .filter(|line| line.starts_with("| `"))
            .map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                (
                    cells[1].trim_matches('`').to_owned(),
                    cells[2].trim_matches('`').to_owned(),
                )
            })
            .collect();
        assert!(rows.len() >= 10, "{rows:?}");
        let workspace = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
        for (name, folder) in rows {
            let manifest = std::fs::read_to_string(repo_root().join(&folder).join("Cargo.toml"))
                .unwrap_or_else(|e| panic!("{name}: {folder}Cargo.toml: {e}"));
            assert!(
                manifest.contains(&format!("name = \"{name}\"")),
                "{folder} is not the crate {name}"
            );
            let member = format!("\"{}\"", folder.trim_end_matches('/'));
            assert!(
                workspace.contains(&member),
                "{folder} is not a workspace member"
            );
        }
    }
}
