//! How a kind is written beyond serde's JSON: as kube-apiserver writes it (JSON in its Go
//! structs' field order) and as Kubernetes protobuf. `apfkit-codegen` implements
//! [`Encodings`] for every kind: from the schema's Go layout where it has one, and with the
//! defaults (serde's JSON, no protobuf) where it has none, such as a CustomResourceDefinition's.

use serde::Serialize;

use super::document::{InputError, Limits};

/// Why an object could not be written; the encoder's own error.
pub type EncodingError = Box<dyn std::error::Error + Send + Sync>;

/// A kind's encodings, as the scheme writes typed objects.
pub trait Encodings: Serialize {
    /// Appends the object's JSON as kube-apiserver writes it, compact or indented by two
    /// spaces. The default is serde's JSON of the type (what a custom resource's schema gives).
    ///
    /// # Errors
    ///
    /// A value JSON cannot hold.
    fn write_json(&self, out: &mut Vec<u8>, pretty: bool) -> Result<(), EncodingError> {
        if pretty {
            serde_json::to_writer_pretty(out, self)?;
        } else {
            serde_json::to_writer(out, self)?;
        }
        Ok(())
    }

    /// The object as Kubernetes protobuf in its storage envelope (`k8s\0`, then
    /// `runtime.Unknown`); `None` for a kind without a protobuf form (the default).
    fn to_protobuf(&self) -> Option<Result<Vec<u8>, EncodingError>> {
        None
    }

    /// Reads what [`Encodings::to_protobuf`] writes straight into the type, within `limits`,
    /// dropping fields the type lacks. `None` when the kind has no protobuf form (the
    /// default), the bytes do not start with the envelope's prefix, or the envelope names
    /// another apiVersion or kind: the caller reads them some other way.
    fn from_protobuf(bytes: &[u8], limits: &Limits) -> Option<Result<Self, InputError>>
    where
        Self: Sized,
    {
        let _ = (bytes, limits);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Plain {
        b: u8,
        a: &'static str,
    }
    impl Encodings for Plain {}

    #[test]
    fn the_defaults_are_serdes_json_and_no_protobuf() {
        let plain = Plain { b: 1, a: "<x>" };
        let mut out = Vec::new();
        plain.write_json(&mut out, false).unwrap();
        assert_eq!(out, br#"{"b":1,"a":"<x>"}"#);
        out.clear();
        plain.write_json(&mut out, true).unwrap();
        assert_eq!(out, b"{\n  \"b\": 1,\n  \"a\": \"<x>\"\n}");
        assert!(plain.to_protobuf().is_none());
    }
}
