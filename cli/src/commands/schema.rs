//! `schema`.

use apfkit_scheme::discovery::compare_kube_aware_version_strings;
use apfkit_types::json_schema::{self, Variant};
use apfkit_types::{KINDS, KindInfo};
use clap::Args;

use super::emit;
use crate::failure::Failure;

/// Print the JSON Schema (draft 2020-12) of a kind in a version.
///
/// Examples:
///   apfkit schema --kind FlowSchema --version v1beta3
///   apfkit schema --kind APIService --version apiregistration.k8s.io/v1
///   apfkit schema --kind flowschemas --version v1 --strict
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
    /// Refuse fields the schema does not name (`additionalProperties: false` on every object
    /// with properties), as kubeconform's `-strict` schemas do.
    #[arg(long)]
    strict: bool,
}

/// The kind a user means: a kind in any case, or its resource name (the lower-case plural),
/// as kubectl accepts them.
fn canonical_kind(given: &str) -> Option<&'static str> {
    KINDS
        .iter()
        .find(|k| {
            k.kind.eq_ignore_ascii_case(given)
                || k.plural
                    .is_some_and(|plural| plural.eq_ignore_ascii_case(given))
        })
        .map(|k| k.kind)
}

/// `apfkit schema`.
pub fn run(args: SchemaArgs) -> Result<(), Failure> {
    let (group, version) = match args.version.split_once('/') {
        Some((group, version)) => (Some(group), version),
        None => (None, args.version.as_str()),
    };
    let kind = canonical_kind(&args.kind).unwrap_or(&args.kind);
    let found = KINDS
        .iter()
        .find(|k| k.kind == kind && k.version == version && group.is_none_or(|g| g == k.group));
    match found {
        Some(found) => {
            let variant = if args.strict {
                Variant::Strict
            } else {
                Variant::Open
            };
            emit(&json_schema::text(found, variant))
        }
        None => {
            let mut served: Vec<&KindInfo> = KINDS.iter().filter(|k| k.kind == kind).collect();
            // Preferred version first, as discovery lists them.
            served.sort_by(|a, b| {
                a.group
                    .cmp(b.group)
                    .then(compare_kube_aware_version_strings(b.version, a.version))
            });
            let kinds: Vec<&str> = served.iter().map(|k| k.api_version).collect();
            Err(Failure::Usage(if kinds.is_empty() {
                let mut resources: Vec<&str> = KINDS
                    .iter()
                    .filter(|k| !k.is_list())
                    .map(|k| k.kind)
                    .collect();
                resources.sort_unstable();
                resources.dedup();
                format!(
                    "unknown kind {:?}: expected {} or one of their lists",
                    args.kind,
                    resources.join(", ")
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

#[cfg(test)]
mod tests {
    #[test]
    fn kinds_and_resource_names_in_any_case() {
        for given in [
            "FlowSchema",
            "flowschema",
            "flowschemas",
            "FlowSchemas",
            "FLOWSCHEMAS",
        ] {
            assert_eq!(super::canonical_kind(given), Some("FlowSchema"), "{given}");
        }
        assert_eq!(
            super::canonical_kind("apiservicelist"),
            Some("APIServiceList")
        );
        assert_eq!(super::canonical_kind("apiservicelists"), None);
        assert_eq!(super::canonical_kind("pods"), None);
    }
}
