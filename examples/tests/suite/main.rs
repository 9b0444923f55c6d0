//! The widgets example's integration tests, one binary for all: the binary answered by curl,
//! ConversionReviews, round trips between the versions, the scheme, and the webhook server
//! against hostile clients.

// The TLS helpers, shared with the webhook benchmark.
#[path = "../support/aggregation.rs"]
mod aggregation;
#[path = "../support/tls.rs"]
mod tls;

mod aggregated;
mod apiserver;
mod curl;
mod review;
mod round_trip;
mod scheme;
mod storage;
mod validation;
mod webhook;
