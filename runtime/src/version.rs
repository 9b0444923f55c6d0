//! Kubernetes-aware ordering of version strings (`v1` before `v1beta2` before `v1alpha1`), as
//! apimachinery's `CompareKubeAwareVersionStrings` (`pkg/version/helpers.go`) orders them for
//! discovery and for the preferred version of a group.

use std::cmp::Ordering;

/// Maturity of a Kubernetes-like version, in rank order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Maturity {
    Alpha,
    Beta,
    GenerallyAvailable,
}

/// `v<major>[(alpha|beta)<minor>]`, as (major, maturity, minor); `None` for other strings.
fn parse_kube_version(version: &str) -> Option<(u64, Maturity, u64)> {
    let rest = version.strip_prefix('v')?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let major = rest[..digits].parse().ok()?;
    let rest = &rest[digits..];
    if rest.is_empty() {
        return Some((major, Maturity::GenerallyAvailable, 0));
    }
    let (maturity, minor) = if let Some(minor) = rest.strip_prefix("alpha") {
        (Maturity::Alpha, minor)
    } else if let Some(minor) = rest.strip_prefix("beta") {
        (Maturity::Beta, minor)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((major, maturity, minor.parse().ok()?))
}

/// apimachinery's `CompareKubeAwareVersionStrings`: `Greater` when `a` ranks before `b`.
/// Kubernetes-like versions rank before others, GA before beta before alpha, then higher major,
/// then higher minor. Other strings rank in ascending lexical order. Different strings that
/// parse the same (`v01`, `v1`) are `Equal`.
pub fn compare_kube_aware_version_strings(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (parse_kube_version(a), parse_kube_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((a_major, a_maturity, a_minor)), Some((b_major, b_maturity, b_minor))) => a_maturity
            .cmp(&b_maturity)
            .then(a_major.cmp(&b_major))
            .then(a_minor.cmp(&b_minor)),
    }
}
