//! The configuration explain, limits, lint and simulate work on: the objects of the `-f`
//! paths, a live cluster's (`--kubeconfig`, `--context`), or the embedded Kubernetes default.

use apfkit_dispatcher::config::{Configuration, DEFAULT_SERVER_CONCURRENCY_LIMIT};
use apfkit_scheme::scheme::HubObject;

use crate::cluster::ClusterArgs;
use crate::failure::{Failure, printable};
use crate::input;

/// Reasons as one line: `path: message; path: message`.
pub fn join(reasons: &[impl ToString]) -> String {
    reasons
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

use crate::input::Objects;

/// Reads the APF objects of the cluster when one is asked for, else of `paths` (standard
/// input when empty); with the release they are for.
pub fn read(
    paths: &[String],
    cluster: &ClusterArgs,
) -> Result<(Objects, apfkit_dispatcher::release::Release), Failure> {
    if cluster.asked() {
        if !paths.is_empty() {
            return Err(Failure::Usage(
                "the argument '--kubeconfig' (or '--context') cannot be used with '--filename': \
                 the configuration is read from a cluster or from files"
                    .to_owned(),
            ));
        }
        return crate::cluster::read(cluster);
    }
    let (mut levels, mut schemas) = (Vec::new(), Vec::new());
    let mut names = input::Names::default();
    input::for_each_hub_object(paths, |location, object| {
        if let Some(duplicate) = names.record(location, &object) {
            let label = input::label(&object);
            return Err(Failure::at(location, format!("{label}: {duplicate}")));
        }
        match object {
            HubObject::PriorityLevelConfiguration(level) => levels.push((level, location.clone())),
            HubObject::FlowSchema(schema) => schemas.push((schema, location.clone())),
            HubObject::APIService(_) => {
                return Err(Failure::at(
                    location,
                    "an APIService is not part of an APF configuration",
                ));
            }
        }
        Ok(())
    })?;
    Ok(((levels, schemas), cluster.release()))
}

/// Reads the PriorityLevelConfigurations and FlowSchemas of the cluster or of `paths` (other
/// kinds are an error), or takes the embedded default when there are neither, for a server
/// whose concurrency limit is `server_concurrency_limit`. Objects the configuration leaves out
/// are reported on standard error.
pub fn load(
    paths: &[String],
    cluster: &ClusterArgs,
    server_concurrency_limit: Option<i32>,
) -> Result<Configuration, Failure> {
    load_with_release(paths, cluster, server_concurrency_limit).map(|(config, _)| config)
}

/// [`load`], with the release modelled: `--kubernetes-version`, else the cluster's own, else
/// the newest.
pub fn load_with_release(
    paths: &[String],
    cluster: &ClusterArgs,
    server_concurrency_limit: Option<i32>,
) -> Result<(Configuration, apfkit_dispatcher::release::Release), Failure> {
    let limit = server_concurrency_limit.unwrap_or(DEFAULT_SERVER_CONCURRENCY_LIMIT);
    if limit <= 0 {
        return Err(Failure::Usage(format!(
            "--server-concurrency must be positive, not {limit}"
        )));
    }
    if paths.is_empty() && !cluster.asked() {
        let release = cluster.release();
        return release
            .kubernetes_default(limit)
            .map(|config| (config, release))
            .map_err(|e| Failure::Invalid(e.to_string()));
    }
    let ((levels, schemas), release) = read(paths, cluster)?;
    let levels = levels.into_iter().map(|(level, _)| level);
    let schemas = schemas.into_iter().map(|(schema, _)| schema);
    let config =
        Configuration::new(levels, schemas, limit).map_err(|e| Failure::Invalid(e.to_string()))?;
    for skipped in config.skipped() {
        eprintln!(
            "warning: {} {} left out: {}",
            skipped.kind,
            printable(&skipped.name),
            printable(&join(&skipped.reasons))
        );
    }
    Ok((config, release))
}
