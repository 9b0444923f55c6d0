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
    if apfkit_runtime::field::names::label_value(value).is_empty() {
        Ok(value.to_owned())
    } else {
        Err(SelectorError(format!("invalid label value: {value:?}")))
    }
}

/// A field selector (`metadata.name=x,spec.color!=red`), with `=`, `==` and `!=`. Any field
/// label parses, as in apimachinery's `fields.ParseSelector`; which labels a resource
/// supports is its version's to say ([`crate::store::VersionCodec::selects_field`]), and
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
    /// Parses `metadata.name=x,metadata.namespace!=y`.
    ///
    /// # Errors
    ///
    /// A term without an operator, or without a field label, in apimachinery's words.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_SELECTOR_BYTES {
            return Err(format!(
                "invalid selector: longer than {MAX_SELECTOR_BYTES} bytes"
            ));
        }
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
            let field = field.trim();
            if field.is_empty() {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{term}'"
                ));
            }
            terms.push(Term {
                field: field.to_owned(),
                equal,
                value: value.trim().to_owned(),
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
    fn field_selectors_compare_name_namespace_and_other_fields() {
        let selector = FieldSelector::parse("metadata.name=x,metadata.namespace!=kube").unwrap();
        let none = |_: &str| None;
        assert!(selector.matches("x", "default", none));
        assert!(!selector.matches("y", "default", none));
        assert!(!selector.matches("x", "kube", none));
        assert_eq!(selector.single_name(), Some("x"));
        // Other labels parse; their values come from the resource (absent: "").
        let color = FieldSelector::parse("spec.color=red, spec.size!=").unwrap();
        assert_eq!(
            color.fields().collect::<Vec<_>>(),
            ["spec.color", "spec.size"]
        );
        let object = |field: &str| match field {
            "spec.color" => Some("red".to_owned()),
            "spec.size" => Some("3".to_owned()),
            _ => None,
        };
        assert!(color.matches("a", "", object));
        assert!(!color.matches("a", "", none));
        for bad in ["metadata.name", "=x", "a,b"] {
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
