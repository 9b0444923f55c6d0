//! Patches as kube-apiserver applies them: JSON patch (RFC 6902) and JSON merge patch
//! (RFC 7386) with the `json-patch` crate, and strategic merge patch, which merges lists by
//! the patch strategy and merge key each field's schema carries
//! (`x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`), with its directives
//! (`$patch`, `$retainKeys`, `$deleteFromPrimitiveList/`, `$setElementOrder/`), after
//! apimachinery's `pkg/util/strategicpatch/patch.go`.

use serde_json::{Map, Value};

/// kube-apiserver's limit on the operations of one JSON patch
/// (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go`, `maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The first key an apply body repeats within one mapping, worded as go-yaml's strict
/// unmarshal words it (`line 11: key "foo" already set in map`), which kube-apiserver reports
/// for an apply with `fieldValidation=Strict` (`k8s.io/apiserver/pkg/endpoints/handlers/
/// patch.go`, `applyPatcher`: `yaml.UnmarshalStrict`); its lines count from the body's first.
/// `None` for a body without one, or one that is not YAML (its reading says why).
pub fn repeated_yaml_key(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    match serde_saphyr::from_str_with_options::<Value>(text, options) {
        Err(error) => match error.without_snippet() {
            serde_saphyr::Error::DuplicateMappingKey {
                key: Some(key),
                location,
            } => Some(format!(
                "line {}: key {key:?} already set in map",
                location.line()
            )),
            _ => None,
        },
        Ok(_) => None,
    }
}

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch is not what its media type says (400).
    #[error("{0}")]
    Malformed(String),
    /// Too many JSON patch operations (413).
    #[error(
        "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {0}"
    )]
    TooManyOperations(usize),
    /// The patch does not apply to the object (422, with the patch as the bad value).
    #[error("{0}")]
    Failed(String),
    /// A JSON patch operation does not apply (422, kube-apiserver's generic answer with the
    /// library's message as its cause).
    #[error("{0}")]
    NotApplied(String),
}

/// Applies a JSON patch (a JSON array of operations) to `document`, as kube-apiserver does
/// (`crate::json_patch`: evanphx/json-patch's readings and messages). `validated`: fields are
/// validated (Strict or Warn), so the operations are first decoded as kube-apiserver's own
/// type, whose errors it answers instead of the library's.
///
/// # Errors
///
/// A patch that is not an array of operations, has too many, or does not apply.
pub fn json_patch(document: &mut Value, patch: &[u8], validated: bool) -> Result<(), PatchError> {
    use crate::json_patch::{JsonPatchError, apply, check_operations, decode};
    let message = |error| match error {
        JsonPatchError::Decode(message) | JsonPatchError::Apply(message) => message,
    };
    let operations: Value =
        serde_json::from_slice(patch).map_err(|e| PatchError::Malformed(e.to_string()))?;
    if validated {
        check_operations(&operations)
            .map_err(|e| PatchError::Malformed(format!("error decoding patch: {e}")))?;
    }
    let operations = decode(&operations).map_err(|e| PatchError::Malformed(message(e)))?;
    if operations.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations(operations.len()));
    }
    apply(document, &operations).map_err(|e| PatchError::NotApplied(message(e)))
}

/// Applies a JSON merge patch (a JSON object) to `document`.
///
/// # Errors
///
/// A patch that is not a JSON object.
pub fn merge_patch(document: &mut Value, patch: &[u8]) -> Result<(), PatchError> {
    let patch = patch_object(patch)?;
    json_patch::merge(document, &patch);
    Ok(())
}

fn patch_object(patch: &[u8]) -> Result<Value, PatchError> {
    let patch: Value =
        serde_json::from_slice(patch).map_err(|e| PatchError::Malformed(e.to_string()))?;
    if !patch.is_object() {
        return Err(PatchError::Malformed(
            "the patch is not a JSON object".to_owned(),
        ));
    }
    Ok(patch)
}

/// Where a value sits in the object's JSON Schema (draft 2020-12, definitions under `$defs`):
/// what strategic merge patch asks of each field.
#[derive(Debug, Clone, Copy)]
pub struct SchemaView<'a> {
    root: &'a Value,
    node: Option<&'a Value>,
}

impl<'a> SchemaView<'a> {
    /// The view of a whole object's schema.
    pub fn new(root: &'a Value) -> Self {
        SchemaView {
            root,
            node: Some(root),
        }
    }

    /// A view that knows nothing (every list replaced).
    fn unknown(root: &'a Value) -> Self {
        SchemaView { root, node: None }
    }

