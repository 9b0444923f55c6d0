//! Bodies a server cannot decode, answered in Go's words (issue 55, item 13): JSON cut
//! short or with text after it, a body that is not an object, `null` and `{}`, an
//! `apiVersion` or `kind` of the wrong type, YAML that is a list, on a built-in kind and a
//! core kind.

use apfkit_differential::{Request, Session};
use serde_json::json;

const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
const SERVICES: &str = "/api/v1/namespaces/default/services";

/// Bodies that are not JSON objects, or not JSON at all.
async fn bodies_that_do_not_decode_are_refused_in_gos_words(s: &mut Session) {
    for (path, body) in [
        (
            LEVELS,
            &b"{\"apiVersion\": \"flowcontrol.apiserver.k8s.io/v1\", \"kind\""[..],
        ),
        (LEVELS, b"[1, 2]"),
        (LEVELS, b"\"text\""),
        (LEVELS, b"null"),
        (LEVELS, b""),
        (LEVELS, b"{}"),
        (LEVELS, b"{\"kind\": 5}"),
        (
            SERVICES,
            b"{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {",
        ),
        (
            SERVICES,
            b"{\"apiVersion\": \"v1\", \"kind\": \"Service\"} trailing",
        ),
    ] {
        s.send(Request::post(path, &json!(null)).raw("application/json", body))
            .await;
    }
    s.send(Request::post(LEVELS, &json!(null)).raw("application/yaml", b"- 1\n- 2\n"))
        .await;
}

crate::cases!(bodies_that_do_not_decode_are_refused_in_gos_words);
