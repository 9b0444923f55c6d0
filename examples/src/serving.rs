//! The Widget API served by this crate itself, as an extension API server would serve it
//! behind kube-aggregator: what `widgets-apiserver` serves, from the CRD and the generated
//! registry.
//!
//! - [`resources`]: `widgets` in every version the CRD serves, stored in the CRD's storage
//!   version as JSON under `/registry/example.com/widgets/<namespace>/<name>` (where
//!   kube-apiserver keeps custom resources), with the `status` subresource the registry lists
//!   and the CRD's schemas in the OpenAPI documents (`kubectl explain`).
//! - [`api_services`]: the `APIService` objects (one per served version) that would register
//!   the server with an aggregator: its Service, the CA that signed its certificate.
//!
//! ```
//! let resources = apfkit_example_widgets::serving::resources().unwrap();
//! assert_eq!(resources[0].plural, "widgets");
//! assert_eq!(resources[0].storage.version(), "v1");
//! let versions: Vec<&str> = resources[0].versions.iter().map(|c| c.version()).collect();
//! assert_eq!(versions, ["v1", "v1beta1", "v1alpha1"]);
//! ```

use std::sync::OnceLock;

use apfkit_apiserver::store::{ResourceConfig, ResourceError, Served, Strategy};
use apfkit_runtime::identity::GroupVersionKind;
use base64::Engine as _;
use serde_json::{Value, json};

use crate::api::SCHEME;
use crate::api::conversion::HubObject;
use crate::api::types::KINDS;

/// The CRD the API is generated from.
const CRD: &str = include_str!("../widgets.crd.yaml");

/// The CRD as a JSON value, read once.
fn crd() -> &'static Value {
    static CRD_VALUE: OnceLock<Value> = OnceLock::new();
    CRD_VALUE.get_or_init(|| {
        serde_saphyr::from_str(CRD).expect("widgets.crd.yaml is checked by build.rs")
    })
}

/// The CRD's entry for `version`.
fn crd_version(version: &str) -> Option<&'static Value> {
    crd()["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == version)
}

/// The CRD's schema of `Widget` in `version`; none for `WidgetList` (an open object then).
fn widget_schema(kind: &GroupVersionKind) -> Option<Value> {
    if *kind.group != crd()["spec"]["group"] || *kind.kind != crd()["spec"]["names"]["kind"] {
        return None;
    }
    crd_version(&kind.version).map(|v| v["schema"]["openAPIV3Schema"].clone())
}

/// Every resource of the generated registry, served in each version, stored in the CRD's
/// storage version.
///
/// # Errors
///
/// A CRD whose storage version the scheme does not serve.
pub fn resources() -> Result<Vec<Served<HubObject>>, ResourceError> {
    let storage_version = crd()["spec"]["versions"]
        .as_array()
        .and_then(|versions| versions.iter().find(|v| v["storage"] == true))
        .and_then(|v| v["name"].as_str())
        .unwrap_or_default();
    let mut served = Vec::new();
    for info in KINDS.iter().filter(|k| !k.is_list()) {
        if info.plural.is_none() || info.version != storage_version {
            continue; // one resource per kind; its versions come from the scheme
        }
        // Kept as apiextensions-apiserver keeps custom resources; no strategic merge patch.
        let config = ResourceConfig::custom_of(info, storage_version)
            .with_schema(std::sync::Arc::new(widget_schema));
        served.push(Served::new(&SCHEME, config)?.with_strategy(WidgetStrategy));
    }
    Ok(served)
}

/// The `APIService` objects (a `v1` `List`, one per served version, the CRD's storage
/// version preferred) that would register a server behind the Service `namespace/name` whose
/// certificate `ca_pem` signed.
pub fn api_services(ca_pem: &str, namespace: &str, name: &str) -> Value {
    let group = crd()["spec"]["group"].as_str().unwrap_or_default();
    let versions = crd()["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let items: Vec<Value> = versions
        .iter()
        .filter(|v| v["served"] == true)
        .filter_map(|v| v["name"].as_str().map(|n| (n, v["storage"] == true)))
        .map(|(version, storage)| {
            json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": format!("{version}.{group}")},
                "spec": {
                    "group": group,
                    "version": version,
                    "service": {"namespace": namespace, "name": name, "port": 443},
                    "caBundle": ca_bundle,
                    "groupPriorityMinimum": 1000,
                    // The storage version first among the group's versions.
                    "versionPriority": if storage { 15 } else { 10 },
                },
            })
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items})
}

/// The widgets' rules: kube-apiserver's checks of a custom resource, in the request's version.
#[derive(Debug, Clone, Copy)]
pub struct WidgetStrategy;

impl Strategy<crate::api::HubObject> for WidgetStrategy {
    fn validate(
        &self,
        object: &crate::api::HubObject,
        old: Option<&crate::api::HubObject>,
        api_version: &str,
    ) -> Vec<apfkit_apiserver::error::Cause> {
        validate(object, old, api_version)
    }
}

/// kube-apiserver's checks of a widget in the request's version (`api_version`): the CRD's
/// schema, list types and `x-kubernetes-validations` rules, from the CRD the types were
/// generated from (`api::CUSTOM_RESOURCE_DEFINITIONS`), as apiextensions-apiserver checks a
/// custom resource in the version it was sent in; transition rules see `old`.
fn validate(
    object: &crate::api::HubObject,
    old: Option<&crate::api::HubObject>,
    api_version: &str,
) -> Vec<apfkit_apiserver::error::Cause> {
    static DEFINITION: std::sync::OnceLock<apfkit_crd::CustomResourceDefinition> =
        std::sync::OnceLock::new();
    let definition = DEFINITION.get_or_init(|| {
        apfkit_crd::CustomResourceDefinition::from_json(crate::api::CUSTOM_RESOURCE_DEFINITIONS[0])
            .expect("the CRD compiled when the types were generated")
    });
    let Some(version) = definition.version_of(api_version) else {
        return Vec::new();
    };
    let in_version =
        |hub: &crate::api::HubObject| crate::api::SCHEME.object_from_hub(hub.clone(), api_version);
    let object = match in_version(object) {
        Ok(object) => object,
        Err(err) => {
            return vec![apfkit_apiserver::error::Cause {
                reason: "InternalError".to_owned(),
                message: err.to_string(),
                field: "<nil>".to_owned(),
            }];
        }
    };
    let old = old.and_then(|old| in_version(old).ok());
    version
        .validate(&object, old.as_ref())
        .into_iter()
        .map(|error| apfkit_apiserver::error::Cause::from(&error))
        .collect()
}
