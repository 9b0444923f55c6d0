//! Files as the command meets them: device nodes, FIFOs, symlinks, hard links, modes and
//! owners, read-only and immutable files, bind mounts, directory loops, ConfigMap volumes,
//! and signals in the middle of a run. These tests run as root in CI (device nodes, chown,
//! chattr and mount namespaces need it) and fail loudly where a tool they need is missing.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{apfkit, apfkit_within, success};

/// A valid level, in its own file in most tests.
const LEVEL: &str = super::GOOD;

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Runs a system tool the test needs; a missing tool or a failure fails the test.
fn run(program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("this test needs {program}: {e}"));
    assert!(status.success(), "{program} {args:?}: {status}");
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Names in `dir` that look like the command's temporary or backup files.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".apfkit-") || name.starts_with("apfkit-"))
        .collect()
}

#[test]
fn a_device_node_is_written_into_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("level.yaml");
    write(&input, LEVEL);
    let null = dir.path().join("null");
    run("mknod", &["-m", "666", p(&null), "c", "1", "3"]);
    success(
        &[
            "convert",
            "--to",
            "v1",
            "-f",
            p(&input),
            "--output-file",
            p(&null),
        ],
        b"",
    );
    let metadata = std::fs::symlink_metadata(&null).unwrap();
    assert!(
        metadata.file_type().is_char_device(),
        "still /dev/null's twin"
    );
    assert_eq!(
        metadata.rdev(),
        std::fs::metadata("/dev/null").unwrap().rdev()
    );
    // A write error of the device is an error of the command, and the device stays. (The
    // test's own twin of /dev/full: a regression must not break the machine's.)
    let full = dir.path().join("full");
    run("mknod", &["-m", "666", p(&full), "c", "1", "7"]);
    let output = apfkit(
        &[
            "convert",
            "--to",
            "v1",
            "-f",
            p(&input),
            "--output-file",
            p(&full),
        ],
        b"",
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(
        std::fs::symlink_metadata(&full)
            .unwrap()
            .file_type()
            .is_char_device()
    );
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn a_fifo_is_written_into() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    apfkit_test_support::process::mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let input = dir.path().join("level.yaml");
    write(&input, LEVEL);
    success(
        &[
            "convert",
            "--to",
            "v1",
            "-f",
            p(&input),
            "--output-file",
            p(&fifo),
        ],
        b"",
    );
    let received = reader.join().unwrap();
    assert!(received.contains("name: ok"), "{received}");
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[test]
fn standard_output_needs_no_writable_temporary_directory() {
    let output = Command::new(env!("CARGO_BIN_EXE_apfkit"))
        .args(["bootstrap"])
        .env("TMPDIR", "/nonexistent/read-only")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("name: global-default"));
}

