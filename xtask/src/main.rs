//! Project automation. `cargo xtask codegen` regenerates everything generated in the
//! repository; `cargo xtask codegen --check` only reports what is stale and fails if anything is.
//! `cargo xtask public-api --json-dir DIR [--check]` lists (or compares) the publishable crates'
//! public APIs under docs/public-api from rustdoc JSON; `.ci/package` runs it.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use xtask::{codegen, kopium, project_root, public_api};

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
    /// List the public API of each publishable crate in docs/public-api/CRATE.txt from the
    /// rustdoc JSON files in a directory (`.ci/package` builds them from the packaged crates and
    /// runs this; `.ci/package --update` rewrites the listings).
    ///
    /// Example: cargo xtask public-api --json-dir target/doc --check
    PublicApi {
        /// Directory holding CRATE.json for each publishable library (rustdoc's JSON output).
        #[arg(long)]
        json_dir: PathBuf,
        /// Write nothing; print every item added or removed and exit 1 if a listing is stale.
        #[arg(long)]
        check: bool,
    },
    /// Generate every CRD of a corpus with kopium and with apfkit-codegen, compile both, round-trip
    /// the corpus's samples through both, and print a Markdown table (see
    /// docs/kopium-comparison.md). Needs kopium on the PATH (`cargo install kopium`).
    ///
    /// Example: cargo xtask compare-kopium --corpus /path/to/kopium/tests > table.md
    CompareKopium {
        /// Directory of CRDs and sample objects: kopium's `tests` directory.
        #[arg(long)]
        corpus: PathBuf,
        /// Scratch Cargo workspace for the generated crates.
        #[arg(long, default_value = "target/kopium-comparison")]
        work: PathBuf,
        /// The kopium binary.
        #[arg(long, default_value = "kopium")]
        kopium: PathBuf,
    },
}

fn main() -> ExitCode {
    let Args { command } = Args::parse();
    let (result, regenerate) = match command {
        Command::Codegen { check } => (
            codegen::run(&project_root(), codegen::Mode::from_check(check)),
            "cargo xtask codegen",
        ),
        Command::PublicApi { json_dir, check } => {
            let root = project_root();
            let mode = codegen::Mode::from_check(check);
            (
                public_api::run(&root, &json_dir, mode),
                ".ci/package --update",
            )
        }
        Command::CompareKopium {
            corpus,
            work,
            kopium,
        } => {
            let root = project_root();
            let options = kopium::Options {
                corpus,
                work: root.join(work),
                kopium,
                runtime: root.join("runtime"),
            };
            return match kopium::run(&options) {
                Ok(table) => {
                    print!("{table}");
                    ExitCode::SUCCESS
                }
                Err(err) => {
                    eprintln!("xtask: error: {err:#}");
                    ExitCode::FAILURE
                }
            };
        }
    };
    match result {
        Ok(report) if report.stale.is_empty() => ExitCode::SUCCESS,
        Ok(report) => {
            for path in &report.stale {
                eprintln!("{} is not up to date", path.display());
            }
            if report.mode == codegen::Mode::Check {
                eprintln!("run `{regenerate}` and commit the result");
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
