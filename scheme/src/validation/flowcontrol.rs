//! Validation of FlowSchema and PriorityLevelConfiguration hub objects (`ValidateFlowSchema`
//! and `ValidatePriorityLevelConfiguration` in upstream's
//! `pkg/apis/flowcontrol/validation/validation.go`).

use super::Options;
use super::field::{BadValue, FieldError, Path};
use super::mandatory::{self, semantically_equal};
use super::names::{cluster_scoped_meta, dns1123_label, dns1123_subdomain};
use apfkit_types::hub::flowcontrol as hub;

const SUPPORTED_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];
const SUBJECT_KINDS: &[&str] = &["Group", "ServiceAccount", "User"];
const DISTINGUISHER_METHODS: &[&str] = &["ByNamespace", "ByUser"];
const ENABLEMENTS: &[&str] = &["Exempt", "Limited"];
const LIMIT_RESPONSE_TYPES: &[&str] = &["Queue", "Reject"];
const MAX_MATCHING_PRECEDENCE: i32 = 10_000;
const MAX_QUEUES: i32 = 10_000_000;
const MAX_HASH_BITS: f64 = 60.0;
const PRESERVE_ZERO: &str = apfkit_types::defaulting::PRESERVE_ZERO_CONCURRENCY_SHARES_ANNOTATION;

fn strings(list: &[String]) -> BadValue {
    BadValue::Strings(list.to_vec())
}

