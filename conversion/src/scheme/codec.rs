//! The served kinds, each with typed decode, default and encode functions.

use apfkit_types::{ApplyDefaults, Kind};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::Any;
use std::sync::OnceLock;

use crate::discovery::compare_kube_aware_version_strings;

use apfkit_runtime::scheme::Encodings;

use super::diff;
use super::encoding::Encoding;
use super::guard::{self, Guard};
use crate::{FromHub, ToHub};
use apfkit_runtime::HubKind;
use apfkit_runtime::scheme::{ErrorKind, SchemeError, Warning};
use apfkit_runtime::scheme::{Target, UnknownFields};

pub use crate::generated::CODECS;
pub use apfkit_types::hub::HubObject;

/// The hub types of this scheme: apfkit-runtime's [`HubKind`] held by a [`HubObject`], which
/// the scheme compares and writes (a bound, implemented for every such type).
pub trait SchemeHub: HubKind<Object = HubObject> + Serialize + PartialEq {}

impl<T: HubKind<Object = HubObject> + Serialize + PartialEq> SchemeHub for T {}

type DecodeFn = fn(&Value, UnknownFields, &mut Vec<Warning>) -> Result<HubObject, SchemeError>;
type DefaultFn = fn(&Value, UnknownFields, &mut Vec<Warning>) -> Result<Value, SchemeError>;
type EncodeFn = fn(HubObject, &mut Vec<Warning>) -> Result<Value, SchemeError>;
/// An object in its version's type, as a [`Codec`] decoded it.
pub(super) type Typed = Box<dyn Any + Send>;

/// A document's object in its version's type, as a reader decoded it: within the limits,
/// without repeated keys or fields the type lacks.
pub(super) struct Decoded {
    /// The codec of the object's version and kind.
    pub(super) codec: &'static Codec,
    /// The object, a value of the codec's type.
    pub(super) object: Typed,
}

impl std::fmt::Debug for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{} {}",
            self.codec.group, self.codec.version, self.codec.kind
        )
    }
}

impl Decoded {
    /// The object defaulted in its version and converted to the hub.
    pub(super) fn into_hub(self) -> Result<HubObject, SchemeError> {
        let codec = self.codec;
        codec
            .typed_to_hub(self.object)
            .ok_or_else(|| not_of_its_codec(codec))
    }

    /// The object defaulted in its version and written as `encoding` says; `input_length`
    /// sizes the output.
    pub(super) fn into_defaulted(
        self,
        encoding: Encoding,
        input_length: usize,
    ) -> Result<Vec<u8>, SchemeError> {
        let codec = self.codec;
        codec
            .default_typed(self.object, encoding, input_length)
            .ok_or_else(|| not_of_its_codec(codec))?
    }
}

/// An object that is not of the type of the codec that decoded it, which cannot happen.
fn not_of_its_codec(codec: &Codec) -> SchemeError {
    SchemeError::new(
        ErrorKind::UnsupportedKind,
        "",
        format!(
            "the decoded object is not a {} {}",
            codec.api_version(),
            codec.kind
        ),
    )
}

type DecodeGuardedFn = fn(&str, &Guard) -> Option<(Typed, usize)>;
type DecodeYamlFn = fn(&str, &Guard) -> Option<Typed>;
type TypedToHubFn = fn(Typed) -> Option<HubObject>;
type DefaultTypedFn = fn(Typed, Encoding, usize) -> Option<Result<Vec<u8>, SchemeError>>;
type EncodeToFn = fn(HubObject, Encoding, usize, &mut Vec<Warning>) -> Result<Vec<u8>, SchemeError>;

/// One kind of one group-version.
pub struct Codec {
    /// API group.
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    decode: DecodeFn,
    default: DefaultFn,
    encode: EncodeFn,
    decode_guarded: DecodeGuardedFn,
    decode_yaml: DecodeYamlFn,
    typed_to_hub: TypedToHubFn,
    default_typed: DefaultTypedFn,
    encode_to: EncodeToFn,
}

