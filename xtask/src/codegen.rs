//! Regeneration and freshness checking of every generated file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use apfkit_codegen::{
    ApiBuilder, Direction, DynamicScheme, Enums, Generator, Group, Hub, Layout, Settings,
};

use crate::openapi;

/// Write the files, or only compare them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Rewrite stale files.
    Write,
    /// Report stale files only.
    Check,
}

impl Mode {
    /// `--check` given or not.
    pub fn from_check(check: bool) -> Self {
        if check { Mode::Check } else { Mode::Write }
    }
}

/// What a run found.
#[derive(Debug)]
pub struct Report {
    /// The mode of the run.
    pub mode: Mode,
    /// Files (relative to the root) that differed, were missing or should not exist.
    pub stale: Vec<PathBuf>,
}

/// The generator settings for `apfkit-types`.
pub fn types_settings() -> Settings {
    let preserve_zero = openapi::flowcontrol::PRESERVE_ZERO_SHARES_VERSION;
    let preserve_zero_level =
        format!("io.k8s.api.flowcontrol.{preserve_zero}.PriorityLevelConfiguration");
    let mut settings = Settings::default();
    settings
        .map_namespace("io.k8s.api.flowcontrol.", &["flowcontrol"])
        .map_namespace(
            "io.k8s.kube-aggregator.pkg.apis.apiregistration.",
            &["apiregistration"],
        )
        .use_k8s_openapi()
        .defaulting_hook(
            &preserve_zero_level,
            &format!("crate::defaulting::{preserve_zero}_priority_level_configuration"),
        )
        .defaulting_hook_check(
            &preserve_zero_level,
            &format!(
                "crate::defaulting::{preserve_zero}_priority_level_configuration_is_defaulted"
            ),
        )
        .with_schemars(true)
        // Go's types keep enum fields as strings, and kube-apiserver's validation (not the
        // decoder) rejects unlisted values with its own message.
        .with_enums(Enums::Strings)
        // Protobuf and Go-order JSON from the schemas' `x-apfkit-go` layouts, on apfkit-wire
        // (which holds those of the metadata types: `wire_settings`).
        .with_wire("::apfkit_wire")
        .with_header(HEADER);
    settings
}

/// The generator settings for the wire codecs of k8s-openapi's metadata types, which
/// apfkit-wire holds (the orphan rule keeps them out of apfkit-types): the types' settings with
/// the runtime in the generated crate itself.
fn wire_settings() -> Settings {
    let mut settings = types_settings();
    settings.with_wire("crate");
    settings
}

/// The generator settings for the core kinds' types (`apfkit_types::builtin`, generated from
/// kube-apiserver's own documents: [`openapi::core`]): k8s-openapi's apimachinery types in
/// place of apimachinery's definitions, but core/v1 generated here; `core::v1::ConfigMap`,
/// `coordination::v1::Lease`, `events::v1::Event`; their protobuf and Go-order JSON from the
/// Go layouts, on apfkit-wire.
pub fn core_settings() -> Settings {
    let mut settings = Settings::default();
    for (prefix, module) in [
        ("apis.meta.v1", "apis::meta::v1"),
        ("runtime", "runtime"),
        ("api.resource", "api::resource"),
        ("util.intstr", "util::intstr"),
    ] {
        settings.replace_namespace(
            &format!("io.k8s.apimachinery.pkg.{prefix}."),
            &format!("::k8s_openapi::apimachinery::pkg::{module}"),
        );
    }
    settings
        .map_namespace("io.k8s.api.", &[])
        .with_k8s_openapi_traits(true)
        .with_enums(Enums::Strings)
        .with_wire("::apfkit_wire")
        .with_header(HEADER);
    settings
}

/// The generator settings for the hub types (in `apfkit-types`).
pub fn hub_settings() -> Settings {
    let mut settings = Settings::default();
    settings
        .map_namespace("io.apfkit.hub.", &[])
        .use_k8s_openapi()
        .with_enums(Enums::Strings)
        .with_header(HEADER);
    settings
}

/// The suffix of a hook function's name: `to_hub` or `from_hub`.
fn hook_suffix(direction: Direction) -> &'static str {
    match direction {
        Direction::ToHub => "to_hub",
        Direction::FromHub => "from_hub",
    }
}

