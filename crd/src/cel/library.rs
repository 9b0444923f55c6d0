//! The Kubernetes CEL libraries kube-apiserver adds to rules (`k8s.io/apiserver/pkg/cel/library`),
//! as far as they are written here:
//!
//! | library | here |
//! |---|---|
//! | lists | `isSorted()`, `sum()`, `min()`, `max()`, `indexOf(x)`, `lastIndexOf(x)` |
//! | regex | `find(re)`, `findAll(re)`, `findAll(re, n)` |
//! | urls | `isURL(s)` |
//! | ip, cidr | `isIP(s)`, `isCIDR(s)` |
//! | quantity | `isQuantity(s)` |
//! | strings (cel-go's extension) | the `cel` crate's strings extension: `lowerAscii`, `split`, `replace`, `substring`, `trim`, `join`, `indexOf`, `format`, ... |
//!
//! Not written (declared, as kube declares them, so a rule calling one is accepted and fails
//! when it runs with "no such overload"; docs/crd-validation.md lists them): the objects the url, ip, cidr, quantity and semver
//! libraries return (`url(s).getHost()`, `ip(s).family()`, `quantity(s).isLessThan(...)`,
//! `semver(s)`), `format.named(...)`, and the authorizer.

use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::net::IpAddr;
use std::sync::Arc;

/// Declares the libraries on `env`.
pub fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload(
        "findAll",
        "string_find_all",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_n",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_n,
    )?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_overload("isIP", "is_ip_string", vec![STRING_TYPE], is_ip)?;
    env.add_overload("isCIDR", "is_cidr_string", vec![STRING_TYPE], is_cidr)?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    Ok(())
}

/// Declares a CEL function from a function of plain values.
macro_rules! function {
    ($name:ident, $body:expr) => {
        fn $name<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
            let args = args
                .iter()
                .map(|arg| Value::try_from(&**arg))
                .collect::<Result<Vec<Value>, ExecutionError>>()?;
            let body: fn(&[Value]) -> Result<Value, ExecutionError> = $body;
            let value: Box<dyn Val> = Box::<dyn Val>::try_from(body(&args)?)?;
            Ok(CowVal::Owned(value))
        }
    };
}

fn list<'a>(args: &'a [Value], function: &str) -> Result<&'a [Value], ExecutionError> {
    match args.first() {
        Some(Value::List(items)) => Ok(items),
        _ => Err(ExecutionError::function_error(function, "expects a list")),
    }
}

fn string_arg<'a>(args: &'a [Value], i: usize, function: &str) -> Result<&'a str, ExecutionError> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(ExecutionError::function_error(function, "expects a string")),
    }
}

function!(is_sorted, |args| {
    let items = list(args, "isSorted")?;
    Ok(Value::Bool(items.windows(2).all(|w| w[0] <= w[1])))
});

function!(sum, |args| {
    let items = list(args, "sum")?;
    let mut total = match items.first() {
        Some(Value::Float(_)) => Value::Float(0.0),
        Some(Value::UInt(_)) => Value::UInt(0),
        _ => Value::Int(0),
    };
    for item in items {
        total = match (total, item) {
            (Value::Int(a), Value::Int(b)) => Value::Int(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            _ => {
                return Err(ExecutionError::function_error(
                    "sum",
                    "list elements must be numbers of one type",
                ));
            }
        };
    }
    Ok(total)
});

fn extreme(args: &[Value], function: &str, pick_greater: bool) -> Result<Value, ExecutionError> {
    let items = list(args, function)?;
    let mut best = items.first().ok_or_else(|| {
        ExecutionError::function_error(function, format!("{function} called on empty list"))
    })?;
    for item in &items[1..] {
        let ordering = item.partial_cmp(best).ok_or_else(|| {
            ExecutionError::function_error(function, "list elements must be comparable")
        })?;
        if (pick_greater && ordering.is_gt()) || (!pick_greater && ordering.is_lt()) {
            best = item;
        }
    }
    Ok(best.clone())
}

function!(min, |args| extreme(args, "min", false));
function!(max, |args| extreme(args, "max", true));

function!(index_of, |args| {
    let items = list(args, "indexOf")?;
    let needle = args.get(1);
    Ok(Value::Int(
        items
            .iter()
            .position(|item| Some(item) == needle)
            .map_or(-1, |i| i as i64),
    ))
});

function!(last_index_of, |args| {
    let items = list(args, "lastIndexOf")?;
    let needle = args.get(1);
    Ok(Value::Int(
        items
            .iter()
            .rposition(|item| Some(item) == needle)
            .map_or(-1, |i| i as i64),
    ))
});

fn regex(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|err| ExecutionError::function_error(function, err))
}

function!(find, |args| {
    let text = string_arg(args, 0, "find")?;
    let re = regex(string_arg(args, 1, "find")?, "find")?;
    Ok(Value::String(Arc::new(
        re.find(text)
            .map(|m| m.as_str().to_owned())
            .unwrap_or_default(),
    )))
});

fn find_matches(args: &[Value], limit: Option<i64>) -> Result<Value, ExecutionError> {
    let text = string_arg(args, 0, "findAll")?;
    let re = regex(string_arg(args, 1, "findAll")?, "findAll")?;
    let limit = match limit {
        Some(n) if n >= 0 => n as usize,
        _ => usize::MAX,
    };
    let found: Vec<Value> = re
        .find_iter(text)
        .take(limit)
        .map(|m| Value::String(Arc::new(m.as_str().to_owned())))
        .collect();
    Ok(Value::List(Arc::new(found)))
}

function!(find_all, |args| find_matches(args, None));
function!(find_all_n, |args| {
    let n = match args.get(2) {
        Some(Value::Int(n)) => *n,
        _ => return Err(ExecutionError::function_error("findAll", "expects an int")),
    };
    find_matches(args, Some(n))
});

function!(is_url, |args| {
    let text = string_arg(args, 0, "isURL")?;
    Ok(Value::Bool(crate::format::is_valid("uri", text)))
});

function!(is_ip, |args| {
    let text = string_arg(args, 0, "isIP")?;
    // Kubernetes' ip library refuses IPv4-mapped IPv6 addresses and zones.
    let valid = text.parse::<IpAddr>().is_ok_and(|ip| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_none(),
        IpAddr::V4(_) => true,
    });
    Ok(Value::Bool(valid))
});

function!(is_cidr, |args| {
    let text = string_arg(args, 0, "isCIDR")?;
    Ok(Value::Bool(crate::format::is_valid("cidr", text)))
});

function!(is_quantity, |args| {
    let text = string_arg(args, 0, "isQuantity")?;
    Ok(Value::Bool(apfkit_runtime::Quantity::new(text).is_ok()))
});
