//! Content negotiation as kube-apiserver does it: the `Accept` header's media types with their
//! `as`/`g`/`v` parameters, and request bodies' `Content-Type`
//! (`k8s.io/apiserver/pkg/endpoints/handlers/negotiation`).

use apfkit_runtime::scheme::Encoding;

use crate::error::ApiError;

/// JSON.
pub const JSON: &str = "application/json";
/// YAML.
pub const YAML: &str = "application/yaml";
/// Kubernetes protobuf.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// Aggregated discovery, as client-go asks for it.
pub const DISCOVERY_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// The beta of aggregated discovery, which kubectl before 1.30 asks for.
pub const DISCOVERY_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// A body format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
    /// Kubernetes protobuf.
    Protobuf,
}

impl Format {
    /// The media type of a response in this format.
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Json => JSON,
            Format::Yaml => YAML,
            Format::Protobuf => PROTOBUF,
        }
    }

    /// The scheme's encoding of an object in this format.
    pub fn encoding(self) -> Encoding {
        match self {
            Format::Json => Encoding::Json,
            Format::Yaml => Encoding::Yaml,
            Format::Protobuf => Encoding::Protobuf,
        }
    }
}

/// What an endpoint writes in protobuf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protobuf {
    /// Its objects (and its errors).
    Objects,
    /// Its errors alone (and metadata): a custom resource's, whose serializer writes
    /// protobuf though its objects have none, so a protobuf range is refused by kube's
    /// negotiation rather than by go-restful's route.
    Errors,
    /// Nothing.
    No,
}

/// What the client asked to receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// The object or list itself.
    Object(Format),
    /// A `Table` of `meta.k8s.io`, in the version asked for: its `apiVersion`
    /// (`meta.k8s.io/v1` or `meta.k8s.io/v1beta1`).
    Table(Format, &'static str),
    /// `PartialObjectMetadata` (`list`: `PartialObjectMetadataList`) of `meta.k8s.io`, in
    /// the version asked for: its `apiVersion`.
    Metadata {
        /// JSON, YAML or protobuf.
        format: Format,
        /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
        api_version: &'static str,
        /// Whether the list form was asked for.
        list: bool,
    },
    /// Aggregated discovery (`apidiscovery.k8s.io`), in version `v2` or `v2beta1`.
    Discovery(&'static str),
}

/// One media range of an `Accept` header.
#[derive(Debug, Default)]
struct Range<'a> {
    essence: &'a str,
    as_kind: Option<&'a str>,
    group: Option<&'a str>,
    version: Option<&'a str>,
    other_parameters: bool,
}

fn parse_range(text: &str) -> Range<'_> {
    let mut parts = text.split(';').map(str::trim);
    let mut range = Range {
        essence: parts.next().unwrap_or_default(),
        ..Range::default()
    };
    for parameter in parts {
        let (name, value) = parameter.split_once('=').unwrap_or((parameter, ""));
        let value = value.trim().trim_matches('"');
        match name.trim() {
            "as" => range.as_kind = Some(value),
            "g" => range.group = Some(value),
            "v" => range.version = Some(value),
            // Quality values and client-go's `stream=watch` choose nothing here.
            "q" | "stream" | "charset" => {}
            _ => range.other_parameters = true,
        }
    }
    range
}

fn format_of(essence: &str) -> Option<Format> {
    match essence.to_ascii_lowercase().as_str() {
        "application/json" | "application/*" | "*/*" | "" => Some(Format::Json),
        "application/yaml" => Some(Format::Yaml),
        "application/vnd.kubernetes.protobuf" => Some(Format::Protobuf),
        _ => None,
    }
}

/// The format a `Status` answering an error is written in, as kube-apiserver's
/// `ErrorNegotiated` picks it for `accept`: the first range naming JSON, YAML or protobuf
/// without parameters that ask for another kind (a `Status` converts to nothing), whatever
/// the resource (a custom resource's errors too, though its objects have no protobuf); JSON
/// when no range is one of those.
pub fn error_format(accept: Option<&str>) -> Format {
    accept
        .unwrap_or_default()
        .split(',')
        .map(parse_range)
        .filter(|range| {
            range.as_kind.is_none()
                && range.group.is_none()
                && range.version.is_none()
                && !range.other_parameters
        })
        .find_map(|range| format_of(range.essence))
        .unwrap_or(Format::Json)
}

