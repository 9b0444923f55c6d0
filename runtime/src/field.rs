//! Field errors in apimachinery's model and wording: `path: Type: value: detail`.

use std::fmt;

pub mod names {
    //! apimachinery's name checks (DNS-1123 subdomain and label, DNS-1035 label), each
    //! returning the messages of every rule a value breaks.

    const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
    const DNS1123_SUBDOMAIN_FMT: &str =
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
    const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";

    /// apimachinery's regex error: the message, examples and the regex.
    fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
        let mut out = format!("{message} (e.g. ");
        for (i, example) in examples.iter().enumerate() {
            if i > 0 {
                out.push_str(" or ");
            }
            out.push_str(&format!("'{example}', "));
        }
        out.push_str(&format!("regex used for validation is '{regex}')"));
        out
    }

    fn max_len(limit: usize) -> String {
        format!("must be no more than {limit} characters")
    }

    /// `content.MaxLenError`, which the checks of label keys and values (and of a key's
    /// prefix) use since Kubernetes 1.37: the limit counted in bytes.
    fn max_bytes(limit: usize) -> String {
        format!("must be no more than {limit} bytes")
    }

    fn alnum(c: u8) -> bool {
        c.is_ascii_lowercase() || c.is_ascii_digit()
    }

    /// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
    fn is_label(s: &str) -> bool {
        let b = s.as_bytes();
        !b.is_empty()
            && alnum(b[0])
            && alnum(b[b.len() - 1])
            && b.iter().all(|&c| alnum(c) || c == b'-')
    }

    /// Messages of every DNS-1123 label rule that `value` breaks (empty when valid).
    pub fn dns1123_label(value: &str) -> Vec<String> {
        let mut errors = Vec::new();
        if value.len() > 63 {
            errors.push(max_len(63));
        }
        if !is_label(value) {
            errors.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
        errors
    }

    /// Messages of every DNS-1123 subdomain rule that `value` breaks (empty when valid).
    pub fn dns1123_subdomain(value: &str) -> Vec<String> {
        subdomain(value, max_len)
    }

    /// [`dns1123_subdomain`] with the too-long message of `too_long`.
    fn subdomain(value: &str, too_long: fn(usize) -> String) -> Vec<String> {
        let mut errors = Vec::new();
        if value.len() > 253 {
            errors.push(too_long(253));
        }
        if !value.split('.').all(is_label) {
            errors.push(regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                DNS1123_SUBDOMAIN_FMT,
                &["example.com"],
            ));
        }
        errors
    }

    /// Messages of every DNS-1035 label rule that `value` breaks (empty when valid).
    pub fn dns1035_label(value: &str) -> Vec<String> {
        let mut errors = Vec::new();
        if value.len() > 63 {
            errors.push(max_len(63));
        }
        if !(is_label(value) && value.as_bytes()[0].is_ascii_lowercase()) {
            errors.push(regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
                DNS1035_LABEL_FMT,
                &["my-name", "abc-123"],
            ));
        }
        errors
    }

    const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
    const QUALIFIED_NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    const QUALIFIED_NAME_EXAMPLES: &[&str] = &["MyName", "my.name", "123-abc"];

    /// Messages of every rule of a qualified name (a label key, a finalizer: a name of at
    /// most 63 characters with an optional DNS-1123 subdomain prefix and `/`) that `value`
    /// breaks (`IsQualifiedName`; empty when valid).
    pub fn qualified_name(value: &str) -> Vec<String> {
        let parts: Vec<&str> = value.split('/').collect();
        let mut errors = Vec::new();
        let name = match parts.as_slice() {
            [name] => *name,
            [prefix, name] => {
                if prefix.is_empty() {
                    errors.push("prefix part must be non-empty".to_owned());
                } else {
                    errors.extend(
                        subdomain(prefix, max_bytes)
                            .into_iter()
                            .map(|message| format!("prefix part {message}")),
                    );
                }
                *name
            }
            _ => {
                return vec![format!(
                    "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                    regex_error(
                        QUALIFIED_NAME_MESSAGE,
                        QUALIFIED_NAME_FMT,
                        QUALIFIED_NAME_EXAMPLES
                    )
                )];
            }
        };
        if name.is_empty() {
            errors.push("name part must be non-empty".to_owned());
        } else if name.len() > 63 {
            errors.push(format!("name part {}", max_bytes(63)));
        }
        if !is_qualified_part(name) {
            errors.push(format!(
                "name part {}",
                regex_error(
                    QUALIFIED_NAME_MESSAGE,
                    QUALIFIED_NAME_FMT,
                    QUALIFIED_NAME_EXAMPLES
                )
            ));
        }
        errors
    }

    /// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`: a qualified name's name part, and a label
    /// value that is not empty.
    fn is_qualified_part(text: &str) -> bool {
        let bytes = text.as_bytes();
        let alphanumeric = |c: &u8| c.is_ascii_alphanumeric();
        bytes.first().is_some_and(alphanumeric)
            && bytes.last().is_some_and(alphanumeric)
            && bytes
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
    }

    const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
    const LABEL_VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

    /// Messages of every rule of a label value (empty, or at most 63 characters of a
    /// qualified name's) that `value` breaks (`IsValidLabelValue`; empty when valid).
    pub fn label_value(value: &str) -> Vec<String> {
        let mut errors = Vec::new();
        if value.len() > 63 {
            errors.push(max_bytes(63));
        }
        if !(value.is_empty() || is_qualified_part(value)) {
            errors.push(regex_error(
                LABEL_VALUE_MESSAGE,
                LABEL_VALUE_FMT,
                &["MyValue", "my_value", "12345"],
            ));
        }
        errors
    }

    /// Messages of every rule of a key of a ConfigMap's or Secret's data (at most 253
    /// characters of `[-._a-zA-Z0-9]`, neither `.` nor `..` nor starting with `..`) that
    /// `value` breaks (`IsConfigMapKey`; empty when valid).
    pub fn config_map_key(value: &str) -> Vec<String> {
        let mut errors = Vec::new();
        if value.len() > 253 {
            errors.push(max_len(253));
        }
        let allowed = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_');
        if value.is_empty() || !value.bytes().all(allowed) {
            errors.push(regex_error(
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                "[-._a-zA-Z0-9]+",
                &["key.name", "KEY_NAME", "key-name"],
            ));
        }
        match value {
            "." => errors.push("must not be '.'".to_owned()),
            ".." => errors.push("must not be '..'".to_owned()),
            _ if value.starts_with("..") => errors.push("must not start with '..'".to_owned()),
            _ => {}
        }
        errors
    }

    use super::{BadValue, FieldError, Path};

    /// apimachinery's checks of an object's `metadata.name` and `metadata.generateName`
    /// (`ValidateObjectMeta`): one of them is required, and each must pass `name_check` (a
    /// generateName with a trailing `-` replaced by `a`, as apimachinery checks a prefix).
    pub fn object_name(
        name: &str,
        generate_name: &str,
        name_check: impl Fn(&str) -> Vec<String>,
    ) -> Vec<FieldError> {
        let path = Path::new("metadata");
        let mut errors = Vec::new();
        if !generate_name.is_empty() {
            for message in name_check(&mask_trailing_dash(generate_name)) {
                errors.push(FieldError::invalid(
                    path.child("generateName"),
                    BadValue::Str(generate_name.to_owned()),
                    message,
                ));
            }
        }
        if name.is_empty() {
            if generate_name.is_empty() {
                errors.push(FieldError::required(
                    path.child("name"),
                    "name or generateName is required",
                ));
            }
        } else {
            for message in name_check(name) {
                errors.push(FieldError::invalid(
                    path.child("name"),
                    BadValue::Str(name.to_owned()),
                    message,
                ));
            }
        }
        errors
    }

    /// [`object_name`] of an object held as JSON: its `metadata.name` and
    /// `metadata.generateName` (each empty when absent or not a string).
    pub fn object_name_of(
        object: &serde_json::Value,
        name_check: impl Fn(&str) -> Vec<String>,
    ) -> Vec<FieldError> {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
        };
        object_name(
            text("/metadata/name"),
            text("/metadata/generateName"),
            name_check,
        )
    }

    /// apimachinery checks a generateName prefix with a trailing `-` replaced by `a`.
    fn mask_trailing_dash(name: &str) -> String {
        match name.strip_suffix('-') {
            Some(rest) if !rest.is_empty() => format!("{rest}a"),
            _ => name.to_owned(),
        }
    }
}

