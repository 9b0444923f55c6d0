//! `go_scanner` held to Go's own decoder: each document of `data/go-json-documents.jsonl`
//! with the syntax error (and offset) `sigs.k8s.io/json` answers for it, made in `reference/`
//! with `go run ./golden json < ../wire/tests/data/go-json-documents.jsonl >
//! ../wire/tests/data/go-json-errors.jsonl` (add a document there).

use apfkit_wire::go_scanner;

#[test]
fn syntax_errors_are_gos() {
    let cases: Vec<(String, Option<String>, usize)> = include_str!("../data/go-json-errors.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a golden line"))
        .collect();
    assert!(cases.len() > 80);
    for (document, message, offset) in cases {
        let found = go_scanner::syntax_error(document.as_bytes());
        assert_eq!(
            found.as_ref().map(|e| e.message.clone()),
            message,
            "{document:?}"
        );
        if let Some(found) = found {
            assert_eq!(found.offset, offset, "{document:?}");
        }
    }
}

#[test]
fn what_serde_json_reads_go_reads() {
    // Every document serde_json reads as one value is one Go's scanner finds no error in,
    // and the other way round, on the golden documents and their prefixes.
    for line in include_str!("../data/go-json-documents.jsonl").lines() {
        let document: String = serde_json::from_str(line).unwrap();
        for end in (0..=document.len()).filter(|&end| document.is_char_boundary(end)) {
            let part = &document[..end];
            let serde = serde_json::from_str::<serde_json::Value>(part).is_ok();
            let go = go_scanner::syntax_error(part.as_bytes()).is_none();
            // serde_json refuses lone surrogates in escapes, which Go's scanner lets through
            // (its decoder replaces them).
            if !part.contains("\\ud800") {
                assert_eq!(serde, go, "{part:?}");
            }
        }
    }
}
