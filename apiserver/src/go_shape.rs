//! A built-in kind's object in the shape Go gives it. Decoded from a request, as kube's
//! field manager sees it ([`as_decoded`]): Go's JSON writer, and apimachinery's
//! `ToUnstructured` after it, write a nil list or map as `null` (or leave it out when its
//! field is tagged `omitempty`), a struct value always, a scalar's zero value unless
//! `omitempty`. Once stored ([`as_stored`]): kube keeps its own kinds in protobuf, where an
//! empty list or map is no list at all, so it is nil when read back. A Role created with
//! `rules: []` has its rules in its managed fields and is answered with `rules: null`; a
//! RoleBinding's `subjects: []` is answered not at all, an EndpointSlice endpoint without
//! `conditions` with `{}`.
//!
//! The types are kube-apiserver 1.37's own, as `go_decode` reads them
//! (`data/go-types.json`, with each struct's `omitempty` fields and pointers). Object
//! metadata is left as it is (the store writes it), and so are values of types with a
//! JSON form of their own (times, quantities, int-or-strings, raw extensions).

use serde_json::{Map, Value};

use crate::go_decode::{GoType, Graph, graph};

/// How deep a value is followed; deeper parts are left as they are.
const MAX_DEPTH: usize = 256;

/// The Go type of object metadata, which this leaves to the store.
const OBJECT_META: &str = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta";

/// apimachinery's times, which write their zero value as `null`.
const TIME: &str = "k8s.io/apimachinery/pkg/apis/meta/v1.Time";
const MICRO_TIME: &str = "k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime";

/// `object` (with its `apiVersion` and `kind`) as kube-apiserver writes it after storing it:
/// as [`as_decoded`], and empty lists and maps as `null` or absent. A kind that is not one
/// of kube's is left as it is.
///
/// ```
/// use serde_json::json;
/// let mut role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
///     "metadata": {"name": "r"}, "rules": []});
/// apfkit_apiserver::go_shape::as_decoded(&mut role);
/// assert_eq!(role["rules"], json!([]));
/// apfkit_apiserver::go_shape::as_stored(&mut role);
/// assert_eq!(role["rules"], json!(null));
/// ```
pub fn as_stored(object: &mut Value) {
    shape_root(object, Form::Stored);
}

/// `object` (with its `apiVersion` and `kind`) as Go writes it once decoded from a request:
/// absent structs as their zero value, absent lists, maps and pointers as `null` or left
/// out, zero scalars left out where `omitempty` says, empty lists left out where it says.
/// A kind that is not one of kube's is left as it is.
pub fn as_decoded(object: &mut Value) {
    shape_root(object, Form::Decoded);
}

/// Which of Go's forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Decoded from JSON: an empty list is a list.
    Decoded,
    /// Read back from protobuf: an empty list is nil.
    Stored,
}

fn shape_root(object: &mut Value, form: Form) {
    let graph = graph();
    let (Some(api_version), Some(kind)) = (
        object.get("apiVersion").and_then(Value::as_str),
        object.get("kind").and_then(Value::as_str),
    ) else {
        return;
    };
    let Some(root) = graph.roots.get(&format!("{api_version}/{kind}")) else {
        return;
    };
    let root = root.clone();
    shape(graph, &root, object, form, 0);
}

/// `value` shaped as the Go type `key`.
fn shape(graph: &Graph, key: &str, value: &mut Value, form: Form, depth: usize) {
    let Some(ty) = graph.types.get(key) else {
        return;
    };
    if depth >= MAX_DEPTH || key == OBJECT_META {
        return;
    }
    match (ty.kind.as_str(), value) {
        ("struct", Value::Object(fields)) => shape_struct(graph, ty, fields, form, depth),
        ("slice", Value::Array(items)) => {
            for item in items {
                shape(graph, &ty.elem, item, form, depth + 1);
            }
        }
        ("map", Value::Object(entries)) => {
            for entry in entries.values_mut() {
                shape(graph, &ty.elem, entry, form, depth + 1);
            }
        }
        _ => {}
    }
}

