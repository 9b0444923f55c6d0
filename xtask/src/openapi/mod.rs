//! The project's own OpenAPI v3 documents, one per group-version, in the format Kubernetes
//! serves at `/openapi/v3/apis/<group>/<version>`. They are built here from one description per
//! group, written to `schemas/openapi/<group>/<version>.json`, and are the input of the code
//! generator for `apfkit-types`.

pub mod apiregistration;
mod build;
pub mod core;
pub mod flowcontrol;
mod go;
pub mod hub;
pub mod meta;
mod paths;

/// The flowcontrol versions the schemas are written for, oldest first.
pub use flowcontrol::VERSIONS as FLOWCONTROL_VERSIONS;

use serde_json::{Map, Value, json};

/// One document: its group, version and content.
pub struct OpenApiDocument {
    /// API group.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// The document.
    pub document: Value,
}

impl OpenApiDocument {
    /// Path relative to the repository root.
    pub fn path(&self) -> std::path::PathBuf {
        [
            "schemas",
            "openapi",
            self.group,
            &format!("{}.json", self.version),
        ]
        .iter()
        .collect()
    }
}

fn document(
    group: &'static str,
    version: &'static str,
    schemas: Vec<(String, Value)>,
    resources: &[(&str, &str)],
    namespace: &str,
) -> OpenApiDocument {
    let resources: Vec<paths::ResourcePaths<'_>> = resources
        .iter()
        .map(|(kind, plural)| paths::ResourcePaths {
            kind,
            plural,
            definition: format!("{namespace}.{version}.{kind}"),
            list_definition: format!("{namespace}.{version}.{kind}List"),
        })
        .collect();
    let mut schemas = schemas;
    go::annotate(&mut schemas, group, version);
    let schemas: Map<String, Value> = schemas.into_iter().collect();
    OpenApiDocument {
        group,
        version,
        document: json!({
            "openapi": "3.0.0",
            "info": { "title": "apfkit", "version": format!("{group}/{version}") },
            "paths": paths::paths(group, version, &resources),
            "components": {
                "schemas": schemas,
                "securitySchemes": { "BearerToken": { "type": "apiKey", "in": "header", "name": "authorization", "description": "Bearer token authentication" } },
            },
        }),
    }
}

/// Every document, flowcontrol first, oldest version first.
pub fn documents() -> Vec<OpenApiDocument> {
    let mut docs = Vec::new();
    for version in flowcontrol::VERSIONS {
        docs.push(document(
            flowcontrol::GROUP,
            version,
            flowcontrol::schemas(version),
            &[
                ("FlowSchema", "flowschemas"),
                ("PriorityLevelConfiguration", "prioritylevelconfigurations"),
            ],
            "io.k8s.api.flowcontrol",
        ));
    }
    for version in apiregistration::VERSIONS {
        docs.push(document(
            apiregistration::GROUP,
            version,
            apiregistration::schemas(version),
            &[("APIService", "apiservices")],
            "io.k8s.kube-aggregator.pkg.apis.apiregistration",
        ));
    }
    docs
}
