//! Events as kube-apiserver serves them: core/v1 (`/api/v1/.../events`) and events.k8s.io/v1
//! (`/apis/events.k8s.io/v1/.../events`), two resources over one storage, as upstream's
//! storage factory makes them cohabit: each object kept under `events` as a core/v1 Event in
//! protobuf and read through either version, events.k8s.io/v1's fields converted as
//! `pkg/apis/events/v1/conversion.go` converts them (`regarding` is `involvedObject`, `note`
//! is `message`, `reportingController` is `reportingComponent`, the `deprecated…` fields the
//! core ones). The strategy is `pkg/registry/core/event`'s: any update (a PUT may create,
//! none needs a `resourceVersion`), no generation, no garbage collection of dependents
//! (`Unsupported`), and `ValidateEventCreate` and `ValidateEventUpdate`, whose rules depend on
//! the request's version (events.k8s.io/v1's are stricter); `kubectl get events`' columns.

use std::sync::Arc;

use apfkit_apiextensions::ServedObject;
use apfkit_apiextensions::json_kind::JsonVersion;
use apfkit_apiserver::error::Cause;
use apfkit_apiserver::store::{
    Generation, ResourceConfig, ResourceError, Served, SharedVersion, Strategy, VersionCodec,
};
use apfkit_apiserver::table::{Column, Printer, column, field_doc, human_duration, now_seconds};
use apfkit_runtime::field::{BadValue, FieldError, Path, names};
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::scheme::{
    Encoding, ErrorKind, Limits, SchemeError, StorageEncoding, UnknownFields, Warning,
};
use serde_json::Value;

use crate::metadata_errors;

/// The group of the newer Events API.
const EVENTS_GROUP: &str = "events.k8s.io";

/// Where both resources keep their objects.
const PLURAL: &str = "events";

/// events.k8s.io/v1's field and the core/v1 field it is, where the names differ
/// (`Convert_v1_Event_To_core_Event`).
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// The field labels core/v1 Events select on (`AddFieldLabelConversionsForEvent`).
const CORE_FIELD_LABELS: [&str; 13] = [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "metadata.namespace",
    "metadata.name",
];

