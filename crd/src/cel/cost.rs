//! Costs of CEL rules, for kube-apiserver's limits.
//!
//! Before a rule is accepted, its cost is estimated as cel-go's checker estimates it
//! ([`estimate`], in `estimate.rs`). While it runs, its cost is counted here by one model of
//! what cel-go counts: nothing for a literal, one per identifier and field selection, nothing
//! more for `has()`, one per call but `&&`, `||` and `?:` (whose branches count as the dearer
//! of the two), ten per list literal, thirty per map literal and forty per message literal, a
//! tenth of a string's length for the string functions that read the whole string, and each
//! comprehension's body once per element of what it ranges over, sizes read from the object
//! itself (or, where a value is absent, from what the schema declares).

use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr};
use serde_json::Value;

pub use super::estimate::estimate;
use super::sizes::{self, MAX_REQUEST_BYTES, declared_length};
pub use super::sizes::{max_children, unbounded_cardinality};
pub use super::total::over_limit_message;
use super::values::escape;
use crate::schema::{Schema, Type};

/// The string functions that read their whole receiver (cel-go's traversal cost).
const STRING_TRAVERSALS: [&str; 14] = [
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "find",
    "findAll",
    "split",
    "lowerAscii",
    "upperAscii",
    "replace",
    "indexOf",
    "lastIndexOf",
    "trim",
    "join",
];

/// The cost of evaluating `expr` on `value`, sizes read from the value.
pub fn runtime<'a>(expr: &'a IdedExpr, schema: &'a Schema, value: &'a Value) -> u64 {
    let mut walk = CostWalk {
        scopes: vec![("self".to_owned(), Bound::new(Some(schema), Some(value)))],
    };
    walk.cost(expr)
}

/// What an expression is known to be: its schema and, at run time, its value; or the list,
/// map or string literal it is (whose size cel-go's estimator knows).
#[derive(Clone, Copy)]
struct Bound<'a> {
    schema: Option<&'a Schema>,
    value: Option<&'a Value>,
    literal: Option<&'a IdedExpr>,
}

impl<'a> Bound<'a> {
    fn new(schema: Option<&'a Schema>, value: Option<&'a Value>) -> Self {
        Bound {
            schema,
            value,
            literal: None,
        }
    }

    const UNKNOWN: Bound<'static> = Bound {
        schema: None,
        value: None,
        literal: None,
    };

    /// A list, map or string literal (anything else: unknown).
    fn literal(expr: &'a IdedExpr) -> Self {
        match &expr.expr {
            Expr::List(_)
            | Expr::Map(_)
            | Expr::Literal(cel::common::ast::LiteralValue::String(_)) => Bound {
                literal: Some(expr),
                ..Bound::UNKNOWN
            },
            _ => Bound::UNKNOWN,
        }
    }

    /// The field `name` (escaped as rules write it).
    fn field(self, name: &str) -> Bound<'a> {
        let Some(schema) = self.schema else {
            return Bound::UNKNOWN;
        };
        let declared = schema
            .properties
            .iter()
            .find(|(key, _)| escape(key).as_deref() == Some(name));
        match declared {
            Some((key, sub)) => Bound::new(Some(sub), self.value.and_then(|v| v.get(key))),
            None => Bound::new(
                schema.additional_properties.as_deref(),
                self.value.and_then(|v| v.get(name)),
            ),
        }
    }

    /// The elements a comprehension over this ranges over, and how many there are.
    fn elements(self) -> (Bound<'a>, u64) {
        match self.literal.map(|literal| &literal.expr) {
            // The longest element stands for them all (cel-go unions their sizes).
            Some(Expr::List(list)) => {
                let longest = list
                    .elements
                    .iter()
                    .map(Bound::literal)
                    .max_by_key(|element| element.elements().1)
                    .unwrap_or(Bound::UNKNOWN);
                return (longest, list.elements.len() as u64);
            }
            Some(Expr::Map(map)) => return (Bound::UNKNOWN, map.entries.len() as u64),
            _ => {}
        }
        match (self.value, self.schema) {
            (Some(Value::Array(items)), schema) => (
                Bound::new(schema.and_then(|s| s.items.as_deref()), None),
                items.len() as u64,
            ),
            (Some(Value::Object(map)), _) => (Bound::UNKNOWN, map.len() as u64),
            (_, Some(schema)) => {
                let element = match schema.kind {
                    Some(Type::Array) => schema.items.as_deref(),
                    _ => None,
                };
                (Bound::new(element, None), sizes::max_elements(schema))
            }
            _ => (Bound::UNKNOWN, MAX_REQUEST_BYTES / 2),
        }
    }

    /// The length of the string this is.
    fn string_length(self) -> u64 {
        if let Some(Expr::Literal(cel::common::ast::LiteralValue::String(text))) =
            self.literal.map(|literal| &literal.expr)
        {
            return text.chars().count() as u64;
        }
        match (self.value, self.schema) {
            (Some(Value::String(s)), _) => s.chars().count() as u64,
            (_, Some(schema)) => declared_length(schema, 1),
            _ => MAX_REQUEST_BYTES,
        }
    }
}

