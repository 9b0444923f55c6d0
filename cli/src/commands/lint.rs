//! `lint`.

use apfkit_lint::{Finding, Input, Options, RULES, Report, Severity, Source};
use clap::Args;

use super::{emit, print_json};
use crate::configuration;
use crate::failure::{Failure, Location, printable};

/// Find what an APF configuration does that was probably not meant, before applying it.
///
/// Reads FlowSchemas and PriorityLevelConfigurations (files, directories or -; standard input
/// when no -f is given) and prints one finding per line: FILE: document N: SEVERITY RULE
/// Kind/name FIELD: message. Shadowed FlowSchemas are found exactly, with the dispatcher's own
/// matcher. Exits with 1 when a finding is at or above --fail-on (error by default), 0
/// otherwise; 2 on bad flags.
///
/// Examples:
///   apfkit lint -f apf/
///   apfkit lint -f apf/ --with-bootstrap --fail-on warning
///   apfkit lint -f apf/ --with-bootstrap -o sarif > apf.sarif
///   apfkit lint --explain APF001
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct LintArgs {
    /// File, directory or - (repeatable); standard input when absent.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    paths: Vec<String>,
    #[command(flatten)]
    input: crate::input::InputArgs,
    #[command(flatten)]
    cluster: crate::cluster::ClusterArgs,
    /// Add kube-apiserver's bootstrap objects that the input does not have (a cluster has
    /// them), so that shadowing by them and references to them are seen.
    #[arg(long)]
    with_bootstrap: bool,
    /// The server's concurrency limit (--max-requests-inflight + --max-mutating-requests-inflight).
    #[arg(long, value_name = "N", default_value_t = 600)]
    server_concurrency: i32,
    /// Exit with 1 when a finding is at this severity or above.
    #[arg(long, value_enum, default_value = "error")]
    fail_on: FailOn,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: LintFormat,
    /// Print what RULE (an id such as APF001, or a name) checks, and exit.
    #[arg(long, value_name = "RULE")]
    explain: Option<String>,
    /// List every rule, and exit.
    #[arg(long)]
    list_rules: bool,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LintFormat {
    /// One line per finding.
    Text,
    /// The findings as one JSON document.
    Json,
    /// SARIF 2.1.0, for code-scanning tools.
    Sarif,
}

/// The severity that fails the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FailOn {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warning,
    /// Any finding.
    Note,
}

impl FailOn {
    fn severity(self) -> Severity {
        match self {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
            FailOn::Note => Severity::Note,
        }
    }
}

/// Runs `lint`.
pub fn run(args: LintArgs) -> Result<(), Failure> {
    if let Some(id) = &args.explain {
        let rule = apfkit_lint::rule(id).ok_or_else(|| {
            Failure::Usage(format!(
                "--explain {}: no such rule (apfkit lint --list-rules lists them)",
                printable(id)
            ))
        })?;
        return emit(&format!(
            "{} {} ({})\n\n{}\n\n{}\n",
            rule.id,
            rule.name,
            rule.severity.as_str(),
            rule.summary,
            wrap(rule.explanation, 78)
        ));
    }
    if args.list_rules {
        let rows: String = RULES
            .iter()
            .map(|r| {
                format!(
                    "{}  {:<28} {:<8} {}\n",
                    r.id,
                    r.name,
                    r.severity.as_str(),
                    r.summary
                )
            })
            .collect();
        return emit(&rows);
    }
    if args.server_concurrency <= 0 {
        return Err(Failure::Usage(format!(
            "--server-concurrency must be positive, not {}",
            args.server_concurrency
        )));
    }
    args.input.apply();
    let ((levels, schemas), release) = configuration::read(&args.paths, &args.cluster)?;
    let source = |location: Location| {
        Some(Source {
            file: location.file,
            document: location.document,
        })
    };
    let mut objects = Input::new(
        levels.into_iter().map(|(level, at)| (level, source(at))),
        schemas.into_iter().map(|(schema, at)| (schema, source(at))),
    );
    if args.with_bootstrap {
        objects = objects.with_bootstrap_of(release);
    }
    let options = Options {
        server_concurrency: args.server_concurrency,
    };
    let report =
        apfkit_lint::lint(&objects, &options).map_err(|e| Failure::Invalid(e.to_string()))?;
    match args.output {
        LintFormat::Text => emit(&text(&report))?,
        LintFormat::Json => print_json(&report)?,
        LintFormat::Sarif => print_json(&apfkit_lint::sarif::to_sarif(
            &report,
            env!("CARGO_PKG_VERSION"),
        ))?,
    }
    let failing = report.at_least(args.fail_on.severity()).count();
    if failing > 0 {
        return Err(Failure::ValidationErrors(failing));
    }
    Ok(())
}

/// Where a finding's object was read, as the other commands name it.
fn place(finding: &Finding) -> String {
    match &finding.source {
        Some(Source {
            file,
            document: Some(index),
        }) => format!("{}: document {}", printable(file), index + 1),
        Some(Source {
            file,
            document: None,
        }) => printable(file).into_owned(),
        None => "(kube-apiserver's bootstrap configuration)".to_owned(),
    }
}

fn text(report: &Report) -> String {
    report
        .findings
        .iter()
        .map(|f| {
            format!(
                "{}: {} {} {}/{} {}: {}\n",
                place(f),
                f.rule.severity.as_str(),
                f.rule.id,
                f.kind,
                printable(&f.name),
                f.path,
                printable(&f.message)
            )
        })
        .collect()
}

/// `text` broken into lines of at most `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        if line > 0 && line + 1 + word.chars().count() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.chars().count();
    }
    out
}
