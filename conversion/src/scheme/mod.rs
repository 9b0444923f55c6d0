//! The scheme of flowcontrol and apiregistration: apfkit-runtime's [`Scheme`] over the
//! generated codec list ([`CODECS`]) and apfkit-types' wire formats, the same scheme type a
//! user's CRD gets from the generator. It reads documents of every served version, defaults
//! them as kube-apiserver does, converts them through the hub and writes them as
//! kube-apiserver would.
//!
//! ```
//! use apfkit_conversion::scheme::{SCHEME, Target, UnknownFields};
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
//! use apfkit_conversion::scheme::{Encoding, Input, Limits, SCHEME, UnknownFields};
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
pub static SCHEME: Scheme<HubObject> = Scheme::with_formats(CODECS, &apfkit_types::wire::FORMATS);
