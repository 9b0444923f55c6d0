//! `bootstrap`.

use apfkit_dispatcher::bootstrap::{MANDATORY, PRIORITY_LEVELS_YAML};
use apfkit_runtime::scheme::diff::changes;
use apfkit_scheme::scheme::{HubObject, SCHEME, Target, UnknownFields};
use clap::Args;
use serde::Serialize;
use serde_json::Value;

use super::{ReportFormat, emit, print_json};
use crate::failure::{Failure, printable};
use crate::output::{self, Destination, ObjectFormat, Sink};

/// Print Kubernetes' default APF configuration (a release's mandatory and suggested objects):
/// PriorityLevelConfigurations, then FlowSchemas.
///
/// With --diff, compares a configuration with it instead: the -f files, or the cluster of
/// --kubeconfig/--context (whose release is then the default). Each bootstrap object is
/// unchanged, changed (each field that differs, bootstrap value then the configuration's), or
/// missing; objects of the configuration that are not bootstrap objects are listed as added.
/// A changed mandatory object is marked: kube-apiserver writes its spec back.
///
/// Examples:
///   apfkit bootstrap --to v1beta3 > apf.yaml
///   apfkit bootstrap --mandatory-only -o json
///   apfkit bootstrap --kubernetes-version 1.33
///   apfkit bootstrap --diff --kubeconfig ~/.kube/config
///   apfkit bootstrap --diff -f apf/ --kubernetes-version 1.34 -o json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct BootstrapArgs {
    /// Compare a configuration (the -f files, or a cluster's) with the bootstrap objects.
    #[arg(long)]
    diff: bool,
    /// With --diff: the configuration's files, directories or - (repeatable).
    #[arg(short = 'f', long = "filename", value_name = "PATH", requires = "diff")]
    paths: Vec<String>,
    #[command(flatten)]
    input: crate::input::InputArgs,
    #[command(flatten)]
    cluster: crate::cluster::ClusterArgs,
    /// Flowcontrol version to print (VERSION or flowcontrol.apiserver.k8s.io/VERSION).
    #[arg(long, value_name = "VERSION", default_value = "v1")]
    to: String,
    /// Only the mandatory objects (exempt and catch-all).
    #[arg(long)]
    mandatory_only: bool,
    /// Output format: yaml, json or proto for the objects; text or json with --diff.
    #[arg(short = 'o', long, value_name = "FORMAT")]
    output: Option<String>,
}

/// `apfkit bootstrap`.
pub fn run(args: BootstrapArgs) -> Result<(), Failure> {
    args.input.apply();
    if args.diff {
        let format = match args.output.as_deref() {
            None | Some("text") => ReportFormat::Text,
            Some("json") => ReportFormat::Json,
            Some(other) => {
                return Err(Failure::Usage(format!(
                    "-o {other}: --diff writes text or json"
                )));
            }
        };
        return diff(&args, format);
    }
    let format = match args.output.as_deref() {
        None => ObjectFormat::Yaml,
        Some(text) => <ObjectFormat as clap::ValueEnum>::from_str(text, true)
            .map_err(|_| Failure::Usage(format!("-o {text}: yaml, json or proto")))?,
    };
    let release = if args.cluster.asked() {
        crate::cluster::read(&args.cluster)?.1
    } else {
        args.cluster.release()
    };
    let target: Target = super::rewrite::parse_target(&args.to)?;
    if target
        .group
        .as_deref()
        .is_some_and(|g| g != "flowcontrol.apiserver.k8s.io")
    {
        return Err(Failure::Usage(format!(
            "--to {target}: the configuration is flowcontrol.apiserver.k8s.io"
        )));
    }
    let mut sink = Sink::new(format, Destination::Stdout)?;
    let levels = SCHEME
        .read_documents(PRIORITY_LEVELS_YAML.as_bytes())
        .map_err(|e| Failure::Invalid(e.to_string()))?
        .into_iter()
        .map(|d| d.value);
    for document in levels.chain(release.flow_schema_documents()) {
        let name = document
            .pointer("/metadata/name")
            .and_then(|n| n.as_str())
            .unwrap_or_default();
        if args.mandatory_only && !MANDATORY.contains(&name) {
            continue;
        }
        let converted = SCHEME
            .convert_value(&document, &target, UnknownFields::Strict)
            .map_err(|e| Failure::Usage(format!("--to {target}: {e}")))?;
        sink.write(&converted.object)?;
    }
    output::commit(vec![sink])
}

