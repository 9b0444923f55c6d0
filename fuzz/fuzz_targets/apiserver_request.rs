//! What a client controls in a request to `apfkit serve`, besides bodies of objects (which the
//! document targets cover): the query string (selectors, continue tokens, resource versions,
//! limits) and patch bodies of each type, applied to a stored FlowSchema with the schema its
//! strategic merges read; the query bytes also as a URL (`RequestInfo`), as a token file and
//! as a `timeout` duration; and a delete's body as `DeleteOptions` in each media type.
//! Never a panic; a query either parses or is a 400; a patch either
//! applies or is refused, and a strategic merge leaves an object or nothing; a JSON or merge
//! patch's text as evanphx/json-patch writes it is JSON, the object the patch made.
#![no_main]

use apfkit_apiserver::auth::Authenticator;
use apfkit_apiserver::http::delete_options::DeleteOptions;
use apfkit_apiserver::http::query::Query;
use apfkit_apiserver::patch::{self, SchemaView};
use apfkit_apiserver::request_info::RequestInfo;
use apfkit_apiserver::selector::{FieldSelector, LabelSelector};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    if choice % 5 == 4 {
        // DeleteOptions: decoded, or a 400, 415 or 422; never a panic.
        let content_type = [
            "application/json",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
        ][usize::from(choice / 5) % 3];
        if let Err(error) = DeleteOptions::read(
            Some(content_type),
            rest,
            &Query::parse(None).expect("no query"),
        ) {
            assert!([400, 415, 422].contains(&error.code), "{error:?}");
        }
        return;
    }
    match choice % 5 {
        0 => {
            if let Err(error) = Query::parse(Some(&text)) {
                assert_eq!(error.code, 400, "{error:?}");
            }
            let _ = LabelSelector::parse(&text);
            let _ = FieldSelector::parse(&text);
            // The same bytes as a URL path and query, as APF reads requests, and as a token
            // file, as authentication reads it.
            let (path, query) = text.split_once('?').unwrap_or((&text, ""));
            for method in ["GET", "POST", "DELETE"] {
                let info = RequestInfo::new(method, path, Some(query));
                assert!(info.is_resource_request || info.verb == method.to_ascii_lowercase());
            }
            let _ = Authenticator::new(true).with_token_file(&text);
            // And as a `?timeout=` value: Go's duration or Go's error, never a panic.
            if let Err(error) = apfkit_runtime::go_duration::parse_go_duration(&text) {
                assert!(error.to_string().starts_with("time: "), "{error}");
            }
        }
        kind => {
            let schema = schema();
            let mut object = stored();
            let result = match kind {
                // evanphx/json-patch's port, with kube's own operation type decoded first
                // (fieldValidation Strict or Warn) or not.
                1 => {
                    let before = object.clone();
                    let result = patch::json_patch(&mut object, rest, choice & 4 != 0);
                    if result.is_err() {
                        assert_eq!(object, before, "a failed patch changes nothing");
                    }
                    result
                }
                2 => patch::merge_patch(&mut object, rest),
                _ => patch::strategic_merge_patch(&mut object, rest, SchemaView::new(&schema)),
            };
            if result.is_ok() && kind == 3 {
                assert!(object.is_object() || object.is_null(), "{object}");
            }
            // evanphx/json-patch's text of the patched object (what kube quotes when the
            // result does not decode): JSON, and the same object as the patch made.
            let current = stored().to_string();
            let patched = match kind {
                1 => apfkit_apiserver::__fuzz::json_patched(&current, &text),
                2 => apfkit_apiserver::__fuzz::merge_patched(&current, &text),
                _ => None,
            };
            if let Some(patched) = patched {
                let value: serde_json::Value =
                    serde_json::from_str(&patched).expect("evanphx's text is JSON");
                if result.is_ok() && std::str::from_utf8(rest).is_ok() {
                    assert_eq!(value, object, "{patched}");
                }
            }
        }
    }
});

fn stored() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": "a", "labels": {"x": "1"}, "finalizers": ["f"]},
        "spec": {
            "priorityLevelConfiguration": {"name": "p"},
            "matchingPrecedence": 10,
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "u"}}]}],
        },
        "status": {"conditions": [{"type": "Dangling", "status": "False"}]},
    })
}

fn schema() -> serde_json::Value {
    let info = apfkit_types::KINDS
        .iter()
        .find(|k| k.api_version == "flowcontrol.apiserver.k8s.io/v1" && k.kind == "FlowSchema")
        .expect("FlowSchema v1");
    info.json_schema().expect("a schema")
}
