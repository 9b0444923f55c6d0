//! The HTTP API: discovery, every verb on every served version, errors as `metav1.Status`,
//! over HTTPS (HTTP/1.1 and HTTP/2) with rustls.
//!
//! Three layers, top to bottom: [`ApiServer::router`] and the routes (authentication, then
//! where a request goes by its [`crate::request_info::RequestInfo`], read once); the handlers
//! by verb family (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, and the
//! `scale` subresource), which share the request and response helpers; and under them the
//! generic store ([`crate::store`]), the only way to storage.

mod action;
mod audited;
mod compression;
mod create;
mod custom_openapi;
mod deadline;
mod delete;
pub mod delete_options;
mod discovery;
mod entity_tag;
mod get;
mod health;
mod health_endpoints;
mod lifecycle;
mod list;
mod max_in_flight;
pub(crate) mod media;
pub mod metrics;
mod openapi;
mod openapi_answers;
mod openid;
mod patch;
mod proto;
pub mod query;
mod request;
mod resource;
mod response;
mod reviews;
mod routes;
mod scale;
mod server;
mod serving;
mod update;
mod watch;
mod written;

pub use audited::AuditId;
pub use compression::{accepts_gzip, api_answer as compressed_api_answer};
pub use deadline::{Deadline, Streamed};
pub use discovery::storage_version_hash;
pub use health::HealthCheck;
pub use max_in_flight::MaxInFlight;
pub use openid::{
    CONFIGURATION_PATH as OPENID_CONFIGURATION_PATH, KEYS_PATH as OPENID_KEYS_PATH, OpenIdMetadata,
};
pub use response::plain_text;
pub use routes::aggregated_discovery_answer;
pub use server::{
    ApiServer, Created, CreatedFuture, MAX_BODY_BYTES, REQUEST_TIMEOUT, STALLED_WATCH,
    SubresourceCreator, TokenAuthenticator, TokenFuture, VersionInfo,
};
pub use serving::{
    CommandError, InProcessService, Listening, serve_router, tls_config, tls_config_with_clients,
};
