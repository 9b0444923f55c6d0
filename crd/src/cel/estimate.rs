//! kube-apiserver's estimate of what a CEL rule may cost, made before it runs: cel-go's
//! checker (`checker/cost.go`, the `coster`) over each subexpression's type and size, with
//! the Kubernetes library's estimates of its own functions (k8s.io/apiserver
//! `pkg/cel/library/cost.go`, `EstimateCallCost`) and apiextensions-apiserver's sizes of what
//! the schema declares (`pkg/apiserver/schema/cel/compilation.go`, `sizeEstimator`).
//!
//! The `cel` crate has no type checker, so the types cel-go's checker would give are deduced
//! here as the walk goes (`Ty`): enough to pick the overload cel-go prices (an index of a list
//! or of a map, string or list concatenation, string or numeric comparison) and to size what
//! a path through the schema reaches. Every estimate is a range, as cel-go's are; the rule is
//! held to its maximum.

use std::collections::HashMap;

use cel::IdedExpr;
use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, LiteralValue};

use super::sizes;
use crate::schema::{Schema, Type};

/// cel-go's `common.StringTraversalCostFactor`.
const STRING_TRAVERSAL: f64 = 0.1;
/// cel-go's `common.RegexStringLengthCostFactor`.
const REGEX_LENGTH: f64 = 0.25;
/// cel-go's base costs of creating a list, a map and a message.
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;
const STRUCT_CREATE: u64 = 40;
/// The names of the accumulator macros declare (`parser.AccumulatorName`, and the older
/// `HiddenAccumulatorName`).
const ACCUMULATORS: [&str; 2] = ["@result", "__result__"];

/// The most one evaluation of `expr`, a rule on a node of `schema`, may cost;
/// `custom_resource_root` when the node is the custom resource's root, where (as at an
/// embedded resource's) kube-apiserver declares `apiVersion`, `kind` and `metadata` itself.
pub fn estimate(expr: &IdedExpr, schema: &Schema, custom_resource_root: bool) -> u64 {
    Coster::new(schema, Coster::declared_size, custom_resource_root)
        .cost(expr)
        .max
}

/// The first field `expr` selects that the object it selects from does not declare (cel-go's
/// checker: "undefined field"), with the id of the selection. Only objects whose fields are
/// all known count: not one that keeps unknown fields or an embedded resource. At a
/// resource's root kube-apiserver declares `apiVersion`, `kind` and `metadata` itself, whose
/// `name` and `generateName` alone are declared ([`sizes::resource_root_envelope`]);
/// `custom_resource_root` as for [`estimate`].
pub fn undefined_field(
    expr: &IdedExpr,
    schema: &Schema,
    custom_resource_root: bool,
) -> Option<(u64, String)> {
    let mut coster = Coster::new(schema, Coster::declared_size, custom_resource_root);
    coster.cost(expr);
    coster.undefined
}

/// Whether a rule selecting `field` from an object of `schema` names a field the schema does
/// not declare.
fn undeclared(schema: &Schema, field: &str) -> bool {
    schema.kind == Some(Type::Object)
        && schema.additional_properties.is_none()
        && !schema.preserve_unknown_fields
        && !schema.embedded_resource
        && !schema
            .properties
            .keys()
            .any(|key| super::values::escape(key).as_deref() == Some(field))
}

/// Where the sizes a rule does not make known come from, by a node's path and type (cel-go's
/// `CostEstimator.EstimateSize`): for a CRD, the schema (`Coster::declared_size`).
type SizeSource<'a> = fn(&Coster<'a>, &[String], &Ty<'a>) -> Option<Range>;

/// A range of sizes or of costs (cel-go's `SizeEstimate` and `CostEstimate`), whose sums and
/// products stop at `u64::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    min: u64,
    max: u64,
}

impl Range {
    const UNKNOWN: Range = Range {
        min: 0,
        max: u64::MAX,
    };

    const fn fixed(n: u64) -> Range {
        Range { min: n, max: n }
    }

    /// Where a union of the sizes of `count` elements starts (cel-go's literal lists and
    /// maps): nothing yet, so that the first element sets both bounds; `0` when there are none.
    const fn union_of(count: usize) -> Range {
        if count == 0 {
            Range::fixed(0)
        } else {
            Range {
                min: u64::MAX,
                max: 0,
            }
        }
    }

    fn add(self, other: Range) -> Range {
        Range {
            min: self.min.saturating_add(other.min),
            max: self.max.saturating_add(other.max),
        }
    }

    fn mul(self, other: Range) -> Range {
        Range {
            min: self.min.saturating_mul(other.min),
            max: self.max.saturating_mul(other.max),
        }
    }

