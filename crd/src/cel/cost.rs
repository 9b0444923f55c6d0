//! Costs of CEL rules, for kube-apiserver's limits.
//!
//! cel-go estimates a rule's cost from its checked AST and the schema's size limits, and
//! counts its actual cost while it runs; the `cel` crate does neither, so both are computed
//! here by one model of what cel-go counts (`checker/cost.go`): nothing for a literal, one per
//! identifier and field selection, nothing more for `has()`, one per call but `&&`, `||` and
//! `?:` (whose branches count as the dearer of the two), ten per list literal, thirty per map
//! literal and forty per message literal, a tenth of a string's length for the string
//! functions that read the whole string, and each comprehension's body once per element of
//! what it ranges over (a literal list or map: its own length). Sizes come from the
//! schema's `maxItems`, `maxProperties` and `maxLength` for the estimate (or, where a schema
//! sets none, from the most that fits in kube-apiserver's 3 MiB request limit), and from the
//! object itself at run time. When estimating, strings are sized as kube-apiserver sizes them
//! (`maxLength` characters of up to 4 bytes each) and the string functions cel-go and the
//! Kubernetes library price by size are priced so (`CostWalk::estimated_call`).

use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr};
use serde_json::Value;

use super::values::escape;
use crate::schema::{Schema, Type};

/// kube-apiserver's largest request body, which bounds what an unbounded list can hold.
const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

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

/// The smallest JSON a value of the schema can be, as apiserver's `SchemaDeclType` counts
/// it (`k8s.io/apiserver/pkg/cel/common/schemas.go`): `""`, `0`, `true`, `[]`, and for an
/// object `{}` plus each required property that has no default.
fn min_json_size(schema: Option<&Schema>) -> u64 {
    let Some(schema) = schema else {
        return 1;
    };
    match schema.kind {
        Some(Type::String) => 2,
        Some(Type::Boolean) => 4,
        Some(Type::Array) => 2,
        Some(Type::Object) => {
            2 + schema
                .required
                .iter()
                .filter_map(|name| Some((name, schema.properties.get(name)?)))
                .filter(|(_, property)| property.default.is_none())
                .map(|(name, property)| name.len() as u64 + min_json_size(Some(property)) + 4)
                .sum::<u64>()
        }
        _ => 1,
    }
}

/// The most elements a list (or map) of elements of `min_size` can have in one request
/// (`estimateMaxArrayItemsFromMinSize`, `estimateMaxAdditionalPropertiesFromMinSize`).
fn fitting(min_size: u64, map: bool) -> u64 {
    (MAX_REQUEST_BYTES - 2) / (min_size + if map { 6 } else { 1 })
}

/// How many elements a list or map under `schema` can have at most.
fn max_elements(schema: &Schema) -> u64 {
    match schema.kind {
        Some(Type::Array) => match schema.max_items {
            Some(max) => max.max(0) as u64,
            None => fitting(min_json_size(schema.items.as_deref()), false),
        },
        Some(Type::Object) => match schema.max_properties {
            Some(max) => max.max(0) as u64,
            None => fitting(min_json_size(schema.additional_properties.as_deref()), true),
        },
        _ => fitting(1, false),
    }
}

/// How many times a rule on a node of `schema` can run when a list or map above it is
/// unbounded: as many values of its smallest size as fit in a request
/// (apiextensions-apiserver's `maxCardinality`, from the node's own type).
pub fn unbounded_cardinality(schema: &Schema) -> u64 {
    MAX_REQUEST_BYTES / (min_json_size(Some(schema)) + 1)
}

/// How many elements a list (or map) can hold by its declared limit (`maxItems`,
/// `maxProperties`); `None` when it declares none (unbounded).
pub fn max_children(declared: Option<i64>) -> Option<u64> {
    declared.map(|max| max.max(0) as u64)
}

/// The estimated cost of one evaluation of `expr` at a node of `schema`.
pub fn estimate<'a>(expr: &'a IdedExpr, schema: &'a Schema) -> u64 {
    let mut walk = CostWalk {
        scopes: vec![("self".to_owned(), Bound::new(Some(schema), None))],
        estimating: true,
    };
    walk.cost(expr)
}

/// The cost of evaluating `expr` on `value`, sizes read from the value.
pub fn runtime<'a>(expr: &'a IdedExpr, schema: &'a Schema, value: &'a Value) -> u64 {
    let mut walk = CostWalk {
        scopes: vec![("self".to_owned(), Bound::new(Some(schema), Some(value)))],
        estimating: false,
    };
    walk.cost(expr)
}