#[test]
fn a_symlink_is_followed_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.yaml");
    write(&real, LEVEL);
    let link = dir.path().join("link.yaml");
    std::os::unix::fs::symlink("real.yaml", &link).unwrap();
    success(
        &["convert", "--to", "v1", "-f", p(&link), "--in-place"],
        b"",
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("real.yaml"));
    assert!(read(&real).starts_with("apiVersion: flowcontrol.apiserver.k8s.io/v1\n"));
    // --output-file through a dangling link creates the link's target.
    let out_link = dir.path().join("out-link.yaml");
    std::os::unix::fs::symlink("sub/target.yaml", &out_link).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    success(
        &[
            "convert",
            "--to",
            "v1beta2",
            "-f",
            p(&real),
            "--output-file",
            p(&out_link),
        ],
        b"",
    );
    assert!(
        std::fs::symlink_metadata(&out_link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(read(&dir.path().join("sub/target.yaml")).contains("v1beta2"));
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn mode_owner_and_group_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("level.yaml");
    write(&file, LEVEL);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::chown(&file, Some(1234), Some(2345)).expect("this test runs as root");
    success(
        &["convert", "--to", "v1", "-f", p(&file), "--in-place"],
        b"",
    );
    let metadata = std::fs::metadata(&file).unwrap();
    assert_eq!(metadata.mode() & 0o7777, 0o640);
    assert_eq!((metadata.uid(), metadata.gid()), (1234, 2345));
    assert!(read(&file).contains("flowcontrol.apiserver.k8s.io/v1\n"));
    // A new output file gets the mode of any newly created file (0666 less the umask).
    let new = dir.path().join("new.yaml");
    let output = Command::new("sh")
        .args([
            "-c",
            &format!(
                "umask 027; exec {} convert --to v1 -f {} --output-file {}",
                env!("CARGO_BIN_EXE_apfkit"),
                p(&file),
                p(&new)
            ),
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(std::fs::metadata(&new).unwrap().mode() & 0o777, 0o640);
}

#[test]
fn a_read_only_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("level.yaml");
    write(&file, LEVEL);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    for args in [
        vec!["convert", "--to", "v1", "-f", p(&file), "--in-place"],
        vec![
            "convert",
            "--to",
            "v1",
            "-f",
            p(&file),
            "--output-file",
            p(&file),
        ],
    ] {
        let output = apfkit(&args, b"");
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("read-only (mode 0444)"), "{stderr}");
        assert_eq!(read(&file), LEVEL);
    }
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn hard_links_are_said_to_keep_the_old_content() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("level.yaml");
    write(&file, LEVEL);
    let other = dir.path().join("other.yaml");
    std::fs::hard_link(&file, &other).unwrap();
    let output = apfkit(
        &["convert", "--to", "v1", "-f", p(&file), "--in-place"],
        b"",
    );
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("has 2 hard links"));
    assert!(read(&file).contains("flowcontrol.apiserver.k8s.io/v1\n"));
    assert_eq!(read(&other), LEVEL);
}

/// Three files to convert in place, the middle one made impossible to replace by `spoil`.
fn in_place_with_one_unreplaceable(spoil: impl FnOnce(&Path, &[PathBuf]) -> std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = ["a.yaml", "b.yaml", "c.yaml"]
        .iter()
        .map(|name| dir.path().join(name))
        .collect();
    for file in &files {
        write(file, LEVEL);
    }
    let output = spoil(dir.path(), &files);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for file in &files {
        assert_eq!(read(file), LEVEL, "{} is unchanged", file.display());
    }
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}

fn in_place_args(files: &[PathBuf]) -> Vec<String> {
    let mut args: Vec<String> = ["convert", "--to", "v1", "--in-place"]
        .map(String::from)
        .to_vec();
    for file in files {
        args.extend(["-f".to_owned(), p(file).to_owned()]);
    }
    args
}

#[test]
fn in_place_changes_nothing_when_a_file_is_immutable() {
    in_place_with_one_unreplaceable(|_, files| {
        run("chattr", &["+i", p(&files[1])]);
        let args = in_place_args(files);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = apfkit(&args, b"");
        run("chattr", &["-i", p(&files[1])]);
        output
    });
}

#[test]
fn in_place_changes_nothing_when_a_file_is_bind_mounted() {
    in_place_with_one_unreplaceable(|dir, files| {
        let source = dir.join("mounted-source");
        write(&source, LEVEL);
        // A private mount namespace: the bind mount disappears with the command.
        let script = format!(
            "mount --bind {} {} && exec {} {}",
            p(&source),
            p(&files[1]),
            env!("CARGO_BIN_EXE_apfkit"),
            in_place_args(files).join(" ")
        );
        let output = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .output()
            .expect("this test needs unshare (util-linux)");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("mount:"),
            "the test could not set up its bind mount: {stderr}"
        );
        assert!(stderr.contains("nothing was changed"), "{stderr}");
        std::fs::remove_file(source).unwrap();
        output
    });
}

#[test]
fn in_place_leaves_files_without_objects_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let comments = dir.path().join("comments.yaml");
    write(&comments, "# only a comment\n---\n# and another\n");
    let empty = dir.path().join("empty.yaml");
    write(&empty, "");
    let level = dir.path().join("level.yaml");
    write(&level, LEVEL);
    let before = std::fs::metadata(&comments).unwrap().ino();
    success(
        &["convert", "--to", "v1", "--in-place", "-f", p(dir.path())],
        b"",
    );
    assert_eq!(read(&comments), "# only a comment\n---\n# and another\n");
    assert_eq!(
        std::fs::metadata(&comments).unwrap().ino(),
        before,
        "not even rewritten"
    );
    assert_eq!(read(&empty), "");
    assert!(read(&level).contains("flowcontrol.apiserver.k8s.io/v1\n"));
}

