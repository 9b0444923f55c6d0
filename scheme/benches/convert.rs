//! Converting 10,000 PriorityLevelConfigurations from v1beta1 to v1: decode, default, convert,
//! encode. The baseline is the same pipeline without the conversion (decode, default and encode
//! in v1beta1), so the ratio shows what the typed conversion step adds. The dynamic scheme path
//! (JSON values, unknown-field detection, lossy read-back) is measured beside them.
//!
//! `cargo bench -p apfkit-scheme --bench convert`

use std::sync::LazyLock;

use apfkit_scheme::scheme::{self, SCHEME, Target, UnknownFields};
use apfkit_scheme::{FromHub, ToHub};
use apfkit_types::ApplyDefaults;
use apfkit_types::flowcontrol::{v1, v1beta1};
use divan::counter::ItemsCount;
use serde_json::Value;

const OBJECTS: usize = 10_000;

/// The bootstrap levels in v1beta1, repeated with distinct names, as one list.
static LIST_JSON: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let levels: Vec<Value> = [
        r#"{"metadata":{"name":"exempt"},"spec":{"type":"Exempt","exempt":{"nominalConcurrencyShares":0,"lendablePercent":0}}}"#,
        r#"{"metadata":{"name":"catch-all"},"spec":{"type":"Limited","limited":{"assuredConcurrencyShares":5,"lendablePercent":0,"limitResponse":{"type":"Reject"}}}}"#,
        r#"{"metadata":{"name":"workload-low","annotations":{"apf.kubernetes.io/autoupdate-spec":"true"}},"spec":{"type":"Limited","limited":{"assuredConcurrencyShares":100,"lendablePercent":90,"limitResponse":{"type":"Queue","queuing":{"queues":128,"handSize":6,"queueLengthLimit":50}}}}}"#,
        r#"{"metadata":{"name":"global-default"},"spec":{"type":"Limited","limited":{"assuredConcurrencyShares":20,"limitResponse":{"type":"Queue","queuing":{}}}}}"#,
    ]
    .iter()
    .map(|s| serde_json::from_str(s).unwrap())
    .collect();
    let items: Vec<Value> = (0..OBJECTS)
        .map(|i| {
            let mut level = levels[i % levels.len()].clone();
            level["apiVersion"] = Value::from("flowcontrol.apiserver.k8s.io/v1beta1");
            level["kind"] = Value::from("PriorityLevelConfiguration");
            level["metadata"]["name"] = Value::from(format!("level-{i}"));
            level
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta1",
        "kind": "PriorityLevelConfigurationList",
        "items": items,
    }))
    .unwrap()
});

fn main() {
    eprintln!(
        "input: {OBJECTS} PriorityLevelConfigurations, {} bytes of JSON",
        LIST_JSON.len()
    );
    divan::main();
    stream_ratio();
}

/// The library target side by side: `stream_convert_json` and its baseline
/// `stream_value_round_trip`, run in turns so that a noisy neighbour slows both alike; the
/// fastest run of each counts.
fn stream_ratio() {
    let fastest = |run: fn() -> usize, best: &mut std::time::Duration| {
        let started = std::time::Instant::now();
        divan::black_box(run());
        *best = (*best).min(started.elapsed());
    };
    let (mut typed, mut baseline) = (std::time::Duration::MAX, std::time::Duration::MAX);
    for _ in 0..30 {
        fastest(stream_convert_json, &mut typed);
        fastest(stream_value_round_trip, &mut baseline);
    }
    println!(
        "stream, in turns, fastest of 30: convert_json {:.2} ms, value round trip {:.2} ms, \
         ratio {:.2}",
        typed.as_secs_f64() * 1e3,
        baseline.as_secs_f64() * 1e3,
        typed.as_secs_f64() / baseline.as_secs_f64()
    );
}

/// Baseline: decode, default and encode, all in v1beta1.
#[divan::bench(counter = ItemsCount::new(OBJECTS), sample_count = 30)]
fn decode_default_encode_baseline() -> Vec<u8> {
    let mut list: v1beta1::PriorityLevelConfigurationList =
        serde_json::from_slice(divan::black_box(&LIST_JSON)).unwrap();
    list.items
        .iter_mut()
        .for_each(ApplyDefaults::apply_defaults);
    serde_json::to_vec(&list).unwrap()
}

/// The same plus the typed conversion v1beta1 → hub → v1.
#[divan::bench(counter = ItemsCount::new(OBJECTS), sample_count = 30)]
fn decode_default_convert_encode() -> Vec<u8> {
    let mut list: v1beta1::PriorityLevelConfigurationList =
        serde_json::from_slice(divan::black_box(&LIST_JSON)).unwrap();
    list.items
        .iter_mut()
        .for_each(ApplyDefaults::apply_defaults);
    let converted = v1::PriorityLevelConfigurationList {
        items: list
            .items
            .into_iter()
            .map(|item| v1::PriorityLevelConfiguration::from_owned_hub(item.into_hub()))
            .collect(),
        metadata: list.metadata,
    };
    serde_json::to_vec(&converted).unwrap()
}

/// The dynamic scheme on a JSON value (the path lists, YAML and protobuf take): unknown
/// fields reported, lossy conversions checked by read-back.
#[divan::bench(counter = ItemsCount::new(OBJECTS), sample_count = 10)]
fn scheme_convert_with_checks() -> Vec<u8> {
    let document: Value = serde_json::from_slice(divan::black_box(&LIST_JSON)).unwrap();
    let target: Target = "v1".parse().unwrap();
    let converted = SCHEME
        .convert_value(&document, &target, UnknownFields::Warn)
        .unwrap();
    serde_json::to_vec(&converted.object).unwrap()
}

/// The same objects as a stream of single-object JSON documents, the form the typed path
/// takes.
static STREAM_JSON: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let list: Value = serde_json::from_slice(&LIST_JSON).unwrap();
    let mut stream = Vec::new();
    for item in list["items"].as_array().unwrap() {
        stream.extend(serde_json::to_vec(item).unwrap());
        stream.push(b'\n');
    }
    stream
});

/// Baseline of the library target: every document of the stream read into a
/// `serde_json::Value` and written back, compact.
#[divan::bench(counter = ItemsCount::new(OBJECTS), sample_count = 30)]
fn stream_value_round_trip() -> usize {
    let mut written = 0;
    for value in serde_json::Deserializer::from_slice(divan::black_box(&STREAM_JSON)).into_iter() {
        let value: Value = value.unwrap();
        written += serde_json::to_vec(&value).unwrap().len();
    }
    written
}

/// The typed path from bytes: the reader (which decodes served objects as it cuts the
/// stream), `SCHEME.convert` of a JSON input (default, hub, v1, typed lossy check) and Go-ordered
/// compact JSON, document by document.
#[divan::bench(counter = ItemsCount::new(OBJECTS), sample_count = 30)]
fn stream_convert_json() -> usize {
    let target: Target = "v1".parse().unwrap();
    let mut written = 0;
    SCHEME
        .read(
            divan::black_box(&STREAM_JSON[..]),
            &scheme::Limits::default(),
            |input| {
                assert!(
                    matches!(input, scheme::Input::Json(_)),
                    "JSON in, JSON documents out"
                );
                let converted = SCHEME
                    .convert(input, &target, UnknownFields::Warn, scheme::Encoding::Json)
                    .unwrap();
                written += converted.bytes.len();
                Ok::<_, scheme::ReadError>(())
            },
        )
        .unwrap();
    written
}
