//! The run every storage-version migration through an API server makes, whatever carries its
//! requests: [`crate::migrate`] over HTTP with kube-rs, and the StorageVersionMigration
//! controller of `apfkit-storagemigration` on the server's own store.
//!
//! A resource's objects are read a page at a time ([`Resource::page`]) and each is written
//! back unchanged ([`Resource::write_back`]): the server encodes it again in its storage
//! version and stores it only if the bytes differ. What differs between the callers is
//! their [`Plan`]: kube-storage-version-migrator reads an object again after a conflict and
//! writes it once more, and records an object the server refuses and goes on;
//! kube-controller-manager's migrator skips an object that was written meanwhile (its writer
//! stored it in the storage version), stops at the first refusal, and leaves objects written
//! after its checkpoint alone.

use std::collections::VecDeque;
use std::future::Future;

use futures_util::future::{Either, TryFutureExt, select};
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;

/// A page of a resource's objects.
pub struct Page<O, C> {
    /// The objects, in the server's order.
    pub objects: Vec<O>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<C>,
}

/// What writing one object back did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteBack {
    /// Written: stored again in the storage version, or found already in it.
    Written,
    /// Written by someone else meanwhile (a stale `resourceVersion`: 409).
    Conflict,
    /// Deleted meanwhile (404).
    Gone,
    /// Refused by the server as it is (it no longer validates, say), in the server's words.
    Refused(String),
}

/// Where an object is: its namespace (for a namespaced resource) and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Place {
    /// Its namespace, for a namespaced resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

/// A resource whose objects a migration writes back.
pub trait Resource: Sync {
    /// One object as read.
    type Object: Send + Sync;
    /// Where a page starts.
    type Cursor: Clone + Send + Sync;
    /// Why a request could not be made or answered: the run stops with it.
    type Error: Send;

    /// The page of at most `limit` objects from `from` (`None`: the first).
    fn page(
        &self,
        from: Option<&Self::Cursor>,
        limit: u32,
    ) -> impl Future<Output = Result<Page<Self::Object, Self::Cursor>, Self::Error>> + Send;

    /// Writes `object` back, with its `resourceVersion` as the precondition.
    fn write_back(
        &self,
        object: &Self::Object,
    ) -> impl Future<Output = Result<WriteBack, Self::Error>> + Send;

    /// `object` as stored now; `None` once deleted.
    fn read_again(
        &self,
        object: &Self::Object,
    ) -> impl Future<Output = Result<Option<Self::Object>, Self::Error>> + Send;

    /// Where `object` is.
    fn place(&self, object: &Self::Object) -> Place;

    /// `object`'s `resourceVersion`, as a number (`None` when it is not one).
    fn revision(&self, object: &Self::Object) -> Option<u64>;

    /// Whether `error` says the cursor expired (`410 Gone`): the list starts again.
    fn expired(&self, _error: &Self::Error) -> bool {
        false
    }
}

/// What to do with an object written by someone else meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnConflict {
    /// Leave it: its writer stored it in the storage version (kube-controller-manager).
    Skip,
    /// Read it again and write it once more, reporting it failed after `most` conflicts
    /// (kube-storage-version-migrator).
    Retry {
        /// Conflicts on one object before it is reported as failed.
        most: u32,
    },
}

/// What to do with an object the server refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRefusal {
    /// Report it in [`Summary::failed`] and go on.
    Record,
    /// Stop the run ([`Halt::Refused`]).
    Stop,
}

/// How a run goes.
#[derive(Debug, Clone)]
pub struct Plan<C> {
    /// Objects per page.
    pub page_size: u32,
    /// Objects written back at the same time.
    pub parallel: usize,
    /// What a conflict does.
    pub on_conflict: OnConflict,
    /// What a refusal does.
    pub on_refusal: OnRefusal,
    /// Objects whose `resourceVersion` is above this one are left alone: they were written
    /// after the migration started, so in the storage version.
    pub written_by: Option<u64>,
    /// Where to start (a stopped run's [`Halted::resume_from`]).
    pub resume_from: Option<C>,
}

