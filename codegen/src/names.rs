//! Turning OpenAPI names into Rust identifiers and module paths.

use heck::ToSnakeCase;

/// Words that cannot be plain identifiers, with `r#` not allowed for `self`, `Self`, `super`,
/// `crate` and `_`, so every keyword is escaped with a trailing underscore instead.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "union",
];

/// Whether `word` is a Rust keyword (strict, reserved or weak), which needs escaping.
pub fn is_keyword(word: &str) -> bool {
    KEYWORDS.contains(&word)
}

/// Makes `raw` a valid Rust identifier: other characters become `_`, a leading digit gets a
/// `_` prefix, keywords get a `_` suffix, an empty result becomes `_empty`.
pub fn sanitize_ident(raw: &str) -> String {
    let mut out: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.chars().all(|c| c == '_') {
        out = format!("_empty{out}");
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if KEYWORDS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// The Rust field name for a JSON property name: snake case, sanitized.
pub fn field_ident(wire: &str) -> String {
    let snake = plural_acronyms(wire.trim_start_matches(['$', '-'])).to_snake_case();
    sanitize_ident(&snake)
}

/// Upper-cases the `s` of a plural acronym (`URLs`, `IPs`) so that it stays with the acronym:
/// `nonResourceURLs` becomes `non_resource_urls`, as in k8s-openapi, not `non_resource_ur_ls`.
fn plural_acronyms(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len());
    for (i, &c) in chars.iter().enumerate() {
        let acronym_before =
            i >= 2 && chars[i - 1].is_ascii_uppercase() && chars[i - 2].is_ascii_uppercase();
        let word_ends = chars
            .get(i + 1)
            .is_none_or(|next| !next.is_ascii_lowercase());
        out.push(if c == 's' && acronym_before && word_ends {
            'S'
        } else {
            c
        });
    }
    out
}

/// The Rust module name for one dotted segment of a definition name.
pub fn module_ident(segment: &str) -> String {
    sanitize_ident(&segment.replace('-', "_").to_snake_case())
}

/// The Rust type name for the last segment of a definition name. Kubernetes names are already
/// upper camel case (`APIService`), and are kept as written so they match the Go names.
pub fn type_ident(segment: &str) -> String {
    let ident = sanitize_ident(segment);
    match ident.chars().next() {
        Some(first) if first.is_ascii_lowercase() => {
            let mut upper = first.to_ascii_uppercase().to_string();
            upper.push_str(&ident[1..]);
            upper
        }
        _ => ident,
    }
}

/// Splits a definition name at its last dot: (`io.k8s.api.core.v1`, `Pod`).
pub fn split_definition(definition: &str) -> (&str, &str) {
    match definition.rsplit_once('.') {
        Some((namespace, name)) => (namespace, name),
        None => ("", definition),
    }
}

/// `group/version` as `apiVersion` reads, the bare version for the core group.
pub(crate) fn api_version(group: &str, version: &str) -> String {
    apfkit_runtime::identity::GroupVersion::new(group.to_owned(), version.to_owned()).api_version()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_snake_case_and_escaped() {
        assert_eq!(field_ident("matchingPrecedence"), "matching_precedence");
        assert_eq!(field_ident("type"), "type_");
        assert_eq!(field_ident("$ref"), "ref_");
        assert_eq!(
            field_ident("x-kubernetes-int-or-string"),
            "x_kubernetes_int_or_string"
        );
        assert_eq!(field_ident("nonResourceURLs"), "non_resource_urls");
        assert_eq!(field_ident("podIPs"), "pod_ips");
        assert_eq!(
            field_ident("serverAddressByClientCIDRs"),
            "server_address_by_client_cidrs"
        );
        assert_eq!(
            field_ident("insecureSkipTLSVerify"),
            "insecure_skip_tls_verify"
        );
        assert_eq!(field_ident("caBundle"), "ca_bundle");
        assert_eq!(field_ident("caBundle"), "ca_bundle");
        assert_eq!(field_ident("3d"), "_3d");
        assert_eq!(field_ident(""), "_empty");
    }

    #[test]
    fn modules_and_types() {
        assert_eq!(module_ident("kube-aggregator"), "kube_aggregator");
        assert_eq!(module_ident("v1beta3"), "v1beta3");
        assert_eq!(type_ident("APIService"), "APIService");
        assert_eq!(type_ident("fooBar"), "FooBar");
        assert_eq!(
            split_definition("io.k8s.api.flowcontrol.v1.FlowSchema"),
            ("io.k8s.api.flowcontrol.v1", "FlowSchema")
        );
        assert_eq!(split_definition("Plain"), ("", "Plain"));
    }
}
