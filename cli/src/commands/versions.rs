//! `versions`.

use apfkit_scheme::discovery::{builtin_apiservices, sorted_by_group_and_version};
use apfkit_scheme::scheme::HubObject;
use clap::Args;
use serde::Serialize;

use super::{ReportFormat, emit, print_json};
use crate::failure::{Failure, printable};
use crate::input;

/// List API groups and versions in discovery order, preferred version first.
///
/// The order is kube-aggregator's: groups by groupPriorityMinimum, versions by
/// versionPriority, then by Kubernetes version order. Computed from the APIService objects of
/// the -f paths, or from the generic control plane's default APIService priorities
/// (DefaultGenericAPIServicePriorities in Kubernetes' pkg/controlplane/apiserver), which
/// kube-apiserver registers for the groups it serves itself.
///
/// Examples:
///   apfkit versions
///   apfkit versions -f apiservices.yaml -o json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct VersionsArgs {
    /// APIServices: file, directory or - (repeatable); the generic control plane's default
    /// priorities when absent.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    paths: Vec<String>,
    #[command(flatten)]
    input: crate::input::InputArgs,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: ReportFormat,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Group {
    group: String,
    preferred_version: String,
    versions: Vec<String>,
}

/// `apfkit versions`.
pub fn run(args: VersionsArgs) -> Result<(), Failure> {
    args.input.apply();
    let services = if args.paths.is_empty() {
        builtin_apiservices()
    } else {
        let mut services = Vec::new();
        input::for_each_hub_object(&args.paths, |location, object| match object {
            HubObject::APIService(service) => {
                services.push(service);
                Ok(())
            }
            _ => Err(Failure::at(location, "expected APIService objects")),
        })?;
        services
    };
    let groups: Vec<Group> = sorted_by_group_and_version(&services)
        .into_iter()
        .map(|g| Group {
            preferred_version: g.preferred().unwrap_or_default().to_owned(),
            group: g.group,
            versions: g.versions,
        })
        .collect();
    match args.output {
        ReportFormat::Json => print_json(&groups),
        ReportFormat::Text => {
            let mut text = String::new();
            if args.paths.is_empty() {
                text.push_str(
                    "# the generic control plane's default APIService priorities \
                     (DefaultGenericAPIServicePriorities)\n",
                );
            }
            for group in &groups {
                let name = if group.group.is_empty() {
                    "(core)"
                } else {
                    &group.group
                };
                let versions = group.versions.join(", ");
                text.push_str(&format!("{}: {}\n", printable(name), printable(&versions)));
            }
            emit(&text)
        }
    }
}
