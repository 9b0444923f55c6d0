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

/// Condition `type` is optional in the schema but required in k8s-openapi from 1.37, which
/// cannot represent its absence: an absent type becomes `""`, and comes back as `Some("")`.
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

/// These run on whichever Kubernetes version k8s-openapi is built for: the workspace's 1.37,
/// and 1.33 to 1.36 in CI (`.ci/k8s-openapi-versions`), where `spec` and `limitResponse` are
/// optional in k8s-openapi's types.
#[cfg(test)]
mod tests {
    use super::{ours, theirs};
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    fn parse<T: DeserializeOwned>(yaml: &str) -> Vec<T> {
        serde_saphyr::from_multiple(yaml).expect("the embedded bootstrap objects parse")
    }

    /// Every bootstrap object crosses both ways unchanged, and k8s-openapi encodes what we do.
    #[test]
    fn bootstrap_objects_cross_both_ways_unchanged() {
        let levels: Vec<ours::PriorityLevelConfiguration> =
            parse(crate::bootstrap::PRIORITY_LEVELS_YAML);
        let schemas: Vec<ours::FlowSchema> = parse(crate::bootstrap::FLOW_SCHEMAS_YAML);
        assert_eq!((levels.len(), schemas.len()), (8, 11));
        for level in levels {
            let converted = theirs::PriorityLevelConfiguration::from(level.clone());
            assert_eq!(
                serde_json::to_value(&converted).unwrap(),
                serde_json::to_value(&level).unwrap()
            );
            assert_eq!(ours::PriorityLevelConfiguration::from(converted), level);
        }
        for schema in schemas {
            let converted = theirs::FlowSchema::from(schema.clone());
            assert_eq!(
                serde_json::to_value(&converted).unwrap(),
                serde_json::to_value(&schema).unwrap()
            );
            assert_eq!(ours::FlowSchema::from(converted), schema);
        }
    }

    /// Statuses cross too; from 1.37, where k8s-openapi's condition `type` is a bare string, a
    /// condition without one comes back with an empty one.
    #[test]
    fn conditions_cross_and_an_absent_type_becomes_empty() {
        let schema: ours::FlowSchema = serde_json::from_value(json!({
            "metadata": {"name": "probes", "resourceVersion": "7"},
            "spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 2},
            "status": {"conditions": [
                {"type": "Dangling", "status": "False", "reason": "Found", "message": "ok",
                 "lastTransitionTime": "2026-12-01T00:00:00Z"},
                {"status": "True"}
            ]}
        }))
        .unwrap();
        let converted = theirs::FlowSchema::from(schema.clone());
        let back = ours::FlowSchema::from(converted.clone());
        let back_conditions = back.status.as_ref().unwrap().conditions.as_ref().unwrap();
        let conditions = schema.status.as_ref().unwrap().conditions.as_ref().unwrap();
        assert_eq!(back_conditions[0], conditions[0]);
        let sent = &converted
            .status
            .as_ref()
            .unwrap()
            .conditions
            .as_ref()
            .unwrap()[1];
        k8s_openapi::k8s_if_ge_1_37! {
            assert_eq!(sent.type_, "");
            assert_eq!(back_conditions[1].type_.as_deref(), Some(""));
        }
        // Before 1.37 k8s-openapi's condition `type` is optional too: nothing changes.
        k8s_openapi::k8s_if_le_1_36! {
            assert_eq!(sent.type_, None);
            assert_eq!(back, schema);
        }
    }

    /// Before 1.37 k8s-openapi's `spec` and `limitResponse` may be absent; ours are bare (as
    /// Go's struct values are), so an absent one is the empty value and comes back present.
    #[test]
    fn k8s_openapis_optional_specs_before_1_37_become_empty_values() {
        let level = ours::PriorityLevelConfiguration::default();
        let converted = theirs::PriorityLevelConfiguration::from(level.clone());
        let encoded: Value = serde_json::to_value(&converted).unwrap();
        assert_eq!(encoded["spec"], json!({"type": ""}));
        assert_eq!(ours::PriorityLevelConfiguration::from(converted), level);

        k8s_openapi::k8s_if_le_1_36! {
            let absent = theirs::FlowSchema::default();
            assert!(absent.spec.is_none());
            let ours_schema = ours::FlowSchema::from(absent);
            assert_eq!(ours_schema.spec, ours::FlowSchemaSpec::default());
            assert_eq!(theirs::FlowSchema::from(ours_schema).spec, Some(theirs::FlowSchemaSpec::default()));

            let limited = theirs::LimitedPriorityLevelConfiguration::default();
            assert!(limited.limit_response.is_none());
            let ours_limited = ours::LimitedPriorityLevelConfiguration::from(limited);
            assert_eq!(ours_limited.limit_response, ours::LimitResponse::default());
        }
    }
}
