//! Label and field selectors as apimachinery parses them (`k8s.io/apimachinery/pkg/labels/
//! selector.go`, `k8s.io/apimachinery/pkg/fields/selector.go`).

use std::collections::BTreeMap;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Greater(String, i64),
    Less(String, i64),
}

/// A parsed label selector; every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// Why a selector does not parse, in apimachinery's words where it has them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to parse requirement: {0}")]
pub struct SelectorError(String);

const MAX_SELECTOR_BYTES: usize = 64 * 1024;

impl LabelSelector {
    /// Parses `app=web,tier!=db,env in (a,b),!old,count>3`.
    ///
    /// # Errors
    ///
    /// A selector that does not follow the grammar, or whose keys or values are not valid
    /// label keys and values.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        if text.len() > MAX_SELECTOR_BYTES {
            return Err(SelectorError(format!(
                "selector longer than {MAX_SELECTOR_BYTES} bytes"
            )));
        }
        let mut requirements = Vec::new();
        for part in split_top_level(text)? {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(SelectorError("found ',', expected: identifier".to_owned()));
            }
            requirements.push(requirement(part)?);
        }
        Ok(LabelSelector(requirements))
    }

    /// Whether labels satisfy every requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let get = |key: &str| labels.and_then(|l| l.get(key));
        self.0.iter().all(|r| match r {
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
            Requirement::In(k, values) => get(k).is_some_and(|v| values.contains(v)),
            Requirement::NotIn(k, values) => get(k).is_none_or(|v| !values.contains(v)),
            Requirement::Greater(k, n) => get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Requirement::Less(k, n) => get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        })
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Splits at commas outside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, SelectorError> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' if depth == 0 => depth = 1,
            '(' => return Err(SelectorError("found '(', expected: ')'".to_owned())),
            ')' if depth == 1 => depth = 0,
            ')' => return Err(SelectorError("found ')', expected: identifier".to_owned())),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(SelectorError(
            "found end of string, expected: ')'".to_owned(),
        ));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn requirement(part: &str) -> Result<Requirement, SelectorError> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::NotExists(label_key(key.trim())?));
    }
    for (operator, negate) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((key, value)) = part.split_once(operator) {
            let key = label_key(key.trim())?;
            let value = label_value(value.trim())?;
            return Ok(if negate {
                Requirement::NotIn(key, vec![value])
            } else {
                Requirement::In(key, vec![value])
            });
        }
    }
    for (operator, greater) in [(">", true), ("<", false)] {
        if let Some((key, value)) = part.split_once(operator) {
            let key = label_key(key.trim())?;
            let number = value.trim().parse::<i64>().map_err(|_| {
                SelectorError(format!(
                    "for 'Gt', 'Lt' operators, the value must be an integer: {value:?}"
                ))
            })?;
            return Ok(if greater {
                Requirement::Greater(key, number)
            } else {
                Requirement::Less(key, number)
            });
        }
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if let [key, rest] = words.as_slice() {
        let rest = rest.trim();
        for (operator, negate) in [("notin", true), ("in", false)] {
            if let Some(values) = rest.strip_prefix(operator) {
                let values = values.trim();
                let inner = values
                    .strip_prefix('(')
                    .and_then(|v| v.strip_suffix(')'))
                    .ok_or_else(|| SelectorError(format!("found {values:?}, expected: '('")))?;
                let values = inner
                    .split(',')
                    .map(|v| label_value(v.trim()))
                    .collect::<Result<Vec<_>, _>>()?;
                let key = label_key(key)?;
                return Ok(if negate {
                    Requirement::NotIn(key, values)
                } else {
                    Requirement::In(key, values)
                });
            }
        }
        return Err(SelectorError(format!(
            "found {rest:?}, expected: in, notin, =, ==, !=, gt, lt"
        )));
    }
    Ok(Requirement::Exists(label_key(part)?))
}

/// A qualified name with an optional DNS-subdomain prefix (`example.com/name`).
fn label_key(key: &str) -> Result<String, SelectorError> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.".contains(&b))
    });
    if name_ok && prefix_ok {
        Ok(key.to_owned())
    } else {
        Err(SelectorError(format!("invalid label key {key:?}")))
    }
}

fn label_value(value: &str) -> Result<String, SelectorError> {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && value
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphanumeric())
            && value
                .bytes()
                .last()
                .is_some_and(|b| b.is_ascii_alphanumeric()));
    if ok {
        Ok(value.to_owned())
    } else {
        Err(SelectorError(format!("invalid label value: {value:?}")))
    }
}

/// A field selector over the fields every object has: `metadata.name` and
/// `metadata.namespace`, with `=`, `==` and `!=`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(Field, bool, String)>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
}

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y`.
    ///
    /// # Errors
    ///
    /// A term without an operator, or a field other than the two supported, in
    /// kube-apiserver's words (`field label not supported: spec.x`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{term}'"
                ));
            };
            let field = match field.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => return Err(format!("field label not supported: {other}")),
            };
            terms.push((field, equal, value.trim().to_owned()));
        }
        Ok(FieldSelector(terms))
    }

    /// Whether an object with this name and namespace is selected.
    pub fn matches(&self, name: &str, namespace: &str) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let actual = match field {
                Field::Name => name,
                Field::Namespace => namespace,
            };
            (actual == value) == *equal
        })
    }

    /// The one name selected by `metadata.name=x`, if the selector has such a term.
    pub fn single_name(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|(field, equal, _)| *field == Field::Name && *equal)
            .map(|(_, _, v)| v.as_str())
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

    #[test]
    fn field_selectors_know_name_and_namespace_only() {
        let selector = FieldSelector::parse("metadata.name=x,metadata.namespace!=kube").unwrap();
        assert!(selector.matches("x", "default"));
        assert!(!selector.matches("y", "default"));
        assert!(!selector.matches("x", "kube"));
        assert_eq!(selector.single_name(), Some("x"));
        assert_eq!(
            FieldSelector::parse("spec.x=1").unwrap_err(),
            "field label not supported: spec.x"
        );
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
