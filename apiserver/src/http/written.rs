//! Objects and watch events written once for every request that asks for them alike: the
//! same stored change, version and format. A thousand watchers of a resource then cost one
//! decode, one conversion and one encoding per change, and repeated GETs of an unchanged
//! object none; each request shares the bytes (kube-apiserver's watch cache does the same
//! with its `cachingObject`, which keeps an object's serializations per encoder).

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::body::Bytes;
use rustc_hash::FxHashMap;

use super::media::Format;
use crate::error::ApiError;
use crate::store::Revision;

/// Writings kept: the most recent ones.
const KEPT: usize = 1024;
/// Bytes kept; a writing over a quarter of this is not kept.
const KEPT_BYTES: usize = 8 << 20;

/// What was written of a stored change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Writing {
    /// The object, as a GET answers it.
    Object,
    /// A watch event around the object, for a watch without selectors or tables.
    WatchEvent,
}

/// Which writing: the change's revision, the codec written (by address), the format and
/// what was written. A revision names one change of one key in the stores this server writes;
/// the key is checked on a hit all the same.
type WritingId = (u64, usize, Format, Writing);

/// Recently written objects and watch events, shared by the requests that send them.
#[derive(Default)]
pub(super) struct SharedWritings {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    writings: FxHashMap<WritingId, (Vec<u8>, Bytes)>,
    order: VecDeque<WritingId>,
    bytes: usize,
}

impl SharedWritings {
    /// What `write` writes of the change of `key` at `revision` with the codec at `codec` in
    /// `format`: the kept bytes, or those `write` makes (then kept). Two requests may both
    /// write what is not kept yet; they get the same bytes.
    pub(super) fn get_or_write(
        &self,
        key: &[u8],
        revision: Revision,
        (codec, format, writing): (usize, Format, Writing),
        write: impl FnOnce() -> Result<Bytes, ApiError>,
    ) -> Result<Bytes, ApiError> {
        let id = (revision.0, codec, format, writing);
        if let Ok(kept) = self.kept.lock()
            && let Some((kept_key, bytes)) = kept.writings.get(&id)
            && kept_key.as_slice() == key
        {
            return Ok(bytes.clone());
        }
        let bytes = write()?;
        if bytes.len() <= KEPT_BYTES / 4
            && let Ok(mut kept) = self.kept.lock()
        {
            kept.keep(id, key, bytes.clone());
        }
        Ok(bytes)
    }
}

impl Kept {
    fn keep(&mut self, id: WritingId, key: &[u8], bytes: Bytes) {
        let size = bytes.len();
        match self.writings.insert(id, (key.to_vec(), bytes)) {
            Some((_, replaced)) => self.bytes -= replaced.len(),
            None => self.order.push_back(id),
        }
        self.bytes += size;
        while self.order.len() > KEPT || self.bytes > KEPT_BYTES {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some((_, bytes)) = self.writings.remove(&oldest) {
                self.bytes -= bytes.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OBJECT_JSON: (usize, Format, Writing) = (1, Format::Json, Writing::Object);

    #[test]
    fn a_change_is_written_once_per_codec_format_and_writing() {
        let writings = SharedWritings::default();
        let mut written = 0;
        let mut get = |key: &[u8], revision, how| {
            writings
                .get_or_write(key, Revision(revision), how, || {
                    written += 1;
                    Ok(Bytes::from(format!("{key:?}@{revision}")))
                })
                .unwrap()
        };
        assert_eq!(get(b"/a", 5, OBJECT_JSON), get(b"/a", 5, OBJECT_JSON));
        get(b"/a", 5, (2, Format::Json, Writing::Object));
        get(b"/a", 5, (1, Format::Protobuf, Writing::Object));
        get(b"/a", 5, (1, Format::Json, Writing::WatchEvent));
        get(b"/a", 6, OBJECT_JSON);
        // Another key at the same revision is another change: never answered with a's bytes.
        assert_eq!(get(b"/b", 5, OBJECT_JSON), Bytes::from("[47, 98]@5"));
        assert_eq!(written, 6);
    }

    #[test]
    fn only_the_most_recent_writings_are_kept_within_the_byte_bound() {
        let writings = SharedWritings::default();
        for revision in 0..(KEPT as u64 + 10) {
            writings
                .get_or_write(b"/k", Revision(revision), OBJECT_JSON, || Ok(Bytes::new()))
                .unwrap();
        }
        {
            let kept = writings.kept.lock().unwrap();
            assert_eq!(kept.writings.len(), KEPT);
            assert!(
                !kept
                    .writings
                    .contains_key(&(0, 1, Format::Json, Writing::Object))
            );
        }
        // Large writings push out others to stay within the bound; one too large is not kept.
        let large = Bytes::from(vec![0; KEPT_BYTES / 4]);
        for revision in 0..5 {
            writings
                .get_or_write(b"/big", Revision(1000 + revision), OBJECT_JSON, || {
                    Ok(large.clone())
                })
                .unwrap();
        }
        let huge = Bytes::from(vec![0; KEPT_BYTES / 4 + 1]);
        writings
            .get_or_write(b"/huge", Revision(2000), OBJECT_JSON, || Ok(huge.clone()))
            .unwrap();
        let kept = writings.kept.lock().unwrap();
        assert!(kept.bytes <= KEPT_BYTES);
        assert_eq!(
            kept.bytes,
            kept.writings.values().map(|(_, b)| b.len()).sum::<usize>()
        );
        assert!(
            !kept
                .writings
                .contains_key(&(2000, 1, Format::Json, Writing::Object))
        );
    }
}
