//! The workspace's files import each other one way (issue 38): within each crate, no file
//! uses another that uses it back, directly or around a circle. A folder's `mod.rs` and a
//! crate's root are the faces of their modules: what they define is the shared vocabulary of
//! the files under them, and their declarations and re-exports are not imports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One crate's module files: module path (`http::list`) to file.
fn module_files(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut modules = BTreeMap::new();
    let mut folders = vec![src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(src).unwrap();
            if path.is_dir() {
                // `src/bin` holds other crates' roots.
                if relative != Path::new("bin") {
                    folders.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let mut words: Vec<String> = relative
                .with_extension("")
                .iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect();
            if words.last().is_some_and(|w| w == "mod") {
                words.pop();
            }
            if words == ["lib"] || words == ["main"] {
                words.clear();
            }
            modules.insert(words.join("::"), path);
        }
    }
    modules
}

/// The full paths a `use` tree names, prefix first: `a::{b, c::{d, e}}` is `a::b`, `a::c::d`,
/// `a::c::e`.
fn expand_use(tree: &str) -> Vec<String> {
    expand_use_named(tree)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

/// [`expand_use`], each path with the name it brings in (its alias, or its last word).
fn expand_use_named(tree: &str) -> Vec<(String, String)> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let mut words = tree.split(" as ");
        let path = words
            .next()
            .unwrap_or_default()
            .trim()
            .trim_end_matches("::*");
        let name = words
            .next()
            .map_or_else(|| path.rsplit("::").next().unwrap_or_default(), str::trim);
        return vec![(path.to_owned(), name.to_owned())];
    };
    let prefix = tree[..open].trim().trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|item| !item.trim().is_empty())
        .flat_map(expand_use_named)
        .map(|(path, name)| match path.as_str() {
            "self" => (
                prefix.to_owned(),
                prefix.rsplit("::").next().unwrap_or_default().to_owned(),
            ),
            path => (format!("{prefix}::{path}"), name),
        })
        .collect()
}

/// The paths within the crate that a file's code (tests and comments aside) names, as module paths from the
/// crate root, resolved from `crate::`, `super::` and `self::`. A face's (a `mod.rs`'s or the
/// root's) re-exports and declarations are left out.
fn named_paths(module: &str, code: &str, is_face: bool) -> Vec<Vec<String>> {
    let code = code.split("#[cfg(test)]").next().unwrap_or_default();
    // Comments name paths too (doc links), but import nothing.
    let code: String = code
        .lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n");
    let code = code.as_str();
    let mut texts = Vec::new();
    let mut rest = code;
    // `use` statements, which may span lines and hold groups.
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        let line_start = rest[..at].rfind('\n').map_or(0, |n| n + 1);
        let head = rest[line_start..at].trim();
        let end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
        let statement = &rest[at + 4..end];
        let is_use = before.is_none_or(|c| c.is_whitespace())
            && (head.is_empty() || head.starts_with("pub"));
        if is_use && !(is_face && head.starts_with("pub")) && !head.starts_with("//") {
            texts.extend(expand_use(statement));
        }
        rest = &rest[end.min(rest.len())..];
        if rest.is_empty() {
            break;
        }
        rest = &rest[1..];
    }
    // Paths written in place: `crate::store::now()`, `super::proto::status(..)`.
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            texts.push(path.trim_end_matches(':').to_owned());
        }
    }
    texts
        .iter()
        .filter_map(|text| resolve(module, text))
        .collect()
}

/// `crate::`, `super::` or `self::` `text`, written in `module`, as words from the crate root.
fn resolve(module: &str, text: &str) -> Option<Vec<String>> {
    let mut up: Vec<String> = module
        .split("::")
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let mut words = text.split("::").filter(|w| !w.is_empty()).peekable();
    match words.next()? {
        "crate" => up.clear(),
        "self" => {}
        "super" => {
            up.pop();
            while words.next_if_eq(&"super").is_some() {
                up.pop();
            }
        }
        _ => return None,
    }
    up.extend(words.map(str::to_owned));
    Some(up)
}

