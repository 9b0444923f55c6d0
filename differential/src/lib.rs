//! The same requests to the real kube-apiserver and to apfkit's server, their answers
//! compared.
//!
//! Start with [`Servers::start`]: the reference (kube-apiserver of the release apfkit serves,
//! with its own etcd; see `apfkit_test_support::reference`) and `apfkit serve`'s server on the
//! embedded store and on etcd. A case is a script of requests run as a [`Session`] against
//! each server; [`Servers::compare`] runs it on all of them at once and holds each apfkit
//! [`Transcript`] to the reference's, exchange by exchange, after [`normalize`] has replaced
//! what must differ (times, uids, resource versions by order of appearance).
//!
//! The suite of cases is `tests/suite`, run by `.ci/reference`.

#![forbid(unsafe_code)]

pub mod controllers;
pub mod normalize;
pub mod sequence;
mod servers;
mod session;

pub use servers::{Case, Servers, Target};
pub use session::{Exchange, Request, Session, Transcript};
