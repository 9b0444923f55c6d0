//! A conversion webhook's answer, which the webhook controls: whatever bytes it sends back
//! for a review of one object or of a list's items, the client checks them as
//! kube-apiserver does and answers the converted objects or why not. Never a panic; a
//! converted object is of the version asked for, of the original's kind and name, with the
//! original's uid.
#![no_main]

use std::sync::Arc;

use apfkit_apiextensions::webhook::{ReviewHandler, Webhook};
use serde_json::{Value, json};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let answer = rest.to_vec();
    // The review's uid goes where the answer says `UID`, so that answers can echo it.
    let webhook = Webhook::in_process(ReviewHandler(Arc::new(move |review: &[u8]| {
        let review: Value = serde_json::from_slice(review).map_err(|e| e.to_string())?;
        let uid = review["request"]["uid"].as_str().unwrap_or_default().to_owned();
        let text = String::from_utf8_lossy(&answer).replace("UID", &uid);
        Ok(text.into_bytes())
    })));
    let object = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default", "uid": "u-1", "labels": {"a": "1"}},
            "spec": {"size": 1}})
    };
    let converted: Vec<Value> = if choice % 2 == 0 {
        match webhook.convert(object("w"), "example.com/v2") {
            Ok(converted) => vec![converted],
            Err(_) => return,
        }
    } else {
        let items = vec![object("w"), object("x")];
        match webhook.convert_list("example.com/v1, Kind=WidgetList", items, "example.com/v2") {
            Ok(converted) => converted,
            Err(_) => return,
        }
    };
    for (converted, name) in converted.iter().zip(["w", "x"]) {
        assert_eq!(converted["apiVersion"], "example.com/v2");
        assert_eq!(converted["kind"], "Widget");
        assert_eq!(converted["metadata"]["name"], name);
        assert_eq!(converted["metadata"]["uid"], "u-1");
    }
});
