//! apfkit-storage's integration tests, one binary (one link) for all: stored objects listed
//! from a real etcd, k8s-pb differentials, migrations against a real etcd, and upstream's own
//! stored-object fixtures.

mod etcd;
mod k8s_pb;
mod migrate;
mod upstream_fixtures;