/// One object that was not migrated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failed {
    /// Where it is.
    #[serde(flatten)]
    pub place: Place,
    /// Why.
    pub reason: String,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The resource, `plural.group`.
    pub resource: String,
    /// Objects listed.
    pub listed: u64,
    /// Objects written back.
    pub migrated: u64,
    /// Conflicts met and retried ([`OnConflict::Retry`]).
    pub conflicts_retried: u64,
    /// Objects left because they were written meanwhile ([`OnConflict::Skip`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub written_meanwhile: u64,
    /// Objects left because they were written after [`Plan::written_by`].
    #[serde(skip_serializing_if = "is_zero")]
    pub newer: u64,
    /// Objects deleted between the list and their write.
    pub deleted_meanwhile: u64,
    /// Times the list started again because its continue token had expired.
    pub restarts: u64,
    /// Objects that could not be written back.
    pub failed: Vec<Failed>,
    /// For a custom resource whose every object was written back: the versions removed from
    /// its CRD's `status.storedVersions`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stored_versions_removed: Vec<String>,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Summary {
    /// Objects done with: written, left, gone or failed.
    #[must_use]
    pub fn handled(&self) -> u64 {
        self.migrated + self.written_meanwhile + self.deleted_meanwhile + self.failed.len() as u64
    }
}

/// Why a run stopped.
#[derive(Debug)]
pub enum Halt<E> {
    /// A request failed.
    Error(E),
    /// The server refused an object ([`OnRefusal::Stop`]).
    Refused(Failed),
}

/// A run that stopped before its end.
#[derive(Debug)]
pub struct Halted<C, E> {
    /// What was done before it stopped.
    pub summary: Summary,
    /// The page to go on from ([`Plan::resume_from`]); `None` to start from the beginning.
    pub resume_from: Option<C>,
    /// Why it stopped.
    pub why: Halt<E>,
}

/// What became of one object.
enum Fate {
    Written,
    WrittenMeanwhile,
    Gone,
    Failed(Failed),
}