    /// Follows `$ref` into `$defs`.
    fn resolved(&self, node: &'a Value) -> &'a Value {
        let mut node = node;
        for _ in 0..16 {
            let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
                break;
            };
            let name = reference.strip_prefix("#/$defs/").unwrap_or_default();
            match self.root.pointer(&format!(
                "/$defs/{}",
                name.replace('~', "~0").replace('/', "~1")
            )) {
                Some(target) => node = target,
                None => break,
            }
        }
        node
    }

    /// The schema of property `name`.
    fn property(&self, name: &str) -> SchemaView<'a> {
        let node = self
            .node
            .map(|n| self.resolved(n))
            .and_then(|n| n.get("properties"))
            .and_then(|p| p.get(name));
        SchemaView {
            root: self.root,
            node,
        }
    }

    /// The schema of a list's items.
    fn items(&self) -> SchemaView<'a> {
        let node = self
            .node
            .map(|n| self.resolved(n))
            .and_then(|n| n.get("items"));
        SchemaView {
            root: self.root,
            node,
        }
    }

    fn extension(&self, name: &str) -> Option<&'a str> {
        self.node?.get(name)?.as_str()
    }

    /// The patch strategies of this field (`merge`, `retainKeys`, `replace`).
    fn strategies(&self, name: &str) -> Vec<&'a str> {
        self.extension("x-kubernetes-patch-strategy")
            .map(|s| s.split(',').map(str::trim).collect())
            .unwrap_or_else(|| metadata_strategy(name).into_iter().collect())
    }

    fn merge_key(&self, name: &str) -> Option<&'a str> {
        self.extension("x-kubernetes-patch-merge-key")
            .or_else(|| (name == "ownerReferences").then_some("uid"))
    }
}

/// ObjectMeta's strategies, which its schema here does not carry: `finalizers` merges as a set
/// and `ownerReferences` by `uid` (apimachinery `pkg/apis/meta/v1/types.go`).
fn metadata_strategy(name: &str) -> Option<&'static str> {
    match name {
        "finalizers" | "ownerReferences" => Some("merge"),
        _ => None,
    }
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Applies a strategic merge patch (a JSON object) to `document`, whose schema `schema` views.
///
/// # Errors
///
/// A patch that is not a JSON object, or whose directives are malformed.
pub fn strategic_merge_patch(
    document: &mut Value,
    patch: &[u8],
    schema: SchemaView<'_>,
) -> Result<(), PatchError> {
    let patch = patch_object(patch)?;
    let original = std::mem::take(document);
    *document = merge_value(original, &patch, schema, "")?.unwrap_or(Value::Null);
    Ok(())
}

fn directive_error(message: impl Into<String>) -> PatchError {
    PatchError::Failed(message.into())
}

/// Merges `patch` into `original`; `None` when the patch deletes the value.
fn merge_value(
    original: Value,
    patch: &Value,
    schema: SchemaView<'_>,
    name: &str,
) -> Result<Option<Value>, PatchError> {
    match (original, patch) {
        (Value::Object(original), Value::Object(patch)) => merge_map(original, patch, schema),
        (Value::Array(original), Value::Array(patch)) => {
            merge_list(original, patch, schema, name).map(|v| Some(Value::Array(v)))
        }
        (_, Value::Object(patch)) => merge_map(Map::new(), patch, schema),
        (_, Value::Array(patch)) => {
            merge_list(Vec::new(), patch, schema, name).map(|v| Some(Value::Array(v)))
        }
        (_, other) => Ok(Some(other.clone())),
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    schema: SchemaView<'_>,
) -> Result<Option<Value>, PatchError> {
    match patch.get(DIRECTIVE).map(|d| d.as_str()) {
        None | Some(Some("merge")) => {}
        Some(Some("replace")) => {
            let mut replaced = Map::new();
            for (key, value) in patch.iter().filter(|(k, _)| *k != DIRECTIVE) {
                if let Some(value) = merge_value(Value::Null, value, schema.property(key), key)? {
                    replaced.insert(key.clone(), value);
                }
            }
            return Ok(Some(Value::Object(replaced)));
        }
        Some(Some("delete")) => return Ok(None),
        Some(other) => {
            return Err(directive_error(format!(
                "Unknown patch type: {}",
                other.map_or_else(|| "non-string".to_owned(), str::to_owned)
            )));
        }
    }
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let keys: Vec<&str> = retain
            .as_array()
            .ok_or_else(|| directive_error("$retainKeys must be a list of strings"))?
            .iter()
            .map(|k| {
                k.as_str()
                    .ok_or_else(|| directive_error("$retainKeys must be a list of strings"))
            })
            .collect::<Result<_, _>>()?;
        original.retain(|key, _| keys.contains(&key.as_str()));
    }
    let mut orders = Vec::new();
    for (key, value) in patch {
        if key == DIRECTIVE || key == RETAIN_KEYS {
            continue;
        }
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            let remove = value
                .as_array()
                .ok_or_else(|| directive_error(format!("{key} must be a list")))?;
            if let Some(Value::Array(items)) = original.get_mut(field) {
                items.retain(|item| !remove.contains(item));
            }
            continue;
        }
        if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
            orders.push((
                field.to_owned(),
                value.clone(),
                original.get(field).cloned(),
            ));
            continue;
        }
        if value.is_null() {
            original.remove(key);
            continue;
        }
        let current = original.remove(key).unwrap_or(Value::Null);
        if let Some(merged) = merge_value(current, value, schema.property(key), key)? {
            original.insert(key.clone(), merged);
        }
    }
    for (field, order, before) in orders {
        let merge_key = schema.property(&field).merge_key(&field);
        if let (Some(Value::Array(items)), Value::Array(order)) = (original.get_mut(&field), order)
        {
            let before = match before {
                Some(Value::Array(before)) => before,
                _ => Vec::new(),
            };
            apply_order(items, &order, &before, merge_key);
        }
    }
    Ok(Some(Value::Object(original)))
}

