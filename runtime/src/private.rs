//! Helpers that generated code names in its serde attributes. Not part of the public API: only
//! `apfkit-codegen`'s output calls them, and they change with it.

/// The root JSON Schema (draft 2020-12) of `T`.
#[cfg(feature = "schemars")]
pub fn json_schema<T: schemars::JsonSchema>() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// The root JSON Schema (draft 2020-12) of `T`, as JSON (a kind's `KindInfo::schema`).
#[cfg(feature = "schemars")]
pub fn json_schema_value<T: schemars::JsonSchema>() -> serde_json::Value {
    json_schema::<T>().to_value()
}

/// Decodes `null` like an absent field: as the empty value.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de> + Default,
{
    let value: Option<T> = serde::Deserialize::deserialize(deserializer)?;
    Ok(value.unwrap_or_default())
}

/// Decodes base64 text (Go's `[]byte`), keeping it as written; `null` is empty.
pub fn base64<'de, D>(deserializer: D) -> Result<String, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let text: Option<String> = serde::Deserialize::deserialize(deserializer)?;
    let text = text.unwrap_or_default();
    check_base64::<D::Error>(&text)?;
    Ok(text)
}

/// Decodes optional base64 text (Go's `[]byte`), keeping it as written.
pub fn optional_base64<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let text: Option<String> = serde::Deserialize::deserialize(deserializer)?;
    if let Some(text) = &text {
        check_base64::<D::Error>(text)?;
    }
    Ok(text)
}

/// Decodes an optional map of base64 texts (Go's `map[string][]byte`), keeping them as
/// written.
pub fn optional_base64_map<'de, D>(
    deserializer: D,
) -> Result<Option<std::collections::BTreeMap<String, String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let map: Option<std::collections::BTreeMap<String, String>> =
        serde::Deserialize::deserialize(deserializer)?;
    for text in map.iter().flat_map(|map| map.values()) {
        check_base64::<D::Error>(text)?;
    }
    Ok(map)
}

/// Decodes a map of base64 texts (Go's `map[string][]byte`), keeping them as written; `null`
/// is empty.
pub fn base64_map<'de, D>(
    deserializer: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(optional_base64_map(deserializer)?.unwrap_or_default())
}

/// Checks base64 text as Go's `base64.StdEncoding.Decode` does (`encoding/json`'s rule for
/// `[]byte`): padding required, `\r` and `\n` ignored, non-zero trailing bits accepted; the
/// error names the offending byte as Go's does.
pub fn check_base64<E: serde::de::Error>(text: &str) -> Result<(), E> {
    let src = text.as_bytes();
    let corrupt = |at: usize| E::custom(format!("illegal base64 data at input byte {at}"));
    let newline = |b: u8| b == b'\n' || b == b'\r';
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let mut si = 0;
    while si < src.len() {
        // One quantum of four characters, newlines skipped.
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(());
                }
                return Err(corrupt(si - j));
            }
            let b = src[si];
            si += 1;
            if alphabet(b) {
                j += 1;
                continue;
            }
            if newline(b) {
                continue;
            }
            if b != b'=' || j < 2 {
                return Err(corrupt(si - 1));
            }
            if j == 2 {
                while si < src.len() && newline(src[si]) {
                    si += 1;
                }
                if si == src.len() {
                    return Err(corrupt(src.len()));
                }
                if src[si] != b'=' {
                    return Err(corrupt(si - 1));
                }
                si += 1;
            }
            while si < src.len() && newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                return Err(corrupt(si));
            }
            return Ok(());
        }
    }
    Ok(())
}

/// `skip_serializing_if` for bare structs left out when empty.
pub fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// `skip_serializing_if` for borrowed bare structs left out when empty.
pub fn ref_is_default<T: Default + PartialEq>(value: &&T) -> bool {
    **value == T::default()
}

/// `skip_serializing_if` for borrowed options.
pub fn ref_is_none<T>(value: &&Option<T>) -> bool {
    value.is_none()
}

/// Accepts an absent `apiVersion` or `kind`; a present one must match.
pub fn check_identity<E: serde::de::Error>(
    api_version: Option<&str>,
    kind: Option<&str>,
    expected_api_version: &'static str,
    expected_kind: &'static str,
) -> Result<(), E> {
    if let Some(found) = api_version
        && found != expected_api_version
    {
        return Err(E::invalid_value(
            serde::de::Unexpected::Str(found),
            &expected_api_version,
        ));
    }
    if let Some(found) = kind
        && found != expected_kind
    {
        return Err(E::invalid_value(
            serde::de::Unexpected::Str(found),
            &expected_kind,
        ));
    }
    Ok(())
}
