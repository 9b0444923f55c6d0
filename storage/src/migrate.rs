//! Storage-version migration: rewrite every stored object in the target version, as
//! kube-storage-version-migrator does through the API, but directly in etcd.
//!
//! Each key is read, decoded (defaulted, as kube-apiserver defaults on read), converted
//! through the hub, encoded in the format it was stored in, and written with a transaction
//! that compares the key's mod revision (compare-and-swap). On a conflict the key is read
//! again and the work redone, so a concurrent writer's update is never overwritten. A value
//! that cannot be decoded, is encrypted at rest, converts lossily or carries fields its
//! schema lacks (under `UnknownFields::Strict`) is reported with its key and left untouched.
//! Every write is atomic per key, so a run that stops half-way is finished by running it again.

use apfkit_conversion::scheme::{self, Target, UnknownFields, Warning};
use futures_util::stream::{self, StreamExt};

use crate::etcd::{RESOURCES, RawValue, StorageError, Store};
use crate::object;

/// What to migrate and how.
#[derive(Debug, Clone)]
pub struct MigrateOptions {
    /// The version to store: `v1`, or `group/version` for one group only.
    pub target: Target,
    /// Rewrite objects already in the target version too.
    pub all: bool,
    /// Only report what would change.
    pub dry_run: bool,
    /// What to do with fields the stored version's schema does not have. `Strict` (the
    /// default) refuses to rewrite such an object, since rewriting would drop them.
    pub unknown: UnknownFields,
    /// Keys migrated at the same time.
    pub parallel: usize,
    /// Conflicts on one key before giving up on it.
    pub max_conflicts: u32,
}

impl MigrateOptions {
    /// Options for `target` with the defaults: strict, 32 keys in parallel, 100 conflicts.
    pub fn new(target: Target) -> MigrateOptions {
        MigrateOptions {
            target,
            all: false,
            dry_run: false,
            unknown: UnknownFields::Strict,
            parallel: 32,
            max_conflicts: 100,
        }
    }
}

/// One key that was not migrated, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Failed {
    /// The key.
    pub key: String,
    /// Why it was left untouched.
    pub reason: String,
}

/// One key that a dry run would rewrite.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Planned {
    /// The key.
    pub key: String,
    /// The stored apiVersion.
    pub from: String,
    /// The apiVersion it would be stored in.
    pub to: String,
}

/// What a migration did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Keys rewritten (or, in a dry run, to be rewritten).
    pub migrated: u64,
    /// Keys already in the target version.
    pub already_current: u64,
    /// Conflicts met and retried (another writer changed the key meanwhile).
    pub conflicts_retried: u64,
    /// Keys deleted by another writer while being migrated.
    pub deleted_meanwhile: u64,
    /// Keys left untouched, with the reason.
    pub failed: Vec<Failed>,
    /// In a dry run: what would change.
    pub planned: Vec<Planned>,
    /// Objects rewritten without fields their schema lacks (`UnknownFields::Warn`).
    pub warnings: Vec<Failed>,
}

/// How many keys a migration will look at.
///
/// # Errors
///
/// When etcd does not answer.
pub async fn total(store: &mut Store) -> Result<u64, StorageError> {
    let mut total = 0;
    for resource in RESOURCES {
        total += store.count(resource).await?;
    }
    Ok(total)
}