/// Merges a list field as apimachinery's `mergeSliceHandler` and `mergeSlice` do: replaced
/// unless its strategy is `merge`; primitives appended and deduplicated; objects merged by
/// their merge key after the `$patch` elements are applied; then ordered as kube orders a
/// merged list (`normalizeElementOrder`).
fn merge_list(
    original: Vec<Value>,
    patch: &[Value],
    schema: SchemaView<'_>,
    name: &str,
) -> Result<Vec<Value>, PatchError> {
    if !schema.strategies(name).contains(&"merge") {
        // Replace, with directives inside the new items processed.
        return patch
            .iter()
            .map(|item| merge_value(Value::Null, item, schema.items(), ""))
            .filter_map(Result::transpose)
            .collect();
    }
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let of_objects = original
        .first()
        .or(patch.first())
        .is_some_and(Value::is_object);
    if !of_objects {
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        let merged = deduplicate_scalars(both);
        return Ok(ordered(merged, patch, &original, None));
    }
    let items = schema.items();
    let Some(key) = schema.merge_key(name) else {
        return Err(directive_error(format!(
            "cannot merge lists without merge key for {name}"
        )));
    };
    let (mut merged, plain) = apply_list_directives(original, patch, key)?;
    let server_order = merged.clone();
    for item in &plain {
        let wanted = item.get(key).ok_or_else(|| no_merge_key(item, key))?;
        match merged.iter().position(|o| o.get(key) == Some(wanted)) {
            Some(position) => {
                let current = std::mem::take(&mut merged[position]);
                match merge_value(current, item, items, "")? {
                    Some(value) => merged[position] = value,
                    None => {
                        merged.remove(position);
                    }
                }
            }
            None => {
                if let Some(value) = merge_value(Value::Null, item, items, "")? {
                    merged.push(value);
                }
            }
        }
    }
    Ok(ordered(merged, &plain, &server_order, Some(key)))
}

/// apimachinery's `mergeSliceWithSpecialElements`: the list after the patch's `$patch: delete`
/// items removed every item of their merge key (or the patch's other items, when one says
/// `$patch: replace`), and the patch's other items.
fn apply_list_directives(
    mut original: Vec<Value>,
    patch: &[Value],
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::new();
    let mut replace = false;
    for item in patch {
        let Some(map) = item.as_object() else {
            return Err(directive_error(format!(
                "the items of the list must be objects with the merge key {key:?}"
            )));
        };
        match map.get(DIRECTIVE) {
            None => plain.push(item.clone()),
            Some(Value::String(directive)) if directive == "delete" => {
                let wanted = map.get(key).ok_or_else(|| no_merge_key(item, key))?;
                original.retain(|o| o.get(key) != Some(wanted));
            }
            Some(Value::String(directive)) if directive == "replace" => replace = true,
            Some(Value::String(directive)) if directive == "merge" => {
                return Err(directive_error(
                    "merging lists cannot yet be specified in the patch",
                ));
            }
            Some(other) => {
                return Err(directive_error(format!(
                    "invalid patch type {other} in {item}"
                )));
            }
        }
    }
    if replace {
        let replaced = plain
            .iter()
            .map(|item| merge_value(Value::Null, item, schemaless(), ""))
            .filter_map(Result::transpose)
            .collect::<Result<_, _>>()?;
        return Ok((replaced, Vec::new()));
    }
    Ok((original, plain))
}

