//! Validation of APIService hub objects (`ValidateAPIService` in kube-aggregator's
//! `pkg/apis/apiregistration/validation/validation.go`).

use super::field::{BadValue, FieldError, Path};
use super::names::{cluster_scoped_meta, dns1035_label, dns1123_subdomain};
use apfkit_types::hub::apiregistration as hub;

const CONDITION_STATUSES: &[&str] = &["True", "False", "Unknown"];

/// The name rules of an APIService: a valid path segment, equal to `<version>.<group>`.
fn name_errors(name: &str, required_name: &str) -> Vec<String> {
    let segment = match name {
        "." => vec!["may not be '.'".to_owned()],
        ".." => vec!["may not be '..'".to_owned()],
        _ => ["/", "%"]
            .iter()
            .filter(|bad| name.contains(**bad))
            .map(|bad| format!("may not contain '{bad}'"))
            .collect(),
    };
    if !segment.is_empty() {
        return segment;
    }
    if name != required_name {
        return vec![format!(
            "must be `spec.version+\".\"+spec.group`: {:?}",
            required_name
        )];
    }
    Vec::new()
}

/// Number of bytes a base64 text decodes to (the wire form of `caBundle`).
fn decoded_len(base64: &str) -> usize {
    let text = base64.trim_end();
    let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
    (text.len() / 4 * 3
        + match text.len() % 4 {
            2 => 1,
            3 => 2,
            _ => 0,
        })
    .saturating_sub(padding)
}

/// Validates an APIService, its status conditions included.
pub fn api_service(service: &hub::APIService) -> Vec<FieldError> {
    let spec = &service.spec;
    let group = spec.group.as_deref().unwrap_or_default();
    let version = spec.version.as_deref().unwrap_or_default();
    let required_name = format!("{version}.{group}");
    let mut errors =
        cluster_scoped_meta(&service.metadata, |name| name_errors(name, &required_name));
    let path = Path::new("spec");
    if group.is_empty() {
        if version != "v1" {
            errors.push(FieldError::required(
                path.child("group"),
                "only v1 may have an empty group and it better be legacy kube",
            ));
        }
    } else {
        for message in dns1123_subdomain(group) {
            errors.push(FieldError::invalid(
                path.child("group"),
                BadValue::Str(group.to_owned()),
                message,
            ));
        }
    }
    for message in dns1035_label(version) {
        errors.push(FieldError::invalid(
            path.child("version"),
            BadValue::Str(version.to_owned()),
            message,
        ));
    }
    if spec.group_priority_minimum <= 0 || spec.group_priority_minimum > 20_000 {
        errors.push(FieldError::invalid(
            path.child("groupPriorityMinimum"),
            BadValue::Int(spec.group_priority_minimum.into()),
            "must be positive and less than 20000",
        ));
    }
    if spec.version_priority <= 0 || spec.version_priority > 1000 {
        errors.push(FieldError::invalid(
            path.child("versionPriority"),
            BadValue::Int(spec.version_priority.into()),
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = spec.ca_bundle.as_deref().unwrap_or_default();
    let skip_verify = spec.insecure_skip_tls_verify.unwrap_or_default();
    match &spec.service {
        None => {
            if !ca_bundle.is_empty() {
                errors.push(FieldError::invalid(
                    path.child("caBundle"),
                    BadValue::Str(format!("{} bytes", decoded_len(ca_bundle))),
                    "local APIServices may not have a caBundle",
                ));
            }
            if skip_verify {
                errors.push(FieldError::invalid(
                    path.child("insecureSkipTLSVerify"),
                    BadValue::Go("true".to_owned()),
                    "local APIServices may not have insecureSkipTLSVerify",
                ));
            }
        }
        Some(reference) => {
            let service_path = path.child("service");
            if reference
                .namespace
                .as_deref()
                .unwrap_or_default()
                .is_empty()
            {
                errors.push(FieldError::required(service_path.child("namespace"), ""));
            }
            if reference.name.as_deref().unwrap_or_default().is_empty() {
                errors.push(FieldError::required(service_path.child("name"), ""));
            }
            if !(1..=65535).contains(&reference.port) {
                errors.push(FieldError::invalid(
                    service_path.child("port"),
                    BadValue::Int(reference.port.into()),
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
            if skip_verify && !ca_bundle.is_empty() {
                errors.push(FieldError::invalid(
                    path.child("insecureSkipTLSVerify"),
                    BadValue::Go("true".to_owned()),
                    "may not be true if caBundle is present",
                ));
            }
        }
    }
    let conditions = service
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    for (index, condition) in conditions.iter().enumerate() {
        if !CONDITION_STATUSES.contains(&condition.status.as_str()) {
            errors.push(FieldError::not_supported(
                Path::new("status")
                    .child("conditions")
                    .index(index)
                    .child("status"),
                BadValue::Str(condition.status.clone()),
                CONDITION_STATUSES,
            ));
        }
    }
    errors
}