/// Validates a FlowSchema.
pub fn flow_schema(schema: &hub::FlowSchema) -> Vec<FieldError> {
    let mut errors = cluster_scoped_meta(&schema.metadata, dns1123_subdomain);
    let name = schema.metadata.name.as_deref().unwrap_or_default();
    let spec = &schema.spec;
    let path = Path::new("spec");
    let precedence = spec.matching_precedence.unwrap_or_default();
    if precedence <= 0 {
        errors.push(FieldError::invalid(
            path.child("matchingPrecedence"),
            BadValue::Int(precedence.into()),
            "must be a positive value",
        ));
    }
    if precedence > MAX_MATCHING_PRECEDENCE {
        errors.push(FieldError::invalid(
            path.child("matchingPrecedence"),
            BadValue::Int(precedence.into()),
            format!("must not be greater than {MAX_MATCHING_PRECEDENCE}"),
        ));
    }
    if precedence == 1 && name != "exempt" {
        errors.push(FieldError::invalid(
            path.child("matchingPrecedence"),
            BadValue::Int(1),
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(method) = &spec.distinguisher_method
        && !DISTINGUISHER_METHODS.contains(&method.type_.as_str())
    {
        errors.push(FieldError::not_supported(
            path.child("distinguisherMethod").child("type"),
            BadValue::Go(format!(
                "flowcontrol.FlowDistinguisherMethod{{Type:{}}}",
                super::field::go_quote(&method.type_)
            )),
            DISTINGUISHER_METHODS,
        ));
    }
    let level = &spec.priority_level_configuration.name;
    let level_path = path.child("priorityLevelConfiguration").child("name");
    if level.is_empty() {
        errors.push(FieldError::required(
            &level_path,
            "must reference a priority level",
        ));
    } else {
        for message in dns1123_subdomain(level) {
            errors.push(FieldError::invalid(
                &level_path,
                BadValue::Str(level.clone()),
                message,
            ));
        }
    }
    for (i, rule) in spec.rules.iter().flatten().enumerate() {
        policy_rule(rule, &path.child("rules").index(i), &mut errors);
    }
    let fixed = match name {
        "exempt" => Some(&*mandatory::EXEMPT_FLOW_SCHEMA),
        "catch-all" => Some(&*mandatory::CATCH_ALL_FLOW_SCHEMA),
        _ => None,
    };
    if let Some(fixed) = fixed
        && !semantically_equal(spec, fixed)
    {
        errors.push(FieldError::invalid(
            &path,
            spec_value(spec),
            format!("spec of '{name}' must equal the fixed value"),
        ));
    }
    errors.extend(conditions(
        schema
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|c| c.type_.as_deref()),
    ));
    errors
}

/// Go prints such a value with `%#v`, pointer addresses included; JSON is the faithful readable stand-in.
fn spec_value<T: serde::Serialize>(spec: &T) -> BadValue {
    BadValue::Go(serde_json::to_string(spec).unwrap_or_default())
}

fn policy_rule(rule: &hub::PolicyRulesWithSubjects, path: &Path, errors: &mut Vec<FieldError>) {
    if rule.subjects.is_empty() {
        errors.push(FieldError::required(
            path.child("subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (j, subject_value) in rule.subjects.iter().enumerate() {
        subject(subject_value, &path.child("subjects").index(j), errors);
    }
    let resource_rules = rule.resource_rules.as_deref().unwrap_or_default();
    let non_resource_rules = rule.non_resource_rules.as_deref().unwrap_or_default();
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        errors.push(FieldError::required(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (k, r) in resource_rules.iter().enumerate() {
        resource_rule(r, &path.child("resourceRules").index(k), errors);
    }
    for (k, r) in non_resource_rules.iter().enumerate() {
        non_resource_rule(r, &path.child("nonResourceRules").index(k), errors);
    }
}

fn subject(subject: &hub::Subject, path: &Path, errors: &mut Vec<FieldError>) {
    // The union's members, in the order kube-apiserver reports them: (field, kind, present).
    let members = [
        (
            "serviceAccount",
            "ServiceAccount",
            subject.service_account.is_some(),
        ),
        ("user", "User", subject.user.is_some()),
        ("group", "Group", subject.group.is_some()),
    ];
    let Some(&(own, kind, present)) = members.iter().find(|(_, k, _)| *k == subject.kind) else {
        errors.push(FieldError::not_supported(
            path.child("kind"),
            BadValue::Str(subject.kind.clone()),
            SUBJECT_KINDS,
        ));
        return;
    };
    if !present {
        errors.push(FieldError::required(
            path.child(own),
            format!("{own} is required when subject kind is '{kind}'"),
        ));
    }
    match (&subject.service_account, &subject.user, &subject.group, own) {
        (Some(account), _, _, "serviceAccount") => {
            service_account(account, &path.child(own), errors)
        }
        (_, Some(user), _, "user") if user.name.is_empty() => {
            errors.push(FieldError::required(path.child(own).child("name"), ""));
        }
        (_, _, Some(group), "group") if group.name.is_empty() => {
            errors.push(FieldError::required(path.child(own).child("name"), ""));
        }
        _ => {}
    }
    for (member, member_kind, member_present) in members {
        if member != own && member_present {
            errors.push(FieldError::forbidden(
                path.child(member),
                format!("{member} is forbidden when subject kind is not '{member_kind}'"),
            ));
        }
    }
}

fn service_account(
    account: &hub::ServiceAccountSubject,
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    if account.name.is_empty() {
        errors.push(FieldError::required(path.child("name"), ""));
    } else if account.name != "*" {
        for message in dns1123_subdomain(&account.name) {
            errors.push(FieldError::invalid(
                path.child("name"),
                BadValue::Str(account.name.clone()),
                message,
            ));
        }
    }
    if account.namespace.is_empty() {
        errors.push(FieldError::required(
            path.child("namespace"),
            "must specify namespace for service account",
        ));
    } else {
        for message in dns1123_label(&account.namespace) {
            errors.push(FieldError::invalid(
                path.child("namespace"),
                BadValue::Str(account.namespace.clone()),
                message,
            ));
        }
    }
}

fn verbs(verbs: &[String], path: &Path, errors: &mut Vec<FieldError>) {
    let path = path.child("verbs");
    if verbs.is_empty() {
        errors.push(FieldError::required(
            &path,
            "verbs must contain at least one value",
        ));
    } else if verbs.iter().any(|v| v == "*") {
        if verbs.len() > 1 {
            errors.push(FieldError::invalid(
                &path,
                strings(verbs),
                "if '*' is present, must not specify other verbs",
            ));
        }
    } else if verbs.iter().any(|v| !SUPPORTED_VERBS.contains(&v.as_str())) {
        errors.push(FieldError::not_supported(
            &path,
            strings(verbs),
            SUPPORTED_VERBS,
        ));
    }
}

fn resource_rule(rule: &hub::ResourcePolicyRule, path: &Path, errors: &mut Vec<FieldError>) {
    verbs(&rule.verbs, path, errors);
    let list = |errors: &mut Vec<FieldError>,
                values: &[String],
                field: &str,
                missing: &str,
                what: &str| {
        if values.is_empty() {
            errors.push(FieldError::required(path.child(field), missing));
        } else if values.len() > 1 && values.iter().any(|v| v == "*") {
            errors.push(FieldError::invalid(
                path.child(field),
                strings(values),
                format!("if '*' is present, must not specify other {what}"),
            ));
        }
    };
    list(
        errors,
        &rule.api_groups,
        "apiGroups",
        "resource rules must supply at least one api group",
        "api groups",
    );
    list(
        errors,
        &rule.resources,
        "resources",
        "resource rules must supply at least one resource",
        "resources",
    );
    let namespaces = rule.namespaces.as_deref().unwrap_or_default();
    let namespaces_path = path.child("namespaces");
    if namespaces.is_empty() {
        if !rule.cluster_scope.unwrap_or_default() {
            errors.push(FieldError::required(
                &namespaces_path,
                "resource rules that are not cluster scoped must supply at least one namespace",
            ));
        }
    } else if namespaces.iter().any(|n| n == "*") {
        if namespaces.len() > 1 {
            errors.push(FieldError::invalid(
                &namespaces_path,
                strings(namespaces),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (index, namespace) in namespaces.iter().enumerate() {
            for message in dns1123_label(namespace) {
                errors.push(FieldError::invalid(
                    namespaces_path.index(index),
                    BadValue::Str(namespace.clone()),
                    format!("each member of this list must be '*' or a DNS-1123 label; {message}"),
                ));
            }
        }
    }
}

fn non_resource_rule(rule: &hub::NonResourcePolicyRule, path: &Path, errors: &mut Vec<FieldError>) {
    verbs(&rule.verbs, path, errors);
    let urls = &rule.non_resource_urls;
    let urls_path = path.child("nonResourceURLs");
    if urls.is_empty() {
        errors.push(FieldError::required(
            &urls_path,
            "nonResourceURLs must contain at least one value",
        ));
        return;
    }
    if urls.iter().any(|u| u == "*") {
        if urls.len() > 1 {
            errors.push(FieldError::invalid(
                &urls_path,
                strings(urls),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
        return;
    }
    for (index, url) in urls.iter().enumerate() {
        if let Some(message) = non_resource_url_error(url) {
            errors.push(FieldError::invalid(
                urls_path.index(index),
                BadValue::Str(url.clone()),
                message,
            ));
        }
    }
}

/// The first rule a non-resource URL breaks, in kube-apiserver's order.
fn non_resource_url_error(url: &str) -> Option<&'static str> {
    if url.is_empty() {
        return Some("must not be empty");
    }
    if url == "/" {
        return None;
    }
    if !url.starts_with('/') {
        return Some("must start with slash");
    }
    if url.contains(' ') {
        return Some("must not contain white-space");
    }
    if url.contains("//") {
        return Some("must not contain double slash");
    }
    let stars = url.matches('*').count();
    if stars > 1 || (stars == 1 && !url.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

/// Validates a PriorityLevelConfiguration.
pub fn priority_level_configuration(
    level: &hub::PriorityLevelConfiguration,
    options: &Options<'_>,
) -> Vec<FieldError> {
    let mut errors = cluster_scoped_meta(&level.metadata, dns1123_subdomain);
    if level
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(PRESERVE_ZERO))
    {
        errors.push(FieldError::forbidden(
            "metadata.annotations",
            format!("annotation '{PRESERVE_ZERO}' is forbidden"),
        ));
    }
    let name = level.metadata.name.as_deref().unwrap_or_default();
    let spec = &level.spec;
    let path = Path::new("spec");
    if (name == "exempt") != (spec.type_ == "Exempt") {
        errors.push(FieldError::invalid(
            path.child("type"),
            BadValue::Str(spec.type_.clone()),
            "must be 'Exempt' if and only if `name` is 'exempt'",
        ));
    }
    // The union's errors are 1.37's declarative validation's (`+k8s:unionMember`,
    // `+k8s:required`), which take the place of the handwritten ones they cover: no detail.
    match spec.type_.as_str() {
        "Exempt" => {
            if spec.limited.is_some() {
                errors.push(FieldError::forbidden(path.child("limited"), ""));
            }
            if let Some(exempt) = &spec.exempt {
                let exempt_path = path.child("exempt");
                if let Some(shares) = exempt.nominal_concurrency_shares.filter(|s| *s < 0) {
                    errors.push(FieldError::invalid(
                        exempt_path.child("nominalConcurrencyShares"),
                        BadValue::Int(shares.into()),
                        "must be a non-negative integer",
                    ));
                }
                if let Some(lendable) = exempt.lendable_percent.filter(|p| !(0..=100).contains(p)) {
                    errors.push(FieldError::invalid(
                        exempt_path.child("lendablePercent"),
                        BadValue::Int(lendable.into()),
                        "must be between 0 and 100, inclusive",
                    ));
                }
            }
        }
        "Limited" => {
            if spec.exempt.is_some() {
                errors.push(FieldError::forbidden(path.child("exempt"), ""));
            }
            match &spec.limited {
                None => errors.push(FieldError::required(path.child("limited"), "")),
                Some(limited) => {
                    limited_configuration(limited, &path.child("limited"), options, &mut errors)
                }
            }
        }
        "" => errors.push(FieldError::required(path.child("type"), "")),
        other => errors.push(FieldError::not_supported(
            path.child("type"),
            BadValue::Str(other.to_owned()),
            ENABLEMENTS,
        )),
    }
    match name {
        "exempt" => {
            let mut compared = spec.clone();
            compared
                .exempt
                .clone_from(&mandatory::EXEMPT_PRIORITY_LEVEL.exempt);
            if !semantically_equal(&compared, &*mandatory::EXEMPT_PRIORITY_LEVEL) {
                errors.push(FieldError::invalid(
                    &path,
                    spec_value(spec),
                    "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value",
                ));
            }
        }
        "catch-all" if !semantically_equal(spec, &*mandatory::CATCH_ALL_PRIORITY_LEVEL) => {
            errors.push(FieldError::invalid(
                &path,
                spec_value(spec),
                "spec of 'catch-all' must equal the fixed value",
            ));
        }
        _ => {}
    }
    errors.extend(conditions(
        level
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|c| c.type_.as_deref()),
    ));
    errors
}

fn limited_configuration(
    limited: &hub::LimitedPriorityLevelConfiguration,
    path: &Path,
    options: &Options<'_>,
    errors: &mut Vec<FieldError>,
) {
    let shares_path = path.child(options.shares_field());
    if let Some(shares) = limited.nominal_concurrency_shares {
        let old_zero = options
            .old_priority_level
            .and_then(|old| old.spec.limited.as_ref())
            .is_some_and(|old| old.nominal_concurrency_shares == Some(0));
        if options.allow_zero_shares || old_zero {
            if shares < 0 {
                errors.push(FieldError::invalid(
                    &shares_path,
                    BadValue::Int(shares.into()),
                    "must be a non-negative integer",
                ));
            }
        } else if shares <= 0 {
            errors.push(FieldError::invalid(
                &shares_path,
                BadValue::Int(shares.into()),
                "must be positive",
            ));
        }
    }
    limit_response(
        &limited.limit_response,
        &path.child("limitResponse"),
        errors,
    );
    if let Some(lendable) = limited.lendable_percent.filter(|p| !(0..=100).contains(p)) {
        errors.push(FieldError::invalid(
            path.child("lendablePercent"),
            BadValue::Int(lendable.into()),
            "must be between 0 and 100, inclusive",
        ));
    }
    if let Some(limit) = limited.borrowing_limit_percent.filter(|p| *p < 0) {
        errors.push(FieldError::invalid(
            path.child("borrowingLimitPercent"),
            BadValue::Int(limit.into()),
            "if specified, must be a non-negative integer",
        ));
    }
}

fn limit_response(response: &hub::LimitResponse, path: &Path, errors: &mut Vec<FieldError>) {
    // 1.37's declarative validation answers for the union (no detail), as above.
    match response.type_.as_str() {
        "Reject" => {
            if response.queuing.is_some() {
                errors.push(FieldError::forbidden(path.child("queuing"), ""));
            }
        }
        "Queue" => match &response.queuing {
            None => errors.push(FieldError::required(path.child("queuing"), "")),
            Some(queuing) => queuing_configuration(queuing, &path.child("queuing"), errors),
        },
        "" => errors.push(FieldError::required(path.child("type"), "")),
        other => errors.push(FieldError::not_supported(
            path.child("type"),
            BadValue::Str(other.to_owned()),
            LIMIT_RESPONSE_TYPES,
        )),
    }
}

fn queuing_configuration(
    queuing: &hub::QueuingConfiguration,
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    let queue_length_limit = queuing.queue_length_limit.unwrap_or_default();
    if queue_length_limit <= 0 {
        errors.push(FieldError::invalid(
            path.child("queueLengthLimit"),
            BadValue::Int(queue_length_limit.into()),
            "must be positive",
        ));
    }
    let queues = queuing.queues.unwrap_or_default();
    if queues <= 0 {
        errors.push(FieldError::invalid(
            path.child("queues"),
            BadValue::Int(queues.into()),
            "must be positive",
        ));
    } else if queues > MAX_QUEUES {
        errors.push(FieldError::invalid(
            path.child("queues"),
            BadValue::Int(queues.into()),
            format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand_size = queuing.hand_size.unwrap_or_default();
    if hand_size <= 0 {
        errors.push(FieldError::invalid(
            path.child("handSize"),
            BadValue::Int(hand_size.into()),
            "must be positive",
        ));
    } else if hand_size > queues {
        errors.push(FieldError::invalid(
            path.child("handSize"),
            BadValue::Int(hand_size.into()),
            format!("should not be greater than queues ({queues})"),
        ));
    } else if (f64::from(queues).log2() * f64::from(hand_size)).ceil() > MAX_HASH_BITS {
        errors.push(FieldError::invalid(
            path.child("handSize"),
            BadValue::Int(hand_size.into()),
            format!("required entropy bits of deckSize {queues} and handSize {hand_size} should not be greater than {MAX_HASH_BITS}"),
        ));
    }
}

/// Condition types: each present and unique (`ValidateFlowSchemaCondition` and its
/// PriorityLevelConfiguration twin in `validation.go`).
pub(super) fn conditions<'a>(types: impl Iterator<Item = Option<&'a str>>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let path = Path::new("status").child("conditions");
    for (index, condition_type) in types.enumerate() {
        let condition_type = condition_type.unwrap_or_default();
        let type_path = path.index(index).child("type");
        if condition_type.is_empty() {
            errors.push(FieldError::required(&type_path, "must not be empty"));
        } else if !seen.insert(condition_type) {
            errors.push(FieldError::duplicate(
                &type_path,
                BadValue::Str(condition_type.to_owned()),
            ));
        }
    }
    errors
}
