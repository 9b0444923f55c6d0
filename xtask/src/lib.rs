//! Project automation behind `cargo xtask`: regeneration and freshness checks of every generated
//! file (the OpenAPI documents, the types and the JSON Schemas) and of the public API listings.

#![forbid(unsafe_code)]

pub mod codegen;
pub mod kopium;
pub mod openapi;
pub mod public_api;

use std::path::PathBuf;

/// The repository root: the parent of this crate's directory.
pub fn project_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

#[cfg(test)]
mod tests {
    /// A stale generated tree fails `cargo test` (the rust-analyzer pattern).
    #[test]
    fn generated_files_are_fresh() {
        // The JSON Schemas are checked by apfkit-types' own test, where the types are built.
        let report = super::codegen::run_with(
            &super::project_root(),
            super::codegen::Mode::Check,
            super::codegen::JsonSchemas::Left,
        )
        .expect("codegen runs");
        assert!(
            report.stale.is_empty(),
            "stale generated files (run `cargo xtask codegen`): {:?}",
            report.stale
        );
    }

    /// Comments cite upstream sources (file and function), never sections of a specification
    /// that lives outside the repository.
    #[test]
    fn comments_do_not_cite_the_outside_spec() {
        let mut offenders = Vec::new();
        let mut stack = vec![super::project_root()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("readable source tree") {
                let path = entry.expect("readable entry").path();
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default();
                if path.is_dir() {
                    if !name.starts_with('.') && name != "target" {
                        stack.push(path);
                    }
                } else if name.ends_with(".rs") {
                    let text = std::fs::read_to_string(&path).expect("UTF-8 source");
                    if text.contains(concat!("spec ", "\u{a7}")) {
                        offenders.push(path);
                    }
                }
            }
        }
        assert!(offenders.is_empty(), "cite upstream instead: {offenders:?}");
    }
}