/// What a face (`mod.rs`, a crate root) re-exports: each name it brings in, from where.
fn reexports(module: &str, code: &str) -> BTreeMap<String, Vec<String>> {
    let mut names = BTreeMap::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let Some(tree) = statement
            .strip_prefix("pub use ")
            .or_else(|| statement.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        for (path, name) in expand_use_named(tree) {
            // `pub use child::Item;` in a face names its own child without `self::`.
            let text = if path.starts_with("crate::") || path.starts_with("super::") {
                path
            } else {
                format!("self::{path}")
            };
            if let Some(words) = resolve(module, &text) {
                names.insert(name, words);
            }
        }
    }
    names
}

/// Each crate's module files and the module files their code uses. A face's re-exports are
/// followed to the file that defines what they name; a file's use of its own ancestors (the
/// vocabulary of the folders it is in) is not an edge.
///
/// Generated trees (`generated` folders) are the bottom layer by design: what they call in
/// hand-written modules (the defaulting functions and the scheme the generator's settings
/// name, as upstream's `zz_generated` files call `SetDefaults_*`) is not counted as an edge.
///
/// With `follow` false, re-exports are not followed: a use is of the face it names (what a
/// layer sees of another).
fn import_graphs(follow: bool) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let metadata = crate::docs::workspace_metadata();
    let mut graphs = BTreeMap::new();
    for package in metadata["packages"].as_array().unwrap() {
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let src = manifest.parent().unwrap().join("src");
        if !src.is_dir() {
            continue;
        }
        let member = package["name"].as_str().unwrap();
        let modules = module_files(&src);
        let codes: BTreeMap<&String, String> = modules
            .iter()
            .map(|(module, file)| (module, std::fs::read_to_string(file).unwrap()))
            .collect();
        let is_face = |module: &str| {
            let name = modules[module].file_name().unwrap();
            name == "mod.rs" || name == "lib.rs" || name == "main.rs"
        };
        let faces: BTreeMap<&String, BTreeMap<String, Vec<String>>> = codes
            .iter()
            .filter(|(module, _)| is_face(module))
            .map(|(module, code)| (*module, reexports(module, code)))
            .collect();
        // The deepest module file a path reaches, through faces' re-exports.
        let target_of = |path: &[String]| {
            let mut path = path.to_vec();
            for _ in 0..8 {
                let depth = (0..=path.len())
                    .rev()
                    .find(|n| modules.contains_key(&path[..*n].join("::")))?;
                let module = path[..depth].join("::");
                let next = faces
                    .get(&module)
                    .filter(|_| follow)
                    .zip(path.get(depth))
                    .and_then(|(names, word)| names.get(word));
                match next {
                    Some(defined) if *defined != path[..=depth] => {
                        let mut followed = defined.clone();
                        followed.extend(path[depth + 1..].iter().cloned());
                        path = followed;
                    }
                    _ => return Some(module),
                }
            }
            None
        };
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, code) in &codes {
            let mut uses = BTreeSet::new();
            for path in named_paths(module, code, is_face(module)) {
                let Some(target) = target_of(&path) else {
                    continue;
                };
                let ancestor = target.is_empty() || module.starts_with(&format!("{target}::"));
                let generated = |m: &str| m.split("::").any(|w| w == "generated");
                if target != **module && !ancestor && (!generated(module) || generated(&target)) {
                    uses.insert(target);
                }
            }
            graph.insert((*module).clone(), uses);
        }
        graphs.insert(member.to_owned(), graph);
    }
    graphs
}

