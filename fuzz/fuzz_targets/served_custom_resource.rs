//! Custom resources as `apfkit serve` decodes them, from the fuzzer's bytes, for a fixed CRD of
//! two versions with defaults, a list type and a CEL rule: a stored value read in any version
//! (`decode_stored`), a request body (`decode`, every field mode) and the result written in
//! every served version and validated never panic, and a stored value read back after it is
//! written gives the same object.
#![no_main]

use std::sync::{Arc, OnceLock};

use apfkit_apiextensions::custom::{CustomVersion, Definition};
use apfkit_apiextensions::{NoKind, ServedObject};
use apfkit_apiserver::store::VersionCodec;
use apfkit_crd::CustomResourceDefinition;
use apfkit_runtime::scheme::{Encoding, Limits, UnknownFields};
use serde_json::{Value, json};

fn versions() -> &'static [CustomVersion] {
    static VERSIONS: OnceLock<Vec<CustomVersion>> = OnceLock::new();
    VERSIONS.get_or_init(|| {
        let schema = json!({"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self.min <= self.replicas"}],
                    "properties": {
                        "replicas": {"type": "integer", "default": 1},
                        "min": {"type": "integer", "default": 0},
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer", "maximum": 65535},
                            }},
                        },
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    },
                },
            },
        }});
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"kind": "Gadget", "plural": "gadgets"},
                "scope": "Namespaced",
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": schema},
                    {"name": "v1beta1", "served": true, "storage": false, "schema": schema},
                ],
            },
        });
        let crd = CustomResourceDefinition::from_value(&crd).expect("a valid CRD");
        let definition = Arc::new(Definition::new(crd));
        (0..2)
            .map(|i| CustomVersion::new(definition.clone(), i))
            .collect()
    })
}

type Served = ServedObject<NoKind>;

fn exercise(version: &CustomVersion, object: Served) {
    for other in versions() {
        let mut warnings = Vec::new();
        if let Ok(value) = VersionCodec::<Served>::encode(other, object.clone(), &mut warnings) {
            let _ = VersionCodec::<Served>::validate(other, &object, Some(&object));
            let mut bytes = Vec::new();
            for encoding in [Encoding::Json, Encoding::Yaml, Encoding::Protobuf] {
                bytes.clear();
                let _ = VersionCodec::<Served>::encode_into(
                    other,
                    object.clone(),
                    encoding,
                    &mut bytes,
                    &mut warnings,
                );
            }
            // Stored and read back: the same object.
            let stored = serde_json::to_vec(&value).expect("JSON");
            if let Ok(again) =
                VersionCodec::<Served>::decode_stored(version, &stored, &Limits::default())
            {
                let again_value = VersionCodec::<Served>::encode(other, again, &mut warnings).ok();
                assert_eq!(again_value.as_ref(), Some(&value));
            }
        }
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let versions = versions();
    let limits = Limits::default();
    for version in versions {
        if let Ok(object) = VersionCodec::<Served>::decode_stored(version, data, &limits) {
            exercise(version, object);
        }
        let Ok(value) = serde_json::from_slice::<Value>(data) else {
            continue;
        };
        for mode in [
            UnknownFields::Strict,
            UnknownFields::Warn,
            UnknownFields::Ignore,
        ] {
            if let Ok(object) =
                VersionCodec::<Served>::decode(version, &value, mode, &mut Vec::new())
            {
                exercise(version, object);
            }
        }
    }
});
