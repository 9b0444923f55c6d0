//! Test helpers that more than one apfkit crate needs, so that no crate's tests reach into
//! another crate's folders: [`etcd`] starts a real etcd (Debian's `etcd-server`) for the
//! storage and command-line tests; [`process`] runs a command (kubectl, curl, a binary under
//! test) within a time limit, finds a free port and polls until something holds; [`guide`]
//! reads the commands of the guides under `docs/`; [`flow_control`] holds APF configurations
//! the server tests apply; [`extension`] serves extension API servers over TLS and HTTP/2 for
//! the aggregator's tests; [`watch`] reads a watch's events from any HTTP body; [`crd`]
//! writes the skeleton of a CustomResourceDefinition; [`requests`] sends raw requests through
//! kube-rs's client and reads what their answers did; [`reference`] starts the real
//! kube-apiserver, built from its Go module, beside the server under test.

#![forbid(unsafe_code)]

pub mod backends;
pub mod cel_costs;
pub mod crd;
pub mod etcd;
pub mod extension;
pub mod flow_control;
pub mod guide;
pub mod process;
pub mod reference;
pub mod requests;
pub mod status;
pub mod watch;

#[doc(hidden)]
pub use tempfile;
