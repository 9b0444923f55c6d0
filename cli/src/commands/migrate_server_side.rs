//! `storage migrate-api --server-side`: a StorageVersionMigration made for each resource and
//! followed to its end (apfkit-migrator's `server_side`).

use std::path::Path;
use std::time::Duration;

use apfkit_migrator::server_side::{self, Ended, Step};

use super::{ReportFormat, emit, print_json};
use crate::failure::Failure;

/// Makes and follows a migration of each of `resources` in turn, reporting how each ended.
pub(crate) async fn run(
    resources: &[String],
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    within: Duration,
    output: ReportFormat,
) -> Result<(), Failure> {
    let client = crate::cluster::client(kubeconfig, context).await?;
    let mut ends: Vec<Ended> = Vec::new();
    for name in resources {
        let (resource, _) = apfkit_migrator::resource(&client, name)
            .await
            .map_err(|err| Failure::Invalid(format!("--resource {name}: {err}")))?;
        let bar = spinner(name);
        let followed = server_side::migrate(&client, &resource, within, &|step| {
            bar.set_message(words(step));
        })
        .await;
        bar.finish_and_clear();
        let ended = followed.map_err(|err| {
            // What ended before this one is reported all the same.
            let _ = report(&ends, output);
            Failure::Invalid(format!("{name}: {err}"))
        })?;
        ends.push(ended);
    }
    report(&ends, output)?;
    match ends.iter().find(|ended| ended.step == Step::Failed) {
        Some(failed) => Err(Failure::Invalid(format!(
            "{}: the StorageVersionMigration {} failed",
            failed.resource, failed.migration
        ))),
        None => Ok(()),
    }
}

fn report(ends: &[Ended], output: ReportFormat) -> Result<(), Failure> {
    match output {
        ReportFormat::Json => print_json(&ends),
        ReportFormat::Text => {
            let text: String = ends
                .iter()
                .map(|ended| {
                    let outcome = match ended.step {
                        Step::Succeeded => "succeeded",
                        _ => "failed",
                    };
                    format!(
                        "{}: StorageVersionMigration {} {outcome}: {}\n",
                        ended.resource, ended.migration, ended.message
                    )
                })
                .collect();
            emit(&text)
        }
    }
}

/// A step in words, for the spinner.
fn words(step: Step) -> &'static str {
    match step {
        Step::Waiting => "waiting for the migration before it to end",
        Step::Running => "running: recording the resource's newest version",
        Step::Migrating => "running: writing every object back",
        Step::Succeeded => "succeeded",
        Step::Failed => "failed",
    }
}

fn spinner(resource: &str) -> indicatif::ProgressBar {
    let bar = super::styled_bar(
        indicatif::ProgressBar::new_spinner,
        &format!("{{spinner}} {resource}: {{msg}} ({{elapsed}})"),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}