/// How one object compares with the bootstrap configuration.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Compared {
    kind: &'static str,
    name: String,
    /// `unchanged`, `changed`, `missing` (a bootstrap object the configuration lacks) or
    /// `added` (an object that is not a bootstrap one).
    state: &'static str,
    /// A mandatory object, whose spec kube-apiserver writes back.
    mandatory: bool,
    /// Each field of the spec that differs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    changes: Vec<FieldChange>,
}

#[derive(Debug, Serialize)]
struct FieldChange {
    path: String,
    bootstrap: String,
    configuration: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Diff {
    kubernetes_version: String,
    objects: Vec<Compared>,
}

/// An object's kind, name and spec in v1, defaulted as kube-apiserver stores it.
fn keyed(object: HubObject) -> Result<(&'static str, String, Value), Failure> {
    let kind = match &object {
        HubObject::FlowSchema(_) => "FlowSchema",
        HubObject::PriorityLevelConfiguration(_) => "PriorityLevelConfiguration",
        HubObject::APIService(_) => {
            return Err(Failure::Invalid(
                "an APIService is not part of an APF configuration".to_owned(),
            ));
        }
    };
    let value = SCHEME
        .object_from_hub(object, "flowcontrol.apiserver.k8s.io/v1")
        .map_err(|e| Failure::Invalid(e.to_string()))?;
    let name = value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok((
        kind,
        name,
        value.get("spec").cloned().unwrap_or(Value::Null),
    ))
}

/// `apfkit bootstrap --diff`.
fn diff(args: &BootstrapArgs, format: ReportFormat) -> Result<(), Failure> {
    let ((levels, schemas), release) = crate::configuration::read(&args.paths, &args.cluster)?;
    let mut actual = Vec::new();
    for (level, _) in levels {
        actual.push(keyed(HubObject::PriorityLevelConfiguration(level))?);
    }
    for (schema, _) in schemas {
        actual.push(keyed(HubObject::FlowSchema(schema))?);
    }
    let mut bootstrap = Vec::new();
    for level in release.priority_levels() {
        bootstrap.push(keyed(HubObject::PriorityLevelConfiguration(level.clone()))?);
    }
    for schema in release.flow_schemas() {
        bootstrap.push(keyed(HubObject::FlowSchema(schema))?);
    }
    let mut objects = Vec::new();
    for (kind, name, spec) in &bootstrap {
        let mandatory = MANDATORY.contains(&name.as_str());
        let found = actual.iter().find(|(k, n, _)| k == kind && n == name);
        let (state, changes) = match found {
            None => ("missing", Vec::new()),
            Some((_, _, theirs)) => {
                let changes: Vec<FieldChange> = changes(spec, theirs)
                    .into_iter()
                    .map(|change| FieldChange {
                        path: if change.path.is_empty() {
                            "spec".to_owned()
                        } else {
                            format!("spec.{}", change.path)
                        },
                        bootstrap: change.before,
                        configuration: change.after,
                    })
                    .collect();
                let state = if changes.is_empty() {
                    "unchanged"
                } else {
                    "changed"
                };
                (state, changes)
            }
        };
        objects.push(Compared {
            kind,
            name: name.clone(),
            state,
            mandatory,
            changes,
        });
    }
    for (kind, name, _) in &actual {
        if !bootstrap.iter().any(|(k, n, _)| k == kind && n == name) {
            objects.push(Compared {
                kind,
                name: name.clone(),
                state: "added",
                mandatory: false,
                changes: Vec::new(),
            });
        }
    }
    let report = Diff {
        kubernetes_version: release.to_string(),
        objects,
    };
    match format {
        ReportFormat::Json => print_json(&report),
        ReportFormat::Text => emit(&diff_text(&report)),
    }
}

fn diff_text(report: &Diff) -> String {
    let unchanged = report
        .objects
        .iter()
        .filter(|o| o.state == "unchanged")
        .count();
    let mut out = format!(
        "Compared with Kubernetes {}'s bootstrap configuration: {unchanged} unchanged.\n",
        report.kubernetes_version
    );
    for object in report.objects.iter().filter(|o| o.state != "unchanged") {
        let note = if object.mandatory && object.state != "added" {
            " (mandatory: kube-apiserver writes its spec back)"
        } else {
            ""
        };
        out.push_str(&format!(
            "{} {}: {}{note}\n",
            object.kind,
            printable(&object.name),
            object.state
        ));
        for change in &object.changes {
            out.push_str(&format!(
                "  {}: {} -> {}\n",
                printable(&change.path),
                printable(&change.bootstrap),
                printable(&change.configuration)
            ));
        }
    }
    out
}
