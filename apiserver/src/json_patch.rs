//! JSON patch (RFC 6902) as kube-apiserver applies it: gopkg.in/evanphx/json-patch.v4's
//! `Patch.Apply`, whose readings differ from the RFC's and whose messages reach clients.
//!
//! Where it differs from the RFC (and from the `json-patch` crate): a member that is absent
//! reads as null, so `test` of an absent member against `null` passes (kube-rs's
//! `finalizer()` sends exactly that); negative array indexes count from the end; a `copy`
//! from an absent member adds null; a `path` without a leading `/` names its last segment in
//! the document. Scalars are compared as values (upstream compares their compacted bytes, so
//! `1` and `1.0` differ there as here; two spellings of one string, which it tells apart, are
//! equal here).

use serde_json::{Map, Value};

/// kube-apiserver's limit on what `copy` operations may add to a document
/// (`JSONPatchMaxCopyBytes`, `k8s.io/apiserver/pkg/server/config.go`): 3 MiB.
const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Why a patch could not be read (400) or applied (422), in the library's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JsonPatchError {
    /// Not an array of operations: `DecodePatch`'s error.
    Decode(String),
    /// An operation that does not apply.
    Apply(String),
}

/// Reads `body` as a patch: a JSON array whose elements are objects (or null).
pub(crate) fn decode(body: &Value) -> Result<Vec<Option<Map<String, Value>>>, JsonPatchError> {
    let decode_error = |what: &str, into: &str| {
        JsonPatchError::Decode(format!(
            "json: cannot unmarshal {what} into Go value of type {into}"
        ))
    };
    match body {
        Value::Null => Ok(Vec::new()),
        Value::Array(operations) => operations
            .iter()
            .map(|operation| match operation {
                Value::Null => Ok(None),
                Value::Object(map) => Ok(Some(map.clone())),
                other => Err(decode_error(
                    apfkit_wire::go_scanner::value_kind(other),
                    "jsonpatch.Operation",
                )),
            })
            .collect(),
        other => Err(decode_error(
            apfkit_wire::go_scanner::value_kind(other),
            "jsonpatch.Patch",
        )),
    }
}

/// Checks `body` as kube-apiserver decodes a JSON patch when fields are validated (Strict or
/// Warn): into its own `[]handlers.jsonPatchOp` first, whose errors it answers (400, after
/// `error decoding patch: `) before the library sees the patch.
pub(crate) fn check_operations(body: &Value) -> Result<(), String> {
    let operations = match body {
        Value::Null => return Ok(()),
        Value::Array(operations) => operations,
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                apfkit_wire::go_scanner::value_kind(other)
            ));
        }
    };
    for operation in operations {
        let fields = match operation {
            Value::Null => continue,
            Value::Object(fields) => fields,
            other => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
                    apfkit_wire::go_scanner::value_kind(other)
                ));
            }
        };
        for name in ["op", "path", "from"] {
            if let Some(value) = fields.get(name).filter(|v| !(v.is_null() || v.is_string())) {
                return Err(format!(
                    "json: cannot unmarshal {} into Go struct field jsonPatchOp.{name} of type \
                     string",
                    apfkit_wire::go_scanner::value_kind(value)
                ));
            }
        }
    }
    Ok(())
}

/// Applies `operations` to `document` in order; on the first that does not apply, the
/// document is left as it was and that operation's error is answered.
pub(crate) fn apply(
    document: &mut Value,
    operations: &[Option<Map<String, Value>>],
) -> Result<(), JsonPatchError> {
    let mut working = document.clone();
    let mut copied = 0usize;
    for operation in operations {
        let empty = Map::new();
        let operation = Operation(operation.as_ref().unwrap_or(&empty));
        match operation.kind().as_str() {
            "add" => add(&mut working, &operation),
            "remove" => remove(&mut working, &operation),
            "replace" => replace(&mut working, &operation),
            "move" => move_value(&mut working, &operation),
            "test" => test(&mut working, &operation),
            "copy" => copy(&mut working, &operation, &mut copied),
            kind => Err(format!("Unexpected kind: {kind}")),
        }
        .map_err(JsonPatchError::Apply)?;
    }
    *document = working;
    Ok(())
}

/// One operation, as `map[string]*json.RawMessage`: a member that is `null` is no member.
struct Operation<'a>(&'a Map<String, Value>);

