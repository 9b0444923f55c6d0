//! The Kubernetes default APF configuration (upstream's `pkg/apis/flowcontrol/bootstrap/default.go`): the mandatory and suggested
//! PriorityLevelConfigurations and FlowSchemas of the current release, embedded.

use std::sync::LazyLock;

use apfkit_runtime::HubKind as _;
use apfkit_scheme::scheme::{HubObject, SCHEME, UnknownFields};
use apfkit_types::hub::flowcontrol::{FlowSchema, PriorityLevelConfiguration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

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

/// The annotation that says whether the configuration producer keeps an object's spec as
/// the bootstrap configuration has it.
pub const AUTO_UPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";

/// A write kube-apiserver's configuration producer (`pkg/registry/flowcontrol/ensurer`)
/// makes to keep the bootstrap objects.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Create a missing bootstrap object.
    Create(HubObject),
    /// Write an existing object back with its annotation set and, when auto-updated, the
    /// bootstrap spec.
    Update(HubObject),
    /// Delete an auto-updated object that the bootstrap configuration no longer has.
    Delete {
        /// Its kind.
        kind: &'static str,
        /// Its name.
        name: String,
    },
}

/// The writes one round of kube-apiserver's configuration producer makes, given the stored
/// objects: the suggested objects (when `suggested`), then the mandatory ones, are created
/// when missing; an existing one gets the bootstrap spec when it is mandatory, or when its
/// `apf.kubernetes.io/autoupdate-spec` annotation is true (or, missing or not a boolean,
/// when its generation is 1, so an operator's edits survive), and the annotation is set to
/// what was decided; objects not in the bootstrap configuration whose annotation is true are
/// deleted (`strategy.go`: `ShouldUpdate`, `shouldUpdateSpec`, `getRemoveCandidate`,
/// `removeConfiguration`).
pub fn ensure(
    levels: &[PriorityLevelConfiguration],
    schemas: &[FlowSchema],
    suggested: bool,
) -> Vec<Change> {
    let mut changes = Vec::new();
    let stored_level = |name: &str| {
        levels
            .iter()
            .find(|l| l.metadata.name.as_deref() == Some(name))
    };
    let stored_schema = |name: &str| {
        schemas
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(name))
    };
    // Suggested first, then mandatory, as upstream's `ensure` orders them.
    for mandatory in [false, true] {
        if !mandatory && !suggested {
            continue;
        }
        for schema in flow_schemas()
            .iter()
            .filter(|s| is_mandatory(&s.metadata) == mandatory)
        {
            let name = schema.metadata.name.as_deref().unwrap_or_default();
            changes.extend(ensure_one(
                stored_schema(name),
                schema,
                mandatory,
                |current, bootstrap| {
                    current.spec = bootstrap.spec.clone();
                },
                |o| o.spec == schema.spec,
                HubObject::FlowSchema,
            ));
        }
        for level in priority_levels()
            .iter()
            .filter(|l| is_mandatory(&l.metadata) == mandatory)
        {
            let name = level.metadata.name.as_deref().unwrap_or_default();
            changes.extend(ensure_one(
                stored_level(name),
                level,
                mandatory,
                |current, bootstrap| {
                    current.spec = bootstrap.spec.clone();
                },
                |o| o.spec == level.spec,
                HubObject::PriorityLevelConfiguration,
            ));
        }
    }
    let is_bootstrap_schema =
        |name: &Option<String>| flow_schemas().iter().any(|s| &s.metadata.name == name);
    let is_bootstrap_level =
        |name: &Option<String>| priority_levels().iter().any(|l| &l.metadata.name == name);
    for schema in schemas {
        if !is_bootstrap_schema(&schema.metadata.name) && removable(&schema.metadata) {
            changes.push(Change::Delete {
                kind: FlowSchema::KIND,
                name: schema.metadata.name.clone().unwrap_or_default(),
            });
        }
    }
    for level in levels {
        if !is_bootstrap_level(&level.metadata.name) && removable(&level.metadata) {
            changes.push(Change::Delete {
                kind: PriorityLevelConfiguration::KIND,
                name: level.metadata.name.clone().unwrap_or_default(),
            });
        }
    }
    changes
}

fn is_mandatory(metadata: &ObjectMeta) -> bool {
    MANDATORY.contains(&metadata.name.as_deref().unwrap_or_default())
}

/// One bootstrap object against the stored one of its name.
fn ensure_one<T: Clone + HasMetadata>(
    current: Option<&T>,
    bootstrap: &T,
    mandatory: bool,
    copy_spec: impl Fn(&mut T, &T),
    same_spec: impl Fn(&T) -> bool,
    wrap: impl Fn(T) -> HubObject,
) -> Option<Change> {
    let Some(current) = current else {
        return Some(Change::Create(wrap(bootstrap.clone())));
    };
    let annotation = current
        .metadata()
        .annotations
        .as_ref()
        .and_then(|a| a.get(AUTO_UPDATE_ANNOTATION))
        .and_then(|value| parse_go_bool(value));
    let auto_update = mandatory || annotation.unwrap_or(current.metadata().generation == Some(1));
    let update_annotation = annotation != Some(auto_update);
    let spec_changed = auto_update && !same_spec(current);
    if !update_annotation && !spec_changed {
        return None;
    }
    let mut updated = current.clone();
    if update_annotation {
        updated
            .metadata_mut()
            .annotations
            .get_or_insert_with(Default::default)
            .insert(AUTO_UPDATE_ANNOTATION.to_owned(), auto_update.to_string());
    }
    if spec_changed {
        copy_spec(&mut updated, bootstrap);
    }
    Some(Change::Update(wrap(updated)))
}

/// True when the object carries the annotation and it says true (upstream leaves objects
/// whose annotation is false or not a boolean alone).
fn removable(metadata: &ObjectMeta) -> bool {
    metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(AUTO_UPDATE_ANNOTATION))
        .and_then(|value| parse_go_bool(value))
        == Some(true)
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The metadata of a FlowSchema or a PriorityLevelConfiguration.
trait HasMetadata {
    fn metadata(&self) -> &ObjectMeta;
    fn metadata_mut(&mut self) -> &mut ObjectMeta;
}

impl HasMetadata for FlowSchema {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl HasMetadata for PriorityLevelConfiguration {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
