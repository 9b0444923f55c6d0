//! core/v1 Services as kube-apiserver serves them, for what the aggregator resolves through
//! them: read as k8s-openapi's `Service` reads them, defaulted as kubernetes
//! `pkg/apis/core/v1/defaults.go` (`SetDefaults_Service`) defaults them, checked as
//! `pkg/apis/core/validation/validation.go` (`ValidateService`) checks the fields kept here,
//! and printed with `kubectl get services`' columns (`pkg/printers/internalversion`). No
//! cluster IPs or node ports are allocated: there is no service network here
//! (docs/decisions.md).

use std::collections::BTreeSet;
use std::net::IpAddr;

use apfkit_apiserver::table::{
    Column, Printer, age, column, creation_column, field_doc, name_cell, name_column, now_seconds,
};
use apfkit_runtime::field::{BadValue, FieldError, Path, names};
use apfkit_runtime::scheme::{SchemeError, UnknownFields, Warning};
use k8s_openapi::api::core::v1::{Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

/// The types of Service (`supportedServiceType`).
const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
/// The session affinities (`supportedSessionAffinityType`).
const AFFINITIES: &[&str] = &["ClientIP", "None"];
/// The port protocols (`supportedPortProtocols`).
pub(crate) const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
/// kube-apiserver's default `--service-node-port-range`.
const NODE_PORTS: std::ops::RangeInclusive<i32> = 30_000..=32_767;
/// `v1.DefaultClientIPServiceAffinitySeconds`.
const DEFAULT_AFFINITY_SECONDS: i64 = 10_800;

/// A new Service as Go writes it: `spec`, `status` and its `loadBalancer` are structs.
pub(crate) fn zero() -> Value {
    serde_json::json!({"spec": {}, "status": {"loadBalancer": {}}})
}

/// A Service read as kube-apiserver reads it: as k8s-openapi's type, then defaulted, in the
/// shape Go gives it.
pub(crate) fn normalize(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    let mut kept = apfkit_apiextensions::json_kind::typed::<Service>(object, unknown, warnings)?;
    apply_defaults(&mut kept);
    apfkit_apiserver::go_shape::as_decoded(&mut kept);
    Ok(kept)
}

/// The spec of a headless Service, the only kind whose IP families this server fills in
/// (it allocates no cluster IPs, decision 207); `None` for any other.
fn headless_spec(service: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let spec = service.get_mut("spec")?.as_object_mut()?;
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    let external = spec.get("type").and_then(Value::as_str) == Some("ExternalName");
    (headless && !external).then_some(spec)
}

/// The IP families of a spec (`[]` when none).
fn families(spec: &Value) -> Vec<Value> {
    spec.get("ipFamilies")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn selectorless(spec: &serde_json::Map<String, Value>) -> bool {
    spec.get("selector")
        .and_then(Value::as_object)
        .is_none_or(serde_json::Map::is_empty)
}

/// The IP families of a headless Service, as kube-apiserver's Service storage fills them in
/// on every write (`normalizeClusterIPs` and `initIPFamilyFields`, on a cluster whose one
/// family is IPv4): `clusterIPs` from `clusterIP`; the policy kept from the stored Service,
/// else `RequireDualStack` without a selector and `SingleStack` with one; a single-stack
/// update's second family dropped when the families are unchanged; without a selector, the
/// cluster's family and, unless single-stack, the other one.
pub(crate) fn init_ip_families(service: &mut Value, old: Option<&Value>) {
    let old_spec = old.map(|old| old["spec"].clone());
    let Some(spec) = headless_spec(service) else {
        return;
    };
    let unset = |spec: &serde_json::Map<String, Value>, name: &str| {
        spec.get(name)
            .is_none_or(|v| v.is_null() || v.as_array().is_some_and(Vec::is_empty))
    };
    if unset(spec, "clusterIPs") {
        spec.insert("clusterIPs".into(), json!(["None"]));
    }
    if unset(spec, "ipFamilyPolicy") {
        let kept = old_spec
            .as_ref()
            .and_then(|old| old.get("ipFamilyPolicy"))
            .filter(|policy| policy.is_string())
            .cloned();
        let policy = kept.unwrap_or_else(|| {
            if selectorless(spec) {
                "RequireDualStack".into()
            } else {
                "SingleStack".into()
            }
        });
        spec.insert("ipFamilyPolicy".into(), policy);
    }
    if let Ok(families) = ip_families(spec, old_spec.as_ref()) {
        spec.insert("ipFamilies".into(), Value::Array(families));
    }
}

/// The rest of `initIPFamilyFields` on this single-stack IPv4 cluster, once the policy is
/// set: the families a headless Service ends with, or what is refused (checked before the
/// Service's validation and answered alone): a secondary family released without
/// `SingleStack`, two families with it, and, with a selector, dual-stack or a family other
/// than IPv4. A single-stack update whose families are unchanged drops the second one
/// first; without a selector, the cluster's family and (unless single-stack) the other.
fn ip_families(
    spec: &serde_json::Map<String, Value>,
    old_spec: Option<&Value>,
) -> Result<Vec<Value>, Vec<FieldError>> {
    let policy = spec
        .get("ipFamilyPolicy")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let single = policy == "SingleStack";
    let policy_error = |message: &str| {
        FieldError::invalid(
            Path::new("spec").child("ipFamilyPolicy"),
            BadValue::Str(policy.to_owned()),
            message,
        )
    };
    let mut given = families(&Value::Object(spec.clone()));
    let mut errors = Vec::new();
    if let Some(old) = old_spec {
        let old_families = families(old);
        if single {
            if given.len() > 1 && old_families == given {
                given.truncate(1);
            }
        } else if !given.is_empty() && given.len() < old_families.len() {
            errors.push(policy_error(
                "must be 'SingleStack' to release the secondary IP family",
            ));
        }
    }
    if single && given.len() == 2 {
        errors.push(policy_error(
            "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are \
             specified",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if selectorless(spec) {
        if given.is_empty() {
            given.push("IPv4".into());
        }
        if given.len() < 2 && !single {
            given.push(if given[0] == "IPv4" { "IPv6" } else { "IPv4" }.into());
        }
        return Ok(given);
    }
    if policy == "RequireDualStack" {
        errors.push(policy_error(
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (index, family) in given.iter().enumerate() {
        if family != "IPv4" {
            errors.push(FieldError::invalid(
                Path::new("spec").child("ipFamilies").index(index),
                BadValue::Str(family.as_str().unwrap_or_default().to_owned()),
                "not configured on this cluster",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if given.is_empty() {
        given.push("IPv4".into());
    }
    Ok(given)
}

/// What [`ip_families`] refuses of a Service as its storage prepared it.
fn ip_family_errors(service: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut service = service.clone();
    let Some(spec) = headless_spec(&mut service) else {
        return Vec::new();
    };
    ip_families(spec, old.map(|old| &old["spec"]))
        .err()
        .unwrap_or_default()
}

/// kube-apiserver's warnings of a Service write (`GetWarningsForService`), but those about
/// the spelling of IP addresses and CIDRs.
pub(crate) fn warnings(service: &Value) -> Vec<String> {
    let spec = &service["spec"];
    let text = |name: &str| spec[name].as_str().unwrap_or_default();
    let has_external_ips = spec["externalIPs"]
        .as_array()
        .is_some_and(|ips| !ips.is_empty());
    let service_type = text("type");
    let headless = service_type == "ClusterIP" && text("clusterIP") == "None";
    let mut warnings = Vec::new();
    if service["metadata"]["annotations"]
        .get("service.kubernetes.io/topology-aware-hints")
        .is_some()
    {
        warnings.push(
            "annotation service.kubernetes.io/topology-aware-hints is deprecated, please use \
             service.kubernetes.io/topology-mode instead"
                .to_owned(),
        );
    }
    if headless {
        if !text("loadBalancerIP").is_empty() {
            warnings.push("spec.loadBalancerIP is ignored for headless services".to_owned());
        }
        if has_external_ips {
            warnings.push("spec.externalIPs is ignored for headless services".to_owned());
        }
        if text("sessionAffinity") != "None" {
            warnings.push("spec.SessionAffinity is ignored for headless services".to_owned());
        }
    }
    if has_external_ips && !headless && service_type != "ExternalName" {
        warnings.push(
            "spec.externalIPs is deprecated and may no longer be implemented in some clusters"
                .to_owned(),
        );
    }
    if service_type == "ExternalName" && has_external_ips {
        warnings.push("spec.externalIPs is ignored when spec.type is \"ExternalName\"".to_owned());
    }
    if service_type != "ExternalName" && !text("externalName").is_empty() {
        warnings
            .push("spec.externalName is ignored when spec.type is not \"ExternalName\"".to_owned());
    }
    if text("trafficDistribution") == "PreferClose" {
        warnings.push(
            "spec.trafficDistribution: \"PreferClose\" is deprecated; use \"PreferSameZone\""
                .to_owned(),
        );
    }
    warnings
}

/// `SetDefaults_Service` on a Service as JSON.
fn apply_defaults(service: &mut Value) {
    let Some(object) = service.as_object_mut() else {
        return;
    };
    let spec = object.entry("spec").or_insert_with(|| json!({}));
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    let text = |spec: &serde_json::Map<String, Value>, name: &str| {
        spec.get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    if text(spec, "sessionAffinity").is_empty() {
        spec.insert("sessionAffinity".into(), "None".into());
    }
    match text(spec, "sessionAffinity").as_str() {
        "None" => {
            spec.remove("sessionAffinityConfig");
        }
        "ClientIP" => {
            let timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"));
            if timeout.is_none() {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": DEFAULT_AFFINITY_SECONDS}}),
                );
            }
        }
        _ => {}
    }
    if text(spec, "type").is_empty() {
        spec.insert("type".into(), "ClusterIP".into());
    }
    let service_type = text(spec, "type");
    for port in spec
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(port) = port.as_object_mut() else {
            continue;
        };
        if port
            .get("protocol")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            port.insert("protocol".into(), "TCP".into());
        }
        let unset = match port.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if unset {
            let number = port.get("port").cloned().unwrap_or_else(|| 0.into());
            port.insert("targetPort".into(), number);
        }
    }
    let external = matches!(service_type.as_str(), "NodePort" | "LoadBalancer");
    if external && text(spec, "externalTrafficPolicy").is_empty() {
        spec.insert("externalTrafficPolicy".into(), "Cluster".into());
    }
    if (external || service_type == "ClusterIP") && !spec.contains_key("internalTrafficPolicy") {
        spec.insert("internalTrafficPolicy".into(), "Cluster".into());
    }
    if service_type == "LoadBalancer" && !spec.contains_key("allocateLoadBalancerNodePorts") {
        spec.insert("allocateLoadBalancerNodePorts".into(), true.into());
    }
    object
        .entry("status")
        .or_insert_with(|| json!({"loadBalancer": {}}));
}

/// `ValidateService` (and `ValidateServiceUpdate`'s immutable cluster IP) on the fields kept
/// here, with kube-apiserver's paths and messages.
pub(crate) fn validate(object: &Value, old: Option<&Value>) -> Vec<FieldError> {
    // The Service storage's `BeginCreate`/`BeginUpdate` refuse these before the strategy
    // validates anything.
    let refused = ip_family_errors(object, old);
    if !refused.is_empty() {
        return refused;
    }
    let (service, mut errors) =
        match crate::typed_with_metadata::<Service>(object, names::dns1035_label) {
            Ok(read) => read,
            Err(errors) => return errors,
        };
    let spec = service.spec.unwrap_or_default();
    let path = Path::new("spec");
    let service_type = spec.type_.clone().unwrap_or_default();
    let cluster_ip = spec.cluster_ip.clone().unwrap_or_default();
    let headless = cluster_ip == "None";
    let ports = spec.ports.clone().unwrap_or_default();
    if ports.is_empty() && !headless && service_type != "ExternalName" {
        errors.push(FieldError::required(path.child("ports"), ""));
    }
    match service_type.as_str() {
        "LoadBalancer" | "NodePort" if headless => errors.push(FieldError::invalid(
            path.child("clusterIP"),
            BadValue::Str(cluster_ip.clone()),
            format!("may not be set to 'None' for {service_type} services"),
        )),
        "ExternalName" => {
            if !cluster_ip.is_empty() {
                errors.push(FieldError::forbidden(
                    path.child("clusterIP"),
                    "may not be set for ExternalName services",
                ));
            }
            let name = spec.external_name.clone().unwrap_or_default();
            if name.is_empty() {
                errors.push(FieldError::required(path.child("externalName"), ""));
            }
            for message in names::dns1123_subdomain(name.trim_end_matches('.')) {
                if !name.is_empty() {
                    errors.push(FieldError::invalid(
                        path.child("externalName"),
                        BadValue::Str(name.clone()),
                        message,
                    ));
                }
            }
        }
        _ => {}
    }
    let mut names_seen = BTreeSet::new();
    for (index, port) in ports.iter().enumerate() {
        errors.extend(service_port(
            port,
            ports.len() > 1,
            &mut names_seen,
            &path.child("ports").index(index),
        ));
    }
    let affinity = spec.session_affinity.clone().unwrap_or_default();
    if affinity.is_empty() {
        errors.push(FieldError::required(path.child("sessionAffinity"), ""));
    } else if !AFFINITIES.contains(&affinity.as_str()) {
        errors.push(FieldError::not_supported(
            path.child("sessionAffinity"),
            BadValue::Str(affinity),
            AFFINITIES,
        ));
    }
    if !cluster_ip.is_empty() && !headless && cluster_ip.parse::<IpAddr>().is_err() {
        errors.push(FieldError::invalid(
            path.child("clusterIP"),
            BadValue::Str(cluster_ip.clone()),
            "must be empty, 'None', or a valid IP address",
        ));
    }
    for (index, ip) in spec.external_ips.iter().flatten().enumerate() {
        if ip.parse::<IpAddr>().is_err() {
            errors.push(FieldError::invalid(
                path.child("externalIPs").index(index),
                BadValue::Str(ip.clone()),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    if service_type.is_empty() {
        errors.push(FieldError::required(path.child("type"), ""));
    } else if !TYPES.contains(&service_type.as_str()) {
        errors.push(FieldError::not_supported(
            path.child("type"),
            BadValue::Str(service_type.clone()),
            TYPES,
        ));
    }
    if service_type == "ClusterIP" {
        for (index, port) in ports.iter().enumerate() {
            if port.node_port.unwrap_or_default() != 0 {
                errors.push(FieldError::forbidden(
                    path.child("ports").index(index).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut seen = BTreeSet::new();
    for (index, port) in ports.iter().enumerate() {
        let protocol = port.protocol.clone().unwrap_or_default();
        if !seen.insert((protocol.clone(), port.port)) {
            errors.push(FieldError::duplicate(
                path.child("ports").index(index),
                BadValue::Go(format!(
                    "core.ServicePort{{Name:\"\", Protocol:\"{protocol}\", \
                     AppProtocol:(*string)(nil), Port:{}, TargetPort:intstr.IntOrString{{Type:0, \
                     IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                    port.port
                )),
            ));
        }
    }
    if let Some(old) = old {
        let old_ip = old
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let old_type = old
            .pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if service_type != "ExternalName"
            && old_type != "ExternalName"
            && !old_ip.is_empty()
            && old_ip != cluster_ip
        {
            errors.push(FieldError::invalid(
                path.child("clusterIP"),
                BadValue::Str(cluster_ip),
                "field is immutable",
            ));
        }
    }
    // The node port allocator's check, after validation passed: a port asked for must be
    // in kube-apiserver's default range (`--service-node-port-range`).
    if errors.is_empty() {
        for (index, port) in ports.iter().enumerate() {
            let node_port = port.node_port.unwrap_or_default();
            if node_port != 0 && !NODE_PORTS.contains(&node_port) {
                errors.push(FieldError::invalid(
                    path.child("ports").index(index).child("nodePort"),
                    BadValue::Int(i64::from(node_port)),
                    format!(
                        "provided port is not in the valid range. The range of valid ports is \
                         {}-{}",
                        NODE_PORTS.start(),
                        NODE_PORTS.end()
                    ),
                ));
            }
        }
    }
    errors
}

/// `validateServicePort`.
fn service_port(
    port: &ServicePort,
    name_required: bool,
    names_seen: &mut BTreeSet<String>,
    path: &Path,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = port.name.clone().unwrap_or_default();
    if name_required && name.is_empty() {
        errors.push(FieldError::required(path.child("name"), ""));
    } else if !name.is_empty() {
        for message in names::dns1123_label(&name) {
            errors.push(FieldError::invalid(
                path.child("name"),
                BadValue::Str(name.clone()),
                message,
            ));
        }
        if !names_seen.insert(name.clone()) {
            errors.push(FieldError::duplicate(
                path.child("name"),
                BadValue::Str(name),
            ));
        }
    }
    if !(1..=65_535).contains(&port.port) {
        errors.push(FieldError::invalid(
            path.child("port"),
            BadValue::Int(port.port.into()),
            PORT_RANGE,
        ));
    }
    let protocol = port.protocol.clone().unwrap_or_default();
    if protocol.is_empty() {
        errors.push(FieldError::required(path.child("protocol"), ""));
    } else if !PROTOCOLS.contains(&protocol.as_str()) {
        errors.push(FieldError::not_supported(
            path.child("protocol"),
            BadValue::Str(protocol),
            PROTOCOLS,
        ));
    }
    match &port.target_port {
        Some(IntOrString::Int(number)) if !(1..=65_535).contains(number) => {
            errors.push(FieldError::invalid(
                path.child("targetPort"),
                BadValue::Int((*number).into()),
                PORT_RANGE,
            ));
        }
        Some(IntOrString::String(name)) => {
            for message in port_name(name) {
                errors.push(FieldError::invalid(
                    path.child("targetPort"),
                    BadValue::Str(name.clone()),
                    message,
                ));
            }
        }
        _ => {}
    }
    errors
}

/// `validation.InclusiveRangeError(1, 65535)`.
pub(crate) const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// apimachinery's `IsValidPortName` (an IANA service name).
pub(crate) fn port_name(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > 15 {
        errors.push("must be no more than 15 characters".to_owned());
    }
    let bytes = name.as_bytes();
    if name.is_empty()
        || !bytes
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    {
        errors.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned(),
        );
    } else if !bytes.iter().any(u8::is_ascii_lowercase) {
        errors.push("must contain at least one letter (a-z)".to_owned());
    } else if name.contains("--") {
        errors.push("must not contain consecutive hyphens".to_owned());
    } else if name.starts_with('-') || name.ends_with('-') {
        errors.push("must not begin or end with a hyphen".to_owned());
    }
    errors
}

/// A string column described by the documentation of the `ServiceSpec` field it shows.
fn spec_field(name: &'static str, property: &str, priority: i32) -> Column {
    column(
        name,
        "string",
        priority,
        field_doc("io.k8s.api.core.v1.ServiceSpec", property),
    )
}

/// `serviceColumnDefinitions`, each described by the `ServiceSpec` field it shows.
fn columns() -> Vec<Column> {
    vec![
        name_column(),
        spec_field("Type", "type", 0),
        spec_field("Cluster-IP", "clusterIP", 0),
        spec_field("External-IP", "externalIPs", 0),
        spec_field("Port(s)", "ports", 0),
        creation_column("Age", "string"),
        spec_field("Selector", "selector", 1),
    ]
}

/// `printService`'s cells.
fn cells(object: &Value) -> Vec<Value> {
    let service: Service = serde_json::from_value(object.clone()).unwrap_or_default();
    let spec = service.spec.unwrap_or_default();
    let service_type = spec.type_.clone().unwrap_or_default();
    let cluster_ip = spec
        .cluster_ips
        .as_ref()
        .and_then(|ips| ips.first().cloned())
        .or_else(|| spec.cluster_ip.clone().filter(|ip| !ip.is_empty()))
        .unwrap_or_else(|| "<none>".to_owned());
    let external_ips = spec.external_ips.clone().unwrap_or_default();
    let external = match service_type.as_str() {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_owned(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            let ingress: Vec<String> = service
                .status
                .and_then(|s| s.load_balancer)
                .and_then(|lb| lb.ingress)
                .into_iter()
                .flatten()
                .filter_map(|i| i.ip.or(i.hostname).filter(|a| !a.is_empty()))
                .collect();
            let mut all = external_ips;
            all.extend(ingress);
            if all.is_empty() {
                "<pending>".to_owned()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => spec.external_name.clone().unwrap_or_default(),
        _ => "<unknown>".to_owned(),
    };
    let ports: Vec<String> = spec
        .ports
        .iter()
        .flatten()
        .map(|port| {
            let protocol = port.protocol.clone().unwrap_or_default();
            match port.node_port.unwrap_or_default() {
                0 => format!("{}/{protocol}", port.port),
                node => format!("{}:{node}/{protocol}", port.port),
            }
        })
        .collect();
    let selector: Vec<String> = spec
        .selector
        .iter()
        .flatten()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let or_none = |text: String| {
        if text.is_empty() {
            "<none>".to_owned()
        } else {
            text
        }
    };
    vec![
        name_cell(object),
        service_type.into(),
        cluster_ip.into(),
        external.into(),
        or_none(ports.join(",")).into(),
        age(object, now_seconds()),
        or_none(selector.join(",")).into(),
    ]
}

/// The columns of `kubectl get services`.
pub(crate) fn printer() -> Printer {
    Printer::of("v1", columns(), cells)
}

#[cfg(test)]
mod tests {

    #[test]
    fn writes_are_warned_about_as_kube_apiserver_warns() {
        let warned = |spec: Value| warnings(&json!({"metadata": {}, "spec": spec}));
        assert_eq!(
            warned(
                json!({"type": "ClusterIP", "clusterIP": "None", "sessionAffinity": "ClientIP",
                          "externalIPs": ["1.2.3.4"]})
            ),
            [
                "spec.externalIPs is ignored for headless services",
                "spec.SessionAffinity is ignored for headless services",
            ]
        );
        assert_eq!(
            warned(json!({"type": "NodePort", "sessionAffinity": "None",
                          "externalIPs": ["1.2.3.4"], "externalName": "x.example"})),
            [
                "spec.externalIPs is deprecated and may no longer be implemented in some clusters",
                "spec.externalName is ignored when spec.type is not \"ExternalName\"",
            ]
        );
        assert!(warned(json!({"type": "ClusterIP", "sessionAffinity": "None"})).is_empty());
    }
    use super::*;

    /// A headless Service's spec as its storage prepares it (given the stored one on an
    /// update), and the messages of what it then refuses.
    fn prepared(spec: Value, old: Option<Value>) -> (Value, Vec<String>) {
        let mut service = json!({"metadata": {"name": "s"}, "spec": spec});
        let old = old.map(|spec| json!({"metadata": {"name": "s"}, "spec": spec}));
        init_ip_families(&mut service, old.as_ref());
        let refused = ip_family_errors(&service, old.as_ref())
            .iter()
            .map(ToString::to_string)
            .collect();
        (service["spec"].clone(), refused)
    }

    #[test]
    fn a_headless_services_families_follow_initipfamilyfields() {
        let dual = json!({"clusterIP": "None", "clusterIPs": ["None"],
            "ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"]});
        // Made without a selector: both families; with one: the cluster's.
        assert_eq!(
            prepared(json!({"clusterIP": "None"}), None),
            (dual.clone(), vec![])
        );
        let (single, refused) =
            prepared(json!({"clusterIP": "None", "selector": {"a": "b"}}), None);
        assert!(refused.is_empty());
        assert_eq!(single["ipFamilyPolicy"], "SingleStack");
        assert_eq!(single["ipFamilies"], json!(["IPv4"]));
        // A selector added later keeps the stored policy, which this cluster cannot serve.
        let mut with_selector = dual.clone();
        with_selector["selector"] = json!({"a": "b"});
        let (_, refused) = prepared(with_selector.clone(), Some(dual.clone()));
        assert_eq!(
            refused,
            [
                "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not \
                 configured for dual-stack services",
                "spec.ipFamilies[1]: Invalid value: \"IPv6\": not configured on this cluster",
            ]
        );
        // An update naming no policy or families: the stored policy, no family released.
        let (_, refused) = prepared(
            json!({"clusterIP": "None", "selector": {"a": "b"}}),
            Some(dual.clone()),
        );
        assert_eq!(
            refused,
            [
                "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not \
              configured for dual-stack services"
            ]
        );
        // Releasing a family takes `SingleStack`, which drops the second of unchanged ones.
        let mut released = dual.clone();
        released["ipFamilies"] = json!(["IPv4"]);
        let (_, refused) = prepared(released, Some(dual.clone()));
        assert_eq!(
            refused,
            [
                "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": must be 'SingleStack' \
              to release the secondary IP family"
            ]
        );
        let mut single_stack = dual.clone();
        single_stack["ipFamilyPolicy"] = json!("SingleStack");
        let (spec, refused) = prepared(single_stack.clone(), Some(dual.clone()));
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
        // Made single-stack with two families.
        let (_, refused) = prepared(single_stack, None);
        assert_eq!(
            refused,
            [
                "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' \
              or 'PreferDualStack' when multiple IP families are specified"
            ]
        );
        // Not headless: nothing of this (no cluster IPs are allocated here).
        assert_eq!(
            prepared(json!({"clusterIP": ""}), None),
            (json!({"clusterIP": ""}), vec![])
        );
    }

    fn normalized(object: Value) -> Value {
        normalize(object, UnknownFields::Strict, &mut Vec::new()).unwrap()
    }

    fn messages(object: &Value) -> Vec<String> {
        validate(object, None)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// `kubectl create service clusterip api --tcp=443:8443` as kube-apiserver defaults it
    /// (pkg/apis/core/v1/defaults_test.go's `TestSetDefaultService` and
    /// `TestSetDefaultServiceTargetPort` points).
    #[test]
    fn a_service_is_defaulted_as_kube_apiserver_defaults_it() {
        let service = normalized(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "api", "namespace": "default"},
            "spec": {"ports": [{"name": "443-8443", "port": 443, "targetPort": 8443},
                               {"name": "metrics", "port": 9090}]},
        }));
        assert_eq!(
            service["spec"],
            json!({"ports": [
                       {"name": "443-8443", "port": 443, "targetPort": 8443, "protocol": "TCP"},
                       {"name": "metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"}],
                   "sessionAffinity": "None", "type": "ClusterIP",
                   "internalTrafficPolicy": "Cluster"})
        );
        assert_eq!(service["status"], json!({"loadBalancer": {}}));
        let balanced = normalized(json!({
            "metadata": {"name": "lb", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP",
                     "ports": [{"port": 80, "targetPort": "http"}]},
        }));
        assert_eq!(balanced["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(balanced["spec"]["allocateLoadBalancerNodePorts"], true);
        assert_eq!(
            balanced["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
            10_800
        );
        assert_eq!(balanced["spec"]["ports"][0]["targetPort"], "http");
        assert!(
            normalized(json!({"metadata": {"name": "e"}, "spec": {"type": "ExternalName"}}))
                ["spec"]
                .get("internalTrafficPolicy")
                .is_none()
        );
    }

    /// pkg/apis/core/validation/validation_test.go `TestValidateServiceCreate`'s cases for
    /// the fields checked here, with their messages.
    #[test]
    fn services_are_checked_as_kube_apiserver_checks_them() {
        let valid = normalized(json!({
            "metadata": {"name": "api", "namespace": "default"},
            "spec": {"ports": [{"port": 443, "targetPort": 8443}]},
        }));
        assert!(messages(&valid).is_empty(), "{:?}", messages(&valid));
        let with = |patch: Value| {
            let mut object = valid.clone();
            json_patch::merge(&mut object, &patch);
            messages(&object)
        };
        assert_eq!(
            with(json!({"metadata": {"name": "1api"}})),
            [
                "metadata.name: Invalid value: \"1api\": a DNS-1035 label must consist of lower \
              case alphanumeric characters or '-', start with an alphabetic character, and end \
              with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for \
              validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(
            with(json!({"spec": {"ports": []}})),
            ["spec.ports: Required value"]
        );
        assert_eq!(
            with(
                json!({"spec": {"ports": [{"port": 0, "targetPort": 70000, "protocol": "ICMP"}]}})
            ),
            [
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[0].protocol: Unsupported value: \"ICMP\": supported values: \
                 \"SCTP\", \"TCP\", \"UDP\"",
                "spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, \
                 inclusive",
            ]
        );
        assert_eq!(
            with(json!({"spec": {"ports": [
                {"port": 80, "targetPort": "a--b", "protocol": "TCP"},
                {"name": "p", "port": 80, "targetPort": 80, "protocol": "TCP"}]}})),
            [
                "spec.ports[0].name: Required value",
                "spec.ports[0].targetPort: Invalid value: \"a--b\": must not contain \
                 consecutive hyphens",
                "spec.ports[1]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", \
                 AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, \
                 IntVal:0, StrVal:\"\"}, NodePort:0}",
            ]
        );
        assert_eq!(
            with(
                json!({"spec": {"type": "Magic", "sessionAffinity": "Sticky",
                                 "clusterIP": "10.0.0.300"}})
            ),
            [
                "spec.sessionAffinity: Unsupported value: \"Sticky\": supported values: \
                 \"ClientIP\", \"None\"",
                "spec.clusterIP: Invalid value: \"10.0.0.300\": must be empty, 'None', or a \
                 valid IP address",
                "spec.type: Unsupported value: \"Magic\": supported values: \"ClusterIP\", \
                 \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
            ]
        );
        assert_eq!(
            with(json!({"spec": {"type": "NodePort", "clusterIP": "None"}})),
            [
                "spec.clusterIP: Invalid value: \"None\": may not be set to 'None' for NodePort \
              services"
            ]
        );
        assert_eq!(
            with(
                json!({"spec": {"ports": [{"port": 443, "targetPort": 1, "nodePort": 30000,
                                          "protocol": "TCP"}]}})
            ),
            ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]
        );
        // The cluster IP may not change once set.
        let mut set = valid.clone();
        set["spec"]["clusterIP"] = "10.96.0.10".into();
        let mut changed = set.clone();
        changed["spec"]["clusterIP"] = "10.96.0.11".into();
        let errors: Vec<String> = validate(&changed, Some(&set))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            ["spec.clusterIP: Invalid value: \"10.96.0.11\": field is immutable"]
        );
    }

    #[test]
    fn kubectl_get_services_columns() {
        let service = normalized(json!({
            "metadata": {"name": "api", "namespace": "default"},
            "spec": {"ports": [{"port": 443, "targetPort": 8443}, {"port": 53, "protocol": "UDP",
                     "nodePort": 30053}], "selector": {"app": "api", "tier": "x"}},
        }));
        let row = cells(&service);
        assert_eq!(
            row[..5],
            [
                json!("api"),
                json!("ClusterIP"),
                json!("<none>"),
                json!("<none>"),
                json!("443/TCP,53:30053/UDP"),
            ]
        );
        assert_eq!(row[6], "app=api,tier=x");
        let external = normalized(json!({"metadata": {"name": "e", "namespace": "d"},
            "spec": {"type": "ExternalName", "externalName": "example.com"}}));
        assert_eq!(cells(&external)[3], "example.com");
        assert_eq!(cells(&external)[4], "<none>");
    }
}
