//! The text `gopkg.in/evanphx/json-patch.v4` writes of a patched document, which
//! kube-apiserver quotes when a JSON or merge patch leaves a value its Go type cannot take
//! (`"" is invalid: patch: Invalid value: "{…}": json: cannot unmarshal …`).
//!
//! The library holds a document as lazy nodes: each keeps the bytes it came with until the
//! patch has to look inside it. So what the patch walked through (every object on an
//! operation's path, and what it merged into) is written as a Go map, keys sorted, while
//! everything else keeps the order and the bytes it had: the current object as
//! kube-apiserver encoded it (Go's field order) and the values as the patch sent them. Go's
//! `json.Marshal` then compacts what each node writes and escapes `<`, `>` and `&`.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

/// A lazy node: its bytes as they came, or looked into.
#[derive(Debug, Clone)]
enum Node {
    /// Not looked into: its text.
    Raw(String),
    /// An object looked into.
    Doc(Doc),
    /// An array looked into.
    Array(Vec<Option<Node>>),
}

/// An object looked into; `None` is a `null` member (a nil node).
type Doc = BTreeMap<String, Option<Node>>;

impl Node {
    /// The object this node is, looked into; `None` when it is no object.
    fn doc(&mut self) -> Option<&mut Doc> {
        if let Node::Raw(text) = self {
            *self = Node::Doc(parse_doc(text)?);
        }
        match self {
            Node::Doc(doc) => Some(doc),
            _ => None,
        }
    }

    /// The array this node is, looked into; `None` when it is no array.
    fn array(&mut self) -> Option<&mut Vec<Option<Node>>> {
        if let Node::Raw(text) = self {
            let items: Vec<Option<&RawValue>> = serde_json::from_str(text).ok()?;
            *self = Node::Array(items.into_iter().map(raw_node).collect());
        }
        match self {
            Node::Array(items) => Some(items),
            _ => None,
        }
    }

    fn write(&self, out: &mut String) {
        match self {
            Node::Raw(text) => compact_into(text, out),
            Node::Doc(doc) => write_doc(doc, out),
            Node::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_member(item.as_ref(), out);
                }
                out.push(']');
            }
        }
    }
}

fn raw_node(raw: Option<&RawValue>) -> Option<Node> {
    raw.map(|raw| Node::Raw(raw.get().to_owned()))
}

/// An object's members as lazy nodes; `None` when `text` is no object.
fn parse_doc(text: &str) -> Option<Doc> {
    let members: BTreeMap<String, Option<&RawValue>> = serde_json::from_str(text).ok()?;
    Some(
        members
            .into_iter()
            .map(|(key, raw)| (key, raw_node(raw)))
            .collect(),
    )
}

fn write_member(node: Option<&Node>, out: &mut String) {
    match node {
        Some(node) => node.write(out),
        None => out.push_str("null"),
    }
}

fn write_doc(doc: &Doc, out: &mut String) {
    out.push('{');
    for (i, (key, node)) in doc.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        compact_into(&serde_json::to_string(key).unwrap_or_default(), out);
        out.push(':');
        write_member(node.as_ref(), out);
    }
    out.push('}');
}

/// `text` (one JSON value) as Go's `json.Compact` with HTML escaping writes it: no space
/// outside strings; `<`, `>`, `&`, U+2028 and U+2029 escaped.
fn compact_into(text: &str, out: &mut String) {
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            match c {
                _ if escaped => {
                    escaped = false;
                    out.push(c);
                }
                '\\' => {
                    escaped = true;
                    out.push(c);
                }
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                '&' => out.push_str("\\u0026"),
                '\u{2028}' => out.push_str("\\u2028"),
                '\u{2029}' => out.push_str("\\u2029"),
                c => out.push(c),
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_ascii_whitespace() {
            out.push(c);
        }
    }
}

/// The text of `current` (an object, as kube-apiserver encoded it) after the merge patch
/// `patch` (an object), as the library's `MergePatch` writes it; `None` when either is no
/// object.
pub fn merge_patched(current: &str, patch: &str) -> Option<String> {
    let mut doc = parse_doc(current)?;
    let patch = parse_doc(patch)?;
    merge_docs(&mut doc, patch);
    let mut out = String::new();
    write_doc(&doc, &mut out);
    Some(out)
}

/// `mergeDocs`: each member of the patch deleted (`null`), added, or merged into the
/// document's.
fn merge_docs(doc: &mut Doc, patch: Doc) {
    for (key, value) in patch {
        match value {
            None => {
                doc.remove(&key);
            }
            Some(mut value) => match doc.get_mut(&key) {
                Some(Some(current)) => merge(current, value),
                _ => {
                    prune_nulls(&mut value);
                    doc.insert(key, Some(value));
                }
            },
        }
    }
}