#[test]
fn in_place_refuses_what_is_not_a_regular_file() {
    // The test's own twin of /dev/null: a regression must not replace the machine's.
    let dir = tempfile::tempdir().unwrap();
    let null = dir.path().join("null.yaml");
    run("mknod", &["-m", "666", p(&null), "c", "1", "3"]);
    let output = apfkit(
        &["convert", "--to", "v1", "--in-place", "-f", p(&null)],
        b"",
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        std::fs::symlink_metadata(&null)
            .unwrap()
            .file_type()
            .is_char_device()
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("needs regular files"));
}

#[test]
fn directory_loops_end_and_every_file_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("level.yaml"), LEVEL);
    std::os::unix::fs::symlink(".", dir.path().join("self")).unwrap();
    std::os::unix::fs::symlink(".", dir.path().join("a")).unwrap();
    std::os::unix::fs::symlink(".", dir.path().join("b")).unwrap();
    std::os::unix::fs::symlink("level.yaml", dir.path().join("alias.yaml")).unwrap();
    // A file read twice would be a duplicate name, and an error.
    let output = apfkit_within(
        &["limits", "-f", p(dir.path()), "-o", "json"],
        b"",
        Duration::from_secs(60),
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(text.matches("\"name\": \"ok\"").count(), 1, "{text}");
}

/// A ConfigMap volume: `..data` points at a timestamped directory, and each key is a link
/// through `..data`.
#[test]
fn a_configmap_volume_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let stamped = dir.path().join("..2026_11_23_04_00_00.123456789");
    std::fs::create_dir(&stamped).unwrap();
    write(&stamped.join("level.yaml"), LEVEL);
    std::os::unix::fs::symlink("..2026_11_23_04_00_00.123456789", dir.path().join("..data"))
        .unwrap();
    std::os::unix::fs::symlink("..data/level.yaml", dir.path().join("level.yaml")).unwrap();
    let out = success(&["convert", "--to", "v1", "-f", p(dir.path())], b"");
    assert_eq!(
        String::from_utf8(out).unwrap().matches("name: ok").count(),
        1
    );
}

/// Sends `signal` to the command while it holds output, and checks that it exits with
/// 128 + the signal's number and leaves no file behind.
fn interrupted(signal: &str, number: i32, stdout_spill: bool) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.yaml");
    let mut args = vec!["convert", "--to", "v1"];
    if !stdout_spill {
        args.extend(["--output-file", p(&out)]);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_apfkit"))
        .args(&args)
        .env("TMPDIR", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Over 8 MiB of output, so that standard output's output spills to a temporary file.
    let document = format!("{LEVEL}---\n");
    let chunk = document.repeat(2000);
    let deadline = Instant::now() + Duration::from_secs(60);
    while leftovers(dir.path()).is_empty() {
        use std::io::Write;
        stdin.write_all(chunk.as_bytes()).unwrap();
        assert!(Instant::now() < deadline, "no temporary file appeared");
    }
    run("kill", &[&format!("-{signal}"), &child.id().to_string()]);
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + number), "{signal}: {status}");
    assert!(
        leftovers(dir.path()).is_empty(),
        "{signal}: {:?}",
        leftovers(dir.path())
    );
    assert!(!out.exists());
}

#[test]
fn signals_remove_temporary_files() {
    interrupted("TERM", 15, false);
    interrupted("INT", 2, false);
    interrupted("HUP", 1, true);
}

/// What an input file or an output target is, for the property test.
#[derive(Debug, Clone, Copy)]
enum Situation {
    /// A regular file of objects with this mode.
    Regular(u32),
    /// A symlink to a regular file of objects.
    Symlink,
    /// A regular file with a second hard link outside the inputs.
    HardLinked,
    /// Comments only.
    Comments,
    /// An object that does not convert.
    Invalid,
    /// A character device (only as an output target).
    Device,
}

