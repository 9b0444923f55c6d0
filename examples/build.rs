//! Generates the Widget API from `widgets.crd.yaml`: the three typed versions, the
//! conversions through v1 (the hub) with the hooks of `src/hooks.rs`, and the dynamic scheme.

use apfkit_codegen::{ApiBuilder, Direction, Group, Hub, Settings};

fn main() {
    let manifest =
        std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    let crd = manifest.join("widgets.crd.yaml");
    println!("cargo::rerun-if-changed={}", crd.display());

    let mut settings = Settings::default();
    settings
        // kube-rs works with k8s-openapi's ObjectMeta and traits.
        .use_k8s_openapi()
        .with_k8s_openapi_traits(true)
        // `api::types::v1::Widget` rather than `api::types::com::example::v1::Widget`.
        .map_namespace("com.example.", &[]);
    let mut builder = ApiBuilder::new(settings);

    let mut widgets = Group::new(
        "example.com",
        &["v1alpha1", "v1beta1", "v1"],
        Hub::Version("v1".to_owned()),
    );
    for version in ["v1alpha1", "v1beta1"] {
        // The spec differs field by field: renamed `size`, split `image`, v1-only `paused`.
        widgets
            .hook(
                version,
                "Widget.spec",
                Direction::ToHub,
                &format!("crate::hooks::{version}::spec_to_hub"),
            )
            .hook(
                version,
                "Widget.spec",
                Direction::FromHub,
                &format!("crate::hooks::{version}::spec_from_hub"),
            )
            // What the older versions cannot hold travels in annotations.
            .prepare(
                version,
                "Widget",
                Direction::FromHub,
                "crate::hooks::annotate",
            )
            .hook(
                version,
                "Widget",
                Direction::ToHub,
                "crate::hooks::read_annotations",
            )
            // What the hooks keep, so that callers can skip checking a round trip.
            .round_trip_check(version, "Widget", "crate::hooks::widget_round_trips")
            .round_trip_check(version, "Widget.spec", "crate::hooks::spec_round_trips");
    }
    let result = builder
        .add_file(&crd)
        .map(|builder| builder.group(widgets))
        .and_then(|builder| builder.write_module(&out_dir, "api"));
    if let Err(err) = result {
        // A build script fails with a message that names the file and the setting.
        eprintln!("{err}");
        std::process::exit(1);
    }
}
