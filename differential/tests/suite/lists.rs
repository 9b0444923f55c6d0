//! Lists and watches: selectors, pages, every `resourceVersion` × `resourceVersionMatch`,
//! watches from a resource version across updates that enter and leave a selector, and
//! WatchList's initial events with their closing bookmark.

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

use crate::deletion::priority_level;

const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
const MERGE: &str = "application/merge-patch+json";
/// The selectors of each case's objects.
const OURS: &str = "labelSelector=case%3Dlists";
const WATCHED: &str = "labelSelector=case%3Dwatches";

/// A list's items by name, with what the request asked for.
fn names(list: &Value) -> Value {
    let items: Vec<Value> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| item["metadata"]["name"].clone())
        .collect();
    json!({"kind": list["kind"], "items": items,
        "continue": list["metadata"]["continue"],
        "remainingItemCount": list["metadata"]["remainingItemCount"],
        "code": list["code"], "reason": list["reason"], "message": list["message"]})
}

/// A watch's events: type, name and the labels that decide the selector; a bookmark by its
/// annotations (its resource version is the store's, moved by other cases).
fn events(events: &Value) -> Value {
    match events {
        Value::Array(events) => events
            .iter()
            .map(|event| {
                let metadata = &event["object"]["metadata"];
                json!([
                    event["type"],
                    metadata["name"],
                    metadata["labels"]["tier"],
                    metadata["annotations"]
                ])
            })
            .collect(),
        other => other.clone(),
    }
}

/// [`events`] without the bookmarks a watch gets on a timer (kube's cacher sends one on its
/// one-second tick near a watch's end, which a one-second watch may or may not see): the
/// initial list's closing bookmark stays.
fn events_untimed(body: &Value) -> Value {
    match events(body) {
        Value::Array(events) => events
            .into_iter()
            .filter(|event| event[0] != "BOOKMARK" || !event[3].is_null())
            .collect(),
        other => other,
    }
}

/// A watch's events as one-row `Table`s: each event's type, whether its table has column
/// definitions, and its rows (their cells but the last, the `Age` that a moment changes; the
/// row's object's kind, name and annotations); without the bookmarks a watch gets on a timer,
/// as [`events_untimed`].
fn table_events_untimed(body: &Value) -> Value {
    let Value::Array(events) = body else {
        return body.clone();
    };
    let rows = |table: &Value| -> Value {
        table["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|row| {
                let mut cells = row["cells"].as_array().cloned().unwrap_or_default();
                cells.pop();
                let object = &row["object"];
                json!({"cells": cells, "object": [object["kind"], object["apiVersion"],
                    object["metadata"]["name"], object["metadata"]["annotations"]]})
            })
            .collect()
    };
    events
        .iter()
        .map(|event| {
            let table = &event["object"];
            json!({"type": event["type"], "kind": table["kind"],
                "columns": table["columnDefinitions"].as_array().map(Vec::len),
                "rows": rows(table)})
        })
        .filter(|event| {
            event["type"] != "BOOKMARK"
                || !event["rows"][0]["object"][3].is_null()
                || event["kind"] != "Table"
        })
        .collect()
}

/// [`events_untimed`], each event with its object's kind and `apiVersion` first.
fn typed_events_untimed(body: &Value) -> Value {
    let Value::Array(all) = body else {
        return body.clone();
    };
    let kinds = all
        .iter()
        .map(|event| json!([event["object"]["kind"], event["object"]["apiVersion"]]));
    let events = events(body);
    kinds
        .zip(events.as_array().into_iter().flatten())
        .filter(|(_, event)| event[0] != "BOOKMARK" || !event[3].is_null())
        .map(|(kind, event)| json!([kind, event]))
        .collect()
}

/// A PriorityLevelConfiguration labelled with its `case` (each case selects only its own
/// objects: cases run side by side) and a `tier`.
fn level(name: &str, case: &str, tier: &str) -> Value {
    priority_level(name, json!({"labels": {"case": case, "tier": tier}}))
}

