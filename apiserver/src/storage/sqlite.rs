//! The embedded backend: kine's table in SQLite (decision 170), a row per revision.
//!
//! Each write appends one row in its own durable transaction (WAL, `synchronous=FULL`): its
//! `id` is the revision, `prev_revision` the row it supersedes, `created`/`deleted` mark a
//! key's first and last row, and `old_value` keeps what an update or delete replaced (so a
//! watch can replay deletes with the value they removed). One difference from kine: `name` is a
//! BLOB, because keys are bytes (as etcd's are), compared byte by byte.
//!
//! Watches are served in process: a write notifies the watchers while it holds the
//! connection, and a new watch replays its missed rows under the same lock, so no change falls
//! between. (Several processes on one data directory are not supported; several replicas use
//! etcd.)

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::memory::WATCH_BUFFER;
use super::watchers::Watchers;
use super::{
    Backend, Event, KeyValue, ListOptions, ListPage, Revision, StoreError, Watch, not_ahead,
    prefix_end, readable, watchable,
};

const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = FULL;
-- The write-ahead log is cut back to 4 MiB after each checkpoint, so that with compaction
-- (storage::compaction) the files stay bounded under a steady load of writes.
PRAGMA journal_size_limit = 4194304;
CREATE TABLE IF NOT EXISTS kine (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name BLOB NOT NULL,
    created INTEGER,
    deleted INTEGER,
    create_revision INTEGER,
    prev_revision INTEGER,
    lease INTEGER,
    value BLOB,
    old_value BLOB
);
CREATE INDEX IF NOT EXISTS kine_name_index ON kine (name);
CREATE INDEX IF NOT EXISTS kine_name_id_index ON kine (name, id);
CREATE UNIQUE INDEX IF NOT EXISTS kine_name_prev_revision_uindex ON kine (name, prev_revision);
CREATE TABLE IF NOT EXISTS apfkit_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- A new store is at revision 1, as a new etcd is (its first write is 2): a list of an empty
-- store answers resourceVersion \"1\", never \"0\", which a watch would read as \"any\" and
-- start from the objects as they are by then, missing the writes in between.
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'kine', 1 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'kine');
";

/// A store in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteBackend {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Read-only connections: in WAL mode reads see the last commit and wait for no write,
    /// so GETs and lists do not queue behind each other or behind writes. Declared before
    /// the writer, they close first: the last connection to close folds the write-ahead log
    /// into the database and removes it, which a read-only one cannot.
    readers: Vec<Mutex<Connection>>,
    /// The connection and the watchers, under one lock: a write and its notification are one
    /// step for every watch.
    state: Mutex<State>,
    /// The reader a read that found them all busy waits for next.
    next_reader: std::sync::atomic::AtomicUsize,
}

/// Read-only connections of a store.
const READERS: usize = 4;
/// How long a reader waits for the database when SQLite says it is busy (a checkpoint, or a
/// recovery after a crash).
const READ_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Debug)]
struct State {
    connection: Connection,
    watchers: Watchers,
}

/// The rows that hold the live value of each key in `[?1, ?2)` (`?2` NULL: no end) at
/// revision `?3`: each key's newest row at that revision, unless it is a delete.
const LIVE_AT: &str = "WHERE k.name >= ?1 AND (?2 IS NULL OR k.name < ?2)
     AND k.id = (SELECT MAX(l.id) FROM kine l WHERE l.name = k.name AND l.id <= ?3)
     AND k.deleted = 0";

/// A key's value from a row of `id, name, created, create_revision, value` (a live row).
fn live_key_value(row: &rusqlite::Row<'_>) -> rusqlite::Result<KeyValue> {
    let id = row.get::<_, i64>(0)? as u64;
    let created = row.get::<_, i64>(2)? != 0;
    Ok(KeyValue {
        key: row.get(1)?,
        value: row.get::<_, Option<Vec<u8>>>(4)?.unwrap_or_default(),
        create_revision: Revision(if created {
            id
        } else {
            row.get::<_, i64>(3)? as u64
        }),
        mod_revision: Revision(id),
    })
}

/// A row of the table.
struct Row {
    id: u64,
    name: Vec<u8>,
    created: bool,
    deleted: bool,
    create_revision: u64,
    prev_revision: u64,
    value: Vec<u8>,
    old_value: Option<Vec<u8>>,
}

