//! The examples in docs/ work as written.

use std::time::Duration;

use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::sim::server::simulate;
use apfkit_dispatcher::sim::workload::Workload;

/// The workload example of docs/workload.md parses, checks, and simulates to the end.
#[test]
fn the_workload_example_in_the_docs_runs() {
    let doc = std::fs::read_to_string(apfkit_tests::repo_root().join("docs/workload.md")).unwrap();
    let start = doc.find("```yaml\n").expect("a YAML example") + "```yaml\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let workload: Workload = serde_saphyr::from_str(&doc[start..end]).unwrap();
    workload.check().unwrap();
    assert_eq!(workload.wait_limit, Duration::from_secs(15));
    assert_eq!(workload.streams[0].users, 30);
    let report = simulate(
        Configuration::kubernetes_default(600).unwrap(),
        &workload,
        1,
        |_| {},
    )
    .unwrap();
    assert_eq!(report.streams.len(), 3);
    assert_eq!(report.left_over, 0);
    // The stream that gives its objects is sized by the newest release: 5,000 objects of
    // 10 kB are 500 seats by size, held to workload-low's cap of 37 at 600 seats.
    assert_eq!(report.streams[2].seats, 37);
}

/// README.md is a front door, not a manual: about 200 lines at most, and every page under
/// docs/ is reachable from it by a link.
#[test]
fn the_readme_is_short_and_links_every_page_of_the_docs() {
    let root = apfkit_tests::repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines");
    let targets = markdown_link_targets(&readme);
    let mut unlinked = Vec::new();
    for entry in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            let page = format!("docs/{name}");
            if !targets
                .iter()
                .any(|t| t.split('#').next() == Some(page.as_str()))
            {
                unlinked.push(page);
            }
        }
    }
    assert!(
        unlinked.is_empty(),
        "not linked from README.md: {unlinked:?}"
    );
}

/// docs/decisions.md, the reference by subsystem, lists every decision of the record
/// (docs/history/decisions.md, numbered in order) exactly once, and nothing that is not one;
/// its index counts each subsystem's lines.
#[test]
fn decisions_index_lists_every_decision_once() {
    let read = |path: &str| std::fs::read_to_string(apfkit_tests::repo_root().join(path)).unwrap();
    let record = read("docs/history/decisions.md");
    let entries: Vec<u32> = record
        .lines()
        .filter_map(|line| line.split_once(". "))
        .filter_map(|(number, _)| number.parse().ok())
        .collect();
    assert!(entries.len() > 200, "{entries:?}");
    let mut sorted_entries = entries.clone();
    sorted_entries.sort_unstable();
    assert_eq!(sorted_entries, entries, "entries are numbered in order");

    let reference = read("docs/decisions.md");
    let listed = |section: &str| -> Vec<u32> {
        section
            .lines()
            .filter_map(|line| line.strip_prefix("- [**"))
            .map(|rest| rest.split_once("**").unwrap().0.parse().unwrap())
            .collect()
    };
    let mut indexed = listed(&reference);
    indexed.sort_unstable();
    assert_eq!(indexed, entries, "the reference against the record");
    // Each index row's count is its section's number of lines.
    let index = reference
        .split("\n## Index\n")
        .nth(1)
        .and_then(|rest| rest.trim_start().split("\n\n").next())
        .expect("an index table");
    for row in index.lines().skip(2) {
        let (name, count) = row.trim_matches('|').split_once("](#").unwrap();
        let name = name.trim_start_matches(" [");
        let count: usize = count.rsplit('|').next().unwrap().trim().parse().unwrap();
        let section = reference
            .split(&format!(
                "\n## {}{}\n",
                name[..1].to_uppercase(),
                &name[1..]
            ))
            .nth(1)
            .unwrap_or_else(|| panic!("no section {name}"));
        let section = section.split("\n## ").next().unwrap();
        assert_eq!(listed(section).len(), count, "{name}");
    }
}

/// Every relative link of the repository's Markdown (README.md, docs/, each crate's and
/// fixture's README) names a file or directory that exists, and a `#fragment` into Markdown
/// names one of its headings (as GitHub derives anchors from them).
#[test]
fn relative_links_in_markdown_resolve() {
    let root = apfkit_tests::repo_root();
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "corpus" {
                    stack.push(path);
                }
            } else if name.ends_with(".md") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 10, "{files:?}");
    let mut dead = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for target in markdown_link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let shown = format!(
                "{}: {target}",
                file.strip_prefix(&root).unwrap_or(file).display()
            );
            if !resolved.exists() {
                dead.push(shown);
            } else if !fragment.is_empty()
                && resolved.extension().is_some_and(|e| e == "md")
                && !headings(&std::fs::read_to_string(&resolved).unwrap())
                    .contains(&fragment.to_owned())
            {
                dead.push(format!("{shown} (no such heading)"));
            }
        }
    }
    assert!(dead.is_empty(), "dead relative links:\n{}", dead.join("\n"));
}