    fn union(self, other: Range) -> Range {
        Range {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    /// Each bound times `factor`, rounded up (`MultiplyByCostFactor`).
    fn factor(self, factor: f64) -> Range {
        let times = |x: u64| {
            let product = (x as f64 * factor).ceil();
            if product >= 18_446_744_073_709_551_616.0 {
                u64::MAX
            } else {
                product as u64
            }
        };
        Range {
            min: times(self.min),
            max: times(self.max),
        }
    }
}

/// The sizes of a list's or map's keys (a list's: its indices) and values, where a literal or
/// a call made them known (cel-go's `entrySizeEstimate`).
#[derive(Clone, Copy, Debug)]
struct Entries {
    map: bool,
    key: Range,
    value: Range,
}

/// Both entry sizes together, when both are known.
fn union_entries(a: Option<Entries>, b: Option<Entries>) -> Option<Entries> {
    let (a, b) = (a?, b?);
    Some(Entries {
        map: a.map,
        key: a.key.union(b.key),
        value: a.value.union(b.value),
    })
}

/// A subexpression's type, as cel-go's checker would have it.
#[derive(Clone, Debug, PartialEq)]
enum Ty<'a> {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    Null,
    List(Box<Ty<'a>>),
    Map(Box<Ty<'a>>, Box<Ty<'a>>),
    /// An object the schema declares by its properties (a struct to cel-go).
    Object(Declared<'a>),
    /// The `metadata` kube-apiserver declares at a resource's root: `name` and `generateName`.
    Envelope(sizes::Envelope),
    /// A type, or a message created in the rule.
    Other,
    Dyn,
}

impl<'a> Ty<'a> {
    /// The type `SchemaDeclType` declares for a schema.
    fn of(schema: &'a Schema) -> Ty<'a> {
        if schema.int_or_string || !sizes::declared(schema) {
            return Ty::Dyn;
        }
        match schema.kind {
            Some(Type::Array) => Ty::List(Box::new(sizes::element(schema).map_or(Ty::Dyn, Ty::of))),
            Some(Type::Object) => match sizes::element(schema) {
                Some(values) => Ty::Map(Box::new(Ty::String), Box::new(Ty::of(values))),
                None => Ty::Object(Declared(schema)),
            },
            Some(Type::String) => match schema.format.as_deref() {
                Some("byte") => Ty::Bytes,
                Some("duration") => Ty::Duration,
                Some("date" | "date-time") => Ty::Timestamp,
                _ => Ty::String,
            },
            Some(Type::Boolean) => Ty::Bool,
            Some(Type::Number) => Ty::Double,
            Some(Type::Integer) => Ty::Int,
            Some(Type::Any) | None => Ty::Dyn,
        }
    }

    /// Whether values of the type have one size (`isScalar`): their size is 1.
    fn scalar(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Duration | Ty::Timestamp
        )
    }

    /// A list's elements or a map's values.
    fn element(&self) -> Ty<'a> {
        match self {
            Ty::List(element) | Ty::Map(_, element) => (**element).clone(),
            _ => Ty::Dyn,
        }
    }

    /// What a comprehension's single variable ranges over: a list's elements, a map's keys.
    fn iterated(&self) -> Ty<'a> {
        match self {
            Ty::List(element) | Ty::Map(element, _) => (**element).clone(),
            _ => Ty::Dyn,
        }
    }

    fn literal(literal: &LiteralValue) -> Ty<'a> {
        match literal {
            LiteralValue::Boolean(_) => Ty::Bool,
            LiteralValue::Bytes(_) => Ty::Bytes,
            LiteralValue::Double(_) => Ty::Double,
            LiteralValue::Int(_) => Ty::Int,
            LiteralValue::Null => Ty::Null,
            LiteralValue::String(_) => Ty::String,
            LiteralValue::UInt(_) => Ty::Uint,
        }
    }

    /// The one type of all `types`, or `dyn` when they differ (or there are none).
    fn common(mut types: impl Iterator<Item = Ty<'a>>) -> Ty<'a> {
        let Some(first) = types.next() else {
            return Ty::Dyn;
        };
        if types.all(|ty| ty == first) {
            first
        } else {
            Ty::Dyn
        }
    }
}

/// An object's schema, compared by identity.
#[derive(Clone, Copy)]
struct Declared<'a>(&'a Schema);

impl PartialEq for Declared<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl std::fmt::Debug for Declared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("object")
    }
}

/// What a function's estimate may know of its target or one argument (cel-go's `AstNode`):
/// its path through the schema, its type, and its size where the rule itself makes it known.
struct Node<'a> {
    path: Vec<String>,
    ty: Ty<'a>,
    size: Option<Range>,
    /// The integer the rule writes here, if it is one (`split`'s limit).
    int_literal: Option<i64>,
}

/// What a call costs itself (its arguments included) and, where known, the size of its result
/// (cel-go's `CallEstimate`).
struct Call {
    cost: Range,
    size: Option<Range>,
}

impl Call {
    fn cost(cost: Range) -> Call {
        Call { cost, size: None }
    }
}

/// A variable a comprehension declares (cel-go's `localVar`).
struct Local<'a> {
    name: String,
    path: Vec<String>,
    size: Option<Range>,
    entries: Option<Entries>,
    ty: Ty<'a>,
}

/// cel-go's `coster`, with apiextensions-apiserver's size estimator.
struct Coster<'a> {
    /// The schema of the node the rule is on: `self` and `oldSelf`.
    root: &'a Schema,
    sizes_from: SizeSource<'a>,
    /// Each subexpression's path through the schema: a variable, then field names, `@items`,
    /// `@keys` or `@values`.
    paths: HashMap<u64, Vec<String>>,
    sizes: HashMap<u64, Range>,
    entries: HashMap<u64, Entries>,
    types: HashMap<u64, Ty<'a>>,
    locals: Vec<Local<'a>>,
    /// The first selection of a field its object does not declare, and the field.
    undefined: Option<(u64, String)>,
    /// Whether the rule's node is a resource's root (`apiVersion`, `kind` and `metadata`
    /// declared by kube-apiserver: [`sizes::resource_root_envelope`]).
    resource_root: bool,
}

impl<'a> Coster<'a> {
    /// The coster of a rule on `root`, the custom resource's root when
    /// `custom_resource_root`.
    fn new(root: &'a Schema, sizes_from: SizeSource<'a>, custom_resource_root: bool) -> Self {
        Coster {
            root,
            sizes_from,
            paths: HashMap::new(),
            sizes: HashMap::new(),
            entries: HashMap::new(),
            types: HashMap::new(),
            locals: Vec::new(),
            undefined: None,
            resource_root: custom_resource_root || root.embedded_resource,
        }
    }

    /// Notes `expr`, a selection of `field` from `operand`, when the operand's object does not
    /// declare the field.
    fn note_undefined(&mut self, expr: &IdedExpr, operand: &Ty<'a>, field: &str) {
        let undefined = match operand {
            Ty::Object(object) => {
                let enveloped = matches!(field, "apiVersion" | "kind" | "metadata")
                    && self.envelope(*object).is_some();
                !enveloped && undeclared(object.0, field)
            }
            Ty::Envelope(_) => !matches!(field, "name" | "generateName"),
            _ => false,
        };
        if undefined && self.undefined.is_none() {
            self.undefined = Some((expr.id, field.to_owned()));
        }
    }

