//! One served version of a custom resource: objects decoded in it are pruned and defaulted by
//! its schema and kept in that version; written in another version, they are converted as
//! the CRD says (`None`: the `apiVersion` changes; `Webhook`: the CRD's webhook converts them),
//! then pruned and defaulted again in that version, as kube-apiserver does when it reads.

use std::sync::Arc;

use apfkit_apiserver::error::Cause;
use apfkit_apiserver::store::{Validation, VersionCodec};
use apfkit_crd::CustomResourceDefinition;
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::scheme::{Encoding, ErrorKind, Limits, SchemeError, UnknownFields, Warning};
use serde_json::Value;

use crate::object::{CustomObject, ServedObject, not_this_kind};
use crate::webhook::{ReviewHandler, Webhook};

/// A CustomResourceDefinition compiled for serving: its schemas and how its versions convert.
#[derive(Debug)]
pub struct Definition {
    /// The definition, its schemas compiled.
    pub crd: CustomResourceDefinition,
    /// How objects change version.
    conversion: Conversion,
}

/// `spec.conversion.strategy`.
#[derive(Debug)]
enum Conversion {
    /// Only `apiVersion` changes.
    None,
    /// The CRD's webhook converts.
    Webhook(Webhook),
    /// A webhook the server cannot call: every conversion fails, saying why (kube-apiserver
    /// serves such a CRD too, and fails its conversions).
    Unavailable(String),
}

impl Definition {
    /// `crd` served: `None` conversion, or the webhook its `spec.conversion` names. A
    /// webhook the server cannot call (a `service` reference: apfkit serves no Services; a
    /// CA bundle without a certificate) fails every conversion, saying why.
    pub fn new(crd: CustomResourceDefinition) -> Self {
        let conversion = match crd.source.spec.conversion.as_ref() {
            Some(conversion) if conversion.strategy == "Webhook" => {
                let webhook = conversion
                    .webhook
                    .as_ref()
                    .ok_or_else(|| {
                        "spec.conversion.webhook.clientConfig: Required value".to_owned()
                    })
                    .and_then(Webhook::new);
                match webhook {
                    Ok(webhook) => Conversion::Webhook(webhook),
                    Err(why) => Conversion::Unavailable(why),
                }
            }
            _ => Conversion::None,
        };
        Definition { crd, conversion }
    }

    /// `crd` served with its webhook's reviews answered by `handler` in this process, when
    /// its `spec.conversion` asks for a webhook (whatever its `clientConfig` names); as
    /// [`Definition::new`] otherwise.
    pub fn converted_in_process(crd: CustomResourceDefinition, handler: ReviewHandler) -> Self {
        let webhook = crd
            .source
            .spec
            .conversion
            .as_ref()
            .is_some_and(|conversion| conversion.strategy == "Webhook");
        if !webhook {
            return Definition::new(crd);
        }
        Definition {
            crd,
            conversion: Conversion::Webhook(Webhook::in_process(handler)),
        }
    }

    /// `object` (of one of the definition's versions) in `api_version`.
    fn convert(&self, object: Value, api_version: &str) -> Result<Value, String> {
        match &self.conversion {
            Conversion::None => {
                let mut object = object;
                if let Value::Object(map) = &mut object {
                    map.insert("apiVersion".into(), api_version.into());
                }
                Ok(object)
            }
            Conversion::Webhook(webhook) => webhook.convert(object, api_version),
            Conversion::Unavailable(why) => Err(format!(
                "conversion webhook for {} failed: {why}",
                crate::webhook::kind_of(&object)
            )),
        }
    }
}

/// A served version of a custom resource.
#[derive(Debug)]
pub struct CustomVersion {
    definition: Arc<Definition>,
    /// The version's index among the definition's versions.
    index: usize,
    gvk: GroupVersionKind,
    api_version: String,
}

impl CustomVersion {
    /// The version at `index` of `definition`'s versions.
    pub fn new(definition: Arc<Definition>, index: usize) -> Self {
        let gvk = GroupVersionKind::new(
            definition.crd.group.clone(),
            definition.crd.versions[index].name.clone(),
            definition.crd.kind.clone(),
        );
        let api_version = gvk.api_version();
        CustomVersion {
            definition,
            index,
            gvk,
            api_version,
        }
    }

    fn schema(&self) -> &apfkit_crd::Version {
        &self.definition.crd.versions[self.index]
    }

    /// `object` in this version: converted if it is in another, then pruned and defaulted.
    fn in_this_version(&self, object: &CustomObject) -> Result<Value, SchemeError> {
        let mut value = object.to_value();
        if object.api_version != self.api_version {
            value = self
                .definition
                .convert(value, &self.api_version)
                .map_err(|message| SchemeError::new(ErrorKind::Encoding, "", message))?;
            self.schema().prune_and_default(&mut value);
        }
        Ok(value)
    }
}

