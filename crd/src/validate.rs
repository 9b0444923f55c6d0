//! Schema validation of a custom resource, as kube-apiserver makes it: kube-openapi's
//! validator (`k8s.io/kube-openapi/pkg/validation/validate`, go-openapi's fork) turned into
//! field errors by apiextensions-apiserver's `kubeOpenAPIResultToFieldErrors`
//! (`pkg/apiserver/validation/validation.go`).
//!
//! Each node is checked in kube-openapi's order (type, `allOf`/`anyOf`/`oneOf`/`not`, string,
//! format, number, array, `enum`, object), and each message is kube-openapi's, naming the
//! field "in body": `spec.replicas in body should be less than or equal to 10`. One
//! difference: kube-openapi visits an object's properties in Go's random map order; here they
//! come in name order, so the errors of one object always come in the same order.

use apfkit_runtime::field::{BadValue, FieldError, go_float, go_quote};
use serde_json::{Map, Value};

use crate::format;
use crate::listtype::OldItems;
use crate::schema::{Schema, Type};

/// The `in` of kube-openapi's messages: a CRD's object is the request's body.
const IN: &str = "body";

/// Validates `value` against `schema`, appending kube-apiserver's errors.
pub fn validate(schema: &Schema, value: &Value, errors: &mut Vec<FieldError>) {
    check(schema, "", value, None, errors);
}

/// Validates `value`, an update of `old`, against `schema` as kube-apiserver does since
/// validation ratcheting (`RatchetingSchemaValidator`): the errors of a value equal to the
/// old value it correlates with are dropped. A property correlates with the old object's
/// property of the same name, an item of an `x-kubernetes-list-type: map` list with the old
/// item of the same keys; no other item, nor the root's `apiVersion` and `kind`.
pub fn validate_update(schema: &Schema, value: &Value, old: &Value, errors: &mut Vec<FieldError>) {
    check(schema, "", value, Some(old), errors);
}

/// The field path of kube-openapi's name: its leading `.` (a root property reached through
/// `additionalProperties` or `required`) trimmed; the root itself is the empty path.
fn field_path(name: &str) -> String {
    name.strip_prefix('.').unwrap_or(name).to_owned()
}

/// The JSON type kube-openapi reports for a value.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The `type` a schema requires, as kube-openapi prints it (`integer,string` for
/// int-or-string), or `None` when it requires none.
fn required_types(schema: &Schema) -> Option<&'static str> {
    if schema.int_or_string {
        return Some("integer,string");
    }
    match schema.kind {
        None | Some(Type::Any) => None,
        Some(kind) => Some(kind.name()),
    }
}

fn type_error(name: &str, types: &str, found: &str) -> FieldError {
    FieldError::type_invalid(
        field_path(name),
        BadValue::Str(found.to_owned()),
        format!(
            "{name} in {IN} must be of type {types}: {}",
            go_quote(found)
        ),
    )
}

/// The errors of `value` and below, those of a value equal to its correlated `old` dropped.
fn check(
    schema: &Schema,
    name: &str,
    value: &Value,
    old: Option<&Value>,
    errors: &mut Vec<FieldError>,
) {
    let before = errors.len();
    check_node(schema, name, value, old, errors);
    if errors.len() > before && old.is_some_and(|old| same_value(old, value)) {
        errors.truncate(before);
    }
}

fn check_node(
    schema: &Schema,
    name: &str,
    value: &Value,
    old: Option<&Value>,
    errors: &mut Vec<FieldError>,
) {
    // kube-openapi checks only the type and the enum of a null.
    if value.is_null() {
        if let Some(types) = required_types(schema)
            && !schema.nullable
        {
            errors.push(type_error(name, types, "null"));
        }
        check_enum(schema, name, value, errors);
        return;
    }
    if let Some(types) = required_types(schema) {
        let found = json_type(value);
        let matches = types.split(',').any(|t| t == found)
            || (found == "integer" && types == "number")
            || (found == "number"
                && types.split(',').any(|t| t == "integer")
                && value.as_f64().is_some_and(|f| f.fract() == 0.0));
        if !matches {
            errors.push(type_error(name, types, found));
        }
    }
    check_composition(schema, name, value, old, errors);
    match value {
        Value::String(text) => {
            check_string(schema, name, text, errors);
            if let Some(format) = &schema.format
                && !format::is_valid(format, text)
            {
                errors.push(FieldError::type_invalid(
                    field_path(name),
                    BadValue::Str(text.clone()),
                    format!(
                        "{name} in {IN} must be of type {format}: {}",
                        go_quote(text)
                    ),
                ));
            }
        }
        Value::Number(_) => check_number(schema, name, value, errors),
        Value::Array(items) => check_array(schema, name, items, old, errors),
        _ => {}
    }
    check_enum(schema, name, value, errors);
    if let Value::Object(map) = value {
        check_object(schema, name, map, old, errors);
    }
}

