//! What cel-go's checker calls an "undeclared reference": a function or a variable the
//! environment kube-apiserver compiles a new rule in does not declare (its base environment
//! at the minimum compatibility version, 1.36 for 1.37, and the rule's own variables).
//!
//! Only names are checked here, not overloads: a declared function called on the wrong types
//! is left to run (and fail) as before.

use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr};

/// The variables a rule has: `self`, `oldSelf`, and the type names cel-go declares as
/// identifiers.
const VARIABLES: [&str; 13] = [
    "self",
    "oldSelf",
    "bool",
    "bytes",
    "double",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "type",
    "uint",
    "optional_type",
];

/// The functions of the environment, by name (a namespaced one by its full name), as
/// k8s.io/apiserver `pkg/cel/environment/base.go` assembles it at 1.36: cel-go's standard
/// library and macros, optional types, the strings extension (version 2), sets, lists
/// (version 3), two-variable comprehensions, and Kubernetes' libraries (lists version 0,
/// regex, URLs, authorizer and selectors, quantity, IP, CIDR, format, semver).
const FUNCTIONS: &[&str] = &[
    // cel-go's standard library and macros.
    "size",
    "contains",
    "endsWith",
    "startsWith",
    "matches",
    "in",
    "bool",
    "bytes",
    "double",
    "duration",
    "dyn",
    "int",
    "string",
    "timestamp",
    "type",
    "uint",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    // Optional types.
    "optional.none",
    "optional.of",
    "optional.ofNonZeroValue",
    "optional.unwrap",
    "unwrapOpt",
    "hasValue",
    "value",
    "or",
    "orValue",
    "optMap",
    "optFlatMap",
    "first",
    "last",
    // Strings, version 2.
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "format",
    "strings.quote",
    "join",
    // Sets.
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    // Lists, version 3.
    "slice",
    "flatten",
    "sort",
    "sortBy",
    "lists.range",
    "reverse",
    "distinct",
    // Two-variable comprehensions.
    "existsOne",
    "transformList",
    "transformMap",
    "transformMapEntry",
    // Kubernetes: lists (version 0; 1.37's `includes` is version 1), regex, URLs.
    "isSorted",
    "sum",
    "min",
    "max",
    "find",
    "findAll",
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    // Kubernetes: the authorizer and selectors.
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
    "fieldSelector",
    "labelSelector",
    // Kubernetes: quantity.
    "quantity",
    "isQuantity",
    "sign",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "add",
    "sub",
    "asApproximateFloat",
    "asInteger",
    "isInteger",
    // Kubernetes: IP and CIDR.
    "ip",
    "isIP",
    "ip.isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "masked",
    "prefixLength",
    // Kubernetes: format.
    "format.named",
    "validate",
    "format.dns1123Label",
    "format.dns1123Subdomain",
    "format.dns1035Label",
    "format.qualifiedName",
    "format.dns1123LabelPrefix",
    "format.dns1123SubdomainPrefix",
    "format.dns1035LabelPrefix",
    "format.labelValue",
    "format.uri",
    "format.uuid",
    "format.byte",
    "format.date",
    "format.datetime",
    // Kubernetes: semver.
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
];

/// Whether the environment declares a function called `name`; operators (`_+_`, `@in`,
/// `!_`) always are.
fn function_declared(name: &str) -> bool {
    !name.starts_with(|c: char| c.is_ascii_alphabetic()) || FUNCTIONS.contains(&name)
}

/// Every name `expr` references that is not declared, with the id of the expression that
/// names it, in the order cel-go's checker visits them (a call's arguments before its target
/// and its own name); cel-go prints its errors by position.
pub(crate) fn undeclared_references(expr: &IdedExpr) -> Vec<(u64, String)> {
    let mut found = Vec::new();
    visit(expr, &mut VARIABLES.to_vec(), &mut found);
    found
}

