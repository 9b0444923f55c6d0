//! Test helpers that more than one apfkit crate needs, so that no crate's tests reach into
//! another crate's folders: [`etcd`] starts a real etcd (Debian's `etcd-server`) for the
//! storage and command-line tests; [`process`] runs a command (kubectl, curl, a binary under
//! test) within a time limit.

#![forbid(unsafe_code)]

pub mod backends;
pub mod etcd;
pub mod process;

#[doc(hidden)]
pub use tempfile;
