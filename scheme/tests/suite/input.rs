//! The document reader: limits that hold while reading, the same for JSON and YAML, duplicate
//! JSON keys, and streams of any length.

use std::io::Read;

use apfkit_scheme::scheme::{
    self, Document, InputError, Limits, ReadError, SCHEME, Target, UnknownFields,
};
use serde_json::{Value, json};

fn read_with(input: impl Read, limits: &Limits) -> Result<Vec<Document>, ReadError> {
    let mut documents = Vec::new();
    SCHEME.read_values(input, limits, |document| {
        documents.push(document);
        Ok::<_, ReadError>(())
    })?;
    Ok(documents)
}

fn small(max_document_bytes: usize) -> Limits {
    Limits {
        max_document_bytes,
        ..Limits::default()
    }
}

#[test]
fn duplicate_json_keys_are_reported_with_their_paths() {
    let input = br#"{"kind": "A", "kind": "B", "metadata": {"name": "x", "name": "y"},
        "items": [{"a": 1}, {"b": 1, "b": 2}]}"#;
    let documents = SCHEME.read_documents(input).unwrap();
    assert_eq!(
        documents[0].value["kind"], "B",
        "the last one wins, as in Go"
    );
    assert_eq!(
        documents[0].duplicate_fields,
        ["kind", "metadata.name", "items[1].b"]
    );
    let clean = SCHEME.read_documents(br#"{"a": {"a": 1}}"#).unwrap();
    assert!(clean[0].duplicate_fields.is_empty());
}