impl Operation<'_> {
    fn member(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|value| !value.is_null())
    }

    fn kind(&self) -> String {
        match self.member("op") {
            Some(Value::String(kind)) => kind.clone(),
            _ => "unknown".to_owned(),
        }
    }

    fn string(&self, name: &str, missing: &str) -> Result<String, String> {
        match self.member(name) {
            Some(Value::String(text)) => Ok(text.clone()),
            Some(other) => Err(format!(
                "json: cannot unmarshal {} into Go value of type string",
                apfkit_wire::go_scanner::value_kind(other)
            )),
            None => Err(missing.to_owned()),
        }
    }

    fn path(&self) -> Result<String, String> {
        self.string("path", "operation missing path field: missing value")
    }

    fn from(&self) -> Result<String, String> {
        self.string("from", "operation, missing from field: missing value")
    }

    /// The value: `None` without a `value` member, `Some(Null)` for `"value": null`.
    fn value(&self) -> Option<Value> {
        self.0.get("value").cloned()
    }
}

/// RFC 6901's unescaping of one segment.
fn decode_key(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// Go's `strconv.Atoi`, with its error.
fn atoi(key: &str) -> Result<i64, String> {
    let digits = key.strip_prefix(['+', '-']).unwrap_or(key);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {key:?}: invalid syntax"));
    }
    key.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {key:?}: value out of range"))
}

fn invalid_index(index: i64) -> String {
    format!("Unable to access invalid index: {index}: invalid index referenced")
}

/// The container the last segment of `path` is in, and that segment: `findObject`. `None`
/// for a path of one segment (`""`) or one through anything but objects and arrays.
fn find<'a>(document: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let segments: Vec<&str> = path.split('/').collect();
    let (key, parents) = segments.split_last()?;
    let parents = parents.get(1..)?;
    let mut current = document;
    for segment in parents {
        let key = decode_key(segment);
        current = match current {
            Value::Object(map) => map.get_mut(&key).filter(|value| !value.is_null())?,
            Value::Array(items) => {
                let index = array_index(items.len(), &key).ok()?;
                items.get_mut(index)?
            }
            _ => return None,
        };
        if !(current.is_object() || current.is_array()) {
            return None;
        }
    }
    (current.is_object() || current.is_array()).then(|| (current, decode_key(key)))
}

/// An index of an array of `len` items that `get` may read: negative counts from the end.
fn array_index(len: usize, key: &str) -> Result<usize, String> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let mut index = atoi(key)?;
    if index < 0 {
        if index < -len {
            return Err(invalid_index(index));
        }
        index += len;
    }
    if index >= len {
        return Err(invalid_index(index));
    }
    usize::try_from(index).map_err(|_| invalid_index(index))
}

/// `container.get(key)`: `None` for an absent or null member.
fn get(container: &Value, key: &str) -> Result<Option<Value>, String> {
    match container {
        Value::Object(map) => Ok(map.get(key).filter(|v| !v.is_null()).cloned()),
        Value::Array(items) => Ok(Some(items[array_index(items.len(), key)?].clone())),
        _ => Ok(None),
    }
}

