//! One module per subcommand.

pub mod apply;
pub mod bootstrap;
pub mod crd;
pub mod crds;
pub mod explain;
pub mod limits;
pub mod lint;
pub mod migrate_api;
mod migrate_server_side;
pub mod replay;
pub mod report;
pub mod rewrite;
pub mod schema;
pub mod serve;
pub mod simulate;
pub mod status;
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

/// A duration as kube-apiserver's flags take it (Go's `time.ParseDuration`): `5m`, `5m0s`,
/// `1h30m`, `0`; not negative.
pub fn duration_flag(text: &str) -> Result<std::time::Duration, String> {
    let nanos = apfkit_runtime::go_duration::parse_go_duration(text).map_err(|e| e.to_string())?;
    u64::try_from(nanos)
        .map(std::time::Duration::from_nanos)
        .map_err(|_| format!("{text:?} is negative"))
}

/// A progress bar drawn with indicatif's `template` on a terminal's standard error; hidden
/// otherwise.
pub fn progress_bar(total: u64, template: &str) -> indicatif::ProgressBar {
    styled_bar(|| indicatif::ProgressBar::new(total), template)
}

/// The bar `make` makes (a spinner, one without a length), drawn with indicatif's `template`
/// on a terminal's standard error; hidden otherwise.
pub fn styled_bar(
    make: impl FnOnce() -> indicatif::ProgressBar,
    template: &str,
) -> indicatif::ProgressBar {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = make();
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}
