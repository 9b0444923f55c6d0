//! `apfkit`: convert, default and validate API Priority and Fairness objects across Kubernetes
//! releases, explain which FlowSchema and priority level a request gets, compute concurrency
//! limits, simulate load, and print JSON Schemas.

#![forbid(unsafe_code)]

mod cleanup;
mod cluster;
mod commands;
mod configuration;
mod failure;
mod input;
mod output;

use clap::{Parser, Subcommand};

use crate::failure::Failure;

/// API Priority and Fairness objects and what they do, without a cluster.
///
/// Objects are read from -f paths (files, directories searched for .yaml, .yml and .json,
/// or - for standard input), or from standard input without -f. Commands that need a
/// configuration (explain, limits, simulate) use the embedded Kubernetes default when no -f is
/// given.
#[derive(Debug, Parser)]
#[command(name = "apfkit", version, term_width = 0)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Convert(commands::rewrite::ConvertArgs),
    Default(commands::rewrite::DefaultArgs),
    Validate(commands::validate::ValidateArgs),
    Bootstrap(commands::bootstrap::BootstrapArgs),
    Explain(commands::explain::ExplainArgs),
    Limits(commands::limits::LimitsArgs),
    Lint(commands::lint::LintArgs),
    Simulate(commands::simulate::SimulateArgs),
    Status(commands::status::StatusArgs),
    Schema(commands::schema::SchemaArgs),
    Versions(commands::versions::VersionsArgs),
    Storage(commands::storage::StorageArgs),
    Serve(commands::serve::ServeArgs),
    Apply(commands::apply::ApplyArgs),
    Crd(commands::crd::CrdArgs),
}

fn main() {
    cleanup::install_signal_handlers();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Convert(args) => commands::rewrite::convert(args),
        Command::Default(args) => commands::rewrite::default(args),
        Command::Validate(args) => commands::validate::run(args),
        Command::Bootstrap(args) => commands::bootstrap::run(args),
        Command::Explain(args) => commands::explain::run(args),
        Command::Limits(args) => commands::limits::run(args),
        Command::Lint(args) => commands::lint::run(args),
        Command::Simulate(args) => commands::simulate::run(args),
        Command::Status(args) => commands::status::run(args),
        Command::Schema(args) => commands::schema::run(args),
        Command::Versions(args) => commands::versions::run(args),
        Command::Storage(args) => commands::storage::run(args),
        Command::Serve(args) => commands::serve::run(args),
        Command::Apply(args) => commands::apply::run(args),
        Command::Crd(args) => commands::crd::run(args),
    };
    if let Err(failure) = result {
        if !matches!(failure, Failure::ValidationErrors(_)) {
            eprintln!("error: {}", failure::for_terminal(&failure.to_string()));
        }
        std::process::exit(failure.exit_code());
    }
}

#[cfg(test)]
mod tests {
    /// clap's own consistency checks (unique names, valid references between flags) on every
    /// subcommand, which otherwise only fire when that subcommand is parsed.
    #[test]
    fn every_command_definition_is_consistent() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
