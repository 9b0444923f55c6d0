//! Project automation. `cargo xtask codegen` regenerates everything generated in the
//! repository; `cargo xtask codegen --check` only reports what is stale and fails if anything is.

#![forbid(unsafe_code)]

mod codegen;
mod openapi;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(about = "apfkit project automation")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Regenerate the OpenAPI documents (schemas/openapi), the generated types
    /// (types/src/generated) and the JSON Schemas (schemas/jsonschema).
    Codegen {
        /// Write nothing; list every stale file and exit 1 if there is one.
        #[arg(long)]
        check: bool,
    },
}

/// The repository root: the parent of this crate's directory.
pub fn project_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

fn main() -> ExitCode {
    let Args { command } = Args::parse();
    let result = match command {
        Command::Codegen { check } => {
            codegen::run(&project_root(), codegen::Mode::from_check(check))
        }
    };
    match result {
        Ok(report) if report.stale.is_empty() => ExitCode::SUCCESS,
        Ok(report) => {
            for path in &report.stale {
                eprintln!("{} is not up to date", path.display());
            }
            if report.mode == codegen::Mode::Check {
                eprintln!("run `cargo xtask codegen` and commit the result");
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
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