/// events.k8s.io/v1's field labels and the core ones they stand for (its own
/// `AddFieldLabelConversionsForEvent`).
const EVENTS_FIELD_LABELS: [(&str, &str); 12] = [
    ("reason", "reason"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    (
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
    ("type", "type"),
    ("metadata.namespace", "metadata.namespace"),
    ("metadata.name", "metadata.name"),
];

/// Both resources: core/v1 `events` and events.k8s.io/v1 `events`, each stored as a core/v1
/// Event under `events`.
pub(crate) fn resources<H: Send + Sync + 'static>()
-> Result<[Served<ServedObject<H>>; 2], ResourceError> {
    let core: SharedVersion<ServedObject<H>> = Arc::new(core_version());
    let config = |group: &'static str| {
        ResourceConfig::builtin(
            GroupVersionKind::from_static(group, "v1", "Event"),
            PLURAL,
            true,
        )
        .with_short_names(["ev"])
        .with_generation(Generation::Untracked)
        .stored_at(PLURAL, StorageEncoding::Protobuf)
        .with_kube_openapi()
    };
    let core_events = Served::with_versions(config(""), PLURAL.to_owned(), vec![core.clone()])?
        .with_strategy(EventStrategy::new());
    let events_version: SharedVersion<ServedObject<H>> = Arc::new(EventsV1 {
        gvk: GroupVersionKind::from_static(EVENTS_GROUP, "v1", "Event"),
        own: JsonVersion::new(EVENTS_GROUP, "v1", "Event", PLURAL, normalize_events)
            .with_zero(events_zero)
            .with_protobuf(write_protobuf, crate::protobuf::read_stored),
        core: core.clone(),
    });
    let mut events = Served::with_versions(
        config(EVENTS_GROUP),
        PLURAL.to_owned(),
        vec![events_version],
    )?
    .with_strategy(EventStrategy::new());
    // Kept as core/v1 Events, as kube-apiserver keeps both (its storage version of `events`).
    events.storage = core;
    Ok([core_events, events])
}

/// The core/v1 version: read as k8s-openapi's `Event`, stored in protobuf.
fn core_version() -> JsonVersion {
    JsonVersion::new("", "v1", "Event", PLURAL, normalize_core)
        .with_zero(core_zero)
        .stored_as_kube_stores_it()
        .with_field_labels(&CORE_FIELD_LABELS)
        .with_field_values(core_field_value)
        .with_protobuf(write_protobuf, crate::protobuf::read_stored)
}

fn write_protobuf(object: &Value) -> Result<Vec<u8>, String> {
    crate::protobuf::write(object).unwrap_or_else(|| Err("not an Event".to_owned()))
}

/// A new core/v1 Event as Go writes it: its struct fields and times without `omitempty`'s
/// effect (structs and `metav1.Time` are never omitted; a zero time is null).
fn core_zero() -> Value {
    serde_json::json!({"metadata": {}, "involvedObject": {}, "source": {},
        "firstTimestamp": null, "lastTimestamp": null, "eventTime": null,
        "reportingComponent": "", "reportingInstance": ""})
}

/// A new events.k8s.io/v1 Event as Go writes it.
fn events_zero() -> Value {
    serde_json::json!({"metadata": {}, "eventTime": null, "regarding": {},
        "deprecatedSource": {}, "deprecatedFirstTimestamp": null,
        "deprecatedLastTimestamp": null})
}

/// The `MicroTime` fields of both versions.
const MICRO_TIMES: [&str; 2] = ["eventTime", "series.lastObservedTime"];

/// An Event read as `T` (a version's generated type, `apfkit_types::builtin`) reads it, its times as `MicroTime`
/// reads them, in the shape Go gives it once decoded.
fn normalize_as<T: serde::de::DeserializeOwned + serde::Serialize>(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    crate::micro_time_errors(&object, &MICRO_TIMES)?;
    let mut kept = apfkit_apiextensions::json_kind::typed::<T>(object, unknown, warnings)?;
    apfkit_apiserver::go_shape::as_decoded(&mut kept);
    Ok(kept)
}

fn normalize_core(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    normalize_as::<apfkit_types::builtin::core::v1::Event>(object, unknown, warnings)
}

fn normalize_events(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    normalize_as::<apfkit_types::builtin::events::v1::Event>(object, unknown, warnings)
}

/// An events.k8s.io/v1 Event as the core/v1 Event it is (`apiVersion` too).
fn to_core(mut event: Value) -> Value {
    if let Some(fields) = event.as_object_mut() {
        for (newer, core) in RENAMED {
            if let Some(value) = fields.remove(newer) {
                fields.insert(core.to_owned(), value);
            }
        }
        fields.insert("apiVersion".to_owned(), "v1".into());
    }
    event
}

/// A core/v1 Event as the events.k8s.io/v1 Event it is.
fn to_events(mut event: Value) -> Value {
    if let Some(fields) = event.as_object_mut() {
        for (newer, core) in RENAMED {
            if let Some(value) = fields.remove(core) {
                fields.insert(newer.to_owned(), value);
            }
        }
        fields.insert("apiVersion".to_owned(), "events.k8s.io/v1".into());
    }
    event
}

/// The text at `pointer`, "" when absent.
fn text<'a>(event: &'a Value, pointer: &str) -> &'a str {
    event
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `ToSelectableFields`: `source` is the source's component, else the reporting controller;
/// the others the text at their path.
fn core_field_value(event: &Value, field: &str) -> Option<String> {
    if field == "source" {
        let component = text(event, "/source/component");
        let source = if component.is_empty() {
            text(event, "/reportingComponent")
        } else {
            component
        };
        return Some(source.to_owned());
    }
    let pointer = format!("/{}", field.replace('.', "/"));
    event
        .pointer(&pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// events.k8s.io/v1 Events: a request's object converted to the core/v1 Event the server
/// holds, and back for answers; their own protobuf message.
struct EventsV1<H> {
    gvk: GroupVersionKind,
    /// The version's own reading and writing (events-shaped JSON, its protobuf).
    own: JsonVersion,
    /// The core/v1 version: how stored objects read.
    core: SharedVersion<ServedObject<H>>,
}

impl<H> std::fmt::Debug for EventsV1<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventsV1")
            .field("gvk", &self.gvk)
            .finish_non_exhaustive()
    }
}

