//! `ToHub` and `FromHub` (apfkit-runtime's traits) for every type of every version, generated
//! beside the types they convert as Kubernetes keeps `zz_generated.conversion.go` beside each
//! API package; the semantic differences are the hand-written [`crate::hooks`].

#[rustfmt::skip]
mod generated;

pub use generated::HubObject;
