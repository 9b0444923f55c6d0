//! `From` conversions, both ways, between our `flowcontrol::v1` types and k8s-openapi's
//! `api::flowcontrol::v1` types. The two describe the same wire format with the same field
//! names and optionality, so every conversion is a field-for-field move.

use k8s_openapi::api::flowcontrol::v1 as theirs;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::flowcontrol::v1 as ours;

/// Moves a value into the corresponding type of the other crate.
trait Convert<T> {
    fn convert(self) -> T;
}

/// Types both crates share.
macro_rules! same {
    ($($ty:ty),*) => {$(
        impl Convert<$ty> for $ty {
            fn convert(self) -> $ty {
                self
            }
        }
    )*};
}
same!(String, i32, bool, ObjectMeta, Time);

/// Condition `type` is optional in the schema but required in k8s-openapi, which cannot
/// represent its absence: an absent type becomes `""`, and comes back as `Some("")`.
impl Convert<String> for Option<String> {
    fn convert(self) -> String {
        self.unwrap_or_default()
    }
}

impl Convert<Option<String>> for String {
    fn convert(self) -> Option<String> {
        Some(self)
    }
}

impl<A: Convert<B>, B> Convert<Option<B>> for Option<A> {
    fn convert(self) -> Option<B> {
        self.map(Convert::convert)
    }
}

// Before 1.37, k8s-openapi's `spec`s and `limitResponse` are optional (1.37's `+required`
// markers made them bare, as ours always are, and as Go's struct values are): an absent one
// becomes the empty value, and comes back present.
k8s_openapi::k8s_if_le_1_36! {
    macro_rules! optional_before_1_37 {
        ($($name:ident),*) => {$(
            impl Convert<Option<theirs::$name>> for ours::$name {
                fn convert(self) -> Option<theirs::$name> {
                    Some(self.convert())
                }
            }
            impl Convert<ours::$name> for Option<theirs::$name> {
                fn convert(self) -> ours::$name {
                    self.map(Convert::convert).unwrap_or_default()
                }
            }
        )*};
    }
    optional_before_1_37!(FlowSchemaSpec, PriorityLevelConfigurationSpec, LimitResponse);
}

impl<A: Convert<B>, B> Convert<Vec<B>> for Vec<A> {
    fn convert(self) -> Vec<B> {
        self.into_iter().map(Convert::convert).collect()
    }
}

/// `From` both ways for a pair of structs with the same fields.
macro_rules! both_ways {
    ($($name:ident { $($field:ident),* })*) => {$(
        impl Convert<theirs::$name> for ours::$name {
            fn convert(self) -> theirs::$name {
                theirs::$name { $($field: self.$field.convert()),* }
            }
        }
        impl Convert<ours::$name> for theirs::$name {
            fn convert(self) -> ours::$name {
                ours::$name { $($field: self.$field.convert()),* }
            }
        }
        impl From<ours::$name> for theirs::$name {
            fn from(value: ours::$name) -> Self {
                value.convert()
            }
        }
        impl From<theirs::$name> for ours::$name {
            fn from(value: theirs::$name) -> Self {
                value.convert()
            }
        }
    )*};
}

both_ways! {
    FlowSchema { metadata, spec, status }
    FlowSchemaSpec { distinguisher_method, matching_precedence, priority_level_configuration, rules }
    FlowSchemaStatus { conditions }
    FlowSchemaCondition { last_transition_time, message, reason, status, type_ }
    FlowDistinguisherMethod { type_ }
    PriorityLevelConfigurationReference { name }
    PolicyRulesWithSubjects { non_resource_rules, resource_rules, subjects }
    Subject { group, kind, service_account, user }
    UserSubject { name }
    GroupSubject { name }
    ServiceAccountSubject { name, namespace }
    ResourcePolicyRule { api_groups, cluster_scope, namespaces, resources, verbs }
    NonResourcePolicyRule { non_resource_urls, verbs }
    PriorityLevelConfiguration { metadata, spec, status }
    PriorityLevelConfigurationSpec { exempt, limited, type_ }
    PriorityLevelConfigurationStatus { conditions }
    PriorityLevelConfigurationCondition { last_transition_time, message, reason, status, type_ }
    LimitedPriorityLevelConfiguration { borrowing_limit_percent, lendable_percent, limit_response, nominal_concurrency_shares }
    ExemptPriorityLevelConfiguration { lendable_percent, nominal_concurrency_shares }
    LimitResponse { queuing, type_ }
    QueuingConfiguration { hand_size, queue_length_limit, queues }
}