/// `container.add(key, value)`: an object's member set, an item inserted (`-`: appended).
fn insert(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
            Ok(())
        }
        Value::Array(items) => {
            if key == "-" {
                items.push(value);
                return Ok(());
            }
            let mut index = atoi(key)
                .map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            let size = i64::try_from(items.len() + 1).unwrap_or(i64::MAX);
            if index >= size {
                return Err(invalid_index(index));
            }
            if index < 0 {
                if index < -size {
                    return Err(invalid_index(index));
                }
                index += size;
            }
            let index = usize::try_from(index).map_err(|_| invalid_index(index))?;
            items.insert(index, value);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `container.remove(key)`.
fn delete(container: &mut Value, key: &str) -> Result<(), String> {
    match container {
        Value::Object(map) => map
            .remove(key)
            .map(|_| ())
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: missing value")),
        Value::Array(items) => {
            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
            let mut index = atoi(key)?;
            if index >= len {
                return Err(invalid_index(index));
            }
            if index < 0 {
                if index < -len {
                    return Err(invalid_index(index));
                }
                index += len;
            }
            let index = usize::try_from(index).map_err(|_| invalid_index(index))?;
            items.remove(index);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn add(document: &mut Value, operation: &Operation<'_>) -> Result<(), String> {
    let path = operation
        .path()
        .map_err(|_| "add operation failed to decode path: missing value".to_owned())?;
    let (container, key) = find(document, &path).ok_or_else(|| {
        format!("add operation does not apply: doc is missing path: \"{path}\": missing value")
    })?;
    insert(container, &key, operation.value().unwrap_or(Value::Null))
        .map_err(|e| format!("error in add for path: '{path}': {e}"))
}

fn remove(document: &mut Value, operation: &Operation<'_>) -> Result<(), String> {
    let path = operation
        .path()
        .map_err(|_| "remove operation failed to decode path: missing value".to_owned())?;
    let (container, key) = find(document, &path).ok_or_else(|| {
        format!("remove operation does not apply: doc is missing path: \"{path}\": missing value")
    })?;
    delete(container, &key).map_err(|e| format!("error in remove for path: '{path}': {e}"))
}

fn replace(document: &mut Value, operation: &Operation<'_>) -> Result<(), String> {
    let path = operation
        .path()
        .map_err(|e| format!("replace operation failed to decode path: {e}"))?;
    if path.is_empty() {
        // Go formats the nil error it wraps here as `%!w(<nil>)`.
        return match operation.value() {
            Some(value) if value.is_object() || value.is_array() => {
                *document = value;
                Ok(())
            }
            _ => Err("replace operation value must be object or array: %!w(<nil>)".to_owned()),
        };
    }
    let (container, key) = find(document, &path).ok_or_else(|| {
        format!("replace operation does not apply: doc is missing path: {path}: missing value")
    })?;
    if get(container, &key).is_err() {
        return Err(format!(
            "replace operation does not apply: doc is missing key: {path}: missing value"
        ));
    }
    let value = operation.value().unwrap_or(Value::Null);
    match container {
        Value::Object(map) => {
            map.insert(key, value);
        }
        Value::Array(items) => {
            let index = array_index(items.len(), &key)
                .map_err(|e| format!("error in remove for path: '{path}': {e}"))?;
            items[index] = value;
        }
        _ => {}
    }
    Ok(())
}

fn move_value(document: &mut Value, operation: &Operation<'_>) -> Result<(), String> {
    let from = operation
        .from()
        .map_err(|e| format!("move operation failed to decode from: {e}"))?;
    let (container, key) = find(document, &from).ok_or_else(|| {
        format!("move operation does not apply: doc is missing from path: {from}: missing value")
    })?;
    let value =
        get(container, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    delete(container, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let path = operation
        .path()
        .map_err(|e| format!("move operation failed to decode path: {e}"))?;
    let (container, key) = find(document, &path).ok_or_else(|| {
        format!(
            "move operation does not apply: doc is missing destination path: {path}: missing value"
        )
    })?;
    insert(container, &key, value.unwrap_or(Value::Null))
        .map_err(|e| format!("error in move for path: '{path}': {e}"))
}

fn test(document: &mut Value, operation: &Operation<'_>) -> Result<(), String> {
    let path = operation
        .path()
        .map_err(|e| format!("test operation failed to decode path: {e}"))?;
    let failed = || format!("testing value {path} failed: test failed");
    if path.is_empty() {
        return match operation.value() {
            Some(value) if value == *document => Ok(()),
            _ => Err(failed()),
        };
    }
    let (container, key) = find(document, &path).ok_or_else(|| {
        format!("test operation does not apply: is missing path: {path}: missing value")
    })?;
    let found =
        get(container, &key).map_err(|e| format!("error in test for path: '{path}': {e}"))?;
    match (found, operation.value()) {
        // Absent or null, tested against no value or null.
        (None, None | Some(Value::Null)) => Ok(()),
        (Some(found), Some(value)) if found == value => Ok(()),
        _ => Err(failed()),
    }
}

fn copy(document: &mut Value, operation: &Operation<'_>, copied: &mut usize) -> Result<(), String> {
    let from = operation
        .from()
        .map_err(|e| format!("copy operation failed to decode from: {e}"))?;
    let (container, key) = find(document, &from).ok_or_else(|| {
        format!("copy operation does not apply: doc is missing from path: {from}: missing value")
    })?;
    let value =
        get(container, &key).map_err(|e| format!("error in copy for from: '{from}': {e}"))?;
    let path = operation
        .path()
        .map_err(|_| "copy operation failed to decode path: missing value".to_owned())?;
    let (container, key) = find(document, &path).ok_or_else(|| {
        format!(
            "copy operation does not apply: doc is missing destination path: {path}: missing value"
        )
    })?;
    // What the copy adds is counted in the bytes of its JSON (an absent value adds none).
    *copied += value
        .as_ref()
        .map_or(0, |v| serde_json::to_vec(v).map_or(0, |bytes| bytes.len()));
    if *copied > MAX_COPY_BYTES {
        return Err(format!(
            "Unable to complete the copy, the accumulated size increase of copy is {copied}, \
             exceeding the limit {MAX_COPY_BYTES}"
        ));
    }
    insert(container, &key, value.unwrap_or(Value::Null))
        .map_err(|e| format!("error while adding value during copy: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(document: Value, patch: Value) -> Result<Value, JsonPatchError> {
        let mut document = document;
        apply(&mut document, &decode(&patch)?)?;
        Ok(document)
    }

    fn failure(document: Value, patch: Value) -> String {
        match patched(document, patch) {
            Err(JsonPatchError::Apply(message) | JsonPatchError::Decode(message)) => message,
            Ok(document) => panic!("applied: {document}"),
        }
    }

    #[test]
    fn an_absent_member_tests_equal_to_null_and_to_no_value() {
        let document = json!({"metadata": {"name": "x"}});
        for value in [
            json!({"op": "test", "path": "/metadata/finalizers", "value": null}),
            json!({"op": "test", "path": "/metadata/finalizers"}),
        ] {
            assert_eq!(
                patched(document.clone(), json!([value])),
                Ok(document.clone())
            );
        }
        assert_eq!(
            failure(
                document,
                json!([{"op": "test", "path": "/metadata/name", "value": null}])
            ),
            "testing value /metadata/name failed: test failed"
        );
    }

    #[test]
    fn operations_apply_in_order_and_a_failure_changes_nothing() {
        let document = json!({"a": [1, 2, 3], "b": {"c": "d"}});
        assert_eq!(
            patched(
                document.clone(),
                json!([
                    {"op": "add", "path": "/a/-", "value": 4},
                    {"op": "add", "path": "/a/-1", "value": 9},
                    {"op": "remove", "path": "/a/0"},
                    {"op": "replace", "path": "/b/c", "value": "e"},
                    {"op": "move", "from": "/b/c", "path": "/f"},
                    {"op": "copy", "from": "/f", "path": "/g"},
                    {"op": "copy", "from": "/absent", "path": "/h"},
                ])
            ),
            Ok(json!({"a": [2, 3, 4, 9], "b": {}, "f": "e", "g": "e", "h": null}))
        );
        let mut unchanged = document.clone();
        let operations = decode(&json!([{"op": "remove", "path": "/a/0"},
            {"op": "remove", "path": "/nothing"}]))
        .unwrap();
        assert!(apply(&mut unchanged, &operations).is_err());
        assert_eq!(unchanged, document);
    }

    #[test]
    fn failures_are_worded_as_the_go_library_words_them() {
        let document = json!({"a": [1], "b": {}});
        let cases = [
            (
                json!({"op": "remove", "path": "/nothing"}),
                "error in remove for path: '/nothing': Unable to remove nonexistent key: nothing: missing value",
            ),
            (
                json!({"op": "add", "path": "/x/y", "value": 1}),
                "add operation does not apply: doc is missing path: \"/x/y\": missing value",
            ),
            (
                json!({"op": "add", "path": "/a/5", "value": 1}),
                "error in add for path: '/a/5': Unable to access invalid index: 5: invalid index referenced",
            ),
            (
                json!({"op": "add", "path": "/a/x", "value": 1}),
                "error in add for path: '/a/x': value was not a proper array index: 'x': strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            (
                json!({"op": "replace", "path": "/a/3", "value": 1}),
                "replace operation does not apply: doc is missing key: /a/3: missing value",
            ),
            (
                json!({"op": "test", "path": "/x/y", "value": 1}),
                "test operation does not apply: is missing path: /x/y: missing value",
            ),
            (
                json!({"op": "move", "path": "/c"}),
                "move operation failed to decode from: operation, missing from field: missing value",
            ),
            (
                json!({"op": "replace", "path": "", "value": 1}),
                "replace operation value must be object or array: %!w(<nil>)",
            ),
            (json!({"op": "frob", "path": "/a"}), "Unexpected kind: frob"),
            (json!({"path": "/a"}), "Unexpected kind: unknown"),
        ];
        for (operation, message) in cases {
            assert_eq!(failure(document.clone(), json!([operation])), message);
        }
        assert_eq!(
            failure(document.clone(), json!({"op": "add"})),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        );
        assert_eq!(
            failure(document, json!(["add"])),
            "json: cannot unmarshal string into Go value of type jsonpatch.Operation"
        );
    }

    #[test]
    fn a_validated_patch_is_first_decoded_as_kube_apiservers_own_operations() {
        assert_eq!(
            check_operations(&json!([{"op": "add", "path": "/a", "x": 1}])),
            Ok(())
        );
        assert_eq!(
            check_operations(&json!({"op": "add"})),
            Err(
                "json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
                    .to_owned()
            )
        );
        assert_eq!(
            check_operations(&json!([1])),
            Err(
                "json: cannot unmarshal number into Go value of type handlers.jsonPatchOp"
                    .to_owned()
            )
        );
        assert_eq!(
            check_operations(&json!([{"op": true}])),
            Err(
                "json: cannot unmarshal bool into Go struct field jsonPatchOp.op of type string"
                    .to_owned()
            )
        );
    }

    #[test]
    fn copies_stop_at_three_mebibytes() {
        let big = "x".repeat(1024 * 1024);
        let document = json!({"big": big});
        let copies: Vec<Value> = (0..4)
            .map(|i| json!({"op": "copy", "from": "/big", "path": format!("/c{i}")}))
            .collect();
        let message = failure(document, Value::Array(copies));
        assert!(
            message.starts_with("Unable to complete the copy, the accumulated size increase"),
            "{message}"
        );
    }
}