struct CostWalk<'a> {
    scopes: Vec<(String, Bound<'a>)>,
}

impl<'a> CostWalk<'a> {
    fn bound(&self, expr: &'a IdedExpr) -> Bound<'a> {
        match &expr.expr {
            Expr::Ident(name) => self
                .scopes
                .iter()
                .rev()
                .find(|(bound, _)| bound == name)
                .map_or(Bound::UNKNOWN, |(_, b)| *b),
            Expr::Select(select) => self.bound(&select.operand).field(&select.field),
            // A macro's result (`filter`, `map`) is sized and typed as the list it ranges over.
            Expr::Comprehension(comp) => self.bound(&comp.iter_range),
            _ => Bound::literal(expr),
        }
    }

    fn cost(&mut self, expr: &'a IdedExpr) -> u64 {
        match &expr.expr {
            Expr::Unspecified | Expr::Literal(_) => 0,
            Expr::Ident(_) => 1,
            // `has(a.b)` costs what `a` costs (kube-apiserver counts no presence-test cost).
            Expr::Select(select) if select.test => self.cost(&select.operand),
            Expr::Select(select) => 1 + self.cost(&select.operand),
            // `?:` costs its condition and the dearer branch (cel-go's `Conditional`).
            Expr::Call(call) if call.func_name == "_?_:_" && call.args.len() == 3 => {
                let condition = self.cost(&call.args[0]);
                let branches = self.cost(&call.args[1]).max(self.cost(&call.args[2]));
                condition.saturating_add(branches)
            }
            Expr::Call(call) => {
                // `&&` and `||` cost only their arguments; every other call one more (and a
                // string traversal a tenth of its receiver's length).
                let free = matches!(call.func_name.as_str(), "_&&_" | "_||_");
                let mut total = u64::from(!free);
                if let Some(target) = &call.target {
                    total = total.saturating_add(self.cost(target));
                    if STRING_TRAVERSALS.contains(&call.func_name.as_str()) {
                        let length = self.bound(target).string_length();
                        total = total.saturating_add(length.div_ceil(10));
                    }
                }
                for arg in &call.args {
                    total = total.saturating_add(self.cost(arg));
                }
                total
            }
            Expr::List(list) => list
                .elements
                .iter()
                .fold(10u64, |acc, e| acc.saturating_add(self.cost(e))),
            Expr::Map(map) => map
                .entries
                .iter()
                .fold(30u64, |acc, entry| match &entry.expr {
                    EntryExpr::MapEntry(e) => acc
                        .saturating_add(self.cost(&e.key))
                        .saturating_add(self.cost(&e.value)),
                    EntryExpr::StructField(f) => acc.saturating_add(self.cost(&f.value)),
                }),
            Expr::Struct(s) => s
                .entries
                .iter()
                .fold(40u64, |acc, entry| match &entry.expr {
                    EntryExpr::MapEntry(e) => acc.saturating_add(self.cost(&e.value)),
                    EntryExpr::StructField(f) => acc.saturating_add(self.cost(&f.value)),
                }),
            Expr::Comprehension(comp) => {
                let range_cost = self.cost(&comp.iter_range);
                let (element, count) = self.bound(&comp.iter_range).elements();
                let init = self.cost(&comp.accu_init);
                self.scopes.push((comp.iter_var.clone(), element));
                if let Some(second) = &comp.iter_var2 {
                    self.scopes.push((second.clone(), Bound::UNKNOWN));
                }
                self.scopes.push((comp.accu_var.clone(), Bound::UNKNOWN));
                let body = self
                    .cost(&comp.loop_cond)
                    .saturating_add(self.cost(&comp.loop_step));
                let result = self.cost(&comp.result);
                self.scopes
                    .truncate(self.scopes.len() - 2 - usize::from(comp.iter_var2.is_some()));
                range_cost
                    .saturating_add(init)
                    .saturating_add(count.saturating_mul(body))
                    .saturating_add(result)
            }
        }
    }
}