/// Three objects listed by label and field selector, in pages, at every resource version and
/// match.
async fn lists_select_page_and_read_at_resource_versions(s: &mut Session) {
    let mut written = Vec::new();
    for (name, tier) in [
        ("listed-a", "one"),
        ("listed-b", "two"),
        ("listed-c", "one"),
    ] {
        let made = s
            .send(Request::post(LEVELS, &level(name, "lists", tier)))
            .await;
        written.push(
            made["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    s.send(Request::get(&format!("{LEVELS}?{OURS}")).selecting(names))
        .await;
    s.send(
        Request::get(&format!(
            "{LEVELS}?labelSelector=case%3Dlists,tier%21%3Done"
        ))
        .selecting(names),
    )
    .await;
    s.send(
        Request::get(&format!(
            "{LEVELS}?labelSelector=case%3Dlists,tier+in+(one)"
        ))
        .selecting(names),
    )
    .await;
    s.send(
        Request::get(&format!(
            "{LEVELS}?{OURS}&fieldSelector=metadata.name%3Dlisted-b"
        ))
        .selecting(names),
    )
    .await;
    s.send(
        Request::get(&format!(
            "{LEVELS}?{OURS}&fieldSelector=metadata.name%21%3Dlisted-b"
        ))
        .selecting(names),
    )
    .await;
    // Selectors that do not parse, and a field no selector knows.
    for query in [
        "labelSelector=a%3D%3D%3Db",
        "labelSelector=tier+in+one",
        "fieldSelector=spec.type%3DLimited",
        "fieldSelector=metadata.name",
    ] {
        s.send(Request::get(&format!("{LEVELS}?{query}"))).await;
    }
    // Kinds with a field label conversion of their own: Services (`spec.type`,
    // `spec.clusterIP`), Namespaces (`status.phase`, no `metadata.namespace`).
    for path in [
        "/api/v1/namespaces/default/services?fieldSelector=spec.type%3DClusterIP,metadata.name%3Dnone",
        "/api/v1/namespaces/default/services?fieldSelector=spec.ports%3D1",
        "/api/v1/namespaces?fieldSelector=status.phase%3DActive,metadata.name%3Ddefault",
        "/api/v1/namespaces?fieldSelector=status.phase%21%3DActive,metadata.name%3Ddefault",
        "/api/v1/namespaces?fieldSelector=metadata.namespace%3Ddefault",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?fieldSelector=spec.group%3Dx",
    ] {
        s.send(Request::get(path).selecting(names)).await;
    }
    // Pages of one, to the end.
    let mut path = format!("{LEVELS}?{OURS}&limit=1");
    for _ in 0..4 {
        let page = s.send(Request::get(&path).selecting(names)).await;
        match page["metadata"]["continue"].as_str() {
            Some(token) if !token.is_empty() => {
                path = format!("{LEVELS}?{OURS}&limit=1&continue={token}");
            }
            _ => break,
        }
    }
    s.send(Request::get(&format!(
        "{LEVELS}?{OURS}&limit=1&continue=garbage"
    )))
    .await;
    // Every resource version with every match, the first write's among them.
    let first = &written[0];
    for (version, matching) in [
        ("", ""),
        ("", "NotOlderThan"),
        ("", "Exact"),
        ("0", ""),
        ("0", "NotOlderThan"),
        ("0", "Exact"),
        (first.as_str(), ""),
        (first.as_str(), "NotOlderThan"),
        (first.as_str(), "Exact"),
        ("", "Sometimes"),
        ("abc", ""),
    ] {
        s.send(
            Request::get(&format!(
                "{LEVELS}?{OURS}&resourceVersion={version}&resourceVersionMatch={matching}"
            ))
            .selecting(names),
        )
        .await;
    }
    s.send(Request::get(&format!(
        "{LEVELS}/listed-a?resourceVersion=0"
    )))
    .await;
    for name in ["listed-a", "listed-b", "listed-c"] {
        s.send(Request::delete(&format!("{LEVELS}/{name}"))).await;
    }
}

/// A watch from a resource version replays what followed it: creates, an update that moves
/// an object into the selector and one that moves it out, a delete; WatchList sends the
/// current objects, then a bookmark marking the end of them.
async fn watches_replay_from_a_resource_version(s: &mut Session) {
    let made = s
        .send(Request::post(LEVELS, &level("watched-a", "watches", "one")))
        .await;
    let from = made["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    s.send(Request::post(LEVELS, &level("watched-b", "watches", "two")))
        .await;
    s.send(Request::patch(
        &format!("{LEVELS}/watched-b"),
        MERGE,
        &json!({"metadata": {"labels": {"tier": "one"}}}),
    ))
    .await;
    s.send(Request::patch(
        &format!("{LEVELS}/watched-a"),
        MERGE,
        &json!({"metadata": {"labels": {"tier": "two"}}}),
    ))
    .await;
    s.send(Request::delete(&format!("{LEVELS}/watched-b")))
        .await;
    let watched = "labelSelector=case%3Dwatches,tier%3Done";
    s.send(
        Request::get(&format!(
            "{LEVELS}?watch=true&{watched}&resourceVersion={from}&timeoutSeconds=1"
        ))
        .selecting(events),
    )
    .await;
    s.send(
        Request::get(&format!(
            "{LEVELS}?watch=true&{WATCHED}&resourceVersion={from}&timeoutSeconds=1"
        ))
        .selecting(events),
    )
    .await;
    s.send(
        Request::get(&format!(
            "{LEVELS}?watch=true&{WATCHED}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
        ))
        .selecting(events_untimed),
    )
    .await;
    // As tables: the column definitions in the first event alone, the bookmark a table too
    // (with its object's metadata), as kube's watch encoder writes them.
    for watch in [
        format!(
            "{LEVELS}?watch=true&{WATCHED}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
        ),
        format!("{LEVELS}?watch=true&{WATCHED}&resourceVersion={from}&timeoutSeconds=1"),
    ] {
        s.send(
            Request::get(&watch)
                .accept("application/json;as=Table;v=v1;g=meta.k8s.io")
                .selecting(table_events_untimed),
        )
        .await;
    }
    // As PartialObjectMetadata: the bookmark too.
    s.send(
        Request::get(&format!(
            "{LEVELS}?watch=true&{WATCHED}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
        ))
        .accept("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
        .selecting(typed_events_untimed),
    )
    .await;
    // A WatchList to a client that accepts gzip is gzipped (1.37's `WatchListCompression`);
    // a plain watch, or a token that is not exactly `gzip`, is not.
    let watch_list = format!(
        "{LEVELS}?watch=true&{WATCHED}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
    );
    for accept_encoding in ["gzip", "deflate, gzip", "gzip;q=1"] {
        s.send(
            Request::get(&watch_list)
                .header("Accept-Encoding", accept_encoding)
                .selecting(events_untimed),
        )
        .await;
    }
    s.send(
        Request::get(&format!(
            "{LEVELS}?watch=true&{WATCHED}&resourceVersion={from}&timeoutSeconds=1"
        ))
        .header("Accept-Encoding", "gzip")
        .selecting(events_untimed),
    )
    .await;
    // WatchList's conditions: bookmarks asked for, a match of NotOlderThan.
    s.send(Request::get(&format!(
        "{LEVELS}?watch=true&{WATCHED}&sendInitialEvents=true&timeoutSeconds=1"
    )))
    .await;
    s.send(Request::get(&format!(
        "{LEVELS}?watch=true&{WATCHED}&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=Exact&timeoutSeconds=1"
    )))
    .await;
    s.send(Request::delete(&format!("{LEVELS}/watched-a")))
        .await;
}

crate::cases!(
    lists_select_page_and_read_at_resource_versions,
    watches_replay_from_a_resource_version,
);
