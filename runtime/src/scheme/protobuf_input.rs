//! Reading Kubernetes protobuf: one object in the storage envelope (`k8s\0` + `runtime.Unknown`,
//! as etcd holds it), or a stream of them, each framed by its length: 4 bytes big-endian as
//! Kubernetes' own framer writes (`apimachinery/pkg/util/framer`), or a protobuf varint as
//! `writeDelimitedTo` and Go's `protodelim` write.
//!
//! Each object decodes with the scheme's [`ValueEncodings`]; the fields its schema lacks are kept
//! on the document for the caller's unknown-field mode. Every frame is bounded by
//! [`Limits::max_document_bytes`] before it is read, and the decoded object by the depth and
//! node limits, so that it can be written as JSON or YAML and read back.

use std::io::Read;

use super::document::{Document, InputError, Limits, ReadError};
use super::encoding::ValueEncodings;

/// The first bytes of a Kubernetes protobuf object (`k8s` and a zero byte), before its
/// `runtime.Unknown` envelope.
pub const PROTOBUF_PREFIX: &[u8] = b"k8s\0";

/// How objects follow one another in a protobuf input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One object: the whole input.
    Single,
    /// Each object after its length, 4 bytes big-endian.
    Fixed32,
    /// Each object after its length, a protobuf varint.
    Varint,
}

/// Bytes to look at to tell protobuf input apart: the longest varint of a 32-bit length (5)
/// and the prefix (4).
pub const HEAD: usize = 9;

/// What the first bytes of an input say, if they begin Kubernetes protobuf.
pub fn sniff(head: &[u8]) -> Option<Framing> {
    if head.starts_with(PROTOBUF_PREFIX) {
        return Some(Framing::Single);
    }
    if head.get(4..8) == Some(PROTOBUF_PREFIX) {
        return Some(Framing::Fixed32);
    }
    let (_, width) = varint(head)?;
    (head.get(width..width + 4) == Some(PROTOBUF_PREFIX)).then_some(Framing::Varint)
}

/// A varint at the start of `bytes` (at most 5 bytes: a 32-bit length) and its width.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().take(5).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Calls `each` with every object of `reader`, framed as `framing` says.
/// Without encodings, the first object is refused.
pub fn read_each<E: From<ReadError>>(
    mut reader: impl Read,
    framing: Framing,
    encodings: Option<&ValueEncodings>,
    limits: &Limits,
    mut each: impl FnMut(Document) -> Result<(), E>,
) -> Result<(), E> {
    let fail = |document, error| ReadError { document, error };
    let Some(encodings) = encodings else {
        let error = InputError::Protobuf("this scheme reads no protobuf".to_owned());
        return Err(fail(0, error).into());
    };
    let decode = |bytes: &[u8], index: usize| -> Result<Document, InputError> {
        let (value, unknown_fields) = (encodings.read_protobuf)(bytes, limits)?;
        Ok(Document {
            index,
            value,
            duplicate_fields: Vec::new(),
            unknown_fields,
        })
    };
    if framing == Framing::Single {
        let mut bytes = Vec::new();
        let limit = limits.max_document_bytes as u64;
        (&mut reader)
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(0, InputError::Io(e)))?;
        if bytes.len() as u64 > limit {
            return Err(fail(0, too_large(limits)).into());
        }
        return each(decode(&bytes, 0).map_err(|e| fail(0, e))?);
    }
    let mut index = 0;
    while let Some(length) = frame_length(&mut reader, framing).map_err(|e| fail(index, e))? {
        if length > limits.max_document_bytes as u64 {
            return Err(fail(index, too_large(limits)).into());
        }
        let mut bytes = Vec::new();
        (&mut reader)
            .take(length)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(index, InputError::Io(e)))?;
        if (bytes.len() as u64) < length {
            let message = format!(
                "the stream ends inside object {index}: {} of its {length} bytes",
                bytes.len()
            );
            return Err(fail(index, InputError::Protobuf(message)).into());
        }
        each(decode(&bytes, index).map_err(|e| fail(index, e))?)?;
        index += 1;
    }
    Ok(())
}

fn too_large(limits: &Limits) -> InputError {
    InputError::TooLarge {
        limit: limits.max_document_bytes,
        line: None,
    }
}

/// The next frame's length, or `None` at the end of the input (between frames).
fn frame_length(reader: &mut impl Read, framing: Framing) -> Result<Option<u64>, InputError> {
    let width = if framing == Framing::Fixed32 { 4 } else { 5 };
    let mut bytes = Vec::with_capacity(width);
    for read in 0..width {
        let mut byte = [0u8];
        if reader.read(&mut byte).map_err(InputError::Io)? == 0 {
            if read == 0 {
                return Ok(None);
            }
            return Err(InputError::Protobuf(
                "the stream ends inside an object's length".to_owned(),
            ));
        }
        bytes.push(byte[0]);
        if framing == Framing::Varint && byte[0] & 0x80 == 0 {
            return Ok(varint(&bytes).map(|(length, _)| length));
        }
    }
    match framing {
        Framing::Fixed32 => Ok(Some(u64::from(u32::from_be_bytes([
            bytes[0], bytes[1], bytes[2], bytes[3],
        ])))),
        _ => Err(InputError::Protobuf(
            "an object's length is longer than 32 bits".to_owned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framings_are_told_apart_by_where_the_prefix_is() {
        assert_eq!(sniff(b"k8s\0\x0a"), Some(Framing::Single));
        assert_eq!(sniff(b"\0\0\x01\x2ck8s\0"), Some(Framing::Fixed32));
        assert_eq!(sniff(b"\xac\x02k8s\0"), Some(Framing::Varint));
        assert_eq!(sniff(b"\x2ck8s\0"), Some(Framing::Varint));
        for text in [
            &b"{\"a\": 1}"[..],
            b"apiVersion: v1",
            b"",
            b"k8s",
            b"\xff\xff\xff\xff\xff\xff",
        ] {
            assert_eq!(sniff(text), None, "{text:?}");
        }
    }
}
