//! discovery.k8s.io/v1 EndpointSlices as kube-apiserver serves them: read as k8s-openapi's
//! `EndpointSlice` reads them, defaulted as kubernetes `pkg/apis/discovery/v1/defaults.go`
//! defaults their ports, checked as `pkg/apis/discovery/validation/validation.go` checks
//! them, printed with `kubectl get endpointslices`' columns. One difference: a server may
//! allow loopback addresses, which kube-apiserver refuses (`ValidateEndpointIP`), so that an
//! extension server beside it can be reached (docs/decisions.md).

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use apfkit_apiserver::table::{
    Column, Printer, age, column, creation_column, field_doc, name_cell, name_column, now_seconds,
};
use apfkit_runtime::field::{BadValue, FieldError, Path, names};
use apfkit_runtime::scheme::{SchemeError, UnknownFields, Warning};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::Value;

use crate::services::PROTOCOLS;

/// The address types (`supportedAddressTypes`).
const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
/// `maxEndpoints`.
const MAX_ENDPOINTS: usize = 1000;
/// `maxAddresses`.
const MAX_ADDRESSES: usize = 100;
/// `maxPorts`.
const MAX_PORTS: usize = 20_000;

/// A new EndpointSlice as Go writes it: `addressType`, `endpoints` and `ports` have no
/// `omitempty`.
pub(crate) fn zero() -> Value {
    serde_json::json!({"addressType": "", "endpoints": null, "ports": null})
}

/// An EndpointSlice read as kube-apiserver reads it: as k8s-openapi's type, its ports
/// defaulted (`SetDefaults_EndpointPort`: name `""`, protocol `TCP`), in the shape Go gives
/// it (`endpoints` and `ports` `null` when absent, each endpoint's `conditions` `{}`).
pub(crate) fn normalize(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    let mut kept =
        apfkit_apiextensions::json_kind::typed::<EndpointSlice>(object, unknown, warnings)?;
    for port in kept
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(port) = port.as_object_mut() {
            port.entry("name").or_insert_with(|| "".into());
            port.entry("protocol").or_insert_with(|| "TCP".into());
        }
    }
    apfkit_apiserver::go_shape::as_decoded(&mut kept);
    Ok(kept)
}

/// How addresses are held: as kube-apiserver holds them, or with loopback addresses allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loopback {
    /// Refused, as kube-apiserver refuses them.
    Refused,
    /// Allowed.
    Allowed,
}

/// `ValidateEndpointSlice` (and the immutable `addressType` of `ValidateEndpointSliceUpdate`).
pub(crate) fn validate(object: &Value, old: Option<&Value>, loopback: Loopback) -> Vec<FieldError> {
    let (slice, mut errors) =
        match crate::typed_with_metadata::<EndpointSlice>(object, names::dns1123_subdomain) {
            Ok(read) => read,
            Err(errors) => return errors,
        };
    let address_type = slice.address_type.as_str();
    if address_type.is_empty() {
        errors.push(FieldError::required("addressType", ""));
    } else if !ADDRESS_TYPES.contains(&address_type) {
        errors.push(FieldError::not_supported(
            "addressType",
            BadValue::Str(address_type.to_owned()),
            ADDRESS_TYPES,
        ));
    }
    errors.extend(endpoints(&slice, loopback));
    errors.extend(ports(&slice));
    let changed = old
        .and_then(|old| old.get("addressType"))
        .and_then(Value::as_str)
        .is_some_and(|old_type| old_type != address_type);
    if changed {
        // 1.37's declarative validation (`+k8s:immutable`) in place of the handwritten
        // error it covers: no value.
        errors.push(FieldError::invalid(
            "addressType",
            BadValue::from_json(&Value::Null),
            "field is immutable",
        ));
    }
    errors
}

/// A slice's endpoints: k8s-openapi's `v1_34` and later types have them optional, those of
/// 1.33 a list; either reads here.
pub(crate) fn endpoints_of(slice: &EndpointSlice) -> &[k8s_openapi::api::discovery::v1::Endpoint] {
    /// The field as a slice, whichever type it is.
    trait Listed {
        fn listed(&self) -> &[k8s_openapi::api::discovery::v1::Endpoint];
    }
    impl Listed for Vec<k8s_openapi::api::discovery::v1::Endpoint> {
        fn listed(&self) -> &[k8s_openapi::api::discovery::v1::Endpoint] {
            self
        }
    }
    impl Listed for Option<Vec<k8s_openapi::api::discovery::v1::Endpoint>> {
        fn listed(&self) -> &[k8s_openapi::api::discovery::v1::Endpoint] {
            self.as_deref().unwrap_or_default()
        }
    }
    slice.endpoints.listed()
}