impl<H> EventsV1<H> {
    /// A hub (core-shaped) object in this version's shape.
    fn own_shaped(hub: ServedObject<H>) -> Result<ServedObject<H>, SchemeError> {
        match hub {
            ServedObject::Custom(object) if object.kind == "Event" => {
                // As Go writes the events.k8s.io/v1 type: its `omitempty` strings left out,
                // its zero times null.
                let mut event = to_events(object.to_value());
                apfkit_apiserver::go_shape::as_stored(&mut event);
                apfkit_apiextensions::CustomObject::from_value(event).map(ServedObject::custom)
            }
            _ => Err(SchemeError::new(
                ErrorKind::InvalidValue,
                "",
                "not an Event".to_owned(),
            )),
        }
    }

    /// An object of this version's shape as the core-shaped hub object.
    fn hub_of(own: ServedObject<H>) -> Result<ServedObject<H>, SchemeError> {
        match own {
            ServedObject::Custom(object) => {
                apfkit_apiextensions::CustomObject::from_value(to_core(object.to_value()))
                    .map(ServedObject::custom)
            }
            builtin => Ok(builtin),
        }
    }
}

impl<H: Send + Sync + 'static> VersionCodec<ServedObject<H>> for EventsV1<H> {
    fn gvk(&self) -> &GroupVersionKind {
        &self.gvk
    }
    fn zero(&self) -> Value {
        events_zero()
    }
    fn decode(
        &self,
        object: &Value,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
    ) -> Result<ServedObject<H>, SchemeError> {
        Self::hub_of(self.own.decode(object, unknown, warnings)?)
    }
    fn decode_as_is(&self, object: &Value) -> Result<ServedObject<H>, SchemeError> {
        Self::hub_of(VersionCodec::<ServedObject<H>>::decode_as_is(
            &self.own, object,
        )?)
    }
    fn encode_into(
        &self,
        hub: ServedObject<H>,
        encoding: Encoding,
        out: &mut Vec<u8>,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SchemeError> {
        self.own
            .encode_into(Self::own_shaped(hub)?, encoding, out, warnings)
    }
    fn encode(
        &self,
        hub: ServedObject<H>,
        warnings: &mut Vec<Warning>,
    ) -> Result<Value, SchemeError> {
        self.own.encode(Self::own_shaped(hub)?, warnings)
    }
    fn decode_stored(&self, bytes: &[u8], limits: &Limits) -> Result<ServedObject<H>, String> {
        self.core.decode_stored(bytes, limits)
    }
    fn protobuf(&self) -> bool {
        true
    }
    fn convert_field_label(&self, field: &str) -> Result<(), String> {
        if EVENTS_FIELD_LABELS.iter().any(|(label, _)| *label == field) {
            Ok(())
        } else {
            Err(format!("field label not supported: {field}"))
        }
    }
    fn field_value(&self, object: &ServedObject<H>, field: &str) -> Option<String> {
        let (_, core) = EVENTS_FIELD_LABELS
            .iter()
            .find(|(label, _)| *label == field)?;
        self.core.field_value(object, core)
    }
}

/// `eventStrategy`.
struct EventStrategy {
    printer: Printer,
}

impl EventStrategy {
    fn new() -> Self {
        EventStrategy { printer: printer() }
    }
}

