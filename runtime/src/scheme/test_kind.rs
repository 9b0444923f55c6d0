//! A one-kind API for the scheme's own tests: `example.com/v1` `Widget`, its own hub.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Codec, Encodings, Scheme};
use crate::{ApplyDefaults, FromHub, HubKind, ToHub};
use k8s_openapi::Resource;

/// The scheme over [`Widget`].
pub(crate) static SCHEME: Scheme<Hub> = Scheme::new(&[Codec::of::<Widget>()]);

/// The hub object: a widget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) enum Hub {
    Widget(Widget),
}

/// `example.com/v1` `Widget`, whose `spec.size` defaults to 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Widget {
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spec: Option<Spec>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Spec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) size: Option<i32>,
}

impl ApplyDefaults for Widget {
    fn apply_defaults(&mut self) {
        if let Some(spec) = &mut self.spec {
            spec.size.get_or_insert(1);
        }
    }
    fn is_defaulted(&self) -> bool {
        self.spec.as_ref().is_none_or(|spec| spec.size.is_some())
    }
}

impl Resource for Widget {
    const API_VERSION: &'static str = "example.com/v1";
    const GROUP: &'static str = "example.com";
    const KIND: &'static str = "Widget";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "widgets";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl ToHub for Widget {
    type Hub = Widget;
    fn into_hub(self) -> Widget {
        self
    }
}

impl FromHub for Widget {
    type Hub = Widget;
    fn from_owned_hub(hub: Widget) -> Widget {
        hub
    }
    fn round_trips(_: &Widget) -> bool {
        true
    }
}

impl HubKind for Widget {
    type Object = Hub;
    const KIND: &'static str = "Widget";
    fn wrap(self) -> Hub {
        Hub::Widget(self)
    }
    fn take(object: Hub) -> Option<Self> {
        let Hub::Widget(widget) = object;
        Some(widget)
    }
    fn holds(_: &Hub) -> bool {
        true
    }
}

impl Encodings for Widget {}