#[test]
fn duplicate_yaml_keys_are_an_error() {
    let err = SCHEME
        .read_documents(b"a: 1\na: 2\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("duplicate"), "{err}");
}

#[test]
fn the_size_limit_holds_per_document_for_json() {
    let document = br#"{"a": "0123456789"}"#; // 19 bytes
    assert_eq!(read_with(&document[..], &small(19)).unwrap().len(), 1);
    let err = read_with(&document[..], &small(18)).unwrap_err();
    assert!(
        matches!(
            err.error,
            InputError::TooLarge {
                limit: 18,
                line: None
            }
        ),
        "{err}"
    );
    // Each document has its own allowance.
    let stream = br#"{"a": "0123456789"} {"a": "0123456789"}  {"a": "0123456789"}"#;
    assert_eq!(read_with(&stream[..], &small(21)).unwrap().len(), 3);
    let mut stream = stream.to_vec();
    stream.extend_from_slice(br#" {"a": "0123456789012345678901234567890"}"#);
    let err = read_with(&stream[..], &small(21)).unwrap_err();
    assert_eq!(err.document, 3);
    assert!(matches!(err.error, InputError::TooLarge { .. }));
}

/// An endless line is refused once the limit is read, not buffered until memory runs out.
#[test]
fn an_endless_scalar_is_refused_at_the_limit() {
    for prefix in [&b"{\"a\": \""[..], &b"a: "[..], &b"a: |\n  "[..]] {
        let endless = prefix.chain(std::io::repeat(b'x'));
        let err = read_with(endless, &small(1 << 20)).unwrap_err();
        assert!(
            matches!(err.error, InputError::TooLarge { limit, .. } if limit == 1 << 20),
            "{}: {err}",
            String::from_utf8_lossy(prefix)
        );
    }
}

#[test]
fn yaml_documents_are_measured_one_by_one() {
    let document = format!("a: {}\n", "x".repeat(1000));
    let stream = vec![document.as_str(); 50].join("---\n");
    let documents = read_with(stream.as_bytes(), &small(4096)).unwrap();
    assert_eq!(documents.len(), 50);
    // Measured from marker to marker: 5,000 bytes are over a 4,096-byte limit.
    let big = format!("{stream}---\na: {}\n", "y".repeat(5000));
    let err = read_with(big.as_bytes(), &small(4096)).unwrap_err();
    // The parser reads ahead, so the index may lag; the line names the document.
    assert!(
        matches!(
            err.error,
            InputError::TooLarge {
                limit: 4096,
                line: Some(100)
            }
        ),
        "{err}"
    );
    assert!(err.document <= 50);
    // Empty and comment-only documents, which the parser skips silently, are documents too.
    let empties = "---\n# nothing\n".repeat(100_000);
    assert!(
        read_with(empties.as_bytes(), &small(1024))
            .unwrap()
            .is_empty()
    );
    // A marker needs a blank or a line end after it: `----` and `---x` are content.
    let not_markers = format!("a: |\n{}\n", "  ---x\n  ----\n".repeat(1000));
    assert!(read_with(not_markers.as_bytes(), &small(4096)).is_err());
}

fn nested_json(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

fn nested_yaml(depth: usize) -> String {
    (0..depth)
        .map(|i| format!("{}-\n", "  ".repeat(i)))
        .collect()
}

/// What one format accepts, the other accepts too: the writer's output can be read back.
#[test]
fn depth_limits_are_the_same_for_json_and_yaml() {
    let limits = Limits::default();
    let max = limits.max_depth;
    let json = read_with(nested_json(max).as_bytes(), &limits).unwrap();
    let yaml_text = serde_saphyr::to_string(&json[0].value).unwrap();
    let yaml = read_with(yaml_text.as_bytes(), &limits).unwrap();
    assert_eq!(yaml[0].value, json[0].value);
    assert!(read_with(nested_yaml(max).as_bytes(), &limits).is_ok());
    for text in [nested_json(max + 1), nested_yaml(max + 1)] {
        let err = read_with(text.as_bytes(), &limits).unwrap_err();
        assert!(
            matches!(err.error, InputError::TooDeep { .. } | InputError::Yaml(_)),
            "{err}"
        );
    }
    let shallow = Limits {
        max_depth: 10,
        ..limits
    };
    for (depth, fits) in [(10, true), (11, false)] {
        for text in [nested_json(depth), nested_yaml(depth)] {
            assert_eq!(read_with(text.as_bytes(), &shallow).is_ok(), fits, "{text}");
        }
    }
    // The limit cannot be raised past what the parsers handle on a small stack.
    let raised = Limits {
        max_depth: 1000,
        ..limits
    };
    assert!(read_with(nested_yaml(65).as_bytes(), &raised).is_err());
}

/// Deep flow nesting in YAML is refused before libyaml reads it, whose scanner costs time
/// quadratic in the nesting (issue 39: 60,000 levels in a 120 KB body took 5.5 s); shallow
/// documents with many brackets read as before, and the limit is the one block style has.
#[test]
fn deep_yaml_flow_nesting_is_refused_before_libyaml_reads_it() {
    let limits = Limits::default();
    let max = limits.max_depth;
    // The top-level mapping is one level: `spec` holds max - 1 more.
    let flow = |depth: usize, close: bool| {
        let closing = if close {
            "]".repeat(depth)
        } else {
            String::new()
        };
        format!("spec: {}{closing}\n", "[".repeat(depth))
    };
    assert!(read_with(flow(max - 1, true).as_bytes(), &limits).is_ok());
    for text in [
        flow(max, true),
        flow(60_000, true),
        flow(60_000, false),
        format!("spec: {}1{}\n", "{a: ".repeat(60_000), "}".repeat(60_000)),
    ] {
        let err = read_with(text.as_bytes(), &limits).unwrap_err();
        assert!(
            matches!(err.error, InputError::TooDeep { limit } if limit == max),
            "{}: {err}",
            &text[..20]
        );
    }
    // Many brackets, none deep: read (each line's flow collections close on it).
    let many: String = (0..500)
        .map(|i| format!("  k{i}: [{{a: [1, '[', \"{{\"]}}]\n"))
        .collect();
    let read = read_with(format!("spec:\n{many}").as_bytes(), &limits).unwrap();
    assert_eq!(read[0].value["spec"]["k499"], json!([{"a": [1, "[", "{"]}]));
    // Malformed, with many brackets: a YAML error naming where the document starts.
    let malformed = format!("a: 1\n---\nspec: {}\n  - ]\n", "[1] ".repeat(100));
    let err = read_with(malformed.as_bytes(), &limits).unwrap_err();
    assert!(
        matches!(&err.error, InputError::Yaml(message) if message.contains("document starting at line 2")),
        "{err}"
    );
}

#[test]
fn node_limits_are_the_same_for_json_and_yaml() {
    let limits = Limits {
        max_nodes: 1000,
        ..Limits::default()
    };
    // An object with n keys and n scalar values has 2n + 1 nodes.
    let object = |n: usize| {
        let map: serde_json::Map<String, Value> =
            (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
        Value::Object(map)
    };
    for (n, fits) in [(499, true), (500, false)] {
        let value = object(n);
        let json_text = serde_json::to_string(&value).unwrap();
        let yaml_text = serde_saphyr::to_string(&value).unwrap();
        for text in [json_text, yaml_text] {
            let result = read_with(text.as_bytes(), &limits);
            assert_eq!(result.is_ok(), fits, "{n} keys: {:?}", result.err());
        }
    }
}

#[test]
fn long_yaml_streams_are_read_whole() {
    let stream = "a: 1\n---\n".repeat(5000);
    assert_eq!(
        SCHEME.read_documents(stream.as_bytes()).unwrap().len(),
        5000
    );
}

/// A caller-built value nested 10,000 deep is refused, not a stack overflow.
#[test]
fn deep_caller_built_values_are_refused() {
    let mut value = json!("leaf");
    for _ in 0..10_000 {
        // Not json!(), which would clone the value recursively.
        value = Value::Object([("a".to_owned(), value)].into_iter().collect());
    }
    let mut document = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": "x"},
    });
    document["spec"] = value;
    let target: Target = "v1".parse().unwrap();
    let err = SCHEME
        .convert_value(&document, &target, UnknownFields::Warn)
        .unwrap_err();
    assert!(err.message.contains("nested deeper than"), "{err}");
    assert_eq!(scheme::depth(&document), 10_001);
    // Dismantle the value without recursion.
    let mut stack = vec![document];
    while let Some(mut value) = stack.pop() {
        if let Some(map) = value.as_object_mut() {
            stack.extend(std::mem::take(map).into_iter().map(|(_, v)| v));
        }
    }
}

fn list(extra: Value) -> Value {
    let mut list = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchemaList",
        "items": [],
    });
    for (key, value) in extra.as_object().unwrap() {
        list[key] = value.clone();
    }
    list
}

