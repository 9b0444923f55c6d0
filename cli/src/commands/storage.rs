//! `storage`: kube-apiserver's etcd as the store.

use std::path::PathBuf;
use std::time::Duration;

use apfkit_conversion::scheme::{self, Target, UnknownFields};
use apfkit_storage::etcd::{EtcdOptions, RESOURCES, Store, StoredResource};
use apfkit_storage::migrate::{self, MigrateOptions};
use apfkit_storage::object;
use clap::{Args, Subcommand};
use serde::Serialize;

use super::{ReportFormat, emit, print_json};
use crate::failure::Failure;
use crate::output::{self, Destination, ObjectFormat, Sink};

/// Read the objects kube-apiserver keeps in etcd.
///
/// FlowSchemas and PriorityLevelConfigurations are stored under <prefix>/flowschemas/ and
/// <prefix>/prioritylevelconfigurations/ in Kubernetes' protobuf envelope; APIServices under
/// <prefix>/apiregistration.k8s.io/apiservices/ as JSON. Values encrypted at rest (k8s:enc:)
/// are reported, never decoded or changed.
#[derive(Debug, Args)]
pub struct StorageArgs {
    #[command(subcommand)]
    command: StorageCommand,
}

#[derive(Debug, Subcommand)]
enum StorageCommand {
    Ls(LsArgs),
    Get(GetArgs),
    Migrate(MigrateArgs),
}

/// Print one stored object, decoded, in its stored version or another.
///
/// The value is decoded as kube-apiserver decodes it (protobuf envelope or JSON);
/// metadata.resourceVersion is the key's mod revision, as the API shows it. With --to the
/// object is defaulted and converted. JSON output follows kube-apiserver's field order.
///
/// Examples:
///   apfkit storage get /registry/flowschemas/catch-all
///   apfkit storage get --kind PriorityLevelConfiguration --name workload-low --to v1 -o json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct GetArgs {
    /// The etcd key, such as /registry/flowschemas/exempt.
    #[arg(value_name = "KEY", required_unless_present = "name", conflicts_with_all = ["kind", "name"])]
    etcd_key: Option<String>,
    /// The kind (FlowSchema, PriorityLevelConfiguration, APIService), with --name.
    #[arg(long, requires = "name")]
    kind: Option<String>,
    /// The object's name, with --kind.
    #[arg(long, requires = "kind")]
    name: Option<String>,
    /// Convert to this version (VERSION or GROUP/VERSION).
    #[arg(long, value_name = "VERSION")]
    to: Option<String>,
    #[command(flatten)]
    connection: Connection,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "yaml")]
    output: ObjectFormat,
}

/// Rewrite stored objects in another version (storage-version migration).
///
/// Every stored FlowSchema, PriorityLevelConfiguration and APIService whose stored version
/// differs from the target (or every one, with --all) is decoded, defaulted, converted and
/// written back in the encoding it had, in transactions that check each key's mod revision.
/// If another writer changed a key meanwhile, that key is read again and the work redone.
/// Values that do not decode, are encrypted at rest, would convert lossily or carry fields
/// their schema lacks (unless --unknown-fields warn or ignore) are reported and left
/// untouched. Safe to run again: a stopped run is finished by the next.
///
/// Exit code 1 if any object was not migrated or etcd failed.
///
/// Examples:
///   apfkit storage migrate --to v1 --dry-run
///   apfkit storage migrate --to v1
///   apfkit storage migrate --to flowcontrol.apiserver.k8s.io/v1 --endpoints https://10.0.0.2:2379 --cacert ca.crt --cert client.crt --key client.key
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct MigrateArgs {
    /// The version to store (VERSION applies to every group, GROUP/VERSION to one).
    #[arg(long, value_name = "VERSION")]
    to: String,
    /// Rewrite objects already stored in the target version too.
    #[arg(long)]
    all: bool,
    /// List what would change; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Fields a stored object's schema does not have: strict leaves the object untouched and
    /// reports it; warn and ignore rewrite it without them.
    #[arg(long, value_enum, default_value = "strict")]
    unknown_fields: UnknownFieldsArg,
    /// Transactions in flight at the same time.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    parallel: u16,
    /// Keys written per transaction. A group is written whole or, when another writer changed
    /// one of its keys, not at all and then again; etcd refuses more than its --max-txn-ops
    /// (default 128).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
    batch: u16,
    #[command(flatten)]
    connection: Connection,
    /// Report format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: ReportFormat,
}

