//! JSON streams into the scheme: read with limits, convert, default, validate.
#![no_main]

mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // The reader sniffs the format by the first non-blank byte; keep this target on JSON.
    if data
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'[')
    {
        common::documents(data);
    }
});