/// A list's own fields are decoded like an object's.
#[test]
fn list_envelopes_are_decoded() {
    let target: Target = "v1beta3".parse().unwrap();
    let input = list(json!({"bogus": 1, "metadata": {"resourceVersion": "7", "extra": true}}));
    let strict = SCHEME
        .convert_value(&input, &target, UnknownFields::Strict)
        .unwrap_err();
    assert_eq!(
        strict.message,
        "strict decoding error: unknown field \"bogus\", unknown field \"metadata.extra\""
    );
    let warned = SCHEME
        .convert_value(&input, &target, UnknownFields::Warn)
        .unwrap();
    assert_eq!(
        warned.warnings,
        [
            scheme::Warning::UnknownField {
                path: "bogus".into()
            },
            scheme::Warning::UnknownField {
                path: "metadata.extra".into()
            },
        ]
    );
    for converted in [
        warned.object,
        SCHEME
            .convert_value(&input, &target, UnknownFields::Ignore)
            .unwrap()
            .object,
    ] {
        assert_eq!(
            converted,
            json!({
                "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3",
                "kind": "FlowSchemaList",
                "metadata": {"resourceVersion": "7"},
                "items": [],
            })
        );
    }
    let bad = SCHEME
        .convert_value(
            &list(json!({"metadata": "not an object"})),
            &target,
            UnknownFields::Warn,
        )
        .unwrap_err();
    assert_eq!(bad.path, "metadata");
}

/// The deepest document the reader accepts converts, in YAML and JSON, on a test thread's
/// small stack.
#[test]
fn the_deepest_readable_document_converts() {
    let mut fields = json!({});
    // root, metadata, managedFields, the entry and fieldsV1 itself make five levels.
    for _ in 0..scheme::MAX_DEPTH_LIMIT - 5 {
        fields = Value::Object([("f:a".to_owned(), fields)].into_iter().collect());
    }
    let document = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3",
        "kind": "FlowSchema",
        "metadata": {"name": "x", "managedFields": [{"manager": "m", "fieldsV1": fields}]},
        "spec": {"priorityLevelConfiguration": {"name": "p"}},
    });
    assert_eq!(scheme::depth(&document), scheme::MAX_DEPTH_LIMIT);
    let yaml = serde_saphyr::to_string(&document).unwrap();
    let read = SCHEME.read_documents(yaml.as_bytes()).unwrap();
    let target: Target = "v1".parse().unwrap();
    let converted = SCHEME
        .convert_value(&read[0].value, &target, UnknownFields::Strict)
        .unwrap();
    let written = serde_saphyr::to_string(&converted.object).unwrap();
    assert_eq!(
        SCHEME.read_documents(written.as_bytes()).unwrap()[0].value,
        converted.object
    );
}

/// Errors say what kind of failure they are, so that callers need not read messages.
#[test]
fn scheme_errors_have_kinds() {
    use scheme::ErrorKind;
    let target = |t: &str| -> Target { t.parse().unwrap() };
    let level = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "p"},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}},
    });
    let kind_of = |document: &Value, to: &str, unknown| {
        SCHEME
            .convert_value(document, &target(to), unknown)
            .unwrap_err()
            .kind
    };
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment"});
    assert_eq!(
        kind_of(&deployment, "v1", UnknownFields::Warn),
        ErrorKind::UnsupportedKind
    );
    assert_eq!(
        kind_of(&level, "apiregistration.k8s.io/v1", UnknownFields::Warn),
        ErrorKind::WrongGroup
    );
    assert_eq!(
        kind_of(&level, "v7", UnknownFields::Warn),
        ErrorKind::UnknownVersion
    );
    let mut unknown = level.clone();
    unknown["spec"]["bogus"] = json!(1);
    assert_eq!(
        kind_of(&unknown, "v1", UnknownFields::Strict),
        ErrorKind::UnknownFields
    );
    let mut invalid = level.clone();
    invalid["spec"]["limited"]["nominalConcurrencyShares"] = json!("many");
    assert_eq!(
        kind_of(&invalid, "v1", UnknownFields::Warn),
        ErrorKind::InvalidValue
    );
    let mut deep = json!(1);
    for _ in 0..100 {
        deep = Value::Array(vec![deep]);
    }
    let mut too_deep = level.clone();
    too_deep["spec"]["x"] = deep;
    assert_eq!(
        kind_of(&too_deep, "v1", UnknownFields::Warn),
        ErrorKind::TooDeep
    );
    assert_eq!(
        SCHEME.check_target(&target("v7")).unwrap_err().kind,
        ErrorKind::UnknownVersion
    );
}

/// A reader that hands out its bytes `step` at a time, as a pipe may.
struct Trickle<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

