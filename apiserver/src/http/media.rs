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

/// What to answer for `accept`, given what the endpoint can give: `tables` (and metadata) for
/// reads of a resource, `discovery` for `/apis` and `/api`, `protobuf` where the scheme writes
/// it, `streams` where watches are served (a resource's collection). The first range the
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
    protobuf: bool,
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
        if format == Format::Protobuf && !protobuf && !(tables && metadata) {
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
    if protobuf {
        supported.push(PROTOBUF);
    }
    if produced {
        return Err(ApiError::not_acceptable(&supported));
    }
    if streams {
        supported.push("application/json;stream=watch");
        if protobuf {
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
            negotiate(Some(kubectl), true, false, false, false).unwrap(),
            Wanted::Table(Format::Json, "meta.k8s.io/v1")
        );
        // table_conversion.go asks for v1beta1 alone, and gets a v1beta1 Table.
        assert_eq!(
            negotiate(
                Some("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
                true,
                false,
                false,
                false
            )
            .unwrap(),
            Wanted::Table(Format::Json, "meta.k8s.io/v1beta1")
        );
        assert_eq!(
            negotiate(Some(kubectl), false, false, false, false).unwrap(),
            Wanted::Object(Format::Json)
        );
    }

    #[test]
    fn client_go_gets_aggregated_discovery_when_it_asks() {
        let client_go = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            negotiate(Some(client_go), false, true, false, false).unwrap(),
            Wanted::Discovery("v2")
        );
        assert_eq!(
            negotiate(Some(client_go), false, false, false, false).unwrap(),
            Wanted::Object(Format::Json)
        );
    }

    #[test]
    fn unknown_media_types_are_refused() {
        let error = negotiate(Some("text/html"), false, false, true, true).unwrap_err();
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
            false,
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
                false,
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
