//! The scheme's modules depend on each other one way: the readers' vocabulary at the bottom,
//! the typed codecs above it, the per-format readers above those, and the dispatch over
//! formats on top (issue 25: the reader files no longer import each other in a circle).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of `src/scheme` (but `mod.rs`, the public face) and the sibling modules its
/// non-test code names through `super::`.
fn sibling_imports() -> BTreeMap<String, BTreeSet<String>> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/scheme");
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut uses = BTreeSet::new();
        for (at, _) in code.match_indices("super::") {
            let rest = &code[at + "super::".len()..];
            let word: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            let is_module =
                rest[word.len()..].starts_with("::") || rest[word.len()..].starts_with(';');
            if !word.is_empty() && is_module && word != "super" {
                uses.insert(word);
            }
        }
        modules.insert(name, uses);
    }
    modules
}

/// A cycle through `from`, if any, as the modules on it.
fn cycle_from(
    graph: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    path: &mut Vec<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|m| m == from) {
        return Some(path[at..].to_vec());
    }
    path.push(from.to_owned());
    for next in graph.get(from).into_iter().flatten() {
        if let Some(cycle) = cycle_from(graph, next, path) {
            return Some(cycle);
        }
    }
    path.pop();
    None
}

#[test]
fn the_scheme_modules_import_each_other_one_way() {
    let graph = sibling_imports();
    for module in [
        "codec",
        "document",
        "guard",
        "json_input",
        "read",
        "yaml_input",
    ] {
        assert!(graph.contains_key(module), "{module} missing: {graph:?}");
    }
    // The graph is not empty of edges: the check would pass vacuously otherwise.
    assert!(graph["read"].contains("json_input"), "{graph:?}");
    assert!(graph["json_input"].contains("document"), "{graph:?}");
    for module in graph.keys() {
        if let Some(cycle) = cycle_from(&graph, module, &mut Vec::new()) {
            panic!("the scheme's modules import each other in a circle: {cycle:?}");
        }
    }
}

#[test]
fn a_circle_is_found() {
    let graph = BTreeMap::from([
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["c".to_owned()])),
        ("c".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]);
    assert_eq!(
        cycle_from(&graph, "a", &mut Vec::new()),
        Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()])
    );
}