/// The JSON reader cuts the stream in a buffer; what it reads, and where it says a syntax
/// error is, must not depend on how the bytes arrive, and must be what serde_json says when it
/// parses the whole stream at once.
#[test]
fn json_errors_name_the_stream_position_however_the_bytes_arrive() {
    let cases: [&[u8]; 9] = [
        b"{\"a\": 1}\n{\"b\": [1, 2,]}\n",
        b"\n\n  {\"a\": 1} {\"b\": tru}",
        b"{\"a\": 1}\n\n   {\"b\": 2\n",
        b"{\"a\": 1}{\"b\"\n:\n2 x}",
        b"[1, 2] [3 4]",
        b"{\"a\": \"\\u12\"}",
        b"{\"a\": 1}\n{\"b\": \"\xff\"}",
        b"{\"a\": 123456789012345678901234567890e999999}",
        b"{\"a\": 1} 12 {",
    ];
    for case in cases {
        let expected = serde_json::Deserializer::from_slice(case)
            .into_iter::<Value>()
            .find_map(Result::err)
            .unwrap_or_else(|| panic!("{:?} is invalid", String::from_utf8_lossy(case)));
        for step in [1, 3, 7, 1 << 20] {
            let err = read_with(Trickle { bytes: case, step }, &Limits::default()).unwrap_err();
            let InputError::Json {
                line,
                column,
                message,
            } = &err.error
            else {
                panic!("{case:?} in steps of {step}: {err}");
            };
            let shown = String::from_utf8_lossy(case);
            assert_eq!(
                (*line, *column),
                (expected.line(), expected.column()),
                "{shown:?} in steps of {step}"
            );
            assert_eq!(
                message,
                &expected.to_string(),
                "{shown:?} in steps of {step}"
            );
        }
    }
}

#[test]
fn json_documents_are_the_same_however_the_bytes_arrive() {
    let mut stream = Vec::new();
    for i in 0..300 {
        let object = json!({"apiVersion": "v1", "kind": "K", "n": i, "s": "x".repeat(i * 7), "l": [i, [i], {"d": null}]});
        stream.extend(serde_json::to_vec(&object).unwrap());
        stream.extend(b" \n".repeat(i % 3));
        stream.extend(b"[1, 2.5, true, \"\\u00e9\"] 7 ");
    }
    let expected: Vec<Value> = serde_json::Deserializer::from_slice(&stream)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect();
    for step in [1, 5, 4096, 1 << 20] {
        let read: Vec<Value> = read_with(
            Trickle {
                bytes: &stream,
                step,
            },
            &Limits::default(),
        )
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect();
        assert_eq!(read, expected, "in steps of {step}");
    }
}

/// An object with many keys is checked for repeats in linear time, and a repeat among them is
/// still found.
#[test]
fn wide_objects_are_checked_for_repeated_keys() {
    let mut text = String::from("{");
    for i in 0..200_000 {
        text.push_str(&format!("\"k{i}\": {i},"));
    }
    text.push_str("\"k17\": 0}");
    let documents = SCHEME.read_documents(text.as_bytes()).unwrap();
    assert_eq!(documents[0].duplicate_fields, ["k17"]);
}

/// YAML streams are cut at their markers: directives stay with the document they precede,
/// `...` ends a document, empty documents are skipped, and a marker may start a scalar.
#[test]
fn yaml_streams_are_cut_at_their_markers() {
    let stream = b"%YAML 1.2\n---\na: 1\n...\n# between\n---\n---\n# only a comment\n--- |\n  text\n---\nb: [1, 2]\n";
    let values: Vec<Value> = SCHEME
        .read_documents(stream)
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect();
    assert_eq!(
        values,
        [json!({"a": 1}), json!("text\n"), json!({"b": [1, 2]})]
    );
}

/// A YAML syntax error names the stream's line, not the line within its document, and the
/// document it is in.
#[test]
fn yaml_errors_name_the_stream_line() {
    let stream = b"a: 1\n---\nb: 2\n---\n\nc: [1,\n";
    let err = read_with(&stream[..], &Limits::default()).unwrap_err();
    assert_eq!(err.document, 2);
    let message = err.to_string();
    assert!(message.contains("at line 7 column 1"), "{message}");
}

/// Hostile input through the JSON and YAML readers: alias bombs, nesting far past every
/// limit, invalid UTF-8 in a later document, and garbage. Each is an error, never a panic, a
/// crash or a hang.
#[test]
fn hostile_text_is_refused_without_a_crash() {
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for level in 1..10 {
        let previous = format!("*a{}", level - 1);
        let items = [previous.as_str(); 9].join(", ");
        bomb.push_str(&format!("a{level}: &a{level} [{items}]\n"));
    }
    let deep_yaml = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_json = format!("{{\"a\": {}1{}}}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("alias bomb", bomb.into_bytes()),
        ("deep YAML", deep_yaml.into_bytes()),
        ("deep JSON", deep_json.into_bytes()),
        (
            "bad UTF-8 in YAML",
            b"a: 1\n---\nb: \"\xff\xfe\"\n".to_vec(),
        ),
        ("YAML garbage", b"a: [}\n\t- : :\n  ? &\n".to_vec()),
        ("JSON garbage", b"{\"a\": }{]".to_vec()),
        ("a lone document end", b"...\n".to_vec()),
    ];
    for (name, bytes) in cases {
        match read_with(&bytes[..], &Limits::default()) {
            Err(err) => {
                let message = err.to_string();
                assert!(!message.is_empty(), "{name}");
            }
            Ok(documents) => assert!(
                documents.is_empty(),
                "{name}: read {} documents",
                documents.len()
            ),
        }
    }
    let err = read_with(&b"a: 1\n---\nb: \"\xff\"\n"[..], &Limits::default()).unwrap_err();
    assert!(
        matches!(err.error, InputError::Utf8 { offset: 13 }),
        "{err}"
    );
}