/// What to answer for `accept`, given what the endpoint can give: `tables` (and metadata) for
/// reads of a resource, `discovery` for `/apis` and `/api`, `protobuf` what the scheme writes
/// in it, `streams` where watches are served (a resource's collection). The first range the
/// server can serve wins, as kube-apiserver's negotiation picks.
///
/// # Errors
///
/// 406 when no range can be served: go-restful's, naming the route's representations, when
/// no range names a media type the route produces; kube-apiserver's negotiation's otherwise.
pub fn negotiate(
    accept: Option<&str>,
    tables: bool,
    discovery: bool,
    protobuf: Protobuf,
    streams: bool,
) -> Result<Wanted, ApiError> {
    let accept = accept.unwrap_or("").trim();
    if accept.is_empty() {
        return Ok(Wanted::Object(Format::Json));
    }
    let mut produced = false;
    for text in accept.split(',') {
        let range = parse_range(text);
        let Some(format) = format_of(range.essence) else {
            continue;
        };
        // Metadata is `meta.k8s.io`'s to write, in protobuf too, whatever the resource's
        // objects are written in (a custom resource's).
        let metadata = matches!(
            range.as_kind,
            Some("PartialObjectMetadata" | "PartialObjectMetadataList")
        );
        if format == Format::Protobuf && protobuf != Protobuf::Objects && !(tables && metadata) {
            // The serializer has it: its negotiation refuses it, not the route.
            produced |= protobuf == Protobuf::Errors;
            continue;
        }
        produced = true;
        match (range.as_kind, range.group, range.version) {
            (None, None, None) if !range.other_parameters => return Ok(Wanted::Object(format)),
            // Tables are written as JSON or YAML; a protobuf table range is passed over.
            (Some("Table"), Some("meta.k8s.io"), Some(version @ ("v1" | "v1beta1")))
                if tables && format != Format::Protobuf =>
            {
                let api_version = match version {
                    "v1" => "meta.k8s.io/v1",
                    _ => "meta.k8s.io/v1beta1",
                };
                return Ok(Wanted::Table(format, api_version));
            }
            // Metadata too, and in protobuf (metadata informers ask so).
            (
                Some(kind @ ("PartialObjectMetadata" | "PartialObjectMetadataList")),
                Some("meta.k8s.io"),
                Some(version @ ("v1" | "v1beta1")),
            ) if tables => {
                return Ok(Wanted::Metadata {
                    format,
                    api_version: match version {
                        "v1" => "meta.k8s.io/v1",
                        _ => "meta.k8s.io/v1beta1",
                    },
                    list: kind == "PartialObjectMetadataList",
                });
            }
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some(version))
                if discovery && format == Format::Json =>
            {
                match version {
                    "v2" => return Ok(Wanted::Discovery("v2")),
                    "v2beta1" => return Ok(Wanted::Discovery("v2beta1")),
                    _ => continue,
                }
            }
            _ => continue,
        }
    }
    let mut supported = vec![JSON, YAML];
    if protobuf != Protobuf::No {
        supported.push(PROTOBUF);
    }
    if produced {
        return Err(ApiError::not_acceptable(&supported));
    }
    if streams {
        supported.push("application/json;stream=watch");
        if protobuf != Protobuf::No {
            supported.push("application/vnd.kubernetes.protobuf;stream=watch");
        }
    }
    Err(ApiError::no_representation(&supported))
}

/// The format of a request body by its `Content-Type` (parameters ignored).
///
/// # Errors
///
/// 415 for any other media type.
pub fn body_format(content_type: Option<&str>) -> Result<Format, ApiError> {
    let content_type = content_type.unwrap_or(JSON);
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    match essence.to_ascii_lowercase().as_str() {
        "application/json" | "" => Ok(Format::Json),
        "application/yaml" => Ok(Format::Yaml),
        "application/vnd.kubernetes.protobuf" => Ok(Format::Protobuf),
        _ => Err(ApiError::unsupported_media_type()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_gets_a_table_or_json_as_it_lists_them() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate(Some(kubectl), true, false, Protobuf::No, false).unwrap(),
            Wanted::Table(Format::Json, "meta.k8s.io/v1")
        );
        // table_conversion.go asks for v1beta1 alone, and gets a v1beta1 Table.
        assert_eq!(
            negotiate(
                Some("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
                true,
                false,
                Protobuf::No,
                false
            )
            .unwrap(),
            Wanted::Table(Format::Json, "meta.k8s.io/v1beta1")
        );
        assert_eq!(
            negotiate(Some(kubectl), false, false, Protobuf::No, false).unwrap(),
            Wanted::Object(Format::Json)
        );
    }

    #[test]
    fn client_go_gets_aggregated_discovery_when_it_asks() {
        let client_go = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            negotiate(Some(client_go), false, true, Protobuf::No, false).unwrap(),
            Wanted::Discovery("v2")
        );
        assert_eq!(
            negotiate(Some(client_go), false, false, Protobuf::No, false).unwrap(),
            Wanted::Object(Format::Json)
        );
    }

    #[test]
    fn errors_take_the_first_format_that_asks_for_no_other_kind() {
        let client_go = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(error_format(Some(client_go)), Format::Protobuf);
        assert_eq!(error_format(Some("application/yaml;q=0.9")), Format::Yaml);
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
        assert_eq!(error_format(Some(kubectl)), Format::Json);
        let table_then_protobuf =
            "application/json;as=Table;v=v1;g=meta.k8s.io, application/vnd.kubernetes.protobuf";
        assert_eq!(error_format(Some(table_then_protobuf)), Format::Protobuf);
        for nothing_usable in [None, Some(""), Some("text/html"), Some(",,;")] {
            assert_eq!(error_format(nothing_usable), Format::Json);
        }
    }

    #[test]
    fn unknown_media_types_are_refused() {
        let error =
            negotiate(Some("text/html"), false, false, Protobuf::Objects, true).unwrap_err();
        assert_eq!(error.code, 406);
        assert_eq!(
            error.message,
            "406: Not Acceptable\n\nAvailable representations: application/json, \
             application/yaml, application/vnd.kubernetes.protobuf, \
             application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        );
        let error = negotiate(
            Some("application/json;as=Nothing"),
            true,
            false,
            Protobuf::No,
            false,
        )
        .unwrap_err();
        assert_eq!(
            error.message,
            "only the following media types are accepted: application/json, application/yaml"
        );
        assert_eq!(
            negotiate(
                Some("application/vnd.kubernetes.protobuf, */*"),
                false,
                false,
                Protobuf::No,
                false
            )
            .unwrap(),
            Wanted::Object(Format::Json)
        );
        assert_eq!(body_format(Some("text/plain")).unwrap_err().code, 415);
        assert_eq!(
            body_format(Some("application/yaml; charset=utf-8")).unwrap(),
            Format::Yaml
        );
    }
}
