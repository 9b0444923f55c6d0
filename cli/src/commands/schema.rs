//! `schema`.

use clap::Args;

use super::emit;
use crate::failure::Failure;

/// Print the JSON Schema (draft 2020-12) of a kind in a version.
///
/// Examples:
///   apfkit schema --kind FlowSchema --version v1beta3
///   apfkit schema --kind APIService --version apiregistration.k8s.io/v1
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct SchemaArgs {
    /// FlowSchema, PriorityLevelConfiguration, APIService, or one of their lists.
    #[arg(long)]
    kind: String,
    /// VERSION or GROUP/VERSION.
    #[arg(long)]
    version: String,
}

macro_rules! schemas {
    ($($group:literal / $version:literal / $kind:literal),* $(,)?) => {
        &[$((
            $group,
            $version,
            $kind,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"), "/../schemas/jsonschema/", $group, "/", $version, "/", $kind, ".json"
            )),
        )),*]
    };
}

/// The committed JSON Schemas (`schemas/jsonschema`), kept fresh by `cargo xtask codegen`.
const SCHEMAS: &[(&str, &str, &str, &str)] = schemas!(
    "flowcontrol.apiserver.k8s.io" / "v1alpha1" / "FlowSchema",
    "flowcontrol.apiserver.k8s.io" / "v1alpha1" / "FlowSchemaList",
    "flowcontrol.apiserver.k8s.io" / "v1alpha1" / "PriorityLevelConfiguration",
    "flowcontrol.apiserver.k8s.io" / "v1alpha1" / "PriorityLevelConfigurationList",
    "flowcontrol.apiserver.k8s.io" / "v1beta1" / "FlowSchema",
    "flowcontrol.apiserver.k8s.io" / "v1beta1" / "FlowSchemaList",
    "flowcontrol.apiserver.k8s.io" / "v1beta1" / "PriorityLevelConfiguration",
    "flowcontrol.apiserver.k8s.io" / "v1beta1" / "PriorityLevelConfigurationList",
    "flowcontrol.apiserver.k8s.io" / "v1beta2" / "FlowSchema",
    "flowcontrol.apiserver.k8s.io" / "v1beta2" / "FlowSchemaList",
    "flowcontrol.apiserver.k8s.io" / "v1beta2" / "PriorityLevelConfiguration",
    "flowcontrol.apiserver.k8s.io" / "v1beta2" / "PriorityLevelConfigurationList",
    "flowcontrol.apiserver.k8s.io" / "v1beta3" / "FlowSchema",
    "flowcontrol.apiserver.k8s.io" / "v1beta3" / "FlowSchemaList",
    "flowcontrol.apiserver.k8s.io" / "v1beta3" / "PriorityLevelConfiguration",
    "flowcontrol.apiserver.k8s.io" / "v1beta3" / "PriorityLevelConfigurationList",
    "flowcontrol.apiserver.k8s.io" / "v1" / "FlowSchema",
    "flowcontrol.apiserver.k8s.io" / "v1" / "FlowSchemaList",
    "flowcontrol.apiserver.k8s.io" / "v1" / "PriorityLevelConfiguration",
    "flowcontrol.apiserver.k8s.io" / "v1" / "PriorityLevelConfigurationList",
    "apiregistration.k8s.io" / "v1beta1" / "APIService",
    "apiregistration.k8s.io" / "v1beta1" / "APIServiceList",
    "apiregistration.k8s.io" / "v1" / "APIService",
    "apiregistration.k8s.io" / "v1" / "APIServiceList",
);

/// `apfkit schema`.
pub fn run(args: SchemaArgs) -> Result<(), Failure> {
    let (group, version) = match args.version.split_once('/') {
        Some((group, version)) => (Some(group), version),
        None => (None, args.version.as_str()),
    };
    let found = SCHEMAS.iter().find(|(g, v, k, _)| {
        *k == args.kind && *v == version && group.is_none_or(|group| group == *g)
    });
    match found {
        Some((_, _, _, schema)) => emit(schema),
        None => {
            let kinds: Vec<String> = SCHEMAS
                .iter()
                .filter(|(_, _, k, _)| *k == args.kind)
                .map(|(g, v, _, _)| format!("{g}/{v}"))
                .collect();
            Err(Failure::Usage(if kinds.is_empty() {
                format!(
                    "unknown kind {:?}: expected FlowSchema, PriorityLevelConfiguration, APIService or one of their lists",
                    args.kind
                )
            } else {
                format!(
                    "{} is not served in {}; it is in {}",
                    args.kind,
                    args.version,
                    kinds.join(", ")
                )
            }))
        }
    }
}
