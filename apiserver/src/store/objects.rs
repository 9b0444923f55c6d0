//! Objects on top of a [`Backend`](crate::storage::Backend), as kube-apiserver's generic registry keeps them: a key per
//! object, bytes in the resource's storage version and encoding, `resourceVersion` from the mod
//! revision, and the metadata the server owns (uid, creationTimestamp, generation) set on
//! create and kept on update (`k8s.io/apiserver/pkg/registry/generic/registry/store.go`,
//! `k8s.io/apiserver/pkg/storage/etcd3/store.go`).

use apfkit_runtime::Object;
use apfkit_runtime::identity::split_api_version;
use apfkit_runtime::scheme::{Encoding, Limits, Scheme, UnknownFields, ValueEncodings};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use super::backend::SharedBackend;
use super::propagation::Propagation;
use super::resource::{Generation, Served, VersionCodec};
use super::stored::{Stored, Watch, Watched};
use crate::error::{ApiError, Subject};
use crate::storage::{Backend, Event, KeyValue, ListOptions, Revision, StoreError};

/// Objects of served kinds kept in a backend.
pub struct Objects<H: 'static> {
    /// The readers and writers of documents of no particular kind (request bodies, lists,
    /// watch events), with the API's own formats when it has them.
    wire: Scheme<()>,
    backend: SharedBackend,
    prefix: String,
    limits: Limits,
    decoded: std::sync::Mutex<Decoded<H>>,
}

/// Objects decoded from storage, by key, mod revision and the resource that decoded them: a
/// key written at a revision holds one value for good, so reading it again through the same
/// resource needs no second decode (kube-apiserver keeps decoded objects in its watch cache
/// for the same reason). A resource made anew (a CRD whose schema changed, with other
/// defaults) decodes again, as kube-apiserver defaults what it reads from storage with the
/// schema of the moment. Bounded in count and in the bytes of the stored values; the oldest
/// entry goes first.
struct Decoded<H> {
    entries: std::collections::HashMap<Vec<u8>, (Revision, usize, H, usize)>,
    order: std::collections::VecDeque<Vec<u8>>,
    bytes: usize,
}

/// Objects kept decoded.
const DECODED_OBJECTS: usize = 1024;
/// Stored bytes of the objects kept decoded (a decoded object takes a few times its stored
/// size).
const DECODED_BYTES: usize = 4 << 20;

impl<H: Clone> Decoded<H> {
    fn new() -> Self {
        Decoded {
            entries: std::collections::HashMap::new(),
            order: std::collections::VecDeque::new(),
            bytes: 0,
        }
    }

    /// The object `key` held at `revision`, as the resource `decoder` decoded it.
    fn get(&self, key: &[u8], revision: Revision, decoder: usize) -> Option<H> {
        self.entries
            .get(key)
            .filter(|(kept, by, _, _)| *kept == revision && *by == decoder)
            .map(|(_, _, object, _)| object.clone())
    }

    /// Keeps `object`, decoded by the resource `decoder` from `size` stored bytes, unless it
    /// alone is over the bound.
    fn insert(&mut self, key: &[u8], revision: Revision, decoder: usize, object: H, size: usize) {
        if size > DECODED_BYTES {
            return;
        }
        match self
            .entries
            .insert(key.to_vec(), (revision, decoder, object, size))
        {
            Some((_, _, _, replaced)) => self.bytes -= replaced,
            None => self.order.push_back(key.to_vec()),
        }
        self.bytes += size;
        while self.order.len() > DECODED_OBJECTS || self.bytes > DECODED_BYTES {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some((_, _, _, size)) = self.entries.remove(&oldest) {
                self.bytes -= size;
            }
        }
    }
}

impl<H: Object> Decoded<H> {
    /// The metadata alone of the object `key` held at `revision`, as the resource `decoder`
    /// decoded it.
    fn metadata(&self, key: &[u8], revision: Revision, decoder: usize) -> Option<ObjectMeta> {
        self.entries
            .get(key)
            .filter(|(kept, by, _, _)| *kept == revision && *by == decoder)
            .map(|(_, _, object, _)| object.metadata().clone())
    }
}

/// Where an object is: its namespace (for namespaced resources) and name.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// The namespace, `None` for cluster-scoped resources or a list across namespaces.
    pub namespace: Option<&'a str>,
    /// The name.
    pub name: &'a str,
}

/// A page of a list: of objects, or of stored values ([`Objects::list_stored`]).
#[derive(Debug)]
pub struct Listed<T> {
    /// The objects, each with its `resourceVersion`, or their stored values.
    pub items: Vec<T>,
    /// The revision the list was read at.
    pub revision: Revision,
    /// The key to continue from (relative to the listed prefix), if more remain.
    pub next: Option<Vec<u8>>,
    /// How many objects remain after this page, when more do.
    pub remaining: u64,
}

/// What an update writes, and where.
struct Update<'a, H: 'static> {
    served: &'a Served<H>,
    place: Place<'a>,
    api_version: &'a str,
    kind: UpdateKind,
    dry_run: bool,
}

/// What a list reads.
#[derive(Debug, Clone, Default)]
pub struct ListRequest<'a> {
    /// The namespace, `None` for all.
    pub namespace: Option<&'a str>,
    /// Where to start, relative to the listed prefix (a continue token's key).
    pub start: Vec<u8>,
    /// Items per page, 0 for all.
    pub limit: usize,
    /// The revision to read at, `None` for the newest.
    pub revision: Option<Revision>,
    /// Whether [`Listed::remaining`] is wanted (counting may read the rest of the range).
    pub count: bool,
}

/// A change seen by a watch.
#[derive(Debug)]
pub enum Change<H> {
    /// Created or updated; `created` when its create revision is its mod revision.
    Put {
        /// The object.
        object: H,
        /// Whether this write created it.
        created: bool,
    },
    /// Deleted: the last state, with the revision of the delete as its `resourceVersion`.
    Deleted(H),
}

/// What a write answers: the object stored, with its `resourceVersion`, and warnings for the
/// client.
#[derive(Debug)]
pub struct Written<H> {
    /// The object as stored.
    pub object: H,
    /// Warnings for the client (`Warning` headers).
    pub warnings: Vec<String>,
}

/// How a write to an existing object is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateKind {
    /// The object itself: the stored status is kept (when the resource has a status).
    Main,
    /// The `/status` subresource: only the status changes.
    Status,
    /// The `/finalize` subresource of Namespaces: everything but the status may change
    /// (`spec.finalizers` too), without the strategy's [`Strategy::prepare_for_update`](super::Strategy::prepare_for_update).
    Finalize,
}

impl UpdateKind {
    /// The subresource written, as managed fields record it.
    pub fn subresource(self) -> Option<&'static str> {
        match self {
            UpdateKind::Main => None,
            UpdateKind::Status => Some("status"),
            UpdateKind::Finalize => Some("finalize"),
        }
    }
}

/// The preconditions of a delete (`DeleteOptions.preconditions`), or of an update (the uid
/// of the object given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The uid the object must have.
    pub uid: Option<String>,
    /// The resourceVersion the object must have.
    pub resource_version: Option<String>,
}