/// The kind of a field error, printed as apimachinery prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// `Required value`.
    Required,
    /// `Invalid value`.
    Invalid,
    /// `Unsupported value` (apimachinery's NotSupported).
    NotSupported,
    /// `Forbidden`.
    Forbidden,
    /// `Duplicate value`.
    Duplicate,
    /// `Invalid value`, for a value of the wrong type (apimachinery's TypeInvalid).
    TypeInvalid,
    /// `Too long`: the value is never printed.
    TooLong,
    /// `Too many`: the count is printed, not the value.
    TooMany,
    /// `Internal error`.
    Internal,
}

impl ErrorType {
    /// apimachinery's `CauseType` of the error, as a `Status` cause's `reason` carries it.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::TypeInvalid => "Invalid value",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

/// The offending value, printed as Go's `fmt` prints it in apimachinery's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadValue {
    /// An integer: `10001`.
    Int(i64),
    /// A string: `"system+++$$"` (quoted).
    Str(String),
    /// A list of strings: `["feed"]` (Go's `json.Marshal`, as apimachinery prints a value
    /// of no simple type).
    Strings(Vec<String>),
    /// Already in Go syntax, such as a struct: `flowcontrol.FlowDistinguisherMethod{Type:"ByGroup"}`.
    Go(String),
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::Int(v) => write!(f, "{v}"),
            BadValue::Str(s) => write!(f, "{}", go_quote(s)),
            BadValue::Strings(items) => f.write_str(&go_json(&serde_json::json!(items))),
            BadValue::Go(s) => f.write_str(s),
        }
    }
}