impl<H> Strategy<ServedObject<H>> for EventStrategy {
    fn allows_create_on_update(&self) -> bool {
        true
    }
    fn allows_unconditional_update(&self) -> bool {
        true
    }
    fn collects_dependents(&self) -> bool {
        false
    }
    fn validate(
        &self,
        object: &ServedObject<H>,
        old: Option<&ServedObject<H>>,
        api_version: &str,
    ) -> Vec<Cause> {
        let (ServedObject::Custom(object), old) = (object, old) else {
            return Vec::new();
        };
        let event = object.to_value();
        let old = match old {
            Some(ServedObject::Custom(old)) => Some(old.to_value()),
            _ => None,
        };
        check(&event, old.as_ref(), api_version)
            .iter()
            .map(Cause::from)
            .collect()
    }
    fn printer(&self) -> Option<&Printer> {
        Some(&self.printer)
    }
}

/// Whether a request of `api_version` is judged by the legacy rules alone (core/v1 and
/// events.k8s.io/v1beta1, for compatibility).
fn legacy_only(api_version: &str) -> bool {
    api_version == "v1" || api_version == "events.k8s.io/v1beta1"
}

/// Whether an Event's time field is set (not Go's zero time).
fn set(event: &Value, pointer: &str) -> bool {
    event.pointer(pointer).is_some_and(|time| !time.is_null())
}

/// `ValidateEventCreate` and `ValidateEventUpdate` (`pkg/apis/core/validation/events.go`) of
/// a core-shaped Event, for a request of `api_version`.
fn check(event: &Value, old: Option<&Value>, api_version: &str) -> Vec<FieldError> {
    let mut errors = legacy_errors(event, api_version);
    if legacy_only(api_version) {
        return errors;
    }
    match old {
        None => {
            errors.extend(metadata_errors(event, names::dns1123_subdomain));
            errors.extend(series_errors(event));
            if !set(event, "/eventTime") {
                errors.push(FieldError::required("eventTime", ""));
            }
            let kind = text(event, "/type");
            if kind != "Normal" && kind != "Warning" {
                errors.push(FieldError::invalid(
                    "type",
                    BadValue::Str(String::new()),
                    format!("has invalid value: {kind}"),
                ));
            }
            let unset = |path: &str| {
                FieldError::invalid(path, BadValue::Str(String::new()), "needs to be unset")
            };
            if set(event, "/firstTimestamp") {
                errors.push(unset("firstTimestamp"));
            }
            if set(event, "/lastTimestamp") {
                errors.push(unset("lastTimestamp"));
            }
            if event.get("count").and_then(Value::as_i64).unwrap_or(0) != 0 {
                errors.push(unset("count"));
            }
            if !text(event, "/source/component").is_empty()
                || !text(event, "/source/host").is_empty()
            {
                errors.push(unset("source"));
            }
        }
        Some(old) => {
            if event.get("series") != old.get("series") {
                errors.extend(series_errors(event));
            }
            for field in [
                "involvedObject",
                "reason",
                "message",
                "source",
                "firstTimestamp",
                "lastTimestamp",
                "count",
                // Upstream checks `reason` twice; its error is answered once.
                "type",
                "eventTime",
                "action",
                "related",
                "reportingComponent",
                "reportingInstance",
            ] {
                let (now, then) = (comparable(event, field), comparable(old, field));
                if now != then {
                    let path = if field == "reportingComponent" {
                        "reportingController"
                    } else {
                        field
                    };
                    errors.push(FieldError::invalid(
                        path,
                        immutable_value(event, field),
                        "field is immutable",
                    ));
                }
            }
        }
    }
    errors
}

/// A field's value as Go compares it: absent, null and empty alike for its zero value.
fn comparable(event: &Value, field: &str) -> Value {
    match event.get(field) {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(text)) if text.is_empty() => Value::Null,
        Some(Value::Number(n)) if n.as_i64() == Some(0) => Value::Null,
        Some(Value::Object(map)) if map.values().all(Value::is_null) => Value::Null,
        Some(value) => value.clone(),
    }
}

