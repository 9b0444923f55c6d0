//! Sets of field paths, as structured-merge-diff keeps them (`fieldpath/set.go`): the paths
//! that end at a node (its members) and a set per child, and their `FieldsV1` form.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::path::{Path, PathElement, PathError};

/// How deep a `FieldsV1` document may nest (serde_json reads JSON no deeper than 128).
pub const MAX_FIELDS_V1_DEPTH: usize = 100;

/// A set of field paths. Children are never empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        FieldSet::default()
    }

    /// Whether no path is in the set.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds a path. The empty path is not a member of any set.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether the path is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// The paths under `element`, without it.
    pub fn with_prefix(&self, element: &PathElement) -> FieldSet {
        self.children.get(element).cloned().unwrap_or_default()
    }

    /// The paths under `element`, if there are any.
    pub(crate) fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    /// Whether `element` ends a path of the set.
    pub(crate) fn has_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            let merged = match out.children.get(element) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(element.clone(), merged);
        }
        out
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        out.members = self.members.intersection(&other.members).cloned().collect();
        for (element, child) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    out.children.insert(element.clone(), both);
                }
            }
        }
        out
    }

    /// Paths in this set and not in `other` (a member of `other` takes out that path only,
    /// not the paths under it).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        out.members = self.members.difference(&other.members).cloned().collect();
        for (element, child) in &self.children {
            let rest = match other.children.get(element) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(element.clone(), rest);
            }
        }
        out
    }

    /// Paths in this set that neither are in `other` nor lie under a member of `other`.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        out.members = self.members.difference(&other.members).cloned().collect();
        for (element, child) in &self.children {
            if other.members.contains(element) {
                continue;
            }
            let rest = match other.children.get(element) {
                Some(theirs) => child.recursive_difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(element.clone(), rest);
            }
        }
        out
    }

    /// Every path of the set in structured-merge-diff's order (`Set.Iterate`): at each level
    /// the members first, then what lies under each child, in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for member in &self.members {
            prefix.push(member.clone());
            out.push(Path(prefix.clone()));
            prefix.pop();
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// Adds `element` as a member.
    pub(crate) fn insert_member(&mut self, element: PathElement) {
        self.members.insert(element);
    }

    /// The children, by element.
    pub(crate) fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    /// Replaces the child under `element` (dropped when empty).
    pub(crate) fn set_child(&mut self, element: PathElement, child: FieldSet) {
        if child.is_empty() {
            self.children.remove(&element);
        } else {
            self.children.insert(element, child);
        }
    }

    /// The set in `FieldsV1` form, as kube-apiserver writes it in `managedFields`: members
    /// and children in structured-merge-diff's order, `"."` for a child that is also a member.
    pub fn to_fields_v1(&self) -> String {
        let mut out = String::from("{");
        self.write_contents(false, &mut out);
        out.push('}');
        out
    }

    fn write_contents(&self, include_self: bool, out: &mut String) {
        let mut first = true;
        let mut separate = |out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
        };
        if include_self && !self.is_empty() {
            separate(out);
            out.push_str("\".\":{}");
        }
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            let take_member = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(m), Some((c, _))) => *m < *c,
            };
            separate(out);
            if take_member {
                let member = members.next().unwrap_or_else(|| unreachable!());
                write_key(out, member);
                out.push_str(":{}");
            } else {
                let (element, child) = children.next().unwrap_or_else(|| unreachable!());
                let also_member = members.next_if(|m| *m == element).is_some();
                write_key(out, element);
                out.push_str(":{");
                child.write_contents(also_member, out);
                out.push('}');
            }
        }
    }

    /// Reads a `FieldsV1` document.
    ///
    /// # Errors
    ///
    /// Anything but objects of path elements.
    pub fn from_fields_v1(document: &Value) -> Result<FieldSet, PathError> {
        match document {
            Value::Object(fields) => Ok(Self::read(fields, 0)?.0),
            _ => Err(PathError("FieldsV1 is not a JSON object".to_owned())),
        }
    }

    /// The set under one node, and whether the node itself is a member (`"."`).
    fn read(fields: &Map<String, Value>, depth: usize) -> Result<(FieldSet, bool), PathError> {
        if depth >= MAX_FIELDS_V1_DEPTH {
            return Err(PathError(format!(
                "FieldsV1 is nested deeper than {MAX_FIELDS_V1_DEPTH}"
            )));
        }
        let mut set = FieldSet::new();
        let mut is_member = false;
        for (key, value) in fields {
            if key == "." {
                is_member = true;
                continue;
            }
            let element = PathElement::deserialize(key)?;
            let Value::Object(inner) = value else {
                return Err(PathError(format!("{key:?}: expected a JSON object")));
            };
            if inner.is_empty() {
                set.members.insert(element);
                continue;
            }
            let (child, member) = Self::read(inner, depth + 1)?;
            if member {
                set.members.insert(element.clone());
            }
            set.set_child(element, child);
        }
        Ok((set, is_member))
    }
}