/// `--unknown-fields` of `migrate`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum UnknownFieldsArg {
    Strict,
    Warn,
    Ignore,
}

/// Connection flags, as etcdctl's.
#[derive(Debug, Args)]
struct Connection {
    /// etcd client URLs, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
    endpoints: Vec<String>,
    /// CA bundle (PEM) to verify etcd's certificate.
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// Client certificate (PEM); needs --key.
    #[arg(long, value_name = "FILE")]
    cert: Option<PathBuf>,
    /// Client key (PEM); needs --cert.
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// kube-apiserver's --etcd-prefix.
    #[arg(long, default_value = "/registry")]
    prefix: String,
    /// Deadline of the connection and of each request, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    timeout: u64,
}

/// List the stored FlowSchemas, PriorityLevelConfigurations and APIServices.
///
/// One line per key: its stored apiVersion, encoding (protobuf, json, encrypted), size and
/// mod revision. A value that is not a stored object is listed with the reason. Exit code 1
/// if etcd cannot be reached.
///
/// Examples:
///   apfkit storage ls
///   apfkit storage ls --endpoints https://10.0.0.2:2379 --cacert ca.crt --cert apiserver-etcd-client.crt --key apiserver-etcd-client.key -o json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct LsArgs {
    #[command(flatten)]
    connection: Connection,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: ReportFormat,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    key: String,
    resource: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    encoding: String,
    size: usize,
    mod_revision: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// `apfkit storage ...`.
pub fn run(args: StorageArgs) -> Result<(), Failure> {
    match args.command {
        StorageCommand::Ls(args) => ls(args),
        StorageCommand::Get(args) => get(args),
        StorageCommand::Migrate(args) => migrate(args),
    }
}

fn options(connection: Connection) -> EtcdOptions {
    EtcdOptions {
        endpoints: connection.endpoints,
        ca: connection.cacert,
        cert: connection.cert,
        key: connection.key,
        prefix: connection.prefix,
        timeout: Duration::from_secs(connection.timeout.max(1)),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Failure::Invalid(format!("starting the runtime: {err}")))
}

fn get(args: GetArgs) -> Result<(), Failure> {
    let target = args
        .to
        .as_deref()
        .map(|to| {
            to.parse::<Target>()
                .map_err(|e| Failure::Usage(e.to_string()))
        })
        .transpose()?;
    let options = options(args.connection);
    let key = match (args.etcd_key, args.kind, args.name) {
        (Some(key), _, _) => key,
        (None, Some(kind), Some(name)) => {
            let resource = resource_of_kind(&kind)?;
            format!(
                "{}/{}/{name}",
                options.prefix.trim_end_matches('/'),
                resource.path
            )
        }
        _ => {
            return Err(Failure::Usage(
                "give a KEY, or --kind and --name".to_owned(),
            ));
        }
    };
    let raw = runtime()?
        .block_on(async {
            let mut store = Store::connect(&options).await?;
            store.get(key.as_bytes()).await
        })
        .map_err(|err| Failure::Invalid(err.to_string()))?
        .ok_or_else(|| Failure::Invalid(format!("{key}: no such key")))?;
    let stored = object::decode(&raw.value, raw.mod_revision)
        .map_err(|err| Failure::Invalid(format!("{key}: {err}")))?;
    let mut value = stored.object;
    if let Some(target) = &target {
        let converted = scheme::convert(&value, target, UnknownFields::Warn)
            .map_err(|err| Failure::Invalid(format!("{key}: {err}")))?;
        for warning in &converted.warnings {
            eprintln!("warning: {key}: {warning}");
        }
        value = converted.object;
    }
    for unknown in &stored.unknown {
        eprintln!(
            "warning: {key}: unknown protobuf field {} ({})",
            unknown.path, unknown.wire
        );
    }
    let mut sink = Sink::new(args.output, Destination::Stdout)?;
    sink.write(&value)?;
    output::commit(vec![sink])
}

/// The stored resource of a kind name (case-insensitive, list kinds refused).
fn resource_of_kind(kind: &str) -> Result<&'static StoredResource, Failure> {
    let info = apfkit_types::KINDS
        .iter()
        .find(|k| k.kind.eq_ignore_ascii_case(kind) && k.plural.is_some())
        .ok_or_else(|| {
            Failure::Usage(format!(
                "unknown kind {kind:?}: FlowSchema, PriorityLevelConfiguration or APIService"
            ))
        })?;
    RESOURCES
        .iter()
        .find(|r| r.group == info.group && Some(r.plural) == info.plural)
        .ok_or_else(|| Failure::Usage(format!("{kind} is not stored in etcd by apfkit")))
}

