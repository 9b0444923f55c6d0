//! Multi-document YAML into the scheme: read with limits, convert, default, validate; and
//! into `go_yaml_error`, go-yaml's words for what does not parse.
#![no_main]

mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // The reader sniffs the format by the first non-blank byte; keep this target on YAML.
    if !data
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'[')
    {
        common::documents(data);
    }
    // go-yaml's words for YAML that does not parse: its own prefix, never a panic.
    if let Ok(text) = std::str::from_utf8(data)
        && let Some(message) = apfkit_runtime::scheme::go_yaml_error(text)
    {
        assert!(message.starts_with("yaml: "), "{message}");
    }
});
