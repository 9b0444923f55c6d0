//! Static analysis of API Priority and Fairness configurations: what kube-apiserver would do
//! with a set of FlowSchemas and PriorityLevelConfigurations that its validation accepts but
//! that is probably not what was meant, found before it is applied: schemas no request can
//! reach (exactly, with the dispatcher's own matcher), precedence ties, dangling schemas,
//! unused levels, exemptions and rules broader than kube-apiserver's own, changes to the
//! mandatory objects, and queuing and borrowing parameters that defeat fairness.
//!
//! **Where to start**: an [`Input`] of levels and schemas (each with where it was read), then
//! [`lint`] with [`Options`]; [`rules::RULES`] lists the rules with their `--explain` pages,
//! and [`sarif`] writes the findings for code scanning.
//!
//! ```
//! use apfkit_lint::{Input, Options, lint};
//! use apfkit_dispatcher::bootstrap;
//!
//! let input = Input::new(
//!     bootstrap::priority_levels().iter().cloned().map(|l| (l, None)),
//!     bootstrap::flow_schemas().iter().cloned().map(|s| (s, None)),
//! );
//! let report = lint(&input, &Options::default()).unwrap();
//! // kube-apiserver's own configuration has nothing above a note.
//! assert!(report.findings.iter().all(|f| f.rule.severity == apfkit_lint::Severity::Note));
//! ```

#![forbid(unsafe_code)]

mod checks;
pub mod rules;
pub mod sarif;
pub mod shadow;

use apfkit_dispatcher::config::{ConfigError, Configuration};
use apfkit_types::hub::flowcontrol::{FlowSchema, PriorityLevelConfiguration};
use serde::Serialize;

pub use rules::{RULES, Rule, Severity, rule};

/// Where an object was read: a file and the index of its document among the file's
/// documents. `None` in [`Input`] for objects that come from elsewhere (kube-apiserver's
/// bootstrap configuration with `--with-bootstrap`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// The file, as given.
    pub file: String,
    /// The document's index in the file, from 0.
    pub document: Option<usize>,
}

/// The objects to check, each with where it was read.
#[derive(Debug, Clone, Default)]
pub struct Input {
    /// PriorityLevelConfigurations (hub objects, defaulted).
    pub levels: Vec<(PriorityLevelConfiguration, Option<Source>)>,
    /// FlowSchemas (hub objects, defaulted).
    pub schemas: Vec<(FlowSchema, Option<Source>)>,
}

impl Input {
    /// Input from levels and schemas with their sources.
    pub fn new(
        levels: impl IntoIterator<Item = (PriorityLevelConfiguration, Option<Source>)>,
        schemas: impl IntoIterator<Item = (FlowSchema, Option<Source>)>,
    ) -> Self {
        Input {
            levels: levels.into_iter().collect(),
            schemas: schemas.into_iter().collect(),
        }
    }

    /// This input with kube-apiserver's bootstrap objects added where it has no object of
    /// their kind and name (as a cluster has them), without a source.
    #[must_use]
    pub fn with_bootstrap(self) -> Self {
        self.with_bootstrap_of(apfkit_dispatcher::release::Release::NEWEST)
    }

    /// [`Input::with_bootstrap`] with the bootstrap objects of `release`.
    #[must_use]
    pub fn with_bootstrap_of(mut self, release: apfkit_dispatcher::release::Release) -> Self {
        for level in release.priority_levels() {
            if !self
                .levels
                .iter()
                .any(|(l, _)| l.metadata.name == level.metadata.name)
            {
                self.levels.push((level.clone(), None));
            }
        }
        for schema in release.flow_schemas() {
            if !self
                .schemas
                .iter()
                .any(|(s, _)| s.metadata.name == schema.metadata.name)
            {
                self.schemas.push((schema, None));
            }
        }
        self
    }
}

/// How to lint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The server's concurrency limit the levels' seats are computed for.
    pub server_concurrency: i32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            server_concurrency: apfkit_dispatcher::config::DEFAULT_SERVER_CONCURRENCY_LIMIT,
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The rule it breaks (its id, name and severity in JSON).
    #[serde(serialize_with = "rule_reference")]
    pub rule: &'static Rule,
    /// The object's kind.
    pub kind: &'static str,
    /// The object's name.
    pub name: String,
    /// Where the object was read.
    pub source: Option<Source>,
    /// The field, such as `spec.rules[1]`.
    pub path: String,
    /// One line.
    pub message: String,
}

/// A rule as a finding refers to it: id, name, severity.
fn rule_reference<S: serde::Serializer>(
    rule: &&'static Rule,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut out = serializer.serialize_struct("Rule", 3)?;
    out.serialize_field("id", rule.id)?;
    out.serialize_field("name", rule.name)?;
    out.serialize_field("severity", &rule.severity)?;
    out.end()
}

/// What the linter found: by file and document (objects without a source last), then by
/// rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The findings.
    pub findings: Vec<Finding>,
}

impl Report {
    /// The findings at `severity` or above.
    pub fn at_least(&self, severity: Severity) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(move |f| f.rule.severity >= severity)
    }
}

/// Lints `input`.
///
/// # Errors
///
/// Two objects of one kind share a name, or the server concurrency is not positive: there is
/// no configuration to lint.
pub fn lint(input: &Input, options: &Options) -> Result<Report, ConfigError> {
    let config = Configuration::new(
        input.levels.iter().map(|(l, _)| l.clone()),
        input.schemas.iter().map(|(s, _)| s.clone()),
        options.server_concurrency,
    )?;
    let mut findings = checks::all(input, &config);
    let order = |f: &Finding| {
        let kind = usize::from(f.kind == "FlowSchema");
        let position = match f.kind {
            "FlowSchema" => input
                .schemas
                .iter()
                .position(|(s, _)| s.metadata.name.as_deref() == Some(f.name.as_str())),
            _ => input
                .levels
                .iter()
                .position(|(l, _)| l.metadata.name.as_deref() == Some(f.name.as_str())),
        };
        let source = f.source.as_ref().map(|s| (s.file.clone(), s.document));
        (source.is_none(), source, kind, position, f.rule.id)
    };
    findings.sort_by_key(order);
    Ok(Report { findings })
}