/// Random bytes, and random cuts of valid streams, never panic either reader.
#[test]
fn random_bytes_never_panic_the_readers() {
    let valid = b"{\"apiVersion\": \"v1\", \"kind\": \"K\", \"a\": [1, {\"b\": \"\\u00e9\"}]}\n---\na: [1, {b: c}]\n...\n";
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    for _ in 0..3000 {
        let mut bytes: Vec<u8> = valid.to_vec();
        bytes.truncate(next() as usize % (valid.len() + 1));
        for _ in 0..next() % 4 {
            let at = next() as usize % (bytes.len() + 1);
            bytes.insert(at, (next() % 256) as u8);
        }
        let _ = read_with(&bytes[..], &Limits::default());
    }
    // Random damage to a stream of served objects: decoding while reading and building values
    // agree on every outcome.
    let served = concat!(
        r#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta3","kind":"FlowSchema","metadata":{"name":"a","labels":{"k":"v"}},"spec":{"priorityLevelConfiguration":{"name":"p"},"rules":[{"subjects":[{"kind":"User","user":{"name":"u"}}],"resourceRules":[{"verbs":["get"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"]}]}]}}"#,
        "\n",
        r#"{"kind":"PriorityLevelConfiguration","apiVersion":"flowcontrol.apiserver.k8s.io/v1","metadata":{"name":"p"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"limitResponse":{"type":"Queue","queuing":{"queues":8,"handSize":2}}}}}"#,
    )
    .as_bytes();
    let alphabet = b"{}[]\",:\\ \nakx0-";
    for _ in 0..3000 {
        let bytes = damaged(served, alphabet, &mut next);
        let shown = String::from_utf8_lossy(&bytes);
        same_on_both_paths(&bytes, &[1 << 20], &Limits::default(), &shown);
    }
}

/// What converting every document of a stream gave: each document's JSON and warnings, then
/// the error that stopped the stream, if any.
type Outcome = (Vec<(String, Vec<String>)>, Option<String>);

/// The stream converted as the CLI converts it: documents handed over as bytes, served objects
/// decoded into their types while they are read.
fn converted_from_bytes(stream: &[u8], step: usize, limits: &Limits) -> Outcome {
    let target: Target = "v1".parse().unwrap();
    let mut out = Vec::new();
    let result = SCHEME.read(
        Trickle {
            bytes: stream,
            step,
        },
        limits,
        |input| {
            let json = match input {
                scheme::Input::Json(json) => json,
                scheme::Input::Yaml(yaml) => {
                    let index = yaml.index;
                    let encoded = SCHEME
                        .convert(
                            scheme::Input::Yaml(yaml),
                            &target,
                            UnknownFields::Warn,
                            scheme::Encoding::Json,
                        )
                        .map_err(|e| Stop(format!("document {index}: {e}")))?;
                    let warnings = encoded.warnings.iter().map(ToString::to_string).collect();
                    out.push((String::from_utf8(encoded.bytes).unwrap(), warnings));
                    return Ok(());
                }
                scheme::Input::Value(document) => {
                    out.push(converted_value(&document, &target)?);
                    return Ok(());
                }
            };
            let index = json.index;
            let encoded = SCHEME
                .convert(
                    scheme::Input::Json(json),
                    &target,
                    UnknownFields::Warn,
                    scheme::Encoding::Json,
                )
                .map_err(|e| Stop(format!("document {index}: {e}")))?;
            let warnings = encoded.warnings.iter().map(ToString::to_string).collect();
            out.push((String::from_utf8(encoded.bytes).unwrap(), warnings));
            Ok::<_, Stop>(())
        },
    );
    (out, result.err().map(|stop| stop.0))
}

/// A message that says which document failed.
#[derive(Debug)]
struct Stop(String);

impl From<ReadError> for Stop {
    fn from(error: ReadError) -> Stop {
        Stop(format!("document {}: {}", error.document, error.error))
    }
}

/// The same through built values: every document scanned and built, then converted.
fn converted_from_values(stream: &[u8], limits: &Limits) -> Outcome {
    let target: Target = "v1".parse().unwrap();
    let mut out = Vec::new();
    let result = SCHEME.read_values(stream, limits, |document| {
        out.push(converted_value(&document, &target)?);
        Ok::<_, Stop>(())
    });
    (out, result.err().map(|stop| stop.0))
}

/// What the value path gives for `stream`, asserted to be what decoding while reading gives,
/// with the stream arriving in pieces of each of `steps` bytes; `what` names the case.
fn same_on_both_paths(stream: &[u8], steps: &[usize], limits: &Limits, what: &str) -> Outcome {
    let expected = converted_from_values(stream, limits);
    for &step in steps {
        let got = converted_from_bytes(stream, step, limits);
        assert_eq!(got, expected, "{what} in steps of {step}");
    }
    expected
}