impl Row {
    const COLUMNS: &'static str =
        "id, name, created, deleted, create_revision, prev_revision, value, old_value";

    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
        Ok(Row {
            id: row.get::<_, i64>(0)? as u64,
            name: row.get(1)?,
            created: row.get::<_, i64>(2)? != 0,
            deleted: row.get::<_, i64>(3)? != 0,
            create_revision: row.get::<_, i64>(4)? as u64,
            prev_revision: row.get::<_, i64>(5)? as u64,
            value: row.get::<_, Option<Vec<u8>>>(6)?.unwrap_or_default(),
            old_value: row.get(7)?,
        })
    }

    /// The revision that created the key this row belongs to.
    fn creation(&self) -> Revision {
        Revision(if self.created {
            self.id
        } else {
            self.create_revision
        })
    }

    /// The key's value as of this row (for a live row).
    fn key_value(&self) -> KeyValue {
        KeyValue {
            key: self.name.clone(),
            value: self.value.clone(),
            create_revision: self.creation(),
            mod_revision: Revision(self.id),
        }
    }

    /// The change this row records.
    fn event(&self) -> Event {
        if self.deleted {
            Event::Delete {
                previous: KeyValue {
                    key: self.name.clone(),
                    value: self.old_value.clone().unwrap_or_default(),
                    create_revision: self.creation(),
                    mod_revision: Revision(self.prev_revision),
                },
                revision: Revision(self.id),
            }
        } else {
            Event::Put {
                current: self.key_value(),
                // An update's row keeps what it replaced; a create's has none.
                previous: self.old_value.as_ref().map(|value| KeyValue {
                    key: self.name.clone(),
                    value: value.clone(),
                    create_revision: self.creation(),
                    mod_revision: Revision(self.prev_revision),
                }),
            }
        }
    }
}

/// A storage failure that is not one of the contract's answers: the database itself.
fn backend(error: rusqlite::Error) -> StoreError {
    StoreError::Backend(error.to_string())
}

/// Creates the database file readable and writable by its owner only (0600), as etcd keeps
/// its data, if it does not exist yet: SQLite gives its WAL and shared-memory files the
/// database file's permissions. An existing file keeps its own.
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

impl SqliteBackend {
    /// Opens (creating if needed) the store in the file `path`.
    ///
    /// # Errors
    ///
    /// A file SQLite cannot open or a database that is not kine's table.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        create_private(path).map_err(|e| StoreError::Backend(e.to_string()))?;
        let connection = Connection::open(path).map_err(backend)?;
        connection.execute_batch(SCHEMA).map_err(backend)?;
        let readers = (0..READERS)
            .map(|_| {
                let reader = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                reader.busy_timeout(READ_BUSY_TIMEOUT)?;
                Ok(Mutex::new(reader))
            })
            .collect::<rusqlite::Result<_>>()
            .map_err(backend)?;
        Ok(SqliteBackend {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    connection,
                    watchers: Watchers::new(WATCH_BUFFER),
                }),
                readers,
                next_reader: std::sync::atomic::AtomicUsize::new(0),
            }),
        })
    }

    /// Runs a short read (a point read from SQLite's cache takes microseconds, less than
    /// handing it to another thread) here on a free reader, or off the async threads on the
    /// next reader when all are busy.
    async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        for reader in &self.inner.readers {
            match reader.try_lock() {
                Ok(connection) => return work(&connection),
                // A reader holds no state of its own: a panic while it was held harmed nothing.
                Err(std::sync::TryLockError::Poisoned(poisoned)) => {
                    return work(&poisoned.into_inner());
                }
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
        self.read_off_thread(work).await
    }

    /// Runs a read off the async threads on the next reader, in one read transaction (one
    /// snapshot for all its statements).
    async fn read_off_thread<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            // The first free reader, so that reads keep to the fewest connections and find
            // their pages in those connections' caches; all busy, the next in turn.
            let free = inner
                .readers
                .iter()
                .find_map(|reader| match reader.try_lock() {
                    Ok(connection) => Some(connection),
                    Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
                    Err(std::sync::TryLockError::WouldBlock) => None,
                });
            let connection = free.unwrap_or_else(|| {
                let at = inner
                    .next_reader
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    % inner.readers.len();
                inner.readers[at]
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            });
            let snapshot = connection.unchecked_transaction().map_err(backend)?;
            let result = work(&snapshot);
            snapshot.finish().map_err(backend)?;
            result
        })
        .await
        .map_err(|e| StoreError::Backend(e.to_string()))?
    }

    /// Runs `work` on the connection off the async threads.
    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut State) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || work(&mut lock(&inner)))
            .await
            .map_err(|e| StoreError::Backend(e.to_string()))?
    }
}

fn lock(inner: &Inner) -> MutexGuard<'_, State> {
    // Every write is one SQLite transaction, rolled back if it fails, so a panic while the
    // lock was held leaves the database whole.
    inner
        .state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The reads of the store, on any of its connections.