/// Writes back every object of `resource` as `plan` says; `progress` is told the count of
/// objects done after each one. `summary` is what the run adds to.
///
/// Pages are read as the writes need more objects, while the writes before them are in
/// flight, so that `plan.parallel` writes stay in flight across pages.
///
/// # Errors
///
/// [`Halted`]: a request failed (or, with [`OnRefusal::Stop`], an object was refused); what
/// was done and where to go on from: the first page with an object not done.
pub async fn run<R: Resource>(
    resource: &R,
    plan: &Plan<R::Cursor>,
    summary: Summary,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Summary, Box<Halted<R::Cursor, R::Error>>> {
    let parallel = plan.parallel.max(1);
    let mut book = Book {
        summary,
        pages: VecDeque::new(),
        first_page: 0,
        next: plan.resume_from.clone(),
    };
    // Objects of the pages read, not yet handed to a write, with their page's index.
    let mut waiting: VecDeque<(usize, R::Object)> = VecDeque::new();
    let mut writes = FuturesUnordered::new();
    let mut reading = None;
    let mut more = true;
    let halt = loop {
        while writes.len() < parallel
            && let Some((index, object)) = waiting.pop_front()
        {
            writes.push(fate_of(resource, plan, object).map_ok(move |fate| (index, fate)));
        }
        // The next page is read while the writes of the last are in flight.
        if more && reading.is_none() && waiting.len() < parallel {
            reading = Some(Box::pin(read_page(resource, plan, book.next.clone())));
        }
        let event = match (&mut reading, writes.is_empty()) {
            (None, true) => break None,
            (None, false) => Event::Written(writes.next().await),
            (Some(read), true) => Event::Read(read.await),
            (Some(read), false) => match select(read, writes.next()).await {
                Either::Left((read, _)) => Event::Read(read),
                Either::Right((written, _)) => Event::Written(written),
            },
        };
        match event {
            Event::Read(read) => {
                reading = None;
                let (page, from, restarts) = match read {
                    Ok(read) => read,
                    Err(error) => break Some(Halt::Error(error)),
                };
                book.summary.restarts += restarts;
                let (candidates, newer): (Vec<_>, Vec<_>) =
                    page.objects.into_iter().partition(|object| {
                        match (plan.written_by, resource.revision(object)) {
                            (Some(checkpoint), Some(revision)) => revision <= checkpoint,
                            _ => true,
                        }
                    });
                book.summary.listed += (candidates.len() + newer.len()) as u64;
                book.summary.newer += newer.len() as u64;
                let index = book.first_page + book.pages.len();
                book.pages.push_back((from, candidates.len()));
                book.settle();
                waiting.extend(candidates.into_iter().map(|object| (index, object)));
                book.next = page.next;
                more = book.next.is_some();
            }
            Event::Written(None) => {}
            Event::Written(Some(Err(error))) => break Some(Halt::Error(error)),
            Event::Written(Some(Ok((index, (fate, conflicts))))) => {
                let summary = &mut book.summary;
                summary.conflicts_retried += u64::from(conflicts);
                match fate {
                    Fate::Written => summary.migrated += 1,
                    Fate::WrittenMeanwhile => summary.written_meanwhile += 1,
                    Fate::Gone => summary.deleted_meanwhile += 1,
                    Fate::Failed(failed) if plan.on_refusal == OnRefusal::Stop => {
                        break Some(Halt::Refused(failed));
                    }
                    Fate::Failed(failed) => summary.failed.push(failed),
                }
                book.done(index);
                progress(book.summary.handled());
            }
        }
    };
    match halt {
        None => Ok(book.summary),
        // The writes still in flight are dropped: each is whole or not made, and their page
        // is read again when the run goes on.
        Some(why) => Err(Box::new(Halted {
            resume_from: match book.pages.front() {
                Some((start, _)) => start.clone(),
                None => book.next,
            },
            summary: book.summary,
            why,
        })),
    }
}

/// What the run waited for.
enum Event<P, W> {
    Read(P),
    Written(Option<W>),
}

/// Reads the page at `from`, from the start again when its cursor expired: the page, where
/// it started, and how many times the list started again.
async fn read_page<R: Resource>(
    resource: &R,
    plan: &Plan<R::Cursor>,
    mut from: Option<R::Cursor>,
) -> Result<(Page<R::Object, R::Cursor>, Option<R::Cursor>, u64), R::Error> {
    let mut restarts = 0;
    loop {
        match resource.page(from.as_ref(), plan.page_size.max(1)).await {
            Ok(page) => return Ok((page, from, restarts)),
            Err(error) if from.is_some() && resource.expired(&error) => {
                restarts += 1;
                from = None;
            }
            Err(error) => return Err(error),
        }
    }
}

/// What a run keeps while its pages and writes overlap: the summary, and for each page read
/// whose objects are not all done, where it starts and how many are left.
struct Book<C> {
    summary: Summary,
    pages: VecDeque<(Option<C>, usize)>,
    /// The index of the page at the front of `pages`.
    first_page: usize,
    /// Where the page after the last one read starts.
    next: Option<C>,
}

impl<C> Book<C> {
    /// One more object of page `index` done; the pages done at the front let go.
    fn done(&mut self, index: usize) {
        if let Some((_, left)) = self.pages.get_mut(index - self.first_page) {
            *left = left.saturating_sub(1);
        }
        self.settle();
    }

    /// The pages at the front with nothing left let go.
    fn settle(&mut self) {
        while self.pages.front().is_some_and(|(_, left)| *left == 0) {
            self.pages.pop_front();
            self.first_page += 1;
        }
    }
}

/// Writes one object back as `plan` says; answers its fate and the conflicts retried.
async fn fate_of<R: Resource>(
    resource: &R,
    plan: &Plan<R::Cursor>,
    mut object: R::Object,
) -> Result<(Fate, u32), R::Error> {
    let mut conflicts = 0;
    loop {
        match resource.write_back(&object).await? {
            WriteBack::Written => return Ok((Fate::Written, conflicts)),
            WriteBack::Gone => return Ok((Fate::Gone, conflicts)),
            WriteBack::Refused(reason) => {
                let place = resource.place(&object);
                return Ok((Fate::Failed(Failed { place, reason }), conflicts));
            }
            WriteBack::Conflict => match plan.on_conflict {
                OnConflict::Skip => return Ok((Fate::WrittenMeanwhile, conflicts)),
                OnConflict::Retry { most } => {
                    conflicts += 1;
                    if conflicts >= most {
                        let place = resource.place(&object);
                        let reason =
                            format!("still changing after {conflicts} conflicts; run again");
                        return Ok((Fate::Failed(Failed { place, reason }), conflicts));
                    }
                    match resource.read_again(&object).await? {
                        Some(current) => object = current,
                        None => return Ok((Fate::Gone, conflicts)),
                    }
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use super::*;

    /// Objects in memory: name → (revision, what a write of it answers, times written).
    struct Memory {
        objects: Mutex<BTreeMap<String, (u64, Vec<WriteBack>)>>,
        fail_page: Option<usize>,
        /// The names written, in order.
        written: Mutex<Vec<String>>,
    }

    impl Memory {
        fn new(objects: &[(&str, u64, Vec<WriteBack>)]) -> Self {
            let objects = objects
                .iter()
                .map(|(name, revision, answers)| ((*name).to_owned(), (*revision, answers.clone())))
                .collect();
            Memory {
                objects: Mutex::new(objects),
                fail_page: None,
                written: Mutex::new(Vec::new()),
            }
        }
    }

    impl Resource for Memory {
        type Object = (String, u64);
        type Cursor = usize;
        type Error = String;

        async fn page(
            &self,
            from: Option<&usize>,
            limit: u32,
        ) -> Result<Page<(String, u64), usize>, String> {
            let start = from.copied().unwrap_or(0);
            if self.fail_page == Some(start) {
                return Err("the server went away".to_owned());
            }
            let objects = self.objects.lock().unwrap();
            let all: Vec<_> = objects.iter().map(|(n, (r, _))| (n.clone(), *r)).collect();
            let end = (start + limit as usize).min(all.len());
            Ok(Page {
                objects: all[start..end].to_vec(),
                next: (end < all.len()).then_some(end),
            })
        }

        async fn write_back(&self, object: &(String, u64)) -> Result<WriteBack, String> {
            let mut objects = self.objects.lock().unwrap();
            let (_, answers) = objects.get_mut(&object.0).ok_or("no such object")?;
            self.written.lock().unwrap().push(object.0.clone());
            Ok(if answers.is_empty() {
                WriteBack::Written
            } else {
                answers.remove(0)
            })
        }

        async fn read_again(
            &self,
            object: &(String, u64),
        ) -> Result<Option<(String, u64)>, String> {
            let objects = self.objects.lock().unwrap();
            Ok(objects.get(&object.0).map(|(r, _)| (object.0.clone(), *r)))
        }

        fn place(&self, object: &(String, u64)) -> Place {
            Place {
                namespace: None,
                name: object.0.clone(),
            }
        }

        fn revision(&self, object: &(String, u64)) -> Option<u64> {
            Some(object.1)
        }
    }

    fn plan(on_conflict: OnConflict, on_refusal: OnRefusal) -> Plan<usize> {
        Plan {
            page_size: 2,
            parallel: 3,
            on_conflict,
            on_refusal,
            written_by: None,
            resume_from: None,
        }
    }

    #[tokio::test]
    async fn a_retrying_run_writes_a_conflicting_object_again_and_records_refusals() {
        let memory = Memory::new(&[
            ("a", 1, vec![]),
            ("b", 2, vec![WriteBack::Conflict, WriteBack::Written]),
            ("c", 3, vec![WriteBack::Refused("is invalid".to_owned())]),
            ("d", 4, vec![WriteBack::Gone]),
            ("e", 5, vec![WriteBack::Conflict; 3]),
        ]);
        let plan = plan(OnConflict::Retry { most: 3 }, OnRefusal::Record);
        let done = Mutex::new(Vec::new());
        let summary = run(&memory, &plan, Summary::default(), &|n| {
            done.lock().unwrap().push(n);
        })
        .await
        .unwrap();
        assert_eq!(summary.listed, 5);
        assert_eq!(summary.migrated, 2);
        assert_eq!(summary.deleted_meanwhile, 1);
        assert_eq!(summary.conflicts_retried, 1 + 3);
        let failed: Vec<(&str, &str)> = summary
            .failed
            .iter()
            .map(|f| (f.place.name.as_str(), f.reason.as_str()))
            .collect();
        assert!(failed.contains(&("c", "is invalid")));
        assert!(failed.contains(&("e", "still changing after 3 conflicts; run again")));
        assert_eq!(done.into_inner().unwrap().last(), Some(&5));
    }

    #[tokio::test]
    async fn a_skipping_run_leaves_newer_and_conflicting_objects_and_stops_at_a_refusal() {
        let memory = Memory::new(&[
            ("a", 1, vec![WriteBack::Conflict]),
            ("b", 9, vec![WriteBack::Refused("never written".to_owned())]),
            ("c", 3, vec![]),
            ("d", 4, vec![WriteBack::Refused("is invalid".to_owned())]),
        ]);
        let mut plan = plan(OnConflict::Skip, OnRefusal::Stop);
        plan.written_by = Some(5);
        plan.parallel = 1;
        let halted = run(&memory, &plan, Summary::default(), &|_| {})
            .await
            .unwrap_err();
        assert_eq!(
            halted.summary.newer, 1,
            "b was written after the checkpoint"
        );
        assert_eq!(halted.summary.written_meanwhile, 1);
        assert_eq!(halted.summary.migrated, 1);
        assert_eq!(halted.resume_from, Some(2), "the second page");
        match halted.why {
            Halt::Refused(failed) => assert_eq!(
                (failed.place.name.as_str(), failed.reason.as_str()),
                ("d", "is invalid")
            ),
            Halt::Error(error) => panic!("{error}"),
        }
    }

    #[tokio::test]
    async fn a_failed_page_halts_with_where_to_go_on_from() {
        let names = ["a", "b", "c", "d", "e"];
        let objects: Vec<(&str, u64, Vec<WriteBack>)> = names
            .iter()
            .zip(1..)
            .map(|(n, r)| (*n, r, vec![]))
            .collect();
        let mut memory = Memory::new(&objects);
        // The third page fails to read, while the second's last object is being written:
        // that write is dropped with the run, which goes on from the second page.
        memory.fail_page = Some(4);
        let mut plan = plan(OnConflict::Skip, OnRefusal::Stop);
        plan.parallel = 1;
        let halted = run(&memory, &plan, Summary::default(), &|_| {})
            .await
            .unwrap_err();
        assert_eq!(halted.summary.migrated, 3, "a, b and c");
        assert_eq!(halted.resume_from, Some(2));
        assert!(matches!(halted.why, Halt::Error(ref e) if e == "the server went away"));
        memory.fail_page = None;
        let resumed = Plan {
            resume_from: halted.resume_from,
            ..plan
        };
        let summary = run(&memory, &resumed, halted.summary, &|_| {})
            .await
            .unwrap();
        // c is listed and written twice: the run goes on from its page.
        assert_eq!((summary.listed, summary.migrated), (4 + 3, 3 + 3));
    }

    #[tokio::test]
    async fn more_writes_in_flight_than_a_page_holds_write_each_object_once() {
        let objects: Vec<(String, u64)> = (0..50).map(|i| (format!("o{i:02}"), i)).collect();
        let borrowed: Vec<(&str, u64, Vec<WriteBack>)> = objects
            .iter()
            .map(|(n, r)| (n.as_str(), *r, vec![]))
            .collect();
        let memory = Memory::new(&borrowed);
        let mut plan = plan(OnConflict::Skip, OnRefusal::Stop);
        plan.parallel = 7;
        let done = Mutex::new(Vec::new());
        let summary = run(&memory, &plan, Summary::default(), &|n| {
            done.lock().unwrap().push(n);
        })
        .await
        .unwrap();
        assert_eq!((summary.listed, summary.migrated), (50, 50));
        assert_eq!(done.into_inner().unwrap(), (1..=50).collect::<Vec<u64>>());
        let mut written = memory.written.into_inner().unwrap();
        written.sort();
        assert_eq!(
            written,
            objects.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>()
        );
    }
}