/// Where the parts go: types, hub types and conversions in `apfkit-types` (conversions beside
/// the types they convert, implementing apfkit-runtime's `ToHub`/`FromHub`), the scheme's
/// registry in `apfkit-scheme`, whose scheme (`crate::scheme`) it fills.
fn layout() -> Layout {
    Layout {
        types_root: Some("::apfkit_types".to_owned()),
        hub_root: Some("::apfkit_types::hub".to_owned()),
        to_hub_trait: "::apfkit_runtime::ToHub".to_owned(),
        from_hub_trait: "::apfkit_runtime::FromHub".to_owned(),
        scheme: Some(DynamicScheme::Custom("crate::scheme".to_owned())),
        header: HEADER.to_owned(),
    }
}

/// The generated Rust trees, relative to the workspace root: types, hub types and conversions
/// in `apfkit-types`, the scheme's registry in `apfkit-scheme`, the metadata types' wire
/// codecs in `apfkit-wire`, the core kinds' types in `apfkit-types`.
const GENERATED_DIRS: [&str; 6] = [
    "types/src/generated",
    "types/src/hub/generated",
    "types/src/conversions/generated",
    "scheme/src/generated",
    "wire/src/generated",
    "types/src/builtin/generated",
];

const HEADER: &str = "Generated by `cargo xtask codegen`, do not edit.";

/// Whether a flowcontrol version names the limited shares `assuredConcurrencyShares`, which
/// the hub calls `nominalConcurrencyShares` (a conversion hook renames them).
fn has_assured_shares(version: &str) -> bool {
    openapi::flowcontrol::shares_field(version) != "nominalConcurrencyShares"
}

/// The two groups, their versions (from the schemas), hubs and hand-written hooks.
pub fn groups() -> [Group; 2] {
    let mut flowcontrol = Group::new(
        openapi::flowcontrol::GROUP,
        openapi::FLOWCONTROL_VERSIONS,
        Hub::Internal(openapi::hub::FLOWCONTROL.to_owned()),
    );
    let mut apiregistration = Group::new(
        openapi::apiregistration::GROUP,
        openapi::apiregistration::VERSIONS,
        Hub::Internal(openapi::hub::APIREGISTRATION.to_owned()),
    );
    for &version in openapi::FLOWCONTROL_VERSIONS {
        if has_assured_shares(version) {
            flowcontrol.round_trip_check(
                version,
                "LimitedPriorityLevelConfiguration",
                &format!("crate::hooks::{version}::limited_round_trips"),
            );
        }
    }
    let preserve_zero = openapi::flowcontrol::PRESERVE_ZERO_SHARES_VERSION;
    flowcontrol.round_trip_check(
        preserve_zero,
        "PriorityLevelConfiguration",
        &format!("crate::hooks::{preserve_zero}::priority_level_configuration_round_trips"),
    );
    for &version in openapi::apiregistration::VERSIONS {
        apiregistration.round_trip_check(
            version,
            "ServiceReference",
            &format!("crate::hooks::apiregistration::{version}::service_reference_round_trips"),
        );
    }
    for direction in [Direction::ToHub, Direction::FromHub] {
        let suffix = hook_suffix(direction);
        for &version in openapi::FLOWCONTROL_VERSIONS {
            if has_assured_shares(version) {
                flowcontrol.hook(
                    version,
                    "LimitedPriorityLevelConfiguration",
                    direction,
                    &format!("crate::hooks::{version}::limited_{suffix}"),
                );
            }
        }
        // That version keeps a zero `nominalConcurrencyShares` in an annotation
        // (kube-apiserver's quirk for it alone).
        flowcontrol.hook(
            preserve_zero,
            "PriorityLevelConfiguration",
            direction,
            &format!("crate::hooks::{preserve_zero}::priority_level_configuration_{suffix}"),
        );
        for &version in openapi::apiregistration::VERSIONS {
            apiregistration.hook(
                version,
                "ServiceReference",
                direction,
                &format!("crate::hooks::apiregistration::{version}::service_reference_{suffix}"),
            );
        }
    }
    [flowcontrol, apiregistration]
}

/// Regenerates (or checks) the documents, the types and the JSON Schemas.
pub fn run(root: &Path, mode: Mode) -> Result<Report> {
    run_with(root, mode, JsonSchemas::Included)
}

/// Whether [`run_with`] regenerates (or checks) the JSON Schemas too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonSchemas {
    /// Also the JSON Schemas, from the fresh types, in a child process.
    Included,
    /// Not the JSON Schemas: `apfkit-types`' own test checks them against its types
    /// (`the_committed_schemas_are_these_types_schemas`), without building the types a
    /// second time.
    Left,
}

