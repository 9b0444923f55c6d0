//! A dynamic scheme over a generated kind registry: find an object's codec by `apiVersion` and
//! `kind`, then convert it to the hub, to another version, or default it.
//!
//! `apfkit-codegen`'s multi-version builder generates, for each API, a `HubObject` enum (one
//! variant per hub kind) and a `SCHEME` of this type listing one [`Codec`] per served kind of
//! every version. The scheme works on `serde_json::Value`s, which is what a conversion webhook
//! or a command-line tool holds.

mod encodings;
mod options;
mod report;

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use encodings::{EncodingError, Encodings};
pub use options::{Target, UnknownFields};

use crate::{ApplyDefaults, FromHub, HubKind, Kind, Resource, ToHub};
pub use report::{ErrorKind, SchemeError, Warning, join};

/// One kind of one version: its identity and its typed functions, made by generated code.
pub struct Codec<H: 'static> {
    /// API group.
    pub group: &'static str,
    /// Version inside the group.
    pub version: &'static str,
    /// The kind.
    pub kind: &'static str,
    /// The plural resource name.
    pub plural: &'static str,
    /// Decodes an object of this version and converts it to the hub.
    pub to_hub: fn(Value) -> Result<H, SchemeError>,
    /// Whether a hub object is of this codec's kind.
    pub holds: fn(&H) -> bool,
    /// Converts a hub object of this kind ([`Codec::holds`]) to this version and encodes it.
    pub from_hub: fn(H) -> Result<Value, SchemeError>,
    /// Decodes an object of this version, applies its defaults and encodes it again.
    pub default: fn(Value) -> Result<Value, SchemeError>,
}

impl<H> Codec<H> {
    /// The codec of the versioned kind `T`, whose hub kind `H` holds: what a generated
    /// `SCHEME` lists for every served kind of every version.
    pub const fn of<T>() -> Codec<H>
    where
        T: DeserializeOwned
            + Serialize
            + ApplyDefaults
            + Resource
            + ToHub
            + FromHub<Hub = <T as ToHub>::Hub>,
        <T as ToHub>::Hub: HubKind<Object = H>,
    {
        Codec {
            group: T::GROUP,
            version: T::VERSION,
            kind: T::KIND,
            plural: T::PLURAL,
            to_hub: to_hub_as::<T, H>,
            holds: <T as ToHub>::Hub::holds,
            from_hub: from_hub_as::<T, H>,
            default: default_as::<T>,
        }
    }

    /// `group/version`, or only the version for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl<H> fmt::Debug for Codec<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Codec")
            .field("group", &self.group)
            .field("version", &self.version)
            .field("kind", &self.kind)
            .field("plural", &self.plural)
            .finish_non_exhaustive()
    }
}

/// Every served kind of every version of an API, and conversion between them through the hub.
#[derive(Debug)]
pub struct Scheme<H: 'static> {
    codecs: &'static [Codec<H>],
}

/// Splits `group/version` (or a bare core-group `version`).
fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

impl<H> Scheme<H> {
    /// A scheme over generated codecs.
    pub const fn new(codecs: &'static [Codec<H>]) -> Self {
        Scheme { codecs }
    }

