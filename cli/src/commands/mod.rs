//! One module per subcommand.

pub mod apply;
pub mod bootstrap;
pub mod crds;
pub mod explain;
pub mod limits;
pub mod lint;
pub mod migrate_api;
pub mod report;
pub mod rewrite;
pub mod schema;
pub mod serve;
pub mod simulate;
pub mod storage;
pub mod validate;
pub mod versions;

/// Text for people, or JSON for scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Aligned text.
    Text,
    /// One JSON document.
    Json,
}

/// Prints a JSON report.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), crate::failure::Failure> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| crate::failure::Failure::Invalid(e.to_string()))?;
    text.push('\n');
    emit(&text)
}

/// Writes to standard output. A closed pipe (`apfkit ... | head`) ends the output quietly.
pub fn emit(text: &str) -> Result<(), crate::failure::Failure> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(crate::failure::Failure::output("-", e))
        }
        _ => Ok(()),
    }
}