impl BadValue {
    /// A JSON value as apimachinery prints an unstructured one: integers and booleans bare,
    /// floats as Go's `%v`, strings quoted, `null`, lists and maps as Go's `json.Marshal`
    /// writes them (keys sorted).
    pub fn from_json(value: &serde_json::Value) -> Self {
        use serde_json::Value;
        match value {
            Value::String(s) => BadValue::Str(s.clone()),
            Value::Number(n) => match n.as_i64() {
                Some(i) => BadValue::Int(i),
                None => BadValue::Go(go_float(n.as_f64().unwrap_or(f64::NAN))),
            },
            Value::Bool(b) => BadValue::Go(b.to_string()),
            Value::Null => BadValue::Go("null".to_owned()),
            Value::Array(_) | Value::Object(_) => BadValue::Go(go_json(value)),
        }
    }

    /// A Go struct as `json.Marshal` writes it (what apimachinery prints for a value of a
    /// struct type): its fields in their order, each value as Go writes it.
    pub fn go_struct(fields: &[(&str, serde_json::Value)]) -> Self {
        let members: Vec<String> = fields
            .iter()
            .map(|(name, value)| {
                format!(
                    "{}:{}",
                    go_json(&serde_json::Value::from(*name)),
                    go_json(value)
                )
            })
            .collect();
        BadValue::Go(format!("{{{}}}", members.join(",")))
    }
}

/// `value` as Go's `json.Marshal` writes it: compact, keys sorted, and `<`, `>`, `&`, U+2028
/// and U+2029 escaped (they occur only inside strings, so replacing them in the text is safe).
fn go_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    for c in value.to_string().chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// A float as Go's `%v` prints a `float64` (strconv's shortest `'g'`): the shortest digits
/// that read back, with an exponent (`1e+06`, `1e-05`) when the decimal exponent is below -4
/// or at least 6 (Go's `ftoa.go`: "if precision was the shortest possible, use precision 6").
pub fn go_float(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    // Rust's `{:e}` is the shortest round-trip form with an exponent: `1.234567e6`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if value != 0.0 && !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    // Rust's `Display` is the shortest round-trip form without an exponent.
    format!("{value}")
}

/// Field errors as apimachinery's `ErrorList.ToAggregate().Error()` prints them: one bare,
/// several in brackets separated by `, `, a message said twice listed once.
pub fn to_aggregate(errors: &[FieldError]) -> String {
    let mut listed: Vec<String> = Vec::with_capacity(errors.len());
    for text in errors.iter().map(ToString::to_string) {
        if !listed.contains(&text) {
            listed.push(text);
        }
    }
    match listed.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", listed.join(", ")),
    }
}

/// A string as Go's `%q` (`strconv.Quote`) prints it: Go's escapes, `\xHH` below a space,
/// `\uHHHH` or `\UHHHHHHHH` for what Go does not print ([`go_printable`]).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if go_printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Go's `unicode.IsPrint`, as far as std knows Unicode's categories: not a control
/// character, no space but ASCII's, and none of the format characters (category Cf) or
/// private-use ones (Co) Go leaves unprinted. (Unassigned code points, which Go does not
/// print either, are printed here.)
pub fn go_printable(c: char) -> bool {
    let code = c as u32;
    let format = matches!(
        code,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    );
    let private = matches!(code, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD);
    !(c.is_control() || (c.is_whitespace() && c != ' ') || format || private)
}

