//! The integration tests of apfkit-wire, in one binary: the encodings of generated kinds
//! (apfkit-types') against k8s-pb's and upstream's bytes, field-table messages, and YAML as Go's
//! yaml.v3 writes it.

mod encodings;
mod gnostic;
mod go_scanner;
mod go_yaml;
mod shaped;