    /// What kube-apiserver declares of `apiVersion`, `kind` and `metadata` on `object` when it
    /// is a resource's root whose schema leaves them out.
    fn envelope(&self, object: Declared<'a>) -> Option<sizes::Envelope> {
        let root =
            object.0.embedded_resource || (self.resource_root && std::ptr::eq(object.0, self.root));
        root.then(|| sizes::resource_root_envelope(object.0))
            .flatten()
    }

    /// The type of `field` of a value of type `operand`.
    fn field_type(&self, operand: &Ty<'a>, field: &str) -> Ty<'a> {
        match operand {
            Ty::Map(_, value) => (**value).clone(),
            Ty::Object(object) => match (self.envelope(*object), field) {
                (Some(_), "apiVersion" | "kind") => Ty::String,
                (Some(envelope), "metadata") => Ty::Envelope(envelope),
                _ => sizes::property(object.0, field).map_or(Ty::Dyn, Ty::of),
            },
            Ty::Envelope(_) if matches!(field, "name" | "generateName") => Ty::String,
            _ => Ty::Dyn,
        }
    }

    fn local(&self, name: &str) -> Option<&Local<'a>> {
        self.locals.iter().rev().find(|local| local.name == name)
    }

    fn ty(&self, expr: &IdedExpr) -> Ty<'a> {
        self.types.get(&expr.id).cloned().unwrap_or(Ty::Dyn)
    }

    fn path(&self, expr: &IdedExpr) -> Vec<String> {
        if let Expr::Ident(name) = &expr.expr
            && let Some(local) = self.local(name)
        {
            return local.path.clone();
        }
        self.paths.get(&expr.id).cloned().unwrap_or_default()
    }

    /// The size `sizeEstimator` reads off the schema at `path` (`MaxElements`), its first
    /// element (the variable) skipped: every path starts at the rule's own node.
    fn declared_size(&self, path: &[String], _: &Ty<'a>) -> Option<Range> {
        let (_, steps) = path.split_first()?;
        let mut node = self.root;
        if !sizes::declared(node) {
            return None;
        }
        let mut key = false;
        let mut resource_root = self.resource_root;
        for (i, step) in steps.iter().enumerate() {
            if key {
                return None;
            }
            if resource_root
                && matches!(step.as_str(), "apiVersion" | "kind" | "metadata")
                && let Some(envelope) = sizes::resource_root_envelope(node)
            {
                let max = envelope.max_elements(&steps[i..])?;
                return Some(Range { min: 0, max });
            }
            match step.as_str() {
                "@items" | "@values" => node = sizes::element(node)?,
                "@keys" if node.additional_properties.is_some() => key = true,
                name => node = sizes::property(node, name)?,
            }
            resource_root = node.embedded_resource;
        }
        // A map's keys are strings with no declared length (`StringType`, `MaxElements` 0).
        let max = if key { 0 } else { sizes::max_elements(node) };
        Some(Range { min: 0, max })
    }

    /// What the rule makes known of `expr`'s size, or else the schema (cel-go's
    /// `computeSize`, in its order).
    fn size(&mut self, expr: &IdedExpr) -> Option<Range> {
        if let Some(size) = self.sizes.get(&expr.id) {
            return Some(*size);
        }
        let literal = match &expr.expr {
            Expr::Literal(LiteralValue::String(text)) => Some(text.chars().count() as u64),
            Expr::Literal(LiteralValue::Bytes(bytes)) => Some(bytes.len() as u64),
            Expr::Literal(_) => Some(1),
            Expr::List(list) => Some(list.elements.len() as u64),
            Expr::Map(map) => Some(map.entries.len() as u64),
            _ => None,
        };
        if let Some(size) = literal {
            return Some(Range::fixed(size));
        }
        if let Some(size) = (self.sizes_from)(self, &self.path(expr), &self.ty(expr)) {
            self.sizes.insert(expr.id, size);
            return Some(size);
        }
        if self.ty(expr).scalar() {
            return Some(Range::fixed(1));
        }
        match &expr.expr {
            Expr::Ident(name) => self.local(name).and_then(|local| local.size),
            _ => None,
        }
    }

    fn size_or_unknown(&mut self, expr: &IdedExpr) -> Range {
        self.size(expr).unwrap_or(Range::UNKNOWN)
    }

    fn entries(&self, expr: &IdedExpr) -> Option<Entries> {
        if let Some(entries) = self.entries.get(&expr.id) {
            return Some(*entries);
        }
        match &expr.expr {
            Expr::Ident(name) => self.local(name).and_then(|local| local.entries),
            _ => None,
        }
    }

    fn node(&mut self, expr: &IdedExpr) -> Node<'a> {
        let mut path = self.path(expr);
        if path
            .first()
            .is_some_and(|first| ACCUMULATORS.contains(&first.as_str()))
        {
            path.clear();
        }
        let int_literal = match &expr.expr {
            Expr::Literal(LiteralValue::Int(n)) => Some(**n),
            _ => None,
        };
        Node {
            path,
            ty: self.ty(expr),
            size: self.size(expr),
            int_literal,
        }
    }

    /// The size a library estimate reads of a node (`sizeEstimate`).
    fn node_size(&self, node: &Node<'a>) -> Range {
        node.size
            .or_else(|| (self.sizes_from)(self, &node.path, &node.ty))
            .unwrap_or(Range::UNKNOWN)
    }

    fn cost(&mut self, expr: &IdedExpr) -> Range {
        let (cost, ty) = match &expr.expr {
            Expr::Unspecified => (Range::fixed(0), Ty::Dyn),
            Expr::Literal(literal) => (Range::fixed(0), Ty::literal(literal)),
            Expr::Ident(name) => {
                let (path, ty) = match self.local(name) {
                    Some(local) => (local.path.clone(), local.ty.clone()),
                    None => {
                        let ty = match name.as_str() {
                            "self" | "oldSelf" => Ty::of(self.root),
                            _ => Ty::Dyn,
                        };
                        (vec![name.clone()], ty)
                    }
                };
                self.paths.insert(expr.id, path);
                (Range::fixed(1), ty)
            }
            // kube-apiserver charges nothing for the presence test itself
            // (`PresenceTestHasCost(false)`).
            Expr::Select(select) if select.test => {
                let cost = self.cost(&select.operand);
                let operand = self.ty(&select.operand);
                self.note_undefined(expr, &operand, &select.field);
                (cost, Ty::Bool)
            }
            Expr::Select(select) => {
                let mut cost = self.cost(&select.operand);
                let operand = self.ty(&select.operand);
                self.note_undefined(expr, &operand, &select.field);
                if matches!(operand, Ty::Map(..) | Ty::Object(_) | Ty::Envelope(_)) {
                    cost = cost.add(Range::fixed(1));
                }
                let mut path = self.path(&select.operand);
                path.push(select.field.clone());
                let ty = self.field_type(&operand, &select.field);
                self.paths.insert(expr.id, path);
                (cost, ty)
            }
            Expr::Call(call) => self.call(expr, call),
            Expr::List(list) => {
                let mut cost = Range::fixed(LIST_CREATE);
                let mut values = Range::union_of(list.elements.len());
                for element in &list.elements {
                    cost = cost.add(self.cost(element));
                    values = values.union(self.size_or_unknown(element));
                }
                self.entries.insert(
                    expr.id,
                    Entries {
                        map: false,
                        key: Range::fixed(1),
                        value: values,
                    },
                );
                let element = Ty::common(list.elements.iter().map(|e| self.ty(e)));
                (cost, Ty::List(Box::new(element)))
            }
            Expr::Map(map) => {
                let mut cost = Range::fixed(MAP_CREATE);
                let start = Range::union_of(map.entries.len());
                let (mut keys, mut values) = (start, start);
                let (mut key_types, mut value_types) = (Vec::new(), Vec::new());
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        cost = cost.add(self.cost(&entry.key)).add(self.cost(&entry.value));
                        keys = keys.union(self.size_or_unknown(&entry.key));
                        values = values.union(self.size_or_unknown(&entry.value));
                        key_types.push(self.ty(&entry.key));
                        value_types.push(self.ty(&entry.value));
                    }
                }
                self.entries.insert(
                    expr.id,
                    Entries {
                        map: true,
                        key: keys,
                        value: values,
                    },
                );
                let ty = Ty::Map(
                    Box::new(Ty::common(key_types.into_iter())),
                    Box::new(Ty::common(value_types.into_iter())),
                );
                (cost, ty)
            }
            Expr::Struct(message) => {
                let mut cost = Range::fixed(STRUCT_CREATE);
                for entry in &message.entries {
                    if let EntryExpr::StructField(field) = &entry.expr {
                        cost = cost.add(self.cost(&field.value));
                    }
                }
                (cost, Ty::Other)
            }
            Expr::Comprehension(comprehension) => self.comprehension(expr, comprehension),
        };
        self.types.insert(expr.id, ty);
        cost
    }

    /// cel-go's `costCall`.
    fn call(&mut self, expr: &IdedExpr, call: &CallExpr) -> (Range, Ty<'a>) {
        let name = call.func_name.as_str();
        if name == "dyn" && call.target.is_none() && call.args.len() == 1 {
            let cost = self.cost(&call.args[0]).add(Range::fixed(1));
            if let Some(size) = self.size(&call.args[0]) {
                self.sizes.insert(expr.id, size);
            }
            if let Some(entries) = self.entries(&call.args[0]) {
                self.entries.insert(expr.id, entries);
            }
            return (cost, Ty::Dyn);
        }
        let mut arg_costs = Vec::with_capacity(call.args.len());
        let mut args = Vec::with_capacity(call.args.len());
        for arg in &call.args {
            arg_costs.push(self.cost(arg));
            args.push(self.node(arg));
        }
        let mut cost = Range::fixed(0);
        let target = match &call.target {
            Some(target) => {
                cost = cost.add(self.cost(target));
                Some(self.node(target))
            }
            None => None,
        };
        let priced = self.function(expr, call, target.as_ref(), &args, &arg_costs);
        let mut size = priced.size;
        let mut ty = result_type(call, target.as_ref(), &args);
        if name == "_[_]" && call.target.is_none() && call.args.len() == 2 {
            let step = match (&args[0].ty, &call.args[1].expr) {
                (Ty::Map(..), _) => "@values".to_owned(),
                // An object's property by name (`self['field']`) is its field.
                (Ty::Object(_) | Ty::Envelope(_), Expr::Literal(LiteralValue::String(field))) => {
                    ty = self.field_type(&args[0].ty, field);
                    field.to_string()
                }
                _ => "@items".to_owned(),
            };
            size = self.entries(&call.args[0]).map(|entries| entries.value);
            let mut path = self.path(&call.args[0]);
            path.push(step);
            self.paths.insert(expr.id, path);
        }
        // The result's own size, by its path, needs its type first.
        self.types.insert(expr.id, ty.clone());
        if size.is_none() {
            size = self.size(expr);
        }
        if let Some(size) = size {
            self.sizes.insert(expr.id, size);
        }
        (cost.add(priced.cost), ty)
    }

    /// What a call costs by its function and the types and sizes of its target and
    /// arguments (cel-go's `functionCost`, after the Kubernetes library's estimate).
    fn function(
        &mut self,
        expr: &IdedExpr,
        call: &CallExpr,
        target: Option<&Node<'a>>,
        args: &[Node<'a>],
        arg_costs: &[Range],
    ) -> Call {
        let arg_sum = arg_costs
            .iter()
            .fold(Range::fixed(0), |sum, cost| sum.add(*cost));
        if let Some(library) = self.library(&call.func_name, target, args) {
            return Call {
                cost: library.cost.add(arg_sum),
                size: library.size,
            };
        }
        let size = |node: &Node<'a>| node.size.unwrap_or(Range::UNKNOWN);
        let string_like = |node: &Node<'a>| matches!(node.ty, Ty::String | Ty::Bytes);
        match (call.func_name.as_str(), target, args) {
            ("startsWith" | "endsWith", Some(_), [prefix]) => {
                Call::cost(size(prefix).factor(STRING_TRAVERSAL).add(arg_sum))
            }
            ("bytes", None, [text]) if text.ty == Ty::String => {
                let length = size(text);
                Call {
                    cost: length.factor(STRING_TRAVERSAL).add(arg_sum),
                    size: Some(Range {
                        min: length.min,
                        max: length.max.saturating_mul(4),
                    }),
                }
            }
            ("string", None, [bytes]) if bytes.ty == Ty::Bytes => {
                let length = size(bytes);
                Call {
                    cost: length.factor(STRING_TRAVERSAL).add(arg_sum),
                    size: Some(Range {
                        min: length.min / 4,
                        max: length.max,
                    }),
                }
            }
            ("@in", None, [_, container]) if !matches!(container.ty, Ty::Map(..)) => {
                Call::cost(size(container).add(arg_sum))
            }
            ("matches", Some(text), [regex]) => {
                let text = size(text).add(Range::fixed(1)).factor(STRING_TRAVERSAL);
                let regex = size(regex).factor(REGEX_LENGTH);
                Call::cost(text.mul(regex).add(arg_sum))
            }
            ("contains", Some(text), [part]) => {
                let text = size(text).factor(STRING_TRAVERSAL);
                let part = size(part).factor(STRING_TRAVERSAL);
                Call::cost(text.mul(part).add(arg_sum))
            }
            ("_&&_" | "_||_", None, [_, _]) => Call::cost(Range {
                min: arg_costs[0].min,
                max: arg_costs[0].add(arg_costs[1]).max,
            }),
            ("_?_:_", None, [_, when_true, when_false]) => {
                let result = size(when_true).union(size(when_false));
                let entries =
                    union_entries(self.entries(&call.args[1]), self.entries(&call.args[2]));
                if let Some(entries) = entries {
                    self.entries.insert(expr.id, entries);
                }
                Call {
                    cost: arg_costs[0].add(arg_costs[1].union(arg_costs[2])),
                    size: Some(result),
                }
            }
            ("_+_", None, [lhs, rhs]) if string_like(lhs) || matches!(lhs.ty, Ty::List(_)) => {
                let result = size(lhs).add(size(rhs));
                let entries =
                    union_entries(self.entries(&call.args[0]), self.entries(&call.args[1]));
                if let Some(entries) = entries {
                    self.entries.insert(expr.id, entries);
                }
                let cost = if matches!(lhs.ty, Ty::List(_)) {
                    Range::fixed(1)
                } else {
                    result.factor(STRING_TRAVERSAL)
                };
                Call {
                    cost: cost.add(arg_sum),
                    size: Some(result),
                }
            }
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, [lhs, rhs])
                if string_like(lhs) && string_like(rhs) =>
            {
                Call::cost(compared(size(lhs), size(rhs)).add(arg_sum))
            }
            ("_==_" | "_!=_", None, [lhs, rhs]) => {
                Call::cost(compared(size(lhs), size(rhs)).add(arg_sum))
            }
            _ => Call::cost(Range::fixed(1).add(arg_sum)),
        }
    }

    /// The Kubernetes library's estimate of its own functions and of the strings extension's
    /// (`EstimateCallCost`), without the arguments' costs; `None` for the functions it leaves
    /// to cel-go.
    fn library(
        &self,
        function: &str,
        target: Option<&Node<'a>>,
        args: &[Node<'a>],
    ) -> Option<Call> {
        let size = |node: &Node<'a>| self.node_size(node);
        match (function, target) {
            (
                "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" | "includes",
                Some(list),
            ) => {
                let mut element_cost = Range::fixed(1);
                if let Some(element) = list_element(list) {
                    if matches!(element.ty, Ty::String | Ty::Bytes) {
                        element_cost = element_cost.add(size(&element).factor(STRING_TRAVERSAL));
                    }
                    return Some(Call::cost(size(list).mul(element_cost)));
                }
                if function == "includes" {
                    return Some(Call::cost(size(list).mul(element_cost)));
                }
                Some(Call::cost(size(list).factor(STRING_TRAVERSAL)))
            }
            ("lowerAscii" | "upperAscii" | "substring" | "trim", Some(text)) => {
                let length = size(text);
                Some(Call {
                    cost: length.factor(STRING_TRAVERSAL),
                    size: Some(length),
                })
            }
            ("replace", Some(text)) if args.len() >= 2 => {
                let (text, before, after) = (size(text), size(&args[0]), size(&args[1]));
                Some(Call {
                    cost: text.factor(2.0 * STRING_TRAVERSAL),
                    size: Some(replaced(text, before, after)),
                })
            }
            ("split", Some(text)) => {
                let length = size(text);
                // At most one element per character, or the limit the call passes.
                let limit = args.get(1).and_then(|limit| limit.int_literal);
                let most = limit.map_or(length.max, |limit| limit.max(0) as u64);
                Some(Call {
                    cost: length.factor(2.0 * STRING_TRAVERSAL),
                    size: Some(Range { min: 0, max: most }),
                })
            }
            ("join", Some(list)) => {
                let count = size(list);
                let mut joined = Range::fixed(0);
                if let Some(element) = list_element(list) {
                    joined = count.mul(size(&element));
                }
                if let Some(separator) = args.first() {
                    let separators = Range {
                        min: count.min.saturating_sub(1),
                        max: count.max.saturating_sub(1),
                    };
                    joined = joined.add(size(separator).mul(separators));
                }
                Some(Call {
                    cost: joined.factor(STRING_TRAVERSAL),
                    size: Some(joined),
                })
            }
            ("find" | "findAll", Some(text)) if !args.is_empty() => {
                let length = size(text);
                let text_cost = length.add(Range::fixed(1)).factor(STRING_TRAVERSAL);
                let regex = size(&args[0]).factor(REGEX_LENGTH);
                Some(Call {
                    cost: text_cost.mul(regex),
                    size: Some(Range {
                        min: 0,
                        max: length.max,
                    }),
                })
            }
            ("isIP" | "isCIDR" | "isQuantity" | "isSemver" | "quantity" | "semver", _)
                if !args.is_empty() =>
            {
                Some(Call::cost(size(&args[0]).factor(STRING_TRAVERSAL)))
            }
            _ => None,
        }
    }

    /// cel-go's `costComprehension`.
    fn comprehension(&mut self, expr: &IdedExpr, comp: &ComprehensionExpr) -> (Range, Ty<'a>) {
        let mut cost = self.cost(&comp.iter_range).add(self.cost(&comp.accu_init));
        let accumulator = Local {
            name: comp.accu_var.clone(),
            path: self.path(&comp.accu_init),
            size: self.size(&comp.accu_init),
            entries: self.entries(&comp.accu_init),
            ty: self.ty(&comp.accu_init),
        };
        self.locals.push(accumulator);
        let range_ty = self.ty(&comp.iter_range);
        let range_entries = self.entries(&comp.iter_range);
        let map = range_entries.map_or(matches!(range_ty, Ty::Map(..)), |entries| entries.map);
        let range_path = self.path(&comp.iter_range);
        let at = |step: &str| {
            let mut path = range_path.clone();
            path.push(step.to_owned());
            path
        };
        let declared = match &comp.iter_var2 {
            Some(value) => vec![
                Local {
                    name: comp.iter_var.clone(),
                    path: at(if map { "@keys" } else { "@indices" }),
                    size: range_entries.map(|entries| entries.key),
                    entries: None,
                    ty: if map { range_ty.iterated() } else { Ty::Int },
                },
                Local {
                    name: value.clone(),
                    path: at(if map { "@values" } else { "@items" }),
                    size: range_entries.map(|entries| entries.value),
                    entries: None,
                    ty: range_ty.element(),
                },
            ],
            None => vec![Local {
                name: comp.iter_var.clone(),
                path: at(if map { "@keys" } else { "@items" }),
                size: range_entries.map(|entries| if map { entries.key } else { entries.value }),
                entries: None,
                ty: range_ty.iterated(),
            }],
        };
        let count = declared.len();
        self.locals.extend(declared);
        let per_element = self.cost(&comp.loop_cond).add(self.cost(&comp.loop_step));
        // The accumulator has the type its step gives it (a macro's list of results).
        let stepped = self.ty(&comp.loop_step);
        self.locals.truncate(self.locals.len() - count);
        if let Some(accumulator) = self.locals.last_mut()
            && matches!(stepped, Ty::List(_) | Ty::Map(..))
        {
            accumulator.ty = stepped;
        }
        cost = cost.add(self.cost(&comp.result));
        self.locals.pop();
        let range_size = self.size_or_unknown(&comp.iter_range);
        cost = cost.add(range_size.mul(per_element));
        match &comp.accu_init.expr {
            Expr::Literal(_) => {
                if let Some(size) = self.size(&comp.accu_init) {
                    self.sizes.insert(expr.id, size);
                }
            }
            Expr::List(_) | Expr::Map(_) => {
                self.sizes.insert(expr.id, range_size);
                if let Some(entries) = self.entries(&comp.loop_step) {
                    self.entries.insert(expr.id, entries);
                }
            }
            _ => {}
        }
        (cost, self.ty(&comp.result))
    }
}