/// `validateEndpoints`.
fn endpoints(slice: &EndpointSlice, loopback: Loopback) -> Vec<FieldError> {
    let path = Path::new("endpoints");
    let endpoints = endpoints_of(slice);
    if endpoints.len() > MAX_ENDPOINTS {
        return vec![FieldError::too_many(
            path.to_string(),
            endpoints.len() as i64,
            MAX_ENDPOINTS as i64,
        )];
    }
    let mut errors = Vec::new();
    for (index, endpoint) in endpoints.iter().enumerate() {
        let here = path.index(index);
        let addresses_path = here.child("addresses");
        if endpoint.addresses.is_empty() {
            // 1.37's declarative validation (`+k8s:minItems`) in place of the handwritten
            // error it covers: no detail.
            errors.push(FieldError::required(addresses_path.clone(), ""));
        } else if endpoint.addresses.len() > MAX_ADDRESSES {
            errors.push(FieldError::too_many(
                addresses_path.to_string(),
                endpoint.addresses.len() as i64,
                MAX_ADDRESSES as i64,
            ));
        }
        for (at, address) in endpoint.addresses.iter().enumerate() {
            let address_path = addresses_path.index(at);
            let invalid = |path: &Path, message: &str| {
                FieldError::invalid(path.clone(), BadValue::Str(address.clone()), message)
            };
            let ip = match slice.address_type.as_str() {
                "IPv4" | "IPv6" => match ip_errors(address, slice.address_type == "IPv6") {
                    Ok(ip) => ip,
                    Err(messages) => {
                        errors.extend(messages.iter().map(|m| invalid(&address_path, m)));
                        continue;
                    }
                },
                "FQDN" => {
                    for message in names::dns1123_subdomain(address) {
                        errors.push(invalid(&address_path, &message));
                    }
                    continue;
                }
                _ => continue,
            };
            // The family is checked at `addresses`, without the index, as upstream does.
            match (slice.address_type.as_str(), ip) {
                ("IPv4", IpAddr::V6(_)) => {
                    errors.push(invalid(&addresses_path, "must be an IPv4 address"));
                }
                ("IPv6", IpAddr::V4(_)) => {
                    errors.push(invalid(&addresses_path, "must be an IPv6 address"));
                }
                _ => {}
            }
            errors.extend(endpoint_ip(ip, loopback).map(|message| invalid(&address_path, message)));
        }
        if let Some(hostname) = &endpoint.hostname {
            for message in names::dns1123_label(hostname) {
                errors.push(FieldError::invalid(
                    here.child("hostname"),
                    BadValue::Str(hostname.clone()),
                    message,
                ));
            }
        }
    }
    errors
}

/// An endpoint address read as kube-apiserver 1.37 reads it (`StrictIPCIDRValidation` on):
/// `ParseIPSloppy`, then no leading zeros and no IPv4-mapped IPv6 address; an IPv6 slice's
/// addresses also in canonical form (`IsValidIP`, where IPv4 ones are
/// `IsValidIPForLegacyField`). The address, or the messages of what is wrong with it.
fn ip_errors(address: &str, canonical: bool) -> Result<IpAddr, Vec<String>> {
    let Some((ip, leading_zeros)) = parse_ip_sloppy(address) else {
        return Err(vec![
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".to_owned(),
        ]);
    };
    let mut errors = Vec::new();
    if leading_zeros {
        errors.push("must not have leading 0s".to_owned());
    }
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        errors.push("must not be an IPv4-mapped IPv6 address".to_owned());
    }
    if errors.is_empty() && canonical && ip.to_string() != address {
        errors.push(format!("must be in canonical form ({:?})", ip.to_string()));
    }
    if errors.is_empty() {
        Ok(ip)
    } else {
        Err(errors)
    }
}

/// Go's `netutils.ParseIPSloppy`: an IPv4 address in dotted decimal whose parts may have
/// leading zeros (and whether one has), or an IPv6 address.
fn parse_ip_sloppy(address: &str) -> Option<(IpAddr, bool)> {
    if address.contains(':') {
        return address
            .parse::<Ipv6Addr>()
            .ok()
            .map(|ip| (IpAddr::V6(ip), false));
    }
    let mut octets = [0u8; 4];
    let mut parts = address.split('.');
    let mut leading_zeros = false;
    for octet in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        leading_zeros |= part.len() > 1 && part.starts_with('0');
        let mut value: u32 = 0;
        for digit in part.bytes() {
            value = value * 10 + u32::from(digit - b'0');
            if value > 255 {
                return None;
            }
        }
        *octet = u8::try_from(value).ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some((IpAddr::V4(Ipv4Addr::from(octets)), leading_zeros))
}