fn situation() -> impl proptest::strategy::Strategy<Value = Situation> {
    use proptest::prelude::*;
    prop_oneof![
        prop::sample::select(vec![0o644, 0o600, 0o640, 0o444, 0o755]).prop_map(Situation::Regular),
        Just(Situation::Symlink),
        Just(Situation::HardLinked),
        Just(Situation::Comments),
        Just(Situation::Invalid),
        Just(Situation::Device),
    ]
}

const INVALID: &str = "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: PriorityLevelConfiguration
metadata:
  name: bad
spec:
  limited:
    nominalConcurrencyShares: not-a-number
";

/// Creates `name` in `dir` as `situation`; returns the path the command is given and the
/// path whose content changes.
fn make(dir: &Path, name: &str, situation: Situation) -> (PathBuf, PathBuf) {
    let path = dir.join(name);
    match situation {
        Situation::Regular(mode) => {
            write(&path, LEVEL);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            (path.clone(), path)
        }
        Situation::Symlink => {
            let target = dir.join(format!("target-of-{name}"));
            write(&target, LEVEL);
            std::os::unix::fs::symlink(&target, &path).unwrap();
            (path, target)
        }
        Situation::HardLinked => {
            write(&path, LEVEL);
            std::fs::hard_link(&path, dir.join(format!("other-link-of-{name}"))).unwrap();
            (path.clone(), path)
        }
        Situation::Comments => {
            write(&path, "# nothing here\n");
            (path.clone(), path)
        }
        Situation::Invalid => {
            write(&path, INVALID);
            (path.clone(), path)
        }
        Situation::Device => {
            run("mknod", &["-m", "666", p(&path), "c", "1", "3"]);
            (path.clone(), path)
        }
    }
}

/// Type, mode and content of a path, not following a symlink.
fn snapshot(path: &Path) -> (String, u32, Option<String>) {
    let metadata = std::fs::symlink_metadata(path).unwrap();
    let kind = if metadata.file_type().is_symlink() {
        "symlink"
    } else if metadata.file_type().is_char_device() {
        "device"
    } else {
        "file"
    };
    let content = metadata.is_file().then(|| read(path));
    (kind.to_owned(), metadata.mode() & 0o7777, content)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]

    /// Whatever the files are, and whenever a SIGTERM comes: no panic, no leftover, every
    /// path keeps its type and mode, and the files are either all converted or all as they
    /// were.
    #[test]
    fn file_situations_keep_their_promises(
        inputs in proptest::collection::vec(situation(), 1..4),
        target in proptest::option::of(situation()),
        signal_after_ms in proptest::option::of(0u64..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut given = Vec::new();
        let mut changed = Vec::new();
        for (index, situation) in inputs.iter().enumerate() {
            if matches!(situation, Situation::Device) && target.is_none() {
                continue; // --in-place refuses devices; that is tested on its own
            }
            let (path, content) = make(dir.path(), &format!("in-{index}.yaml"), *situation);
            given.push(path);
            changed.push(content);
        }
        let mut args: Vec<String> = vec!["convert".into(), "--to".into(), "v1".into()];
        for path in &given {
            args.extend(["-f".to_owned(), p(path).to_owned()]);
        }
        match target {
            Some(situation) => {
                let (path, content) = make(dir.path(), "out.yaml", situation);
                args.extend(["--output-file".to_owned(), p(&path).to_owned()]);
                changed = vec![content];
            }
            None => args.push("--in-place".to_owned()),
        }
        if given.is_empty() {
            return Ok(());
        }
        let before: Vec<_> = changed.iter().map(|path| snapshot(path)).collect();
        let child = Command::new(env!("CARGO_BIN_EXE_apfkit"))
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(ms) = signal_after_ms {
            std::thread::sleep(Duration::from_millis(ms));
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        }
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        proptest::prop_assert!(!stderr.contains("panicked"), "{}", stderr);
        // A signal before the handlers are installed (at start-up, before any file exists)
        // ends the process the default way.
        let code = match std::os::unix::process::ExitStatusExt::signal(&output.status) {
            Some(15) => Some(143),
            _ => output.status.code(),
        };
        proptest::prop_assert!(matches!(code, Some(0 | 1 | 2 | 143)), "{:?} {}", output.status, stderr);
        proptest::prop_assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
        let after: Vec<_> = changed.iter().map(|path| snapshot(path)).collect();
        let mut converted = 0;
        for (old, new) in before.iter().zip(&after) {
            proptest::prop_assert_eq!(&old.0, &new.0, "the type of a path never changes");
            proptest::prop_assert_eq!(old.1, new.1, "nor its mode");
            if old.2 != new.2 {
                converted += 1;
                // Converted objects, or nothing when the inputs held none (an output file).
                let text = new.2.as_deref().unwrap_or_default();
                let expected = text.contains("flowcontrol.apiserver.k8s.io/v1\n")
                    || (text.is_empty() && target.is_some());
                proptest::prop_assert!(expected, "{}", text);
            }
        }
        if code != Some(0) {
            // A failure changes nothing; a signal may come after the commit.
            proptest::prop_assert!(converted == 0 || code == Some(143), "{} changed: {}", converted, stderr);
        }
        if code == Some(143) && target.is_none() {
            let convertible = before.iter().filter(|b| b.2.as_deref() == Some(LEVEL)).count();
            proptest::prop_assert!(converted == 0 || converted == convertible, "all or nothing");
        }
    }
}