/// The new value an immutable field's error quotes, as `json.Marshal` writes kube's internal
/// type (whose structs have no JSON tags: Go's field names, every field).
fn immutable_value(event: &Value, field: &str) -> BadValue {
    let value = event.get(field).filter(|value| !value.is_null());
    let texts = |fields: &[(&'static str, &str)]| {
        let fields: Vec<(&str, Value)> = fields
            .iter()
            .map(|(go, json)| (*go, Value::from(text(value.unwrap_or(&Value::Null), json))))
            .collect();
        BadValue::go_struct(&fields)
    };
    match field {
        "related" if value.is_none() => BadValue::Go("null".to_owned()),
        "involvedObject" | "related" => texts(&[
            ("Kind", "/kind"),
            ("Namespace", "/namespace"),
            ("Name", "/name"),
            ("UID", "/uid"),
            ("APIVersion", "/apiVersion"),
            ("ResourceVersion", "/resourceVersion"),
            ("FieldPath", "/fieldPath"),
        ]),
        "source" => texts(&[("Component", "/component"), ("Host", "/host")]),
        "count" => BadValue::Int(value.and_then(Value::as_i64).unwrap_or(0)),
        "firstTimestamp" | "lastTimestamp" | "eventTime" => match value {
            Some(time) => BadValue::Go(time.to_string()),
            None => BadValue::Go("null".to_owned()),
        },
        _ => BadValue::Str(value.and_then(Value::as_str).unwrap_or_default().to_owned()),
    }
}

/// `validateV1EventSeries`.
fn series_errors(event: &Value) -> Vec<FieldError> {
    let Some(series) = event.get("series").filter(|s| !s.is_null()) else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errors.push(FieldError::invalid(
            "series.count",
            BadValue::Str(String::new()),
            "should be at least 2",
        ));
    }
    if !set(series, "/lastObservedTime") {
        errors.push(FieldError::required("series.lastObservedTime", ""));
    }
    errors
}

/// `legacyValidateEvent`.
fn legacy_errors(event: &Value, api_version: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let controller_field = if api_version == "v1" {
        "reportingComponent"
    } else {
        "reportingController"
    };
    let namespace = text(event, "/metadata/namespace");
    let involved_namespace = text(event, "/involvedObject/namespace");
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            BadValue::Str(involved_namespace.to_owned()),
            "does not match event.namespace",
        )
    };
    if !set(event, "/eventTime") {
        if involved_namespace.is_empty() {
            if !namespace.is_empty() && namespace != "default" {
                errors.push(mismatch());
            }
        } else if namespace != involved_namespace {
            errors.push(mismatch());
        }
        return errors;
    }
    if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
        errors.push(mismatch());
    }
    let controller = text(event, "/reportingComponent");
    if controller.is_empty() {
        errors.push(FieldError::required(controller_field, ""));
    }
    errors.extend(
        names::qualified_name(controller)
            .into_iter()
            .map(|message| {
                FieldError::invalid(
                    Path::new(controller_field),
                    BadValue::Str(controller.to_owned()),
                    message,
                )
            }),
    );
    let limited = |errors: &mut Vec<FieldError>, field: &str, limit: usize, required: bool| {
        let value = text(event, &format!("/{field}"));
        if required && value.is_empty() {
            errors.push(FieldError::required(field, ""));
        }
        if value.len() > limit {
            errors.push(FieldError::invalid(
                field,
                BadValue::Str(String::new()),
                format!("can have at most {limit} characters"),
            ));
        }
    };
    limited(&mut errors, "reportingInstance", 128, true);
    limited(&mut errors, "action", 128, true);
    limited(&mut errors, "reason", 128, true);
    limited(&mut errors, "message", 1024, false);
    errors
}

/// `eventColumnDefinitions`: each described by core/v1 Event's documentation.
fn columns() -> Vec<Column> {
    let doc = |field| field_doc("io.k8s.api.core.v1.Event", field);
    vec![
        column("Last Seen", "string", 0, doc("lastTimestamp")),
        column("Type", "string", 0, doc("type")),
        column("Reason", "string", 0, doc("reason")),
        column("Object", "string", 0, doc("involvedObject")),
        column(
            "Subobject",
            "string",
            1,
            field_doc("io.k8s.api.core.v1.ObjectReference", "fieldPath"),
        ),
        column("Source", "string", 1, doc("source")),
        column("Message", "string", 0, doc("message")),
        column("First Seen", "string", 1, doc("firstTimestamp")),
        column("Count", "string", 1, doc("count")),
        Column {
            format: "name".into(),
            ..column(
                "Name",
                "string",
                1,
                field_doc(apfkit_apiserver::table::OBJECT_META, "name"),
            )
        },
    ]
}