/// `anyOf`, `oneOf`, `allOf`, `not`, as kube-openapi's `schemaPropsValidator`: its message
/// (an error without a field, so `<nil>`), and the errors of the first alternative that
/// failed (for `anyOf` and `oneOf`) or of every schema (for `allOf`). Upstream keeps the
/// failed alternative with the most checks applied (`MatchCount`), the first of equals; its
/// checks apply by the value's kind, so the alternatives of one value nearly always tie.
fn check_composition(
    schema: &Schema,
    name: &str,
    value: &Value,
    old: Option<&Value>,
    errors: &mut Vec<FieldError>,
) {
    if schema.any_of.is_empty()
        && schema.one_of.is_empty()
        && schema.all_of.is_empty()
        && schema.not.is_none()
    {
        return;
    }
    let run = |sub: &Schema| {
        let mut found = Vec::new();
        check(sub, name, value, old, &mut found);
        found
    };
    let composition_error =
        |message: String| FieldError::invalid("", BadValue::Str(String::new()), message);
    let subject = go_quote(name);
    if !schema.any_of.is_empty() {
        let mut best: Option<Vec<FieldError>> = None;
        let mut succeeded = false;
        for sub in &schema.any_of {
            let found = run(sub);
            if found.is_empty() {
                succeeded = true;
                best = None;
                break;
            }
            if best.is_none() {
                best = Some(found);
            }
        }
        if !succeeded {
            errors.push(composition_error(format!(
                "{subject} must validate at least one schema (anyOf)"
            )));
        }
        errors.extend(best.unwrap_or_default());
    }
    if !schema.one_of.is_empty() {
        let mut best: Option<Vec<FieldError>> = None;
        let mut valid = 0;
        for sub in &schema.one_of {
            let found = run(sub);
            if found.is_empty() {
                valid += 1;
                best = None;
            } else if valid == 0 && best.is_none() {
                best = Some(found);
            }
        }
        if valid != 1 {
            let why = if valid == 0 {
                "Found none valid".to_owned()
            } else {
                format!("Found {valid} valid alternatives")
            };
            errors.push(composition_error(format!(
                "{subject} must validate one and only one schema (oneOf). {why}"
            )));
            errors.extend(best.unwrap_or_default());
        }
    }
    if !schema.all_of.is_empty() {
        let mut valid = 0;
        for sub in &schema.all_of {
            let found = run(sub);
            if found.is_empty() {
                valid += 1;
            }
            errors.extend(found);
        }
        if valid != schema.all_of.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            errors.push(composition_error(format!(
                "{subject} must validate all the schemas (allOf){none}"
            )));
        }
    }
    if let Some(not) = &schema.not
        && run(not).is_empty()
    {
        errors.push(composition_error(format!(
            "{subject} must not validate the schema (not)"
        )));
    }
}

/// kube-openapi's range check of a number against its type and format
/// (`IsValueValidAgainstRange`): an integer that is not one, or out of `int32`, `uint32`,
/// `int64`; a `float` beyond `float32`.
fn range_error(schema: &Schema, name: &str, value: &Value) -> Option<FieldError> {
    let text = match value.as_i64() {
        Some(whole) => whole.to_string(),
        None => value.as_u64().map_or_else(
            || value.as_f64().map(go_float_text).unwrap_or_default(),
            |whole| whole.to_string(),
        ),
    };
    type_range_error(schema, "Checked", name, &text)
}

