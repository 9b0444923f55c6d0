//! The Kubernetes default APF configuration (upstream's `pkg/apis/flowcontrol/bootstrap/default.go`): the mandatory and suggested
//! PriorityLevelConfigurations and FlowSchemas of the current release, embedded.

use std::sync::LazyLock;

use apfkit_conversion::scheme::{HubObject, SCHEME, UnknownFields};
use apfkit_types::hub::flowcontrol::{FlowSchema, PriorityLevelConfiguration};

/// The bootstrap objects as v1 YAML; the data lives with the types (`apfkit_types::bootstrap`).
pub use apfkit_types::bootstrap::{FLOW_SCHEMAS_YAML, PRIORITY_LEVELS_YAML};

/// Names of the mandatory objects (both kinds).
pub const MANDATORY: [&str; 2] = ["exempt", "catch-all"];

struct Bootstrap {
    levels: Vec<PriorityLevelConfiguration>,
    schemas: Vec<FlowSchema>,
}

fn hub_objects(yaml: &str) -> Vec<HubObject> {
    // The embedded YAML is fixed and tested; a failure here is a build defect, not an input error.
    let documents = SCHEME
        .read_documents(yaml.as_bytes())
        .unwrap_or_else(|e| unreachable!("embedded bootstrap YAML: {e}"));
    documents
        .iter()
        .flat_map(|d| {
            SCHEME
                .to_hub_value(&d.value, UnknownFields::Strict)
                .unwrap_or_else(|e| unreachable!("embedded bootstrap object: {e}"))
                .0
        })
        .collect()
}

static BOOTSTRAP: LazyLock<Bootstrap> = LazyLock::new(|| Bootstrap {
    levels: hub_objects(PRIORITY_LEVELS_YAML)
        .into_iter()
        .filter_map(|o| match o {
            HubObject::PriorityLevelConfiguration(l) => Some(l),
            _ => None,
        })
        .collect(),
    schemas: hub_objects(FLOW_SCHEMAS_YAML)
        .into_iter()
        .filter_map(|o| match o {
            HubObject::FlowSchema(s) => Some(s),
            _ => None,
        })
        .collect(),
});

/// Every bootstrap priority level (mandatory and suggested).
pub fn priority_levels() -> &'static [PriorityLevelConfiguration] {
    &BOOTSTRAP.levels
}

/// Every bootstrap flow schema (mandatory and suggested), in matching order.
pub fn flow_schemas() -> &'static [FlowSchema] {
    &BOOTSTRAP.schemas
}

/// The mandatory priority level of this name, if it is one.
pub fn mandatory_priority_level(name: &str) -> Option<&'static PriorityLevelConfiguration> {
    MANDATORY
        .contains(&name)
        .then(|| {
            priority_levels()
                .iter()
                .find(|l| l.metadata.name.as_deref() == Some(name))
        })
        .flatten()
}

/// The mandatory flow schema of this name, if it is one.
pub fn mandatory_flow_schema(name: &str) -> Option<&'static FlowSchema> {
    MANDATORY
        .contains(&name)
        .then(|| {
            flow_schemas()
                .iter()
                .find(|s| s.metadata.name.as_deref() == Some(name))
        })
        .flatten()
}
