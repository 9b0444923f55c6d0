//! `storage migrate-api`: storage-version migration through the API server, with kube-rs
//! (apfkit-migrator).

use std::path::PathBuf;

use apfkit_migrator::{Interrupted, Options, Summary};
use clap::Args;

use super::{ReportFormat, emit, print_json};
use crate::failure::Failure;

/// Rewrite stored objects in the storage version through the API server.
///
/// Every object of each --resource is listed and written back unchanged with its
/// resourceVersion, as kube-storage-version-migrator does: the API server then stores each
/// object still stored in an older version in its storage version. For clusters whose etcd
/// is out of reach; `storage migrate` rewrites etcd directly.
///
/// Conflicts are retried on the object read again; objects deleted meanwhile are skipped;
/// objects the server refuses are reported. A run that stops (the server gone) writes where
/// it was to --state, and a run given the same --state goes on from there. The kubeconfig is
/// read as kubectl reads it: --kubeconfig, else $KUBECONFIG, else ~/.kube/config.
///
/// For a custom resource whose every object was written back, the older versions are then
/// removed from its CRD's status.storedVersions (after which they may be dropped from the
/// CRD), unless the CRD's storage version changed during the run.
///
/// With --server-side, the cluster migrates instead: a StorageVersionMigration
/// (storagemigration.k8s.io/v1, Kubernetes 1.37) is made for each resource and followed
/// until kube-controller-manager (or apfkit serve) ends it, for --timeout at most.
///
/// Exit code 1 if any object was not migrated, the storage version changed, the run
/// stopped, or a StorageVersionMigration failed or did not end in time.
///
/// Examples:
///   apfkit storage migrate-api --resource flowschemas.flowcontrol.apiserver.k8s.io
///   apfkit storage migrate-api --resource widgets.example.com --kubeconfig admin.kubeconfig --state widgets.state
///   apfkit storage migrate-api --server-side --resource widgets.example.com --timeout 30m
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct MigrateApiArgs {
    /// The resource, as PLURAL.GROUP (repeatable; PLURAL alone for the core group).
    #[arg(long = "resource", value_name = "RESOURCE", required = true)]
    resources: Vec<String>,
    /// The kubeconfig file [default: $KUBECONFIG, else ~/.kube/config].
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use [default: its current context].
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// Objects per list page.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    page_size: u32,
    /// Where a stopped run records where it was, and a later run goes on from (a JSON file,
    /// removed once every resource is done).
    #[arg(long, value_name = "FILE", conflicts_with = "server_side")]
    state: Option<PathBuf>,
    /// Have the cluster migrate: make a StorageVersionMigration of each resource and follow
    /// it to its end.
    #[arg(long)]
    server_side: bool,
    /// With --server-side, how long each StorageVersionMigration is followed.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = super::duration_flag)]
    timeout: std::time::Duration,
    /// Report format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: ReportFormat,
}

/// Where a stopped run was: the resource and the continue token of its next page.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct State {
    resource: String,
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    continue_token: Option<String>,
}

fn read_state(path: &std::path::Path) -> Result<Option<State>, Failure> {
    if !path.exists() {
        return Ok(None);
    }
    let text = crate::input::read_bounded(path)
        .map_err(|err| Failure::Invalid(format!("--state {}: {err}", path.display())))?;
    serde_json::from_str(&text).map(Some).map_err(|err| {
        Failure::Invalid(format!(
            "--state {}: not a state this command wrote: {err}",
            path.display()
        ))
    })
}

fn write_state(path: &std::path::Path, state: &State) -> Result<(), Failure> {
    let text = serde_json::to_vec_pretty(state).expect("a state serializes");
    super::report::write_whole(path, &text)
}