trait Queries {
    /// The one integer `sql` selects, 0 when it selects no row.
    fn integer(&self, sql: &str) -> Result<u64, StoreError>;
    /// The key's last row.
    fn latest(&self, key: &[u8]) -> Result<Option<Row>, StoreError>;

    /// The last revision written (AUTOINCREMENT never reuses one, even once its row is gone).
    fn current_revision(&self) -> Result<Revision, StoreError> {
        self.integer("SELECT seq FROM sqlite_sequence WHERE name = 'kine'")
            .map(Revision)
    }

    /// The compaction point: history before it is gone.
    fn compacted(&self) -> Result<Revision, StoreError> {
        self.integer("SELECT value FROM apfkit_meta WHERE key = 'compact_revision'")
            .map(Revision)
    }
}

impl Queries for Connection {
    fn integer(&self, sql: &str) -> Result<u64, StoreError> {
        // Statements are prepared once per connection: parsing and planning them took more
        // time than running them (perf, the GET benchmark).
        let value: Option<i64> = self
            .prepare_cached(sql)
            .and_then(|mut statement| statement.query_row([], |r| r.get(0)).optional())
            .map_err(backend)?;
        Ok(value.unwrap_or(0) as u64)
    }

    fn latest(&self, key: &[u8]) -> Result<Option<Row>, StoreError> {
        self.prepare_cached(&format!(
            "SELECT {} FROM kine WHERE name = ?1 ORDER BY id DESC LIMIT 1",
            Row::COLUMNS
        ))
        .and_then(|mut statement| statement.query_row([key], Row::read).optional())
        .map_err(backend)
    }
}

impl State {
    /// The key's last row if it is not a delete, and (when `expected` is given) written at
    /// that revision: the check of a compare-and-swap.
    fn live(&self, key: &[u8], expected: Option<Revision>) -> Result<Row, StoreError> {
        let current = self
            .connection
            .latest(key)?
            .filter(|row| !row.deleted)
            .ok_or(StoreError::NotFound)?;
        if let Some(expected) = expected
            && current.id != expected.0
        {
            return Err(StoreError::Conflict {
                expected,
                actual: Revision(current.id),
            });
        }
        Ok(current)
    }

    /// Appends a row and tells the watchers of its change; returns the row as written.
    #[allow(clippy::too_many_arguments)]
    fn append(
        &mut self,
        key: &[u8],
        created: bool,
        deleted: bool,
        create_revision: u64,
        prev_revision: u64,
        value: &[u8],
        old_value: Option<&[u8]>,
    ) -> Result<Row, StoreError> {
        self.connection
            .prepare_cached(
                "INSERT INTO kine (name, created, deleted, create_revision, prev_revision, lease, value, old_value)
                 VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7)",
            )
            .and_then(|mut statement| {
                statement.execute(params![key, created as i64, deleted as i64, create_revision as i64, prev_revision as i64, value, old_value])
            })
            .map_err(backend)?;
        let row = Row {
            id: self.connection.last_insert_rowid() as u64,
            name: key.to_vec(),
            created,
            deleted,
            create_revision,
            prev_revision,
            value: value.to_vec(),
            old_value: old_value.map(<[u8]>::to_vec),
        };
        self.watchers.notify(&Arc::new(row.event()));
        Ok(row)
    }
}