/// [`run`], with or without the JSON Schemas.
pub fn run_with(root: &Path, mode: Mode, json: JsonSchemas) -> Result<Report> {
    let mut stale = Vec::new();
    let documents = openapi::documents();
    let mut openapi_files = BTreeMap::new();
    let mut builder = ApiBuilder::new(types_settings());
    let mut wire = Generator::new(wire_settings());
    for doc in &documents {
        let text = serde_json::to_string_pretty(&doc.document)? + "\n";
        builder.add_bytes(&doc.path().display().to_string(), text.as_bytes())?;
        wire.add_bytes(&doc.path().display().to_string(), text.as_bytes())?;
        openapi_files.insert(doc.path(), text);
    }
    sync_tree(
        root,
        Path::new("schemas/openapi"),
        &openapi_files,
        mode,
        &mut stale,
    )?;
    builder.hub_generator(hub_settings()).add_bytes(
        "hub document (xtask/src/openapi/hub.rs)",
        openapi::hub::document().to_string().as_bytes(),
    )?;
    *builder.layout() = layout();
    for group in groups() {
        builder.group(group);
    }
    let files = builder.generate()?;
    for (dir, part) in [
        (GENERATED_DIRS[0], files.types),
        (GENERATED_DIRS[1], files.hub),
        (GENERATED_DIRS[2], files.conversions),
        (GENERATED_DIRS[3], files.scheme),
        (GENERATED_DIRS[4], wire.replaced_wire_impls()?),
        (GENERATED_DIRS[5], core_types(root)?),
    ] {
        sync_generated(root, Path::new(dir), part, mode, &mut stale)?;
    }

    let meta: serde_json::Map<String, serde_json::Value> =
        openapi::meta::object_metadata().into_iter().collect();
    sync_generated(
        root,
        Path::new("codegen/data"),
        BTreeMap::from([(
            PathBuf::from("meta-v1.json"),
            serde_json::to_string_pretty(&meta)? + "\n",
        )]),
        mode,
        &mut stale,
    )?;

    let types_stale = stale.iter().any(|p| p.starts_with("types"));
    if json == JsonSchemas::Left || (mode == Mode::Check && types_stale) {
        // The JSON Schemas are derived from the types; with stale types they cannot be
        // checked.
        return Ok(Report { mode, stale });
    }
    sync_generated(
        root,
        Path::new("schemas/jsonschema"),
        json_schemas(root)?,
        mode,
        &mut stale,
    )?;
    Ok(Report { mode, stale })
}

/// The core kinds' types, generated from [`openapi::core::document`].
fn core_types(root: &Path) -> Result<BTreeMap<PathBuf, String>> {
    let mut generator = Generator::new(core_settings());
    let document = serde_json::to_string(&openapi::core::document(root)?)?;
    generator.add_bytes(
        "kube-apiserver 1.37's core kinds (xtask/src/openapi/core.rs)",
        document.as_bytes(),
    )?;
    Ok(generator.generate()?)
}