/// Migrates every stored object of the known resources; `progress` is called after each key.
///
/// # Errors
///
/// Only when etcd fails (unreachable, deadline): the keys done so far stay done.
pub async fn migrate(
    store: &mut Store,
    options: &MigrateOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<Summary, StorageError> {
    scheme::check_target(&options.target).map_err(|err| StorageError::Request {
        what: "the target version".to_owned(),
        message: err.to_string(),
    })?;
    let mut summary = Summary::default();
    for resource in RESOURCES {
        let mut from = None;
        loop {
            let (page, next) = store.page(resource, from.take()).await?;
            let outcomes: Vec<Result<(String, Outcome), StorageError>> = stream::iter(page)
                .map(|raw| {
                    let handle = store.handle();
                    async move {
                        let key = String::from_utf8_lossy(&raw.key).into_owned();
                        let outcome = migrate_key(handle, raw, options).await;
                        progress();
                        outcome.map(|o| (key, o))
                    }
                })
                .buffer_unordered(options.parallel.max(1))
                .collect()
                .await;
            for outcome in outcomes {
                let (key, outcome) = outcome?;
                summary.record(key, outcome);
            }
            match next {
                Some(next) => from = Some(next),
                None => break,
            }
        }
    }
    summary.failed.sort_by(|a, b| a.key.cmp(&b.key));
    summary.planned.sort_by(|a, b| a.key.cmp(&b.key));
    summary.warnings.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(summary)
}

/// What happened to one key.
enum Outcome {
    Migrated {
        conflicts: u32,
        warnings: Vec<String>,
    },
    Current,
    Planned {
        from: String,
        to: String,
    },
    Deleted {
        conflicts: u32,
    },
    Failed {
        conflicts: u32,
        reason: String,
    },
}

impl Summary {
    fn record(&mut self, key: String, outcome: Outcome) {
        match outcome {
            Outcome::Migrated {
                conflicts,
                warnings,
            } => {
                self.migrated += 1;
                self.conflicts_retried += u64::from(conflicts);
                self.warnings
                    .extend(warnings.into_iter().map(|reason| Failed {
                        key: key.clone(),
                        reason,
                    }));
            }
            Outcome::Current => self.already_current += 1,
            Outcome::Planned { from, to } => {
                self.migrated += 1;
                self.planned.push(Planned { key, from, to });
            }
            Outcome::Deleted { conflicts } => {
                self.deleted_meanwhile += 1;
                self.conflicts_retried += u64::from(conflicts);
            }
            Outcome::Failed { conflicts, reason } => {
                self.conflicts_retried += u64::from(conflicts);
                self.failed.push(Failed { key, reason });
            }
        }
    }
}

/// The rewrite of one stored value, worked out without touching etcd.
enum Plan {
    /// Already in the target version.
    Current,
    /// Store `bytes` instead.
    Rewrite {
        from: String,
        to: String,
        bytes: Vec<u8>,
        warnings: Vec<String>,
    },
}

/// Decodes, converts and encodes one stored value.
fn plan(raw: &RawValue, options: &MigrateOptions) -> Result<Plan, String> {
    let stored = object::decode(&raw.value, raw.mod_revision).map_err(|e| e.to_string())?;
    let mut warnings = Vec::new();
    if !stored.unknown.is_empty() {
        let fields: Vec<&str> = stored.unknown.iter().map(|u| u.path.as_str()).collect();
        let message = format!(
            "protobuf fields the schema of {} does not have: {}",
            stored.api_version(),
            fields.join(", ")
        );
        match options.unknown {
            UnknownFields::Strict => return Err(message),
            UnknownFields::Warn => warnings.push(format!("dropped {message}")),
            UnknownFields::Ignore => {}
        }
    }
    let converted = scheme::convert(&stored.object, &options.target, options.unknown)
        .map_err(|e| e.to_string())?;
    for warning in converted.warnings {
        match warning {
            Warning::Lossy { .. } => {
                return Err(format!("the conversion would lose a value: {warning}"));
            }
            Warning::UnknownField { .. } => warnings.push(format!("dropped {warning}")),
        }
    }
    let from = stored.api_version().to_owned();
    let to = converted.object["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if from == to && !options.all {
        return Ok(Plan::Current);
    }
    let bytes = object::encode(&converted.object, stored.format).map_err(|e| e.to_string())?;
    Ok(Plan::Rewrite {
        from,
        to,
        bytes,
        warnings,
    })
}

async fn migrate_key(
    mut store: Store,
    mut raw: RawValue,
    options: &MigrateOptions,
) -> Result<Outcome, StorageError> {
    let mut conflicts = 0;
    loop {
        let (from, to, bytes, warnings) = match plan(&raw, options) {
            Ok(Plan::Current) => return Ok(Outcome::Current),
            Ok(Plan::Rewrite {
                from,
                to,
                bytes,
                warnings,
            }) => (from, to, bytes, warnings),
            Err(reason) => return Ok(Outcome::Failed { conflicts, reason }),
        };
        if options.dry_run {
            return Ok(Outcome::Planned { from, to });
        }
        if store.swap(&raw.key, bytes, raw.mod_revision).await? {
            return Ok(Outcome::Migrated {
                conflicts,
                warnings,
            });
        }
        conflicts += 1;
        if conflicts >= options.max_conflicts {
            return Ok(Outcome::Failed {
                conflicts,
                reason: format!("still changing after {conflicts} conflicts; run again"),
            });
        }
        match store.get(&raw.key).await? {
            Some(current) => raw = current,
            None => return Ok(Outcome::Deleted { conflicts }),
        }
    }
}