/// `merge`: two objects merged member by member; anything else replaced by the patch's
/// value (its nulls pruned when it replaces what is no object).
fn merge(current: &mut Node, mut patch: Node) {
    if current.doc().is_none() {
        prune_nulls(&mut patch);
        *current = patch;
        return;
    }
    // The patch's object looked into; its members keep their bytes.
    let Some(patch_doc) = patch.doc().map(std::mem::take) else {
        *current = patch;
        return;
    };
    if let Some(doc) = current.doc() {
        merge_docs(doc, patch_doc);
    }
}

/// `pruneNulls`: an object's `null` members dropped, all the way down (each object and
/// array on the way looked into).
fn prune_nulls(node: &mut Node) {
    if let Some(doc) = node.doc() {
        doc.retain(|_, member| member.is_some());
        for member in doc.values_mut().flatten() {
            prune_nulls(member);
        }
    } else if let Some(items) = node.array() {
        for item in items.iter_mut().flatten() {
            prune_nulls(item);
        }
    }
}

/// The text of `current` after the JSON patch `patch` (an array of operations, already
/// checked to apply), as the library's `Apply` writes it; `None` when `current` is no object
/// or an operation does not apply here.
pub fn json_patched(current: &str, patch: &str) -> Option<String> {
    let operations: Vec<BTreeMap<String, &RawValue>> = serde_json::from_str(patch).ok()?;
    let mut root = Node::Doc(parse_doc(current)?);
    for operation in &operations {
        apply(&mut root, operation)?;
    }
    let mut out = String::new();
    root.write(&mut out);
    Some(out)
}

/// One operation, as the library applies it; its value keeps the bytes the patch sent.
fn apply(root: &mut Node, operation: &BTreeMap<String, &RawValue>) -> Option<()> {
    let text = |member: &str| -> Option<String> {
        serde_json::from_str(operation.get(member)?.get()).ok()
    };
    let path = text("path")?;
    let value = || {
        operation
            .get("value")
            .map(|raw| Node::Raw(raw.get().to_owned()))
    };
    match text("op")?.as_str() {
        "add" => {
            let (container, key) = find(root, &path)?;
            add_member(container, &key, value())
        }
        "replace" => {
            let (container, key) = find(root, &path)?;
            let slot = get(container, &key)?;
            *slot = value();
            Some(())
        }
        "remove" => {
            let (container, key) = find(root, &path)?;
            remove(container, &key).map(|_| ())
        }
        "test" => {
            let (container, key) = find(root, &path)?;
            // Equal documents are compared member by member: every object in it looked into.
            if let Some(found) = get(container, &key)?.as_mut() {
                look_into_all(found);
            }
            Some(())
        }
        "move" => {
            let (container, key) = find(root, &text("from")?)?;
            let moved = remove(container, &key)?;
            let (container, key) = find(root, &path)?;
            add_member(container, &key, moved)
        }
        "copy" => {
            let (container, key) = find(root, &text("from")?)?;
            // A deep copy is the node written and read again: its text.
            let copied = get(container, &key)?.as_ref().map(|node| {
                let mut text = String::new();
                node.write(&mut text);
                Node::Raw(text)
            });
            let (container, key) = find(root, &path)?;
            add_member(container, &key, copied)
        }
        _ => None,
    }
}

/// Every object and array of `node` looked into.
fn look_into_all(node: &mut Node) {
    if let Some(doc) = node.doc() {
        for member in doc.values_mut().flatten() {
            look_into_all(member);
        }
    } else if let Some(items) = node.array() {
        for item in items.iter_mut().flatten() {
            look_into_all(item);
        }
    }
}

/// `findObject`: the container of the path's last token, every node on the way looked
/// into, and that token decoded (`~1` is `/`, `~0` is `~`).
fn find<'a>(root: &'a mut Node, path: &str) -> Option<(&'a mut Node, String)> {
    let mut parts: Vec<String> = path
        .split('/')
        .skip(1)
        .map(|part| part.replace("~1", "/").replace("~0", "~"))
        .collect();
    let key = parts.pop()?;
    let mut node = root;
    for part in parts {
        node = get(node, &part)?.as_mut()?;
        // Looked into as what it is.
        if node.doc().is_none() {
            node.array()?;
        }
    }
    Some((node, key))
}

/// The member or item `key` of a container.
fn get<'a>(container: &'a mut Node, key: &str) -> Option<&'a mut Option<Node>> {
    match container {
        Node::Doc(doc) => doc.get_mut(key),
        Node::Array(items) => items.get_mut(key.parse::<usize>().ok()?),
        Node::Raw(_) => None,
    }
}