/// `translateTimestampSince` of the time at `pointer`: how long ago, or `<unknown>`.
fn since(event: &Value, pointer: &str, now: i64) -> String {
    event
        .pointer(pointer)
        .and_then(Value::as_str)
        .and_then(|time| time.parse::<k8s_openapi::jiff::Timestamp>().ok())
        .map_or_else(
            || "<unknown>".to_owned(),
            |time| human_duration(now - time.as_second()),
        )
}

/// `printEvent`'s cells, of an Event of either version.
fn cells(event: &Value) -> Vec<Value> {
    let event = if event.get("apiVersion").and_then(Value::as_str) == Some("events.k8s.io/v1") {
        std::borrow::Cow::Owned(to_core(event.clone()))
    } else {
        std::borrow::Cow::Borrowed(event)
    };
    let now = now_seconds();
    let first = if set(&event, "/firstTimestamp") {
        since(&event, "/firstTimestamp", now)
    } else {
        since(&event, "/eventTime", now)
    };
    let mut last = if set(&event, "/lastTimestamp") {
        since(&event, "/lastTimestamp", now)
    } else {
        first.clone()
    };
    let mut count = event.get("count").and_then(Value::as_i64).unwrap_or(0);
    if let Some(series) = event.get("series").filter(|s| s.is_object()) {
        last = since(series, "/lastObservedTime", now);
        count = series.get("count").and_then(Value::as_i64).unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let kind = text(&event, "/involvedObject/kind").to_lowercase();
    let name = text(&event, "/involvedObject/name");
    let target = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };
    let or_else = |first: &str, second: &str| {
        if first.is_empty() {
            second.to_owned()
        } else {
            first.to_owned()
        }
    };
    let component = or_else(
        text(&event, "/source/component"),
        text(&event, "/reportingComponent"),
    );
    let instance = or_else(
        text(&event, "/source/host"),
        text(&event, "/reportingInstance"),
    );
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    vec![
        last.into(),
        text(&event, "/type").into(),
        text(&event, "/reason").into(),
        target.into(),
        text(&event, "/involvedObject/fieldPath").into(),
        source.into(),
        text(&event, "/message").trim().into(),
        first.into(),
        count.into(),
        text(&event, "/metadata/name").into(),
    ]
}

fn printer() -> Printer {
    Printer::of("v1", columns(), cells)
}

