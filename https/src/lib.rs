//! What apfkit's servers answer over HTTP, and how they serve it.
//!
//! **Where to start**: [`answers::too_many_requests`] for a layer that refuses as
//! kube-apiserver does; `webhook::Webhook` (feature `webhook`) to serve a CRD's conversion
//! webhook; `serve::serve` (feature `serve`) for any axum router over HTTPS.
//!
//! - [`answers`]: Go's `http.Error` (plain text, `nosniff`, a newline after the message) and
//!   kube-apiserver's `tooManyRequests` 429 built on it, for every server and layer that
//!   answers as kube-apiserver does: the max-in-flight filter, API Priority and Fairness,
//!   kube-aggregator's proxy.
//! - `serve` (feature `serve`): the HTTPS accept loop, with TLS handshakes and request heads
//!   held to a deadline, `TCP_NODELAY`, HTTP/2 by ALPN and graceful shutdown.
//! - `webhook` (feature `webhook`): a CRD's conversion webhook, answering ConversionReviews
//!   with a generated `apfkit_runtime::scheme::Scheme` over HTTPS, its certificate reloaded
//!   when the files change.
//!
//! ```
//! let refused: http::Response<bytes::Bytes> = apfkit_https::answers::too_many_requests(2);
//! assert_eq!(refused.status(), 429);
//! assert_eq!(refused.headers()["retry-after"], "2");
//! assert_eq!(refused.body(), "Too many requests, please try again later.\n");
//! ```

#![forbid(unsafe_code)]

pub mod answers;
#[cfg(feature = "serve")]
pub mod serve;
#[cfg(feature = "webhook")]
pub mod webhook;
