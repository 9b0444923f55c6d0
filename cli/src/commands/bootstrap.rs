//! `bootstrap`.

use apfkit_conversion::scheme::{SCHEME, Target, UnknownFields};
use apfkit_dispatcher::bootstrap::{FLOW_SCHEMAS_YAML, MANDATORY, PRIORITY_LEVELS_YAML};
use clap::Args;

use crate::failure::Failure;
use crate::output::{self, Destination, ObjectFormat, Sink};

/// Print Kubernetes' default APF configuration (the current release's mandatory and
/// suggested objects): PriorityLevelConfigurations, then FlowSchemas.
///
/// Examples:
///   apfkit bootstrap --to v1beta3 > apf.yaml
///   apfkit bootstrap --mandatory-only -o json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct BootstrapArgs {
    /// Flowcontrol version to print (VERSION or flowcontrol.apiserver.k8s.io/VERSION).
    #[arg(long, value_name = "VERSION", default_value = "v1")]
    to: String,
    /// Only the mandatory objects (exempt and catch-all).
    #[arg(long)]
    mandatory_only: bool,
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
    for yaml in [PRIORITY_LEVELS_YAML, FLOW_SCHEMAS_YAML] {
        let documents = SCHEME
            .read_documents(yaml.as_bytes())
            .map_err(|e| Failure::Invalid(e.to_string()))?;
        for document in documents {
            let name = document
                .value
                .pointer("/metadata/name")
                .and_then(|n| n.as_str())
                .unwrap_or_default();
            if args.mandatory_only && !MANDATORY.contains(&name) {
                continue;
            }
            let converted = SCHEME
                .convert_value(&document.value, &target, UnknownFields::Strict)
                .map_err(|e| Failure::Usage(format!("--to {target}: {e}")))?;
            sink.write(&converted.object)?;
        }
    }
    output::commit(vec![sink])
}
