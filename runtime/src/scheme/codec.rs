//! The served kinds, each with typed decode, default and encode functions.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::Any;

use super::diff;
use super::document::{InputError, Limits};
use super::encoding::Encoding;
use super::encodings::Encodings;
use super::guard::{self, Guard};
use super::options::{Target, UnknownFields};
use super::report::{ErrorKind, SchemeError, Warning};
use crate::identity::GroupVersionKind;
use crate::version::compare_kube_aware_version_strings;
use crate::{ApplyDefaults, FromHub, HubKind, ToHub};
use k8s_openapi::Resource;

/// The hub types of a scheme whose hub object is `H`: apfkit-runtime's [`HubKind`], which the
/// scheme compares and writes (a bound, implemented for every such type).
pub trait SchemeHub<H>: HubKind<Object = H> + Serialize + PartialEq + Clone {}

impl<H, T: HubKind<Object = H> + Serialize + PartialEq + Clone> SchemeHub<H> for T {}

type DecodeFn<H> = fn(&Value, UnknownFields, &mut Vec<Warning>) -> Result<H, SchemeError>;
type DecodeAsIsFn<H> = fn(&Value) -> Result<H, SchemeError>;
type DefaultFn = fn(&Value, UnknownFields, &mut Vec<Warning>) -> Result<Value, SchemeError>;
type EncodeFn<H> = fn(H, &mut Vec<Warning>) -> Result<Value, SchemeError>;
/// An object in its version's type, as a [`Codec`] decoded it.
pub(super) type Typed = Box<dyn Any + Send>;

/// A document's object in its version's type, as a reader decoded it: within the limits,
/// without repeated keys or fields the type lacks.
pub(super) struct Decoded {
    /// The codec of the object's version and kind: a `&'static Codec<H>` of the scheme that
    /// read it (the documents that carry it do not name the hub type).
    codec: &'static (dyn Any + Sync),
    /// The codec's kind, for messages.
    identity: GroupVersionKind,
    /// The object, a value of the codec's type.
    pub(super) object: Typed,
}

impl std::fmt::Debug for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.identity.api_version(), self.identity.kind)
    }
}

impl Decoded {
    /// `object`, decoded by `codec`.
    pub(super) fn new<H: 'static>(codec: &'static Codec<H>, object: Typed) -> Self {
        Decoded {
            codec,
            identity: codec.gvk(),
            object,
        }
    }

    /// The object's `apiVersion`.
    pub(super) fn api_version(&self) -> String {
        self.identity.api_version()
    }

    /// The codec that decoded the object, if it is of a scheme over `H`.
    pub(super) fn codec<H: 'static>(&self) -> Result<&'static Codec<H>, SchemeError> {
        let codec: &'static (dyn Any + Sync) = self.codec;
        (codec as &'static dyn Any)
            .downcast_ref::<Codec<H>>()
            .ok_or_else(|| {
                SchemeError::new(
                    ErrorKind::UnsupportedKind,
                    "",
                    format!("{self:?} was read by another scheme"),
                )
            })
    }

    /// The object defaulted in its version and converted to the hub by `codec` (its own).
    pub(super) fn into_hub<H>(self, codec: &'static Codec<H>) -> Result<H, SchemeError> {
        codec
            .typed_to_hub(self.object)
            .ok_or_else(|| not_of_its_codec(codec))
    }

    /// The object defaulted in its version and written as `encoding` says; `input_length`
    /// sizes the output.
    pub(super) fn into_defaulted<H>(
        self,
        codec: &'static Codec<H>,
        encoding: Encoding,
        input_length: usize,
    ) -> Result<Vec<u8>, SchemeError> {
        codec
            .default_typed(self.object, encoding, input_length)
            .ok_or_else(|| not_of_its_codec(codec))?
    }
}

