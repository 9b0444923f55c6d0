//! `validate`.

use apfkit_scheme::scheme::{self, Input, SCHEME, Target, UnknownFields};
use apfkit_scheme::validation::{self, Options};
use clap::Args;

use super::emit;
use crate::failure::{Failure, printable};
use crate::input;

/// Validate objects as kube-apiserver does on create.
///
/// Prints one line per error, FILE: document N: Kind/name: message, with kube-apiserver's field paths
/// and messages. Exits with 1 if there is any error, 0 otherwise.
///
/// CustomResourceDefinitions are checked as kube-apiserver checks them when they are written
/// (names, versions, conversion, printer columns, schemas, CEL rules and their costs). With
/// --crd, objects of the kinds the definitions define are checked as kube-apiserver checks
/// custom resources: unknown fields pruned (a warning each), defaults applied, then the
/// schema, list types and x-kubernetes-validations (CEL) rules.
///
/// Examples:
///   apfkit validate -f flowcontrol/
///   apfkit validate -f levels.yaml --request-version v1beta2 --forbid-zero-shares
///   apfkit validate -f crds/
///   apfkit validate --crd widgets.crd.yaml -f widgets/
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ValidateArgs {
    /// File, directory or - (repeatable); standard input when absent.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    paths: Vec<String>,
    #[command(flatten)]
    input: crate::input::InputArgs,
    /// The version of the request, which names the shares field in messages
    /// (assuredConcurrencyShares before v1beta3) [default: each object's own version].
    #[arg(long, value_name = "VERSION")]
    request_version: Option<String>,
    /// Reject nominalConcurrencyShares 0, as Kubernetes 1.29 does by default.
    #[arg(long)]
    forbid_zero_shares: bool,
    /// CustomResourceDefinition file or directory (repeatable): validate the objects of its
    /// kinds as custom resources.
    #[arg(long = "crd", value_name = "PATH")]
    crds: Vec<String>,
}

/// The version `--request-version` names, checked: a flowcontrol version, bare or in full.
fn request_version(given: Option<&str>) -> Result<Option<String>, Failure> {
    let Some(given) = given else {
        return Ok(None);
    };
    let target: Target = given.parse().map_err(|e: scheme::SchemeError| {
        Failure::Usage(format!("--request-version: {}", e.message))
    })?;
    let flowcontrol = Target {
        group: Some(FLOWCONTROL.to_owned()),
        version: target.version.clone(),
    };
    if target.group.as_deref().is_some_and(|g| g != FLOWCONTROL)
        || SCHEME.check_target(&flowcontrol).is_err()
    {
        return Err(Failure::Usage(format!(
            "--request-version {given}: expected a version of {FLOWCONTROL} (v1alpha1, v1beta1, \
             v1beta2, v1beta3 or v1)"
        )));
    }
    Ok(Some(format!("{FLOWCONTROL}/{}", target.version)))
}

const FLOWCONTROL: &str = "flowcontrol.apiserver.k8s.io";

/// `apfkit validate`.
pub fn run(args: ValidateArgs) -> Result<(), Failure> {
    args.input.apply();
    let request_version = request_version(args.request_version.as_deref())?;
    let mut errors = 0;
    let mut names = input::Names::default();
    let mut objects = 0;
    let definitions = super::crds::load(&args.crds)?;
    for source in input::sources(&args.paths)? {
        let result = input::for_each_document(&source, |location, read| {
            if let Some(found) = super::crds::check(&definitions, &location, &read)? {
                objects += 1;
                for line in &found.errors {
                    emit(&format!(
                        "{location}: {}: {}\n",
                        found.label,
                        printable(line)
                    ))?;
                }
                errors += found.errors.len();
                return Ok(());
            }
            if input::skipped_as_other_kind(&location, &read)? {
                return Ok(());
            }
            // Repeated keys are reported as warnings; unknown fields are not validation's
            // business. A JSON document without repeated keys decodes from its bytes; a YAML
            // object the reader decoded (nothing to report) is taken as it is.
            let (own_version, decoded) = match read {
                Input::Json(json) if !json.may_repeat_keys => (
                    json.api_version.as_deref().map(str::to_owned),
                    SCHEME.to_hub(Input::Json(json), UnknownFields::Ignore),
                ),
                Input::Yaml(yaml) => (
                    Some(yaml.api_version()),
                    SCHEME.to_hub(Input::Yaml(yaml), UnknownFields::Ignore),
                ),
                read => {
                    let document = input::built(&location, read)?;
                    input::check_fields(&location, &document, UnknownFields::Warn)?;
                    let own_version = document
                        .value
                        .get("apiVersion")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned);
                    (
                        own_version,
                        SCHEME.to_hub_value(&document.value, UnknownFields::Ignore),
                    )
                }
            };
            let (decoded, _) = match decoded {
                Ok(decoded) => decoded,
                Err(error) => {
                    emit(&format!("{location}: {}\n", printable(&error.to_string())))?;
                    errors += 1;
                    return Ok(());
                }
            };
            let options = Options {
                request_version: request_version.as_deref().or(own_version.as_deref()),
                allow_zero_shares: !args.forbid_zero_shares,
                old_priority_level: None,
            };
            for object in &decoded {
                objects += 1;
                let prefix = format!("{location}: {}", input::label(object));
                for error in validation::validate(object, &options) {
                    emit(&format!("{prefix}: {}\n", printable(&error.to_string())))?;
                    errors += 1;
                }
                if let Some(duplicate) = names.record(&location, object) {
                    emit(&format!("{prefix}: {}\n", printable(&duplicate)))?;
                    errors += 1;
                }
            }
            Ok(())
        });
        // A file that cannot be read is reported, and the other files are still validated.
        match result {
            Err(Failure::Input { location, message }) => {
                emit(&format!(
                    "{location}: {}\n",
                    crate::failure::for_terminal(&message)
                ))?;
                errors += 1;
            }
            other => other?,
        }
    }
    if objects == 0 && errors == 0 {
        // As `kubectl apply` does, an input without objects is an error, not a silent pass.
        return Err(Failure::Invalid(
            "no objects were read: the input is empty or only comments".to_owned(),
        ));
    }
    if errors > 0 {
        Err(Failure::ValidationErrors(errors))
    } else {
        Ok(())
    }
}
