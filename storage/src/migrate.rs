//! Storage-version migration: rewrite every stored object in the target version, as
//! kube-storage-version-migrator does through the API, but directly in etcd.
//!
//! Each key is read, decoded (defaulted, as kube-apiserver defaults on read), converted
//! through the hub, encoded in the format it was stored in, and written with a transaction
//! that compares the key's mod revision (compare-and-swap). On a conflict the key is read
//! again and the work redone, so a concurrent writer's update is never overwritten. A value
//! that cannot be decoded, is encrypted at rest, converts lossily or carries fields its
//! schema lacks (under `UnknownFields::Strict`) is reported with its key and left untouched.
//! So is one that is over the document limits, is stored under another kind's resource, or
//! would be larger than etcd takes once converted: one object never stops the others.
//! Every write is atomic per key, so a run that stops half-way is finished by running it again.

use apfkit_runtime::scheme::{Converted, Scheme};
use apfkit_scheme::scheme::{Limits, SCHEME, SchemeError, Target, UnknownFields, Warning};
use futures_util::stream::{self, TryStreamExt};
use serde_json::Value;

use crate::etcd::{
    Cursor, DEFAULT_MAX_REQUEST_BYTES, RESOURCES, RawValue, StorageError, Store, StoredResource,
    Swap, Swapped,
};
use crate::key::Key;
use crate::object::{self, ObjectError, StoredObject};
use apfkit_runtime::scheme::StorageEncoding;

/// The kinds a migration reads and writes, and how: kube-apiserver's flowcontrol and
/// apiregistration objects ([`Builtin`]), or the custom resources of a user's scheme
/// ([`Custom`]).
pub trait StoredKinds: Sync {
    /// Whether `target` names a version of these kinds.
    fn check_target(&self, target: &Target) -> Result<(), SchemeError>;
    /// Decodes a stored value.
    fn decode(
        &self,
        value: &[u8],
        mod_revision: i64,
        limits: &Limits,
    ) -> Result<StoredObject, ObjectError>;
    /// Why an object of this kind does not belong under `resource`, if it does not.
    fn misplaced(&self, resource: &StoredResource, api_version: &str, kind: &str)
    -> Option<String>;
    /// Converts a decoded object to `target`.
    fn convert(
        &self,
        object: &Value,
        target: &Target,
        unknown: UnknownFields,
    ) -> Result<Converted, SchemeError>;
    /// Encodes a converted object for storage in `format`.
    fn encode(&self, object: &Value, encoding: StorageEncoding) -> Result<Vec<u8>, ObjectError>;
}

/// kube-apiserver's flowcontrol and apiregistration objects, through `SCHEME`, under
/// [`RESOURCES`].
pub struct Builtin;

impl StoredKinds for Builtin {
    fn check_target(&self, target: &Target) -> Result<(), SchemeError> {
        SCHEME.check_target(target)
    }

    fn decode(
        &self,
        value: &[u8],
        mod_revision: i64,
        limits: &Limits,
    ) -> Result<StoredObject, ObjectError> {
        object::decode(value, mod_revision, limits)
    }

    fn misplaced(
        &self,
        resource: &StoredResource,
        api_version: &str,
        kind: &str,
    ) -> Option<String> {
        resource.misplaced(api_version, kind)
    }

    fn convert(
        &self,
        object: &Value,
        target: &Target,
        unknown: UnknownFields,
    ) -> Result<Converted, SchemeError> {
        SCHEME.convert_value(object, target, unknown)
    }

    fn encode(&self, object: &Value, encoding: StorageEncoding) -> Result<Vec<u8>, ObjectError> {
        object::encode(object, encoding)
    }
}

