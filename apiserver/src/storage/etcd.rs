//! etcd as kube-apiserver uses it: every operation is one etcd request, revisions are etcd's,
//! and a watch is etcd's own watch, so several servers on one etcd serve one consistent API.
//!
//! Creates are transactions on `create_revision == 0`, updates and deletes on the key's
//! `mod_revision`, as kube-apiserver's etcd3 store does them (`staging/src/k8s.io/apiserver/
//! pkg/storage/etcd3/store.go`).

use std::future::Future;
use std::time::{Duration, Instant};

use apfkit_etcd::{CallError, Members};

use super::memory::WATCH_BUFFER;
use super::watchers::Feed;
use super::{
    Backend, Event, KeyValue, ListOptions, ListPage, Revision, StoreError, Watch, not_ahead,
    prefix_end,
};
use etcd_client::{
    Client, Compare, CompareOp, DeleteOptions, EventType, GetOptions, Txn, TxnOp, TxnOpResponse,
    WatchOptions,
};

/// How long a request waits for an etcd member to answer while none can (etcd down or
/// restarting), by default: kube-apiserver's `--request-timeout`. Its etcd client waits for a
/// connection until the request's deadline (gRPC's wait-for-ready), then the request fails
/// with 504 Timeout.
pub const UNAVAILABLE_WAIT: Duration = Duration::from_secs(60);

/// The first pause between two rounds of asking every member, doubling up to a second.
const FIRST_PAUSE: Duration = Duration::from_millis(100);

/// A store on an etcd cluster: one client per member, failing over as etcdctl does, and
/// waiting (at most [`UNAVAILABLE_WAIT`], or as set) while no member can answer.
#[derive(Clone)]
pub struct EtcdBackend {
    members: Members<Client>,
    unavailable_wait: Duration,
}

/// Why an etcd request has no answer.
enum Failure {
    /// A member answered with an error.
    Answered(etcd_client::Error),
    /// No member could answer for as long as a request waits.
    Unavailable(Duration),
}

impl std::fmt::Debug for EtcdBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdBackend").finish_non_exhaustive()
    }
}

impl EtcdBackend {
    /// Connects to the members at `endpoints` (`http://127.0.0.1:2379`).
    ///
    /// # Errors
    ///
    /// No member answers.
    pub async fn connect(endpoints: &[String]) -> Result<Self, StoreError> {
        let mut members = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let client = Client::connect([endpoint], None)
                .await
                .map_err(|err| error(Failure::Answered(err)))?;
            members.push(client);
        }
        let members = Members::new(members)
            .ok_or_else(|| StoreError::Backend("no etcd endpoints".to_owned()))?;
        Ok(EtcdBackend {
            members,
            unavailable_wait: UNAVAILABLE_WAIT,
        })
    }

    /// The store waiting at most `wait` for a member to answer while none can, then failing
    /// with [`StoreError::Unavailable`] ([`UNAVAILABLE_WAIT`] by default).
    #[must_use]
    pub fn with_unavailable_wait(mut self, wait: Duration) -> Self {
        self.unavailable_wait = wait;
        self
    }

    /// Runs `request` on the member that answered last, failing over to the others while
    /// one cannot answer ([`Members::call`]); while none can, asks them all again after a
    /// pause (100 ms, doubling up to 1 s), until the store's wait is over.
    async fn call<T, F, Fut>(&self, request: F) -> Result<T, Failure>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let started = Instant::now();
        let mut pause = FIRST_PAUSE;
        loop {
            let remaining = self.unavailable_wait.saturating_sub(started.elapsed());
            // A member that accepts the connection but never answers costs the wait, no more.
            match tokio::time::timeout(remaining, self.members.call(&request)).await {
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(CallError::Refused(err))) => return Err(Failure::Answered(err)),
                Ok(Err(CallError::Unavailable(_))) | Err(_) => {}
            }
            let remaining = self.unavailable_wait.saturating_sub(started.elapsed());
            if remaining.is_zero() {
                return Err(Failure::Unavailable(self.unavailable_wait));
            }
            tokio::time::sleep(pause.min(remaining)).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// Runs one transaction, failing over between members.
    /// kube-apiserver's write of an existing key: its value put if its mod revision is
    /// still `expected` (then `also`, in the same transaction), else the key read to say why
    /// not. Answers the response and the revision written.
    async fn swap(
        &self,
        key: &[u8],
        value: Vec<u8>,
        expected: Revision,
        also: Option<TxnOp>,
    ) -> Result<(etcd_client::TxnResponse, Revision), StoreError> {
        let expected_rev = i64::try_from(expected.0).unwrap_or(i64::MAX);
        let mut then = vec![TxnOp::put(key, value, None)];
        then.extend(also);
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, expected_rev)])
            .and_then(then)
            .or_else([TxnOp::get(key, None)]);
        let response = self.transaction(txn).await?;
        if !response.succeeded() {
            return Err(conflict_or_missing(&response, expected));
        }
        let at = response
            .header()
            .map_or(Revision(0), |h| revision(h.revision()));
        Ok((response, at))
    }

    async fn transaction(&self, txn: Txn) -> Result<etcd_client::TxnResponse, StoreError> {
        self.call(|mut client| {
            let txn = txn.clone();
            async move { client.txn(txn).await }
        })
        .await
        .map_err(error)
    }
}