/// `ValidateEndpointIP`: what an endpoint address may not be; loopback allowed when the
/// server says so.
fn endpoint_ip(ip: IpAddr, loopback: Loopback) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some(match ip {
            IpAddr::V4(_) => "may not be unspecified (0.0.0.0)",
            IpAddr::V6(_) => "may not be unspecified (::)",
        });
    }
    if ip.is_loopback() && loopback == Loopback::Refused {
        return Some("may not be in the loopback range (127.0.0.0/8, ::1/128)");
    }
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    };
    if link_local {
        return Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)");
    }
    let link_local_multicast = match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => (v6.segments()[0] & 0xff0f) == 0xff02,
    };
    link_local_multicast
        .then_some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
}

/// `validatePorts`.
fn ports(slice: &EndpointSlice) -> Vec<FieldError> {
    let path = Path::new("ports");
    let ports = slice.ports.as_deref().unwrap_or_default();
    if ports.len() > MAX_PORTS {
        return vec![FieldError::too_many(
            path.to_string(),
            ports.len() as i64,
            MAX_PORTS as i64,
        )];
    }
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for (index, port) in ports.iter().enumerate() {
        let here = path.index(index);
        let name = port.name.clone().unwrap_or_default();
        if !name.is_empty() {
            for message in names::dns1123_label(&name) {
                errors.push(FieldError::invalid(
                    here.child("name"),
                    BadValue::Str(name.clone()),
                    message,
                ));
            }
        }
        if !seen.insert(name.clone()) {
            errors.push(FieldError::duplicate(
                here.child("name"),
                BadValue::Str(name),
            ));
        }
        match port.protocol.as_deref() {
            None => errors.push(FieldError::required(here.child("protocol"), "")),
            Some(protocol) if !PROTOCOLS.contains(&protocol) => {
                errors.push(FieldError::not_supported(
                    here.child("protocol"),
                    BadValue::Str(protocol.to_owned()),
                    PROTOCOLS,
                ));
            }
            Some(_) => {}
        }
    }
    errors
}

/// `endpointSliceColumnDefinitions`, each described by the `EndpointSlice` field it shows.
fn columns() -> Vec<Column> {
    let field = |name, property| {
        column(
            name,
            "string",
            0,
            field_doc("io.k8s.api.discovery.v1.EndpointSlice", property),
        )
    };
    vec![
        name_column(),
        field("AddressType", "addressType"),
        field("Ports", "ports"),
        field("Endpoints", "endpoints"),
        creation_column("Age", "string"),
    ]
}

/// `listWithMoreString`: the first three, then how many more.
fn first_three(items: &[String]) -> String {
    let shown = items.iter().take(3).cloned().collect::<Vec<_>>().join(",");
    if items.len() > 3 {
        format!("{shown} + {} more...", items.len() - 3)
    } else if shown.is_empty() {
        "<unset>".to_owned()
    } else {
        shown
    }
}

/// `printEndpointSlice`'s cells.
fn cells(object: &Value) -> Vec<Value> {
    let slice: EndpointSlice = serde_json::from_value(object.clone()).unwrap_or_default();
    let ports: Vec<String> = slice
        .ports
        .iter()
        .flatten()
        .map(|port| match (port.port, &port.name) {
            (Some(number), _) => number.to_string(),
            (None, Some(name)) => name.clone(),
            (None, None) => "*".to_owned(),
        })
        .collect();
    let addresses: Vec<String> = endpoints_of(&slice)
        .iter()
        .flat_map(|endpoint| endpoint.addresses.iter().cloned())
        .collect();
    vec![
        name_cell(object),
        slice.address_type.into(),
        first_three(&ports).into(),
        first_three(&addresses).into(),
        age(object, now_seconds()),
    ]
}

