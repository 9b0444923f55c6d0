//! `validate`.

use apfkit_conversion::scheme::{self, HubObject, UnknownFields};
use apfkit_conversion::validation::{self, Options};
use clap::Args;

use super::emit;
use crate::failure::Failure;
use crate::input;

/// Validate objects as kube-apiserver does on create.
///
/// Prints one line per error, FILE:DOC: Kind/name: message, with kube-apiserver's field paths
/// and messages. Exits with 1 if there is any error, 0 otherwise.
///
/// Examples:
///   apfkit validate -f flowcontrol/
///   apfkit validate -f levels.yaml --request-version v1beta2 --forbid-zero-shares
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ValidateArgs {
    /// File, directory or - (repeatable); standard input when absent.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    paths: Vec<String>,
    /// The version of the request, which names the shares field in messages
    /// (assuredConcurrencyShares before v1beta3) [default: each object's own version].
    #[arg(long, value_name = "VERSION")]
    request_version: Option<String>,
    /// Reject nominalConcurrencyShares 0, as Kubernetes 1.29 does by default.
    #[arg(long)]
    forbid_zero_shares: bool,
}

fn kind_and_name(object: &HubObject) -> (&'static str, String) {
    match object {
        HubObject::FlowSchema(o) => ("FlowSchema", o.metadata.name.clone().unwrap_or_default()),
        HubObject::PriorityLevelConfiguration(o) => (
            "PriorityLevelConfiguration",
            o.metadata.name.clone().unwrap_or_default(),
        ),
        HubObject::APIService(o) => ("APIService", o.metadata.name.clone().unwrap_or_default()),
    }
}

/// `apfkit validate`.
pub fn run(args: ValidateArgs) -> Result<(), Failure> {
    let mut errors = 0;
    for source in input::sources(&args.paths)? {
        input::for_each_document(&source, |location, value| {
            let own_version = value
                .get("apiVersion")
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            let (objects, _) = match scheme::to_hub(&value, UnknownFields::Ignore) {
                Ok(decoded) => decoded,
                Err(error) => {
                    emit(&format!("{location}: {error}\n"))?;
                    errors += 1;
                    return Ok(());
                }
            };
            let options = Options {
                request_version: args.request_version.as_deref().or(own_version.as_deref()),
                allow_zero_shares: !args.forbid_zero_shares,
                old_priority_level: None,
            };
            for object in &objects {
                let (kind, name) = kind_and_name(object);
                for error in validation::validate(object, &options) {
                    emit(&format!("{location}: {kind}/{name}: {error}\n"))?;
                    errors += 1;
                }
            }
            Ok(())
        })?;
    }
    if errors > 0 {
        Err(Failure::ValidationErrors(errors))
    } else {
        Ok(())
    }
}
