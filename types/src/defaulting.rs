//! Hand-written defaulting rules that are not plain field defaults. The generated
//! `apply_defaults` calls these after it has applied the defaults of the OpenAPI documents.

use crate::flowcontrol::v1beta3;

/// Annotation that marks zero concurrency shares of a v1beta3 PriorityLevelConfiguration as
/// intended; without it, defaulting replaces 0 by 30.
pub const PRESERVE_ZERO_CONCURRENCY_SHARES_ANNOTATION: &str =
    "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";

/// The v1beta3 default of `nominalConcurrencyShares` for a Limited level.
const DEFAULT_NOMINAL_CONCURRENCY_SHARES: i32 = 30;

/// v1beta3 (Kubernetes 1.29+): a Limited level with 0 shares gets 30 unless the object carries
/// [`PRESERVE_ZERO_CONCURRENCY_SHARES_ANNOTATION`], with any value. Positive shares are left
/// alone, and so is the annotation.
pub(crate) fn v1beta3_priority_level_configuration(
    level: &mut v1beta3::PriorityLevelConfiguration,
) {
    if !v1beta3_priority_level_configuration_is_defaulted(level)
        && let Some(limited) = level.spec.limited.as_mut()
    {
        limited.nominal_concurrency_shares = Some(DEFAULT_NOMINAL_CONCURRENCY_SHARES);
    }
}

/// Whether [`v1beta3_priority_level_configuration`] would leave `level` as it is: it has no
/// Limited level with 0 shares, or it carries the annotation.
pub(crate) fn v1beta3_priority_level_configuration_is_defaulted(
    level: &v1beta3::PriorityLevelConfiguration,
) -> bool {
    let zero_shares = level
        .spec
        .limited
        .as_ref()
        .is_some_and(|limited| limited.nominal_concurrency_shares == Some(0));
    let preserve_zero = level
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|annotations| {
            annotations.contains_key(PRESERVE_ZERO_CONCURRENCY_SHARES_ANNOTATION)
        });
    !zero_shares || preserve_zero
}
