//! Watch events written once for every watch that sends them alike: the same resource,
//! version and format, no selectors and no tables. A thousand watchers of a resource then
//! cost one decode, one conversion and one encoding per change, and each watcher shares the
//! frame's bytes (kube-apiserver's watch cache does the same with its `cachingObject`).

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::body::Bytes;
use rustc_hash::FxHashMap;

use super::media::Format;
use crate::error::ApiError;
use crate::storage::Event;

/// Frames kept: the most recent changes, enough for watchers that lag a little behind.
const KEPT_FRAMES: usize = 512;

/// Which frame: the change's revision, the codec written (by address) and the format. A
/// revision names one change of one key in the stores this server writes; the key is checked
/// on a hit all the same.
type FrameId = (u64, usize, Format);

/// Recently written watch frames, shared by the watches that send them.
#[derive(Default)]
pub(super) struct SharedFrames {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    frames: FxHashMap<FrameId, (Vec<u8>, Bytes)>,
    order: VecDeque<FrameId>,
}

impl SharedFrames {
    /// The frame of `event` written by the codec at `codec` in `format`: the kept one, or the
    /// one `write` makes (then kept). Two watchers may both write a frame that is not kept yet;
    /// both get the same bytes.
    pub(super) fn frame(
        &self,
        event: &Event,
        codec: usize,
        format: Format,
        write: impl FnOnce() -> Result<Bytes, ApiError>,
    ) -> Result<Bytes, ApiError> {
        let id = (event.revision().0, codec, format);
        if let Ok(kept) = self.kept.lock()
            && let Some((key, frame)) = kept.frames.get(&id)
            && key.as_slice() == event.key()
        {
            return Ok(frame.clone());
        }
        let frame = write()?;
        if let Ok(mut kept) = self.kept.lock()
            && kept
                .frames
                .insert(id, (event.key().to_vec(), frame.clone()))
                .is_none()
        {
            kept.order.push_back(id);
            while kept.order.len() > KEPT_FRAMES {
                if let Some(oldest) = kept.order.pop_front() {
                    kept.frames.remove(&oldest);
                }
            }
        }
        Ok(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{KeyValue, Revision};

    fn put(key: &[u8], revision: u64) -> Event {
        Event::Put(KeyValue {
            key: key.to_vec(),
            value: Vec::new(),
            create_revision: Revision(revision),
            mod_revision: Revision(revision),
        })
    }

    #[test]
    fn a_frame_is_written_once_per_change_codec_and_format() {
        let frames = SharedFrames::default();
        let mut written = 0;
        let mut frame = |event: &Event, codec, format| {
            frames
                .frame(event, codec, format, || {
                    written += 1;
                    Ok(Bytes::from(format!("{:?}", event.key())))
                })
                .unwrap()
        };
        let a = put(b"/a", 5);
        assert_eq!(frame(&a, 1, Format::Json), frame(&a, 1, Format::Json));
        frame(&a, 2, Format::Json);
        frame(&a, 1, Format::Protobuf);
        frame(&put(b"/a", 6), 1, Format::Json);
        // Another key at the same revision is another change: never answered with a's frame.
        assert_eq!(frame(&put(b"/b", 5), 1, Format::Json), Bytes::from("[47, 98]"));
        assert_eq!(written, 5);
    }

    #[test]
    fn only_the_most_recent_frames_are_kept() {
        let frames = SharedFrames::default();
        for revision in 0..(KEPT_FRAMES as u64 + 10) {
            frames
                .frame(&put(b"/k", revision), 0, Format::Json, || Ok(Bytes::new()))
                .unwrap();
        }
        let kept = frames.kept.lock().unwrap();
        assert_eq!(kept.frames.len(), KEPT_FRAMES);
        assert!(!kept.frames.contains_key(&(0, 0, Format::Json)));
    }
}