/// An object that is not of the type of the codec that decoded it, which cannot happen.
fn not_of_its_codec<H>(codec: &Codec<H>) -> SchemeError {
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
type TypedToHubFn<H> = fn(Typed) -> Option<H>;
type DefaultTypedFn = fn(Typed, Encoding, usize) -> Option<Result<Vec<u8>, SchemeError>>;
type EncodeIntoFn<H> = fn(H, Encoding, &mut Vec<u8>, &mut Vec<Warning>) -> Result<(), SchemeError>;
type FromProtobufFn<H> = fn(&[u8], &Limits) -> Option<Result<H, InputError>>;
type ZeroFn = fn() -> Value;

/// One kind of one group-version: its identity and its typed functions, made by
/// [`Codec::of`] in generated code.
pub struct Codec<H: 'static> {
    /// API group, empty for the core group.
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// The plural resource name.
    pub plural: &'static str,
    /// Whether a hub object is of this codec's kind.
    pub(super) holds: fn(&H) -> bool,
    decode: DecodeFn<H>,
    decode_as_is: DecodeAsIsFn<H>,
    default: DefaultFn,
    encode: EncodeFn<H>,
    decode_guarded: DecodeGuardedFn,
    decode_yaml: DecodeYamlFn,
    typed_to_hub: TypedToHubFn<H>,
    default_typed: DefaultTypedFn,
    encode_into: EncodeIntoFn<H>,
    from_protobuf: FromProtobufFn<H>,
    zero: ZeroFn,
}

impl<H> std::fmt::Debug for Codec<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Codec")
            .field("group", &self.group)
            .field("version", &self.version)
            .field("kind", &self.kind)
            .field("plural", &self.plural)
            .finish_non_exhaustive()
    }
}

