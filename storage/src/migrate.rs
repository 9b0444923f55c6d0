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
use futures_util::stream::{self, TryStreamExt};

use crate::etcd::{RESOURCES, RawValue, StorageError, Store, StoredResource, Swap, Swapped};
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
    /// Transactions in flight at the same time.
    pub parallel: usize,
    /// Keys written per transaction (etcd refuses more than its `--max-txn-ops`, default 128).
    pub batch: usize,
    /// Conflicts on one key before giving up on it.
    pub max_conflicts: u32,
}

impl MigrateOptions {
    /// Options for `target` with the defaults: strict, 8 transactions of up to 64 keys in
    /// flight, 100 conflicts per key.
    pub fn new(target: Target) -> MigrateOptions {
        MigrateOptions {
            target,
            all: false,
            dry_run: false,
            unknown: UnknownFields::Strict,
            parallel: 8,
            batch: 64,
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
        // Pages are read as the groups before them are written: the next page's read overlaps
        // the writes in flight.
        let handle = store.handle();
        let pages = stream::try_unfold(Some(None), move |from| {
            next_page(handle.handle(), resource, from)
        });
        let groups = pages
            .map_ok(|page| stream::iter(groups(page, options.batch).into_iter().map(Ok)))
            .try_flatten()
            .map_ok(|group| migrate_group(store.handle(), group, options, progress))
            .try_buffer_unordered(options.parallel.max(1));
        let mut groups = std::pin::pin!(groups);
        while let Some(outcomes) = groups.try_next().await? {
            for (key, outcome) in outcomes {
                summary.record(key, outcome);
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
            Warning::UnknownField { .. } | Warning::DuplicateField { .. } => {
                warnings.push(format!("dropped {warning}"));
            }
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

/// The page of `resource` starting at `from` (`Some(None)`: the first page; `None`: there are
/// no more), and where the next page starts.
async fn next_page(
    mut store: Store,
    resource: &'static StoredResource,
    from: Option<Option<Vec<u8>>>,
) -> Result<Option<(Vec<RawValue>, Option<Option<Vec<u8>>>)>, StorageError> {
    let Some(from) = from else {
        return Ok(None);
    };
    let (page, next) = store.page(resource, from).await?;
    Ok(Some((page, next.map(Some))))
}

/// Stored bytes per transaction at most (unless one value is larger), well below etcd's
/// default request limit of 1.5 MiB (`--max-request-bytes`).
const GROUP_BYTES: usize = 512 << 10;

/// A page cut into the groups written one transaction each: at most `batch` keys and
/// [`GROUP_BYTES`] of keys and values.
fn groups(page: Vec<RawValue>, batch: usize) -> Vec<Vec<RawValue>> {
    let mut groups = Vec::new();
    let (mut current, mut bytes) = (Vec::new(), 0);
    for raw in page {
        let size = raw.key.len() + raw.value.len();
        if !current.is_empty() && (current.len() >= batch.max(1) || bytes + size > GROUP_BYTES) {
            groups.push(std::mem::take(&mut current));
            bytes = 0;
        }
        bytes += size;
        current.push(raw);
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

/// A key on its way to etcd.
struct Pending {
    raw: RawValue,
    conflicts: u32,
    bytes: Vec<u8>,
    warnings: Vec<String>,
}

/// Migrates one group of keys: plans each, then writes the rewrites in one transaction. When
/// some key changed meanwhile, nothing is written; the transaction's reads give every key's
/// current value, the changed keys are planned again, and the group is written again.
async fn migrate_group(
    mut store: Store,
    group: Vec<RawValue>,
    options: &MigrateOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<(String, Outcome)>, StorageError> {
    let mut outcomes = Vec::with_capacity(group.len());
    let mut done = |key: &[u8], outcome: Outcome| {
        progress();
        outcomes.push((String::from_utf8_lossy(key).into_owned(), outcome));
    };
    let mut pending = Vec::new();
    for raw in group {
        match start(raw, 0, options) {
            Ok(next) => pending.push(next),
            Err((key, outcome)) => done(&key, outcome),
        }
    }
    while !pending.is_empty() {
        let swaps: Vec<Swap> = pending
            .iter()
            .map(|p| Swap {
                key: p.raw.key.clone(),
                value: p.bytes.clone(),
                mod_revision: p.raw.mod_revision,
            })
            .collect();
        let current = match store.swap_batch(&swaps).await? {
            Swapped::All => {
                for p in pending.drain(..) {
                    let outcome = Outcome::Migrated {
                        conflicts: p.conflicts,
                        warnings: p.warnings,
                    };
                    done(&p.raw.key, outcome);
                }
                break;
            }
            Swapped::None { current } => current,
        };
        // The keys that did not change are written again together; each changed key on its
        // own, so that a key another writer keeps changing cannot hold up the group.
        let mut unchanged = Vec::with_capacity(pending.len());
        for (p, current) in pending.drain(..).zip(current) {
            match current {
                Some(raw) if raw.mod_revision == p.raw.mod_revision => unchanged.push(p),
                current => {
                    let key = p.raw.key.clone();
                    let outcome = migrate_key(&mut store, p, current, options).await?;
                    done(&key, outcome);
                }
            }
        }
        pending = unchanged;
    }
    Ok(outcomes)
}

/// Migrates one key that changed after `pending` was planned (`current`: its value now), with
/// a transaction per attempt, reading the key again after each conflict.
async fn migrate_key(
    store: &mut Store,
    mut pending: Pending,
    mut current: Option<RawValue>,
    options: &MigrateOptions,
) -> Result<Outcome, StorageError> {
    loop {
        let conflicts = pending.conflicts + 1;
        let Some(raw) = current else {
            return Ok(Outcome::Deleted { conflicts });
        };
        if conflicts >= options.max_conflicts {
            let reason = format!("still changing after {conflicts} conflicts; run again");
            return Ok(Outcome::Failed { conflicts, reason });
        }
        pending = match start(raw, conflicts, options) {
            Ok(next) => next,
            Err((_, outcome)) => return Ok(outcome),
        };
        let Pending { raw, bytes, .. } = &pending;
        if store
            .swap(&raw.key, bytes.clone(), raw.mod_revision)
            .await?
        {
            return Ok(Outcome::Migrated {
                conflicts: pending.conflicts,
                warnings: pending.warnings,
            });
        }
        current = store.get(&raw.key).await?;
    }
}

/// Plans one key read after `conflicts` conflicts: the write to make, or the key's outcome
/// when there is nothing to write.
fn start(
    raw: RawValue,
    conflicts: u32,
    options: &MigrateOptions,
) -> Result<Pending, (Vec<u8>, Outcome)> {
    match plan(&raw, options) {
        Ok(Plan::Current) => Err((raw.key, Outcome::Current)),
        Err(reason) => Err((raw.key, Outcome::Failed { conflicts, reason })),
        Ok(Plan::Rewrite { from, to, .. }) if options.dry_run => {
            Err((raw.key, Outcome::Planned { from, to }))
        }
        Ok(Plan::Rewrite {
            bytes, warnings, ..
        }) => Ok(Pending {
            raw,
            conflicts,
            bytes,
            warnings,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(key: &str, size: usize) -> RawValue {
        RawValue {
            key: key.as_bytes().to_vec(),
            value: vec![b'x'; size],
            mod_revision: 1,
        }
    }

    #[test]
    fn groups_are_cut_by_count_and_by_bytes_in_key_order() {
        let sizes =
            |groups: &[Vec<RawValue>]| -> Vec<usize> { groups.iter().map(Vec::len).collect() };
        let page: Vec<RawValue> = (0..200).map(|i| raw(&format!("k{i:03}"), 100)).collect();
        let cut = groups(page, 64);
        assert_eq!(sizes(&cut), [64, 64, 64, 8]);
        assert_eq!(cut[1][0].key, b"k064");
        // Large values: as many as fit in GROUP_BYTES; a value over it alone.
        let page = vec![
            raw("a", 300 << 10),
            raw("b", 300 << 10),
            raw("c", 600 << 10),
            raw("d", 10),
        ];
        assert_eq!(sizes(&groups(page, 64)), [1, 1, 1, 1]);
        let page = vec![
            raw("a", 200 << 10),
            raw("b", 200 << 10),
            raw("c", 200 << 10),
        ];
        assert_eq!(sizes(&groups(page, 64)), [2, 1]);
        assert!(groups(Vec::new(), 64).is_empty());
        assert_eq!(sizes(&groups(vec![raw("a", 1), raw("b", 1)], 0)), [1, 1]);
    }
}