/// A built document converted, its repeated keys reported first.
fn converted_value(document: &Document, target: &Target) -> Result<(String, Vec<String>), Stop> {
    let mut warnings: Vec<String> = document
        .duplicate_fields
        .iter()
        .map(|path| scheme::Warning::DuplicateField { path: path.clone() }.to_string())
        .collect();
    let converted = SCHEME
        .convert_value(&document.value, target, UnknownFields::Warn)
        .map_err(|e| Stop(format!("document {}: {e}", document.index)))?;
    warnings.extend(converted.warnings.iter().map(ToString::to_string));
    let bytes = SCHEME
        .encode_value(&converted.object, scheme::Encoding::Json)
        .map_err(|e| Stop(format!("document {}: {e}", document.index)))?;
    Ok((String::from_utf8(bytes).unwrap(), warnings))
}

/// Served objects are decoded while the stream is read, under a guard that must let through
/// only what the scan would accept with nothing to report: whatever the document, and however
/// its bytes arrive, the outputs, warnings and errors are those of the path that builds values.
#[test]
fn decoding_while_reading_changes_nothing_a_value_path_would_say() {
    let schema = |name: &str| {
        format!(
            r#"{{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta3","kind":"FlowSchema","metadata":{{"name":"{name}","labels":{{"a":"1"}}}},"spec":{{"priorityLevelConfiguration":{{"name":"global-default"}},"rules":[{{"subjects":[{{"kind":"Group","group":{{"name":"system:authenticated"}}}}],"nonResourceRules":[{{"verbs":["*"],"nonResourceURLs":["*"]}}]}}]}}}}"#
        )
    };
    let deep = |levels: usize| {
        format!(
            r#"{{"kind":"FlowSchema","apiVersion":"flowcontrol.apiserver.k8s.io/v1","metadata":{{"name":"deep","managedFields":[{{"manager":"m","fieldsV1":{}1{}}}]}}}}"#,
            "{\"f:a\":".repeat(levels),
            "}".repeat(levels)
        )
    };
    let level = |name: &str| {
        format!(
            "{{\n  \"kind\": \"PriorityLevelConfiguration\",\n  \"apiVersion\": \"flowcontrol.apiserver.k8s.io/v1beta2\",\n  \"metadata\": {{\"name\": \"{name}\"}},\n  \"spec\": {{\"type\": \"Limited\", \"limited\": {{\"assuredConcurrencyShares\": 5, \"limitResponse\": {{\"type\": \"Reject\"}}}}}}\n}}"
        )
    };
    let cases: Vec<String> = vec![
        // Nothing to report, in the orders writers use, compact and indented.
        schema("plain"),
        level("indented"),
        // Something to report: unknown fields, repeated keys, at the top and deep down.
        schema("x").replace(r#""spec":{"#, r#""extra":1,"spec":{"#),
        schema("x").replace(r#""verbs":["#, r#""colour":"red","verbs":["#),
        schema("x").replace(r#"{"a":"1"}"#, r#"{"a":"1","a":"2"}"#),
        schema("x").replace(r#""kind":"FlowSchema","#, r#""kind":"FlowSchema","kind":"FlowSchema","#),
        schema("x").replace(r#""name":"x""#, r#""name":"x","name":"y""#),
        // The identity escaped, late or missing, or of a kind not served.
        schema("x").replace(r#""kind":"FlowSchema""#, r#""kind":"Flow\u0053chema""#),
        schema("x").replace(
            r#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta3","kind":"FlowSchema","#,
            r#"{"metadata":{"name":"late"},"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta3","kind":"FlowSchema","#,
        ),
        schema("x").replace(r#""kind":"FlowSchema","#, ""),
        schema("x").replace("FlowSchema", "Deployment"),
        // Values of the wrong type, strings with escapes, at the depth limit.
        schema("x").replace(r#"{"name":"global-default"}"#, r#"{"name":7}"#),
        schema("x").replace(r#""name":"x""#, r#""name":"a\"<b>\\\u00e9""#),
        deep(60),
        // Errors that stop the stream: too deep, bad syntax, bad UTF-8, cut short.
        deep(64),
        schema("x").replace(r#""verbs":["*"]"#, r#""verbs":["*",]"#),
        schema("x").replace(r#""a":"1""#, "\"a\":\"\u{1}\""),
        schema("\u{fffd}"),
        schema("x")[..120].to_owned(),
    ];
    for (index, case) in cases.iter().enumerate() {
        let mut stream = format!("{}\n{case}\n{}", schema("before"), level("after")).into_bytes();
        if index == cases.len() - 2 {
            // Invalid UTF-8 inside a string of a served object.
            let at = stream
                .windows(3)
                .position(|w| w == "\u{fffd}".as_bytes())
                .unwrap();
            stream.splice(at..at + 3, [0xff]);
        }
        let what = format!("case {index}: {case}");
        same_on_both_paths(&stream, &[1, 7, 4096, 1 << 20], &Limits::default(), &what);
    }
    // The node limit holds on the decoding path too.
    let stream = format!("{}\n{}", level("a"), schema("b"));
    let limits = Limits {
        max_nodes: 30,
        ..Limits::default()
    };
    let expected = same_on_both_paths(stream.as_bytes(), &[1 << 20], &limits, "node limit");
    assert_eq!(expected.0.len(), 1);
    assert!(
        expected
            .1
            .as_deref()
            .unwrap()
            .contains("more than 30 nodes")
    );
    // So does the size limit: a served object over it is not decoded, and the scan says so.
    let limits = small(level("a").len() + 8);
    let expected = same_on_both_paths(stream.as_bytes(), &[1, 1 << 20], &limits, "size limit");
    assert_eq!(expected.0.len(), 1);
    assert!(expected.1.as_deref().unwrap().contains("larger than"));
}

/// How many documents of a YAML stream the reader decoded into their types.
fn yaml_decoded_while_reading(stream: &[u8]) -> usize {
    let mut decoded = 0;
    let _ = SCHEME.read(stream, &Limits::default(), |input| {
        decoded += usize::from(matches!(input, scheme::Input::Yaml(_)));
        Ok::<_, ReadError>(())
    });
    decoded
}

/// A v1beta3 FlowSchema as apfkit and kubectl write YAML (keys sorted), with `extra` lines
/// added to its metadata and `rule` as the first line of its rule.
fn yaml_schema(name: &str, extra: &str, rule: &str) -> String {
    format!(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata:\n  labels:\n    a: \"1\"\n  name: {name}\n{extra}spec:\n  priorityLevelConfiguration:\n    name: global-default\n  rules:\n  - {rule}\n    subjects:\n    - group:\n        name: system:authenticated\n      kind: Group\n"
    )
}

/// A v1beta2 PriorityLevelConfiguration in YAML with `limited` as its limited block.
fn yaml_level(name: &str, limited: &str) -> String {
    format!(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1beta2\nkind: PriorityLevelConfiguration\nmetadata:\n  name: {name}\nspec:\n  limited:\n{limited}  type: Limited\n"
    )
}

const QUEUED: &str = "    assuredConcurrencyShares: 5\n    limitResponse:\n      type: Reject\n";

/// The YAML reader decodes served objects under a guard that resolves every scalar as the
/// value path does: whatever the document, its outputs, warnings and errors are those of the
/// path that builds values, and the plain documents are the ones decoded.
#[test]
fn decoding_yaml_while_reading_changes_nothing_a_value_path_would_say() {
    let rule = "nonResourceRules:\n    - nonResourceURLs: [\"*\"]\n      verbs: [\"*\"]";
    let schema = |name: &str, extra: &str| yaml_schema(name, extra, rule);
    let level = |name: &str, limited: &str| yaml_level(name, limited);
    let shares = |value: &str| QUEUED.replace(": 5", &format!(": {value}"));
    let label = |value: &str| schema("x", "").replace("a: \"1\"", &format!("a: {value}"));
    let deep = |levels: usize| {
        let fields = format!("{}1{}", "{f: ".repeat(levels), "}".repeat(levels));
        schema(
            "deep",
            &format!("  managedFields:\n  - fieldsV1: {fields}\n    manager: m\n"),
        )
    };
    // (case, whether it has nothing to report and decodes while read)
    let cases: Vec<(String, bool)> = vec![
        (schema("plain", ""), true),
        (level("plain", QUEUED), true),
        (format!("# a comment\n\n{}", schema("commented", "")), true),
        (
            schema("swapped", "").replacen(
                "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema",
                "kind: FlowSchema\napiVersion: flowcontrol.apiserver.k8s.io/v1beta3",
                1,
            ),
            true,
        ),
        (schema("flow", "  annotations: {b: \"2\", c: '3'}\n"), true),
        (
            schema(
                "block",
                "  annotations:\n    b: |\n      two\n      lines\n    c: >-\n      folded\n      text\n",
            ),
            true,
        ),
        (
            schema(
                "anchored",
                "  annotations: &ann {b: \"2\"}\n  finalizers: [*ann]\n",
            ),
            false,
        ),
        (
            schema("stamped", "  creationTimestamp: \"2024-01-02T03:04:05Z\"\n"),
            true,
        ),
        (
            schema("plain-stamp", "  creationTimestamp: 2024-01-02T03:04:05Z\n"),
            true,
        ),
        (schema("dated", "  creationTimestamp: 2024-01-02\n"), false),
        // Plain scalars that resolve to other types where strings are wanted (null is no
        // name at all on both paths).
        (schema("123", ""), false),
        (schema("true", ""), false),
        (schema("1.5", ""), false),
        (schema("null", ""), true),
        (schema("~", ""), true),
        (label("true"), false),
        (label("1"), false),
        (label("~"), false),
        (label("0x1F"), false),
        (label("'plain'"), true),
        (label("!!str 1"), true),
        (label("!custom x"), false),
        (schema("x", "  labels2: 1\n"), false),
        // Numbers in every spelling YAML allows, where an integer is wanted.
        (level("quoted", &shares("\"5\"")), false),
        (level("float", &shares("5.0")), false),
        (level("hex", &shares("0x10")), true),
        (level("octal", &shares("0o10")), true),
        (level("exp", &shares("1e3")), false),
        (level("huge", &shares("99999999999999999999")), false),
        (level("inf", &shares(".inf")), false),
        (
            schema(
                "managed",
                "  managedFields:\n  - fieldsV1: {f: 99999999999999999999}\n    manager: m\n",
            ),
            false,
        ),
        (
            schema(
                "managed",
                "  managedFields:\n  - fieldsV1: {f: [1, -2, 0.5, .nan, null, x]}\n    manager: m\n",
            ),
            true,
        ),
        (level("negative", &shares("-3")), true),
        (level("tagged", &shares("!!int 7")), true),
        (level("string-tag", &shares("!!str 7")), false),
        // Empty, null and misshapen objects (a sequence is a struct's fields in order to
        // serde on both paths; a plain `1` key is the string "1" on both).
        (level("empty", ""), true),
        (
            schema("x", "").replace("spec:\n", "spec: null\nspec2:\n"),
            false,
        ),
        (format!("{}status: {{}}\n", schema("status", "")), true),
        (format!("{}status:\n", schema("status-empty", "")), true),
        (format!("{}status: []\n", schema("status-seq", "")), true),
        (
            schema("x", "").replace("metadata:\n", "metadata: []\nmeta:\n"),
            false,
        ),
        // Something to report: unknown and repeated fields, merge keys.
        (schema("x", "  colour: red\n"), false),
        (schema("x", "  name: again\n"), false),
        (
            schema("x", "").replacen(
                "kind: FlowSchema\n",
                "kind: FlowSchema\nkind: FlowSchema\n",
                1,
            ),
            false,
        ),
        (schema("x", "  labels: {a: \"1\", a: \"2\"}\n"), false),
        (
            schema("x", "  base: &b {c: d}\n  labels2:\n    <<: *b\n"),
            false,
        ),
        (schema("x", "  annotations:\n    1: x\n"), true),
        (schema("x", "  annotations:\n    ? [k]\n    : x\n"), false),
        // The identity not as plain words on the first lines, or not served.
        (
            schema("x", "").replacen("kind: FlowSchema", "kind: FlowSchema # c", 1),
            false,
        ),
        (
            schema("x", "").replacen("kind: FlowSchema", "kind: \"FlowSchema\"", 1),
            false,
        ),
        (
            schema("x", "").replacen("kind: FlowSchema", "kind: Deployment", 1),
            false,
        ),
        (
            format!(
                "metadata: {{name: late}}\n{}",
                schema("x", "").replacen("metadata:\n  labels:", "labels:", 1)
            ),
            false,
        ),
        ("apiVersion: v1\nkind: List\nitems: []\n".to_owned(), false),
        // Nesting at and past the depth limit (64), and past serde_yaml_ng's own (128).
        (deep(58), true),
        (deep(60), true),
        (deep(61), false),
        (deep(200), false),
        // Errors that stop the stream.
        (schema("x", "  labels: [\n"), false),
        (schema("x", "\tbad: tab\n"), false),
    ];
    for (index, (case, decodes)) in cases.iter().enumerate() {
        let stream = format!(
            "{}---\n{case}---\n{}",
            schema("before", ""),
            level("after", QUEUED)
        );
        let what = format!("case {index}:\n{case}");
        same_on_both_paths(stream.as_bytes(), &[1, 4096], &Limits::default(), &what);
        let decoded = yaml_decoded_while_reading(case.as_bytes());
        assert_eq!(decoded, usize::from(*decodes), "case {index}:\n{case}");
    }
    // The limits hold on the decoding path too.
    let stream = format!("{}---\n{}", level("a", QUEUED), schema("b", ""));
    for limits in [
        Limits {
            max_nodes: 30,
            ..Limits::default()
        },
        Limits {
            max_depth: 4,
            ..Limits::default()
        },
        small(level("a", QUEUED).len() + 8),
    ] {
        let what = format!("{limits:?}");
        let expected = same_on_both_paths(stream.as_bytes(), &[1 << 20], &limits, &what);
        assert_eq!(expected.0.len(), 1, "{limits:?}");
        assert!(expected.1.is_some(), "{limits:?}");
    }
}

/// Random damage to a YAML stream of served objects: decoding while reading and building
/// values agree on every outcome.
#[test]
fn damaged_yaml_gives_what_the_value_path_gives() {
    let stream = format!(
        "{}---\n{}",
        yaml_schema(
            "a",
            "  annotations: {b: \"2\"}\n",
            "nonResourceRules:\n    - nonResourceURLs: [\"*\"]\n      verbs: [\"*\"]"
        ),
        yaml_level("p", QUEUED)
    );
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let alphabet = b":-[]{},#&*!|>'\"\n \t0aT~.?<";
    let mut decoded = 0;
    for _ in 0..2000 {
        let bytes = damaged(stream.as_bytes(), alphabet, &mut next);
        let shown = String::from_utf8_lossy(&bytes);
        same_on_both_paths(&bytes, &[1 << 20], &Limits::default(), &shown);
        decoded += yaml_decoded_while_reading(&bytes);
    }
    // Most damage leaves a document decodable (a changed name, a changed label).
    assert!(
        decoded > 1000,
        "only {decoded} documents decoded while read"
    );
}

/// A xorshift generator: reproducible random numbers from `state`.
fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// `bytes` with one to three bytes replaced by, or inserted from, `alphabet`, or removed.
fn damaged(bytes: &[u8], alphabet: &[u8], next: &mut impl FnMut() -> u64) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    for _ in 0..1 + next() % 3 {
        let at = next() as usize % bytes.len();
        let byte = alphabet[next() as usize % alphabet.len()];
        match next() % 3 {
            0 => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            _ => {
                bytes.remove(at);
            }
        }
    }
    bytes
}