impl<H: 'static> Codec<H> {
    /// The codec of the versioned kind `T`, whose hub kind the hub object `H` holds: what a
    /// generated scheme lists for every served kind of every version.
    pub const fn of<T>() -> Codec<H>
    where
        T: DeserializeOwned
            + Serialize
            + ApplyDefaults
            + Resource
            + ToHub
            + FromHub
            + ToHub<Hub = <T as FromHub>::Hub>
            + Encodings
            + Clone
            + Default
            + Send
            + 'static,
        <T as FromHub>::Hub: SchemeHub<H>,
    {
        Codec {
            group: T::GROUP,
            version: T::VERSION,
            kind: T::KIND,
            plural: T::URL_PATH_SEGMENT,
            holds: <<T as FromHub>::Hub as HubKind>::holds,
            decode: decode_to_hub_as::<T, H>,
            decode_as_is: decode_as_is::<T, H>,
            default: default_as::<T>,
            encode: encode_as::<T, H>,
            decode_guarded: decode_guarded_as::<T>,
            decode_yaml: decode_yaml_as::<T>,
            typed_to_hub: typed_to_hub_as::<T, H>,
            default_typed: default_typed_as::<T>,
            encode_into: encode_into_as::<T, H>,
            from_protobuf: from_protobuf_as::<T, H>,
            zero: zero_as::<T>,
        }
    }

    /// The zero value of this version's type as JSON, undefaulted: what Go's
    /// `encoding/json` writes for a new object of the kind, bare fields (non-pointer structs,
    /// required scalars) at their zero values. kube-apiserver's field manager compares a
    /// created object against it, so a field already present in it is not "added".
    pub fn zero(&self) -> Value {
        (self.zero)()
    }

    /// The codec's group, version and kind.
    pub const fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::from_static(self.group, self.version, self.kind)
    }

    /// The `apiVersion` of the codec's objects: `group/version`, the version alone in the
    /// core group.
    pub fn api_version(&self) -> String {
        self.gvk().api_version()
    }

    /// Decodes, defaults and converts to the hub.
    pub fn decode(
        &self,
        object: &Value,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
    ) -> Result<H, SchemeError> {
        (self.decode)(object, unknown, warnings)
    }

    /// Decodes an object as it is (no defaulting, unknown fields dropped) and converts it to
    /// the hub, as a conversion webhook must.
    pub fn decode_as_is(&self, object: &Value) -> Result<H, SchemeError> {
        (self.decode_as_is)(object)
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
    pub(super) fn typed_to_hub(&self, typed: Typed) -> Option<H> {
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
        hub: H,
        encoding: Encoding,
        input_length: usize,
        warnings: &mut Vec<Warning>,
    ) -> Result<Vec<u8>, SchemeError> {
        let mut out = Vec::with_capacity(expected_length(input_length));
        (self.encode_into)(hub, encoding, &mut out, warnings)?;
        Ok(out)
    }

    /// [`Codec::encode_to`], appending to `out` (many objects into one buffer). On an error
    /// `out` may hold part of the object.
    ///
    /// # Errors
    ///
    /// As [`Codec::encode_to`].
    pub fn encode_into(
        &self,
        hub: H,
        encoding: Encoding,
        out: &mut Vec<u8>,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SchemeError> {
        (self.encode_into)(hub, encoding, out, warnings)
    }

    /// Reads an object of this codec's version and kind from Kubernetes protobuf in its
    /// envelope (as etcd holds it) straight into its type, within `limits`, then defaults it
    /// and converts it to the hub; fields its type lacks are dropped. `None` when the
    /// envelope holds another version or kind, or the kind has no protobuf form: read it with
    /// [`super::Scheme::read`] then.
    pub fn decode_protobuf(&self, bytes: &[u8], limits: &Limits) -> Option<Result<H, InputError>> {
        (self.from_protobuf)(bytes, limits)
    }

    /// Converts a hub object to this version and encodes it, reporting what it cannot keep.
    pub fn encode(&self, hub: H, warnings: &mut Vec<Warning>) -> Result<Value, SchemeError> {
        (self.encode)(hub, warnings)
    }
}

/// What `codecs` support, for error messages: every group with its versions (preferred first)
/// and kinds, and the `v1 List` envelope:
/// `flowcontrol.apiserver.k8s.io/{v1,v1beta3,...} FlowSchema, PriorityLevelConfiguration and
/// their lists; ...; v1 List of any of these`.
pub(super) fn supported<H>(codecs: &[Codec<H>]) -> String {
    {
        // Group → version → kinds, groups in the registry's order.
        type Versions = Vec<(&'static str, Vec<&'static str>)>;
        let mut groups: Vec<(&str, Versions)> = Vec::new();
        for codec in codecs {
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
    }
}

/// The codec of the same kind in the target version.
pub(super) fn resolve_target<H>(
    codecs: &'static [Codec<H>],
    source: &Codec<H>,
    target: &Target,
) -> Result<&'static Codec<H>, SchemeError> {
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
    codecs
        .iter()
        .find(|c| c.group == source.group && c.version == target.version && c.kind == source.kind)
        .ok_or_else(|| {
            let served: Vec<&str> = codecs
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

/// Decodes a typed value, with unknown fields handled as `unknown` says and errors at their path.
fn decode<T: DeserializeOwned>(
    object: &Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<T, SchemeError> {
    let (typed, unknown_paths) = decode_collecting(object)?;
    unknown.apply(unknown_fields(unknown_paths), warnings)?;
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

/// The unknown fields at `paths`.
pub fn unknown_fields(paths: Vec<String>) -> Vec<Warning> {
    paths
        .into_iter()
        .map(|path| Warning::UnknownField { path })
        .collect()
}

fn decode_to_hub_as<T, H>(
    object: &Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<H, SchemeError>
where
    T: DeserializeOwned + ApplyDefaults + ToHub,
    T::Hub: HubKind<Object = H>,
{
    let typed: T = decode(object, unknown, warnings)?;
    Ok(defaulted_hub(typed))
}

fn decode_as_is<T, H>(object: &Value) -> Result<H, SchemeError>
where
    T: DeserializeOwned + ToHub,
    T::Hub: HubKind<Object = H>,
{
    let typed: T = decode(object, UnknownFields::Ignore, &mut Vec::new())?;
    Ok(typed.into_hub().wrap())
}

/// `typed` defaulted in its version and converted to the hub.
fn defaulted_hub<T, H>(mut typed: T) -> H
where
    T: ApplyDefaults + ToHub,
    T::Hub: HubKind<Object = H>,
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

fn zero_as<T: Default + Serialize>() -> Value {
    serde_json::to_value(T::default()).unwrap_or_else(|_| Value::Object(serde_json::Map::new()))
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

fn typed_to_hub_as<T, H>(typed: Typed) -> Option<H>
where
    T: ApplyDefaults + ToHub + 'static,
    T::Hub: HubKind<Object = H>,
{
    Some(defaulted_hub(*typed.downcast::<T>().ok()?))
}

fn from_protobuf_as<T, H>(bytes: &[u8], limits: &Limits) -> Option<Result<H, InputError>>
where
    T: Encodings + ApplyDefaults + ToHub,
    T::Hub: HubKind<Object = H>,
{
    Some(T::from_protobuf(bytes, limits)?.map(defaulted_hub::<T, H>))
}

fn default_typed_as<T>(
    typed: Typed,
    encoding: Encoding,
    capacity: usize,
) -> Option<Result<Vec<u8>, SchemeError>>
where
    T: Serialize + ApplyDefaults + Resource + Encodings + 'static,
{
    let mut typed = *typed.downcast::<T>().ok()?;
    typed.apply_defaults();
    Some(encoding.encode::<T>(&typed, capacity))
}

/// The hub object `object` holds, if it is of `T`'s kind.
fn hub_of<T, H>(object: H) -> Result<<T as FromHub>::Hub, SchemeError>
where
    T: FromHub + Resource,
    <T as FromHub>::Hub: HubKind<Object = H>,
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

fn encode_into_as<T, H>(
    object: H,
    encoding: Encoding,
    out: &mut Vec<u8>,
    warnings: &mut Vec<Warning>,
) -> Result<(), SchemeError>
where
    T: FromHub + ToHub<Hub = <T as FromHub>::Hub> + Encodings + ApplyDefaults + Resource + Clone,
    <T as FromHub>::Hub: SchemeHub<H>,
{
    converted_as::<T, H, _>(object, warnings, |external| {
        encoding.encode_into::<T>(external, out)
    })
}

fn encode_as<T, H>(object: H, warnings: &mut Vec<Warning>) -> Result<Value, SchemeError>
where
    T: FromHub + ToHub<Hub = <T as FromHub>::Hub> + Serialize + ApplyDefaults + Resource + Clone,
    <T as FromHub>::Hub: SchemeHub<H>,
{
    converted_as::<T, H, _>(object, warnings, |external| {
        serde_json::to_value(external)
            .map_err(|e| SchemeError::new(ErrorKind::Encoding, "", e.to_string()))
    })
}

/// `object` converted to `T` and `encode`d, with what `T` cannot keep of it reported.
fn converted_as<T, H, R>(
    object: H,
    warnings: &mut Vec<Warning>,
    encode: impl FnOnce(&T) -> Result<R, SchemeError>,
) -> Result<R, SchemeError>
where
    T: FromHub + ToHub<Hub = <T as FromHub>::Hub> + ApplyDefaults + Resource + Clone,
    <T as FromHub>::Hub: SchemeHub<H>,
{
    let (external, read_back) = from_hub_checked::<T>(hub_of::<T, H>(object)?);
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
    T: FromHub + ToHub<Hub = <T as FromHub>::Hub> + ApplyDefaults + Resource,
    <T as FromHub>::Hub: Serialize + PartialEq,
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
    use super::Codec;
    use crate::scheme::test_kind::Widget;

    #[test]
    fn a_core_group_kind_has_the_version_alone_for_api_version() {
        let mut codec = Codec::of::<Widget>();
        assert_eq!(codec.api_version(), "example.com/v1");
        codec.group = "";
        assert_eq!(codec.api_version(), "v1");
        assert_eq!(codec.gvk().group_version().api_root(), "api/v1");
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