/// The columns of `kubectl get endpointslices`.
pub(crate) fn printer() -> Printer {
    Printer::of("v1", columns(), cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slice(addresses: &[&str], address_type: &str) -> Value {
        normalize(
            json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "api-1", "namespace": "default",
                             "labels": {"kubernetes.io/service-name": "api"}},
                "addressType": address_type,
                "endpoints": [{"addresses": addresses}],
                "ports": [{"port": 8443}],
            }),
            UnknownFields::Strict,
            &mut Vec::new(),
        )
        .unwrap()
    }

    fn messages(object: &Value, loopback: Loopback) -> Vec<String> {
        validate(object, None, loopback)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn ports_are_defaulted() {
        assert_eq!(
            slice(&["10.0.0.1"], "IPv4")["ports"],
            json!([{"name": "", "protocol": "TCP", "port": 8443}])
        );
    }

    /// pkg/apis/discovery/validation/validation_test.go `TestValidateEndpointSlice`'s cases
    /// for addresses, types and ports, with their messages.
    #[test]
    fn slices_are_checked_as_kube_apiserver_checks_them() {
        assert!(messages(&slice(&["10.0.0.1"], "IPv4"), Loopback::Refused).is_empty());
        assert!(messages(&slice(&["2001:db8::1"], "IPv6"), Loopback::Refused).is_empty());
        assert!(messages(&slice(&["api.example.com"], "FQDN"), Loopback::Refused).is_empty());
        assert_eq!(
            messages(&slice(&["127.0.0.1"], "IPv4"), Loopback::Refused),
            [
                "endpoints[0].addresses[0]: Invalid value: \"127.0.0.1\": may not be in the \
              loopback range (127.0.0.0/8, ::1/128)"
            ]
        );
        assert!(messages(&slice(&["127.0.0.1"], "IPv4"), Loopback::Allowed).is_empty());
        assert_eq!(
            messages(
                &slice(
                    &["0.0.0.0", "169.254.1.1", "224.0.0.5", "::1", "1.2.3"],
                    "IPv4"
                ),
                Loopback::Allowed
            ),
            [
                "endpoints[0].addresses[0]: Invalid value: \"0.0.0.0\": may not be unspecified \
                 (0.0.0.0)",
                "endpoints[0].addresses[1]: Invalid value: \"169.254.1.1\": may not be in the \
                 link-local range (169.254.0.0/16, fe80::/10)",
                "endpoints[0].addresses[2]: Invalid value: \"224.0.0.5\": may not be in the \
                 link-local multicast range (224.0.0.0/24, ff02::/10)",
                "endpoints[0].addresses: Invalid value: \"::1\": must be an IPv4 address",
                "endpoints[0].addresses[4]: Invalid value: \"1.2.3\": must be a valid IP \
                 address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ]
        );
        // 1.37's strict reading (`StrictIPCIDRValidation`): IPv4-mapped IPv6 addresses and
        // leading zeros refused, whatever the address they stand for.
        assert_eq!(
            messages(
                &slice(
                    &["::ffff:127.0.0.1", "::ffff:10.0.0.1", "010.0.0.1"],
                    "IPv4"
                ),
                Loopback::Refused
            ),
            [
                "endpoints[0].addresses[0]: Invalid value: \"::ffff:127.0.0.1\": must not be \
                 an IPv4-mapped IPv6 address",
                "endpoints[0].addresses[1]: Invalid value: \"::ffff:10.0.0.1\": must not be an \
                 IPv4-mapped IPv6 address",
                "endpoints[0].addresses[2]: Invalid value: \"010.0.0.1\": must not have \
                 leading 0s",
            ]
        );
        assert_eq!(
            messages(
                &slice(
                    &["::ffff:10.0.0.1", "1.2.3.4", "FE80::1", "2001:db8::1"],
                    "IPv6"
                ),
                Loopback::Allowed
            ),
            [
                "endpoints[0].addresses[0]: Invalid value: \"::ffff:10.0.0.1\": must not be an \
                 IPv4-mapped IPv6 address",
                "endpoints[0].addresses: Invalid value: \"1.2.3.4\": must be an IPv6 address",
                "endpoints[0].addresses[2]: Invalid value: \"FE80::1\": must be in canonical \
                 form (\"fe80::1\")",
            ]
        );
        assert_eq!(
            messages(&slice(&[], "IP"), Loopback::Refused),
            [
                "addressType: Unsupported value: \"IP\": supported values: \"FQDN\", \"IPv4\", \
                 \"IPv6\"",
                "endpoints[0].addresses: Required value",
            ]
        );
        let mut ports = slice(&["10.0.0.1"], "IPv4");
        ports["ports"] =
            json!([{"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "ICMP"}]);
        assert_eq!(
            messages(&ports, Loopback::Refused),
            [
                "ports[1].name: Duplicate value: \"a\"",
                "ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \
                 \"TCP\", \"UDP\"",
            ]
        );
        let many: Vec<String> = (0..101)
            .map(|i| format!("10.0.{}.{}", i / 250, i % 250 + 1))
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(
            messages(&slice(&many, "IPv4"), Loopback::Refused),
            ["endpoints[0].addresses: Too many: 101: must have at most 100 items"]
        );
        let old = slice(&["10.0.0.1"], "IPv4");
        let changed = slice(&["2001:db8::1"], "IPv6");
        let errors: Vec<String> = validate(&changed, Some(&old), Loopback::Refused)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            ["addressType: Invalid value: null: field is immutable"]
        );
    }

    #[test]
    fn kubectl_get_endpointslices_columns() {
        let mut object = slice(&["10.0.0.1", "10.0.0.2"], "IPv4");
        object["endpoints"]
            .as_array_mut()
            .unwrap()
            .push(json!({"addresses": ["10.0.0.3", "10.0.0.4"]}));
        let row = cells(&object);
        assert_eq!(row[1], "IPv4");
        assert_eq!(row[2], "8443");
        assert_eq!(row[3], "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...");
        object["ports"] = json!([]);
        object["endpoints"] = json!([]);
        assert_eq!(cells(&object)[2..4], [json!("<unset>"), json!("<unset>")]);
    }
}
