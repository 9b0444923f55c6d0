//! Gzip-compressed answers, as kube-apiserver compresses them:
//!
//! - an API answer (an object, a list, a `Status`, discovery) whose body is over 128 KiB, to a
//!   client whose `Accept-Encoding` has the token `gzip` (`APIResponseCompression`, on by
//!   default: responsewriters' `deferredResponseWriter`, level 1, `Vary: Accept-Encoding`);
//! - a WatchList's events (`WatchListCompression`: [`super::watch`] writes one member per
//!   batch);
//! - the OpenAPI v2 document, which kube-openapi serves through `gziphandler` (gzip when the
//!   client gives it a q-value above 0 and the body is at least 1,400 bytes; `Vary:
//!   Accept-Encoding` on every answer).
//!
//! Go's clients (client-go, kubectl) ask every request with `Accept-Encoding: gzip` unless
//! they ask otherwise, so their large lists come compressed.

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use http_body::Body as _;

/// The size an API answer must exceed to be compressed (`defaultGzipThresholdBytes`).
const API_THRESHOLD: usize = 128 * 1024;

/// The size from which `gziphandler` compresses (`DefaultMinSize`).
const OPENAPI_V2_MIN_SIZE: usize = 1400;

/// Whether a client's `Accept-Encoding` asks for gzip as kube-apiserver's
/// `ContentEncodingSupported` reads it: a comma-separated token exactly `gzip` (spaces
/// trimmed; `gzip;q=0.5` is not one).
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    accept_encoding.is_some_and(|header| header.split(',').any(|token| token.trim() == "gzip"))
}

/// Whether `gziphandler` takes a client's `Accept-Encoding` to accept gzip: the last coding
/// named `gzip` (any case) whose q-value, clamped to 0..=1 and 1 when absent, is above 0.
/// As its parser does, a parameter after `q=` sets the value back to 1, and a q-value that
/// is not a number leaves the coding out.
pub(super) fn gziphandler_accepts_gzip(accept_encoding: Option<&str>) -> bool {
    let mut gzip_q = None;
    for coding in accept_encoding.unwrap_or_default().split(',') {
        let mut name = String::new();
        let mut q = 1.0_f64;
        let mut valid = true;
        for (n, part) in coding.split(';').enumerate() {
            let part = part.trim();
            q = 1.0;
            if n == 0 {
                name = part.to_lowercase();
            } else if let Some(value) = part.strip_prefix("q=") {
                match value.parse::<f64>() {
                    Ok(value) => q = value.clamp(0.0, 1.0),
                    Err(_) => {
                        q = 0.0;
                        valid = false;
                    }
                }
            }
        }
        if valid && name == "gzip" {
            gzip_q = Some(q);
        }
    }
    gzip_q.is_some_and(|q| q > 0.0)
}

/// `bytes` as one gzip member at `level` (a client's gzip reader takes members one after
/// another as one stream). As kube's writers, the data is sync-flushed before the member is
/// closed: Go's gzip reader hands on data that ends with the member's final block only once
/// the next member's header has come, so without the flush a WatchList's event would wait
/// for the next one (`kubectl delete --wait` hung on its WatchList).
pub(super) fn gzip_member(bytes: &[u8], level: flate2::Compression) -> Bytes {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(bytes.len() / 4), level);
    // Writing to memory does not fail.
    let _ = encoder.write_all(bytes);
    let _ = encoder.flush();
    Bytes::from(encoder.finish().unwrap_or_default())
}

/// The whole body of `response` when it is in memory already (its exact size known and no
/// stream behind it), else `response` back.
async fn buffered(response: Response) -> Result<(axum::http::response::Parts, Bytes), Response> {
    if response.body().size_hint().exact().is_none() {
        return Err(response);
    }
    let (parts, body) = response.into_parts();
    match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => Ok((parts, bytes)),
        // A body of known size in memory does not fail; were it to, nothing is left to send.
        Err(_) => Err(Response::from_parts(parts, Body::empty())),
    }
}

/// `parts` and `body`, the body gzipped at `level` with `Content-Encoding: gzip`.
fn gzipped(
    mut parts: axum::http::response::Parts,
    body: &[u8],
    level: flate2::Compression,
) -> Response {
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    Response::from_parts(parts, Body::from(gzip_member(body, level)))
}

