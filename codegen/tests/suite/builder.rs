//! The multi-version builder's mistakes are settings errors that say what to fix; its output
//! is laid out as documented. (`examples/` compiles and tests a real use.)

use apfkit_codegen::{ApiBuilder, Direction, Group, Hub, Settings};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Cluster
  versions:
    - name: v1beta1
      served: true
      storage: false
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {size: {type: integer}, color: {type: string}}}
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {replicas: {type: integer}, color: {type: string}}}
"#;

fn builder(group: Group) -> ApiBuilder {
    let mut builder = ApiBuilder::new(Settings::default());
    builder.add_bytes("gadgets.yaml", CRD.as_bytes()).unwrap();
    builder.group(group);
    builder
}

fn error(group: Group) -> String {
    builder(group).generate().unwrap_err().to_string()
}

fn hooked() -> Group {
    let mut group = Group::new("example.com", &["v1beta1", "v1"], Hub::Version("v1".into()));
    group
        .hook("v1beta1", "Gadget.spec", Direction::ToHub, "crate::to_hub")
        .hook(
            "v1beta1",
            "Gadget.spec",
            Direction::FromHub,
            "crate::from_hub",
        );
    group
}

#[test]
fn a_renamed_field_without_hooks_names_both_fields() {
    let message = error(Group::new(
        "example.com",
        &["v1beta1", "v1"],
        Hub::Version("v1".into()),
    ));
    assert!(
        message.contains("com.example.v1beta1.Gadget.spec"),
        "{message}"
    );
    assert!(message.contains("need a conversion hook"), "{message}");
    assert!(
        message.contains("\"replicas\"") && message.contains("\"size\""),
        "{message}"
    );
}

#[test]
fn settings_mistakes_say_what_to_fix() {
    let mut typo = hooked();
    typo.hook("v1beta1", "Gadget.sepc", Direction::ToHub, "crate::typo");
    let mut unknown_version = hooked();
    unknown_version.hook("v2", "Gadget", Direction::ToHub, "crate::x");
    for (group, expected) in [
        (typo, "no type \"Gadget.sepc\" in example.com v1beta1"),
        (
            unknown_version,
            "no kind of version \"v2\" in the inputs (versions found: v1, v1beta1)",
        ),
        (
            Group::new("example.com", &["v1beta1"], Hub::Version("v1".into())),
            "the hub version \"v1\" is not one of the group's versions",
        ),
        (
            Group::new("other.io", &["v1"], Hub::Version("v1".into())),
            "no kind of version \"v1\" in the inputs (versions found: )",
        ),
        (
            Group::new("example.com", &["v1"], Hub::Internal("io.hub.".into())),
            "no hub type starts with \"io.hub.\"",
        ),
    ] {
        let message = error(group);
        assert!(message.contains(expected), "{message}");
    }
    let mut two = builder(hooked());
    two.group(hooked());
    let message = two.generate().unwrap_err().to_string();
    assert!(
        message.contains("already use the module example"),
        "{message}"
    );
}

#[test]
fn the_hub_version_converts_by_the_identity_and_the_scheme_lists_every_version() {
    let files = builder(hooked()).generate().unwrap();
    let v1 = &files.conversions[std::path::Path::new("example/v1.rs")];
    assert!(v1.contains("fn into_hub(self) -> crate::api::types::com::example::v1::Gadget {\n        self\n    }"), "{v1}");
    let root = &files.conversions[std::path::Path::new("mod.rs")];
    let v1beta1_codec = root
        .find("crate::api::types::com::example::v1beta1::Gadget,\n        >()")
        .unwrap();
    let v1_codec = root
        .find("crate::api::types::com::example::v1::Gadget,\n        >()")
        .unwrap();
    assert!(
        v1beta1_codec < v1_codec,
        "registry order follows the group's versions"
    );
    assert!(root.contains("pub static SCHEME: ::apfkit_runtime::scheme::Scheme<HubObject>"));
    assert!(files.hub.is_empty());
}

#[test]
fn write_module_lays_out_types_and_conversions_under_one_module() {
    let out = tempfile::tempdir().unwrap();
    let mut builder = builder(hooked());
    // Changing another part of the layout leaves the roots under the written module.
    builder.layout().header = "Made by the gadgets build script.".to_owned();
    let declaration = builder.write_module(out.path(), "gadgets").unwrap();
    assert!(
        std::fs::read_to_string(declaration)
            .unwrap()
            .contains("pub mod gadgets;")
    );
    let root = std::fs::read_to_string(out.path().join("gadgets/mod.rs")).unwrap();
    assert!(
        root.starts_with("//! Made by the gadgets build script.\n"),
        "{root}"
    );
    assert!(
        root.contains(
            "pub mod types;\npub mod conversion;\npub use conversion::{HubObject, SCHEME};"
        ),
        "{root}"
    );
    let conversion =
        std::fs::read_to_string(out.path().join("gadgets/conversion/example/v1beta1.rs")).unwrap();
    assert!(
        conversion.contains("crate::gadgets::types::com::example::v1::GadgetSpec"),
        "{conversion}"
    );
    assert!(
        conversion.starts_with("//! Made by the gadgets build script."),
        "{conversion}"
    );
    assert!(out.path().join("gadgets/types/com/example/v1.rs").exists());
}
