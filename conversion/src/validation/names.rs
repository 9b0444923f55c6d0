//! apimachinery's name checks (DNS-1123 subdomain and label, DNS-1035 label) and the object
//! metadata rules of cluster-scoped objects, with apimachinery's messages.

use super::field::{BadValue, FieldError, Path};

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
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push(max_len(253));
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

/// The object-metadata rules of a cluster-scoped object: a name (or generateName) is required, a
/// namespace is forbidden, and the name must pass `name_check`.
pub fn cluster_scoped_meta(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    name_check: impl Fn(&str) -> Vec<String>,
) -> Vec<FieldError> {
    let path = Path::new("metadata");
    let mut errors = Vec::new();
    let name = meta.name.as_deref().unwrap_or_default();
    let generate_name = meta.generate_name.as_deref().unwrap_or_default();
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
    if meta.namespace.as_deref().is_some_and(|ns| !ns.is_empty()) {
        errors.push(FieldError::forbidden(
            path.child("namespace"),
            "not allowed on this type",
        ));
    }
    errors
}

/// apimachinery checks a generateName prefix with a trailing `-` replaced by `a`.
fn mask_trailing_dash(name: &str) -> String {
    match name.strip_suffix('-') {
        Some(rest) if !rest.is_empty() => format!("{rest}a"),
        _ => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains() {
        assert!(dns1123_label("kube-system").is_empty());
        assert_eq!(dns1123_label("-foo").len(), 1);
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
        assert!(dns1123_subdomain("system-foo.example").is_empty());
        assert!(dns1123_subdomain("a..b").len() == 1);
        assert_eq!(
            dns1123_subdomain("system+++$$"),
            [
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            dns1123_label("-foo")[0],
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        );
        assert!(dns1035_label("v1beta1").is_empty());
        assert_eq!(dns1035_label("1v").len(), 1);
    }
}
