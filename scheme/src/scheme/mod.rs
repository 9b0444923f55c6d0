//! The scheme of flowcontrol and apiregistration: apfkit-runtime's [`Scheme`] over the
//! generated codec list ([`CODECS`]) and the kinds' encodings ([`ENCODINGS`]), the same scheme
//! type a user's CRD gets from the generator. It reads documents of every served version,
//! defaults them as kube-apiserver does, converts them through the hub and writes them as
//! kube-apiserver would.
//!
//! ```
//! use apfkit_scheme::scheme::{SCHEME, Target, UnknownFields};
//!
//! let document = serde_json::json!({
//!     "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta2",
//!     "kind": "PriorityLevelConfiguration",
//!     "metadata": {"name": "p"},
//!     "spec": {"type": "Limited", "limited": {"assuredConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}}
//! });
//! let target: Target = "v1".parse().unwrap();
//! let converted = SCHEME.convert_value(&document, &target, UnknownFields::Strict).unwrap();
//! assert_eq!(converted.object["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
//! assert_eq!(converted.object["spec"]["limited"]["nominalConcurrencyShares"], 30);
//! ```
//!
//! Documents read from bytes keep their format until they are written: a served object with
//! nothing to report is decoded straight into its type and written from it.
//!
//! ```
//! use apfkit_scheme::scheme::{Encoding, Input, Limits, SCHEME, UnknownFields};
//!
//! let bytes = br#"{"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema",
//!     "metadata": {"name": "probes"}, "spec": {"priorityLevelConfiguration": {"name": "exempt"}}}"#;
//! let document = SCHEME.parse_json(bytes, &Limits::default()).unwrap();
//! let target = "v1".parse().unwrap();
//! let converted = SCHEME
//!     .convert(Input::Json(document), &target, UnknownFields::Strict, Encoding::Json)
//!     .unwrap();
//! assert!(converted.bytes.starts_with(br#"{"kind":"FlowSchema","apiVersion":"flowcontrol.apiserver.k8s.io/v1""#));
//! assert!(converted.warnings.is_empty());
//! ```

use apfkit_runtime::scheme::ValueEncodings;
pub use apfkit_runtime::scheme::{
    Converted, Document, Encoded, Encoding, ErrorKind, Input, InputError, JsonDocument, Limits,
    MAX_DEPTH_LIMIT, ReadError, Scheme, SchemeError, Target, UnknownFields, Warning, YamlDocument,
    depth,
};
pub use apfkit_types::hub::HubObject;

pub use crate::generated::CODECS;

/// The codec of one served kind of one version of these groups.
pub type Codec = apfkit_runtime::scheme::Codec<HubObject>;

/// Every served version of flowcontrol and apiregistration, with kube-apiserver's JSON and
/// protobuf.
pub static SCHEME: Scheme<HubObject> = Scheme::with_encodings(CODECS, &ENCODINGS);

/// What the scheme needs of kube-apiserver's encodings to read and write the documents it
/// holds as JSON values, from each kind's encodings in [`apfkit_types::KINDS`]: its JSON of
/// objects, typed lists and `v1 List`s, and objects in the protobuf envelope.
pub static ENCODINGS: ValueEncodings = ValueEncodings {
    json: |document, pretty| {
        apfkit_wire::to_go_json(apfkit_types::KINDS, document, pretty).map(|written| Ok(written?))
    },
    protobuf: |document| {
        Ok(apfkit_wire::envelope::encode(
            apfkit_types::KINDS,
            document,
        )?)
    },
    read_protobuf: |bytes, limits| apfkit_wire::read_protobuf(apfkit_types::KINDS, bytes, limits),
};