impl<H: Send + Sync + 'static> VersionCodec<ServedObject<H>> for CustomVersion {
    fn gvk(&self) -> &GroupVersionKind {
        &self.gvk
    }
    fn api_version(&self) -> String {
        self.api_version.clone()
    }
    fn decode(
        &self,
        object: &Value,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
    ) -> Result<ServedObject<H>, SchemeError> {
        let mut object = object.clone();
        let pruned = self
            .schema()
            .decode_request(&mut object, &apfkit_apiserver::object_meta_error)
            // The coercer's own words: kube's create and update handlers add what the
            // request was, its patch handler quotes the patched object.
            .map_err(|error| SchemeError::new(ErrorKind::InvalidValue, "", error))?;
        unknown.apply(
            pruned
                .into_iter()
                .map(|path| Warning::UnknownField { path })
                .collect(),
            warnings,
        )?;
        CustomObject::from_value(object).map(ServedObject::custom)
    }
    /// Converted now when it is in another version, as apiextensions-apiserver's storage
    /// decodes a custom resource into the version asked for.
    fn read_as(&self, object: &mut ServedObject<H>) -> Result<(), String> {
        if let ServedObject::Custom(custom) = object
            && custom.kind == self.definition.crd.kind
            && custom.api_version != self.api_version
        {
            let value = self.in_this_version(custom).map_err(|e| e.message)?;
            *object = CustomObject::from_value(value)
                .map(ServedObject::custom)
                .map_err(|e| e.message)?;
        }
        Ok(())
    }
    fn decode_as_is(&self, object: &Value) -> Result<ServedObject<H>, SchemeError> {
        CustomObject::from_value(object.clone()).map(ServedObject::custom)
    }
    fn encode_into(
        &self,
        hub: ServedObject<H>,
        encoding: Encoding,
        out: &mut Vec<u8>,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SchemeError> {
        let value = self.encode(hub, warnings)?;
        write(&value, encoding, out, &self.definition.crd.kind)
    }
    fn encode(
        &self,
        hub: ServedObject<H>,
        _warnings: &mut Vec<Warning>,
    ) -> Result<Value, SchemeError> {
        match hub {
            ServedObject::Custom(object) if object.kind == self.definition.crd.kind => {
                self.in_this_version(&object)
            }
            _ => Err(not_this_kind(&self.definition.crd.kind)),
        }
    }
    fn decode_stored(&self, bytes: &[u8], limits: &Limits) -> Result<ServedObject<H>, String> {
        let crd = &self.definition.crd;
        let mut stored = crate::object::read_stored(bytes, limits)?;
        let Some(version) = crd.version_of(&stored.api_version) else {
            return Err(format!(
                "apiVersion {:?} is not a version of {}",
                stored.api_version, crd.name
            ));
        };
        if stored.kind != crd.kind {
            return Err(format!("a {} where {} are kept", stored.kind, crd.plural));
        }
        version.prune_and_default(&mut stored.value);
        stored.into_object().map(ServedObject::custom)
    }
    fn protobuf(&self) -> bool {
        false
    }
    fn validate(&self, object: &ServedObject<H>, old: Option<&ServedObject<H>>) -> Validation {
        let in_this_version = |object: Option<&ServedObject<H>>| match object {
            Some(ServedObject::Custom(object)) => self.in_this_version(object).ok(),
            _ => None,
        };
        let Some(value) = in_this_version(Some(object)) else {
            return Validation::default();
        };
        let old = in_this_version(old);
        let checked = self.schema().check(&value, old.as_ref());
        Validation {
            causes: checked.errors.iter().map(Cause::from).collect(),
            warnings: checked.warnings.iter().map(ToString::to_string).collect(),
        }
    }
    /// The name, the namespace of a namespaced resource, and this version's
    /// `selectableFields` (apiextensions-apiserver's `crConverter.ConvertFieldLabel`).
    fn convert_field_label(&self, field: &str) -> Result<(), String> {
        let selects = match field {
            "metadata.name" => true,
            "metadata.namespace" => self.definition.crd.namespaced,
            field => self.selectable_fields().any(|path| path == field),
        };
        selects
            .then_some(())
            .ok_or_else(|| format!("field label not supported: {field}"))
    }
    /// A selectable field's value in the object as it reads in this version, printed as Go's
    /// `fmt.Sprint` prints it (apiextensions-apiserver's `customResourceStrategy.selectableFields`);
    /// a missing field is `None`, compared as "".
    fn field_value(&self, object: &ServedObject<H>, field: &str) -> Option<String> {
        let ServedObject::Custom(object) = object else {
            return None;
        };
        let value = self.in_this_version(object).ok()?;
        match field
            .split('.')
            .try_fold(&value, |node, name| node.get(name))?
        {
            Value::String(text) => Some(text.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }
}

impl CustomVersion {
    /// This version's `selectableFields`, each a field label (its `jsonPath` without the
    /// leading dot).
    fn selectable_fields(&self) -> impl Iterator<Item = &str> {
        self.definition
            .crd
            .source
            .spec
            .versions
            .iter()
            .filter(|version| version.name == self.schema().name)
            .flat_map(|version| version.selectable_fields.iter().flatten())
            .map(|field| field.json_path.trim_start_matches('.'))
    }
}

/// `value` appended to `out` as `encoding` says; custom resources have no protobuf form.
pub(crate) fn write(
    value: &Value,
    encoding: Encoding,
    out: &mut Vec<u8>,
    kind: &str,
) -> Result<(), SchemeError> {
    let failed = |message: String| SchemeError::new(ErrorKind::Encoding, "", message);
    match encoding {
        Encoding::Json => serde_json::to_writer(out, value).map_err(|e| failed(e.to_string())),
        Encoding::JsonPretty => {
            serde_json::to_writer_pretty(out, value).map_err(|e| failed(e.to_string()))
        }
        Encoding::Yaml => {
            let text = serde_saphyr::to_string(value).map_err(|e| failed(e.to_string()))?;
            out.extend_from_slice(text.as_bytes());
            Ok(())
        }
        Encoding::Protobuf => Err(failed(format!(
            "{kind} has no protobuf form: custom resources are JSON"
        ))),
    }
}