/// A list's elements, for the library's estimates (`listElementNode`): their type, and their
/// path through the schema when the list has one (a list written in the rule has none, so its
/// elements' sizes are unknown).
fn list_element<'a>(list: &Node<'a>) -> Option<Node<'a>> {
    let Ty::List(element) = &list.ty else {
        return None;
    };
    let mut path = list.path.clone();
    if !path.is_empty() {
        path.push("@items".to_owned());
    }
    Some(Node {
        path,
        ty: (**element).clone(),
        size: None,
        int_literal: None,
    })
}

/// What comparing two strings (or any two values for equality) costs, by the shorter of
/// their largest sizes: a scalar costs 1 (cel-go's `Equals` and string comparisons).
fn compared(lhs: Range, rhs: Range) -> Range {
    let shortest = lhs.max.min(rhs.max);
    Range {
        min: u64::from(shortest > 0),
        max: shortest,
    }
    .factor(STRING_TRAVERSAL)
}

/// The size of `text` with each `before` replaced by `after` (the library's `replace`).
fn replaced(text: Range, before: Range, after: Range) -> Range {
    let mut count = Range::fixed(0);
    let mut kept = Range::fixed(0);
    if before.min == 0 {
        // An empty pattern surrounds every character.
        count.max = text.max.saturating_add(1);
        kept.max = text.max;
    } else if after.max <= before.min {
        kept.max = text.max;
    } else {
        count.max = (text.max as f64 / before.min as f64).ceil() as u64;
    }
    if before.max == 0 {
        count.min = text.min.saturating_add(1);
        kept.min = text.min;
    } else if before.max <= after.min {
        kept.min = text.min;
    } else {
        count.min = (text.min as f64 / before.max as f64).ceil() as u64;
    }
    count.mul(after).add(kept)
}