impl Backend for SqliteBackend {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        self.read(|connection| connection.current_revision()).await
    }

    async fn get(&self, key: &[u8]) -> Result<Option<KeyValue>, StoreError> {
        let key = key.to_vec();
        self.read(move |state| {
            Ok(state
                .latest(&key)?
                .filter(|row| !row.deleted)
                .map(|row| row.key_value()))
        })
        .await
    }

    async fn list(&self, options: &ListOptions) -> Result<ListPage, StoreError> {
        let options = options.clone();
        self.read_off_thread(move |connection| {
            let revision = match options.revision {
                Some(revision) => revision,
                None => connection.current_revision()?,
            };
            readable(revision, connection.current_revision()?, connection.compacted()?)?;
            let start = if options.start.is_empty() {
                options.prefix.clone()
            } else {
                options.start.clone()
            };
            let end = prefix_end(&options.prefix);
            // Each key's newest row at the revision, in key order: the scan walks the name
            // index and stops after the page, so a page costs its own rows, not the range's.
            let mut query = connection
                .prepare_cached(&format!(
                    "SELECT k.id, k.name, k.created, k.create_revision, k.value FROM kine k {LIVE_AT}
                     ORDER BY k.name LIMIT ?4"
                ))
                .map_err(backend)?;
            // One more than asked: it tells where the next page starts (-1: no limit).
            let sql_limit = match options.limit {
                0 => -1,
                limit => i64::try_from(limit).map_or(-1, |l| l.saturating_add(1)),
            };
            let mut rows = query
                .query(params![start, end, revision.0 as i64, sql_limit])
                .map_err(backend)?;
            let mut items = Vec::new();
            let mut next = None;
            while let Some(row) = rows.next().map_err(backend)? {
                let kv = live_key_value(row).map_err(backend)?;
                if options.limit == 0 || items.len() < options.limit {
                    items.push(kv);
                } else {
                    next = Some(kv.key);
                }
            }
            drop(rows);
            let remaining = match &next {
                Some(next) if options.count => {
                    let mut count = connection
                        .prepare_cached(&format!("SELECT COUNT(*) FROM kine k {LIVE_AT}"))
                        .map_err(backend)?;
                    let counted: i64 = count
                        .query_row(params![next, end, revision.0 as i64], |row| row.get(0))
                        .map_err(backend)?;
                    counted as u64
                }
                _ => 0,
            };
            Ok(ListPage {
                items,
                revision,
                next,
                remaining,
            })
        })
        .await
    }

    async fn create(&self, key: &[u8], value: Vec<u8>) -> Result<KeyValue, StoreError> {
        let key = key.to_vec();
        self.with(move |state| {
            let latest = state.connection.latest(&key)?;
            if latest.as_ref().is_some_and(|row| !row.deleted) {
                return Err(StoreError::AlreadyExists);
            }
            let prev = latest.map_or(0, |row| row.id);
            Ok(state
                .append(&key, true, false, 0, prev, &value, None)?
                .key_value())
        })
        .await
    }

    async fn update(
        &self,
        key: &[u8],
        value: Vec<u8>,
        expected: Revision,
    ) -> Result<KeyValue, StoreError> {
        let key = key.to_vec();
        self.with(move |state| {
            let current = state.live(&key, Some(expected))?;
            let creation = current.creation().0;
            let row = state.append(
                &key,
                false,
                false,
                creation,
                current.id,
                &value,
                Some(&current.value),
            )?;
            Ok(row.key_value())
        })
        .await
    }

    async fn delete(
        &self,
        key: &[u8],
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StoreError> {
        let key = key.to_vec();
        self.with(move |state| {
            let current = state.live(&key, expected)?;
            let previous = current.key_value();
            let creation = current.creation().0;
            let row = state.append(
                &key,
                false,
                true,
                creation,
                current.id,
                &current.value,
                Some(&current.value),
            )?;
            Ok((previous, Revision(row.id)))
        })
        .await
    }

    async fn watch(&self, prefix: &[u8], after: Revision) -> Result<Watch, StoreError> {
        let prefix = prefix.to_vec();
        self.with(move |state| {
            watchable(after, state.connection.current_revision()?, state.connection.compacted()?)?;
            let end = prefix_end(&prefix);
            let replay: Vec<Arc<Event>> = {
                let mut query = state
                    .connection
                    .prepare_cached(&format!(
                        "SELECT {} FROM kine WHERE id > ?1 AND name >= ?2 AND (?3 IS NULL OR name < ?3) ORDER BY id",
                        Row::COLUMNS
                    ))
                    .map_err(backend)?;
                let rows = query
                    .query_map(params![after.0 as i64, prefix, end], Row::read)
                    .map_err(backend)?;
                rows.map(|row| row.map(|row| Arc::new(row.event())))
                    .collect::<Result<_, _>>()
                    .map_err(backend)?
            };
            Ok(state.watchers.subscribe(&prefix, replay))
        })
        .await
    }

    async fn compact(&self, revision: Revision) -> Result<(), StoreError> {
        self.with(move |state| {
            not_ahead(revision, state.connection.current_revision()?)?;
            if revision <= state.connection.compacted()? {
                return Ok(());
            }
            let transaction = state.connection.transaction().map_err(backend)?;
            // Rows superseded at or before the compaction point are unreadable from it on;
            // deletes before it leave nothing to read or replay.
            transaction
                .execute(
                    "DELETE FROM kine WHERE id IN (
                         SELECT prev_revision FROM kine WHERE id <= ?1 AND prev_revision != 0
                     )",
                    [revision.0 as i64],
                )
                .map_err(backend)?;
            transaction
                .execute(
                    "DELETE FROM kine WHERE deleted = 1 AND id < ?1",
                    [revision.0 as i64],
                )
                .map_err(backend)?;
            transaction
                .execute(
                    "INSERT INTO apfkit_meta (key, value) VALUES ('compact_revision', ?1)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [revision.0 as i64],
                )
                .map_err(backend)?;
            transaction.commit().map_err(backend)
        })
        .await
    }
}
