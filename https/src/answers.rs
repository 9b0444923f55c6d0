//! Answers as Go's `net/http` writes them for kube-apiserver: `http.Error`, and the 429 of
//! its `tooManyRequests` (k8s.io/apiserver `pkg/server/filters/maxinflight.go`, and the API
//! Priority and Fairness filter, which calls it).

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

/// The text of kube-apiserver's 429, without the newline `http.Error` adds.
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.";

/// Go's `http.Error(w, message, status)`: `message` and a newline as
/// `text/plain; charset=utf-8`, with `X-Content-Type-Options: nosniff`, in any body type made
/// from bytes.
pub fn go_error<B: From<Bytes>>(status: StatusCode, message: &str) -> Response<B> {
    let mut text = String::with_capacity(message.len() + 1);
    text.push_str(message);
    text.push('\n');
    let mut response = Response::new(B::from(Bytes::from(text)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// kube-apiserver's `tooManyRequests`: `Retry-After: retry_after` (seconds), then
/// `http.Error` with [`TOO_MANY_REQUESTS`] and 429.
pub fn too_many_requests<B: From<Bytes>>(retry_after: u64) -> Response<B> {
    let mut response = go_error(StatusCode::TOO_MANY_REQUESTS, TOO_MANY_REQUESTS);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_written_as_go_writes_it() {
        let answer: Response<Bytes> =
            go_error(StatusCode::BAD_GATEWAY, "Error trying to reach service");
        assert_eq!(answer.status(), StatusCode::BAD_GATEWAY);
        assert_eq!(answer.body(), "Error trying to reach service\n");
        assert_eq!(
            answer.headers()["content-type"],
            "text/plain; charset=utf-8"
        );
        assert_eq!(answer.headers()["x-content-type-options"], "nosniff");
    }

    #[test]
    fn a_refusal_says_when_to_come_back() {
        let answer: Response<Bytes> = too_many_requests(32);
        assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(answer.headers()["retry-after"], "32");
        assert_eq!(
            answer.body(),
            "Too many requests, please try again later.\n"
        );
        assert_eq!(answer.headers().len(), 3);
    }
}