/// The type of a call's result, as cel-go's checker would deduce it.
fn result_type<'a>(call: &CallExpr, target: Option<&Node<'a>>, args: &[Node<'a>]) -> Ty<'a> {
    let first = args.first().map_or(Ty::Dyn, |node| node.ty.clone());
    match call.func_name.as_str() {
        "_[_]" => first.element(),
        "_==_"
        | "_!=_"
        | "_<_"
        | "_<=_"
        | "_>_"
        | "_>=_"
        | "_&&_"
        | "_||_"
        | "!_"
        | "@not_strictly_false"
        | "@in"
        | "contains"
        | "startsWith"
        | "endsWith"
        | "matches"
        | "isSorted"
        | "isURL"
        | "isIP"
        | "isCIDR"
        | "isQuantity"
        | "isSemver" => Ty::Bool,
        "_?_:_" => match args.get(1).map(|node| node.ty.clone()) {
            Some(Ty::Dyn) | None => args.get(2).map_or(Ty::Dyn, |node| node.ty.clone()),
            Some(ty) => ty,
        },
        "_+_" => {
            let second = args.get(1).map_or(Ty::Dyn, |node| node.ty.clone());
            match (first, second) {
                (Ty::List(element), Ty::List(other)) if *element == Ty::Dyn => Ty::List(other),
                (Ty::Duration, Ty::Timestamp) => Ty::Timestamp,
                (first, _) => first,
            }
        }
        "_-_" => match (first, args.get(1).map(|node| &node.ty)) {
            (Ty::Timestamp, Some(Ty::Timestamp)) => Ty::Duration,
            (first, _) => first,
        },
        "_*_" | "_/_" | "_%_" | "-_" => first,
        "size" | "int" | "indexOf" | "lastIndexOf" | "getFullYear" | "getMonth"
        | "getDayOfYear" | "getDayOfMonth" | "getDate" | "getDayOfWeek" | "getHours"
        | "getMinutes" | "getSeconds" | "getMilliseconds" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "string" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring" | "join"
        | "find" | "charAt" | "format" => Ty::String,
        "bytes" => Ty::Bytes,
        "duration" => Ty::Duration,
        "timestamp" => Ty::Timestamp,
        "split" | "findAll" => Ty::List(Box::new(Ty::String)),
        "sum" | "min" | "max" => target.map_or(Ty::Dyn, |list| list.ty.element()),
        "type" => Ty::Other,
        _ => Ty::Dyn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The least and the most `expr` may cost, sizes not known from the rule itself coming
    /// from `sizes`.
    fn estimate_range<'a>(expr: &IdedExpr, schema: &'a Schema, sizes: SizeSource<'a>) -> Range {
        Coster::new(schema, sizes, false).cost(expr)
    }

    const INT_LIST: &str = "[1, 2, 3, 4, 5]";
    const UINT_LIST: &str = "[uint(1), uint(2), uint(3), uint(4), uint(5)]";
    const DOUBLE_LIST: &str = "[1.0, 2.0, 3.0, 4.0, 5.0]";
    const BOOL_LIST: &str = "[false, true, false, true, false]";
    const STRING_LIST: &str =
        "['012345678901', '012345678901', '012345678901', '012345678901', '012345678901']";
    const BYTES_LIST: &str = "[bytes('012345678901'), bytes('012345678901'), bytes('012345678901'), bytes('012345678901'), bytes('012345678901')]";
    const DURATION_LIST: &str =
        "[duration('1s'), duration('2s'), duration('3s'), duration('4s'), duration('5s')]";
    const TIMESTAMP_LIST: &str = "[timestamp('2011-01-01T00:00:00.000+01:00'), timestamp('2011-01-02T00:00:00.000+01:00'), timestamp('2011-01-03T00:00:00.000+01:00'), timestamp('2011-01-04T00:00:00.000+01:00'), timestamp('2011-01-05T00:00:00.000+01:00')]";
    const STRING: &str = "'01234567890123456789012345678901234567890123456789'";

    /// upstream's `testCostEstimator`: strings and bytes of unknown origin hold 0 to 12.
    fn sized_by_type<'a>(_: &Coster<'a>, _: &[String], ty: &Ty<'a>) -> Option<Range> {
        matches!(ty, Ty::String | Ty::Bytes).then_some(Range { min: 0, max: 12 })
    }

    /// The estimate of `rule`, compiled by apfkit's CEL environment, as upstream's `testCost`
    /// makes it.
    fn estimated(rule: &str) -> (u64, u64) {
        let program = super::super::environment()
            .compile(rule)
            .unwrap_or_else(|err| panic!("{rule}: {err}"));
        let schema = Schema::default();
        let range = estimate_range(program.expression(), &schema, sized_by_type);
        (range.min, range.max)
    }

    /// k8s.io/apiserver `pkg/cel/library/cost_test.go`, `TestListsCost`.
    #[test]
    fn test_lists_cost() {
        for list in [INT_LIST, DOUBLE_LIST] {
            assert_eq!(estimated(&format!("{list}.sum()")), (15, 15), "{list}");
        }
        for list in [UINT_LIST, DURATION_LIST] {
            assert_eq!(estimated(&format!("{list}.sum()")), (20, 20), "{list}");
        }
        for function in [".isSorted()", ".max()", ".min()"] {
            for (list, cost) in [
                (INT_LIST, (15, 15)),
                (UINT_LIST, (20, 20)),
                (DOUBLE_LIST, (15, 15)),
                (BOOL_LIST, (15, 15)),
                (STRING_LIST, (15, 25)),
                (BYTES_LIST, (25, 35)),
                (DURATION_LIST, (20, 20)),
                (TIMESTAMP_LIST, (20, 20)),
            ] {
                let rule = format!("{list}{function}");
                assert_eq!(estimated(&rule), cost, "{rule}");
            }
        }
    }

    /// k8s.io/apiserver `pkg/cel/library/cost_test.go`, `TestIndexOfCost`.
    #[test]
    fn test_index_of_cost() {
        for function in ["indexOf", "lastIndexOf"] {
            for (list, param, cost) in [
                (INT_LIST, "3", (15, 15)),
                (UINT_LIST, "uint(3)", (21, 21)),
                (DOUBLE_LIST, "3.0", (15, 15)),
                (BOOL_LIST, "true", (15, 15)),
                (STRING_LIST, "'x'", (15, 25)),
                (BYTES_LIST, "bytes('x')", (26, 36)),
                (DURATION_LIST, "duration('3s')", (21, 21)),
                (
                    TIMESTAMP_LIST,
                    "timestamp('2011-01-03T00:00:00.000+01:00')",
                    (21, 21),
                ),
                (STRING, "'123'", (5, 5)),
            ] {
                let rule = format!("{list}.{function}({param})");
                assert_eq!(estimated(&rule), cost, "{rule}");
            }
        }
    }

    /// k8s.io/apiserver `pkg/cel/library/cost_test.go`, `TestStringLibrary` (its
    /// `strings.quote` and `jsonpatch.escapeKey` cases are for functions apfkit's environment
    /// does not declare, as kube-apiserver's CRD environment does not either).
    #[test]
    fn test_string_library() {
        for (name, rule, cost) in [
            ("lowerAscii", "'ABCDEFGHIJ abcdefghij'.lowerAscii()", (3, 3)),
            (
                "lowerAsciiEquals",
                "'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()",
                (7, 9),
            ),
            ("upperAscii", "'ABCDEFGHIJ abcdefghij'.upperAscii()", (3, 3)),
            (
                "upperAsciiEquals",
                "'ABCDEFGHIJ abcdefghij'.upperAscii() == 'abcdefghij ABCDEFGHIJ'.upperAscii()",
                (7, 9),
            ),
            ("replace", "'abc 123 def 123'.replace('123', '456')", (3, 3)),
            (
                "replace between all chars",
                "'abc 123 def 123'.replace('', 'x')",
                (3, 3),
            ),
            (
                "replace with empty",
                "'abc 123 def 123'.replace('123', '')",
                (3, 3),
            ),
            (
                "replace with limit",
                "'abc 123 def 123'.replace('123', '456', 1)",
                (3, 3),
            ),
            ("split", "'abc 123 def 123'.split(' ')", (3, 3)),
            (
                "split with limit",
                "'abc 123 def 123'.split(' ', 1)",
                (3, 3),
            ),
            ("substring", "'abc 123 def 123'.substring(5)", (2, 2)),
            (
                "substring with end",
                "'abc 123 def 123'.substring(5, 8)",
                (2, 2),
            ),
            ("trim", "'  abc 123 def 123  '.trim()", (2, 2)),
            (
                "join with separator",
                "['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join(' ')",
                (11, 23),
            ),
            (
                "join",
                "['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join()",
                (10, 22),
            ),
            ("find", "'abc 123 def 123'.find('123')", (2, 2)),
            ("findAll", "'abc 123 def 123'.findAll('123')", (2, 2)),
            (
                "findAll with limit",
                "'abc 123 def 123'.findAll('123', 1)",
                (2, 2),
            ),
        ] {
            assert_eq!(estimated(rule), cost, "{name}: {rule}");
        }
    }

    /// The most `rule` may cost with nothing declared about sizes (cel-go's tests estimate
    /// with no size estimator).
    fn most(rule: &str) -> u64 {
        let program = cel::Program::compile(rule).expect("compiles");
        estimate(program.expression(), &Schema::default(), false)
    }

    /// cel-go's own estimates (checker/cost_test.go, `TestCost`) of the expressions that need
    /// no declared variables: the most each may cost, which kube-apiserver holds rules to.
    #[test]
    fn estimates_match_cel_gos_cost_test_vectors() {
        for (name, rule, max) in [
            ("const", "true", 0),
            ("create list", "[1, 2, 3]", 10),
            ("create map", r#"{"a": 1, "b": 2, "c": 3}"#, 30),
            ("all comprehension on literal", "[1, 2, 3].all(x, true)", 20),
            (
                "variable cost function with constant",
                "'123'.matches('[0-9]')",
                2,
            ),
            ("ternary", "true ? 1 : 2", 0),
            (
                ".filter list literal",
                "[1,2,3,4,5].filter(x, x % 2 == 0)",
                101,
            ),
            (".map list literal", "[1,2,3,4,5].map(x, x)", 86),
            (
                ".map.filter list literal",
                "[1,2,3,4,5].map(x, x).filter(x, x % 2 == 0)",
                177,
            ),
            (
                ".map.exists list literal",
                "[1,2,3,4,5].map(x, x).exists(x, x == 5) == true",
                118,
            ),
            (
                ".map.map list literal",
                "[1,2,3,4,5].map(x, x).map(x, x)",
                162,
            ),
            (
                ".map list literal selection",
                "[1,2,3,4,5].map(x, x)[4]",
                87,
            ),
            (
                "nested array selection",
                "[[1,2],[1,2],[1,2],[1,2],[1,2]][4]",
                61,
            ),
            (
                "nested map selection",
                "{'a': [1,2], 'b': [1,2], 'c': [1,2], 'd': [1,2], 'e': [1,2]}.b",
                81,
            ),
            (
                "comprehension on nested list",
                "[[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]].all(y, y.all(y, y == 1))",
                136,
            ),
            (
                "comprehension chaining with concat",
                "[1,2,3,4,5].map(x, x).map(x, x) + [1]",
                173,
            ),
            (
                "literal map access",
                "{'hello': 'hi'}['hello'] != {'hello': 'bye'}['hello']",
                63,
            ),
            (
                "literal list access",
                "['hello', 'hi'][0] != ['hello', 'bye'][1]",
                23,
            ),
        ] {
            assert_eq!(most(rule), max, "{name}: {rule}");
        }
    }

    /// The largest `maxLength` a schema can declare sizes a string (or an int-or-string) at
    /// most `u64::MAX` bytes, without overflowing, and the estimate stays a number.
    #[test]
    fn the_largest_declared_lengths_saturate() {
        for kind in [
            serde_json::json!({"x-kubernetes-int-or-string": true, "maxLength": i64::MAX}),
            serde_json::json!({"type": "string", "maxLength": i64::MAX}),
        ] {
            let props = serde_json::from_value(kind).unwrap();
            let schema =
                Schema::compile(&props, apfkit_runtime::field::Path::new("s")).expect("compiles");
            assert_eq!(super::sizes::max_elements(&schema), u64::MAX);
            let program = cel::Program::compile("self == 'x'").expect("compiles");
            assert_eq!(estimate(program.expression(), &schema, false), 2);
        }
    }

    /// prometheus-operator 0.93's ScrapeConfig CRD has this one rule; kube-apiserver accepts
    /// it (issue 37): a comprehension over a literal of three ranges three times.
    #[test]
    fn a_comprehension_over_a_list_literal_ranges_over_its_elements() {
        let rule = "[has(self.a), has(self.b), has(self.c)].filter(x, x).size() <= 1";
        let cost = most(rule);
        assert!(cost < 100, "{cost}");
    }
}
