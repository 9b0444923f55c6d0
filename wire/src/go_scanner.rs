//! Go's `encoding/json` scanner (as `sigs.k8s.io/json`, kube-apiserver's decoder, keeps it):
//! whether bytes are one JSON document, and when they are not, the first syntax error in Go's
//! words (`invalid character 'x' after object key`, `unexpected end of JSON input`). Go's
//! `Unmarshal` checks the whole input with it before it decodes anything, so these are the
//! words a client of kube-apiserver reads for a body, or a continue token, that is not JSON.
//!
//! ```
//! use apfkit_wire::go_scanner;
//!
//! assert_eq!(go_scanner::syntax_error(br#"{"a": 1}"#), None);
//! let error = go_scanner::syntax_error(br#"{"a" 1}"#).unwrap();
//! assert_eq!(error.message, "invalid character '1' after object key");
//! assert_eq!(error.offset, 6);
//! assert_eq!(
//!     go_scanner::syntax_error(b"{").unwrap().message,
//!     "unexpected end of JSON input"
//! );
//! ```

/// What Go's decoder calls a JSON value in its type errors (`json: cannot unmarshal array
/// into Go value of type …`).
pub fn value_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `maxNestingDepth`: deeper arrays and objects are a syntax error.
const MAX_NESTING_DEPTH: usize = 10_000;

/// The first syntax error of a document, as Go's `*json.SyntaxError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// Go's message.
    pub message: String,
    /// How many bytes were read when the error was found (Go's `Offset`).
    pub offset: usize,
}

/// Where the scanner is: Go's step functions, one variant each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside `true`, `false` or `null`: the letters still expected, and the literal.
    Literal(&'static [u8], &'static str),
    Error,
}

/// What an open array or object expects next (Go's `parseState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// Go's `scanner`.
struct Scanner {
    step: Step,
    end_top: bool,
    stack: Vec<Parse>,
    error: Option<SyntaxError>,
    bytes: usize,
}

/// The first syntax error of `data` as one JSON document, or `None` when it is one (Go's
/// `checkValid`).
pub fn syntax_error(data: &[u8]) -> Option<SyntaxError> {
    let mut scanner = Scanner {
        step: Step::BeginValue,
        end_top: false,
        stack: Vec::new(),
        error: None,
        bytes: 0,
    };
    for &c in data {
        scanner.bytes += 1;
        scanner.step(c);
        if scanner.error.is_some() {
            return scanner.error;
        }
    }
    scanner.eof()
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

/// Go's `quoteChar`: the byte as a rune between single quotes, escaped as `strconv.Quote`
/// escapes it.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        c => {
            let quoted = apfkit_runtime::field::go_quote(&char::from(c).to_string());
            format!("'{}'", &quoted[1..quoted.len() - 1])
        }
    }
}

impl Scanner {
    fn eof(&mut self) -> Option<SyntaxError> {
        if self.error.is_some() {
            return self.error.clone();
        }
        if self.end_top {
            return None;
        }
        self.step(b' ');
        if self.end_top {
            return None;
        }
        if self.error.is_none() {
            self.error = Some(SyntaxError {
                message: "unexpected end of JSON input".to_owned(),
                offset: self.bytes,
            });
        }
        self.error.clone()
    }

    fn fail(&mut self, c: u8, context: &str) {
        self.step = Step::Error;
        self.error = Some(SyntaxError {
            message: format!("invalid character {} {context}", quote_char(c)),
            offset: self.bytes,
        });
    }

    fn push(&mut self, c: u8, parse: Parse) {
        self.stack.push(parse);
        if self.stack.len() > MAX_NESTING_DEPTH {
            self.fail(c, "exceeded max depth");
        }
    }

    fn pop(&mut self) {
        self.stack.pop();
        if self.stack.is_empty() {
            self.step = Step::EndTop;
            self.end_top = true;
        } else {
            self.step = Step::EndValue;
        }
    }

