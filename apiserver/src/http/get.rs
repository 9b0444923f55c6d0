//! GET of one object (`k8s.io/apiserver/pkg/endpoints/handlers/get.go`): the stored object in
//! the URL's version, written once per revision for every request that asks alike, or as a
//! table.

use apfkit_runtime::Object;
use axum::body::Bytes;
use axum::response::Response;

use super::list::not_ahead;
use super::media::Format;
use super::query::{Query, ReadAt};
use super::request::Target;
use super::response::{Transform, content_type, encode, respond, transformed, written};
use super::server::ApiServer;
use super::written::Writing;
use crate::error::ApiError;

pub(super) async fn get<H>(
    server: &ApiServer<H>,
    target: &Target<H>,
    query: &Query,
    format: Format,
    transform: Option<Transform>,
) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
{
    // A resourceVersion is "not older than" for a get (store_tests.go, RunTestGet).
    if let ReadAt::NotOlderThan(wanted) | ReadAt::Exact(wanted) = query.read_at {
        not_ahead(server, wanted).await?;
    }
    let stored = server
        .objects
        .get_stored(&target.served, target.place())
        .await?;
    if let Some(transform) = transform {
        let object = server
            .objects
            .decode_as(&target.served, &stored, target.codec())?;
        let metadata = serde_json::json!({
            "resourceVersion": object.metadata().resource_version,
        });
        let answer = transformed(target, vec![object], transform, metadata, false)?;
        return Ok(respond(
            200,
            content_type(format),
            written(&answer, format)?,
        ));
    }
    // Written once per revision, version and format, for every GET that asks alike.
    let how = (
        target.served.codec_id(target.version),
        format,
        Writing::Object,
    );
    let body = server
        .written
        .get_or_write(stored.key(), stored.revision(), how, || {
            let object = server
                .objects
                .decode_as(&target.served, &stored, target.codec())?;
            Ok(Bytes::from(encode(target.codec(), object, format)?))
        })?;
    Ok(respond(200, content_type(format), body))
}
