//! Operations on a JSON value read through its schema, as structured-merge-diff's `typed`
//! package does them: the set of fields a value sets (`tofieldset.go`), the comparison of two
//! values (`compare.go`), the merge of an applied configuration into an object (`merge.go`),
//! and the removal of a set of fields (`remove.go`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::path::{PathElement, compare_values};
use crate::schema::{Atom, ListType, NodeId, Schema};
use crate::set::FieldSet;

/// A value that does not fit its schema's merge rules (an associative list item without its
/// keys, duplicate keys in an applied configuration), at a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct TypedError {
    /// Where, as structured-merge-diff prints paths (`.spec.rules[0]`).
    pub path: String,
    /// What.
    pub message: String,
}

/// Fields a value sets that its schema does not declare, by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndeclaredFields(pub Vec<String>);

impl std::fmt::Display for UndeclaredFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const WHY: &str = "field not declared in schema";
        match self.0.as_slice() {
            [only] => write!(f, "{only}: {WHY}"),
            all => {
                f.write_str("errors:")?;
                for path in all {
                    write!(f, "\n  {path}: {WHY}")?;
                }
                Ok(())
            }
        }
    }
}

/// How two values differ, by field: no path is in more than one set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Present only in the new value.
    pub added: FieldSet,
    /// Present in both, different.
    pub modified: FieldSet,
    /// Present only in the old value.
    pub removed: FieldSet,
}

impl Comparison {
    /// Whether the values were the same.
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// Leaves out `ignored` and everything under its members.
    pub fn excluding(self, ignored: Option<&FieldSet>) -> Comparison {
        match ignored {
            None => self,
            Some(ignored) => Comparison {
                added: self.added.recursive_difference(ignored),
                modified: self.modified.recursive_difference(ignored),
                removed: self.removed.recursive_difference(ignored),
            },
        }
    }
}

/// What a node holding a value is, for these walks.
enum Shape<'s> {
    /// A scalar, an atomic list or map, or a value of another type than the schema's.
    Leaf,
    /// A granular list.
    List(&'s ListType, NodeId),
    /// A granular struct or map.
    Map(NodeId),
}

fn shape<'s>(schema: &'s Schema, node: NodeId, value: &Value) -> Shape<'s> {
    match (schema.atom(node), value) {
        (Atom::Map { atomic: false, .. }, Value::Object(_) | Value::Null)
        | (Atom::Deduced, Value::Object(_)) => Shape::Map(node),
        (
            Atom::List {
                element,
                list_type: list_type @ (ListType::Set | ListType::Map(_)),
            },
            Value::Array(_) | Value::Null,
        ) => Shape::List(list_type, *element),
        _ => Shape::Leaf,
    }
}

/// The shape of a node holding two values, the new one's when they differ.
fn shape_of_both<'s>(
    schema: &'s Schema,
    node: NodeId,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
) -> Shape<'s> {
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(fields)) => fields.is_empty(),
        Some(_) => false,
    };
    let of = |v: Option<&Value>| v.map(|v| shape(schema, node, v));
    let shape = match (of(lhs), of(rhs)) {
        (_, Some(rhs)) => rhs,
        (Some(lhs), None) => lhs,
        (None, None) => Shape::Leaf,
    };
    // Both empty or null: a leaf, which keeps the difference between empty and null.
    match shape {
        Shape::List(..) | Shape::Map(_) if empty(lhs) && empty(rhs) => Shape::Leaf,
        Shape::List(..) | Shape::Map(_)
            if lhs.zip(rhs).is_some_and(|(l, r)| {
                std::mem::discriminant(l) != std::mem::discriminant(r)
                    && !l.is_null()
                    && !r.is_null()
            }) =>
        {
            Shape::Leaf
        }
        shape => shape,
    }
}

/// Whether two values are equal as structured-merge-diff compares them (numbers by value).
pub fn values_equal(a: &Value, b: &Value) -> bool {
    compare_values(a, b) == std::cmp::Ordering::Equal
}