/// The JSON Schema files of the types (`apfkit_types::json_schema::files`), by path relative to
/// `schemas/jsonschema`. They are computed by `apfkit-types`' `jsonschemas` example in a child
/// process, from the types just written.
fn json_schemas(root: &Path) -> Result<BTreeMap<PathBuf, String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(root)
        .args([
            "run",
            "--quiet",
            "--package",
            "apfkit-types",
            "--example",
            "jsonschemas",
        ])
        .output()
        .context("running the jsonschemas example of apfkit-types")?;
    if !output.status.success() {
        bail!(
            "the jsonschemas example of apfkit-types failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let files: BTreeMap<PathBuf, String> = serde_json::from_slice(&output.stdout)
        .context("reading the output of the jsonschemas example")?;
    Ok(files)
}

/// Makes `dir` (relative to `root`) hold exactly `files`, given by path relative to `dir`.
fn sync_generated(
    root: &Path,
    dir: &Path,
    files: BTreeMap<PathBuf, String>,
    mode: Mode,
    stale: &mut Vec<PathBuf>,
) -> Result<()> {
    let files = files
        .into_iter()
        .map(|(path, text)| (dir.join(path), text))
        .collect();
    sync_tree(root, dir, &files, mode, stale)
}

/// Makes the files under `dir` exactly `files` (paths relative to `root`), or reports the
/// differences in check mode.
fn sync_tree(
    root: &Path,
    dir: &Path,
    files: &BTreeMap<PathBuf, String>,
    mode: Mode,
    stale: &mut Vec<PathBuf>,
) -> Result<()> {
    for (relative, contents) in files {
        let path = root.join(relative);
        let current = std::fs::read_to_string(&path)
            .ok()
            .map(|s| s.replace("\r\n", "\n"));
        if current.as_deref() == Some(contents.as_str()) {
            continue;
        }
        stale.push(relative.clone());
        if mode == Mode::Write {
            write_atomically(&path, contents)?;
        }
    }
    for existing in list_files(&root.join(dir))? {
        let relative = existing.strip_prefix(root).unwrap_or(&existing).to_owned();
        if !files.contains_key(&relative) {
            stale.push(relative);
            if mode == Mode::Write {
                std::fs::remove_file(&existing)
                    .with_context(|| format!("removing {}", existing.display()))?;
            }
        }
    }
    Ok(())
}

fn write_atomically(path: &Path, contents: &str) -> Result<()> {
    let folder = path.parent().context("file without a folder")?;
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    let temporary = folder.join(format!(
        ".{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    std::fs::write(&temporary, contents)
        .with_context(|| format!("writing {}", temporary.display()))?;
    std::fs::rename(&temporary, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

fn list_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            out.extend(list_files(&path)?);
        } else {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_reports_changed_missing_and_extra_files_and_write_fixes_them() {
        let root = tempfile::tempdir().unwrap();
        let dir = Path::new("gen");
        let expected: BTreeMap<PathBuf, String> = [
            (PathBuf::from("gen/a.rs"), "fresh\n".to_owned()),
            (PathBuf::from("gen/sub/b.rs"), "missing\n".to_owned()),
        ]
        .into();
        std::fs::create_dir_all(root.path().join("gen/sub")).unwrap();
        std::fs::write(root.path().join("gen/a.rs"), "edited by hand\n").unwrap();
        std::fs::write(root.path().join("gen/sub/old.rs"), "left over\n").unwrap();

        let mut stale = Vec::new();
        sync_tree(root.path(), dir, &expected, Mode::Check, &mut stale).unwrap();
        stale.sort();
        assert_eq!(
            stale,
            [
                PathBuf::from("gen/a.rs"),
                PathBuf::from("gen/sub/b.rs"),
                PathBuf::from("gen/sub/old.rs")
            ]
        );
        assert_eq!(
            std::fs::read_to_string(root.path().join("gen/a.rs")).unwrap(),
            "edited by hand\n",
            "check writes nothing"
        );

        let mut stale = Vec::new();
        sync_tree(root.path(), dir, &expected, Mode::Write, &mut stale).unwrap();
        assert_eq!(stale.len(), 3);
        let mut again = Vec::new();
        sync_tree(root.path(), dir, &expected, Mode::Check, &mut again).unwrap();
        assert!(again.is_empty(), "{again:?}");
        assert!(!root.path().join("gen/sub/old.rs").exists());
    }

    /// Every generated tree implements apfkit-runtime's traits and defines none (issue 25).
    #[test]
    fn checked_in_generated_trees_define_no_traits() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = 0;
        for dir in GENERATED_DIRS {
            for path in list_files(&root.join(dir)).unwrap() {
                let text = std::fs::read_to_string(&path).unwrap();
                files += 1;
                assert!(
                    !text
                        .lines()
                        .any(|l| l.trim_start().starts_with("pub trait ")
                            || l.trim_start().starts_with("trait ")),
                    "{} defines a trait",
                    path.display()
                );
            }
        }
        assert!(files >= 20, "only {files} generated files found");
    }

    #[test]
    fn crlf_checkouts_are_not_stale() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("gen")).unwrap();
        std::fs::write(root.path().join("gen/a.rs"), "x\r\ny\r\n").unwrap();
        let expected: BTreeMap<PathBuf, String> =
            [(PathBuf::from("gen/a.rs"), "x\ny\n".to_owned())].into();
        let mut stale = Vec::new();
        sync_tree(
            root.path(),
            Path::new("gen"),
            &expected,
            Mode::Check,
            &mut stale,
        )
        .unwrap();
        assert!(stale.is_empty());
    }
}