/// etcd's errors: compaction and future revisions are the contract's; an error etcd
/// answered is its own message (`etcdserver: request is too large`), as kube-apiserver
/// passes it on, never the client library's description of the call.
fn error(failure: Failure) -> StoreError {
    match failure {
        Failure::Unavailable(waited) => StoreError::Unavailable { waited },
        Failure::Answered(etcd_client::Error::GRpcStatus(status)) => {
            StoreError::Backend(status.message().to_owned())
        }
        Failure::Answered(err) => StoreError::Backend(err.to_string()),
    }
}

/// Whether etcd refused a read for a compacted revision (`mvcc.ErrCompacted`).
fn is_compacted(failure: &Failure) -> bool {
    matches!(failure, Failure::Answered(err)
        if err.to_string().contains("required revision has been compacted"))
}

fn revision(value: i64) -> Revision {
    Revision(u64::try_from(value).unwrap_or(0))
}

fn key_value(kv: &etcd_client::KeyValue) -> KeyValue {
    KeyValue {
        key: kv.key().to_vec(),
        value: kv.value().to_vec(),
        create_revision: revision(kv.create_revision()),
        mod_revision: revision(kv.mod_revision()),
    }
}

/// etcd's range end for the keys under `prefix`: `"\0"` (every key) when the prefix has none.
fn range_end(prefix: &[u8]) -> Vec<u8> {
    prefix_end(prefix).unwrap_or_else(|| vec![0])
}

impl EtcdBackend {
    /// The answer to a read at `requested` that etcd refused: compacted (with the compaction
    /// point, which etcd's error does not carry: a watch from revision 1 is told it), a future
    /// revision (`mvcc.ErrFutureRev`), or the backend's error.
    async fn read_error(&self, err: Failure, requested: Revision, current: Revision) -> StoreError {
        if is_compacted(&err) {
            return match self.compaction_point().await {
                Ok(compacted) => StoreError::Compacted {
                    requested,
                    compacted,
                },
                Err(other) => other,
            };
        }
        if matches!(&err, Failure::Answered(answered)
            if answered.to_string().contains("required revision is a future revision"))
        {
            return StoreError::FutureRevision { requested, current };
        }
        error(err)
    }

    /// The cluster's compaction point, from the answer etcd gives a watch of revision 1.
    async fn compaction_point(&self) -> Result<Revision, StoreError> {
        let (_watcher, mut stream) = self
            .call(|mut client| async move {
                let options = WatchOptions::new().with_start_revision(1);
                client.watch(vec![0], Some(options)).await
            })
            .await
            .map_err(error)?;
        // Called after etcd said a revision is compacted, so the cancel comes at once; the
        // timeout only keeps a misbehaving member from hanging the request.
        let wait = std::time::Duration::from_secs(5);
        while let Ok(Ok(Some(response))) = tokio::time::timeout(wait, stream.message()).await {
            if response.compact_revision() > 0 {
                return Ok(revision(response.compact_revision()));
            }
            if response.canceled() {
                break;
            }
        }
        Err(StoreError::Backend(
            "etcd said the revision is compacted but not where".to_owned(),
        ))
    }

