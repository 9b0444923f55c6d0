//! Watches as kube-apiserver streams them: one `WatchEvent` per line (`ADDED`, `MODIFIED`,
//! `DELETED`, `BOOKMARK`, `ERROR`), the current objects first when no resourceVersion (or `0`)
//! is given, selectors applied with objects that stop matching sent as `DELETED`, ended after
//! `timeoutSeconds`, and ended (never buffered without bound) when the client stops reading:
//! what is written ahead of a client is bounded in events and in bytes, and once that is full
//! for the stalled-watch limit, the events queued are dropped and an `ERROR` event (410
//! `Expired`) is its last, so a client that reads again learns that it missed events and lists
//! anew.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use apfkit_runtime::Object;
use axum::body::{Body, Bytes};
use axum::response::Response;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::time::Instant;

use super::compression;
use super::list::{not_ahead, selected};
use super::media::Format;
use super::query::{Query, ReadAt};
use super::request::Target;
use super::response::{Transform, bookmark_transformed, respond, transformed};
use super::server::ApiServer;
use super::written::Writing;
use crate::error::ApiError;
use crate::store::Revision;
use crate::store::Served;
use crate::store::{Change, ListRequest};

/// Events written ahead of a client that reads slowly.
const FRAMES_AHEAD: usize = 64;
/// Bytes of events written ahead of a client that reads slowly, in KiB (the unit of the
/// budget's permits): 1 MiB. An event larger than that is written alone.
const KIB_AHEAD: u32 = 1024;
/// How often a watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);
/// How long before its end a watch that allows bookmarks gets one more, so that its client
/// resumes from the newest revision (kube-apiserver's `cacheWatcher.nextBookmarkTime`: "right
/// before the watcher timeout - for now we simply set it 2s before the deadline").
const BOOKMARK_BEFORE_END: Duration = Duration::from_secs(2);
/// kube-apiserver's `--min-request-timeout`: watches without `timeoutSeconds` end after
/// between this and twice this.
const MIN_REQUEST_TIMEOUT: Duration = Duration::from_secs(1800);

/// Starts a watch and answers its stream; a WatchList (`sendInitialEvents=true` with
/// bookmarks) whose client accepts `gzip` is answered gzipped, one gzip member for each
/// batch of events written at once (1.37's `WatchListCompression`, `perFlushGzipWriter`).
pub(super) async fn watch<H>(
    server: Arc<ApiServer<H>>,
    target: &Target<H>,
    query: Query,
    format: Format,
    transform: Option<Transform>,
    gzip: bool,
) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    let (served, version) = (target.served.clone(), target.version);
    let gzip = gzip && query.send_initial_events == Some(true) && query.bookmarks;
    let target_namespace = target.namespace.clone();
    let namespace = target.namespace.clone();
    let (frames, receiver) = mpsc::channel::<Queued>(FRAMES_AHEAD);
    let receiver = Arc::new(std::sync::Mutex::new(receiver));
    // Weak: the body dropping the queue is how the watch learns its client went away.
    let queued_frames = Arc::downgrade(&receiver);
    let (last_frame, last) = oneshot::channel::<Bytes>();
    let ahead = Arc::new(Semaphore::new(KIB_AHEAD as usize));
    tokio::spawn(async move {
        let _open = OpenWatch::count(&server.watches);
        let mut stream = Stream {
            frames,
            ahead,
            queued: Arc::clone(&server.watch_bytes),
            target: Target {
                served: served.clone(),
                version,
                namespace: target_namespace,
                name: None,
                status: false,
                scale: false,
                finalize: false,
                created: None,
            },
            format,
            transform,
            headers_sent: false,
            scheme: server.objects.wire(),
            stalled: server.stalled_watch,
            last: Revision(0),
        };
        match stream
            .events(&server, &served, namespace.as_deref(), &query)
            .await
        {
            Ok(()) | Err(Stop::Client) => {}
            Err(Stop::Error(error)) => stream.error(&error).await,
            Err(Stop::Stalled) => {
                // The client may never read again, and the body is polled only as the
                // connection takes bytes: the events queued for it are dropped here, not
                // when it reads.
                if let Some(frames) = queued_frames.upgrade() {
                    drop_queued(&frames);
                }
                let _ = last_frame.send(stream.stalled_frame());
            }
        }
    });
    let body = Body::from_stream(WatchBody {
        frames: receiver,
        last: Some(last),
        ended: false,
        gzip,
    });
    let content_type = match format {
        Format::Protobuf => "application/vnd.kubernetes.protobuf;stream=watch",
        other => other.media_type(),
    };
    let mut response = respond(200, content_type, body);
    if gzip {
        let headers = response.headers_mut();
        headers.insert(
            axum::http::header::CONTENT_ENCODING,
            axum::http::HeaderValue::from_static("gzip"),
        );
        headers.append(
            axum::http::header::VARY,
            axum::http::HeaderValue::from_static("Accept-Encoding"),
        );
    }
    response
}

