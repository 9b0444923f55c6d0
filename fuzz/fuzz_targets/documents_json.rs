//! JSON streams into the scheme: read with limits, convert, default, validate; and any bytes
//! through Go's JSON scanner (`apfkit_wire::go_scanner`), which agrees with serde_json on
//! what is one document.
#![no_main]

mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let go = apfkit_wire::go_scanner::syntax_error(data);
    if let Some(error) = &go {
        assert!(error.offset <= data.len(), "{error:?}");
    }
    // serde_json refuses what Go lets through in strings (invalid UTF-8, lone surrogates in
    // escapes), numbers past f64 and nesting past its own limit of 128; elsewhere the two
    // agree on what is one document.
    if std::str::from_utf8(data).is_ok_and(|text| !text.contains("\\u")) {
        let serde = serde_json::from_slice::<serde_json::Value>(data);
        let beyond_serde = serde.as_ref().is_err_and(|e| {
            let text = e.to_string();
            text.contains("recursion limit") || text.contains("number out of range")
        });
        if !beyond_serde {
            assert_eq!(go.is_none(), serde.is_ok(), "{:?}", String::from_utf8_lossy(data));
        }
    }
    // The reader sniffs the format by the first non-blank byte; keep this target on JSON.
    if data
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'[')
    {
        common::documents(data);
    }
});
