//! The string `format`s kube-apiserver checks in custom resources: kube-openapi's
//! `strfmt.Default` registry (`k8s.io/kube-openapi/pkg/validation/strfmt/default.go`).
//! A format outside the registry is not checked, as upstream.
//!
//! Not checked here although upstream checks them (listed in docs/crd-validation.md):
//! `creditcard`, `isbn`, `isbn10`, `isbn13` — rare in CRDs, and each a checksum and pattern
//! table of its own.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

use apfkit_runtime::field::names;
use base64::Engine;
use regex::Regex;

/// Whether `text` is valid in `format`; formats not checked are always valid.
pub fn is_valid(format: &str, text: &str) -> bool {
    match format {
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(text)
            .is_ok(),
        "date" => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok() && text.len() == 10,
        "date-time" | "datetime" => apfkit_runtime::DateTime::new(text).is_ok(),
        "duration" => is_duration(text),
        "uuid" => matches(
            &UUID,
            text,
            r"^(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        ),
        "uuid3" => matches(
            &UUID3,
            text,
            r"^(?i)[0-9a-f]{8}-[0-9a-f]{4}-3[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$",
        ),
        "uuid4" => matches(
            &UUID4,
            text,
            r"^(?i)[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        ),
        "uuid5" => matches(
            &UUID5,
            text,
            r"^(?i)[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        ),
        "ipv4" => text.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => text.contains(':') && text.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(text),
        "mac" => is_mac(text),
        "hostname" => is_hostname(text),
        "email" => matches(&EMAIL, text, r"^[^@\s<>]+@[^@\s<>]+$"),
        "uri" => is_uri(text),
        "bsonobjectid" => matches(&OBJECT_ID, text, r"^[0-9a-fA-F]{24}$"),
        "hexcolor" => matches(&HEX_COLOR, text, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"),
        "rgbcolor" => is_rgb(text),
        "ssn" => matches(&SSN, text, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"),
        // Kubernetes 1.34's formats (a DNS-1123 label and a DNS-1123 subdomain).
        "k8s-short-name" => names::dns1123_label(text).is_empty(),
        "k8s-long-name" => names::dns1123_subdomain(text).is_empty(),
        _ => true,
    }
}

static UUID: OnceLock<Regex> = OnceLock::new();
static UUID3: OnceLock<Regex> = OnceLock::new();
static UUID4: OnceLock<Regex> = OnceLock::new();
static UUID5: OnceLock<Regex> = OnceLock::new();
static EMAIL: OnceLock<Regex> = OnceLock::new();
static OBJECT_ID: OnceLock<Regex> = OnceLock::new();
static HEX_COLOR: OnceLock<Regex> = OnceLock::new();
static SSN: OnceLock<Regex> = OnceLock::new();
static DURATION: OnceLock<Regex> = OnceLock::new();

fn matches(cell: &OnceLock<Regex>, text: &str, pattern: &str) -> bool {
    cell.get_or_init(|| Regex::new(pattern).expect("the format patterns compile"))
        .is_match(text)
}

/// strfmt's `ParseDuration`: Go's units and days and weeks, several in a row.
fn is_duration(text: &str) -> bool {
    matches(
        &DURATION,
        text,
        r"^(?:\s*[-+]?\d+(?:\.\d+)?\s*(?:ns|us|µs|ms|s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days|w|wk|week|weeks))+\s*$",
    )
}

fn is_cidr(text: &str) -> bool {
    let Some((address, bits)) = text.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match address.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => bits <= 32,
        Ok(IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets, as `xx:xx`, `xx-xx` or `xxxx.xxxx`.
fn is_mac(text: &str) -> bool {
    let octets_ok = |n: usize| n == 6 || n == 8 || n == 20;
    for separator in [':', '-'] {
        if text.contains(separator) {
            let parts: Vec<&str> = text.split(separator).collect();
            return octets_ok(parts.len())
                && parts
                    .iter()
                    .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()));
        }
    }
    let parts: Vec<&str> = text.split('.').collect();
    octets_ok(parts.len() * 2)
        && parts
            .iter()
            .all(|p| p.len() == 4 && p.chars().all(|c| c.is_ascii_hexdigit()))
}

fn is_hostname(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 255
        && text.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        })
}

/// Go's `url.ParseRequestURI`: an absolute URI (a scheme) or an absolute path.
fn is_uri(text: &str) -> bool {
    if text.starts_with('/') {
        return !text.contains(char::is_whitespace);
    }
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.contains(char::is_whitespace)
}

fn is_rgb(text: &str) -> bool {
    let Some(inner) = text
        .strip_prefix("rgb(")
        .and_then(|rest| rest.strip_suffix(')'))
    else {
        return false;
    };
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    parts.len() == 3 && parts.iter().all(|p| p.parse::<u8>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::is_valid;

    #[test]
    fn formats_accept_and_refuse_as_strfmt() {
        let cases = [
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date-time", "2024-02-29T23:59:59Z", true),
            ("date-time", "yesterday", false),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "soon", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "fe80::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("mac", "00:1a:2b", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad.com", false),
            ("email", "a@example.com", true),
            ("email", "nobody", false),
            ("uri", "https://example.com/x", true),
            ("uri", "example", false),
            ("hexcolor", "#fff", true),
            ("rgbcolor", "rgb(1, 2, 300)", false),
            ("no-such-format", "anything", true),
        ];
        for (format, text, valid) in cases {
            assert_eq!(is_valid(format, text), valid, "{format} {text:?}");
        }
    }
}
