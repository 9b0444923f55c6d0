//! etcd keys as bytes, and their one printable form.
//!
//! etcd keys are bytes. Those kube-apiserver writes are UTF-8 text, but a key may hold any
//! byte, including ESC (terminal escapes), newlines (forged lines) and tabs (broken columns),
//! and may not be UTF-8 at all. A key is therefore printed in an escaped form that is plain
//! text on one line and names every byte exactly, and the same form is read back from the
//! command line:
//!
//! | in the key | printed |
//! |---|---|
//! | `\` | `\\` |
//! | newline, carriage return, tab | `\n`, `\r`, `\t` |
//! | other control and bidirectional formatting characters | `\u{1b}` |
//! | a byte that is not UTF-8 | `\xff` |
//! | anything else | itself |
//!
//! JSON reports carry the key as text (`key`, invalid bytes as U+FFFD) and, when the key is
//! not UTF-8, its exact bytes in base64 (`keyBase64`).

use std::fmt;

use base64::Engine as _;
use serde::ser::SerializeMap;

/// An etcd key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(pub Vec<u8>);

/// A printed key that does not read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A backslash not followed by one of the escapes.
    #[error(
        "{text:?}: unknown escape at character {at}; use \\\\, \\n, \\r, \\t, \\u{{HEX}} or \\xHH"
    )]
    Escape {
        /// The text.
        text: String,
        /// Character offset of the backslash.
        at: usize,
    },
    /// Text that is not base64.
    #[error("not base64: {0}")]
    Base64(String),
}

/// Characters printed as an escape: control and bidirectional formatting characters.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

impl Key {
    /// The key as text for reports: the bytes as UTF-8, invalid bytes as U+FFFD.
    pub fn lossy(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }

    /// Whether the key is UTF-8 text.
    pub fn is_utf8(&self) -> bool {
        std::str::from_utf8(&self.0).is_ok()
    }

    /// The key's exact bytes in standard base64.
    pub fn base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.0)
    }

    /// Reads a key from its base64 form.
    ///
    /// # Errors
    ///
    /// Text that is not standard base64.
    pub fn from_base64(text: &str) -> Result<Key, KeyError> {
        base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map(Key)
            .map_err(|e| KeyError::Base64(e.to_string()))
    }

    /// Reads a key from its printed form (see the module's table).
    ///
    /// # Errors
    ///
    /// A backslash that starts no escape.
    pub fn parse_escaped(text: &str) -> Result<Key, KeyError> {
        let mut out = Vec::with_capacity(text.len());
        let mut chars = text.char_indices().peekable();
        let fail = |at: usize| KeyError::Escape {
            text: text.to_owned(),
            at: text[..at].chars().count(),
        };
        while let Some((at, c)) = chars.next() {
            if c != '\\' {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            match chars.next().map(|(_, c)| c) {
                Some('\\') => out.push(b'\\'),
                Some('n') => out.push(b'\n'),
                Some('r') => out.push(b'\r'),
                Some('t') => out.push(b'\t'),
                Some('x') => {
                    let hex: String = (0..2)
                        .filter_map(|_| chars.next().map(|(_, c)| c))
                        .collect();
                    let byte = (hex.len() == 2)
                        .then(|| u8::from_str_radix(&hex, 16).ok())
                        .flatten()
                        .ok_or_else(|| fail(at))?;
                    out.push(byte);
                }
                Some('u') => {
                    if chars.next().map(|(_, c)| c) != Some('{') {
                        return Err(fail(at));
                    }
                    let mut hex = String::new();
                    loop {
                        match chars.next().map(|(_, c)| c) {
                            Some('}') => break,
                            Some(c) if c.is_ascii_hexdigit() && hex.len() < 6 => hex.push(c),
                            _ => return Err(fail(at)),
                        }
                    }
                    let c = u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| fail(at))?;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                _ => return Err(fail(at)),
            }
        }
        Ok(Key(out))
    }
}

impl From<&str> for Key {
    fn from(text: &str) -> Key {
        Key(text.as_bytes().to_vec())
    }
}

/// The printed form: one line of text naming every byte (see the module's table).
impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '\\' => f.write_str("\\\\")?,
                    '\n' => f.write_str("\\n")?,
                    '\r' => f.write_str("\\r")?,
                    '\t' => f.write_str("\\t")?,
                    c if needs_escape(c) => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                    c => fmt::Write::write_char(f, c)?,
                }
            }
            for byte in chunk.invalid() {
                write!(f, "\\x{byte:02x}")?;
            }
        }
        Ok(())
    }
}

/// In JSON reports: `key` (text, invalid bytes as U+FFFD) and, when the key is not UTF-8,
/// `keyBase64` (its exact bytes). Flattened into the report's entry.
impl serde::Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let utf8 = self.is_utf8();
        let mut map = serializer.serialize_map(Some(if utf8 { 1 } else { 2 }))?;
        map.serialize_entry("key", &self.lossy())?;
        if !utf8 {
            map.serialize_entry("keyBase64", &self.base64())?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keys_print_on_one_line_with_every_byte_named() {
        let key = Key(b"/registry/flowschemas/a\x1b[31m\nb\tc\\d\xff\xfe\xe2\x80\xaee".to_vec());
        let printed = key.to_string();
        assert_eq!(
            printed,
            "/registry/flowschemas/a\\u{1b}[31m\\nb\\tc\\\\d\\xff\\xfe\\u{202e}e"
        );
        assert!(!printed.chars().any(needs_escape));
        assert_eq!(Key::parse_escaped(&printed).unwrap(), key);
        assert_eq!(
            Key::from("/registry/flowschemas/exempt").to_string(),
            "/registry/flowschemas/exempt"
        );
        assert_eq!(Key::from("/ä/日本").to_string(), "/ä/日本");
    }

    #[test]
    fn json_reports_add_base64_only_for_keys_that_are_not_text() {
        let text = serde_json::to_value(Key::from("/registry/flowschemas/a")).unwrap();
        assert_eq!(text, serde_json::json!({"key": "/registry/flowschemas/a"}));
        let bytes = serde_json::to_value(Key(b"/r/\xff".to_vec())).unwrap();
        assert_eq!(bytes["key"], "/r/\u{fffd}");
        assert_eq!(
            Key::from_base64(bytes["keyBase64"].as_str().unwrap()).unwrap(),
            Key(b"/r/\xff".to_vec())
        );
    }

    #[test]
    fn bad_escapes_are_errors() {
        for text in [
            "a\\",
            "a\\q",
            "\\x4",
            "\\xzz",
            "\\u{110000}",
            "\\u{}",
            "\\u1b",
            "\\u{1234567}",
        ] {
            assert!(Key::parse_escaped(text).is_err(), "{text}");
        }
        assert!(Key::from_base64("***").is_err());
    }

    proptest! {
        #[test]
        fn any_key_reads_back_from_its_printed_form(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let key = Key(bytes);
            let printed = key.to_string();
            prop_assert!(!printed.chars().any(needs_escape));
            prop_assert_eq!(Key::parse_escaped(&printed).unwrap(), key);
        }
    }
}