/// An API answer as `APIResponseCompression` writes it: gzipped (level 1, `Vary:
/// Accept-Encoding` added) when the client accepts gzip and the body is over 128 KiB. A
/// streamed list is held until more than 128 KiB of it has come (then the rest is gzipped as
/// it comes) or it ends, as kube's deferred writer holds a streamed list's first writes; a
/// watch, or a body already encoded, is left as it is.
pub async fn api_answer(response: Response, client_accepts_gzip: bool) -> Response {
    if !client_accepts_gzip || response.headers().contains_key(header::CONTENT_ENCODING) {
        return response;
    }
    if response.extensions().get::<super::Streamed>().is_some() {
        return streamed_api_answer(response).await;
    }
    if response
        .body()
        .size_hint()
        .exact()
        .is_none_or(|size| size <= API_THRESHOLD as u64)
    {
        return response;
    }
    let (mut parts, body) = match buffered(response).await {
        Ok(buffered) => buffered,
        Err(response) => return response,
    };
    parts
        .headers
        .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    gzipped(parts, &body, flate2::Compression::fast())
}

/// A streamed list's answer: its first frames held until they pass 128 KiB (then the whole
/// body gzipped as one stream, written by a task as it comes) or the body ends (then as it
/// is). A body that fails ends where it failed, as the uncompressed stream would.
async fn streamed_api_answer(response: Response) -> Response {
    use http_body_util::BodyExt as _;
    let (mut parts, mut body) = response.into_parts();
    let mut held = Vec::new();
    while held.len() <= API_THRESHOLD {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    held.extend_from_slice(&data);
                }
            }
            Some(Err(_)) | None => return Response::from_parts(parts, Body::from(held)),
        }
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts
        .headers
        .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    let (chunks, compressed) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        use std::io::Write as _;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut data = held;
        loop {
            // Writing to memory does not fail.
            let _ = encoder.write_all(&data);
            if !encoder.get_ref().is_empty() {
                let out = std::mem::take(encoder.get_mut());
                if chunks.send(Ok(Bytes::from(out))).await.is_err() {
                    return;
                }
            }
            data = loop {
                match body.frame().await {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            break data.to_vec();
                        }
                    }
                    // The list cut short: the compressed stream ends where it did.
                    Some(Err(_)) => return,
                    None => {
                        let _ = chunks
                            .send(Ok(Bytes::from(encoder.finish().unwrap_or_default())))
                            .await;
                        return;
                    }
                }
            };
        }
    });
    Response::from_parts(
        parts,
        Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(compressed)),
    )
}

