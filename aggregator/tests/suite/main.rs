//! The integration suite of apfkit-aggregator, on `apfkit-server` started in the test and
//! asked through kube-rs: an APIService's `Available` condition as its Service, its
//! EndpointSlices and its server come and go, its group in discovery and proxied while it is
//! registered (`availability`), and what a hostile extension server cannot do through it
//! (`hostile`).

mod availability;
mod hostile;
mod support;
