//! `storage`: kube-apiserver's etcd as the store.

use std::path::PathBuf;
use std::time::Duration;

use apfkit_scheme::scheme::{Limits, SCHEME, Target, UnknownFields};
use apfkit_storage::etcd::{EtcdOptions, RESOURCES, StorageError, Store, StoredResource};
use apfkit_storage::key::Key;
use apfkit_storage::migrate::{self, MigrateOptions};
use apfkit_storage::object;
use clap::{Args, Subcommand};
use serde::Serialize;

use super::{ReportFormat, emit, print_json};
use crate::failure::Failure;
use crate::input::parse_size;
use crate::output::{self, Destination, ObjectFormat, Sink};

/// Read the objects kube-apiserver keeps in etcd.
///
/// FlowSchemas and PriorityLevelConfigurations are stored under <prefix>/flowschemas/ and
/// <prefix>/prioritylevelconfigurations/ in Kubernetes' protobuf envelope; APIServices under
/// <prefix>/apiregistration.k8s.io/apiservices/ as JSON. Values encrypted at rest (k8s:enc:)
/// are reported, never decoded or changed.
///
/// Keys are printed with \\, control characters (\n, \t, \u{1b}) and bytes that are not
/// UTF-8 (\xff) escaped, and `storage get` reads a key back in that form.
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
    MigrateApi(super::migrate_api::MigrateApiArgs),
}

/// Print one stored object, decoded, in its stored version or another.
///
/// The value is decoded as kube-apiserver decodes it (protobuf envelope or JSON);
/// metadata.resourceVersion is the key's mod revision, as the API shows it. With --to the
/// object is defaulted and converted. JSON output follows kube-apiserver's field order.
///
/// KEY is the key as `storage ls` prints it: \\, \n, \r, \t, \u{HEX} and \xHH stand for
/// the bytes they name. --key-base64 takes the exact bytes instead (keyBase64 in
/// `storage ls -o json`).
///
/// Examples:
///   apfkit storage get /registry/flowschemas/catch-all
///   apfkit storage get --kind PriorityLevelConfiguration --name workload-low --to v1 -o json
///   apfkit storage get --key-base64 L3JlZ2lzdHJ5L2Zsb3dzY2hlbWFzL2V4ZW1wdA==
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct GetArgs {
    /// The etcd key, such as /registry/flowschemas/exempt (escaped as `storage ls` prints it).
    #[arg(value_name = "KEY", required_unless_present_any = ["name", "key_base64"], conflicts_with_all = ["kind", "name", "key_base64"])]
    etcd_key: Option<String>,
    /// The etcd key's bytes in base64.
    #[arg(long, value_name = "BASE64", conflicts_with_all = ["kind", "name"])]
    key_base64: Option<String>,
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
    #[command(flatten)]
    values: ValueLimits,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "yaml")]
    output: ObjectFormat,
}

/// Limits on the values read from etcd.
#[derive(Debug, Args)]
struct ValueLimits {
    /// Largest stored value decoded, in bytes (suffixes K, M, G: powers of 1024). Values are
    /// also limited to 64 levels of nesting and 1,000,000 nodes, counted while they are
    /// decoded; a value over a limit is reported with its key and left untouched.
    #[arg(long, value_name = "SIZE", default_value = "8M", value_parser = parse_size)]
    max_document_size: usize,
}

impl ValueLimits {
    fn limits(&self) -> Limits {
        Limits {
            max_document_bytes: self.max_document_size,
            ..Limits::default()
        }
    }
}