/// A cycle through `from`, if any, as the modules on it.
fn cycle_from(
    graph: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|m| m == from) {
        return Some(path[at..].to_vec());
    }
    if done.contains(from) {
        return None;
    }
    path.push(from.to_owned());
    for next in graph.get(from).into_iter().flatten() {
        if let Some(cycle) = cycle_from(graph, next, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    done.insert(from.to_owned());
    None
}

#[test]
fn the_workspaces_files_import_each_other_one_way() {
    let graphs = import_graphs(true);
    // The graphs are read, and hold edges: the check would pass vacuously otherwise.
    let apiserver = &graphs["apfkit-apiserver"];
    assert!(
        apiserver["http::get"].contains("http::list"),
        "{apiserver:?}"
    );
    assert!(apiserver["http::list"].contains("store"), "{apiserver:?}");
    assert!(graphs["apfkit-runtime"]["scheme::read"].contains("scheme::json_input"));
    let mut circles = BTreeSet::new();
    for (member, graph) in &graphs {
        for module in graph.keys() {
            if let Some(mut cycle) =
                cycle_from(graph, module, &mut Vec::new(), &mut BTreeSet::new())
            {
                // One circle, whichever file it was found from.
                let first = (0..cycle.len()).min_by_key(|&i| &cycle[i]).unwrap_or(0);
                cycle.rotate_left(first);
                circles.insert(format!("{member}: {}", cycle.join(" → ")));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "files that import each other in a circle:\n{}",
        circles.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The layers of apfkit-apiserver (issue 38): the HTTP handlers reach storage only through
/// the store, and the store and storage know nothing of HTTP.
#[test]
fn apiservers_handlers_reach_storage_only_through_the_store() {
    let graph = &import_graphs(false)["apfkit-apiserver"];
    for (module, uses) in graph {
        let reaches = |layer: &str| uses.iter().any(|u| u.starts_with(layer));
        if module.starts_with("http::") {
            assert!(!reaches("storage"), "{module} uses storage: {uses:?}");
        }
        if module.starts_with("store::") || module.starts_with("storage::") {
            assert!(!reaches("http"), "{module} uses http: {uses:?}");
        }
        if module.starts_with("storage::") {
            assert!(!reaches("store"), "{module} uses the store: {uses:?}");
        }
    }
    assert!(
        graph["store::objects"]
            .iter()
            .any(|u| u.starts_with("storage"))
    );
}

/// What sits beneath the HTTP layer reads a request's information from below it (issue 54):
/// audit and authorization know nothing of `http`, and crd's schema imports its CEL rule from
/// the rule's own file, not through `cel`, which imports the schema.
#[test]
fn request_information_and_rules_are_imported_from_below() {
    let graphs = import_graphs(false);
    let apiserver = &graphs["apfkit-apiserver"];
    for (module, uses) in apiserver {
        if module.starts_with("audit") || module.starts_with("authz") {
            assert!(
                !uses.iter().any(|u| u == "http" || u.starts_with("http::")),
                "{module} uses http: {uses:?}"
            );
        }
    }
    assert!(apiserver["audit::context"].contains("request_info"));
    let crd = &graphs["apfkit-crd"];
    assert!(crd["schema"].contains("cel::rule"), "{:?}", crd["schema"]);
    assert!(!crd["schema"].contains("cel"), "{:?}", crd["schema"]);
}

#[test]
fn use_trees_expand_and_circles_are_found() {
    assert_eq!(
        expand_use("super::{list::selected, request::{self, Target}, media}"),
        [
            "super::list::selected",
            "super::request",
            "super::request::Target",
            "super::media"
        ]
    );
    let mut named = named_paths(
        "http::get",
        "use super::list::not_ahead;\nlet x = crate::store::now();",
        false,
    );
    named.sort();
    named.dedup();
    assert_eq!(
        named,
        [vec!["http", "list", "not_ahead"], vec!["store", "now"]]
    );
    let graph = BTreeMap::from([
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["c".to_owned()])),
        ("c".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]);
    assert_eq!(
        cycle_from(&graph, "a", &mut Vec::new(), &mut BTreeSet::new()),
        Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()])
    );
}