impl Codec {
    /// The codec of the versioned kind `T`; the generated `CODECS` table is made of these.
    pub const fn of<T>() -> Codec
    where
        T: DeserializeOwned
            + Serialize
            + ApplyDefaults
            + Kind
            + ToHub
            + FromHub
            + ToHub<Hub = <T as FromHub>::Hub>
            + Encodings
            + Send
            + 'static,
        <T as FromHub>::Hub: SchemeHub + Clone,
        T: Clone,
    {
        Codec {
            group: T::GROUP,
            version: T::VERSION,
            kind: T::KIND,
            decode: decode_to_hub_as::<T>,
            default: default_as::<T>,
            encode: encode_as::<T>,
            decode_guarded: decode_guarded_as::<T>,
            decode_yaml: decode_yaml_as::<T>,
            typed_to_hub: typed_to_hub_as::<T>,
            default_typed: default_typed_as::<T>,
            encode_to: encode_to_as::<T>,
        }
    }

    /// `group/version`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// Decodes, defaults and converts to the hub.
    pub fn decode(
        &self,
        object: &Value,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
    ) -> Result<HubObject, SchemeError> {
        (self.decode)(object, unknown, warnings)
    }

    /// Decodes, defaults and encodes in this version.
    pub fn default(
        &self,
        object: &Value,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
    ) -> Result<Value, SchemeError> {
        (self.default)(object, unknown, warnings)
    }

    /// Decodes the JSON value `text` starts with into this version's type under `guard`, and
    /// tells where it ends; `None` if it does not decode within `text` or the guard refused
    /// something.
    pub(super) fn decode_guarded(&self, text: &str, guard: &Guard) -> Option<(Typed, usize)> {
        (self.decode_guarded)(text, guard)
    }

    /// Decodes the one YAML document of `text` into this version's type under `guard`; `None`
    /// if it does not decode or the guard refused something.
    pub(super) fn decode_yaml(&self, text: &str, guard: &Guard) -> Option<Typed> {
        (self.decode_yaml)(text, guard)
    }

    /// Defaults an object of this version's type and converts it to the hub; `None` if it is
    /// of another type.
    pub(super) fn typed_to_hub(&self, typed: Typed) -> Option<HubObject> {
        (self.typed_to_hub)(typed)
    }

    /// Defaults an object of this version's type and writes it as `encoding` says;
    /// `input_length` sizes the output. `None` if it is of another type.
    pub(super) fn default_typed(
        &self,
        typed: Typed,
        encoding: Encoding,
        input_length: usize,
    ) -> Option<Result<Vec<u8>, SchemeError>> {
        (self.default_typed)(typed, encoding, expected_length(input_length))
    }

    /// Converts a hub object to this version and writes it as `encoding` says, reporting what
    /// it cannot keep. `input_length` is the length of the document it came from, to size the
    /// output.
    pub fn encode_to(
        &self,
        hub: HubObject,
        encoding: Encoding,
        input_length: usize,
        warnings: &mut Vec<Warning>,
    ) -> Result<Vec<u8>, SchemeError> {
        (self.encode_to)(hub, encoding, expected_length(input_length), warnings)
    }

    /// Converts a hub object to this version and encodes it, reporting what it cannot keep.
    pub fn encode(
        &self,
        hub: HubObject,
        warnings: &mut Vec<Warning>,
    ) -> Result<Value, SchemeError> {
        (self.encode)(hub, warnings)
    }
}