/// One validation error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Field path, such as `spec.limited.nominalConcurrencyShares`.
    pub path: String,
    /// The kind of error.
    pub error_type: ErrorType,
    /// The offending value; Required and Forbidden errors never print one.
    pub bad_value: Option<BadValue>,
    /// Explanation; may be empty.
    pub detail: String,
}

impl FieldError {
    /// A missing value.
    pub fn required(path: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            error_type: ErrorType::Required,
            bad_value: None,
            detail: detail.into(),
        }
    }

    /// A wrong value.
    pub fn invalid(path: impl Into<String>, value: BadValue, detail: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            error_type: ErrorType::Invalid,
            bad_value: Some(value),
            detail: detail.into(),
        }
    }

    /// A value outside a closed set; the detail lists the set, quoted and sorted as given.
    pub fn not_supported(path: impl Into<String>, value: BadValue, supported: &[&str]) -> Self {
        let supported: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        Self {
            path: path.into(),
            error_type: ErrorType::NotSupported,
            bad_value: Some(value),
            detail: format!("supported values: {}", supported.join(", ")),
        }
    }

    /// A value that must not be there.
    pub fn forbidden(path: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            error_type: ErrorType::Forbidden,
            bad_value: None,
            detail: detail.into(),
        }
    }

    /// A value of the wrong type: the value is the JSON type found (`"array"`).
    pub fn type_invalid(
        path: impl Into<String>,
        value: BadValue,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            path: path.into(),
            error_type: ErrorType::TypeInvalid,
            bad_value: Some(value),
            detail: detail.into(),
        }
    }

    /// A string longer than `max` bytes (apimachinery's `TooLong`: the value is not printed).
    pub fn too_long(path: impl Into<String>, max: i64) -> Self {
        let detail = match max {
            1 => "may not be more than 1 byte".to_owned(),
            max if max >= 0 => format!("may not be more than {max} bytes"),
            _ => "value is too long".to_owned(),
        };
        Self {
            path: path.into(),
            error_type: ErrorType::TooLong,
            bad_value: None,
            detail,
        }
    }

    /// A list or map with `actual` entries where at most `max` are allowed.
    pub fn too_many(path: impl Into<String>, actual: i64, max: i64) -> Self {
        let detail = match max {
            1 => "must have at most 1 item".to_owned(),
            max if max >= 0 => format!("must have at most {max} items"),
            _ => "has too many items".to_owned(),
        };
        Self {
            path: path.into(),
            error_type: ErrorType::TooMany,
            bad_value: (actual >= 0).then_some(BadValue::Int(actual)),
            detail,
        }
    }

    /// Something that went wrong that is not the input's fault.
    pub fn internal(path: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            error_type: ErrorType::Internal,
            bad_value: None,
            detail: detail.into(),
        }
    }

    /// An invalid value that is not printed (apimachinery's `OmitValueType`): `Invalid value:
    /// detail`.
    pub fn invalid_omitted(path: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            error_type: ErrorType::Invalid,
            bad_value: None,
            detail: detail.into(),
        }
    }

    /// The same error with `value` as its bad value (`None`: not printed).
    pub fn with_value(self, value: Option<BadValue>) -> Self {
        Self {
            bad_value: value,
            ..self
        }
    }

    /// A repeated value.
    pub fn duplicate(path: impl Into<String>, value: BadValue) -> Self {
        Self {
            path: path.into(),
            error_type: ErrorType::Duplicate,
            bad_value: Some(value),
            detail: String::new(),
        }
    }
}

impl FieldError {
    /// The message without the field path (apimachinery's `ErrorBody`), as a `Status` cause's
    /// `message` carries it: `Invalid value: 10001: must not be greater than 10000`.
    pub fn body(&self) -> String {
        let mut text = self.error_type.as_str().to_owned();
        match (self.error_type, &self.bad_value) {
            (
                ErrorType::Required
                | ErrorType::Forbidden
                | ErrorType::TooLong
                | ErrorType::Internal,
                _,
            )
            | (_, None) => {}
            (_, Some(value)) => text.push_str(&format!(": {value}")),
        }
        if !self.detail.is_empty() {
            text.push_str(": ");
            text.push_str(&self.detail);
        }
        text
    }