fn add_member(container: &mut Node, key: &str, value: Option<Node>) -> Option<()> {
    match container {
        Node::Doc(doc) => {
            doc.insert(key.to_owned(), value);
        }
        Node::Array(items) if key == "-" => items.push(value),
        Node::Array(items) => {
            let at = key.parse::<usize>().ok().filter(|at| *at <= items.len())?;
            items.insert(at, value);
        }
        Node::Raw(_) => return None,
    }
    Some(())
}

fn remove(container: &mut Node, key: &str) -> Option<Option<Node>> {
    match container {
        Node::Doc(doc) => doc.remove(key),
        Node::Array(items) => {
            let at = key.parse::<usize>().ok().filter(|at| *at < items.len())?;
            Some(items.remove(at))
        }
        Node::Raw(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A PriorityLevelConfiguration as kube-apiserver encodes it (Go's field order).
    const CURRENT: &str = r#"{"kind":"PriorityLevelConfiguration","apiVersion":"flowcontrol.apiserver.k8s.io/v1","metadata":{"name":"p","uid":"u","generation":1},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"limitResponse":{"type":"Reject"},"lendablePercent":0}},"status":{}}
"#;

    /// What kube-apiserver 1.37 quoted for each patch (the differential suite's
    /// `a_patch_whose_result_does_not_decode_is_invalid`, on this object).
    #[test]
    fn merge_patches_are_written_as_the_library_writes_them() {
        assert_eq!(
            merge_patched(
                CURRENT,
                r#"{"spec": {"limited": {"nominalConcurrencyShares": "high"}}}"#
            )
            .unwrap(),
            r#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"p","uid":"u","generation":1},"spec":{"limited":{"lendablePercent":0,"limitResponse":{"type":"Reject"},"nominalConcurrencyShares":"high"},"type":"Limited"},"status":{}}"#
        );
        assert_eq!(
            merge_patched(
                CURRENT,
                r#"{"metadata": {"labels": {"a": 1}}, "spec": {"type": "Limited"}}"#
            )
            .unwrap(),
            r#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"generation":1,"labels":{"a":1},"name":"p","uid":"u"},"spec":{"limited":{"nominalConcurrencyShares":5,"limitResponse":{"type":"Reject"},"lendablePercent":0},"type":"Limited"},"status":{}}"#
        );
        // Nulls delete; a patch's object put where there was none has its nulls pruned.
        assert_eq!(
            merge_patched(
                r#"{"b": {"y": 1, "x": 2}, "a": 1}"#,
                r#"{"a": null, "c": {"z": null, "w": "<"}}"#
            )
            .unwrap(),
            r#"{"b":{"y":1,"x":2},"c":{"w":"\u003c"}}"#
        );
    }

    #[test]
    fn json_patches_are_written_as_the_library_writes_them() {
        let patched =
            |operations: serde_json::Value| json_patched(CURRENT, &operations.to_string()).unwrap();
        assert_eq!(
            patched(
                json!([{"op": "replace", "path": "/spec/limited/nominalConcurrencyShares",
                "value": "high"}])
            ),
            r#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"p","uid":"u","generation":1},"spec":{"limited":{"lendablePercent":0,"limitResponse":{"type":"Reject"},"nominalConcurrencyShares":"high"},"type":"Limited"},"status":{}}"#
        );
        assert_eq!(
            patched(json!([{"op": "add", "path": "/metadata/labels", "value": {"a": true}}])),
            r#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"generation":1,"labels":{"a":true},"name":"p","uid":"u"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"limitResponse":{"type":"Reject"},"lendablePercent":0}},"status":{}}"#
        );
        // Moved and copied values keep their bytes; an array's items too.
        assert_eq!(
            json_patched(
                r#"{"a": {"z": 1, "y": [{"q": 1, "p": 2}]}, "b": 0}"#,
                r#"[{"op": "copy", "from": "/a/y", "path": "/c"},
                    {"op": "move", "from": "/b", "path": "/a/x"},
                    {"op": "add", "path": "/d", "value": {"z": 1, "a": "&"}}]"#
            )
            .unwrap(),
            r#"{"a":{"x":0,"y":[{"q":1,"p":2}],"z":1},"c":[{"q":1,"p":2}],"d":{"z":1,"a":"\u0026"}}"#
        );
        // Cut and garbled: no text, no panic.
        assert_eq!(json_patched("[1]", "[]"), None);
        assert_eq!(json_patched(CURRENT, "[{\"op\": \"add\""), None);
        assert_eq!(
            json_patched(CURRENT, r#"[{"op": "add", "path": "/x/y/z", "value": 1}]"#),
            None
        );
    }
}