fn items_of(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn fields_of(value: Option<&Value>) -> &Map<String, Value> {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    value.and_then(Value::as_object).unwrap_or(&EMPTY)
}

fn print(path: &[PathElement]) -> String {
    crate::path::Path(path.to_vec()).to_string()
}

/// The path element of a list item: its keys in an associative list, its value in a set.
fn item_element(
    schema: &Schema,
    list_type: &ListType,
    element: NodeId,
    item: &Value,
) -> Result<PathElement, String> {
    match list_type {
        ListType::Map(keys) if !keys.is_empty() => {
            let fields = match item {
                Value::Object(fields) => fields,
                Value::Null => {
                    return Err("associative list with keys may not have a null element".into());
                }
                _ => return Err("associative list with keys may not have non-map elements".into()),
            };
            let defaults = match schema.atom(element) {
                Atom::Map { defaults, .. } => Some(defaults),
                _ => None,
            };
            let mut key = Vec::new();
            for name in keys {
                if let Some(value) = fields.get(name) {
                    key.push((name.clone(), value.clone()));
                } else if let Some(default) = defaults.and_then(|d| d.get(name)) {
                    key.push((name.clone(), default.clone()));
                }
            }
            if key.is_empty() {
                return Err(format!(
                    "associative list with keys has an element that omits all key fields {keys:?} \
                     (and doesn't have default values for any key fields)"
                ));
            }
            Ok(PathElement::key(key))
        }
        _ => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => {
                Err("associative list without keys has an element that's an explicit null".into())
            }
            scalar => Ok(PathElement::Value(scalar.clone())),
        },
    }
}

/// Reads a schema and walks values with it.
pub struct Typed<'s> {
    schema: &'s Schema,
}

impl<'s> Typed<'s> {
    /// Walks values with `schema`.
    pub fn new(schema: &'s Schema) -> Self {
        Typed { schema }
    }