/// Rewrite stored objects in another version (storage-version migration).
///
/// Every stored FlowSchema, PriorityLevelConfiguration and APIService whose stored version
/// differs from the target (or every one, with --all) is decoded, defaulted, converted and
/// written back in the encoding it had, in transactions that check each key's mod revision.
/// If another writer changed a key meanwhile, that key is read again and the work redone.
/// Values that do not decode, are encrypted at rest, are over the value limits, are stored
/// under another kind's resource, would convert lossily, would be larger than etcd takes
/// (--max-request-bytes) or carry fields their schema lacks (unless --unknown-fields warn or
/// ignore) are reported with their key and left untouched; the others are migrated. Safe to
/// run again: a stopped run is finished by the next.
///
/// Exit code 1 if any object was not migrated or etcd failed. A run that finds no object at
/// all warns: check --prefix against kube-apiserver's --etcd-prefix.
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
    /// etcd's --max-request-bytes (suffixes K, M, G): an object whose converted write would
    /// be larger is reported and left untouched.
    #[arg(long, value_name = "SIZE", default_value = "1536K", value_parser = parse_size)]
    max_request_bytes: usize,
    #[command(flatten)]
    connection: Connection,
    #[command(flatten)]
    values: ValueLimits,
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
    /// etcd client URLs, comma-separated: members of one cluster, tried in turn when one
    /// cannot answer.
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
    /// kube-apiserver's --etcd-prefix, normalised as it does (registry, //registry and
    /// /registry/ are all /registry/).
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
    #[serde(flatten)]
    key: Key,
    resource: String,
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
        StorageCommand::MigrateApi(args) => super::migrate_api::run(args),
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
    let named = match (&args.kind, &args.name) {
        (Some(kind), Some(name)) => Some((resource_of_kind(kind)?, name.clone())),
        _ => None,
    };
    let given = match (&args.etcd_key, &args.key_base64) {
        (Some(text), _) => {
            Some(Key::parse_escaped(text).map_err(|e| Failure::Usage(format!("KEY {e}")))?)
        }
        (None, Some(base64)) => Some(
            Key::from_base64(base64).map_err(|e| Failure::Usage(format!("--key-base64: {e}")))?,
        ),
        (None, None) => None,
    };
    // The key given, or the resource and name to make it from.
    let wanted = match (given, named) {
        (Some(key), _) => Ok(key),
        (None, Some(named)) => Err(named),
        (None, None) => {
            return Err(Failure::Usage(
                "give a KEY, --key-base64, or --kind and --name".to_owned(),
            ));
        }
    };
    let limits = args.values.limits();
    let options = options(args.connection);
    let (resource, key, raw) = runtime()?
        .block_on(async {
            let store = Store::connect(&options).await?;
            let key = match wanted {
                Ok(key) => key,
                Err((resource, name)) => store.object_key(resource, &name),
            };
            let raw = store.get(&key.0).await?;
            Ok((store.resource_of(&key.0), key, raw))
        })
        .map_err(|err: StorageError| Failure::Invalid(err.to_string()))?;
    let raw = raw.ok_or_else(|| Failure::Invalid(format!("{key}: no such key")))?;
    let stored = object::decode(&raw.value, raw.mod_revision, &limits)
        .map_err(|err| Failure::Invalid(format!("{key}: {err}")))?;
    if let Some(resource) = resource
        && let Some(reason) = resource.misplaced(stored.api_version(), stored.kind())
    {
        eprintln!("warning: {key}: {reason}");
    }
    let mut value = stored.object;
    if let Some(target) = &target {
        let converted = SCHEME
            .convert_value(&value, target, UnknownFields::Warn)
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
        .find(|r| r.resource.group == info.group && info.plural == Some(&r.resource.resource))
        .ok_or_else(|| Failure::Usage(format!("{kind} is not stored in etcd by apfkit")))
}

fn migrate(args: MigrateArgs) -> Result<(), Failure> {
    let target: Target = args
        .to
        .parse()
        .map_err(|e: apfkit_scheme::scheme::SchemeError| Failure::Usage(e.to_string()))?;
    SCHEME
        .check_target(&target)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let connection = options(args.connection);
    let mut options = MigrateOptions::new(target);
    options.limits = args.values.limits();
    options.max_request_bytes = args.max_request_bytes;
    options.all = args.all;
    options.dry_run = args.dry_run;
    options.parallel = usize::from(args.parallel);
    options.batch = usize::from(args.batch);
    options.unknown = match args.unknown_fields {
        UnknownFieldsArg::Strict => UnknownFields::Strict,
        UnknownFieldsArg::Warn => UnknownFields::Warn,
        UnknownFieldsArg::Ignore => UnknownFields::Ignore,
    };
    let (prefix, summary) = runtime()?
        .block_on(async {
            let store = Store::connect(&connection).await?;
            let bar = super::progress_bar(
                migrate::total(&store).await?,
                "{bar:40} {pos}/{len} keys ({per_sec}, {eta} left)",
            );
            let summary = migrate::migrate(&store, &options, &|| bar.inc(1)).await;
            bar.finish_and_clear();
            Ok::<_, StorageError>((store.prefix().to_owned(), summary?))
        })
        .map_err(|err| {
            Failure::Invalid(format!(
                "{err}; objects written so far are kept, run again to finish"
            ))
        })?;
    if summary.examined == 0 {
        eprintln!(
            "warning: no FlowSchema, PriorityLevelConfiguration or APIService is stored under \
             {}; is that kube-apiserver's --etcd-prefix?",
            Key::from(prefix.as_str())
        );
    }
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

fn ls(args: LsArgs) -> Result<(), Failure> {
    let options = options(args.connection);
    let runtime = runtime()?;
    let entries = runtime
        .block_on(async { Store::connect(&options).await?.list().await })
        .map_err(|err| Failure::Invalid(err.to_string()))?;
    let listed: Vec<Listed> = entries
        .into_iter()
        .map(|entry| {
            let misplaced = entry.misplaced();
            let (api_version, kind, encoding, error) = match entry.stored {
                Ok(stored) => {
                    let encoding = match &stored.stored_as {
                        apfkit_storage::envelope::StoredAs::Encrypted { provider } => {
                            format!("encrypted ({provider})")
                        }
                        other => other.name().to_owned(),
                    };
                    (stored.api_version, stored.kind, encoding, misplaced)
                }
                Err(err) => (None, None, "unreadable".to_owned(), Some(err.to_string())),
            };
            Listed {
                key: entry.key,
                resource: entry.resource.resource.resource.into_owned(),
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
                    text.push_str(&format!("\t{}", error.replace(['\t', '\n'], " ")));
                }
                text.push('\n');
            }
            emit(&text)
        }
    }
}
