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
    /// FlowSchema, PriorityLevelConfiguration, APIService, or one of their lists; any case, or
    /// the resource name (flowschemas, prioritylevelconfigurations, apiservices) as kubectl
    /// takes it.
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

/// The kind a user means: a kind in any case, or its resource name (the lower-case plural,
/// which is the kind's name with an `s` for these kinds), as kubectl accepts them.
fn canonical_kind(given: &str) -> Option<&'static str> {
    let given = given.to_ascii_lowercase();
    SCHEMAS.iter().map(|(_, _, kind, _)| *kind).find(|kind| {
        let lower = kind.to_ascii_lowercase();
        given == lower || (!kind.ends_with("List") && given == format!("{lower}s"))
    })
}

/// `apfkit schema`.
pub fn run(args: SchemaArgs) -> Result<(), Failure> {
    let (group, version) = match args.version.split_once('/') {
        Some((group, version)) => (Some(group), version),
        None => (None, args.version.as_str()),
    };
    let kind = canonical_kind(&args.kind).unwrap_or(&args.kind);
    let found = SCHEMAS
        .iter()
        .find(|(g, v, k, _)| *k == kind && *v == version && group.is_none_or(|group| group == *g));
    match found {
        Some((_, _, _, schema)) => emit(schema),
        None => {
            let kinds: Vec<String> = SCHEMAS
                .iter()
                .filter(|(_, _, k, _)| *k == kind)
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