/// What is supported, for error messages: every group with its versions (preferred first) and
/// kinds, from [`CODECS`], and the `v1 List` envelope:
/// `flowcontrol.apiserver.k8s.io/{v1,v1beta3,...} FlowSchema, PriorityLevelConfiguration and
/// their lists; ...; v1 List of any of these`.
pub fn supported() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        // Group → version → kinds, groups in the registry's order.
        type Versions = Vec<(&'static str, Vec<&'static str>)>;
        let mut groups: Vec<(&str, Versions)> = Vec::new();
        for codec in CODECS {
            let at = match groups.iter().position(|(g, _)| *g == codec.group) {
                Some(at) => at,
                None => {
                    groups.push((codec.group, Vec::new()));
                    groups.len() - 1
                }
            };
            let versions = &mut groups[at].1;
            match versions.iter_mut().find(|(v, _)| *v == codec.version) {
                Some((_, kinds)) => kinds.push(codec.kind),
                None => versions.push((codec.version, vec![codec.kind])),
            }
        }
        let mut parts = Vec::new();
        for (group, mut versions) in groups {
            versions.sort_by(|a, b| compare_kube_aware_version_strings(b.0, a.0));
            // Versions with the same kinds are named together.
            let mut runs: Vec<(Vec<&str>, &Vec<&str>)> = Vec::new();
            for (version, kinds) in &versions {
                match runs.last_mut() {
                    Some((names, same)) if *same == kinds => names.push(version),
                    _ => runs.push((vec![version], kinds)),
                }
            }
            for (names, kinds) in runs {
                let kinds = match kinds.as_slice() {
                    [one] => format!("{one} and {one}List"),
                    [init @ .., last] => format!("{}, {last} and their lists", init.join(", ")),
                    [] => continue,
                };
                parts.push(format!("{group}/{{{}}} {kinds}", names.join(",")));
            }
        }
        parts.push("v1 List of any of these".to_owned());
        parts.join("; ")
    })
}

/// The codec of `kind` in `api_version`.
pub fn lookup(api_version: &str, kind: &str) -> Option<&'static Codec> {
    let slash = api_version.bytes().position(|b| b == b'/')?;
    let (group, version) = (&api_version[..slash], &api_version[slash + 1..]);
    // The kind first: it differs between most codecs, and often in length alone.
    CODECS
        .iter()
        .find(|c| c.kind == kind && c.version == version && c.group == group)
}

/// Whether `api_version` serves `kind`.
pub fn serves(api_version: &str, kind: &str) -> bool {
    lookup(api_version, kind).is_some()
}

/// The codec of an object, by its `apiVersion` and `kind`.
pub fn find(api_version: &str, object: &Value) -> Result<&'static Codec, SchemeError> {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    lookup(api_version, kind).ok_or_else(|| {
        SchemeError::new(
            ErrorKind::UnsupportedKind,
            "",
            format!(
                "unsupported apiVersion {api_version:?} and kind {kind:?}; supported: {}",
                supported()
            ),
        )
    })
}

/// The codec of the same kind in the target version.
pub fn resolve_target(source: &Codec, target: &Target) -> Result<&'static Codec, SchemeError> {
    if let Some(group) = &target.group
        && group != source.group
    {
        return Err(SchemeError::new(
            ErrorKind::WrongGroup,
            "apiVersion",
            format!(
                "cannot convert {} {} of group {} to group {group}",
                article(source.kind),
                source.kind,
                source.group
            ),
        ));
    }
    CODECS
        .iter()
        .find(|c| c.group == source.group && c.version == target.version && c.kind == source.kind)
        .ok_or_else(|| {
            let served: Vec<&str> = CODECS
                .iter()
                .filter(|c| c.group == source.group && c.kind == source.kind)
                .map(|c| c.version)
                .collect();
            SchemeError::new(
                ErrorKind::UnknownVersion,
                "",
                format!(
                    "{} has no version {:?}; it serves {}",
                    source.group,
                    target.version,
                    served.join(", ")
                ),
            )
        })
}