/// The custom resources of a user's scheme (the one `apfkit-codegen` generates from a
/// multi-version CRD): stored as JSON under `<group>/<plural>/`
/// ([`StoredResource::custom`]), converted through the scheme's hub.
pub struct Custom<'a, H: 'static>(pub &'a Scheme<H>);

impl<H: 'static> StoredKinds for Custom<'_, H>
where
    Scheme<H>: Sync,
{
    fn check_target(&self, target: &Target) -> Result<(), SchemeError> {
        self.0.check_target(target)
    }

    fn decode(
        &self,
        value: &[u8],
        mod_revision: i64,
        limits: &Limits,
    ) -> Result<StoredObject, ObjectError> {
        object::decode_custom(self.0, value, mod_revision, limits)
    }

    fn misplaced(
        &self,
        resource: &StoredResource,
        api_version: &str,
        kind: &str,
    ) -> Option<String> {
        let codec = self
            .0
            .codecs()
            .iter()
            .find(|c| c.api_version() == api_version && c.kind == kind)?;
        resource.misplaced_kind(kind, codec.group, codec.plural)
    }

    fn convert(
        &self,
        object: &Value,
        target: &Target,
        unknown: UnknownFields,
    ) -> Result<Converted, SchemeError> {
        self.0.convert_value(object, target, unknown)
    }

    fn encode(&self, object: &Value, _encoding: StorageEncoding) -> Result<Vec<u8>, ObjectError> {
        Ok(object::encode_custom(object))
    }
}

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
    /// Limits on each stored value read (bytes, nesting, nodes), as on documents read from
    /// files.
    pub limits: Limits,
    /// etcd's `--max-request-bytes`: an object whose write would be larger is reported and
    /// left, since etcd would refuse it.
    pub max_request_bytes: usize,
}

impl MigrateOptions {
    /// Options for `target` with the defaults: strict, 8 transactions of up to 64 keys in
    /// flight, 100 conflicts per key, the readers' default limits, etcd's default request limit
    /// (1.5 MiB).
    pub fn new(target: Target) -> MigrateOptions {
        MigrateOptions {
            target,
            all: false,
            dry_run: false,
            unknown: UnknownFields::Strict,
            parallel: 8,
            batch: 64,
            max_conflicts: 100,
            limits: Limits::default(),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
        }
    }
}

/// One key that was not migrated, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Failed {
    /// The key (in JSON: `key`, and `keyBase64` when it is not UTF-8).
    #[serde(flatten)]
    pub key: Key,
    /// Why it was left untouched.
    pub reason: String,
}

/// One key that a dry run would rewrite.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Planned {
    /// The key (in JSON: `key`, and `keyBase64` when it is not UTF-8).
    #[serde(flatten)]
    pub key: Key,
    /// The stored apiVersion.
    pub from: String,
    /// The apiVersion it would be stored in.
    pub to: String,
}

/// What a migration did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Keys looked at: none means nothing is stored under the prefix (a wrong `--prefix`?).
    pub examined: u64,
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
pub async fn total(store: &Store) -> Result<u64, StorageError> {
    total_of(store, RESOURCES).await
}