fn no_merge_key(item: &Value, key: &str) -> PatchError {
    directive_error(format!(
        "map: {item} does not contain declared merge key: {key}"
    ))
}

/// apimachinery's `deduplicateScalars`, order and all: a duplicate is replaced by the last
/// item.
fn deduplicate_scalars(mut items: Vec<Value>) -> Vec<Value> {
    let mut length = items.len();
    let mut i = 0;
    while i + 1 < length {
        let mut j = i + 1;
        while j < length {
            if items[i] == items[j] {
                items.swap(j, length - 1);
                length -= 1;
                items.truncate(length);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    items
}

/// The position of `item` in `list`: by the value of `key` for objects, else by value
/// (apimachinery's `index`).
fn position_in(list: &[Value], item: &Value, key: Option<&str>) -> Option<usize> {
    match key {
        Some(key) => list.iter().position(|o| o.get(key) == item.get(key)),
        None => list.iter().position(|o| o == item),
    }
}

/// A merged list in kube's order (`normalizeElementOrder`): the items the patch names in its
/// order, the others in the server's, the two interleaved by where the server had them
/// (`mergeSortedSlice`: a server item goes before a patch item only when the server had both
/// and the server item first).
fn ordered(merged: Vec<Value>, patch: &[Value], server: &[Value], key: Option<&str>) -> Vec<Value> {
    let (mut from_patch, mut server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| position_in(patch, item, key).is_some());
    from_patch.sort_by_key(|item| position_in(patch, item, key));
    server_only.sort_by_key(|item| position_in(server, item, key));
    let mut out = Vec::with_capacity(from_patch.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = from_patch.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => {
                matches!((position_in(server, l, key), position_in(server, r, key)),
                    (Some(li), Some(ri)) if li < ri)
            }
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// Orders a merged list as `$setElementOrder` says (apimachinery's `mergePatchIntoOriginal`):
/// the items it names in its order, interleaved with the others by the server's order
/// (`before`, the field before the patch).
fn apply_order(items: &mut Vec<Value>, order: &[Value], before: &[Value], merge_key: Option<&str>) {
    let key = merge_key.filter(|_| items.first().is_some_and(Value::is_object));
    *items = ordered(std::mem::take(items), order, before, key);
}

/// A view for objects without a schema: every list replaced.
pub fn schemaless() -> SchemaView<'static> {
    static NOTHING: Value = Value::Null;
    SchemaView::unknown(&NOTHING)
}

#[cfg(test)]
mod tests {

    #[test]
    fn repeated_yaml_keys_are_named_with_their_line_as_go_yaml_does() {
        // field_validation.go, "should detect duplicates in a CR when preserving unknown
        // fields": the body starts with a newline, so `foo: foo2` is line 11.
        let body = "\napiVersion: v1\nkind: K\nmetadata:\n  name: mytest\n  finalizers:\n  \
                    - test-finalizer\nspec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n";
        assert_eq!(
            repeated_yaml_key(body.as_bytes()).as_deref(),
            Some(r#"line 11: key "foo" already set in map"#)
        );
        // The same key in two mappings is no repeat; nor is a body that is not YAML.
        assert_eq!(repeated_yaml_key(b"a: {x: 1}\nb: {x: 2}\n"), None);
        assert_eq!(repeated_yaml_key(b"a: [\n"), None);
        assert_eq!(repeated_yaml_key(b"\xff\xfe"), None);
        // Hostile bodies answer within their bounds (serde-saphyr's budget): deep nesting, an
        // alias bomb, a wide mapping, a truncated document.
        let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(repeated_yaml_key(deep.as_bytes()), None);
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
                    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
                    e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n";
        assert_eq!(repeated_yaml_key(bomb.as_bytes()), None);
        let wide: String = (0..20_000).map(|i| format!("k{i}: {i}\n")).collect();
        assert_eq!(repeated_yaml_key(wide.as_bytes()), None);
        let repeated_late = format!("{wide}k7: again\n");
        assert_eq!(
            repeated_yaml_key(repeated_late.as_bytes()).as_deref(),
            Some(r#"line 20001: key "k7" already set in map"#)
        );
        assert_eq!(repeated_yaml_key(b"a: {b: [1, 2"), None);
    }

    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "properties": {
                "metadata": {"$ref": "#/$defs/Meta"},
                "spec": {"properties": {"rules": {"type": "array", "items": {"type": "object"}}}},
                "status": {"properties": {"conditions": {
                    "type": "array",
                    "items": {"$ref": "#/$defs/Condition"},
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "type",
                }}},
            },
            "$defs": {
                "Meta": {"properties": {"finalizers": {"type": "array"}, "labels": {"type": "object"}}},
                "Condition": {"properties": {"type": {"type": "string"}}},
            }
        })
    }

    fn smp(original: Value, patch: Value) -> Value {
        let root = schema();
        let mut document = original;
        strategic_merge_patch(
            &mut document,
            patch.to_string().as_bytes(),
            SchemaView::new(&root),
        )
        .unwrap();
        document
    }

    #[test]
    fn lists_with_a_merge_key_merge_and_others_are_replaced() {
        let original = json!({
            "spec": {"rules": [{"a": 1}, {"b": 2}]},
            "status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "False"}]},
        });
        let patched = smp(
            original,
            json!({
                "spec": {"rules": [{"c": 3}]},
                "status": {"conditions": [{"type": "B", "status": "True"}, {"type": "C", "status": "True"}]},
            }),
        );
        assert_eq!(patched["spec"]["rules"], json!([{"c": 3}]));
        assert_eq!(
            patched["status"]["conditions"],
            json!([
                {"type": "A", "status": "True"},
                {"type": "B", "status": "True"},
                {"type": "C", "status": "True"},
            ])
        );
    }

    #[test]
    fn directives_delete_replace_retain_and_order() {
        let original = json!({
            "metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}},
            "status": {"conditions": [{"type": "A"}, {"type": "B"}]},
            "spec": {"keep": 1, "drop": 2},
        });
        let patched = smp(
            original,
            json!({
                "metadata": {
                    "finalizers": ["c"],
                    "$deleteFromPrimitiveList/finalizers": ["a"],
                    "labels": {"x": null},
                },
                "status": {
                    "conditions": [{"type": "A", "$patch": "delete"}, {"type": "D"}],
                    "$setElementOrder/conditions": [{"type": "D"}, {"type": "B"}],
                },
                "spec": {"$retainKeys": ["keep", "new"], "new": 3},
            }),
        );
        // A merged list has the patch's items first where the server had none of them
        // (normalizeElementOrder), whichever of the list and its deletions kube takes first.
        assert_eq!(patched["metadata"]["finalizers"], json!(["c", "b"]));
        assert_eq!(patched["metadata"]["labels"], json!({"y": "2"}));
        assert_eq!(
            patched["status"]["conditions"],
            json!([{"type": "D"}, {"type": "B"}])
        );
        assert_eq!(patched["spec"], json!({"keep": 1, "new": 3}));

        let replaced = smp(
            json!({"spec": {"a": 1, "b": 2}}),
            json!({"spec": {"$patch": "replace", "c": 3}}),
        );
        assert_eq!(replaced["spec"], json!({"c": 3}));
        let deleted = smp(
            json!({"spec": {"a": 1}}),
            json!({"spec": {"$patch": "delete"}}),
        );
        assert!(deleted.get("spec").is_none());
    }

    #[test]
    fn malformed_patches_are_refused() {
        let root = schema();
        let view = SchemaView::new(&root);
        let mut document = json!({"status": {"conditions": []}});
        for bad in [
            &b"[1]"[..],
            b"{",
            br#"{"spec": {"$patch": "explode"}}"#,
            br#"{"status": {"conditions": [{"status": "x"}]}}"#,
            br#"{"spec": {"$retainKeys": "a"}}"#,
        ] {
            assert!(
                strategic_merge_patch(&mut document, bad, view).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let many = format!(
            "[{}]",
            vec![r#"{"op":"test","path":"","value":1}"#; 10_001].join(",")
        );
        assert_eq!(
            json_patch(&mut document, many.as_bytes(), true),
            Err(PatchError::TooManyOperations(10_001))
        );
        let mut document = json!({"status": {}});
        assert!(matches!(
            json_patch(&mut document, br#"[{"op":"remove","path":"/nope"}]"#, true),
            Err(PatchError::NotApplied(_))
        ));
        assert!(matches!(
            merge_patch(&mut document, b"[]"),
            Err(PatchError::Malformed(_))
        ));
    }

    #[test]
    fn deep_patches_fail_cleanly() {
        let deep = format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
        let mut document = json!({});
        assert!(merge_patch(&mut document, deep.as_bytes()).is_err());
    }
}