impl<H> Objects<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// Objects kept in `backend` under `prefix` (kube-apiserver's is `/registry`), each
    /// stored value read within `limits`; `encodings` are the API's own (a generated scheme's
    /// [`Scheme::encodings`]), which let the server speak Kubernetes protobuf. Each resource's
    /// [`Strategy`](super::Strategy) checks its objects before they are written. A backend
    /// that others use too is shared as an `Arc` (which is a [`Backend`] as well).
    pub fn new(
        encodings: Option<&'static ValueEncodings>,
        backend: impl Backend + 'static,
        prefix: &str,
        limits: Limits,
    ) -> Self {
        let wire = match encodings {
            Some(encodings) => Scheme::with_encodings(&[], encodings),
            None => Scheme::new(&[]),
        };
        Objects {
            wire,
            backend: std::sync::Arc::new(backend),
            prefix: prefix.trim_end_matches('/').to_owned(),
            limits,
            decoded: std::sync::Mutex::new(Decoded::new()),
        }
    }

    /// The readers and writers of documents of no particular kind.
    pub fn wire(&self) -> &Scheme<()> {
        &self.wire
    }

    /// The key prefix of a resource's objects, in a namespace or all: ends with `/`.
    pub fn prefix_of(&self, served: &Served<H>, namespace: Option<&str>) -> Vec<u8> {
        let mut key = format!("{}/{}/", self.prefix, served.config.key_path);
        if let Some(namespace) = namespace.filter(|_| served.config.namespaced) {
            key.push_str(namespace);
            key.push('/');
        }
        key.into_bytes()
    }

    /// The storage key of an object, as text (for messages that quote it).
    pub(crate) fn key_text(&self, served: &Served<H>, place: Place<'_>) -> String {
        String::from_utf8_lossy(&self.key_of(served, place)).into_owned()
    }

    fn key_of(&self, served: &Served<H>, place: Place<'_>) -> Vec<u8> {
        let mut key = self.prefix_of(served, place.namespace);
        key.extend_from_slice(place.name.as_bytes());
        key
    }

    /// Decodes a stored value into the hub, with its `resourceVersion`, and keeps it decoded.
    fn decode(&self, served: &Served<H>, kv: &KeyValue, revision: Revision) -> Result<H, ApiError> {
        self.decode_keeping(served, kv, revision, true)
    }

    /// Decodes a stored value into the hub, with its `resourceVersion`: the decoded object
    /// kept for its key and mod revision when there is one, else decoded and, if `keep`,
    /// kept. Lists do not keep what they decode: a long one would push out every object that
    /// point reads come back to, and its own objects would push out each other.
    fn decode_keeping(
        &self,
        served: &Served<H>,
        kv: &KeyValue,
        revision: Revision,
        keep: bool,
    ) -> Result<H, ApiError> {
        self.decode_or_corrupt(served, kv, revision, keep)
            .map_err(|corrupt| ApiError::internal(corrupt.storage_error()))
    }

    /// [`Objects::decode_keeping`], a value that does not decode answered as [`Corrupt`].
    fn decode_or_corrupt(
        &self,
        served: &Served<H>,
        kv: &KeyValue,
        revision: Revision,
        keep: bool,
    ) -> Result<H, Corrupt> {
        let kept = self
            .decoded
            .lock()
            .ok()
            .and_then(|decoded| decoded.get(&kv.key, kv.mod_revision, served.serial()));
        let mut object = match kept {
            Some(object) => object,
            None => {
                let object = self
                    .read_stored(served, kv)
                    .map_err(|why| Corrupt::new(kv, revision, why))?;
                if keep && let Ok(mut decoded) = self.decoded.lock() {
                    let size = kv.value.len();
                    decoded.insert(
                        &kv.key,
                        kv.mod_revision,
                        served.serial(),
                        object.clone(),
                        size,
                    );
                }
                object
            }
        };
        object.metadata_mut().resource_version = Some(revision.to_string());
        Ok(object)
    }

    /// A stored value decoded into the hub, or why it does not decode.
    fn read_stored(&self, served: &Served<H>, kv: &KeyValue) -> Result<H, String> {
        let object = served.storage.decode_stored(&kv.value, &self.limits)?;
        if object.kind() != served.config.kind {
            return Err(format!(
                "a {} where {} are kept",
                object.kind(),
                served.plural
            ));
        }
        Ok(object)
    }

    /// The objects of a page read by [`Objects::list_stored`], decoded; those whose values do
    /// not decode make the list a `StorageReadError` naming each (at most 100, then the
    /// list stops), as 1.37's storage aggregates them.
    ///
    /// # Errors
    ///
    /// The aggregated error, when any value does not decode.
    pub fn decode_page(&self, served: &Served<H>, page: &[Stored]) -> Result<Vec<H>, ApiError> {
        Self::read_page(served, page, |kv| {
            self.decode_or_corrupt(served, kv, kv.mod_revision, false)
        })
    }

    /// What `read` makes of each value of a page, the values it cannot read gathered into
    /// the list's error as [`Objects::decode_page`] says.
    fn read_page<T>(
        served: &Served<H>,
        page: &[Stored],
        read: impl Fn(&KeyValue) -> Result<T, Corrupt>,
    ) -> Result<Vec<T>, ApiError> {
        let mut items = Vec::with_capacity(page.len());
        let mut unreadable = Unreadable::default();
        for stored in page {
            match read(&stored.0) {
                Ok(item) => items.push(item),
                Err(corrupt) if unreadable.note(&corrupt) => break,
                Err(_) => {}
            }
        }
        unreadable.or(&Self::subject(served, ""), items)
    }

    /// Encodes an object for storage, without its `resourceVersion`.
    fn encode(&self, served: &Served<H>, object: &H) -> Result<Vec<u8>, ApiError> {
        let mut object = object.clone();
        object.metadata_mut().resource_version = None;
        let encoding = Encoding::from(served.config.storage_encoding);
        let mut bytes = served
            .storage
            .encode_to(object, encoding, &mut Vec::new())
            .map_err(ApiError::internal)?;
        if encoding == Encoding::Json {
            bytes.push(b'\n');
        }
        Ok(bytes)
    }

    pub(crate) fn subject(served: &Served<H>, name: &str) -> Subject {
        Subject {
            group: served.config.group.clone(),
            kind: served.plural.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The kind's, the metadata's and the version's checks of an object about to be
    /// written: `422 Invalid` with their causes, or the version's warnings.
    fn check(
        &self,
        served: &Served<H>,
        object: &H,
        old: Option<&H>,
        api_version: &str,
    ) -> Result<Vec<String>, ApiError> {
        let mut causes = served.strategy().validate(object, old, api_version);
        // `ValidateObjectMeta`'s labels, annotations and finalizers follow its name and
        // namespace, which a kind's strategy checks first.
        let after_name = causes
            .iter()
            .take_while(|c| c.field.starts_with("metadata."))
            .count();
        causes.splice(
            after_name..after_name,
            super::metadata::causes(object.metadata()),
        );
        let (_, version) = split_api_version(api_version);
        let mut warnings = Vec::new();
        if let Some(codec) = served.version(version) {
            let validation = codec.validate(object, old);
            causes.extend(validation.causes);
            warnings = validation.warnings;
        }
        if causes.is_empty() {
            return Ok(warnings);
        }
        // `NewInvalid` names the kind of the object the strategy checked: the kind stored
        // (an events.k8s.io Event is checked as the core/v1 Event it is kept as).
        let subject = Subject {
            group: served.storage.group().to_owned(),
            kind: served.config.kind.clone(),
            name: object.name().to_owned(),
        };
        Err(ApiError::invalid(&subject, causes))
    }

    /// The stored value of a key; 404 when there is none.
    async fn stored(&self, key: &[u8], subject: &Subject) -> Result<KeyValue, ApiError> {
        self.backend
            .get(key)
            .await
            .map_err(|e| ApiError::from_store(e, subject))?
            .ok_or_else(|| ApiError::not_found(subject))
    }

    /// Reads one object.
    ///
    /// # Errors
    ///
    /// 404 when there is none; storage errors.
    pub async fn get(&self, served: &Served<H>, place: Place<'_>) -> Result<H, ApiError> {
        let kv = self.get_stored(served, place).await?;
        self.decode_kept(served, &kv)
    }

    /// Reads one object as it is stored, to decode with [`Objects::decode_kept`] only when
    /// it is needed (a server that keeps what it wrote of this revision does not).
    ///
    /// # Errors
    ///
    /// As [`Objects::get`], but for decoding.
    pub async fn get_stored(
        &self,
        served: &Served<H>,
        place: Place<'_>,
    ) -> Result<Stored, ApiError> {
        let subject = Self::subject(served, place.name);
        Ok(Stored(
            self.stored(&self.key_of(served, place), &subject).await?,
        ))
    }

    /// An object read by [`Objects::get_stored`] as it reads in `codec`'s version
    /// ([`VersionCodec::read_as`]).
    ///
    /// # Errors
    ///
    /// As [`Objects::decode_kept`]; an object that cannot be read in the version is a
    /// corrupt object, a 500 quoting the storage's error about its key as kube's `Get` names
    /// it (without the storage's prefix).
    pub fn decode_as(
        &self,
        served: &Served<H>,
        stored: &Stored,
        codec: &dyn VersionCodec<H>,
    ) -> Result<H, ApiError> {
        let mut object = self.decode_kept(served, stored)?;
        codec.read_as(&mut object).map_err(|why| {
            let key = String::from_utf8_lossy(&stored.0.key);
            let corrupt = Corrupt {
                key: key.strip_prefix(&self.prefix).unwrap_or(&key).to_owned(),
                revision: stored.revision(),
                why,
            };
            ApiError::internal(corrupt.storage_error())
        })?;
        Ok(object)
    }

    /// A list's objects as they read in `codec`'s version ([`VersionCodec::read_as`]).
    ///
    /// # Errors
    ///
    /// The list's `StorageReadError` naming each object that cannot be read in the version
    /// (at most 100), as for values that do not decode.
    pub fn read_page_as(
        &self,
        served: &Served<H>,
        objects: Vec<H>,
        codec: &dyn VersionCodec<H>,
    ) -> Result<Vec<H>, ApiError> {
        let mut unreadable = Unreadable::default();
        let mut read = Vec::with_capacity(objects.len());
        for mut object in objects {
            match codec.read_as(&mut object) {
                Ok(()) => read.push(object),
                Err(why) => {
                    let meta = object.metadata();
                    let place = Place {
                        namespace: meta.namespace.as_deref(),
                        name: meta.name.as_deref().unwrap_or_default(),
                    };
                    let revision = meta
                        .resource_version
                        .as_deref()
                        .and_then(|v| v.parse().ok())
                        .map(Revision)
                        .unwrap_or_default();
                    let key = self.key_text(served, place);
                    if unreadable.note(&Corrupt { key, revision, why }) {
                        break;
                    }
                }
            }
        }
        unreadable.or(&Self::subject(served, ""), read)
    }

    /// An object read by [`Objects::get_stored`], with its `resourceVersion`; kept decoded
    /// for the next reads of the same revision.
    ///
    /// # Errors
    ///
    /// A stored value that does not decode as the resource's kind (500).
    pub fn decode_kept(&self, served: &Served<H>, stored: &Stored) -> Result<H, ApiError> {
        self.decode(served, &stored.0, stored.0.mod_revision)
    }

    /// Reads a page of a resource's objects.
    ///
    /// # Errors
    ///
    /// A compacted revision (410) or one ahead of the store; storage errors.
    pub async fn list(
        &self,
        served: &Served<H>,
        request: &ListRequest<'_>,
    ) -> Result<Listed<H>, ApiError> {
        let page = self.list_stored(served, request).await?;
        let items = self.decode_page(served, &page.items)?;
        Ok(Listed {
            items,
            revision: page.revision,
            next: page.next,
            remaining: page.remaining,
        })
    }

    /// Reads a page of at most `request.limit` objects that `keep` keeps, reading on past the
    /// others until the page is full or the range ends, as kube-apiserver's storage fills a
    /// filtered page (k8s.io/apiserver/pkg/storage/etcd3/store.go, `GetList`): each read
    /// asks for twice the keys of the one before, up to 10,000, all at the first read's
    /// revision. `next` is just after the last key read (that key and a zero byte, as
    /// upstream's continue keys are), so a continue token skips nothing a later page would
    /// keep; `remaining` is counted (when asked) only for a page read at
    /// once, which is every page `keep` keeps all of.
    ///
    /// # Errors
    ///
    /// As [`Objects::list`].
    pub async fn list_matching(
        &self,
        served: &Served<H>,
        request: &ListRequest<'_>,
        keep: impl Fn(&H) -> bool,
    ) -> Result<Listed<H>, ApiError> {
        /// kube-apiserver's `maxLimit`: the most keys one read of a filtered list asks for.
        const MOST_READ_AT_ONCE: usize = 10_000;
        let prefix_len = self.prefix_of(served, request.namespace).len();
        let mut read = ListRequest {
            namespace: request.namespace,
            start: request.start.clone(),
            limit: request.limit,
            revision: request.revision,
            count: request.count,
        };
        let mut items = Vec::new();
        // Values that do not decode are gathered, as `decode_page` gathers them, and make
        // whatever the list would answer its `StorageReadError`.
        let mut unreadable = Unreadable::default();
        let subject = Self::subject(served, "");
        let mut last_read: Option<Vec<u8>> = None;
        loop {
            let page = self.list_stored(served, &read).await?;
            for stored in &page.items {
                if request.limit != 0 && items.len() == request.limit {
                    // Full before this key: the next page starts after the last one read.
                    return unreadable.or(
                        &subject,
                        Listed {
                            items,
                            revision: page.revision,
                            next: last_read.map(|key| after(&key[prefix_len.min(key.len())..])),
                            remaining: 0,
                        },
                    );
                }
                last_read = Some(stored.key().to_vec());
                match self.decode_or_corrupt(served, &stored.0, stored.0.mod_revision, false) {
                    Ok(object) if keep(&object) => items.push(object),
                    Ok(_) => {}
                    Err(corrupt) if unreadable.note(&corrupt) => {
                        return Err(unreadable.error(&subject));
                    }
                    Err(_) => {}
                }
            }
            match page.next {
                Some(next) if items.len() < request.limit => {
                    read.start = next;
                    read.revision = Some(page.revision);
                    read.limit = read.limit.saturating_mul(2).min(MOST_READ_AT_ONCE);
                    read.count = false;
                }
                next => {
                    return unreadable.or(
                        &subject,
                        Listed {
                            items,
                            revision: page.revision,
                            remaining: if next.is_some() { page.remaining } else { 0 },
                            next,
                        },
                    );
                }
            }
        }
    }

    /// Reads a page of a resource's objects as they are stored, to decode each with
    /// [`Objects::decode_listed`] where it is used (a streamed list decodes each object just
    /// before it writes it, on the same thread).
    ///
    /// # Errors
    ///
    /// As [`Objects::list`], but for decoding.
    pub async fn list_stored(
        &self,
        served: &Served<H>,
        request: &ListRequest<'_>,
    ) -> Result<Listed<Stored>, ApiError> {
        let prefix = self.prefix_of(served, request.namespace);
        let mut start = prefix.clone();
        start.extend_from_slice(&request.start);
        let page = self
            .backend
            .list(&ListOptions {
                prefix: prefix.clone(),
                start,
                limit: request.limit,
                revision: request.revision,
                count: request.count,
            })
            .await
            .map_err(|e| ApiError::from_store(e, &Self::subject(served, "")))?;
        // kube-apiserver's storage resumes just after the last key it returned
        // (etcd3/store.go `GetList`: `string(lastKey)+"\x00"`), and its continue tokens say so.
        let relative = |key: &[u8]| key.get(prefix.len()..).unwrap_or_default().to_vec();
        let next = match (page.next, page.items.last()) {
            (Some(_), Some(last)) => Some(after(&relative(&last.key))),
            (next, _) => next.map(|key| relative(&key)),
        };
        Ok(Listed {
            items: page.items.into_iter().map(Stored).collect(),
            revision: page.revision,
            next,
            remaining: page.remaining,
        })
    }

    /// An object of a page read by [`Objects::list_stored`], with its `resourceVersion`.
    ///
    /// # Errors
    ///
    /// A stored value that does not decode as the resource's kind (500).
    pub fn decode_listed(&self, served: &Served<H>, stored: &Stored) -> Result<H, ApiError> {
        self.decode_keeping(served, &stored.0, stored.0.mod_revision, false)
    }

    /// Stores a new object: its name from `generateName` when it has none, uid,
    /// creationTimestamp and generation 1 set, status cleared (resources with a status), then
    /// validated. With `dry_run` nothing is written.
    ///
    /// # Errors
    ///
    /// 400 for a `resourceVersion` given, 422 for an invalid object, 409 when the name is
    /// taken; storage errors.
    pub async fn create(
        &self,
        served: &Served<H>,
        namespace: Option<&str>,
        object: H,
        api_version: &str,
        dry_run: bool,
    ) -> Result<Written<H>, ApiError> {
        let prepared = self.prepare_create(served, namespace, object, api_version)?;
        self.insert(served, namespace, prepared, dry_run).await
    }

    /// The first half of [`Objects::create`]: the new object made ready and validated as
    /// kube-apiserver's `rest.BeforeCreate` does it, not yet stored (the checks a handler makes
    /// between the two, such as the authorization of a create an update turned into, come
    /// after validation, as in the generic store's `Create`).
    pub(crate) fn prepare_create(
        &self,
        served: &Served<H>,
        namespace: Option<&str>,
        mut object: H,
        api_version: &str,
    ) -> Result<Written<H>, ApiError> {
        let metadata = object.metadata_mut();
        if metadata
            .resource_version
            .as_deref()
            .is_some_and(|rv| !rv.is_empty())
        {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        if metadata.name.as_deref().unwrap_or_default().is_empty()
            && let Some(base) = metadata.generate_name.as_deref().filter(|b| !b.is_empty())
        {
            metadata.name = Some(generated_name(base));
        }
        metadata.namespace = namespace
            .filter(|_| served.config.namespaced)
            .map(str::to_owned);
        metadata.uid = Some(uuid::Uuid::new_v4().to_string());
        metadata.creation_timestamp = Some(now());
        // A kind that tracks no generation keeps what was sent, as its strategy leaves it.
        if served.config.generation != Generation::Untracked {
            metadata.generation = Some(1);
        }
        metadata.resource_version = None;
        metadata.deletion_timestamp = None;
        metadata.deletion_grace_period_seconds = None;
        let mut value = working_value(served, api_version, &object)?;
        if served.config.status
            && let Some(map) = value.as_object_mut()
        {
            map.remove("status");
        }
        served.strategy().prepare_for_create(&mut value);
        object = hub_of_working_value(served, api_version, &value)?;
        let mut warnings = self.check(served, &object, None, api_version)?;
        warnings.extend(served.strategy().warnings(&value, None));
        let object = as_stored(served, object)?;
        Ok(Written { object, warnings })
    }

    /// The second half of [`Objects::create`]: the object [`Objects::prepare_create`] made
    /// ready written under its name in `namespace`, unless `dry_run`.
    pub(crate) async fn insert(
        &self,
        served: &Served<H>,
        namespace: Option<&str>,
        prepared: Written<H>,
        dry_run: bool,
    ) -> Result<Written<H>, ApiError> {
        let Written {
            mut object,
            warnings,
        } = prepared;
        let name = object.name().to_owned();
        let subject = Self::subject(served, &name);
        let bytes = self.encode(served, &object)?;
        let place = Place {
            namespace,
            name: &name,
        };
        // The store's `Create` says when what exists is on its way out.
        let taken = |existing: Option<H>| {
            let mut error = ApiError::already_exists(&subject);
            if existing.is_some_and(|e| e.metadata().deletion_timestamp.is_some()) {
                error.message = format!("object is being deleted: {}", error.message);
            }
            error
        };
        if dry_run {
            // A dry run writes nothing, but is refused as the write would be (kube's dry-run
            // storage reads the key first).
            return match self.get(served, place).await {
                Ok(existing) => Err(taken(Some(existing))),
                Err(error) if error.code == 404 => Ok(Written { object, warnings }),
                Err(error) => Err(error),
            };
        }
        let kv = match self
            .backend
            .create(&self.key_of(served, place), bytes)
            .await
        {
            Ok(kv) => kv,
            Err(StoreError::AlreadyExists) => {
                return Err(taken(self.get(served, place).await.ok()));
            }
            Err(error) => return Err(ApiError::from_store(error, &subject)),
        };
        object.metadata_mut().resource_version = Some(kv.mod_revision.to_string());
        Ok(Written { object, warnings })
    }

    /// Replaces an object (or its status): a stale `resourceVersion` is a conflict, none means
    /// "whatever is stored" (kube-apiserver allows unconditional updates of these kinds).
    /// Metadata the server owns is kept; generation grows when the spec changes. An update
    /// that changes nothing writes nothing and answers the stored object.
    ///
    /// # Errors
    ///
    /// 404, 409, 422; storage errors.
    pub async fn update(
        &self,
        served: &Served<H>,
        place: Place<'_>,
        object: H,
        api_version: &str,
        kind: UpdateKind,
        dry_run: bool,
    ) -> Result<Written<H>, ApiError> {
        self.update_with(
            served,
            place,
            object,
            api_version,
            kind,
            dry_run,
            |_, new| Ok(new),
        )
        .await
    }

    /// [`Objects::update`], with `writer` making the object to write from the stored one and
    /// the one given, on every try (the server records managed fields there).
    ///
    /// # Errors
    ///
    /// As [`Objects::update`], and what `writer` answers.
    #[allow(clippy::too_many_arguments)]
    pub async fn update_with(
        &self,
        served: &Served<H>,
        place: Place<'_>,
        object: H,
        api_version: &str,
        kind: UpdateKind,
        dry_run: bool,
        writer: impl Fn(&H, H) -> Result<H, ApiError>,
    ) -> Result<Written<H>, ApiError> {
        let update = Update {
            served,
            place,
            api_version,
            kind,
            dry_run,
        };
        self.update_from(&update, object, None, writer).await
    }

    /// Writes back an object of a page of [`Objects::list_stored`] (`stored`, decoded by
    /// [`Objects::decode_listed`] as `listed`) unchanged, with its `resourceVersion` as the
    /// precondition, as an update of it in `api_version` that changes nothing writes it:
    /// prepared, validated and encoded again, and stored only when the bytes differ (a
    /// storage-version migration's write). It is compared with the value listed, not read
    /// again; the field manager, which records nothing for an update that changes nothing, is
    /// not asked.
    ///
    /// # Errors
    ///
    /// As [`Objects::update`]: 409 when it was written since it was listed.
    pub async fn write_back(
        &self,
        served: &Served<H>,
        stored: &Stored,
        listed: H,
        api_version: &str,
    ) -> Result<Written<H>, ApiError> {
        let meta = listed.metadata();
        let (namespace, name) = (
            meta.namespace.clone(),
            meta.name.clone().unwrap_or_default(),
        );
        let update = Update {
            served,
            place: Place {
                namespace: namespace.as_deref(),
                name: &name,
            },
            api_version,
            kind: UpdateKind::Main,
            dry_run: false,
        };
        let first = Some((stored.0.clone(), listed.clone()));
        self.update_from(&update, listed, first, |_, new| Ok(new))
            .await
    }

    /// [`Objects::update_with`], its first try against `first` (a stored value and the
    /// object decoded from it) when given, rather than against the value read again.
    async fn update_from(
        &self,
        update: &Update<'_, H>,
        object: H,
        mut first: Option<(KeyValue, H)>,
        writer: impl Fn(&H, H) -> Result<H, ApiError>,
    ) -> Result<Written<H>, ApiError> {
        let (served, place, api_version) = (update.served, update.place, update.api_version);
        let (kind, dry_run) = (update.kind, update.dry_run);
        let subject = Self::subject(served, place.name);
        let key = self.key_of(served, place);
        let expected = object
            .metadata()
            .resource_version
            .clone()
            .filter(|rv| !rv.is_empty());
        loop {
            let (kv, old) = match first.take() {
                Some(first) => first,
                None => {
                    let kv = self.stored(&key, &subject).await?;
                    if let Some(expected) = &expected
                        && *expected != kv.mod_revision.to_string()
                    {
                        return Err(ApiError::modified(&subject));
                    }
                    let old = self.decode(served, &kv, kv.mod_revision)?;
                    (kv, old)
                }
            };
            let new = writer(&old, object.clone())?;
            let (new, prepared) = self.prepare_update(served, new, &old, api_version, kind)?;
            // The schema's warnings come first, as kube-apiserver's validation adds them
            // before the strategy's `WarningsOnUpdate`.
            let mut warnings = self.check(served, &new, Some(&old), api_version)?;
            warnings.extend(prepared);
            let new = as_stored(served, new)?;
            if deletes_during_update(&new, &old)
                && !served.strategy().finalizing(&storage_value(served, &new)?)
            {
                // `shouldDeleteDuringUpdate`: the update is answered, and the object removed.
                let mut answered = new;
                answered.metadata_mut().resource_version = Some(kv.mod_revision.to_string());
                if dry_run {
                    return Ok(Written {
                        object: answered,
                        warnings,
                    });
                }
                match self.backend.delete(&key, Some(kv.mod_revision)).await {
                    Ok(_) => {
                        return Ok(Written {
                            object: answered,
                            warnings,
                        });
                    }
                    Err(StoreError::Conflict { .. }) if expected.is_none() => continue,
                    Err(error) => return Err(ApiError::from_store(error, &subject)),
                }
            }
            let bytes = self.encode(served, &new)?;
            if bytes == kv.value || dry_run {
                let mut answered = if bytes == kv.value { old } else { new };
                answered.metadata_mut().resource_version = Some(kv.mod_revision.to_string());
                return Ok(Written {
                    object: answered,
                    warnings,
                });
            }
            match self.backend.update_read(&kv, bytes).await {
                Ok(written) => {
                    let mut new = new;
                    new.metadata_mut().resource_version = Some(written.mod_revision.to_string());
                    return Ok(Written {
                        object: new,
                        warnings,
                    });
                }
                // Someone wrote between the read and the swap: an unconditional update tries
                // again on what is stored now, as GuaranteedUpdate does.
                Err(StoreError::Conflict { .. }) if expected.is_none() => continue,
                Err(error) => return Err(ApiError::from_store(error, &subject)),
            }
        }
    }

    /// The object to store for an update of `old`: kube-apiserver's `PrepareForUpdate` of a
    /// resource with a status (the status kept, or for `/status` everything but the status
    /// kept), and the server-owned metadata kept.
    fn prepare_update(
        &self,
        served: &Served<H>,
        mut new: H,
        old: &H,
        api_version: &str,
        kind: UpdateKind,
    ) -> Result<(H, Vec<String>), ApiError> {
        let old_meta = old.metadata();
        // What the server owns of the metadata stays as it was.
        {
            let meta = new.metadata_mut();
            meta.uid = old_meta.uid.clone();
            meta.creation_timestamp = old_meta.creation_timestamp.clone();
            meta.namespace = old_meta.namespace.clone();
            meta.generation = old_meta.generation;
            meta.deletion_timestamp = old_meta.deletion_timestamp.clone();
            meta.deletion_grace_period_seconds = old_meta.deletion_grace_period_seconds;
            meta.generate_name = meta.generate_name.take().or(old_meta.generate_name.clone());
        }
        if kind == UpdateKind::Status {
            let old_value = working_value(served, api_version, old)?;
            let mut value = old_value.clone();
            let new_value = working_value(served, api_version, &new)?;
            let status = new_value.get("status").cloned();
            if served.strategy().status_writes_metadata() {
                value["metadata"] = new_value["metadata"].clone();
            }
            let managed_fields = new.metadata().managed_fields.clone();
            match status {
                Some(status) => value["status"] = status,
                None => {
                    if let Some(map) = value.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
            let warnings = served.strategy().warnings(&value, Some(&old_value));
            let mut updated = hub_of_working_value(served, api_version, &value)?;
            updated.metadata_mut().managed_fields = managed_fields;
            return Ok((updated, warnings));
        }
        let mut value = working_value(served, api_version, &new)?;
        let old_value = working_value(served, api_version, old)?;
        // Compared as kube's strategies compare (`Semantic.DeepEqual`, where a nil list or
        // map equals an empty one): both as they read once stored.
        let as_stored = |value: &Value, keep: fn(&mut Value)| {
            let mut value = value.clone();
            crate::go_shape::as_stored(&mut value);
            keep(&mut value);
            value
        };
        let changed = match served.config.generation {
            Generation::OnSpecChange => {
                let spec = |value: &mut Value| *value = value["spec"].take();
                as_stored(&value, spec) != as_stored(&old_value, spec)
            }
            // Anything but the metadata, or the labels (`endpointSliceStrategy`).
            Generation::OnAnyChange => {
                let labels_kept = |value: &mut Value| {
                    if let Some(map) = value.as_object_mut() {
                        let labels = map
                            .get_mut("metadata")
                            .and_then(|metadata| metadata.get_mut("labels"))
                            .map(Value::take);
                        map.insert("metadata".to_owned(), Value::from(labels));
                    }
                };
                as_stored(&value, labels_kept) != as_stored(&old_value, labels_kept)
            }
            Generation::Untracked => false,
        };
        if changed {
            let generation = old_meta.generation.unwrap_or(0) + 1;
            value["metadata"]["generation"] = generation.into();
        }
        if served.config.status {
            match old_value.get("status") {
                Some(status) => value["status"] = status.clone(),
                None => {
                    if let Some(map) = value.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
        }
        if kind == UpdateKind::Main {
            served.strategy().prepare_for_update(&mut value, &old_value);
        }
        let warnings = served.strategy().warnings(&value, Some(&old_value));
        Ok((hub_of_working_value(served, api_version, &value)?, warnings))
    }

    /// Deletes an object if the preconditions hold, as kube-apiserver's `Store.Delete` does
    /// for a kind without graceful deletion: first the garbage collector's finalizers are
    /// set as `propagation` asks ([`Propagation::finalizers`]); an object left with
    /// finalizers is only marked (`deletionTimestamp` now, `deletionGracePeriodSeconds` 0,
    /// `generation` one more the first time: `markAsDeleting`) and kept until an update
    /// removes its last finalizer; any other is removed. Answers which, with the object's
    /// last state.
    ///
    /// # Errors
    ///
    /// 404; 409 for a failed precondition; storage errors.
    pub async fn delete(
        &self,
        served: &Served<H>,
        place: Place<'_>,
        preconditions: &Preconditions,
        propagation: Propagation,
        dry_run: bool,
    ) -> Result<Deletion<H>, ApiError> {
        let subject = Self::subject(served, place.name);
        let key = self.key_of(served, place);
        loop {
            let kv = self.stored(&key, &subject).await?;
            let object = self.decode(served, &kv, kv.mod_revision)?;
            check_delete_preconditions(served, &object, preconditions)?;
            if let Some(why) = served.strategy().refuses_delete(place.name) {
                return Err(ApiError::forbidden(&subject, why));
            }
            let first_delete = if object.metadata().deletion_timestamp.is_none() {
                let mut value = storage_value(served, &object)?;
                served
                    .strategy()
                    .prepare_for_first_delete(&mut value, propagation)
                    .then(|| hub_of_storage_value(served, &value))
                    .transpose()?
            } else if served
                .strategy()
                .finalizing(&storage_value(served, &object)?)
            {
                // Namespaces' `REST.Delete`: answered as it is while it is finalized.
                return Ok(Deletion::Finalizing(object));
            } else {
                None
            };
            let marked = match first_delete {
                Some(mut marked) => {
                    marked.metadata_mut().deletion_timestamp = Some(now());
                    Some(marked)
                }
                None => {
                    let mut marked = object.clone();
                    let finalizers = &mut marked.metadata_mut().finalizers;
                    let present = finalizers.as_deref().unwrap_or_default();
                    let wanted = if served.strategy().collects_dependents() {
                        propagation.finalizers(present)
                    } else {
                        Propagation::without_collector(present)
                    };
                    if let Some(wanted) = wanted {
                        *finalizers = (!wanted.is_empty()).then_some(wanted);
                    }
                    if finalizers.as_ref().is_some_and(|f| !f.is_empty()) {
                        mark_as_deleting(&mut marked);
                        Some(marked)
                    } else {
                        None
                    }
                }
            };
            let written = if let Some(mut marked) = marked {
                let bytes = self.encode(served, &marked)?;
                if bytes == kv.value || dry_run {
                    return Ok(Deletion::Finalizing(marked));
                }
                self.backend.update_read(&kv, bytes).await.map(|written| {
                    marked.metadata_mut().resource_version = Some(written.mod_revision.to_string());
                    Deletion::Finalizing(marked)
                })
            } else {
                if dry_run {
                    return Ok(Deletion::Removed(object));
                }
                // As etcd3's `Delete` answers it: at the revision of the delete.
                self.backend
                    .delete(&key, Some(kv.mod_revision))
                    .await
                    .map(|(_, revision)| {
                        let mut object = object;
                        object.metadata_mut().resource_version = Some(revision.to_string());
                        Deletion::Removed(object)
                    })
            };
            match written {
                Ok(deletion) => return Ok(deletion),
                Err(StoreError::Conflict { .. }) if preconditions.resource_version.is_none() => {
                    continue;
                }
                Err(StoreError::Conflict { .. }) => return Err(ApiError::modified(&subject)),
                Err(error) => return Err(ApiError::from_store(error, &subject)),
            }
        }
    }

    /// Deletes an object whose stored value no longer reads, without reading it, as
    /// kube-apiserver's `corruptObjectDeleter` does for a delete with
    /// `ignoreStoreReadErrorWithClusterBreakingPotential`: no preconditions, finalizers or
    /// strategy, only the value at the latest revision, which must not decode; a dry run
    /// stops where the delete would have gone through.
    ///
    /// # Errors
    ///
    /// 404; 409 in the storage's words when the value decodes; storage errors.
    pub async fn delete_corrupt(
        &self,
        served: &Served<H>,
        place: Place<'_>,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let subject = Self::subject(served, place.name);
        let key = self.key_of(served, place);
        loop {
            let kv = self.stored(&key, &subject).await?;
            if self
                .decode_keeping(served, &kv, kv.mod_revision, false)
                .is_ok()
            {
                return Err(ApiError::conflict(
                    &subject,
                    &format!(
                        "StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, \
                         AdditionalErrorMsg: unsafe deletion is not allowed because the object \
                         is decodable from storage",
                        String::from_utf8_lossy(&key)
                    ),
                ));
            }
            if dry_run {
                return Ok(());
            }
            match self.backend.delete(&key, Some(kv.mod_revision)).await {
                Ok(_) => return Ok(()),
                // Written meanwhile: read it again (now perhaps readable).
                Err(StoreError::Conflict { .. }) => {}
                Err(error) => return Err(ApiError::from_store(error, &subject)),
            }
        }
    }

    /// Deletes every object of a resource in `namespace` (all namespaces: `None`), as a
    /// deleted namespace's (`Background`) or CRD's (nothing said) cleanup does, each delete
    /// asking `propagation`: answers those kept for their finalizers. Each object is tried;
    /// one deleted meanwhile is no error.
    ///
    /// # Errors
    ///
    /// A list that could not be read; else the first delete that failed, once every object
    /// has been tried.
    pub async fn delete_all(
        &self,
        served: &Served<H>,
        namespace: Option<&str>,
        propagation: Propagation,
    ) -> Result<Vec<H>, ApiError> {
        let listed = self
            .list(
                served,
                &ListRequest {
                    namespace,
                    ..ListRequest::default()
                },
            )
            .await?;
        let (mut kept, mut failed) = (Vec::new(), None);
        for object in listed.items {
            let meta = object.metadata();
            let place = Place {
                namespace: meta.namespace.as_deref(),
                name: meta.name.as_deref().unwrap_or_default(),
            };
            match self
                .delete(served, place, &Preconditions::default(), propagation, false)
                .await
            {
                Ok(Deletion::Removed(_)) => {}
                Ok(Deletion::Finalizing(object)) => kept.push(object),
                Err(error) if error.code == 404 => {}
                Err(error) => {
                    failed.get_or_insert(error);
                }
            }
        }
        match failed {
            Some(error) => Err(error),
            None => Ok(kept),
        }
    }

    /// Watches a resource's objects (in a namespace or all) after `after`.
    ///
    /// # Errors
    ///
    /// A compacted revision (410) or one ahead of the store; storage errors.
    pub async fn watch(
        &self,
        served: &Served<H>,
        namespace: Option<&str>,
        after: Revision,
    ) -> Result<Watch, ApiError> {
        self.backend
            .watch(&self.prefix_of(served, namespace), after)
            .await
            .map(Watch)
            .map_err(|e| ApiError::from_store(e, &Self::subject(served, "")))
    }

    /// A watched event as a change of an object.
    ///
    /// # Errors
    ///
    /// A stored value that does not decode.
    pub fn change(&self, served: &Served<H>, event: &Watched) -> Result<Change<H>, ApiError> {
        match &*event.0 {
            Event::Put { current, .. } => Ok(Change::Put {
                object: self.decode(served, current, current.mod_revision)?,
                created: current.create_revision == current.mod_revision,
            }),
            // A deleted value that does not decode (one an unsafe delete removed): the
            // watch ends with etcd3's `corruptObjectDeletedError`.
            Event::Delete { previous, revision } => {
                match self.decode_or_corrupt(served, previous, *revision, true) {
                    Ok(object) => Ok(Change::Deleted(object)),
                    Err(corrupt) => Err(ApiError::corrupt_object_deleted(&corrupt.inner())),
                }
            }
        }
    }

    /// The metadata alone of a watched event's object, with the event's revision as its
    /// `resourceVersion`, and whether the event deleted it: for work that reads metadata only
    /// (kube's metadata informers; the garbage collector). Taken from the object the server
    /// keeps decoded for that revision when it has one (nothing else of it copied), else
    /// read from a JSON value's `metadata` alone (the rest skipped), else decoded and not
    /// kept, so that such a watch takes no room from point reads.
    ///
    /// # Errors
    ///
    /// A stored value that does not decode, as [`Objects::change`] answers it.
    pub fn watched_metadata(
        &self,
        served: &Served<H>,
        event: &Watched,
    ) -> Result<(ObjectMeta, bool), ApiError> {
        let (kv, revision, deleted) = match &*event.0 {
            Event::Put { current, .. } => (current, current.mod_revision, false),
            Event::Delete { previous, revision } => (previous, *revision, true),
        };
        let mut meta = self.stored_metadata(served, kv).map_err(|why| {
            let corrupt = Corrupt::new(kv, revision, why);
            if deleted {
                ApiError::corrupt_object_deleted(&corrupt.inner())
            } else {
                ApiError::internal(corrupt.storage_error())
            }
        })?;
        meta.resource_version = Some(revision.to_string());
        Ok((meta, deleted))
    }

    /// The metadata of a page of objects, as [`Objects::list`] would answer them but read
    /// without the rest of each object where its encoding allows (the lists of a metadata
    /// informer, such as the garbage collector's).
    ///
    /// # Errors
    ///
    /// As [`Objects::list`].
    pub async fn list_metadata(
        &self,
        served: &Served<H>,
        request: &ListRequest<'_>,
    ) -> Result<Listed<ObjectMeta>, ApiError> {
        let page = self.list_stored(served, request).await?;
        let items = Self::read_page(served, &page.items, |kv| {
            let mut meta = self
                .stored_metadata(served, kv)
                .map_err(|why| Corrupt::new(kv, kv.mod_revision, why))?;
            meta.resource_version = Some(kv.mod_revision.to_string());
            Ok(meta)
        })?;
        Ok(Listed {
            items,
            revision: page.revision,
            next: page.next,
            remaining: page.remaining,
        })
    }

    /// The metadata of a stored value: as decoded before, or read alone from its JSON or
    /// protobuf, or from the whole object when neither reads it (another kind, a codec of
    /// its own).
    fn stored_metadata(&self, served: &Served<H>, kv: &KeyValue) -> Result<ObjectMeta, String> {
        let kept = self
            .decoded
            .lock()
            .ok()
            .and_then(|decoded| decoded.metadata(&kv.key, kv.mod_revision, served.serial()));
        if let Some(meta) = kept
            .or_else(|| json_metadata(served, &kv.value))
            .or_else(|| protobuf_metadata(served, &kv.value, &self.limits))
        {
            return Ok(meta);
        }
        self.read_stored(served, kv)
            .map(|mut object| std::mem::take(object.metadata_mut()))
    }

    /// What an updated object was before a watched write, with the write's revision as its
    /// `resourceVersion` (as kube-apiserver's watch cache sends an object that stopped
    /// matching a selector); `None` for a create or a delete.
    ///
    /// # Errors
    ///
    /// A stored value that does not decode.
    pub fn previous(&self, served: &Served<H>, event: &Watched) -> Result<Option<H>, ApiError> {
        match &*event.0 {
            Event::Put {
                previous: Some(previous),
                current,
            } => Ok(Some(self.decode(served, previous, current.mod_revision)?)),
            _ => Ok(None),
        }
    }

    /// The store's newest revision.
    ///
    /// # Errors
    ///
    /// Storage errors.
    pub async fn current_revision(&self) -> Result<Revision, ApiError> {
        self.backend
            .current_revision()
            .await
            .map_err(|e| ApiError::from_store(e, &Subject::default()))
    }
}

/// The version an object is prepared and validated in: a custom resource's request version
/// (apiextensions-apiserver's strategies see the object as the request wrote it, and the
/// storage codec converts it only as it is stored: a field that only the request's version
/// defines is held to that version's schema, then dropped), another kind's storage version.
fn working_version<'a, H>(
    served: &'a Served<H>,
    api_version: &str,
) -> &'a dyn super::VersionCodec<H> {
    let (_, version) = split_api_version(api_version);
    match served.version(version) {
        Some(codec) if served.config.custom => codec,
        _ => &*served.storage,
    }
}

/// The object as a JSON value in its [`working_version`].
fn working_value<H: Clone>(
    served: &Served<H>,
    api_version: &str,
    object: &H,
) -> Result<Value, ApiError> {
    working_version(served, api_version)
        .encode(object.clone(), &mut Vec::new())
        .map_err(ApiError::internal)
}

/// A JSON value of the [`working_version`] back into the hub.
fn hub_of_working_value<H>(
    served: &Served<H>,
    api_version: &str,
    value: &Value,
) -> Result<H, ApiError> {
    working_version(served, api_version)
        .decode(value, UnknownFields::Ignore, &mut Vec::new())
        .map_err(ApiError::internal)
}

/// A custom resource as its storage version holds it, which is what kube-apiserver answers a
/// write with (its store decodes what it stored, and a dry run encodes and decodes the same
/// way); another kind's hub object holds every version already, and is answered as its
/// storage form reads back ([`VersionCodec::as_stored`]).
fn as_stored<H: Object + Clone>(served: &Served<H>, object: H) -> Result<H, ApiError> {
    if !served.config.custom {
        return Ok(served.storage.as_stored(object));
    }
    let mut stored = hub_of_storage_value(served, &storage_value(served, &object)?)?;
    stored.metadata_mut().resource_version = object.metadata().resource_version.clone();
    Ok(stored)
}

/// The object in the storage version, as a JSON value.
fn storage_value<H: Clone>(served: &Served<H>, object: &H) -> Result<Value, ApiError> {
    served
        .storage
        .encode(object.clone(), &mut Vec::new())
        .map_err(ApiError::internal)
}

/// A JSON value of the storage version back into the hub.
fn hub_of_storage_value<H>(served: &Served<H>, value: &Value) -> Result<H, ApiError> {
    served
        .storage
        .decode(value, UnknownFields::Ignore, &mut Vec::new())
        .map_err(ApiError::internal)
}

/// An update's preconditions held against `meta`, the stored object's (an empty one for an
/// update that creates), as the storage's `checkPreconditions` holds them; `key` names the
/// storage key in the error, made only when one fails.
pub(crate) fn check_preconditions(
    subject: &Subject,
    key: impl Fn() -> String,
    meta: &ObjectMeta,
    preconditions: &Preconditions,
) -> Result<(), ApiError> {
    if let Some(uid) = &preconditions.uid
        && meta.uid.as_ref() != Some(uid)
    {
        return Err(precondition_failed(
            subject,
            &key(),
            &format!(
                "UID in precondition: {uid}, UID in object meta: {}",
                meta.uid.as_deref().unwrap_or_default()
            ),
        ));
    }
    if let Some(rv) = &preconditions.resource_version
        && meta.resource_version.as_ref() != Some(rv)
    {
        return Err(precondition_failed(
            subject,
            &key(),
            &format!(
                "ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                meta.resource_version.as_deref().unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

/// The values of a list that did not decode, gathered as 1.37's storage gathers them
/// (`corruptObjErrAggregator`): each key with its storage error, at most 100.
#[derive(Default)]
struct Unreadable(Vec<(String, String)>);

impl Unreadable {
    /// kube's `maxCorruptObjErrsToAggregate`: the list stops once it has gathered this many.
    const MOST: usize = 100;

    /// Notes a value that did not decode; answers whether the list stops here.
    fn note(&mut self, corrupt: &Corrupt) -> bool {
        self.0.push((corrupt.key.clone(), corrupt.storage_error()));
        self.0.len() == Self::MOST
    }

    /// `answer` when every value decoded, else the list's `StorageReadError` about the
    /// resource `subject`.
    fn or<T>(&self, subject: &Subject, answer: T) -> Result<T, ApiError> {
        if self.0.is_empty() {
            return Ok(answer);
        }
        Err(self.error(subject))
    }

    /// The list's `StorageReadError` about the resource `subject`.
    fn error(&self, subject: &Subject) -> ApiError {
        ApiError::store_read_error(subject, &self.0, self.0.len() == Self::MOST)
    }
}

/// A stored value that does not decode: its key, the revision it was read at, and why.
struct Corrupt {
    key: String,
    revision: Revision,
    why: String,
}

impl Corrupt {
    /// The value of `kv`, read at `revision`, does not decode, for `why`.
    fn new(kv: &KeyValue, revision: Revision, why: String) -> Self {
        Corrupt {
            key: String::from_utf8_lossy(&kv.key).into_owned(),
            revision,
            why,
        }
    }

    /// etcd3's `corruptObjectError`: `object not decodable revision=N: WHY`.
    fn inner(&self) -> String {
        format!(
            "object not decodable revision={}: {}",
            self.revision, self.why
        )
    }

    /// The storage's error for it (1.37's `corruptObjectError` in a `StorageError` of code
    /// 7), as a read of it quotes it.
    fn storage_error(&self) -> String {
        format!(
            "StorageError: corrupt object, Code: 7, Key: {}, ResourceVersion: 0, \
             AdditionalErrorMsg: {}",
            self.key,
            self.inner()
        )
    }
}

/// The storage's failed precondition (`storage.NewInvalidObjError` of the key), as the
/// store's `Update` answers it: a conflict quoting the storage error.
fn precondition_failed(subject: &Subject, key: &str, what: &str) -> ApiError {
    ApiError::conflict(
        subject,
        &format!(
            "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, \
             AdditionalErrorMsg: Precondition failed: {what}"
        ),
    )
}

/// A delete's preconditions, held as kube-apiserver's `rest.BeforeDelete` holds them before
/// the store is asked: a conflict about the kind (`Kind.group`), in its words.
fn check_delete_preconditions<H: Object>(
    served: &Served<H>,
    object: &H,
    preconditions: &Preconditions,
) -> Result<(), ApiError> {
    let meta = object.metadata();
    let subject = Subject {
        group: served.config.group.clone(),
        kind: served.config.kind.clone(),
        name: meta.name.clone().unwrap_or_default(),
    };
    if let Some(uid) = &preconditions.uid
        && meta.uid.as_ref() != Some(uid)
    {
        return Err(ApiError::conflict(
            &subject,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). \
                 The object might have been deleted and then recreated",
                meta.uid.as_deref().unwrap_or_default()
            ),
        ));
    }
    if let Some(rv) = &preconditions.resource_version
        && meta.resource_version.as_ref() != Some(rv)
    {
        return Err(ApiError::conflict(
            &subject,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the \
                 ResourceVersion in record ({}). The object might have been modified",
                meta.resource_version.as_deref().unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

/// What a delete did: removed the object, or marked it as being deleted until its
/// finalizers are gone. Either holds the object's last state.
#[derive(Debug, Clone)]
pub enum Deletion<H> {
    /// Removed from the store.
    Removed(H),
    /// Kept, with `deletionTimestamp` set, for its finalizers.
    Finalizing(H),
}

impl<H> Deletion<H> {
    /// The object's last state.
    pub fn object(self) -> H {
        match self {
            Deletion::Removed(object) | Deletion::Finalizing(object) => object,
        }
    }
}

/// The metadata of a stored JSON value of the resource's kind, read without the rest of the
/// object; `None` for any other value (protobuf, another kind, not JSON), which the resource's
/// codec then reads whole.
fn json_metadata<H>(served: &Served<H>, value: &[u8]) -> Option<ObjectMeta> {
    #[derive(serde::Deserialize)]
    struct MetadataOnly {
        kind: String,
        #[serde(default)]
        metadata: ObjectMeta,
    }
    if served.config.storage_encoding != apfkit_runtime::scheme::StorageEncoding::Json {
        return None;
    }
    let read: MetadataOnly = serde_json::from_slice(value).ok()?;
    (read.kind == served.config.kind).then_some(read.metadata)
}

/// The metadata of a stored protobuf value of the resource's kind, read without the rest of
/// the object; `None` for any other value, which the resource's codec then reads whole.
fn protobuf_metadata<H>(served: &Served<H>, value: &[u8], limits: &Limits) -> Option<ObjectMeta> {
    if served.config.storage_encoding != apfkit_runtime::scheme::StorageEncoding::Protobuf {
        return None;
    }
    let (kind, metadata) = apfkit_wire::envelope::metadata(value, limits)?.ok()?;
    (kind == served.config.kind).then_some(metadata)
}

/// `markAsDeleting`: the first mark bumps a set generation and stamps the time; every mark
/// sets a grace period of 0.
fn mark_as_deleting<H: Object>(object: &mut H) {
    let meta = object.metadata_mut();
    if meta.deletion_timestamp.is_none() {
        if let Some(generation) = meta.generation.filter(|g| *g > 0) {
            meta.generation = Some(generation + 1);
        }
        meta.deletion_timestamp = Some(now());
    }
    meta.deletion_grace_period_seconds = Some(0);
}

/// `shouldDeleteDuringUpdate`: the update leaves no finalizer on an object being deleted
/// without a grace period.
fn deletes_during_update<H: Object>(new: &H, old: &H) -> bool {
    let (new, old) = (new.metadata(), old.metadata());
    new.finalizers.as_ref().is_none_or(Vec::is_empty)
        && old.deletion_timestamp.is_some()
        && old
            .deletion_grace_period_seconds
            .is_none_or(|grace| grace == 0)
}

/// The current time at whole seconds, as metav1.Time keeps it.
/// Now, to the second, as kube-apiserver stamps objects (`creationTimestamp`,
/// `lastTransitionTime`).
pub fn now() -> Time {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    Time(Timestamp::from_second(i64::try_from(seconds).unwrap_or(0)).unwrap_or_default())
}

/// apiserver's `SimpleNameGenerator`: the base (cut to 58 bytes) and five random characters
/// from an alphabet without vowels or look-alikes (`k8s.io/apiserver/pkg/storage/names`).
fn generated_name(base: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    const MAX_BASE: usize = 63 - 5;
    let mut cut = base.len().min(MAX_BASE);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    let random = uuid::Uuid::new_v4();
    let suffix: String = random.as_bytes()[..5]
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect();
    format!("{}{suffix}", &base[..cut])
}

/// The first key after `key`: `key` and a zero byte.
fn after(key: &[u8]) -> Vec<u8> {
    let mut next = key.to_vec();
    next.push(0);
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_objects_are_kept_by_key_and_revision_and_bounded() {
        let mut decoded = Decoded::new();
        decoded.insert(b"a", Revision(3), 0, "a at 3", 10);
        assert_eq!(decoded.get(b"a", Revision(3), 0), Some("a at 3"));
        assert_eq!(
            decoded.get(b"a", Revision(4), 0),
            None,
            "another revision is another value"
        );
        decoded.insert(b"a", Revision(4), 0, "a at 4", 10);
        assert_eq!(decoded.get(b"a", Revision(4), 0), Some("a at 4"));
        assert_eq!(decoded.bytes, 10);
        // Decoded by another resource (a CRD made anew, with other defaults): decoded again.
        assert_eq!(decoded.get(b"a", Revision(4), 1), None);
        decoded.insert(b"a", Revision(4), 1, "a at 4, new schema", 10);
        assert_eq!(
            decoded.get(b"a", Revision(4), 1),
            Some("a at 4, new schema")
        );
        assert_eq!(decoded.get(b"a", Revision(4), 0), None, "one entry a key");
        assert_eq!(decoded.bytes, 10);
        for i in 0..DECODED_OBJECTS + 10 {
            decoded.insert(format!("k{i}").as_bytes(), Revision(5), 0, "k", 1);
        }
        assert_eq!(decoded.entries.len(), DECODED_OBJECTS);
        assert_eq!(decoded.order.len(), DECODED_OBJECTS);
        assert_eq!(
            decoded.get(b"a", Revision(4), 0),
            None,
            "the oldest went first"
        );
        // Bounded by bytes too: large objects push the others out, and one over the bound is
        // not kept at all.
        decoded.insert(b"big", Revision(6), 0, "big", DECODED_BYTES - 100);
        decoded.insert(b"big2", Revision(6), 0, "big2", 200);
        assert!(decoded.bytes <= DECODED_BYTES);
        assert_eq!(decoded.get(b"big", Revision(6), 0), None);
        decoded.insert(b"huge", Revision(7), 0, "huge", DECODED_BYTES + 1);
        assert_eq!(decoded.get(b"huge", Revision(7), 0), None);
    }

    #[test]
    fn generated_names_keep_the_base_and_add_five_characters() {
        let name = generated_name("fs-");
        assert!(name.starts_with("fs-"));
        assert_eq!(name.len(), 8);
        assert!(
            name[3..]
                .bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
        assert_eq!(generated_name(&"a".repeat(100)).len(), 63);
    }
}