/// The OpenAPI v2 document's answer as kube-openapi's `gziphandler` writes it: `Vary:
/// Accept-Encoding` before the handler's own `Vary`, and the body gzipped (Go's default
/// level) when the client accepts gzip ([`gziphandler_accepts_gzip`]) and it is at least
/// 1,400 bytes.
pub(super) async fn openapi_v2_answer(
    mut response: Response,
    client_accepts_gzip: bool,
) -> Response {
    let headers = response.headers_mut();
    let handler_vary: Vec<HeaderValue> = headers.get_all(header::VARY).iter().cloned().collect();
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    for value in handler_vary {
        headers.append(header::VARY, value);
    }
    let large = response
        .body()
        .size_hint()
        .exact()
        .is_some_and(|size| size >= OPENAPI_V2_MIN_SIZE as u64);
    if !client_accepts_gzip || !large {
        return response;
    }
    match buffered(response).await {
        Ok((parts, body)) => gzipped(parts, &body, flate2::Compression::new(6)),
        Err(response) => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_apiservers_reading_of_accept_encoding_wants_the_bare_token() {
        for (header, wanted) in [
            (Some("gzip"), true),
            (Some("deflate, gzip"), true),
            (Some(" gzip ,br"), true),
            (Some("gzip;q=1"), false),
            (Some("GZIP"), false),
            (Some("x-gzip"), false),
            (Some(""), false),
            (None, false),
        ] {
            assert_eq!(accepts_gzip(header), wanted, "{header:?}");
        }
    }

    #[test]
    fn gziphandlers_reading_of_accept_encoding_weighs_q_values() {
        for (header, wanted) in [
            (Some("gzip"), true),
            (Some("GZIP"), true),
            (Some("gzip;q=0.5"), true),
            (Some("gzip;q=0"), false),
            (Some("gzip;q=-1"), false),
            (Some("gzip;q=x"), false),
            // A parameter after q= resets it to 1, as its parser does.
            (Some("gzip;q=0;level=9"), true),
            // The last gzip named wins.
            (Some("gzip, gzip;q=0"), false),
            (Some("gzip;q=0, gzip"), true),
            (Some("deflate, br"), false),
            (None, false),
        ] {
            assert_eq!(gziphandler_accepts_gzip(header), wanted, "{header:?}");
        }
    }

    fn answer(size: usize) -> Response {
        super::super::response::respond(200, "application/json", vec![b'a'; size])
    }

    async fn body_of(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec()
    }

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Read as _;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[tokio::test]
    async fn api_answers_over_128_kib_are_gzipped_for_clients_that_ask() {
        // At the threshold: as it is.
        let response = api_answer(answer(API_THRESHOLD), true).await;
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
        assert!(response.headers().get(header::VARY).is_none());
        assert_eq!(body_of(response).await.len(), API_THRESHOLD);
        // Over it, for a client that does not ask: as it is.
        let response = api_answer(answer(API_THRESHOLD + 1), false).await;
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
        // Over it, asked: gzipped, and the body is the same once unzipped.
        let response = api_answer(answer(API_THRESHOLD + 1), true).await;
        assert_eq!(response.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(response.headers()[header::VARY], "Accept-Encoding");
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let body = body_of(response).await;
        assert!(body.len() < API_THRESHOLD);
        assert_eq!(gunzip(&body), vec![b'a'; API_THRESHOLD + 1]);
        // A stream (a watch) is never buffered.
        let stream = Body::from_stream(tokio_stream::iter([Ok::<_, std::io::Error>(Bytes::from(
            vec![b'a'; API_THRESHOLD + 1],
        ))]));
        let response = api_answer(Response::new(stream), true).await;
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
    }

    #[tokio::test]
    async fn a_streamed_list_is_held_until_it_passes_128_kib() {
        let streamed = |chunks: Vec<usize>| {
            let chunks: Vec<Result<Bytes, std::io::Error>> = chunks
                .into_iter()
                .map(|size| Ok(Bytes::from(vec![b'b'; size])))
                .collect();
            let mut response = Response::new(Body::from_stream(tokio_stream::iter(chunks)));
            response.extensions_mut().insert(super::super::Streamed);
            response
        };
        // Ends under the threshold: as it is, whole.
        let response = api_answer(streamed(vec![1, 60 * 1024, 60 * 1024]), true).await;
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body_of(response).await, vec![b'b'; 1 + 120 * 1024]);
        // Passes it: the whole body gzipped as one stream.
        let sizes = vec![1, 100 * 1024, 100 * 1024, 7, 300 * 1024];
        let total = sizes.iter().sum();
        let response = api_answer(streamed(sizes), true).await;
        assert_eq!(response.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(response.headers()[header::VARY], "Accept-Encoding");
        assert_eq!(gunzip(&body_of(response).await), vec![b'b'; total]);
        // Not asked: as it is.
        let response = api_answer(streamed(vec![200 * 1024]), false).await;
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
    }

    #[tokio::test]
    async fn the_openapi_v2_document_is_gzipped_from_1400_bytes_with_vary_first() {
        let with_vary = |size| {
            let mut response = answer(size);
            response
                .headers_mut()
                .insert(header::VARY, HeaderValue::from_static("Accept"));
            response
        };
        let response = openapi_v2_answer(with_vary(OPENAPI_V2_MIN_SIZE - 1), true).await;
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
        let vary: Vec<_> = response.headers().get_all(header::VARY).iter().collect();
        assert_eq!(vary, ["Accept-Encoding", "Accept"]);
        let response = openapi_v2_answer(with_vary(OPENAPI_V2_MIN_SIZE), true).await;
        assert_eq!(response.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(
            gunzip(&body_of(response).await),
            vec![b'a'; OPENAPI_V2_MIN_SIZE]
        );
        let response = openapi_v2_answer(
            with_vary(OPENAPI_V2_MIN_SIZE),
            gziphandler_accepts_gzip(Some("gzip;q=0")),
        )
        .await;
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
    }
}
