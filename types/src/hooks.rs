//! Hand-written conversion hooks: the semantic differences between versions. The generated
//! conversion moves every field that corresponds, then calls the hook of the type with the
//! source and the target. A hook reads from the source only the fields that have no
//! counterpart (the others have been moved out of it), and finds the rest in the target.

/// v1alpha1, v1beta1 and v1beta2 call the limited shares `assuredConcurrencyShares`; the hub
/// calls them `nominalConcurrencyShares`.
macro_rules! assured_shares {
    ($($version:ident),*) => {$(
        #[doc = concat!("Hooks of flowcontrol ", stringify!($version), ".")]
        pub mod $version {
            use apfkit_types::flowcontrol::$version as external;
            use crate::hub::flowcontrol as hub;

            /// `assuredConcurrencyShares` → hub `nominalConcurrencyShares`.
            pub fn limited_to_hub(from: &external::LimitedPriorityLevelConfiguration, to: &mut hub::LimitedPriorityLevelConfiguration) {
                to.nominal_concurrency_shares = from.assured_concurrency_shares;
            }

            /// Hub `nominalConcurrencyShares` → `assuredConcurrencyShares`. A hub value of 0 is
            /// written as 0, which defaulting in this version turns into 30: see the lossy-conversion report.
            pub fn limited_from_hub(from: &hub::LimitedPriorityLevelConfiguration, to: &mut external::LimitedPriorityLevelConfiguration) {
                to.assured_concurrency_shares = from.nominal_concurrency_shares;
            }

            /// The shares are carried across as they are, both ways: always `true`.
            pub fn limited_round_trips(_: &hub::LimitedPriorityLevelConfiguration) -> bool {
                true
            }
        }
    )*};
}

assured_shares!(v1alpha1, v1beta1, v1beta2);

/// Hooks of flowcontrol v1beta3: the zero-shares annotation (Kubernetes 1.29+).
pub mod v1beta3 {
    use apfkit_types::defaulting::PRESERVE_ZERO_CONCURRENCY_SHARES_ANNOTATION as PRESERVE;
    use apfkit_types::flowcontrol::v1beta3 as external;

    use crate::hub::flowcontrol as hub;

    /// The annotation only tells v1beta3 defaulting that 0 is meant; it is removed on the way
    /// to the hub, whatever its value and whatever the shares. Annotations left empty become
    /// unset: Go omits an empty map, so the two are the same object on the wire.
    pub fn priority_level_configuration_to_hub(
        _from: &external::PriorityLevelConfiguration,
        to: &mut hub::PriorityLevelConfiguration,
    ) {
        if let Some(annotations) = to.metadata.annotations.as_mut()
            && annotations.remove(PRESERVE).is_some()
            && annotations.is_empty()
        {
            to.metadata.annotations = None;
        }
    }

    /// A Limited level whose hub shares are 0 gets the annotation (value `""`) unless it is
    /// already there, so that the object written back through v1beta3 keeps its 0.
    pub fn priority_level_configuration_from_hub(
        _from: &hub::PriorityLevelConfiguration,
        to: &mut external::PriorityLevelConfiguration,
    ) {
        // The shares have a counterpart, so they are read from the converted object.
        let zero = to
            .spec
            .limited
            .as_ref()
            .is_some_and(|l| l.nominal_concurrency_shares == Some(0));
        if zero {
            to.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .entry(PRESERVE.to_owned())
                .or_default();
        }
    }

    /// Whether the two hooks above give `hub` back unchanged. They do unless it carries the
    /// annotation (removed on the way back) or an empty annotation map (which the way back
    /// may leave unset); in those cases the answer is `false`.
    pub fn priority_level_configuration_round_trips(hub: &hub::PriorityLevelConfiguration) -> bool {
        hub.metadata.annotations.as_ref().is_none_or(|annotations| {
            !annotations.is_empty() && !annotations.contains_key(PRESERVE)
        })
    }
}

/// Hooks of apiregistration.
pub mod apiregistration {
    /// The service port is optional in every version and a plain integer in the hub.
    macro_rules! service_port {
        ($($version:ident),*) => {$(
            #[doc = concat!("Hooks of apiregistration ", stringify!($version), ".")]
            pub mod $version {
                use apfkit_types::apiregistration::$version as external;
                use crate::hub::apiregistration as hub;

                /// An unset port becomes 0, as in kube-apiserver (defaulting sets 443 before).
                pub fn service_reference_to_hub(from: &external::ServiceReference, to: &mut hub::ServiceReference) {
                    to.port = from.port.unwrap_or_default();
                }

                /// The hub port is always written.
                pub fn service_reference_from_hub(from: &hub::ServiceReference, to: &mut external::ServiceReference) {
                    to.port = Some(from.port);
                }

                /// The port is written and read back as it is: always `true`.
                pub fn service_reference_round_trips(_: &hub::ServiceReference) -> bool {
                    true
                }
            }
        )*};
    }

    service_port!(v1beta1, v1);
}