/// A struct's fields as Go's encoder writes them in `form`.
fn shape_struct(
    graph: &Graph,
    ty: &GoType,
    fields: &mut Map<String, Value>,
    form: Form,
    depth: usize,
) {
    for (name, key) in &ty.fields {
        let Some(field_type) = graph.types.get(key) else {
            continue;
        };
        if key == OBJECT_META {
            continue;
        }
        let omitempty = ty.omit.contains(name);
        let pointer = ty.pointers.contains(name);
        if matches!(field_type.kind.as_str(), "custom" | "any") {
            // Their own JSON form: as given; a time value (not a pointer), which `omitempty`
            // does not leave out, is written `null` when zero.
            if !pointer
                && (key == TIME || key == MICRO_TIME)
                && fields.get(name).is_none_or(Value::is_null)
            {
                fields.insert(name.clone(), Value::Null);
            }
            continue;
        }
        let given = fields.remove(name).filter(|value| !value.is_null());
        let written = match (field_type.kind.as_str(), given) {
            // Empty is nil after protobuf; `omitempty` leaves it out either way.
            ("slice" | "map" | "bytes", given) => {
                given.filter(|value| !is_empty(value) || (form == Form::Decoded && !omitempty))
            }
            ("struct", None) if !pointer => Some(Value::Object(Map::new())),
            ("string" | "int" | "uint" | "float" | "bool", given) if !pointer => {
                let value = given.unwrap_or_else(|| zero(&field_type.kind));
                (!(omitempty && value == zero(&field_type.kind))).then_some(value)
            }
            (_, given) => given,
        };
        match written {
            Some(mut value) => {
                shape(graph, key, &mut value, form, depth + 1);
                fields.insert(name.clone(), value);
            }
            None if omitempty => {}
            None => {
                fields.insert(name.clone(), Value::Null);
            }
        }
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.is_empty(),
        Value::Object(entries) => entries.is_empty(),
        Value::String(text) => text.is_empty(),
        _ => false,
    }
}

/// The zero value of a scalar kind as Go writes it.
fn zero(kind: &str) -> Value {
    match kind {
        "string" => Value::String(String::new()),
        "bool" => Value::Bool(false),
        _ => Value::from(0),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{as_decoded, as_stored};

    fn stored(mut object: serde_json::Value) -> serde_json::Value {
        as_stored(&mut object);
        object
    }

    #[test]
    fn empty_lists_are_null_or_absent_as_their_tags_say() {
        let role = stored(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r", "labels": {}}, "rules": []}),
        );
        assert_eq!(role["rules"], json!(null));
        // Metadata is the store's.
        assert_eq!(role["metadata"], json!({"name": "r", "labels": {}}));
        let binding = stored(json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding", "metadata": {"name": "b"}, "subjects": [],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}));
        assert!(binding.get("subjects").is_none(), "{binding}");
        // A rule's lists: verbs has no omitempty, the others have.
        let role = stored(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "rules": [{"apiGroups": [], "resources": ["pods"], "verbs": []}]}),
        );
        assert_eq!(
            role["rules"],
            json!([{"resources": ["pods"], "verbs": null}])
        );
    }

    #[test]
    fn structs_are_written_and_zero_scalars_left_out_as_go_writes_them() {
        let slice = stored(
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "s"}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}]}),
        );
        assert_eq!(slice["ports"], json!(null));
        assert_eq!(slice["endpoints"][0]["conditions"], json!({}));
        let service = stored(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {"ports": [{"name": "", "port": 80, "protocol": "TCP", "nodePort": 0}],
                "selector": {}}}));
        assert_eq!(
            service["spec"]["ports"],
            json!([{"port": 80, "protocol": "TCP"}])
        );
        assert!(service["spec"].get("selector").is_none());
        assert_eq!(service["status"], json!({"loadBalancer": {}}));
    }

    #[test]
    fn other_kinds_and_shapes_are_left_as_they_are() {
        for object in [
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"items": []}}),
            json!({"kind": "Role", "rules": []}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "rules": 7}),
            json!([1, 2]),
        ] {
            assert_eq!(stored(object.clone()), object);
        }
        // Nested past the depth followed: no overflow, the deep part left as it is.
        let mut deep = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "spec": {"versions": [{"name": "v1",
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
        let mut at = &mut deep["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        for _ in 0..1000 {
            at["properties"] = json!({"x": {"type": "object", "required": []}});
            at = &mut at["properties"]["x"];
        }
        as_stored(&mut deep);
        let mut at = &deep["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        for _ in 0..100 {
            at = &at["properties"]["x"];
        }
        // Shaped near the top (an empty `required` left out), as given deep down.
        assert!(at.get("required").is_none(), "{at}");
        for _ in 100..1000 {
            at = &at["properties"]["x"];
        }
        assert!(at.get("properties").is_some() || at.get("required").is_some());
    }

    #[test]
    fn a_decoded_object_keeps_its_empty_lists_unless_omitempty() {
        let mut role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "rules": [{"apiGroups": [], "resources": ["pods"], "verbs": []}]});
        as_decoded(&mut role);
        assert_eq!(role["rules"], json!([{"resources": ["pods"], "verbs": []}]));
        let mut slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "addressType": "IPv4", "endpoints": [{"addresses": []}]});
        as_decoded(&mut slice);
        assert_eq!(
            slice["endpoints"],
            json!([{"addresses": [], "conditions": {}}])
        );
        assert_eq!(slice["ports"], json!(null));
    }
}
