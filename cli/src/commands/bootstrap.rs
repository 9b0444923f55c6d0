//! `bootstrap`.

use apfkit_conversion::scheme::{SCHEME, Target, UnknownFields};
use apfkit_dispatcher::bootstrap::{MANDATORY, PRIORITY_LEVELS_YAML};
use apfkit_dispatcher::release::Release;
use clap::Args;

use crate::failure::Failure;
use crate::output::{self, Destination, ObjectFormat, Sink};

/// Print Kubernetes' default APF configuration (a release's mandatory and suggested objects):
/// PriorityLevelConfigurations, then FlowSchemas.
///
/// Examples:
///   apfkit bootstrap --to v1beta3 > apf.yaml
///   apfkit bootstrap --mandatory-only -o json
///   apfkit bootstrap --kubernetes-version 1.33
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct BootstrapArgs {
    /// Flowcontrol version to print (VERSION or flowcontrol.apiserver.k8s.io/VERSION).
    #[arg(long, value_name = "VERSION", default_value = "v1")]
    to: String,
    /// Only the mandatory objects (exempt and catch-all).
    #[arg(long)]
    mandatory_only: bool,
    /// The Kubernetes release whose configuration to print (1.33 to 1.36; 1.34 removed the
    /// suggested endpoint-controller and workload-leader-election FlowSchemas).
    #[arg(long, value_name = "VERSION", default_value_t = Release::NEWEST)]
    kubernetes_version: Release,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "yaml")]
    output: ObjectFormat,
}

/// `apfkit bootstrap`.
pub fn run(args: BootstrapArgs) -> Result<(), Failure> {
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
    let mut sink = Sink::new(args.output, Destination::Stdout)?;
    let levels = SCHEME
        .read_documents(PRIORITY_LEVELS_YAML.as_bytes())
        .map_err(|e| Failure::Invalid(e.to_string()))?
        .into_iter()
        .map(|d| d.value);
    for document in levels.chain(args.kubernetes_version.flow_schema_documents()) {
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
