//! `storage`: kube-apiserver's etcd as the store.

use std::path::PathBuf;
use std::time::Duration;

use apfkit_storage::etcd::{EtcdOptions, Store};
use clap::{Args, Subcommand};
use serde::Serialize;

use super::{ReportFormat, emit, print_json};
use crate::failure::Failure;

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

fn ls(args: LsArgs) -> Result<(), Failure> {
    let options = options(args.connection);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Failure::Invalid(format!("starting the runtime: {err}")))?;
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
