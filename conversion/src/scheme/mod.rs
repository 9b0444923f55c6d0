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

#[cfg(test)]
mod tests {
    use super::{CODECS, SCHEME};

    #[test]
    fn supported_lists_the_registry_preferred_version_first() {
        assert_eq!(
            SCHEME.supported(),
            "flowcontrol.apiserver.k8s.io/{v1,v1beta3,v1beta2,v1beta1,v1alpha1} FlowSchema, \
             PriorityLevelConfiguration and their lists; apiregistration.k8s.io/{v1,v1beta1} \
             APIService and APIServiceList; v1 List of any of these"
        );
    }

    #[test]
    fn every_codec_is_found_by_its_identity() {
        for codec in SCHEME.codecs() {
            let found = SCHEME.find(&codec.api_version(), codec.kind).unwrap();
            assert!(std::ptr::eq(found, codec), "{}", codec.kind);
        }
        assert_eq!(SCHEME.codecs().len(), CODECS.len());
        assert_eq!(CODECS.len(), 12);
    }

    #[test]
    fn read_documents_takes_one_object_or_a_stream() {
        let object = serde_json::json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "probes"},
            "spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 2},
        });
        let one = apfkit_types::wire::envelope::encode(&object).unwrap();
        let documents = SCHEME.read_documents(&one).unwrap();
        assert_eq!(documents.len(), 1);
        assert_eq!(documents[0].value["spec"]["matchingPrecedence"], 2);
        assert!(documents[0].unknown_fields.is_empty());

        let length = u32::try_from(one.len()).unwrap().to_be_bytes();
        let stream = [&length[..], &one, &length, &one].concat();
        let documents = SCHEME.read_documents(&stream).unwrap();
        assert_eq!(
            documents.iter().map(|d| d.index).collect::<Vec<_>>(),
            [0, 1]
        );
        let error = SCHEME
            .read_documents(&stream[..stream.len() - 1])
            .unwrap_err();
        assert!(
            error.to_string().contains("ends inside object 1"),
            "{error}"
        );
    }
}