    /// The field path as apimachinery prints it: `<nil>` for the object itself.
    pub fn field(&self) -> &str {
        if self.path.is_empty() {
            "<nil>"
        } else {
            &self.path
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field(), self.body())
    }
}

/// A field path under construction, as apimachinery's `field.Path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    /// A path from its first segment.
    pub fn new(root: &str) -> Self {
        Path(root.to_owned())
    }

    /// The path of a child field.
    pub fn child(&self, name: &str) -> Self {
        Path(format!("{}.{name}", self.0))
    }

    /// The path of a list element.
    pub fn index(&self, index: usize) -> Self {
        Path(format!("{}[{index}]", self.0))
    }

    /// The path of the object itself, printed `<nil>` in an error, as apimachinery's nil path.
    pub fn root() -> Self {
        Path(String::new())
    }

    /// The path of a child field; under the root, the field alone.
    pub fn child_of_root(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Path(name.to_owned())
        } else {
            self.child(name)
        }
    }

    /// The path of a map entry.
    pub fn key(&self, key: &str) -> Self {
        Path(format!("{}[{key}]", self.0))
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&Path> for String {
    fn from(path: &Path) -> String {
        path.0.clone()
    }
}

impl From<Path> for String {
    fn from(path: Path) -> String {
        path.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// apimachinery's `TestIsConfigMapKey`, with the messages of each rule.
    #[test]
    fn config_map_keys_as_is_config_map_key_checks_them() {
        for good in [
            "a",
            "good",
            "good-good",
            "still.good",
            "this.is.also.good",
            ".so.is.this",
            "THIS_IS_GOOD",
            "so_is_this_17",
        ] {
            assert!(names::config_map_key(good).is_empty(), "{good}");
        }
        for bad in [".", "..", "..bad", "b*d", "bad!&bad"] {
            assert!(!names::config_map_key(bad).is_empty(), "{bad}");
        }
        assert_eq!(names::config_map_key(".."), ["must not be '..'"]);
        assert_eq!(
            names::config_map_key("b*d"),
            [
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' \
              (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is \
              '[-._a-zA-Z0-9]+')"
            ]
        );
        let long = "a".repeat(254);
        assert_eq!(
            names::config_map_key(&long),
            ["must be no more than 253 characters"]
        );
    }

    #[test]
    fn strings_are_quoted_as_go_quotes_them() {
        // What `strconv.Quote` answers for each (go 1.24).
        let cases = [
            ("plain", r#""plain""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("\u{7}\u{8}\u{c}\n\r\t\u{b}", r#""\a\b\f\n\r\t\v""#),
            ("\u{1}\u{1f}\u{7f}", r#""\x01\x1f\x7f""#),
            ("\u{80}\u{9f}", r#""\u0080\u009f""#),
            ("a\u{a0}b\u{2028}", r#""a\u00a0b\u2028""#),
            ("zero\u{200b}width\u{feff}", r#""zero\u200bwidth\ufeff""#),
            ("\u{e000}\u{10fffd}", r#""\ue000\U0010fffd""#),
            ("héllo 世界 🙂", r#""héllo 世界 🙂""#),
        ];
        for (input, quoted) in cases {
            assert_eq!(go_quote(input), quoted, "{input:?}");
        }
    }

    /// apimachinery's `TestIsQualifiedName` cases, and its messages.
    #[test]
    fn qualified_names_are_checked_as_apimachinery_checks_them() {
        let good = [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/now-with-dashes",
            "now-with.dashes-and.dots/now-with-dashes",
            "now.with.dots/now-with.dashes-and.dots",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
        ];
        for name in good {
            assert!(names::qualified_name(name).is_empty(), "{name}");
        }
        let long_prefix = format!("{}/abc", "a".repeat(254));
        let bad = [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
            &"a".repeat(64),
            &long_prefix,
        ];
        for name in bad {
            assert!(!names::qualified_name(name).is_empty(), "{name}");
        }
        assert_eq!(
            names::qualified_name("example.com/"),
            [
                "name part must be non-empty",
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
                 start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  \
                 or '123-abc', regex used for validation is \
                 '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
    }

    #[test]
    fn a_go_struct_prints_its_fields_in_order_as_json_marshal_does() {
        let value = BadValue::go_struct(&[
            ("Rule", serde_json::json!("self.x > 0 && y")),
            ("Reason", serde_json::Value::Null),
            ("OptionalOldSelf", serde_json::json!(true)),
        ]);
        assert_eq!(
            value.to_string(),
            r#"{"Rule":"self.x \u003e 0 \u0026\u0026 y","Reason":null,"OptionalOldSelf":true}"#
        );
    }

    #[test]
    fn label_values_are_checked_as_apimachinery_checks_them() {
        for good in [
            "",
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            "A.B_c-9",
        ] {
            assert!(names::label_value(good).is_empty(), "{good}");
        }
        assert_eq!(
            names::label_value(">htt$://"),
            [
                "a valid label must be an empty string or consist of alphanumeric characters, \
              '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
              'MyValue',  or 'my_value',  or '12345', regex used for validation is \
              '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ]
        );
        assert_eq!(names::label_value(&"a".repeat(64)).len(), 1);
        assert_eq!(
            names::label_value("-starts-with-dash"),
            names::label_value(">htt$://")
        );
    }

    #[test]
    fn json_values_print_as_go_prints_unstructured_ones() {
        let cases = [
            ("-3", "-3"),
            ("1.5", "1.5"),
            ("3.0", "3"),
            ("1e21", "1e+21"),
            ("1e20", "1e+20"),
            ("1000000.5", "1.0000005e+06"),
            ("999999.5", "999999.5"),
            ("0.0001", "0.0001"),
            ("0.00001", "1e-05"),
            ("true", "true"),
            ("null", "null"),
            (r#""a""#, r#""a""#),
            (
                r#"{"protocol":"TCP","containerPort":88}"#,
                r#"{"containerPort":88,"protocol":"TCP"}"#,
            ),
        ];
        for (json, printed) in cases {
            let value: serde_json::Value = serde_json::from_str(json).unwrap();
            assert_eq!(BadValue::from_json(&value).to_string(), printed, "{json}");
        }
    }

    #[test]
    fn prints_like_apimachinery() {
        let p = Path::new("spec").child("matchingPrecedence");
        assert_eq!(
            FieldError::invalid(&p, BadValue::Int(10001), "must not be greater than 10000")
                .to_string(),
            "spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"
        );
        assert_eq!(
            FieldError::required("spec.rules[0].subjects[0].user.name", "").to_string(),
            "spec.rules[0].subjects[0].user.name: Required value"
        );
        assert_eq!(
            FieldError::not_supported(
                "spec.type",
                BadValue::Str("Foo".into()),
                &["Exempt", "Limited"]
            )
            .to_string(),
            r#"spec.type: Unsupported value: "Foo": supported values: "Exempt", "Limited""#
        );
        assert_eq!(
            FieldError::invalid(
                "v",
                BadValue::Strings(vec!["feed".into(), "a\"b".into()]),
                "x"
            )
            .to_string(),
            r#"v: Invalid value: ["feed","a\"b"]: x"#
        );
        // Go's json.Marshal escapes what HTML would read.
        assert_eq!(
            BadValue::Strings(vec!["<a&b>\u{2028}".into()]).to_string(),
            r#"["\u003ca\u0026b\u003e\u2028"]"#
        );
        assert_eq!(
            BadValue::from_json(&serde_json::json!({"b": ["<"], "a": 1})).to_string(),
            r#"{"a":1,"b":["\u003c"]}"#
        );
        assert_eq!(
            FieldError::forbidden("spec.limited", "must be nil if the type is not Limited")
                .to_string(),
            "spec.limited: Forbidden: must be nil if the type is not Limited"
        );
        assert_eq!(
            FieldError::invalid_omitted("", "Other must be a multiple of value").to_string(),
            "<nil>: Invalid value: Other must be a multiple of value"
        );
        assert_eq!(
            FieldError::too_long("spec.name", 5).to_string(),
            "spec.name: Too long: may not be more than 5 bytes"
        );
        assert_eq!(
            FieldError::too_many("spec.items", 3, 2).to_string(),
            "spec.items: Too many: 3: must have at most 2 items"
        );
        assert_eq!(
            FieldError::type_invalid("data", BadValue::Str("array".into()), "x").body(),
            r#"Invalid value: "array": x"#
        );
        assert_eq!(
            FieldError::duplicate("status.conditions[1].type", BadValue::Str("A".into()))
                .to_string(),
            r#"status.conditions[1].type: Duplicate value: "A""#
        );
    }
}
