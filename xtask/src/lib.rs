//! Project automation behind `cargo xtask`: regeneration and freshness checks of every generated
//! file (the OpenAPI documents, the types and the JSON Schemas).

#![forbid(unsafe_code)]

pub mod codegen;
pub mod openapi;

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
        let report = super::codegen::run(&super::project_root(), super::codegen::Mode::Check)
            .expect("codegen runs");
        assert!(
            report.stale.is_empty(),
            "stale generated files (run `cargo xtask codegen`): {:?}",
            report.stale
        );
    }
}
