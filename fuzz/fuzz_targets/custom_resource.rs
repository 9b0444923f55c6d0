//! A CustomResourceDefinition and objects, both from the fuzzer's bytes: reading and compiling
//! the definition (schemas, patterns, CEL rules and their costs) and admitting the object
//! (pruning, defaults, schema, list types, CEL with an old object) never panic, and an object
//! admitted twice gives the same errors.
#![no_main]

use apfkit_crd::CustomResourceDefinition;
use serde_json::Value;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == 0);
    let (Some(definition), Some(object)) = (parts.next(), parts.next()) else {
        return;
    };
    let old = parts.next();
    let Ok(definition) = serde_json::from_slice::<Value>(definition) else {
        return;
    };
    let Ok(crd) = CustomResourceDefinition::from_value(&definition) else {
        return;
    };
    let Ok(object) = serde_json::from_slice::<Value>(object) else {
        return;
    };
    let old = old.and_then(|old| serde_json::from_slice::<Value>(old).ok());
    for version in &crd.versions {
        let mut first = object.clone();
        let errors = version.admit(&mut first, old.as_ref()).errors;
        let mut second = object.clone();
        assert_eq!(errors, version.admit(&mut second, old.as_ref()).errors);
    }
});