/// Decodes `object` (known to be of this codec's kind) and converts it to the hub.
pub fn decode_to_hub(
    object: &Value,
    api_version: &str,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<(&'static Codec, HubObject), SchemeError> {
    let codec = find(api_version, object)?;
    Ok((codec, codec.decode(object, unknown, warnings)?))
}

/// Decodes a typed value, with unknown fields handled as `unknown` says and errors at their path.
fn decode<T: DeserializeOwned>(
    object: &Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<T, SchemeError> {
    let (typed, unknown_paths) = decode_collecting(object)?;
    apply_unknown(unknown_fields(unknown_paths), unknown, warnings)?;
    Ok(typed)
}

/// Decodes a typed value; returns it with the paths of the fields its type does not have.
pub fn decode_collecting<T: DeserializeOwned>(
    object: &Value,
) -> Result<(T, Vec<String>), SchemeError> {
    // Most objects have no unknown field: a decode that only notices them comes first.
    if let Some(typed) = guard::decode_value(object) {
        return Ok((typed, Vec::new()));
    }
    let mut unknown_paths = Vec::new();
    let mut record = |path: serde_ignored::Path<'_>| unknown_paths.push(ignored_path(&path));
    // The field path of an error is tracked only when there is an error: decoding again.
    if let Ok(typed) = T::deserialize(serde_ignored::Deserializer::new(object, &mut record)) {
        return Ok((typed, unknown_paths));
    }
    unknown_paths.clear();
    let mut record = |path: serde_ignored::Path<'_>| unknown_paths.push(ignored_path(&path));
    let result: Result<T, _> =
        serde_path_to_error::deserialize(serde_ignored::Deserializer::new(object, &mut record));
    let typed = result.map_err(|err| {
        SchemeError::new(
            ErrorKind::InvalidValue,
            kube_path(err.path()),
            err.into_inner().to_string(),
        )
    })?;
    Ok((typed, unknown_paths))
}

/// Drops, reports or refuses `fields` (unknown or repeated), as `unknown` says.
pub fn apply_unknown(
    fields: Vec<Warning>,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<(), SchemeError> {
    match unknown {
        UnknownFields::Ignore => Ok(()),
        UnknownFields::Warn => {
            warnings.extend(fields);
            Ok(())
        }
        UnknownFields::Strict if fields.is_empty() => Ok(()),
        UnknownFields::Strict => {
            let fields: Vec<String> = fields.iter().map(Warning::to_string).collect();
            Err(SchemeError::new(
                ErrorKind::UnknownFields,
                "",
                format!("strict decoding error: {}", fields.join(", ")),
            ))
        }
    }
}

/// The unknown fields at `paths`.
pub fn unknown_fields(paths: Vec<String>) -> Vec<Warning> {
    paths
        .into_iter()
        .map(|path| Warning::UnknownField { path })
        .collect()
}

fn decode_to_hub_as<T>(
    object: &Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<HubObject, SchemeError>
where
    T: DeserializeOwned + ApplyDefaults + ToHub,
    T::Hub: SchemeHub,
{
    let typed: T = decode(object, unknown, warnings)?;
    Ok(defaulted_hub(typed))
}

/// `typed` defaulted in its version and converted to the hub.
fn defaulted_hub<T>(mut typed: T) -> HubObject
where
    T: ApplyDefaults + ToHub,
    T::Hub: SchemeHub,
{
    typed.apply_defaults();
    typed.into_hub().wrap()
}

fn default_as<T>(
    object: &Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError>
where
    T: DeserializeOwned + Serialize + ApplyDefaults,
{
    let mut typed: T = decode(object, unknown, warnings)?;
    typed.apply_defaults();
    serde_json::to_value(&typed)
        .map_err(|e| SchemeError::new(ErrorKind::Encoding, "", e.to_string()))
}

fn decode_guarded_as<T: DeserializeOwned + Send + 'static>(
    text: &str,
    guard: &Guard,
) -> Option<(Typed, usize)> {
    guard::decode::<T>(text, guard).map(|(typed, end)| (Box::new(typed) as Typed, end))
}

fn decode_yaml_as<T: DeserializeOwned + Send + 'static>(
    text: &str,
    guard: &Guard,
) -> Option<Typed> {
    guard::decode_yaml::<T>(text, guard).map(|typed| Box::new(typed) as Typed)
}

fn typed_to_hub_as<T>(typed: Typed) -> Option<HubObject>
where
    T: ApplyDefaults + ToHub + 'static,
    T::Hub: SchemeHub,
{
    Some(defaulted_hub(*typed.downcast::<T>().ok()?))
}

fn default_typed_as<T>(
    typed: Typed,
    encoding: Encoding,
    capacity: usize,
) -> Option<Result<Vec<u8>, SchemeError>>
where
    T: Serialize + ApplyDefaults + Kind + Encodings + 'static,
{
    let mut typed = *typed.downcast::<T>().ok()?;
    typed.apply_defaults();
    Some(encoding.encode::<T>(&typed, capacity))
}

/// The hub object `object` holds, if it is of `T`'s kind.
fn hub_of<T>(object: HubObject) -> Result<<T as FromHub>::Hub, SchemeError>
where
    T: FromHub + Kind,
    <T as FromHub>::Hub: SchemeHub,
{
    <T as FromHub>::Hub::take(object).ok_or_else(|| {
        SchemeError::new(
            ErrorKind::UnsupportedKind,
            "kind",
            format!(
                "cannot convert this object to {} {}",
                article(T::KIND),
                T::KIND
            ),
        )
    })
}

/// Room for a document written from one of `input_length` bytes: indented JSON from compact
/// JSON takes about 1.6 times as much, and defaults add a little.
fn expected_length(input_length: usize) -> usize {
    input_length.saturating_mul(2).saturating_add(256)
}

fn encode_to_as<T>(
    object: HubObject,
    encoding: Encoding,
    capacity: usize,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<u8>, SchemeError>
where
    T: FromHub + ToHub<Hub = <T as FromHub>::Hub> + Encodings + ApplyDefaults + Kind + Clone,
    <T as FromHub>::Hub: SchemeHub + Clone,
{
    converted_as::<T, _>(object, warnings, |external| {
        encoding.encode::<T>(external, capacity)
    })
}

fn encode_as<T>(object: HubObject, warnings: &mut Vec<Warning>) -> Result<Value, SchemeError>
where
    T: FromHub + ToHub<Hub = <T as FromHub>::Hub> + Serialize + ApplyDefaults + Kind + Clone,
    <T as FromHub>::Hub: SchemeHub + Clone,
{
    converted_as::<T, _>(object, warnings, |external| {
        serde_json::to_value(external)
            .map_err(|e| SchemeError::new(ErrorKind::Encoding, "", e.to_string()))
    })
}

/// `object` converted to `T` and `encode`d, with what `T` cannot keep of it reported.
fn converted_as<T, R>(
    object: HubObject,
    warnings: &mut Vec<Warning>,
    encode: impl FnOnce(&T) -> Result<R, SchemeError>,
) -> Result<R, SchemeError>
where
    T: FromHub + ToHub<Hub = <T as FromHub>::Hub> + ApplyDefaults + Kind + Clone,
    <T as FromHub>::Hub: SchemeHub + Clone,
{
    let (external, read_back) = from_hub_checked::<T>(hub_of::<T>(object)?);
    let encoded = encode(&external)?;
    if let Some(hub) = read_back {
        report_lossy(external, &hub, warnings)?;
    }
    Ok(encoded)
}

/// Converts `hub` to `T`, moving it when nothing can be lost, and returns with it the hub
/// object to read it back against (with [`report_lossy`]) when something may be.
///
/// Nothing is lost when the hub object comes back unchanged from `T` (the generated
/// `FromHub::round_trips`) and defaulting in `T` would change nothing in the converted object
/// (the generated `ApplyDefaults::is_defaulted`): the read-back would then give `hub` itself.
/// Both answer `false` when unsure, so the read-back runs whenever it could find something.
/// Debug builds check that conclusion by the read-back on every conversion.
fn from_hub_checked<T>(hub: <T as FromHub>::Hub) -> (T, Option<<T as FromHub>::Hub>)
where
    T: FromHub + ToHub<Hub = <T as FromHub>::Hub> + ApplyDefaults + Clone,
    <T as FromHub>::Hub: Clone + PartialEq,
{
    if !T::round_trips(&hub) {
        return (T::from_hub(&hub), Some(hub));
    }
    #[cfg(debug_assertions)]
    let original = hub.clone();
    let external = T::from_owned_hub(hub);
    if !external.is_defaulted() {
        // The round trip is exact, so the hub object is the converted one taken back.
        let hub = external.clone().into_hub();
        return (external, Some(hub));
    }
    #[cfg(debug_assertions)]
    {
        let mut read_back = external.clone();
        read_back.apply_defaults();
        assert!(
            read_back.into_hub() == original,
            "round_trips and is_defaulted said {} keeps this object, but reading it back differs",
            std::any::type_name::<T>()
        );
    }
    (external, None)
}

/// Reports what `external`, converted from `hub`, cannot keep: what a reader of the output
/// gets (decode-side defaulting, then back to the hub) against `hub`, leaf by leaf. The typed
/// comparison is all it costs when nothing is lost.
fn report_lossy<T>(
    external: T,
    hub: &<T as FromHub>::Hub,
    warnings: &mut Vec<Warning>,
) -> Result<(), SchemeError>
where
    T: FromHub + ToHub<Hub = <T as FromHub>::Hub> + ApplyDefaults + Kind,
    <T as FromHub>::Hub: SchemeHub,
{
    let mut read_back = external;
    read_back.apply_defaults();
    let again = read_back.into_hub();
    if again != *hub {
        let before = serde_json::to_value(hub)
            .map_err(|e| SchemeError::new(ErrorKind::Encoding, "", e.to_string()))?;
        let after = serde_json::to_value(&again)
            .map_err(|e| SchemeError::new(ErrorKind::Encoding, "", e.to_string()))?;
        for change in diff::changes(&before, &after) {
            warnings.push(Warning::Lossy {
                path: change.path,
                message: format!(
                    "{} cannot be kept in {}: it reads back as {}",
                    change.before,
                    T::API_VERSION,
                    change.after
                ),
            });
        }
    }
    Ok(())
}

/// The indefinite article before a kind's name, by how it is read aloud: "an APIService",
/// "a FlowSchema". An acronym (two capitals in a row) is read letter by letter, so A, E, F, H,
/// I, L, M, N, O, R, S and X, whose names start with a vowel sound, take "an"; a word takes
/// "an" before A, E, I and O.
fn article(kind: &str) -> &'static str {
    let mut letters = kind.chars();
    let (Some(first), second) = (letters.next(), letters.next()) else {
        return "a";
    };
    let acronym = second.is_some_and(|c| c.is_ascii_uppercase());
    let vowel_sound = if acronym {
        "AEFHILMNORSX".contains(first.to_ascii_uppercase())
    } else {
        // A word starting with U mostly sounds like "you" (a User, a Unit).
        "AEIO".contains(first.to_ascii_uppercase())
    };
    if vowel_sound { "an" } else { "a" }
}

/// `spec.rules[0].subjects` from serde_path_to_error's path.
fn kube_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}

/// `spec.rules[0].foo` from serde_ignored's path.
fn ignored_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", ignored_path(parent)),
        Path::Map { parent, key } => {
            let parent = ignored_path(parent);
            if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => ignored_path(parent),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn supported_lists_the_registry_preferred_version_first() {
        assert_eq!(
            super::supported(),
            "flowcontrol.apiserver.k8s.io/{v1,v1beta3,v1beta2,v1beta1,v1alpha1} FlowSchema, \
             PriorityLevelConfiguration and their lists; apiregistration.k8s.io/{v1,v1beta1} \
             APIService and APIServiceList; v1 List of any of these"
        );
    }

    #[test]
    fn every_codec_is_found_by_its_identity() {
        for codec in super::CODECS {
            let found = super::lookup(&codec.api_version(), codec.kind).unwrap();
            assert!(std::ptr::eq(found, codec), "{}", codec.kind);
        }
        assert_eq!(super::CODECS.len(), 12);
    }

    #[test]
    fn articles_follow_the_sound() {
        for (kind, article) in [
            ("APIService", "an"),
            ("FlowSchema", "a"),
            ("PriorityLevelConfiguration", "a"),
            ("Ingress", "an"),
            ("HTTPRoute", "an"),
            ("UDPRoute", "a"),
            ("UserInfo", "a"),
            ("Endpoints", "an"),
        ] {
            assert_eq!(super::article(kind), article, "{kind}");
        }
    }
}
