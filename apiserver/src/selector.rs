//! Label and field selectors as apimachinery parses them (`k8s.io/apimachinery/pkg/labels/
//! selector.go`, `k8s.io/apimachinery/pkg/fields/selector.go`).

use std::collections::BTreeMap;

/// A requirement's operator, as apimachinery's `selection.Operator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Exists,
    DoesNotExist,
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    GreaterThan,
    LessThan,
}

/// One requirement of a label selector: a key, an operator and its values (sorted, without
/// repeats, as apimachinery's `sets.String` lists them).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// `NewRequirement`: the requirement, or the aggregate of its field errors.
    fn new(key: String, operator: Operator, values: Vec<String>) -> Result<Self, String> {
        use apfkit_runtime::field::{BadValue, FieldError, names};
        let mut errors = Vec::new();
        let key_errors = names::qualified_name(&key);
        if !key_errors.is_empty() {
            errors.push(FieldError::invalid(
                "key",
                BadValue::Str(key.clone()),
                key_errors.join("; "),
            ));
        }
        let strings = || BadValue::Strings(values.clone());
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                errors.push(FieldError::invalid(
                    "values",
                    strings(),
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                errors.push(FieldError::invalid(
                    "values",
                    strings(),
                    "exact-match compatibility requires one single value",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                errors.push(FieldError::invalid(
                    "values",
                    strings(),
                    "values set must be empty for exists and does not exist",
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errors.push(FieldError::invalid(
                        "values",
                        strings(),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, value) in values.iter().enumerate() {
                    if value.parse::<i64>().is_err() {
                        errors.push(FieldError::invalid(
                            format!("values[{i}]"),
                            BadValue::Str(value.clone()),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, value) in values.iter().enumerate() {
            let value_errors = names::label_value(value);
            if !value_errors.is_empty() {
                errors.push(FieldError::invalid(
                    format!("values[{i}][{key}]"),
                    BadValue::Str(value.clone()),
                    value_errors.join("; "),
                ));
            }
        }
        if errors.is_empty() {
            return Ok(Requirement {
                key,
                operator,
                values,
            });
        }
        Err(aggregate(errors.iter().map(ToString::to_string).collect()))
    }

    /// `Requirement.Matches`.
    fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let value = labels.and_then(|l| l.get(&self.key));
        let has = |v: &String| self.values.contains(v);
        let number = |v: &String| v.parse::<i64>().ok();
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => value.is_some_and(has),
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !has(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(label), Some(bound)) =
                    (value.and_then(number), self.values.first().and_then(number))
                else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    label > bound
                } else {
                    label < bound
                }
            }
        }
    }
}

impl std::fmt::Display for Requirement {
    /// `Requirement.String`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = &self.key;
        let values = self.values.join(",");
        match self.operator {
            Operator::Exists => write!(f, "{key}"),
            Operator::DoesNotExist => write!(f, "!{key}"),
            Operator::Equals => write!(f, "{key}={values}"),
            Operator::DoubleEquals => write!(f, "{key}=={values}"),
            Operator::NotEquals => write!(f, "{key}!={values}"),
            Operator::In => write!(f, "{key} in ({values})"),
            Operator::NotIn => write!(f, "{key} notin ({values})"),
            Operator::GreaterThan => write!(f, "{key}>{values}"),
            Operator::LessThan => write!(f, "{key}<{values}"),
        }
    }
}

/// apimachinery's `utilerrors.NewAggregate(...).Error()`: one message bare, several (without
/// repeats) in brackets.
fn aggregate(messages: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for message in messages {
        if !seen.contains(&message) {
            seen.push(message);
        }
    }
    match seen.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// A parsed label selector; every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// Why a selector does not parse, in apimachinery's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(String);

/// The longest selector parsed (apimachinery has no limit of its own; the URL's length is).
const MAX_SELECTOR_BYTES: usize = 64 * 1024;

impl LabelSelector {
    /// Parses `app=web,tier!=db,env in (a,b),!old,count>3` as apimachinery's `labels.Parse`
    /// does: its lexer and parser, its checks of keys and values, its messages, and its
    /// requirements sorted by key.
    ///
    /// # Errors
    ///
    /// A selector that does not follow the grammar, or whose keys or values are not valid
    /// label keys and values.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        if text.len() > MAX_SELECTOR_BYTES {
            return Err(SelectorError(format!(
                "unable to parse requirement: selector longer than {MAX_SELECTOR_BYTES} bytes"
            )));
        }
        let mut parser = Parser {
            items: lex(text),
            position: 0,
        };
        let mut requirements = parser.parse().map_err(SelectorError)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector(requirements))
    }

    /// Whether labels satisfy every requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for LabelSelector {
    /// `internalSelector.String`: the requirements joined by commas.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, requirement) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

/// A token of the label selector lexer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// The tokens of the lexer's literals (`string2token`).
fn literal_token(literal: &[u8]) -> Option<Token> {
    Some(match literal {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(byte: u8) -> bool {
    matches!(byte, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// The whole selector as the lexer scans it, ending with `EndOfString` (a NUL byte where a
/// token would start ends it too, as Go's lexer reads one as the end).
fn lex(text: &str) -> Vec<(Token, String)> {
    let bytes = text.as_bytes();
    let read = |at: usize| bytes.get(at).copied().unwrap_or(0);
    let mut items = Vec::new();
    let mut at = 0;
    loop {
        while is_whitespace(read(at)) {
            at += 1;
        }
        let first = read(at);
        if first == 0 {
            items.push((Token::EndOfString, String::new()));
            return items;
        }
        let start = at;
        if is_special_symbol(first) {
            // `scanSpecialSymbol`: the longest run of symbols that is a token.
            let mut last: Option<(Token, usize)> = None;
            loop {
                if !is_special_symbol(read(at)) {
                    break;
                }
                at += 1;
                match literal_token(&bytes[start..at]) {
                    Some(token) => last = Some((token, at)),
                    None if last.is_some() => {
                        at -= 1;
                        break;
                    }
                    None => {}
                }
            }
            match last {
                Some((token, end)) => {
                    at = end;
                    items.push((token, text[start..end].to_owned()));
                }
                None => items.push((
                    Token::Error,
                    format!(
                        "error expected: keyword found '{}'",
                        String::from_utf8_lossy(&bytes[start..at])
                    ),
                )),
            }
        } else {
            // `scanIDOrKeyword`; a NUL byte ends the identifier, and is read (not the
            // input: the next token starts after it).
            while read(at) != 0 && !is_special_symbol(read(at)) && !is_whitespace(read(at)) {
                at += 1;
            }
            let literal = String::from_utf8_lossy(&bytes[start..at]).into_owned();
            if at < bytes.len() && bytes[at] == 0 {
                at += 1;
            }
            let token = match literal_token(literal.as_bytes()) {
                Some(token) => token,
                None => Token::Identifier,
            };
            items.push((token, literal));
        }
    }
}

/// Whether `in` and `notin` are operators (after a key) or values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// apimachinery's label selector `Parser`, on the lexer's tokens.
struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn lookahead(&self, context: Context) -> (Token, String) {
        let (token, literal) = self.items[self.position.min(self.items.len() - 1)].clone();
        (Self::in_context(token, context), literal)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.lookahead(context);
        self.position = (self.position + 1).min(self.items.len() - 1);
        item
    }

    fn in_context(token: Token, context: Context) -> Token {
        match token {
            Token::In | Token::NotIn if context == Context::Values => Token::Identifier,
            token => token,
        }
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.key_and_inferred_operator()?;
        if let Some(operator) = operator {
            return Requirement::new(key, operator, Vec::new());
        }
        let operator = self.operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.values()?,
            _ => self.exact_value()?,
        };
        Requirement::new(key, operator, values)
    }

    /// The key, and `Exists` or `DoesNotExist` when no operator follows it.
    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let (mut token, mut literal) = self.consume(Context::Values);
        let mut operator = None;
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let key_errors = apfkit_runtime::field::names::qualified_name(&literal);
        if !key_errors.is_empty() {
            // The parser's own path is nil, which Go prints as `<nil>`.
            return Err(format!(
                "<nil>: Invalid value: {}: {}",
                apfkit_runtime::field::go_quote(&literal),
                key_errors.join("; ")
            ));
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    /// `(a,b,c)`, as a sorted set.
    fn values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.identifiers()?;
                let (token, _) = self.consume(Context::Values);
                if token != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    /// `parseIdentifiersList`: values separated by commas, any of them empty.
    fn identifiers(&mut self) -> Result<Vec<String>, String> {
        let mut values = std::collections::BTreeSet::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.insert(literal);
                    let (next, literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(values.into_iter().collect()),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Token::ClosedPar || next == Token::Comma {
                        values.insert(String::new());
                    }
                    if next == Token::ClosedPar {
                        return Ok(values.into_iter().collect());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    /// The one value of `=`, `==`, `!=`, `>` and `<`; empty at the end or before a comma.
    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            return Ok(vec![literal]);
        }
        Err(format!("found '{literal}', expected: identifier"))
    }
}

/// A field selector (`metadata.name=x,spec.color!=red`), with `=`, `==` and `!=`. Any field
/// label parses, as in apimachinery's `fields.ParseSelector`; which labels a resource
/// supports is its version's to say ([`crate::store::VersionCodec::convert_field_label`]), and
/// the value of a label other than `metadata.name` and `metadata.namespace` comes from it too
/// (a CRD version's `selectableFields`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<Term>);

/// One term: a field label, whether it must equal or differ from a value, and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    field: String,
    equal: bool,
    value: String,
}

/// The field labels every object has.
pub const NAME: &str = "metadata.name";
/// The namespace's field label (empty for cluster-scoped objects).
pub const NAMESPACE: &str = "metadata.namespace";

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y` as apimachinery's
    /// `fields.ParseSelector` does: terms split at commas not escaped by `\`, sorted, each
    /// split at its first `!=`, `==` or `=`, its value unescaped (`\\`, `\,`, `\=`); nothing
    /// trimmed.
    ///
    /// # Errors
    ///
    /// A term without an operator, or a value with an unescaped `,` or `=` or a bad escape,
    /// in apimachinery's words.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_SELECTOR_BYTES {
            return Err(format!(
                "invalid selector: longer than {MAX_SELECTOR_BYTES} bytes"
            ));
        }
        let mut parts = split_terms(text);
        parts.sort_unstable();
        let mut terms = Vec::new();
        for part in parts.into_iter().filter(|part| !part.is_empty()) {
            let Some((field, equal, value)) = split_term(part) else {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                ));
            };
            terms.push(Term {
                field: field.to_owned(),
                equal,
                value: unescape_value(value)?,
            });
        }
        Ok(FieldSelector(terms))
    }

    /// The field labels the selector names, in its order.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|term| term.field.as_str())
    }

    /// This selector for a request about the object `name`: `metadata.name=NAME` when it
    /// selects everything, itself when it requires exactly that name.
    ///
    /// # Errors
    ///
    /// A selector that does not require exactly that name, in kube-apiserver's words.
    pub fn for_name(self, name: &str) -> Result<Self, String> {
        if self.0.is_empty() {
            return Ok(FieldSelector(vec![Term {
                field: NAME.to_owned(),
                equal: true,
                value: name.to_owned(),
            }]));
        }
        if self.single_name() == Some(name) {
            Ok(self)
        } else {
            Err("fieldSelector metadata.name doesn't match requested name".to_owned())
        }
    }

    /// Whether an object with this name and namespace is selected; `other` gives the value
    /// of any other field label (`None`: the empty string, as an absent field's), asked once
    /// per label however many terms name it (it may convert the object).
    pub fn matches(
        &self,
        name: &str,
        namespace: &str,
        other: impl Fn(&str) -> Option<String>,
    ) -> bool {
        let mut read: Vec<(&str, String)> = Vec::new();
        self.0.iter().all(|term| {
            let equal = match term.field.as_str() {
                NAME => name == term.value,
                NAMESPACE => namespace == term.value,
                field => match read.iter().find(|(known, _)| *known == field) {
                    Some((_, value)) => *value == term.value,
                    None => {
                        let value = other(field).unwrap_or_default();
                        let equal = value == term.value;
                        read.push((field, value));
                        equal
                    }
                },
            };
            equal == term.equal
        })
    }

    /// The one name selected by `metadata.name=x`, if the selector has such a term.
    pub fn single_name(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|term| term.field == NAME && term.equal)
            .map(|term| term.value.as_str())
    }
}

/// `splitTerms`: the selector cut at each comma not escaped by a backslash.
fn split_terms(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&text[start..i]);
            start = i + 1;
        }
    }
    terms.push(&text[start..]);
    terms
}

/// `splitTerm`: the field, whether it must equal, and the value, cut at the first place an
/// operator starts (`!=` before `==` before `=`).
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        [("!=", false), ("==", true), ("=", true)]
            .into_iter()
            .find(|(operator, _)| rest.starts_with(operator))
            .map(|(operator, equal)| (&term[..i], equal, &rest[operator.len()..]))
    })
}

/// `UnescapeValue`: `\\`, `\,` and `\=` read as the character; any other escape, a lone `\`
/// at the end, or an unescaped `,` or `=` refused.
fn unescape_value(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ));
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".to_owned());
    }
    Ok(out)
}

/// `EscapeValue`, the inverse of [`unescape_value`].
fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl std::fmt::Display for FieldSelector {
    /// The selector as apimachinery prints it: each term `field=value` or `field!=value`,
    /// its value escaped, joined by commas.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, term) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let operator = if term.equal { "=" } else { "!=" };
            write!(f, "{}{operator}{}", term.field, escape_value(&term.value))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn label_selectors_follow_apimachinerys_grammar() {
        let web = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        for (selector, expected) in [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web, db)", true),
            ("app notin (web)", false),
            ("tier,!old", true),
            ("!tier", false),
            ("n>4,n<6", true),
            ("n>5", false),
            ("example.com/owner", false),
            ("missing!=x", true),
        ] {
            let parsed = LabelSelector::parse(selector).unwrap();
            assert_eq!(parsed.matches(Some(&web)), expected, "{selector}");
        }
    }

    #[test]
    fn bad_label_selectors_are_refused() {
        for bad in [
            "app=",
            "=web",
            "app in web",
            "app in (a",
            "a,,b",
            "app=we b",
            "app)",
            "-app",
            "n>x",
            "app foo (a)",
        ] {
            let result = LabelSelector::parse(bad);
            if bad == "app=" {
                // An empty value is valid: it selects labels set to "".
                assert!(result.is_ok());
                continue;
            }
            assert!(result.is_err(), "{bad} parsed as {result:?}");
        }
        assert!(LabelSelector::parse(&"a".repeat(100_000)).is_err());
    }

    /// Each line of a golden file of `reference/golden`: the selector, the error Go's parser
    /// answers, or what it parsed as Go prints it.
    fn golden(cases: &str) -> Vec<(String, Option<String>, Option<String>)> {
        cases
            .lines()
            .map(|line| serde_json::from_str(line).expect("a golden line"))
            .collect()
    }

    /// Every selector of `tests/data/label-selectors.jsonl` parsed as apimachinery's
    /// `labels.Parse` parses it (Go's answers made in `reference/` with
    /// `go run ./golden labels < ../apiserver/tests/data/label-selectors.jsonl >
    /// ../apiserver/tests/data/label-selectors-cases.jsonl`).
    #[test]
    fn label_selectors_parse_as_apimachinery_parses_them() {
        let cases = golden(include_str!("../tests/data/label-selectors-cases.jsonl"));
        assert!(cases.len() > 100);
        for (selector, error, parsed) in cases {
            let ours = LabelSelector::parse(&selector);
            assert_eq!(
                ours.as_ref().err().map(ToString::to_string),
                error,
                "{selector:?}"
            );
            assert_eq!(ours.ok().map(|s| s.to_string()), parsed, "{selector:?}");
        }
    }

    /// The same for `fields.ParseSelector` (`golden fields`, `field-selectors.jsonl`).
    #[test]
    fn field_selectors_parse_as_apimachinery_parses_them() {
        let cases = golden(include_str!("../tests/data/field-selectors-cases.jsonl"));
        assert!(cases.len() > 20);
        for (selector, error, parsed) in cases {
            let ours = FieldSelector::parse(&selector);
            assert_eq!(ours.as_ref().err().cloned(), error, "{selector:?}");
            assert_eq!(ours.ok().map(|s| s.to_string()), parsed, "{selector:?}");
        }
    }

    #[test]
    fn field_selectors_compare_name_namespace_and_other_fields() {
        let selector = FieldSelector::parse("metadata.name=x,metadata.namespace!=kube").unwrap();
        let none = |_: &str| None;
        assert!(selector.matches("x", "default", none));
        assert!(!selector.matches("y", "default", none));
        assert!(!selector.matches("x", "kube", none));
        assert_eq!(selector.single_name(), Some("x"));
        // Other labels parse; their values come from the resource (absent: ""). Terms are
        // sorted and nothing is trimmed, as apimachinery parses them.
        let color = FieldSelector::parse("spec.size!=,spec.color=red").unwrap();
        assert_eq!(
            color.fields().collect::<Vec<_>>(),
            ["spec.color", "spec.size"]
        );
        assert_eq!(
            FieldSelector::parse("b=1, a=2")
                .unwrap()
                .fields()
                .collect::<Vec<_>>(),
            [" a", "b"]
        );
        let object = |field: &str| match field {
            "spec.color" => Some("red".to_owned()),
            "spec.size" => Some("3".to_owned()),
            _ => None,
        };
        assert!(color.matches("a", "", object));
        assert!(!color.matches("a", "", none));
        for bad in ["metadata.name", "a,b", "a=b=c", "a=b\\"] {
            assert!(FieldSelector::parse(bad).is_err(), "{bad}");
        }
        assert!(FieldSelector::parse(&"spec.a=1,".repeat(10_000)).is_err());
        // A label named by many terms is read once per object.
        let repeated = FieldSelector::parse(&"spec.a=1,".repeat(1_000)).unwrap();
        let reads = std::cell::Cell::new(0);
        let counted = |_: &str| {
            reads.set(reads.get() + 1);
            Some("1".to_owned())
        };
        assert!(repeated.matches("a", "", counted));
        assert_eq!(reads.get(), 1);
    }

    #[test]
    fn a_named_request_selects_its_name() {
        let named = FieldSelector::default().for_name("x").unwrap();
        assert_eq!(named.single_name(), Some("x"));
        let same = FieldSelector::parse("metadata.name=x,metadata.namespace=ns").unwrap();
        assert_eq!(same.clone().for_name("x"), Ok(same));
        for other in [
            "metadata.name=y",
            "metadata.name!=x",
            "metadata.namespace=ns",
        ] {
            assert_eq!(
                FieldSelector::parse(other)
                    .unwrap()
                    .for_name("x")
                    .unwrap_err(),
                "fieldSelector metadata.name doesn't match requested name",
                "{other}"
            );
        }
    }
}