fn visit<'a>(expr: &'a IdedExpr, scopes: &mut Vec<&'a str>, found: &mut Vec<(u64, String)>) {
    match &expr.expr {
        Expr::Ident(name) => {
            if !scopes.contains(&name.as_str()) {
                found.push((expr.id, name.clone()));
            }
        }
        Expr::Select(select) => visit(&select.operand, scopes, found),
        Expr::Call(call) => {
            for arg in &call.args {
                visit(arg, scopes, found);
            }
            if let Some(target) = &call.target {
                // `sets.contains(…)`: a function of a namespace, not a call on `sets`.
                if let Some(prefix) = qualified_name(target)
                    && FUNCTIONS.contains(&format!("{prefix}.{}", call.func_name).as_str())
                {
                    return;
                }
                visit(target, scopes, found);
            }
            if !function_declared(&call.func_name) {
                found.push((expr.id, call.func_name.clone()));
            }
        }
        Expr::List(list) => {
            for element in &list.elements {
                visit(element, scopes, found);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                match &entry.expr {
                    EntryExpr::MapEntry(e) => {
                        visit(&e.key, scopes, found);
                        visit(&e.value, scopes, found);
                    }
                    EntryExpr::StructField(f) => visit(&f.value, scopes, found),
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                match &entry.expr {
                    EntryExpr::MapEntry(e) => visit(&e.value, scopes, found),
                    EntryExpr::StructField(f) => visit(&f.value, scopes, found),
                }
            }
        }
        Expr::Comprehension(comp) => {
            visit(&comp.iter_range, scopes, found);
            visit(&comp.accu_init, scopes, found);
            let depth = scopes.len();
            scopes.push(&comp.accu_var);
            scopes.push(&comp.iter_var);
            if let Some(iter_var2) = &comp.iter_var2 {
                scopes.push(iter_var2);
            }
            visit(&comp.loop_cond, scopes, found);
            visit(&comp.loop_step, scopes, found);
            scopes.truncate(depth);
            scopes.push(&comp.accu_var);
            visit(&comp.result, scopes, found);
            scopes.truncate(depth);
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// `a.b.c` as the name it would be if it named a namespace, when it is only identifiers and
/// selections.
fn qualified_name(expr: &IdedExpr) -> Option<String> {
    match &expr.expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(select) if !select.test => Some(format!(
            "{}.{}",
            qualified_name(&select.operand)?,
            select.field
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn undeclared(rule: &str) -> Vec<String> {
        let program = super::super::environment().compile(rule).expect("parses");
        undeclared_references(program.expression())
            .into_iter()
            .map(|(_, name)| name)
            .collect()
    }

    #[test]
    fn undeclared_functions_and_variables_are_named_in_the_checkers_order() {
        assert_eq!(undeclared("nosuch(self.x)"), ["nosuch"]);
        assert_eq!(undeclared("self.s.nosuch()"), ["nosuch"]);
        assert_eq!(undeclared("other > 1"), ["other"]);
        assert_eq!(undeclared("self.l.all(i, j > 0)"), ["j"]);
        assert_eq!(undeclared("self.l.includes(1)"), ["includes"]);
        // Arguments before the target, the target before the function.
        assert_eq!(undeclared("a.nosuch(b)"), ["b", "a", "nosuch"]);
        // A comprehension's variables are declared inside it only.
        assert_eq!(undeclared("self.l.all(i, i > 0) && i > 0"), ["i"]);
    }

    #[test]
    fn the_environments_functions_and_namespaces_are_declared() {
        for rule in [
            "sets.contains(self.l, [1]) && lists.range(3).size() == 3",
            "optional.of(self.x).hasValue() && self.l.exists(i, i > self.x)",
            "type(self.x) == int && ['a'].join('-') == 'a'",
            "self.l.map(x, x * 2).filter(y, y > 0).exists_one(z, z == 2)",
            "format.dns1123Label().validate(self.s).hasValue()",
            "ip.isCanonical(self.s) && quantity('1').isInteger() && self.l.sum() > 0",
            "{'a': self.x}.all(k, k != '') && [self.x].isSorted()",
        ] {
            assert_eq!(undeclared(rule), Vec::<String>::new(), "{rule}");
        }
    }
}