/// `apfkit storage migrate-api`.
pub fn run(args: MigrateApiArgs) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Failure::Invalid(format!("starting the runtime: {err}")))?;
    if args.server_side {
        return runtime.block_on(super::migrate_server_side::run(
            &args.resources,
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
            args.timeout,
            args.output,
        ));
    }
    let saved = match &args.state {
        Some(path) => read_state(path)?,
        None => None,
    };
    let (summaries, stopped) = runtime.block_on(migrate_all(&args, saved))?;
    match args.output {
        ReportFormat::Json => print_json(&summaries)?,
        ReportFormat::Text => {
            let mut text = String::new();
            for summary in &summaries {
                for failed in &summary.failed {
                    let name = match &failed.place.namespace {
                        Some(namespace) => format!("{namespace}/{}", failed.place.name),
                        None => failed.place.name.clone(),
                    };
                    text.push_str(&format!(
                        "not migrated: {} {name}: {}\n",
                        summary.resource, failed.reason
                    ));
                }
                text.push_str(&format!(
                    "{}: {} listed, {} migrated, {} conflicts retried, {} deleted meanwhile, {} failed\n",
                    summary.resource,
                    summary.listed,
                    summary.migrated,
                    summary.conflicts_retried,
                    summary.deleted_meanwhile,
                    summary.failed.len()
                ));
                if !summary.stored_versions_removed.is_empty() {
                    text.push_str(&format!(
                        "{}: {} removed from the CRD's stored versions\n",
                        summary.resource,
                        summary.stored_versions_removed.join(", ")
                    ));
                }
            }
            emit(&text)?;
        }
    }
    if let Some(stopped) = stopped {
        return Err(stopped);
    }
    if summaries.iter().any(|s| !s.failed.is_empty()) {
        return Err(Failure::Invalid(
            "some objects were not migrated".to_owned(),
        ));
    }
    Ok(())
}

/// Migrates each resource in turn, from the saved state's resource and place on; answers the
/// summaries, and the failure that stopped the run, if one did.
async fn migrate_all(
    args: &MigrateApiArgs,
    saved: Option<State>,
) -> Result<(Vec<Summary>, Option<Failure>), Failure> {
    let client =
        crate::cluster::client(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let mut summaries = Vec::new();
    // A saved state skips the resources before its own.
    let mut skipping = saved
        .as_ref()
        .is_some_and(|s| args.resources.contains(&s.resource));
    for name in &args.resources {
        let resume_from = match &saved {
            Some(state) if skipping && state.resource != *name => continue,
            Some(state) if skipping => {
                skipping = false;
                state.continue_token.clone()
            }
            _ => None,
        };
        let (resource, namespaced) = apfkit_migrator::resource(&client, name)
            .await
            .map_err(|err| Failure::Invalid(format!("--resource {name}: {err}")))?;
        let options = Options {
            page_size: args.page_size,
            resume_from,
            ..Options::default()
        };
        // A custom resource's storage version, to trim its CRD's stored versions after.
        let storage = apfkit_migrator::storage_version(&client, name)
            .await
            .map_err(|err| Failure::Invalid(format!("--resource {name}: {err}")))?;
        let bar = progress_bar(name);
        let outcome = apfkit_migrator::migrate(&client, &resource, namespaced, &options, &|done| {
            bar.set_position(done);
        })
        .await;
        bar.finish_and_clear();
        match outcome {
            Ok(mut summary) => {
                if let Some(storage) = storage.filter(|_| summary.failed.is_empty()) {
                    match apfkit_migrator::trim_stored_versions(&client, name, &storage).await {
                        Ok(removed) => summary.stored_versions_removed = removed,
                        Err(err) => {
                            summaries.push(summary);
                            return Ok((
                                summaries,
                                Some(Failure::Invalid(format!("{name}: {err}"))),
                            ));
                        }
                    }
                }
                summaries.push(summary);
            }
            Err(interrupted) => {
                let Interrupted {
                    summary,
                    resume_from,
                    error,
                } = *interrupted;
                summaries.push(summary);
                let mut message = format!("{name}: the server stopped answering: {error}");
                if let Some(path) = &args.state {
                    write_state(
                        path,
                        &State {
                            resource: name.clone(),
                            continue_token: resume_from,
                        },
                    )?;
                    message.push_str(&format!(
                        "; run again with --state {} to go on",
                        path.display()
                    ));
                } else {
                    message.push_str("; run again to finish (--state remembers where it stopped)");
                }
                return Ok((summaries, Some(Failure::Invalid(message))));
            }
        }
    }
    if let Some(path) = &args.state
        && path.exists()
    {
        std::fs::remove_file(path)
            .map_err(|err| Failure::Invalid(format!("{}: {err}", path.display())))?;
    }
    Ok((summaries, None))
}

fn progress_bar(resource: &str) -> indicatif::ProgressBar {
    super::styled_bar(
        indicatif::ProgressBar::no_length,
        &format!("{resource}: {{pos}} objects written back ({{per_sec}})"),
    )
}
