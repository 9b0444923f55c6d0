//! The integration tests of apfkit-wire, in one binary: the encodings of generated kinds
//! (apfkit-types') against k8s-pb's and upstream's bytes, and field-table messages.

mod encodings;
mod shaped;