fn write_key(out: &mut String, element: &PathElement) {
    crate::path::write_go_json(out, &Value::String(element.serialize()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    fn set(paths: &[&[PathElement]]) -> FieldSet {
        let mut set = FieldSet::new();
        for path in paths {
            set.insert(path);
        }
        set
    }

    #[test]
    fn fields_v1_is_written_as_kube_apiserver_writes_it() {
        let condition = PathElement::key(vec![("type".into(), json!("Dangling"))]);
        let set = set(&[
            &[
                field("spec"),
                field("priorityLevelConfiguration"),
                field("name"),
            ],
            &[field("metadata"), field("labels"), field("team")],
            &[field("status"), field("conditions"), condition.clone()],
            &[
                field("status"),
                field("conditions"),
                condition.clone(),
                field("status"),
            ],
            &[field("spec"), field("matchingPrecedence")],
        ]);
        assert_eq!(
            set.to_fields_v1(),
            r#"{"f:metadata":{"f:labels":{"f:team":{}}},"f:spec":{"f:matchingPrecedence":{},"f:priorityLevelConfiguration":{"f:name":{}}},"f:status":{"f:conditions":{"k:{\"type\":\"Dangling\"}":{".":{},"f:status":{}}}}}"#
        );
        let read: Value = serde_json::from_str(&set.to_fields_v1()).unwrap();
        assert_eq!(FieldSet::from_fields_v1(&read).unwrap(), set);
    }

    #[test]
    fn set_operations() {
        let a = set(&[&[field("a")], &[field("b"), field("c")], &[field("d")]]);
        let b = set(&[&[field("a")], &[field("b"), field("e")], &[field("b")]]);
        assert_eq!(
            a.union(&b),
            set(&[
                &[field("a")],
                &[field("b")],
                &[field("b"), field("c")],
                &[field("b"), field("e")],
                &[field("d")]
            ])
        );
        assert_eq!(a.intersection(&b), set(&[&[field("a")]]));
        assert_eq!(
            a.difference(&b),
            set(&[&[field("b"), field("c")], &[field("d")]])
        );
        // `b` is a member of the other set: everything under it goes too.
        assert_eq!(a.recursive_difference(&b), set(&[&[field("d")]]));
        assert!(a.difference(&a).is_empty());
        assert!(a.has(&[field("b"), field("c")]) && !a.has(&[field("b")]));
    }

    #[test]
    fn paths_come_in_order_with_members_before_what_lies_under_them() {
        let s = set(&[&[field("b"), field("c")], &[field("b")], &[field("a")]]);
        let printed: Vec<String> = s.paths().iter().map(ToString::to_string).collect();
        assert_eq!(printed, [".a", ".b", ".b.c"]);
        // A level's members all come before its children's paths, as in Go.
        let s = set(&[
            &[field("metadata"), field("labels"), field("tier")],
            &[field("rules")],
        ]);
        let printed: Vec<String> = s.paths().iter().map(ToString::to_string).collect();
        assert_eq!(printed, [".rules", ".metadata.labels.tier"]);
    }

    #[test]
    fn fields_v1_nested_past_the_limit_is_an_error_not_a_stack_overflow() {
        let mut document = json!({});
        for _ in 0..MAX_FIELDS_V1_DEPTH + 1 {
            document = json!({"f:a": document, "f:b": {}});
        }
        let error = FieldSet::from_fields_v1(&document).unwrap_err();
        assert!(error.0.contains("nested deeper"), "{error}");
        let mut shallow = json!({});
        for _ in 0..MAX_FIELDS_V1_DEPTH - 1 {
            shallow = json!({"f:a": shallow, "f:b": {}});
        }
        let set = FieldSet::from_fields_v1(&shallow).unwrap();
        // Every level's `f:b`, and the innermost `f:a`.
        assert_eq!(set.paths().len(), MAX_FIELDS_V1_DEPTH);
    }

    #[test]
    fn malformed_fields_v1_is_an_error() {
        for document in [
            json!([]),
            json!({"f:a": 1}),
            json!({"x:a": {}}),
            json!({"f:a": {"k:[": {}}}),
        ] {
            assert!(FieldSet::from_fields_v1(&document).is_err(), "{document}");
        }
    }
}