    fn step(&mut self, c: u8) {
        match self.step {
            Step::BeginValueOrEmpty => {
                if is_space(c) {
                } else if c == b']' {
                    self.end_value(c);
                } else {
                    self.begin_value(c);
                }
            }
            Step::BeginValue => self.begin_value(c),
            Step::BeginStringOrEmpty => {
                if is_space(c) {
                } else if c == b'}' {
                    if let Some(last) = self.stack.last_mut() {
                        *last = Parse::ObjectValue;
                    }
                    self.end_value(c);
                } else {
                    self.begin_string(c);
                }
            }
            Step::BeginString => self.begin_string(c),
            Step::EndValue => self.end_value(c),
            Step::EndTop => {
                if !is_space(c) {
                    self.fail(c, "after top-level value");
                }
            }
            Step::InString => match c {
                b'"' => self.step = Step::EndValue,
                b'\\' => self.step = Step::InStringEsc,
                c if c < 0x20 => self.fail(c, "in string literal"),
                _ => {}
            },
            Step::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {
                    self.step = Step::InString;
                }
                b'u' => self.step = Step::InStringEscU(0),
                c => self.fail(c, "in string escape code"),
            },
            Step::InStringEscU(seen) => {
                if !is_hex(c) {
                    self.fail(c, "in \\u hexadecimal character escape");
                } else if seen == 3 {
                    self.step = Step::InString;
                } else {
                    self.step = Step::InStringEscU(seen + 1);
                }
            }
            Step::Neg => match c {
                b'0' => self.step = Step::Zero,
                b'1'..=b'9' => self.step = Step::One,
                c => self.fail(c, "in numeric literal"),
            },
            Step::One => {
                if !c.is_ascii_digit() {
                    self.zero(c);
                }
            }
            Step::Zero => self.zero(c),
            Step::Dot => {
                if c.is_ascii_digit() {
                    self.step = Step::Dot0;
                } else {
                    self.fail(c, "after decimal point in numeric literal");
                }
            }
            Step::Dot0 => {
                if c.is_ascii_digit() {
                } else if c == b'e' || c == b'E' {
                    self.step = Step::E;
                } else {
                    self.end_value(c);
                }
            }
            Step::E => {
                if c == b'+' || c == b'-' {
                    self.step = Step::ESign;
                } else {
                    self.e_sign(c);
                }
            }
            Step::ESign => self.e_sign(c),
            Step::E0 => {
                if !c.is_ascii_digit() {
                    self.end_value(c);
                }
            }
            Step::Literal(rest, literal) => {
                if c == rest[0] {
                    self.step = if rest.len() == 1 {
                        Step::EndValue
                    } else {
                        Step::Literal(&rest[1..], literal)
                    };
                } else {
                    let expected = char::from(rest[0]);
                    self.fail(c, &format!("in literal {literal} (expecting '{expected}')"));
                }
            }
            Step::Error => {}
        }
    }

    fn begin_value(&mut self, c: u8) {
        match c {
            c if is_space(c) => {}
            b'{' => {
                self.step = Step::BeginStringOrEmpty;
                self.push(c, Parse::ObjectKey);
            }
            b'[' => {
                self.step = Step::BeginValueOrEmpty;
                self.push(c, Parse::ArrayValue);
            }
            b'"' => self.step = Step::InString,
            b'-' => self.step = Step::Neg,
            b'0' => self.step = Step::Zero,
            b't' => self.step = Step::Literal(b"rue", "true"),
            b'f' => self.step = Step::Literal(b"alse", "false"),
            b'n' => self.step = Step::Literal(b"ull", "null"),
            b'1'..=b'9' => self.step = Step::One,
            c => self.fail(c, "looking for beginning of value"),
        }
    }

    fn begin_string(&mut self, c: u8) {
        if is_space(c) {
        } else if c == b'"' {
            self.step = Step::InString;
        } else {
            self.fail(c, "looking for beginning of object key string");
        }
    }

    fn zero(&mut self, c: u8) {
        match c {
            b'.' => self.step = Step::Dot,
            b'e' | b'E' => self.step = Step::E,
            c => self.end_value(c),
        }
    }

    fn e_sign(&mut self, c: u8) {
        if c.is_ascii_digit() {
            self.step = Step::E0;
        } else {
            self.fail(c, "in exponent of numeric literal");
        }
    }

    fn end_value(&mut self, c: u8) {
        let Some(&parse) = self.stack.last() else {
            self.step = Step::EndTop;
            self.end_top = true;
            if !is_space(c) {
                self.fail(c, "after top-level value");
            }
            return;
        };
        if is_space(c) {
            self.step = Step::EndValue;
            return;
        }
        match (parse, c) {
            (Parse::ObjectKey, b':') => {
                if let Some(last) = self.stack.last_mut() {
                    *last = Parse::ObjectValue;
                }
                self.step = Step::BeginValue;
            }
            (Parse::ObjectKey, c) => self.fail(c, "after object key"),
            (Parse::ObjectValue, b',') => {
                if let Some(last) = self.stack.last_mut() {
                    *last = Parse::ObjectKey;
                }
                self.step = Step::BeginString;
            }
            (Parse::ObjectValue, b'}') => self.pop(),
            (Parse::ObjectValue, c) => self.fail(c, "after object key:value pair"),
            (Parse::ArrayValue, b',') => self.step = Step::BeginValue,
            (Parse::ArrayValue, b']') => self.pop(),
            (Parse::ArrayValue, c) => self.fail(c, "after array element"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_is_an_error_past_goes_limit() {
        let deep = "[".repeat(MAX_NESTING_DEPTH + 1);
        let error = syntax_error(deep.as_bytes()).unwrap();
        assert_eq!(error.message, "invalid character '[' exceeded max depth");
        assert_eq!(error.offset, MAX_NESTING_DEPTH + 1);
        let fine = format!(
            "{}{}",
            "[".repeat(MAX_NESTING_DEPTH),
            "]".repeat(MAX_NESTING_DEPTH)
        );
        assert_eq!(syntax_error(fine.as_bytes()), None);
    }
}