    fn elements(
        &self,
        path: &[PathElement],
        list_type: &ListType,
        element: NodeId,
        items: &[Value],
    ) -> Result<Vec<PathElement>, TypedError> {
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item_element(self.schema, list_type, element, item).map_err(|message| TypedError {
                    path: print(path),
                    message: format!("element {i}: {message}"),
                })
            })
            .collect()
    }

    /// The fields `value` sets: every leaf, every list item, every map entry, and fields set
    /// to null or `{}` (`ToFieldSet`).
    ///
    /// # Errors
    ///
    /// A list item the list's type cannot key.
    pub fn to_field_set(&self, value: &Value) -> Result<FieldSet, TypedError> {
        let mut set = FieldSet::new();
        self.collect(self.schema.root(), value, &mut Vec::new(), &mut set)?;
        Ok(set)
    }

    fn collect(
        &self,
        node: NodeId,
        value: &Value,
        path: &mut Vec<PathElement>,
        set: &mut FieldSet,
    ) -> Result<(), TypedError> {
        match shape(self.schema, node, value) {
            Shape::Leaf => set.insert(path),
            Shape::List(list_type, element) => {
                let items = value.as_array().map(Vec::as_slice).unwrap_or_default();
                let elements = self.elements(path, list_type, element, items)?;
                let mut seen = BTreeSet::new();
                let mut duplicates = BTreeSet::new();
                for pe in &elements {
                    if !seen.insert(pe) && duplicates.insert(pe) {
                        path.push(pe.clone());
                        set.insert(path);
                        path.pop();
                    }
                }
                for (pe, item) in elements.iter().zip(items) {
                    if duplicates.contains(pe) {
                        continue;
                    }
                    path.push(pe.clone());
                    self.collect(element, item, path, set)?;
                    set.insert(path);
                    path.pop();
                }
            }
            Shape::Map(node) => {
                let Some(fields) = value.as_object() else {
                    return Ok(());
                };
                for (name, child) in fields {
                    path.push(PathElement::Field(name.clone()));
                    self.collect(self.schema.field(node, name), child, path, set)?;
                    let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                    if empty || !self.schema.is_declared_field(node, name) {
                        set.insert(path);
                    }
                    path.pop();
                }
            }
        }
        Ok(())
    }

    /// How `rhs` differs from `lhs` (`Compare`).
    ///
    /// # Errors
    ///
    /// A list item the list's type cannot key.
    pub fn compare(&self, lhs: &Value, rhs: &Value) -> Result<Comparison, TypedError> {
        let mut out = Comparison::default();
        self.compare_at(
            self.schema.root(),
            Some(lhs),
            Some(rhs),
            &mut Vec::new(),
            &mut out,
        )?;
        Ok(out)
    }

    fn compare_at(
        &self,
        node: NodeId,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut Vec<PathElement>,
        out: &mut Comparison,
    ) -> Result<(), TypedError> {
        match shape_of_both(self.schema, node, lhs, rhs) {
            Shape::Leaf => {
                match (lhs, rhs) {
                    (None, _) => out.added.insert(path),
                    (_, None) => out.removed.insert(path),
                    (Some(l), Some(r)) if !values_equal(l, r) => out.modified.insert(path),
                    _ => {}
                }
                return Ok(());
            }
            Shape::List(list_type, element) => {
                let (left, right) = (items_of(lhs), items_of(rhs));
                let left_pes = self.elements(path, list_type, element, left)?;
                let right_pes = self.elements(path, list_type, element, right)?;
                let mut order: Vec<&PathElement> = Vec::new();
                let mut by_pe: BTreeMap<&PathElement, (Vec<&Value>, Vec<&Value>)> = BTreeMap::new();
                for (pe, item) in left_pes.iter().zip(left) {
                    let entry = by_pe.entry(pe).or_default();
                    if entry.0.is_empty() {
                        order.push(pe);
                    }
                    entry.0.push(item);
                }
                for (pe, item) in right_pes.iter().zip(right) {
                    let entry = by_pe.entry(pe).or_default();
                    if entry.0.is_empty() && entry.1.is_empty() {
                        order.push(pe);
                    }
                    entry.1.push(item);
                }
                for pe in order {
                    let (l, r) = &by_pe[pe];
                    path.push(pe.clone());
                    match (l.len(), r.len()) {
                        (0..=1, 0..=1) => {
                            self.compare_at(
                                element,
                                l.first().copied(),
                                r.first().copied(),
                                path,
                                out,
                            )?;
                        }
                        (2.., 2..) => {
                            let same = l.len() == r.len()
                                && l.iter().zip(r).all(|(a, b)| values_equal(a, b));
                            if !same {
                                out.modified.insert(path);
                            }
                        }
                        (2.., _) => {
                            if let Some(first) = r.first() {
                                self.compare_at(element, None, Some(first), path, out)?;
                            }
                            out.removed.insert(path);
                        }
                        (_, _) => {
                            if let Some(first) = l.first() {
                                self.compare_at(element, Some(first), None, path, out)?;
                            }
                            out.added.insert(path);
                        }
                    }
                    path.pop();
                }
            }
            Shape::Map(node) => {
                let (left, right) = (fields_of(lhs), fields_of(rhs));
                let names = left
                    .keys()
                    .chain(right.keys().filter(|k| !left.contains_key(*k)));
                for name in names {
                    path.push(PathElement::Field(name.clone()));
                    self.compare_at(
                        self.schema.field(node, name),
                        left.get(name),
                        right.get(name),
                        path,
                        out,
                    )?;
                    path.pop();
                }
            }
        }
        match (lhs, rhs) {
            (None, _) => out.added.insert(path),
            (_, None) => out.removed.insert(path),
            _ => {}
        }
        Ok(())
    }

    /// `rhs` merged into `lhs` (`Merge`): granular maps and lists merged entry by entry and
    /// item by item (items in `rhs`'s order, with `lhs`'s other items kept where they were),
    /// leaves and atomic values taken from `rhs`.
    ///
    /// # Errors
    ///
    /// A list item the list's type cannot key, or duplicate keys in `rhs`.
    pub fn merge(&self, lhs: &Value, rhs: &Value) -> Result<Value, TypedError> {
        Ok(self
            .merge_at(self.schema.root(), Some(lhs), Some(rhs), &mut Vec::new())?
            .unwrap_or(Value::Null))
    }

    fn merge_at(
        &self,
        node: NodeId,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut Vec<PathElement>,
    ) -> Result<Option<Value>, TypedError> {
        match shape_of_both(self.schema, node, lhs, rhs) {
            Shape::Leaf => Ok(rhs.or(lhs).cloned()),
            Shape::Map(node) => {
                let (left, right) = (fields_of(lhs), fields_of(rhs));
                let mut out = Map::new();
                let names = left
                    .keys()
                    .chain(right.keys().filter(|k| !left.contains_key(*k)));
                for name in names {
                    path.push(PathElement::Field(name.clone()));
                    let merged = self.merge_at(
                        self.schema.field(node, name),
                        left.get(name),
                        right.get(name),
                        path,
                    )?;
                    path.pop();
                    if let Some(merged) = merged {
                        out.insert(name.clone(), merged);
                    }
                }
                Ok((!out.is_empty()).then_some(Value::Object(out)))
            }
            Shape::List(list_type, element) => self.merge_list(list_type, element, lhs, rhs, path),
        }
    }

    /// Merges two granular lists as structured-merge-diff's `visitListItems` does.
    fn merge_list(
        &self,
        list_type: &ListType,
        element: NodeId,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut Vec<PathElement>,
    ) -> Result<Option<Value>, TypedError> {
        let (left, right) = (items_of(lhs), items_of(rhs));
        let right_pes = self.elements(path, list_type, element, right)?;
        let left_pes = self.elements(path, list_type, element, left)?;
        let mut observed_right: BTreeMap<&PathElement, &Value> = BTreeMap::new();
        for (pe, item) in right_pes.iter().zip(right) {
            if observed_right.insert(pe, item).is_some() {
                return Err(TypedError {
                    path: print(path),
                    message: format!("duplicate entries for key {pe}"),
                });
            }
        }
        // An item that appears twice in `lhs` is merged as null.
        static NULL: Value = Value::Null;
        let mut observed_left: BTreeMap<&PathElement, &Value> = BTreeMap::new();
        for (pe, item) in left_pes.iter().zip(left) {
            if observed_left.insert(pe, item).is_some() {
                observed_left.insert(pe, &NULL);
            }
        }
        let mut shared: std::collections::VecDeque<&PathElement> = right_pes
            .iter()
            .filter(|pe| observed_left.contains_key(pe))
            .collect();
        let mut next_shared = shared.pop_front();
        let mut merged_right: BTreeSet<&PathElement> = BTreeSet::new();
        let mut out = Vec::with_capacity(left.len().max(right.len()));
        let (mut l, mut r) = (0, 0);
        let merge_item = |pe: &PathElement,
                          lchild,
                          rchild,
                          path: &mut Vec<PathElement>,
                          out: &mut Vec<Value>| {
            path.push(pe.clone());
            let merged = self.merge_at(element, lchild, rchild, path);
            path.pop();
            if let Some(merged) = merged? {
                out.push(merged);
            }
            Ok::<(), TypedError>(())
        };
        // An item of `rhs`, merged with the item of `lhs` under the same key if there is one.
        let merge_shared = |pe: &PathElement, path: &mut Vec<PathElement>, out: &mut Vec<Value>| {
            merge_item(
                pe,
                observed_left.get(pe).copied(),
                observed_right.get(pe).copied(),
                path,
                out,
            )
        };
        while l < left_pes.len() || r < right_pes.len() {
            let before = (l, r);
            if l < left_pes.len() && r < right_pes.len() {
                let pe = &left_pes[l];
                if *pe == right_pes[r] {
                    merged_right.insert(pe);
                    merge_shared(pe, path, &mut out)?;
                    l += 1;
                    r += 1;
                    next_shared = shared.pop_front();
                    continue;
                }
                if observed_right.contains_key(pe) && next_shared.is_some_and(|next| next != pe) {
                    l += 1;
                    continue;
                }
            }
            if l < left_pes.len() {
                let pe = &left_pes[l];
                if !observed_right.contains_key(pe) {
                    merge_item(pe, Some(&left[l]), None, path, &mut out)?;
                    l += 1;
                    continue;
                } else if merged_right.contains(pe) {
                    l += 1;
                }
            }
            if r < right_pes.len() {
                let pe = &right_pes[r];
                merged_right.insert(pe);
                merge_shared(pe, path, &mut out)?;
                r += 1;
                if next_shared.is_some_and(|next| next == pe) {
                    next_shared = shared.pop_front();
                }
            }
            if (l, r) == before {
                return Err(TypedError {
                    path: print(path),
                    message: "the list's items could not be merged".into(),
                });
            }
        }
        Ok((!out.is_empty()).then_some(Value::Array(out)))
    }

    /// `value` without the fields of `set` (`RemoveItems`): a member goes with everything
    /// under it; a granular map or list emptied by the removal becomes null, as in
    /// structured-merge-diff.
    pub fn remove_items(&self, value: &Value, set: &FieldSet) -> Value {
        self.remove_at(self.schema.root(), value, set)
            .unwrap_or(Value::Null)
    }

    fn remove_at(&self, node: NodeId, value: &Value, set: &FieldSet) -> Option<Value> {
        match shape(self.schema, node, value) {
            Shape::Leaf => match value {
                Value::Array(_) | Value::Object(_) => None,
                scalar => Some(scalar.clone()),
            },
            Shape::List(list_type, element) => {
                let items = value.as_array().filter(|items| !items.is_empty())?;
                let mut kept = Vec::new();
                for item in items {
                    let Ok(pe) = item_element(self.schema, list_type, element, item) else {
                        kept.push(item.clone());
                        continue;
                    };
                    if set.has_member(&pe) {
                        continue;
                    }
                    match set.child(&pe) {
                        Some(under) => {
                            kept.push(self.remove_at(element, item, under).unwrap_or(Value::Null))
                        }
                        None => kept.push(item.clone()),
                    }
                }
                (!kept.is_empty()).then_some(Value::Array(kept))
            }
            Shape::Map(node) => {
                let fields = value.as_object().filter(|fields| !fields.is_empty())?;
                let mut kept = Map::new();
                for (name, child) in fields {
                    let pe = PathElement::Field(name.clone());
                    if set.has_member(&pe) {
                        continue;
                    }
                    let child = match set.child(&pe) {
                        Some(under) => self
                            .remove_at(self.schema.field(node, name), child, under)
                            .unwrap_or(Value::Null),
                        None => child.clone(),
                    };
                    kept.insert(name.clone(), child);
                }
                (!kept.is_empty()).then_some(Value::Object(kept))
            }
        }
    }

    /// Checks that `value` sets only fields its schema declares (structured-merge-diff's
    /// validation of an applied object: `field not declared in schema`).
    ///
    /// # Errors
    ///
    /// The undeclared fields, as structured-merge-diff lists them (one as `.path: message`,
    /// several under `errors:`).
    pub fn check_declared(&self, value: &Value) -> Result<(), UndeclaredFields> {
        let mut found = Vec::new();
        self.undeclared(self.schema.root(), value, &mut Vec::new(), &mut found);
        if found.is_empty() {
            Ok(())
        } else {
            Err(UndeclaredFields(found))
        }
    }

    fn undeclared(
        &self,
        node: NodeId,
        value: &Value,
        path: &mut Vec<PathElement>,
        found: &mut Vec<String>,
    ) {
        match (self.schema.atom(node), value) {
            (
                Atom::Map {
                    fields, elements, ..
                },
                Value::Object(entries),
            ) => {
                for (name, child) in entries {
                    path.push(PathElement::Field(name.clone()));
                    if fields.contains_key(name) || elements.is_some() {
                        self.undeclared(self.schema.field(node, name), child, path, found);
                    } else {
                        found.push(print(path));
                    }
                    path.pop();
                }
            }
            (Atom::List { element, list_type }, Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let pe = item_element(self.schema, list_type, *element, item)
                        .unwrap_or(PathElement::Index(i));
                    path.push(pe);
                    self.undeclared(*element, item, path, found);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    /// `set` with every declared struct field that has paths under it made a member too
    /// (`EnsureNamedFieldsAreMembers`), so that removing the set removes such fields whole.
    pub fn ensure_named_fields_are_members(&self, set: &FieldSet) -> FieldSet {
        self.ensure_at(self.schema.root(), set)
    }

    fn ensure_at(&self, node: NodeId, set: &FieldSet) -> FieldSet {
        let mut out = set.clone();
        for (pe, child) in set.children() {
            let child_node = match pe {
                PathElement::Field(name) => {
                    if self.schema.is_declared_field(node, name) {
                        out.insert_member(pe.clone());
                    }
                    self.schema.field(node, name)
                }
                _ => self.schema.element(node),
            };
            out.set_child(pe.clone(), self.ensure_at(child_node, child));
        }
        out
    }
}