    /// Every codec, in the registry's order.
    pub fn codecs(&self) -> &'static [Codec<H>] {
        self.codecs
    }

    /// The codec serving `kind` in `api_version`.
    pub fn find(&self, api_version: &str, kind: &str) -> Option<&'static Codec<H>> {
        let (group, version) = split_api_version(api_version);
        self.codecs
            .iter()
            .find(|c| c.group == group && c.version == version && c.kind == kind)
    }

    /// The codec of an object, by its `apiVersion` and `kind`.
    pub fn codec_of(&self, object: &Value) -> Result<&'static Codec<H>, SchemeError> {
        let Some(fields) = object.as_object() else {
            return Err(SchemeError::new(
                ErrorKind::InvalidValue,
                "",
                "expected an object with apiVersion and kind",
            ));
        };
        let text = |name: &str| match fields.get(name) {
            Some(Value::String(text)) if !text.is_empty() => Ok(text.as_str()),
            Some(Value::String(_)) | None => Err(SchemeError::new(
                ErrorKind::InvalidValue,
                name,
                "required, and missing",
            )),
            Some(_) => Err(SchemeError::new(
                ErrorKind::InvalidValue,
                name,
                "expected a string",
            )),
        };
        let api_version = text("apiVersion")?;
        let kind = text("kind")?;
        self.find(api_version, kind).ok_or_else(|| {
            SchemeError::new(
                ErrorKind::UnsupportedKind,
                "",
                format!(
                    "no kind {kind:?} in apiVersion {api_version:?}; this scheme serves {}",
                    self.served()
                ),
            )
        })
    }

    /// `group/version Kind` of every codec, for error messages.
    fn served(&self) -> String {
        let served: Vec<String> = self
            .codecs
            .iter()
            .map(|c| format!("{} {}", c.api_version(), c.kind))
            .collect();
        served.join(", ")
    }

    /// The codec of `kind` (in `group`) in the requested `api_version`.
    fn target(
        &self,
        group: &str,
        kind: &str,
        api_version: &str,
    ) -> Result<&'static Codec<H>, SchemeError> {
        let (target_group, version) = split_api_version(api_version);
        let refuse = |kind_of_error: ErrorKind, message: String| {
            Err(SchemeError::new(kind_of_error, "apiVersion", message))
        };
        if target_group != group {
            return refuse(
                ErrorKind::WrongGroup,
                format!("cannot convert {kind} of group {group:?} to apiVersion {api_version:?}"),
            );
        }
        match self.find(api_version, kind) {
            Some(codec) => Ok(codec),
            None => {
                let versions: Vec<&str> = self
                    .codecs
                    .iter()
                    .filter(|c| c.group == group && c.kind == kind)
                    .map(|c| c.version)
                    .collect();
                refuse(
                    ErrorKind::UnknownVersion,
                    format!(
                        "{kind} is not served in {version:?}; it is served in {}",
                        versions.join(", ")
                    ),
                )
            }
        }
    }

    /// Decodes an object of any served version and converts it to the hub.
    pub fn to_hub(&self, object: Value) -> Result<H, SchemeError> {
        (self.codec_of(&object)?.to_hub)(object)
    }

    /// Converts a hub object to `api_version` (of the hub kind's group) and encodes it.
    pub fn from_hub(&self, hub: H, api_version: &str) -> Result<Value, SchemeError> {
        let Some(kind) = self.codecs.iter().find(|c| (c.holds)(&hub)) else {
            return Err(SchemeError::new(
                ErrorKind::UnsupportedKind,
                "",
                "the hub object's kind has no codec",
            ));
        };
        let codec = self.target(kind.group, kind.kind, api_version)?;
        (codec.from_hub)(hub)
    }

    /// Converts an object to `api_version` through the hub. An object already in that version
    /// is returned as it is, as kube-apiserver's converter does.
    pub fn convert(&self, object: Value, api_version: &str) -> Result<Value, SchemeError> {
        let source = self.codec_of(&object)?;
        let target = self.target(source.group, source.kind, api_version)?;
        if std::ptr::eq(source, target) {
            return Ok(object);
        }
        (target.from_hub)((source.to_hub)(object)?)
    }

    /// Decodes an object, applies its version's defaults and encodes it again.
    pub fn default(&self, object: Value) -> Result<Value, SchemeError> {
        (self.codec_of(&object)?.default)(object)
    }
}

/// Decodes a typed object, with the field path of the first error.
pub fn decode<T: DeserializeOwned>(object: Value) -> Result<T, SchemeError> {
    serde_path_to_error::deserialize(object).map_err(|err| {
        let path = err.path().to_string();
        let path = if path == "." { String::new() } else { path };
        SchemeError::new(ErrorKind::InvalidValue, &path, err.into_inner().to_string())
    })
}

/// Encodes a typed object.
pub fn encode<T: Serialize>(object: &T) -> Result<Value, SchemeError> {
    serde_json::to_value(object)
        .map_err(|err| SchemeError::new(ErrorKind::Encoding, "", err.to_string()))
}

fn to_hub_as<T, H>(object: Value) -> Result<H, SchemeError>
where
    T: DeserializeOwned + ToHub,
    T::Hub: HubKind<Object = H>,
{
    let object: T = decode(object)?;
    Ok(object.into_hub().wrap())
}

fn from_hub_as<T, H>(hub: H) -> Result<Value, SchemeError>
where
    T: Serialize + FromHub + Kind,
    T::Hub: HubKind<Object = H>,
{
    match T::Hub::take(hub) {
        Some(hub) => encode(&T::from_owned_hub(hub)),
        None => Err(SchemeError::new(
            ErrorKind::UnsupportedKind,
            "",
            format!("the hub object is not a {}", T::KIND),
        )),
    }
}

fn default_as<T>(object: Value) -> Result<Value, SchemeError>
where
    T: DeserializeOwned + Serialize + ApplyDefaults,
{
    let mut object: T = decode(object)?;
    object.apply_defaults();
    encode(&object)
}