/// A boundary (`multipleOf`, `minimum`, `maximum`) that its schema's type and format cannot
/// hold, as kube-openapi's `IsValueValidAgainstRange` finds it: an integer schema's
/// `maximum: 1.5` refuses every value ("Maximum boundary value must be of type integer").
fn boundary_error(schema: &Schema, prefix: &str, name: &str, boundary: f64) -> Option<FieldError> {
    type_range_error(schema, prefix, name, &go_float_text(boundary))
}

/// A float as Go's `strconv.FormatFloat(f, 'f', -1, 64)` writes it (swag's `FormatFloat64`):
/// the shortest digits, no exponent.
fn go_float_text(value: f64) -> String {
    format!("{value}")
}

/// kube-openapi's `IsValueValidAgainstRange`: whether `text` (a number as Go formats it)
/// parses as the schema's type and format; the error names `prefix` (`Checked`, `MultipleOf`,
/// `Minimum boundary`, `Maximum boundary`) and the value's path.
fn type_range_error(schema: &Schema, prefix: &str, name: &str, text: &str) -> Option<FieldError> {
    let type_name = match schema.kind {
        Some(Type::Integer) if !schema.int_or_string => "integer",
        Some(Type::Number) if !schema.int_or_string => "number",
        _ => return None,
    };
    let format = schema.format.as_deref().unwrap_or("");
    let fits = match (type_name, format) {
        ("integer", "int32") => text.parse::<i32>().is_ok(),
        ("integer", "uint32") => text.parse::<u32>().is_ok(),
        ("integer", "uint64") => text.parse::<u64>().is_ok(),
        ("integer", _) => text.parse::<i64>().is_ok(),
        ("number", "float" | "float32") => text
            .parse::<f64>()
            .is_ok_and(|f| f.abs() <= f64::from(f32::MAX)),
        _ => true,
    };
    if fits {
        return None;
    }
    let detail = if format.is_empty() {
        format!("{prefix} value must be of type {type_name} (default format) in {name}")
    } else {
        format!("{prefix} value must be of type {type_name} with format {format} in {name}")
    };
    Some(FieldError::invalid(
        "",
        BadValue::Str(String::new()),
        detail,
    ))
}

/// `maxLength`, `minLength`, `pattern`: the first that fails is reported, as kube-openapi does.
fn check_string(schema: &Schema, name: &str, text: &str, errors: &mut Vec<FieldError>) {
    let chars = text.chars().count() as i64;
    if let Some(max) = schema.max_length
        && chars > max
    {
        errors.push(FieldError::too_long(field_path(name), max));
        return;
    }
    if let Some(min) = schema.min_length
        && chars < min
    {
        errors.push(FieldError::invalid(
            field_path(name),
            BadValue::Str(text.to_owned()),
            format!("{name} in {IN} should be at least {min} chars long"),
        ));
        return;
    }
    if let Some((pattern, compiled)) = &schema.pattern
        && !compiled.is_match(text)
    {
        errors.push(FieldError::invalid(
            field_path(name),
            BadValue::Str(text.to_owned()),
            format!("{name} in {IN} should match '{pattern}'"),
        ));
    }
}

/// `multipleOf`, `minimum`, `maximum`, in kube-openapi's order.
fn check_number(schema: &Schema, name: &str, value: &Value, errors: &mut Vec<FieldError>) {
    let Some(number) = value.as_f64() else {
        return;
    };
    let bad = || BadValue::from_json(value);
    if let Some(range) = range_error(schema, name, value) {
        errors.push(range);
    }
    if let Some(factor) = schema.multiple_of {
        errors.extend(boundary_error(schema, "MultipleOf", name, factor));
        if factor <= 0.0 {
            errors.push(FieldError::invalid(
                field_path(name),
                BadValue::Go(go_float(factor)),
                format!(
                    "factor MultipleOf declared for {name} must be positive: {}",
                    go_float(factor)
                ),
            ));
        } else {
            let quotient = number / factor;
            if quotient.fract() != 0.0 {
                errors.push(FieldError::invalid(
                    field_path(name),
                    bad(),
                    format!(
                        "{name} in {IN} should be a multiple of {}",
                        go_float(factor)
                    ),
                ));
            }
        }
    }
    if let Some((min, _)) = schema.minimum {
        errors.extend(boundary_error(schema, "Minimum boundary", name, min));
    }
    if let Some((min, exclusive)) = schema.minimum
        && (number < min || (exclusive && number == min))
    {
        let relation = if exclusive {
            "greater than"
        } else {
            "greater than or equal to"
        };
        errors.push(FieldError::invalid(
            field_path(name),
            bad(),
            format!("{name} in {IN} should be {relation} {}", go_float(min)),
        ));
    }
    if let Some((max, _)) = schema.maximum {
        errors.extend(boundary_error(schema, "Maximum boundary", name, max));
    }
    if let Some((max, exclusive)) = schema.maximum
        && (number > max || (exclusive && number == max))
    {
        let relation = if exclusive {
            "less than"
        } else {
            "less than or equal to"
        };
        errors.push(FieldError::invalid(
            field_path(name),
            bad(),
            format!("{name} in {IN} should be {relation} {}", go_float(max)),
        ));
    }
}