/// The targets of inline links `[text](target)` outside code blocks and code spans.
fn markdown_link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        // Code spans hold no links.
        let outside_code: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = outside_code.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            if !target.is_empty() {
                targets.push(target.to_owned());
            }
            rest = &after[end..];
        }
    }
    targets
}

/// GitHub's anchors for a Markdown file's headings: lower case, spaces to `-`, punctuation but
/// `-` and `_` dropped.
fn headings(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| {
            line.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// docs/architecture.md's crate table names, for each crate, the workspace crates it uses:
/// exactly its normal (and optional) dependencies on workspace crates, as `cargo metadata`
/// reads the manifests.
#[test]
fn the_architecture_table_names_each_crates_dependencies() {
    let root = apfkit_tests::repo_root();
    let metadata = workspace_metadata();
    let packages = metadata["packages"].as_array().unwrap();
    let members: std::collections::BTreeSet<&str> = packages
        .iter()
        .map(|package| package["name"].as_str().unwrap())
        .collect();
    let actual: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> = packages
        .iter()
        .map(|package| {
            let uses = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|dependency| dependency["kind"].is_null())
                .map(|dependency| dependency["name"].as_str().unwrap())
                .filter(|name| members.contains(name))
                .map(str::to_owned)
                .collect();
            (package["name"].as_str().unwrap(), uses)
        })
        .collect();
    let text = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut rows = 0;
    let mut wrong = Vec::new();
    for line in text.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let name = cells[0].trim_start_matches("| ").trim_matches('`');
        let documented: std::collections::BTreeSet<String> = cells
            .last()
            .unwrap()
            .trim_end_matches(" |")
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|word| members.contains(word))
            .map(str::to_owned)
            .collect();
        let Some(uses) = actual.get(name) else {
            wrong.push(format!("{name}: no such crate"));
            continue;
        };
        rows += 1;
        if &documented != uses {
            wrong.push(format!(
                "{name}: documented {documented:?}, manifest {uses:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(rows, actual.len(), "a row per workspace crate");
}

/// `cargo metadata` of the workspace's own packages.
pub(crate) fn workspace_metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(apfkit_tests::repo_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Every publishable library's documentation says where to start and shows it in an example
/// that `cargo test` runs (a fenced block that is neither `ignore`, `no_run` nor `text`).
#[test]
fn each_library_says_where_to_start_with_an_example_that_runs() {
    let metadata = workspace_metadata();
    let mut libraries = Vec::new();
    let mut missing = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        let publishable = package["publish"] != serde_json::json!([]);
        let library = package["targets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|target| {
                target["kind"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|kind| kind == "lib")
            });
        let (true, Some(library)) = (publishable, library) else {
            continue;
        };
        let name = package["name"].as_str().unwrap();
        libraries.push(name.to_owned());
        let source = std::fs::read_to_string(library["src_path"].as_str().unwrap()).unwrap();
        let docs: Vec<&str> = source
            .lines()
            .take_while(|line| line.starts_with("//!"))
            .map(|line| line.trim_start_matches("//!").trim_start())
            .collect();
        let says_where = docs.iter().any(|line| {
            line.contains("**Where to start**") || line.starts_with("# Where to start")
        });
        // Opening fences only: every other fence closes a block.
        let runs = docs
            .iter()
            .filter_map(|line| line.strip_prefix("```"))
            .step_by(2)
            .any(|language| {
                ["", "rust"].contains(&language)
                    || (language.starts_with("rust,")
                        && !["ignore", "no_run", "compile_fail"]
                            .iter()
                            .any(|flag| language.contains(flag)))
            });
        // The opening paragraph says what the crate is, not when it came (issue 54).
        let opening: String = docs
            .iter()
            .take_while(|line| !line.is_empty())
            .copied()
            .collect();
        if opening.contains("issue ") {
            missing.push(format!("{name}: its opening names an issue: {opening}"));
        }
        if !says_where || !runs {
            missing.push(format!(
                "{name}: where to start {says_where}, an example that runs {runs}"
            ));
        }
    }
    assert!(libraries.len() >= 14, "{libraries:?}");
    assert!(missing.is_empty(), "{missing:#?}");
}
