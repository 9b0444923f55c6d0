//! Kubernetes protobuf into the scheme: the bytes after `k8s\0` as one enveloped object, read
//! with limits, then converted, defaulted and validated. Whatever the reader accepts is within
//! the limits it was given: it was measured while decoded, never after.
#![no_main]

mod common;

use apfkit_conversion::scheme::{SCHEME, Document, ReadError};
use apfkit_types::wire::{envelope, protobuf};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let input = [envelope::PREFIX, data].concat();
    let limits = common::limits();
    let _ = SCHEME.read_values(&input[..], &limits, |document: Document| {
        let shape = protobuf::measure(&document.value, &(&limits).into());
        assert!(shape.is_ok(), "the reader let through {shape:?}");
        common::exercise(&document.value);
        Ok::<_, ReadError>(())
    });
});