fn migrate(args: MigrateArgs) -> Result<(), Failure> {
    let target: Target = args
        .to
        .parse()
        .map_err(|e: apfkit_conversion::scheme::SchemeError| Failure::Usage(e.to_string()))?;
    scheme::check_target(&target).map_err(|e| Failure::Usage(e.to_string()))?;
    let connection = options(args.connection);
    let mut options = MigrateOptions::new(target);
    options.all = args.all;
    options.dry_run = args.dry_run;
    options.parallel = usize::from(args.parallel);
    options.batch = usize::from(args.batch);
    options.unknown = match args.unknown_fields {
        UnknownFieldsArg::Strict => UnknownFields::Strict,
        UnknownFieldsArg::Warn => UnknownFields::Warn,
        UnknownFieldsArg::Ignore => UnknownFields::Ignore,
    };
    let summary = runtime()?
        .block_on(async {
            let mut store = Store::connect(&connection).await?;
            let bar = progress_bar(migrate::total(&mut store).await?);
            let summary = migrate::migrate(&mut store, &options, &|| bar.inc(1)).await;
            bar.finish_and_clear();
            summary
        })
        .map_err(|err| {
            Failure::Invalid(format!(
                "{err}; objects written so far are kept, run again to finish"
            ))
        })?;
    match args.output {
        ReportFormat::Json => print_json(&summary)?,
        ReportFormat::Text => {
            let mut text = String::new();
            for planned in &summary.planned {
                text.push_str(&format!(
                    "would migrate {} from {} to {}\n",
                    planned.key, planned.from, planned.to
                ));
            }
            for warning in &summary.warnings {
                text.push_str(&format!("warning: {}: {}\n", warning.key, warning.reason));
            }
            for failed in &summary.failed {
                text.push_str(&format!(
                    "not migrated: {}: {}\n",
                    failed.key, failed.reason
                ));
            }
            let verb = if args.dry_run {
                "to migrate"
            } else {
                "migrated"
            };
            text.push_str(&format!(
                "{} {verb}, {} already current, {} conflicts retried, {} deleted meanwhile, {} failed\n",
                summary.migrated,
                summary.already_current,
                summary.conflicts_retried,
                summary.deleted_meanwhile,
                summary.failed.len()
            ));
            emit(&text)?;
        }
    }
    if summary.failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::Invalid(format!(
            "{} object(s) were not migrated",
            summary.failed.len()
        )))
    }
}

/// A progress bar on a terminal's standard error; hidden otherwise.
fn progress_bar(total: u64) -> indicatif::ProgressBar {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} keys ({per_sec}, {eta} left)")
    {
        bar.set_style(style);
    }
    bar
}

fn ls(args: LsArgs) -> Result<(), Failure> {
    let options = options(args.connection);
    let runtime = runtime()?;
    let entries = runtime
        .block_on(async {
            let mut store = Store::connect(&options).await?;
            store.list().await
        })
        .map_err(|err| Failure::Invalid(err.to_string()))?;
    let listed: Vec<Listed> = entries
        .into_iter()
        .map(|entry| {
            let (api_version, kind, encoding, error) = match entry.stored {
                Ok(stored) => {
                    let encoding = match &stored.encoding {
                        apfkit_storage::envelope::Encoding::Encrypted { provider } => {
                            format!("encrypted ({provider})")
                        }
                        other => other.name().to_owned(),
                    };
                    (stored.api_version, stored.kind, encoding, None)
                }
                Err(err) => (None, None, "unreadable".to_owned(), Some(err.to_string())),
            };
            Listed {
                key: entry.key,
                resource: entry.resource.plural,
                api_version,
                kind,
                encoding,
                size: entry.size,
                mod_revision: entry.mod_revision,
                error,
            }
        })
        .collect();
    match args.output {
        ReportFormat::Json => print_json(&listed),
        ReportFormat::Text => {
            let mut text = String::from("KEY\tAPIVERSION\tENCODING\tSIZE\tREVISION\n");
            for item in &listed {
                let version = item.api_version.as_deref().unwrap_or("-");
                text.push_str(&format!(
                    "{}\t{version}\t{}\t{}\t{}",
                    item.key, item.encoding, item.size, item.mod_revision
                ));
                if let Some(error) = &item.error {
                    text.push_str(&format!("\t{error}"));
                }
                text.push('\n');
            }
            emit(&text)
        }
    }
}