/// The items, then `minItems`, `maxItems` (`uniqueItems` is refused in a CRD's schema).
fn check_array(
    schema: &Schema,
    name: &str,
    items: &[Value],
    old: Option<&Value>,
    errors: &mut Vec<FieldError>,
) {
    if let Some(item_schema) = &schema.items {
        let olds = OldItems::new(schema, old);
        for (i, item) in items.iter().enumerate() {
            check(
                item_schema,
                &format!("{name}[{i}]"),
                item,
                olds.get(item),
                errors,
            );
        }
    }
    let size = items.len() as i64;
    if let Some(min) = schema.min_items
        && size < min
    {
        errors.push(FieldError::invalid(
            field_path(name),
            BadValue::Int(size),
            format!("{name} in {IN} should have at least {min} items"),
        ));
    }
    if let Some(max) = schema.max_items
        && size > max
    {
        errors.push(FieldError::too_many(field_path(name), size, max));
    }
}

/// Equality as Go's `reflect.DeepEqual` after kube-openapi's conversion: numbers by value.
pub(crate) fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// `enum`: an unsupported value, its allowed values quoted (non-strings as JSON).
fn check_enum(schema: &Schema, name: &str, value: &Value, errors: &mut Vec<FieldError>) {
    if schema.enumeration.is_empty()
        || schema
            .enumeration
            .iter()
            .any(|allowed| same_value(allowed, value))
    {
        return;
    }
    let allowed: Vec<String> = schema
        .enumeration
        .iter()
        .map(|allowed| match allowed {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    errors.push(FieldError::not_supported(
        field_path(name),
        BadValue::from_json(value),
        &allowed,
    ));
}

fn child_name(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// `minProperties`, `maxProperties`, `additionalProperties`, the properties, `required`.
fn check_object(
    schema: &Schema,
    name: &str,
    map: &Map<String, Value>,
    old: Option<&Value>,
    errors: &mut Vec<FieldError>,
) {
    // The old value of a property; a root's `apiVersion` and `kind` have none (both objects
    // are read as one version).
    let old_of = |key: &str| {
        let type_meta = name.is_empty() && matches!(key, "apiVersion" | "kind");
        old.and_then(|old| old.get(key)).filter(|_| !type_meta)
    };
    let count = map.len() as i64;
    if let Some(min) = schema.min_properties
        && count < min
    {
        errors.push(FieldError::invalid(
            field_path(name),
            BadValue::Int(count),
            format!("{name} in {IN} should have at least {min} properties"),
        ));
    }
    if let Some(max) = schema.max_properties
        && count > max
    {
        errors.push(FieldError::too_many(field_path(name), count, max));
    }
    if schema.no_additional_properties {
        for key in map.keys() {
            if !schema.properties.contains_key(key) {
                errors.push(FieldError::invalid(
                    field_path(name),
                    BadValue::Str(key.clone()),
                    format!("{name}.{key} in {IN} is a forbidden property"),
                ));
            }
        }
    } else if let Some(values) = &schema.additional_properties {
        for (key, item) in map {
            if !schema.properties.contains_key(key) {
                check(values, &format!("{name}.{key}"), item, old_of(key), errors);
            }
        }
    }
    for (key, property) in &schema.properties {
        if let Some(item) = map.get(key) {
            check(property, &child_name(name, key), item, old_of(key), errors);
        }
    }
    for key in &schema.required {
        if !map.contains_key(key) {
            errors.push(FieldError::required(
                field_path(&format!("{name}.{key}")),
                "",
            ));
        }
    }
}
