//! Field errors in apimachinery's model and wording: `path: Type: value: detail`.

use std::fmt;

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
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::Duplicate => "Duplicate value",
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
    /// A list of strings: `[]string{"feed"}`.
    Strings(Vec<String>),
    /// Already in Go syntax, such as a struct: `flowcontrol.FlowDistinguisherMethod{Type:"ByGroup"}`.
    Go(String),
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::Int(v) => write!(f, "{v}"),
            BadValue::Str(s) => write!(f, "{}", go_quote(s)),
            BadValue::Strings(items) => {
                let items: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
                write!(f, "[]string{{{}}}", items.join(", "))
            }
            BadValue::Go(s) => f.write_str(s),
        }
    }
}

/// A string as Go's `%q` prints it (for the characters that occur in names and paths).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
        let text = self.to_string();
        text[self.path.len() + 2..].to_owned()
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.error_type.as_str())?;
        match (self.error_type, &self.bad_value) {
            (ErrorType::Required | ErrorType::Forbidden, _) | (_, None) => {}
            (_, Some(value)) => write!(f, ": {value}")?,
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
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
            r#"v: Invalid value: []string{"feed", "a\"b"}: x"#
        );
        assert_eq!(
            FieldError::forbidden("spec.limited", "must be nil if the type is not Limited")
                .to_string(),
            "spec.limited: Forbidden: must be nil if the type is not Limited"
        );
        assert_eq!(
            FieldError::duplicate("status.conditions[1].type", BadValue::Str("A".into()))
                .to_string(),
            r#"status.conditions[1].type: Duplicate value: "A""#
        );
    }
}