/// Both versions' shapes, for the tests.
#[cfg(test)]
fn shapes(event: &Value) -> (Value, Value) {
    (to_core(event.clone()), to_events(event.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(event: &Value, old: Option<&Value>, api_version: &str) -> Vec<String> {
        check(event, old, api_version)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Cases of upstream's `TestValidateEventForCoreV1Events`: an old-style Event's
    /// namespace must match its object's.
    #[test]
    fn core_events_are_checked_by_the_legacy_rules() {
        let event = |namespace: &str, involved: &str| {
            json!({"metadata": {"name": "e", "namespace": namespace},
                "involvedObject": {"namespace": involved}})
        };
        assert!(messages(&event("ns", "ns"), None, "v1").is_empty());
        assert!(messages(&event("default", ""), None, "v1").is_empty());
        assert_eq!(
            messages(&event("ns", "other"), None, "v1"),
            ["involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"]
        );
        assert_eq!(
            messages(&event("ns", ""), None, "v1"),
            ["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"]
        );
        // A new-style Event (an eventTime) needs who reported it, and what it did.
        let new_style = json!({"metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"namespace": "ns"}, "eventTime": "2026-12-01T10:00:00.000000Z"});
        assert_eq!(
            messages(&new_style, None, "v1"),
            [
                "reportingComponent: Required value",
                "reportingComponent: Invalid value: \"\": name part must be non-empty",
                "reportingComponent: Invalid value: \"\": name part must consist of alphanumeric \
                 characters, '-', '_' or '.', and must start and end with an alphanumeric \
                 character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
                 validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "reportingInstance: Required value",
                "action: Required value",
                "reason: Required value",
            ]
        );
    }

    /// Cases of upstream's `TestValidateEventForNewV1EventsAPI`: the stricter rules of
    /// events.k8s.io/v1, named with its field names where they differ.
    #[test]
    fn newer_events_are_checked_by_the_strict_rules() {
        let valid = json!({"metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"namespace": "ns"}, "eventTime": "2026-12-01T10:00:00.000000Z",
            "reportingComponent": "example.com/controller", "reportingInstance": "pod-1",
            "action": "Reconcile", "reason": "Done", "type": "Normal"});
        assert!(messages(&valid, None, "events.k8s.io/v1").is_empty());
        let mut odd = valid.clone();
        odd["type"] = "Odd".into();
        odd["count"] = 3.into();
        odd["series"] = json!({"count": 1});
        odd["source"] = json!({"component": "kubelet"});
        odd["reportingComponent"] = "".into();
        assert_eq!(
            messages(&odd, None, "events.k8s.io/v1"),
            [
                "reportingController: Required value",
                "reportingController: Invalid value: \"\": name part must be non-empty",
                "reportingController: Invalid value: \"\": name part must consist of \
                 alphanumeric characters, '-', '_' or '.', and must start and end with an \
                 alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex \
                 used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "type: Invalid value: \"\": has invalid value: Odd",
                "count: Invalid value: \"\": needs to be unset",
                "source: Invalid value: \"\": needs to be unset",
            ]
        );
        // An update may not change what happened.
        let mut changed = valid.clone();
        changed["reason"] = "Other".into();
        changed["message"] = "now".into();
        assert_eq!(
            messages(&changed, Some(&valid), "events.k8s.io/v1"),
            [
                "reason: Invalid value: \"Other\": field is immutable",
                "message: Invalid value: \"now\": field is immutable",
            ]
        );
        // Through core/v1 the same update is allowed.
        assert!(messages(&changed, Some(&valid), "v1").is_empty());
    }

    #[test]
    fn the_two_versions_convert_into_each_other() {
        let newer = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e"}, "regarding": {"kind": "Pod", "name": "p"},
            "note": "started", "reportingController": "kubelet", "deprecatedCount": 2,
            "deprecatedSource": {"component": "kubelet"}});
        let (core, _) = shapes(&newer);
        assert_eq!(
            core,
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
                "involvedObject": {"kind": "Pod", "name": "p"}, "message": "started",
                "reportingComponent": "kubelet", "count": 2,
                "source": {"component": "kubelet"}})
        );
        assert_eq!(to_events(core), newer);
        // `source` selects on the component, else on the reporting controller.
        assert_eq!(
            core_field_value(&json!({"reportingComponent": "mine"}), "source").as_deref(),
            Some("mine")
        );
        assert_eq!(
            core_field_value(
                &json!({"source": {"component": "kubelet"}, "reportingComponent": "mine"}),
                "source"
            )
            .as_deref(),
            Some("kubelet")
        );
    }

    #[test]
    fn kubectl_get_events_columns() {
        let event = json!({"apiVersion": "events.k8s.io/v1", "metadata": {"name": "e"},
            "regarding": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
            "note": " pulled \n", "type": "Normal", "reason": "Pulled",
            "reportingController": "kubelet", "reportingInstance": "node-1"});
        let row = cells(&event);
        assert_eq!(row[0], "<unknown>");
        assert_eq!(
            row[1..],
            [
                json!("Normal"),
                json!("Pulled"),
                json!("pod/p"),
                json!("spec.containers{a}"),
                json!("kubelet, node-1"),
                json!("pulled"),
                json!("<unknown>"),
                json!(1),
                json!("e"),
            ]
        );
        assert_eq!(columns().len(), row.len());
    }
}
