//! The few protobuf messages the server writes itself, not objects of its scheme: a watch
//! event (`metav1.WatchEvent`, framed by a 4-byte big-endian length, without the `k8s\0`
//! envelope, as apimachinery's raw protobuf stream serializer writes it) and a `metav1.Status`
//! in the envelope (`runtime.Unknown`), field numbers from apimachinery's `generated.proto`.

use apfkit_runtime::scheme::PROTOBUF_PREFIX;

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A length-delimited field (wire type 2).
fn bytes_field(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    varint(out, number << 3 | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A varint field (wire type 0).
fn varint_field(out: &mut Vec<u8>, number: u64, value: u64) {
    varint(out, number << 3);
    varint(out, value);
}

/// One frame of a protobuf watch: `WatchEvent{type: 1, object: 2 (RawExtension{raw: 1})}`
/// after its length.
pub fn watch_frame(kind: &str, object: &[u8]) -> Vec<u8> {
    let mut raw = Vec::with_capacity(object.len() + 8);
    bytes_field(&mut raw, 1, object);
    let mut event = Vec::with_capacity(raw.len() + kind.len() + 8);
    bytes_field(&mut event, 1, kind.as_bytes());
    bytes_field(&mut event, 2, &raw);
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&u32::try_from(event.len()).unwrap_or(u32::MAX).to_be_bytes());
    frame.extend_from_slice(&event);
    frame
}

/// A `metav1.Status` of a failure in the envelope: `status` 2, `message` 3, `reason` 4,
/// `code` 6.
pub fn status(message: &str, reason: &str, code: u16) -> Vec<u8> {
    let mut status = Vec::new();
    bytes_field(&mut status, 1, &[]);
    bytes_field(&mut status, 2, b"Failure");
    bytes_field(&mut status, 3, message.as_bytes());
    bytes_field(&mut status, 4, reason.as_bytes());
    varint_field(&mut status, 6, u64::from(code));
    let mut type_meta = Vec::new();
    bytes_field(&mut type_meta, 1, b"v1");
    bytes_field(&mut type_meta, 2, b"Status");
    let mut unknown = Vec::new();
    bytes_field(&mut unknown, 1, &type_meta);
    bytes_field(&mut unknown, 2, &status);
    bytes_field(&mut unknown, 3, b"");
    bytes_field(&mut unknown, 4, b"");
    let mut out = PROTOBUF_PREFIX.to_vec();
    out.extend_from_slice(&unknown);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_frame_is_length_then_event() {
        let frame = watch_frame("ADDED", b"k8s\0x");
        let length = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(length, frame.len() - 4);
        // type = "ADDED"
        assert_eq!(&frame[4..11], b"\x0a\x05ADDED");
        // object = RawExtension{raw: "k8s\0x"}
        assert_eq!(&frame[11..], b"\x12\x07\x0a\x05k8s\0x");
    }

    #[test]
    fn a_status_is_enveloped() {
        let status = status("gone", "Expired", 410);
        assert!(status.starts_with(PROTOBUF_PREFIX));
        // code 410 as a varint in field 6: 0x30 0x9a 0x03.
        assert!(status.windows(3).any(|w| w == [0x30, 0x9a, 0x03]));
    }
}
