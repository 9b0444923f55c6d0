//! A watch's events as they come: each line of a streamed HTTP body parsed as JSON, whatever
//! the body type (hyper's `Incoming` from a client, axum's `Body` from a router called in
//! the test).

use std::time::Duration;

use bytes::Buf;
use http_body_util::BodyExt as _;

/// The lines of a watch's body, read as they arrive.
pub struct WatchLines<B> {
    body: B,
    pending: Vec<u8>,
}

impl<B> WatchLines<B>
where
    B: http_body::Body + Unpin,
{
    /// The events of `body`.
    pub fn new(body: B) -> Self {
        WatchLines {
            body,
            pending: Vec::new(),
        }
    }

    /// The next event, or `None` when none comes within `wait` or the body ended (or
    /// failed).
    ///
    /// # Panics
    ///
    /// A line that is not JSON.
    pub async fn next_within(&mut self, wait: Duration) -> Option<serde_json::Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return Some(serde_json::from_slice(&line).expect("a JSON event"));
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    if let Ok(mut data) = frame.into_data() {
                        while data.has_remaining() {
                            let chunk = data.chunk();
                            self.pending.extend_from_slice(chunk);
                            let read = chunk.len();
                            data.advance(read);
                        }
                    }
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_split_across_frames_are_one_event_each() {
        let chunks: Vec<Result<http_body::Frame<bytes::Bytes>, std::convert::Infallible>> =
            ["{\"type\":\"ADD", "ED\"}\n{\"type\":\"DELETED\"}\n{\"ty"]
                .into_iter()
                .map(|text| Ok(http_body::Frame::data(bytes::Bytes::from(text))))
                .collect();
        let body = http_body_util::StreamBody::new(futures_util::stream::iter(chunks));
        let mut lines = WatchLines::new(body);
        let wait = Duration::from_secs(1);
        assert_eq!(lines.next_within(wait).await.unwrap()["type"], "ADDED");
        assert_eq!(lines.next_within(wait).await.unwrap()["type"], "DELETED");
        assert_eq!(
            lines.next_within(wait).await,
            None,
            "the last line never ended"
        );
    }
}