/// Closes a watch's queue and drops the events in it (their budget and count with them).
fn drop_queued(frames: &std::sync::Mutex<mpsc::Receiver<Queued>>) {
    let mut frames = frames
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    frames.close();
    while frames.try_recv().is_ok() {}
}

/// Counts a watch as open while it lives.
struct OpenWatch<'a>(&'a AtomicUsize);

impl<'a> OpenWatch<'a> {
    fn count(open: &'a AtomicUsize) -> Self {
        open.fetch_add(1, Ordering::Relaxed);
        OpenWatch(open)
    }
}

impl Drop for OpenWatch<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One event of the body stream, which never fails once started.
type Frame = Result<Bytes, std::convert::Infallible>;

/// An event written ahead of the client, holding its share of the watch's byte budget and
/// its count in the server's total until the body hands it on (or drops it).
struct Queued {
    frame: Bytes,
    _budget: OwnedSemaphorePermit,
    _counted: Counted,
}

/// Bytes counted in a total while this lives.
struct Counted {
    total: Arc<AtomicUsize>,
    bytes: usize,
}

impl Counted {
    fn new(total: &Arc<AtomicUsize>, bytes: usize) -> Self {
        total.fetch_add(bytes, Ordering::Relaxed);
        Counted {
            total: Arc::clone(total),
            bytes,
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

struct Stream<'s, H: 'static> {
    frames: mpsc::Sender<Queued>,
    /// The byte budget of the events written ahead, in KiB.
    ahead: Arc<Semaphore>,
    /// The server's count of bytes written ahead of every watch's client.
    queued: Arc<AtomicUsize>,
    /// The resource and version watched.
    target: Target<H>,
    format: Format,
    /// Events as one-row tables (with what each row carries of its object) or as
    /// `PartialObjectMetadata`.
    transform: Option<Transform>,
    /// Whether a table's column definitions went with an event already: kube's watch
    /// encoder gives them to the first event alone (`NoHeaders` after it).
    headers_sent: bool,
    /// How long a written event may stay unread.
    stalled: Duration,
    /// The scheme, which writes bookmarks in protobuf.
    scheme: &'s apfkit_runtime::scheme::Scheme<()>,
    /// The newest revision sent.
    last: Revision,
}

/// Why a watch stream stops early.
enum Stop {
    /// The client went away.
    Client,
    /// The client read nothing for the stalled-watch limit while events waited for it.
    Stalled,
    /// An error to tell the client.
    Error(ApiError),
}

impl From<ApiError> for Stop {
    fn from(error: ApiError) -> Self {
        Stop::Error(error)
    }
}

impl<H: Object + Clone + Send + Sync + 'static> Stream<'_, H> {
    async fn events(
        &mut self,
        server: &ApiServer<H>,
        served: &Served<H>,
        namespace: Option<&str>,
        query: &Query,
    ) -> Result<(), Stop> {
        let timeout = query.timeout_seconds.map_or_else(
            || MIN_REQUEST_TIMEOUT + jitter(MIN_REQUEST_TIMEOUT),
            Duration::from_secs,
        );
        let started = Instant::now();
        // Where the watch starts, as kube-apiserver's watch cache decides
        // (k8s.io/apiserver/pkg/storage/testing/watcher_tests.go, RunWatchSemantics).
        let initial_events = matches!(
            (query.send_initial_events, query.read_at),
            (Some(true), _) | (None, ReadAt::Newest | ReadAt::Any)
        );
        let after = match (query.send_initial_events, query.read_at) {
            // WatchList: the objects as they are, then (with bookmarks) the bookmark that
            // marks their end, at the revision they were read at.
            (Some(true), read_at) => {
                if let ReadAt::NotOlderThan(wanted) | ReadAt::Exact(wanted) = read_at {
                    not_ahead(server, wanted).await?;
                }
                let revision = self.initial(server, served, namespace, query).await?;
                // The end bookmark carries the revision the objects were read at.
                self.last = revision;
                if query.bookmarks {
                    self.bookmark(true).await?;
                }
                revision
            }
            (Some(false), ReadAt::Newest | ReadAt::Any) => {
                server.objects.current_revision().await?
            }
            (None, ReadAt::Newest | ReadAt::Any) => {
                self.initial(server, served, namespace, query).await?
            }
            (_, ReadAt::NotOlderThan(revision) | ReadAt::Exact(revision)) => revision,
        };
        self.last = after;
        let mut watch = server.objects.watch(served, namespace, after).await?;
        // kube-apiserver's timeout starts once its watch is open (`WatchServer` starts the
        // timer as it serves), so a slow start does not eat the events due at once; initial
        // events flow through that watch, under the timer, as they are sent here before it.
        let deadline = if initial_events {
            started
        } else {
            Instant::now()
        } + timeout;
        let mut bookmark =
            tokio::time::interval_at(Instant::now() + BOOKMARK_EVERY, BOOKMARK_EVERY);
        // None when the watch is too short for it, as upstream.
        let mut before_end = deadline
            .checked_sub(BOOKMARK_BEFORE_END)
            .filter(|at| *at > Instant::now());
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return Ok(()),
                () = self.frames.closed() => return Err(Stop::Client),
                _ = bookmark.tick(), if query.bookmarks => self.bookmark(false).await?,
                () = sleep_until_some(before_end), if query.bookmarks && before_end.is_some() => {
                    before_end = None;
                    self.bookmark(false).await?;
                }
                event = watch.next() => match event {
                    None => return Ok(()),
                    Some(Err(error)) => {
                        return Err(Stop::Error(error));
                    }
                    Some(Ok(event)) => {
                        self.last = event.revision();
                        if self.transform.is_none() && !query.has_selectors() {
                            let frame = server.written.get_or_write(
                                event.key(),
                                event.revision(),
                                (
                                    self.target.served.codec_id(self.target.version),
                                    self.format,
                                    Writing::WatchEvent,
                                ),
                                || self.change_frame(server, served, &event),
                            )?;
                            self.send_frame(frame).await?;
                        } else {
                            let change = server.objects.change(served, &event)?;
                            let previous = if query.has_selectors() {
                                server.objects.previous(served, &event)?
                            } else {
                                None
                            };
                            self.send_change(change, previous, query).await?;
                        }
                    }
                },
            }
        }
    }

    /// Sends the current objects as `ADDED` and answers the revision they were read at.
    async fn initial(
        &mut self,
        server: &ApiServer<H>,
        served: &Served<H>,
        namespace: Option<&str>,
        query: &Query,
    ) -> Result<Revision, Stop> {
        const PAGE: usize = 500;
        let mut start = Vec::new();
        let mut revision = None;
        loop {
            let page = server
                .objects
                .list(
                    served,
                    &ListRequest {
                        namespace,
                        start: start.clone(),
                        limit: PAGE,
                        revision,
                        count: false,
                    },
                )
                .await?;
            revision = Some(page.revision);
            for object in page.items {
                if selected(query, self.target.codec(), &object) {
                    self.send("ADDED", object).await?;
                }
            }
            match page.next {
                Some(next) => start = next,
                None => return Ok(page.revision),
            }
        }
    }

    /// Sends a change as kube-apiserver's watch cache does (`convertToWatchEvent`,
    /// k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go): the object after the write and
    /// the one before it are each held to the selectors; both pass: `MODIFIED`; only the new
    /// one (or a create): `ADDED`; only the old one: `DELETED`, the old object at the write's
    /// revision; a delete: `DELETED` when the deleted object passes. Without selectors that is
    /// `ADDED` for a create, `MODIFIED` for an update.
    async fn send_change(
        &mut self,
        change: Change<H>,
        previous: Option<H>,
        query: &Query,
    ) -> Result<(), Stop> {
        match change {
            Change::Put { object, created } => {
                let passed = if query.has_selectors() {
                    previous
                        .as_ref()
                        .is_some_and(|old| selected(query, self.target.codec(), old))
                } else {
                    !created
                };
                match (
                    selected(query, self.target.codec(), &object),
                    passed,
                    previous,
                ) {
                    (true, true, _) => self.send("MODIFIED", object).await,
                    (true, false, _) => self.send("ADDED", object).await,
                    (false, true, Some(old)) => self.send("DELETED", old).await,
                    (false, _, _) => Ok(()),
                }
            }
            Change::Deleted(object) if selected(query, self.target.codec(), &object) => {
                self.send("DELETED", object).await
            }
            Change::Deleted(_) => Ok(()),
        }
    }

    async fn send(&mut self, kind: &str, object: H) -> Result<(), Stop> {
        let object = match self.transform {
            Some(transform) => {
                let metadata = serde_json::json!({
                    "resourceVersion": object.metadata().resource_version,
                });
                let answer = transformed(&self.target, vec![object], transform, metadata, false)?;
                self.headed(answer)?
            }
            None => self
                .target
                .codec()
                .encode_to(object, self.format.encoding(), &mut Vec::new())
                .map_err(ApiError::internal)?,
        };
        self.frame(kind, &object).await
    }

    /// The frame of a change for a watch without selectors: `ADDED` for a write that created
    /// the object, `MODIFIED` for another, `DELETED` (what [`Stream::send_change`] sends
    /// when nothing is filtered).
    fn change_frame(
        &self,
        server: &ApiServer<H>,
        served: &Served<H>,
        event: &crate::store::Watched,
    ) -> Result<Bytes, ApiError> {
        let (kind, object) = match server.objects.change(served, event)? {
            Change::Put { object, created } => (if created { "ADDED" } else { "MODIFIED" }, object),
            Change::Deleted(object) => ("DELETED", object),
        };
        let object = self
            .target
            .codec()
            .encode_to(object, self.format.encoding(), &mut Vec::new())
            .map_err(ApiError::internal)?;
        Ok(Bytes::from(self.frame_bytes(kind, &object)))
    }

    /// Sends a `BOOKMARK` at the newest revision sent; `initial_events_end` annotates it
    /// `k8s.io/initial-events-end: "true"`, the end of a WatchList's initial objects, which
    /// client-go's reflector waits for.
    async fn bookmark(&mut self, initial_events_end: bool) -> Result<(), Stop> {
        let mut metadata = serde_json::json!({"resourceVersion": self.last.to_string()});
        if initial_events_end {
            metadata["annotations"] = serde_json::json!({"k8s.io/initial-events-end": "true"});
        }
        let object = serde_json::json!({
            "kind": self.target.codec().kind(),
            "apiVersion": self.target.codec().api_version(),
            "metadata": metadata,
        });
        let object = match (self.transform, self.format) {
            (Some(transform), _) => {
                self.headed(bookmark_transformed(&self.target, &object, transform))?
            }
            (None, Format::Protobuf) => self
                .scheme
                .encode_value(&object, apfkit_runtime::scheme::Encoding::Protobuf)
                .map_err(ApiError::internal)?,
            (None, _) => serde_json::to_vec(&object).map_err(ApiError::internal)?,
        };
        self.frame("BOOKMARK", &object).await
    }

    /// A transformed event's object written: a table without its column definitions
    /// (`null`) once an event has had them.
    fn headed(&mut self, mut answer: serde_json::Value) -> Result<Vec<u8>, ApiError> {
        if matches!(self.transform, Some(Transform::Table(_))) {
            if self.headers_sent {
                answer["columnDefinitions"] = serde_json::Value::Null;
            }
            self.headers_sent = true;
        }
        super::response::written(&answer, self.format)
    }

    /// Writes one event: `{"type":...,"object":...}` and a newline, or a protobuf frame.
    async fn frame(&mut self, kind: &str, object: &[u8]) -> Result<(), Stop> {
        let frame = self.frame_bytes(kind, object);
        self.send_frame(Bytes::from(frame)).await
    }

    /// One event's bytes in the watch's format.
    fn frame_bytes(&self, kind: &str, object: &[u8]) -> Vec<u8> {
        if self.format == Format::Protobuf {
            super::proto::watch_frame(kind, object)
        } else {
            let mut frame = Vec::with_capacity(object.len() + 32);
            frame.extend_from_slice(b"{\"type\":\"");
            frame.extend_from_slice(kind.as_bytes());
            frame.extend_from_slice(b"\",\"object\":");
            frame.extend_from_slice(object);
            frame.extend_from_slice(b"}\n");
            frame
        }
    }

    /// Hands a written event to the body, waiting at most the stalled-watch limit for room
    /// (in events and in bytes).
    async fn send_frame(&mut self, frame: Bytes) -> Result<(), Stop> {
        let kib = u32::try_from(frame.len().div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, KIB_AHEAD);
        let room = async {
            let budget = Arc::clone(&self.ahead)
                .acquire_many_owned(kib)
                .await
                .map_err(|_| Stop::Client)?;
            let queued = Queued {
                _counted: Counted::new(&self.queued, frame.len()),
                frame,
                _budget: budget,
            };
            self.frames.send(queued).await.map_err(|_| Stop::Client)
        };
        tokio::time::timeout(self.stalled, room)
            .await
            .unwrap_or(Err(Stop::Stalled))
    }

    /// Ends the watch with an `ERROR` event carrying a `Status`.
    async fn error(&mut self, error: &ApiError) {
        let _ = self.send_frame(Bytes::from(self.error_frame(error))).await;
    }

    /// The `ERROR` event of a watch whose client stopped reading: 410 `Expired`, which
    /// client-go's reflector answers by listing anew (kube-apiserver closes such a watch
    /// without an event; decision 171).
    fn stalled_frame(&self) -> Bytes {
        let error = ApiError::expired(format!(
            "the watch was ended: the client read nothing for {}s while events waited \
             (the last resourceVersion sent is {})",
            self.stalled.as_secs_f64(),
            self.last
        ));
        Bytes::from(self.error_frame(&error))
    }

    fn error_frame(&self, error: &ApiError) -> Vec<u8> {
        let status = match self.format {
            Format::Protobuf => super::proto::status(&error.message, error.reason, error.code),
            _ => serde_json::to_vec(&error.status()).unwrap_or_default(),
        };
        self.frame_bytes("ERROR", &status)
    }
}

/// The body of a watch: its frames as the client reads them, unless the watch was ended
/// because the client stopped reading; then the frames still queued are dropped and the
/// `ERROR` event the watch left is the last thing sent.
struct WatchBody {
    /// Shared with the watch, which drops what is queued when it ends a stalled client.
    frames: Arc<std::sync::Mutex<mpsc::Receiver<Queued>>>,
    /// The `ERROR` event of a stalled watch, until the watch ends another way.
    last: Option<oneshot::Receiver<Bytes>>,
    ended: bool,
    /// Each batch of events handed on at once as one gzip member.
    gzip: bool,
}

impl tokio_stream::Stream for WatchBody {
    type Item = Frame;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Frame>> {
        use std::task::Poll;
        if self.ended {
            return Poll::Ready(None);
        }
        if let Some(last) = self.last.as_mut() {
            match std::pin::Pin::new(last).poll(context) {
                Poll::Ready(Ok(frame)) => {
                    self.ended = true;
                    drop_queued(&self.frames);
                    let frame = if self.gzip {
                        compression::gzip_member(&frame, flate2::Compression::fast())
                    } else {
                        frame
                    };
                    return Poll::Ready(Some(Ok(frame)));
                }
                Poll::Ready(Err(_)) => self.last = None,
                Poll::Pending => {}
            }
        }
        // The event leaves the budget as it is handed on (its permit is dropped here).
        let gzip = self.gzip;
        let mut frames = self
            .frames
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let polled = frames.poll_recv(context);
        if !gzip {
            return polled.map(|queued| queued.map(|queued| Ok(queued.frame)));
        }
        // Gzipped: what is queued now goes as one member, as kube flushes once its events
        // channel is empty.
        polled.map(|queued| {
            queued.map(|first| {
                let mut batch = first.frame.to_vec();
                while let Ok(next) = frames.try_recv() {
                    batch.extend_from_slice(&next.frame);
                }
                Ok(compression::gzip_member(
                    &batch,
                    flate2::Compression::fast(),
                ))
            })
        })
    }
}

/// Sleeps until `at`, or for ever when there is none.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A pseudo-random duration below `limit`, from the clock (spreads watch ends as
/// kube-apiserver's random timeout does).
fn jitter(limit: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    Duration::from_secs(u64::from(nanos) % limit.as_secs().max(1))
}
