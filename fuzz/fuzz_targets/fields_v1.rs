//! `FieldsV1` documents, as clients send them in `metadata.managedFields`: whatever reads
//! back as a set is written again in kube-apiserver's form, which reads back as the same set
//! and is written the same (a fixed point after one round).
#![no_main]

use apfkit_fieldmanager::set::FieldSet;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(document) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(set) = FieldSet::from_fields_v1(&document) else {
        return;
    };
    let written = set.to_fields_v1();
    let reread: serde_json::Value =
        serde_json::from_str(&written).expect("written FieldsV1 is JSON");
    let again = FieldSet::from_fields_v1(&reread).expect("written FieldsV1 reads back");
    assert_eq!(again, set);
    assert_eq!(again.to_fields_v1(), written);
    let _ = set.paths().iter().map(ToString::to_string).count();
});