/// kube-apiserver's message for a cost over its limit (`getCostErrorMessage`).
pub fn over_limit_message(name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
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
                (Bound::new(element, None), max_elements(schema))
            }
            _ => (Bound::UNKNOWN, MAX_REQUEST_BYTES / 2),
        }
    }

    /// The most bytes the string this is can hold, as kube-apiserver's estimator sizes it
    /// (`SchemaDeclType`): a literal's length; `maxLength` characters of up to 4 bytes each;
    /// an enum's longest value; or what fits in a request. `None` for what is not a string
    /// of the schema or a literal.
    fn estimated_string_size(self) -> Option<u64> {
        if let Some(Expr::Literal(cel::common::ast::LiteralValue::String(text))) =
            self.literal.map(|literal| &literal.expr)
        {
            return Some(text.chars().count() as u64);
        }
        let schema = self.schema.filter(|s| s.kind == Some(Type::String))?;
        Some(declared_length(schema, 4))
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

/// The longest a string of `schema` can be: its `maxLength` characters of `per_character`
/// each, else its enum's longest value, else what fits in a request.
fn declared_length(schema: &Schema, per_character: u64) -> u64 {
    match (schema.max_length, schema.enumeration.is_empty()) {
        (Some(max), _) => (max.max(0) as u64).saturating_mul(per_character),
        (None, false) => schema
            .enumeration
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.len() as u64)
            .max()
            .unwrap_or(0),
        (None, true) => MAX_REQUEST_BYTES - 2,
    }
}

struct CostWalk<'a> {
    scopes: Vec<(String, Bound<'a>)>,
    /// Estimating from the schema (cel-go's checker), rather than counting on a value.
    estimating: bool,
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

    /// What cel-go's checker (with the Kubernetes library's estimator) charges a string call
    /// itself, beyond its target and arguments, where it prices by the strings' sizes
    /// (`checker/cost.go` `functionCost`; `k8s.io/apiserver/pkg/cel/library/cost.go`): a tenth
    /// of a size per traversal, rounded up; `None` for the calls priced as before.
    fn estimated_call(&self, call: &'a cel::common::ast::CallExpr) -> Option<u64> {
        let tenth = |size: u64| size.div_ceil(10);
        let size = |expr: &'a IdedExpr| self.bound(expr).estimated_string_size();
        let target = call.target.as_deref();
        match (call.func_name.as_str(), target, call.args.as_slice()) {
            ("startsWith" | "endsWith", Some(_), [prefix]) => Some(tenth(size(prefix)?)),
            ("contains", Some(text), [part]) => {
                Some(tenth(size(text)?).saturating_mul(tenth(size(part)?)))
            }
            ("matches", Some(text), [regex]) => {
                let text = tenth(size(text)?.saturating_add(1));
                Some(text.saturating_mul(size(regex)?.div_ceil(4)))
            }
            ("lowerAscii" | "upperAscii" | "trim", Some(text), []) => Some(tenth(size(text)?)),
            ("_==_" | "_!=_", None, [lhs, rhs]) => Some(tenth(size(lhs)?.min(size(rhs)?))),
            _ => None,
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
                // A call priced by its strings' sizes costs that; `&&` and `||` cost only
                // their arguments; every other call one more (and a string traversal a tenth
                // of its receiver's length).
                let priced = if self.estimating {
                    self.estimated_call(call)
                } else {
                    None
                };
                let free = matches!(call.func_name.as_str(), "_&&_" | "_||_");
                let mut total: u64 = priced.unwrap_or(u64::from(!free));
                if let Some(target) = &call.target {
                    total = total.saturating_add(self.cost(target));
                    if priced.is_none() && STRING_TRAVERSALS.contains(&call.func_name.as_str()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn estimated(rule: &str) -> u64 {
        let program = cel::Program::compile(rule).expect("compiles");
        estimate(program.expression(), &Schema::default())
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
            assert_eq!(estimated(rule), max, "{name}: {rule}");
        }
    }

    /// prometheus-operator 0.93's ScrapeConfig CRD has this one rule; kube-apiserver accepts
    /// it (issue 37): a comprehension over a literal of three ranges three times.
    #[test]
    fn a_comprehension_over_a_list_literal_ranges_over_its_elements() {
        let rule = "[has(self.a), has(self.b), has(self.c)].filter(x, x).size() <= 1";
        let cost = estimated(rule);
        assert!(cost < 100, "{cost}");
    }
}
