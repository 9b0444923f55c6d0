//! The Kubernetes default APF configuration as data: the mandatory and suggested
//! PriorityLevelConfigurations and FlowSchemas that kube-apiserver creates itself (upstream's
//! `pkg/apis/flowcontrol/bootstrap/default.go`), as v1 YAML, embedded. `apfkit-dispatcher`
//! builds its default configuration from them; benchmarks and tests use them as realistic
//! objects.

/// The bootstrap priority levels, as v1 YAML (`types/data/bootstrap`, the repository's record
/// of them).
pub const PRIORITY_LEVELS_YAML: &str =
    include_str!("../data/bootstrap/prioritylevelconfigurations.yaml");

/// The bootstrap flow schemas, as v1 YAML, in matching order.
pub const FLOW_SCHEMAS_YAML: &str = include_str!("../data/bootstrap/flowschemas.yaml");
