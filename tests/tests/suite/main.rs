//! Cross-crate and conformance tests, one binary for all: conversion vectors and snapshots, the
//! examples in docs/,
//! upstream fixtures round-tripped, JSON Schemas, kube interop, round-trip properties, the
//! typed path against the value path, upstream's OpenAPI documents, and validation.

mod conversion;
mod docs;
mod field_manager;
mod fixtures_roundtrip;
mod jsonschema;
mod kube_interop;
mod roundtrip_properties;
mod structure;
mod typed_path;
mod upstream_openapi;
mod validation;