/// How many keys a migration of `resources` will look at.
///
/// # Errors
///
/// When etcd does not answer.
pub async fn total_of(store: &Store, resources: &[StoredResource]) -> Result<u64, StorageError> {
    let mut total = 0;
    for resource in resources {
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
    store: &Store,
    options: &MigrateOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<Summary, StorageError> {
    migrate_kinds(store, &Builtin, RESOURCES, options, progress).await
}

/// Migrates every stored object of `resources`, read and written as `kinds` says: with
/// [`Custom`], a user's binary migrates its own custom resources with the same grouped
/// compare-and-swap.
///
/// # Errors
///
/// Only when etcd fails (unreachable, deadline) or the target is not a version of the
/// kinds: the keys done so far stay done.
pub async fn migrate_kinds(
    store: &Store,
    kinds: &dyn StoredKinds,
    resources: &[StoredResource],
    options: &MigrateOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<Summary, StorageError> {
    kinds
        .check_target(&options.target)
        .map_err(|err| StorageError::Request {
            what: "the target version".to_owned(),
            message: err.to_string(),
        })?;
    let mut summary = Summary::default();
    for resource in resources {
        // Pages are read as the groups before them are written: the next page's read overlaps
        // the writes in flight.
        let handle = store.handle();
        let owned = resource.clone();
        let pages = stream::try_unfold(Some(Cursor::FIRST), move |cursor| {
            next_page(handle.handle(), owned.clone(), cursor)
        });
        let groups = pages
            .map_ok(|page| stream::iter(groups(page, options.batch).into_iter().map(Ok)))
            .try_flatten()
            .map_ok(|group| {
                migrate_group(store.handle(), kinds, resource, group, options, progress)
            })
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
    fn record(&mut self, key: Key, outcome: Outcome) {
        self.examined += 1;
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

/// Why a stored value is left untouched.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// It does not decode (or is encrypted, or over the limits).
    #[error(transparent)]
    Decode(#[from] ObjectError),
    /// It is a kind of another resource.
    #[error("{0}")]
    Misplaced(String),
    /// It has protobuf fields its schema lacks, under `UnknownFields::Strict`.
    #[error("protobuf fields the schema of {api_version} does not have: {}", fields.join(", "))]
    UnknownFields {
        /// Its apiVersion.
        api_version: String,
        /// The fields' paths.
        fields: Vec<String>,
    },
    /// It does not convert.
    #[error(transparent)]
    Convert(#[from] SchemeError),
    /// It would lose a value in the conversion.
    #[error("the conversion would lose a value: {0}")]
    Lossy(Warning),
    /// Converted, it would be a write larger than etcd takes.
    #[error(
        "converted to {to} it is {bytes} bytes, more than etcd takes in one request \
         ({limit} bytes, its --max-request-bytes); left untouched"
    )]
    TooLarge {
        /// The target apiVersion.
        to: String,
        /// The write's size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// etcd refused the write.
    #[error("etcd refused the write: {0}")]
    Refused(String),
}

/// The bytes etcd counts for a compare-and-swap of `value` at `key`: the compare, the put
/// and the read-back each name the key, with some framing.
fn request_bytes(key: &[u8], value: &[u8]) -> usize {
    value.len() + 3 * key.len() + 64
}

/// Decodes, converts and encodes one stored value of `resource`.
fn plan(
    raw: &RawValue,
    kinds: &dyn StoredKinds,
    resource: &StoredResource,
    options: &MigrateOptions,
) -> Result<Plan, Refusal> {
    let stored = kinds.decode(&raw.value, raw.mod_revision, &options.limits)?;
    if let Some(reason) = kinds.misplaced(resource, stored.api_version(), stored.kind()) {
        return Err(Refusal::Misplaced(reason));
    }
    let mut warnings = Vec::new();
    if !stored.unknown.is_empty() {
        let refusal = Refusal::UnknownFields {
            api_version: stored.api_version().to_owned(),
            fields: stored.unknown.iter().map(|u| u.path.clone()).collect(),
        };
        match options.unknown {
            UnknownFields::Strict => return Err(refusal),
            UnknownFields::Warn => warnings.push(format!("dropped {refusal}")),
            UnknownFields::Ignore => {}
        }
    }
    let converted = kinds.convert(&stored.object, &options.target, options.unknown)?;
    for warning in converted.warnings {
        match warning {
            Warning::Lossy { .. } => return Err(Refusal::Lossy(warning)),
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
    let bytes = kinds.encode(&converted.object, stored.encoding)?;
    let size = request_bytes(&raw.key, &bytes);
    if size > options.max_request_bytes {
        return Err(Refusal::TooLarge {
            to,
            bytes: size,
            limit: options.max_request_bytes,
        });
    }
    Ok(Plan::Rewrite {
        from,
        to,
        bytes,
        warnings,
    })
}

/// The page of `resource` at `cursor` (`None`: there are no more), and the next cursor.
async fn next_page(
    store: Store,
    resource: StoredResource,
    cursor: Option<Cursor>,
) -> Result<Option<(Vec<RawValue>, Option<Cursor>)>, StorageError> {
    let Some(cursor) = cursor else {
        return Ok(None);
    };
    let page = store.page(&resource, cursor).await?;
    Ok(Some((page.values, page.next)))
}

/// Stored bytes per transaction at most (unless one value is larger), well below etcd's
/// default request limit of 1.5 MiB (`--max-request-bytes`).
const GROUP_BYTES: usize = 512 << 10;

/// A page cut into the groups written one transaction each: at most `batch` keys and
/// [`GROUP_BYTES`] of keys and values.
fn groups(page: Vec<RawValue>, batch: usize) -> Vec<Vec<RawValue>> {
    cut(page, batch.max(1), GROUP_BYTES, |raw| {
        raw.key.len() + raw.value.len()
    })
}

/// `items` cut in order into runs of at most `count` items and `bytes` of `size`; an item
/// larger than `bytes` makes a run alone.
fn cut<T>(items: Vec<T>, count: usize, bytes: usize, size: impl Fn(&T) -> usize) -> Vec<Vec<T>> {
    let mut runs = Vec::new();
    let (mut current, mut taken) = (Vec::new(), 0);
    for item in items {
        let item_size = size(&item);
        if !current.is_empty() && (current.len() >= count || taken + item_size > bytes) {
            runs.push(std::mem::take(&mut current));
            taken = 0;
        }
        taken += item_size;
        current.push(item);
    }
    if !current.is_empty() {
        runs.push(current);
    }
    runs
}

/// A key on its way to etcd.
struct Pending {
    raw: RawValue,
    conflicts: u32,
    bytes: Vec<u8>,
    warnings: Vec<String>,
}

/// Migrates one group of keys of `resource`: plans each, then writes the rewrites in
/// transactions of at most [`GROUP_BYTES`] (and etcd's request limit). When some key changed
/// meanwhile, nothing of that transaction is written; its reads give every key's current
/// value, the changed keys are planned again, and the rest is written again. A transaction
/// etcd refuses for its size is written one key at a time, so that only the key that is too
/// large fails.
async fn migrate_group(
    store: Store,
    kinds: &dyn StoredKinds,
    resource: &StoredResource,
    group: Vec<RawValue>,
    options: &MigrateOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<(Key, Outcome)>, StorageError> {
    let mut outcomes = Vec::with_capacity(group.len());
    let mut done = |key: Vec<u8>, outcome: Outcome| {
        progress();
        outcomes.push((Key(key), outcome));
    };
    let mut pending = Vec::new();
    for raw in group {
        match start(raw, kinds, resource, 0, options) {
            Ok(next) => pending.push(next),
            Err((key, outcome)) => done(key, outcome),
        }
    }
    let limit = GROUP_BYTES.min(options.max_request_bytes);
    for chunk in chunks(pending, limit) {
        write_chunk(&store, kinds, resource, chunk, options, &mut done).await?;
    }
    Ok(outcomes)
}

/// `pending` cut into transactions of at most `limit` request bytes (a larger key alone).
fn chunks(pending: Vec<Pending>, limit: usize) -> Vec<Vec<Pending>> {
    cut(pending, usize::MAX, limit, |p| {
        request_bytes(&p.raw.key, &p.bytes)
    })
}

/// Writes one transaction's keys (see [`migrate_group`]).
async fn write_chunk(
    store: &Store,
    kinds: &dyn StoredKinds,
    resource: &StoredResource,
    mut pending: Vec<Pending>,
    options: &MigrateOptions,
    done: &mut impl FnMut(Vec<u8>, Outcome),
) -> Result<(), StorageError> {
    while !pending.is_empty() {
        let swaps: Vec<Swap> = pending
            .iter()
            .map(|p| Swap {
                key: p.raw.key.clone(),
                value: p.bytes.clone(),
                mod_revision: p.raw.mod_revision,
            })
            .collect();
        let current = match store.swap_batch(&swaps).await {
            Ok(Swapped::All) => {
                for p in pending.drain(..) {
                    let outcome = Outcome::Migrated {
                        conflicts: p.conflicts,
                        warnings: p.warnings,
                    };
                    done(p.raw.key, outcome);
                }
                break;
            }
            Ok(Swapped::None { current }) => current,
            // Refused for its size: each key alone, so that only a key too large by itself
            // fails.
            Err(StorageError::TooLarge { .. }) => {
                for p in pending.drain(..) {
                    let key = p.raw.key.clone();
                    let current = Some(p.raw.clone());
                    let outcome = migrate_key(store, kinds, resource, p, current, options).await?;
                    done(key, outcome);
                }
                break;
            }
            Err(other) => return Err(other),
        };
        // The keys that did not change are written again together; each changed key on its
        // own, so that a key another writer keeps changing cannot hold up the group.
        let mut unchanged = Vec::with_capacity(pending.len());
        for (p, current) in pending.drain(..).zip(current) {
            match current {
                Some(raw) if raw.mod_revision == p.raw.mod_revision => unchanged.push(p),
                current => {
                    let key = p.raw.key.clone();
                    let outcome = migrate_key(store, kinds, resource, p, current, options).await?;
                    done(key, outcome);
                }
            }
        }
        pending = unchanged;
    }
    Ok(())
}

/// Migrates one key that changed after `pending` was planned (`current`: its value now), with
/// a transaction per attempt, reading the key again after each conflict. A `pending` whose
/// key did not change (`current` is what it was planned from) is written once more alone.
async fn migrate_key(
    store: &Store,
    kinds: &dyn StoredKinds,
    resource: &StoredResource,
    mut pending: Pending,
    mut current: Option<RawValue>,
    options: &MigrateOptions,
) -> Result<Outcome, StorageError> {
    loop {
        let Some(raw) = current else {
            return Ok(Outcome::Deleted {
                conflicts: pending.conflicts + 1,
            });
        };
        if raw.mod_revision != pending.raw.mod_revision {
            let conflicts = pending.conflicts + 1;
            if conflicts >= options.max_conflicts {
                let reason = format!("still changing after {conflicts} conflicts; run again");
                return Ok(Outcome::Failed { conflicts, reason });
            }
            pending = match start(raw, kinds, resource, conflicts, options) {
                Ok(next) => next,
                Err((_, outcome)) => return Ok(outcome),
            };
        }
        let Pending { raw, bytes, .. } = &pending;
        match store.swap(&raw.key, bytes, raw.mod_revision).await {
            Ok(true) => {
                return Ok(Outcome::Migrated {
                    conflicts: pending.conflicts,
                    warnings: pending.warnings,
                });
            }
            Ok(false) => {}
            Err(StorageError::TooLarge { message, .. }) => {
                return Ok(Outcome::Failed {
                    conflicts: pending.conflicts,
                    reason: Refusal::Refused(message).to_string(),
                });
            }
            Err(other) => return Err(other),
        }
        current = store.get(&raw.key).await?;
    }
}

/// Plans one key read after `conflicts` conflicts: the write to make, or the key's outcome
/// when there is nothing to write.
fn start(
    raw: RawValue,
    kinds: &dyn StoredKinds,
    resource: &StoredResource,
    conflicts: u32,
    options: &MigrateOptions,
) -> Result<Pending, (Vec<u8>, Outcome)> {
    match plan(&raw, kinds, resource, options) {
        Ok(Plan::Current) => Err((raw.key, Outcome::Current)),
        Err(refusal) => Err((
            raw.key,
            Outcome::Failed {
                conflicts,
                reason: refusal.to_string(),
            },
        )),
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
