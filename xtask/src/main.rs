//! Project automation. `cargo xtask codegen` regenerates everything generated in the
//! repository; `cargo xtask codegen --check` only reports what is stale and fails if anything is.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xtask::{codegen, project_root};

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