#[test]
fn a_directory_is_no_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("level.yaml");
    write(&input, LEVEL);
    let args = [
        "convert",
        "--to",
        "v1",
        "-f",
        p(&input),
        "--output-file",
        p(dir.path()),
    ];
    let output = apfkit(&args, b"");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is a directory"));
    assert!(std::fs::symlink_metadata(dir.path()).unwrap().is_dir());
}

/// A finished file holds no descriptor: 600 files convert in place with 64 descriptors.
#[test]
fn many_files_convert_in_place_with_few_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    for index in 0..600 {
        write(
            &dir.path().join(format!("f{index}.yaml")),
            &LEVEL.replace("name: ok", &format!("name: p{index}")),
        );
    }
    let script = format!(
        "ulimit -n 64; exec {} convert --to v1 --in-place -f {}",
        env!("CARGO_BIN_EXE_apfkit"),
        p(dir.path())
    );
    let output = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for index in [0, 299, 599] {
        assert!(
            read(&dir.path().join(format!("f{index}.yaml")))
                .contains("flowcontrol.apiserver.k8s.io/v1\n")
        );
    }
    assert!(leftovers(dir.path()).is_empty());
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
";

/// A manifests folder holds other kinds too: strict by default, skipped with a note on
/// request, and kept when files are rewritten in place.
#[test]
fn other_kinds_are_skipped_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let mixed = dir.path().join("mixed.yaml");
    write(&mixed, &format!("{DEPLOYMENT}---\n{LEVEL}"));
    let strict = apfkit(&["convert", "--to", "v1", "-f", p(&mixed)], b"");
    assert_eq!(strict.status.code(), Some(1));
    let note = "mixed.yaml: document 1: note: skipped apps/v1 Deployment \"web\", not a kind apfkit serves";
    for command in [
        vec!["convert", "--to", "v1"],
        vec!["validate"],
        vec!["limits"],
    ] {
        let mut args = command.clone();
        args.extend(["--skip-other-kinds", "-f", p(&mixed)]);
        let output = apfkit(&args, b"");
        assert!(
            output.status.success(),
            "{command:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(note),
            "{command:?}"
        );
        assert!(
            !String::from_utf8_lossy(&output.stdout).contains("Deployment"),
            "{command:?}"
        );
    }
    success(
        &[
            "convert",
            "--to",
            "v1",
            "--skip-other-kinds",
            "--in-place",
            "-f",
            p(&mixed),
        ],
        b"",
    );
    let rewritten = read(&mixed);
    assert!(
        rewritten.starts_with("apiVersion: apps/v1\nkind: Deployment\n"),
        "{rewritten}"
    );
    assert!(rewritten.contains("replicas: 2"));
    assert!(rewritten.contains("flowcontrol.apiserver.k8s.io/v1\n"));
}
