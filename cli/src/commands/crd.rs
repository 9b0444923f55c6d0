//! `crd`: checks of users' CustomResourceDefinitions. `crd check-conversion` (on
//! apfkit-roundtrip) proves a multi-version CRD's conversion loses nothing.

use std::path::PathBuf;
use std::time::Duration;

use apfkit_roundtrip::{Check, Converter, NoConversion, Report, Webhook};
use clap::{Args, Subcommand};
use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as api;

use super::{emit, print_json};
use crate::failure::Failure;

/// Check CustomResourceDefinitions: what their conversion loses (check-conversion).
#[derive(Debug, Args)]
pub struct CrdArgs {
    #[command(subcommand)]
    command: CrdCommand,
}

#[derive(Debug, Subcommand)]
enum CrdCommand {
    CheckConversion(CheckConversionArgs),
}

/// Prove that a multi-version CRD's conversion loses nothing.
///
/// Objects are generated for every served version from its structural schema (every field
/// absent and present, nulls, empty and zero values, extremes, long and non-ASCII strings,
/// enums, maps, list types, preserved unknown fields) and kept when the version admits them
/// as kube-apiserver admits a create (pruned, defaulted, validated with its CEL rules).
/// Each is converted to every other version and back, as kube-apiserver converts: through
/// the CRD's webhook (several objects per ConversionReview, the answer checked as
/// kube-apiserver checks it), or with strategy None only apiVersion changing; each
/// converted object is read in its version as the storage reads it (pruned, defaulted).
/// Every field lost, changed or added is named by its path with the smallest object that
/// still shows it; with three versions or more A → B → C is compared with A → C.
///
/// The webhook is the one --webhook names (trusting --ca), else the CRD's own
/// clientConfig.url (trusting its caBundle); a clientConfig.service needs --webhook. The
/// same --seed checks the same objects. Exit status: 0 when nothing is lost, 1 when
/// something is (or the check stopped at --timeout), 2 for bad flags.
///
/// Examples:
///   apfkit crd check-conversion -f widgets.crd.yaml
///   apfkit crd check-conversion -f widgets.crd.yaml --webhook https://127.0.0.1:9443/convert --ca ca.crt
///   apfkit crd check-conversion -f widgets.crd.yaml --cases 500 --seed 7 -o sarif > conversion.sarif
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct CheckConversionArgs {
    /// The CRD: a file or directory of YAML or JSON (every CRD found is checked).
    #[arg(short = 'f', long = "filename", value_name = "PATH", required = true)]
    files: Vec<String>,
    /// The conversion webhook's URL, in place of the CRD's clientConfig.
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    /// The PEM file of the CA that signed the webhook's certificate (with --webhook).
    #[arg(long, value_name = "FILE", requires = "webhook")]
    ca: Option<PathBuf>,
    /// The seed the objects are generated from.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Objects generated per version.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    cases: u32,
    /// Objects per ConversionReview.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    per_review: u32,
    /// Stop after this many seconds (the report says where it stopped).
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: Format,
}

/// How the report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// For people: each finding under its versions, with its object.
    Text,
    /// One JSON document.
    Json,
    /// SARIF 2.1.0, for code-scanning tools.
    Sarif,
}

/// Runs `apfkit crd ...`.
pub fn run(args: CrdArgs) -> Result<(), Failure> {
    match args.command {
        CrdCommand::CheckConversion(args) => check_conversion(args),
    }
}

fn check_conversion(args: CheckConversionArgs) -> Result<(), Failure> {
    let ca = match &args.ca {
        Some(path) => Some(
            crate::input::read_bounded(path)
                .map_err(|why| Failure::Invalid(format!("--ca {}: {why}", path.display())))?,
        ),
        None => None,
    };
    let mut reports: Vec<(String, Report)> = Vec::new();
    for (location, manifest) in super::crds::manifests(&args.files)? {
        let crd = apfkit_crd::CustomResourceDefinition::from_value(&manifest)
            .map_err(|err| Failure::at(&location, err.to_string()))?;
        let converter = converter(&crd, args.webhook.as_deref(), ca.as_deref())
            .map_err(|why| Failure::at(&location, why))?;
        let check = Check::new(crd)
            .seed(args.seed)
            .cases(args.cases as usize)
            .per_review(args.per_review as usize)
            .time_limit(Duration::from_secs(args.timeout));
        reports.push((location.file.clone(), check.run(converter.as_ref())));
    }
    match args.output {
        Format::Text => emit(
            &reports
                .iter()
                .map(|(_, report)| report.text())
                .collect::<Vec<_>>()
                .join("\n"),
        )?,
        Format::Json => {
            let all: Vec<_> = reports.iter().map(|(_, report)| report.json()).collect();
            print_json(&all)?;
        }
        Format::Sarif => {
            // One run; each report's results located in its own file.
            let mut sarif: Option<serde_json::Value> = None;
            for (file, report) in &reports {
                let this = report.sarif(file);
                let results = sarif
                    .as_mut()
                    .and_then(|sarif| sarif.pointer_mut("/runs/0/results"))
                    .and_then(serde_json::Value::as_array_mut);
                match results {
                    Some(results) => results.extend(
                        this.pointer("/runs/0/results")
                            .and_then(serde_json::Value::as_array)
                            .cloned()
                            .unwrap_or_default(),
                    ),
                    None => sarif = Some(this),
                }
            }
            print_json(&sarif)?;
        }
    }
    let found: usize = reports
        .iter()
        .map(|(_, report)| report.findings.len() + usize::from(report.timed_out))
        .sum();
    if found > 0 {
        return Err(Failure::ValidationErrors(found));
    }
    Ok(())
}

/// What converts `crd`'s objects: its webhook (or the one `webhook` names, trusting `ca`),
/// or nothing but `apiVersion` for `strategy: None`.
fn converter(
    crd: &apfkit_crd::CustomResourceDefinition,
    webhook: Option<&str>,
    ca: Option<&str>,
) -> Result<Box<dyn Converter>, String> {
    let conversion = crd.source.spec.conversion.as_ref();
    let strategy = conversion.map_or("None", |c| c.strategy.as_str());
    let mut settings = conversion
        .and_then(|c| c.webhook.clone())
        .unwrap_or_else(|| api::WebhookConversion {
            client_config: None,
            conversion_review_versions: vec!["v1".to_owned()],
        });
    match (strategy, webhook) {
        ("None", None) => return Ok(Box::new(NoConversion)),
        (_, Some(url)) => {
            settings.client_config = Some(api::WebhookClientConfig {
                url: Some(url.to_owned()),
                ca_bundle: ca.map(|pem| ByteString(pem.as_bytes().to_vec())),
                service: None,
            });
        }
        (_, None) => {
            if settings
                .client_config
                .as_ref()
                .is_some_and(|c| c.service.is_some())
            {
                return Err(
                    "spec.conversion.webhook.clientConfig.service: give the webhook's address with --webhook URL (and --ca FILE)"
                        .to_owned(),
                );
            }
        }
    }
    Ok(Box::new(Webhook::new(&settings)?))
}
