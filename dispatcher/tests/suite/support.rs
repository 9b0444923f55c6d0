//! Helpers the test modules share.

use apfkit_dispatcher::classify::Request;

/// A GET of pods in `default` by `user`, an authenticated user (the `global-default` flow).
pub fn request(user: &'static str) -> Request<'static> {
    Request {
        user,
        groups: &["system:authenticated"],
        verb: "get",
        is_resource_request: true,
        resource: "pods",
        namespace: "default",
        ..Request::default()
    }
}