    /// The key now, read with the cluster's current revision.
    async fn read(&self, key: &[u8]) -> Result<(Option<KeyValue>, Revision), StoreError> {
        let response = self
            .call(|mut client| async move { client.get(key, None).await })
            .await
            .map_err(error)?;
        let now = response
            .header()
            .map_or(Revision(0), |h| revision(h.revision()));
        Ok((response.kvs().first().map(key_value), now))
    }
}

impl Backend for EtcdBackend {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        Ok(self.read(b"\0").await?.1)
    }

    async fn get(&self, key: &[u8]) -> Result<Option<KeyValue>, StoreError> {
        Ok(self.read(key).await?.0)
    }

    async fn list(&self, options: &ListOptions) -> Result<ListPage, StoreError> {
        let current = self.current_revision().await?;
        let at = options.revision.unwrap_or(current);
        let start = if options.start.is_empty() {
            options.prefix.clone()
        } else {
            options.start.clone()
        };
        let start = if start.is_empty() { vec![0] } else { start };
        let mut get = GetOptions::new()
            .with_range(range_end(&options.prefix))
            .with_revision(i64::try_from(at.0).unwrap_or(i64::MAX));
        if options.limit > 0 {
            // One more than asked: it tells where the next page starts.
            get = get.with_limit(i64::try_from(options.limit + 1).unwrap_or(i64::MAX));
        }
        let response = self
            .call(|mut client| {
                let (start, get) = (start.clone(), get.clone());
                async move { client.get(start, Some(get)).await }
            })
            .await
            .map_err(|e| (e, at, current));
        let response = match response {
            Ok(response) => response,
            Err((err, at, current)) => return Err(self.read_error(err, at, current).await),
        };
        let mut items: Vec<KeyValue> = response.kvs().iter().map(key_value).collect();
        let total = u64::try_from(response.count()).unwrap_or(0);
        let (next, remaining) = if options.limit > 0 && items.len() > options.limit {
            let next = items.pop().map(|kv| kv.key);
            let remaining = if options.count {
                total - options.limit as u64
            } else {
                0
            };
            (next, remaining)
        } else {
            (None, 0)
        };
        Ok(ListPage {
            items,
            revision: at,
            next,
            remaining,
        })
    }

    async fn create(&self, key: &[u8], value: Vec<u8>) -> Result<KeyValue, StoreError> {
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, value.clone(), None)]);
        let response = self.transaction(txn).await?;
        if !response.succeeded() {
            return Err(StoreError::AlreadyExists);
        }
        let at = response
            .header()
            .map_or(Revision(0), |h| revision(h.revision()));
        Ok(KeyValue {
            key: key.to_vec(),
            value,
            create_revision: at,
            mod_revision: at,
        })
    }

    async fn update(
        &self,
        key: &[u8],
        value: Vec<u8>,
        expected: Revision,
    ) -> Result<KeyValue, StoreError> {
        // The create revision is the key's own: read in the same transaction, after the put
        // (its key alone), rather than by a second request.
        let read_back = TxnOp::get(key, Some(GetOptions::new().with_keys_only()));
        let (response, at) = self
            .swap(key, value.clone(), expected, Some(read_back))
            .await?;
        let create_revision = response
            .op_responses()
            .into_iter()
            .find_map(|op| match op {
                TxnOpResponse::Get(read) => read.kvs().first().map(|kv| kv.create_revision()),
                _ => None,
            })
            .map_or(at, revision);
        Ok(KeyValue {
            key: key.to_vec(),
            value,
            create_revision,
            mod_revision: at,
        })
    }

    async fn update_read(&self, read: &KeyValue, value: Vec<u8>) -> Result<KeyValue, StoreError> {
        let (_, at) = self
            .swap(&read.key, value.clone(), read.mod_revision, None)
            .await?;
        Ok(KeyValue {
            key: read.key.clone(),
            value,
            create_revision: read.create_revision,
            mod_revision: at,
        })
    }

    async fn delete(
        &self,
        key: &[u8],
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StoreError> {
        let compare = match expected {
            Some(expected) => Compare::mod_revision(
                key,
                CompareOp::Equal,
                i64::try_from(expected.0).unwrap_or(i64::MAX),
            ),
            // Any live key: etcd's create revision of a missing key is 0.
            None => Compare::create_revision(key, CompareOp::Greater, 0),
        };
        let txn = Txn::new()
            .when([compare])
            .and_then([TxnOp::delete(
                key,
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(key, None)]);
        let response = self.transaction(txn).await?;
        if !response.succeeded() {
            return Err(conflict_or_missing(
                &response,
                expected.unwrap_or(Revision(0)),
            ));
        }
        let at = response
            .header()
            .map_or(Revision(0), |h| revision(h.revision()));
        let previous = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Delete(deleted) => deleted.prev_kvs().first().map(key_value),
            _ => None,
        });
        previous
            .map(|previous| (previous, at))
            .ok_or(StoreError::NotFound)
    }

    async fn watch(&self, prefix: &[u8], after: Revision) -> Result<Watch, StoreError> {
        // etcd cancels a watch from a compacted revision after it was created; one read at
        // `after` tells before any watch is opened, and that `after` is not ahead: etcd
        // refuses a read at a compacted or a future revision. Most watches start at a kept
        // revision, so this is their one round trip before the watch.
        let probe = GetOptions::new()
            .with_revision(i64::try_from(after.0.max(1)).unwrap_or(i64::MAX))
            .with_limit(1)
            .with_keys_only();
        let probed = self
            .call(|mut client| {
                let probe = probe.clone();
                async move { client.get(vec![0], Some(probe)).await }
            })
            .await;
        if let Err(err) = probed {
            let current = self.current_revision().await?;
            not_ahead(after, current)?;
            match self.read_error(err, after, current).await {
                // `after` itself is compacted, but not the revision after it, where the watch
                // starts: nothing it reports is lost.
                StoreError::Compacted { compacted, .. } if after.0 + 1 >= compacted.0 => {}
                refused => return Err(refused),
            }
        }
        let start = i64::try_from(after.0 + 1).unwrap_or(i64::MAX);
        let key = if prefix.is_empty() {
            vec![0]
        } else {
            prefix.to_vec()
        };
        let options = WatchOptions::new()
            .with_range(range_end(prefix))
            .with_start_revision(start)
            .with_prev_key();
        let (watcher, mut stream) = self
            .call(|mut client| {
                let (key, options) = (key.clone(), options.clone());
                async move { client.watch(key, Some(options)).await }
            })
            .await
            .map_err(error)?;
        let (feed, watch) = Feed::open(WATCH_BUFFER);
        tokio::spawn(async move {
            // The watcher lives as long as the task: dropping it cancels the watch.
            let _watcher = watcher;
            while let Ok(Some(response)) = stream.message().await {
                if response.canceled() {
                    feed.end(StoreError::Compacted {
                        requested: after,
                        compacted: revision(response.compact_revision()),
                    });
                    return;
                }
                for event in response.events().iter().filter_map(event) {
                    if !feed.deliver(std::sync::Arc::new(event)) {
                        return;
                    }
                }
            }
        });
        Ok(watch)
    }

    async fn compact(&self, revision_to: Revision) -> Result<(), StoreError> {
        not_ahead(revision_to, self.current_revision().await?)?;
        let at = i64::try_from(revision_to.0).unwrap_or(0);
        match self
            .call(|mut client| async move { client.compact(at, None).await })
            .await
        {
            Ok(_) => Ok(()),
            // Compacting at or before the last compaction is nothing to do.
            Err(err) if is_compacted(&err) => Ok(()),
            Err(err) => Err(error(err)),
        }
    }
}

/// Why a compare-and-swap transaction failed: the key's current state, from its `or_else` get.
fn conflict_or_missing(response: &etcd_client::TxnResponse, expected: Revision) -> StoreError {
    let current = response.op_responses().into_iter().find_map(|op| match op {
        TxnOpResponse::Get(get) => get.kvs().first().map(key_value),
        _ => None,
    });
    match current {
        Some(kv) => StoreError::Conflict {
            expected,
            actual: kv.mod_revision,
        },
        None => StoreError::NotFound,
    }
}

/// A change as the contract reports it.
fn event(event: &etcd_client::Event) -> Option<Event> {
    let kv = event.kv()?;
    match event.event_type() {
        EventType::Put => Some(Event::Put {
            current: key_value(kv),
            // The watch asks for `prev_kv`; etcd has none for a create.
            previous: event.prev_kv().map(key_value),
        }),
        EventType::Delete => Some(Event::Delete {
            previous: event.prev_kv().map(key_value)?,
            revision: revision(kv.mod_revision()),
        }),
    }
}
