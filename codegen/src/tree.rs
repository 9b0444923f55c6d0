//! The file layout of a generated module tree, shared by the type and conversion emitters.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use proc_macro2::TokenStream;

use crate::error::{Error, Result};

/// Every module of `modules` and all their ancestors (the root, `[]`, included), each with the
/// names of its child modules.
pub(crate) fn module_tree<'a>(
    modules: impl IntoIterator<Item = &'a Vec<String>>,
) -> BTreeMap<Vec<String>, BTreeSet<String>> {
    let mut tree: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    tree.entry(Vec::new()).or_default();
    for module in modules {
        for depth in 0..module.len() {
            tree.entry(module[..depth].to_vec())
                .or_default()
                .insert(module[depth].clone());
        }
        tree.entry(module.clone()).or_default();
    }
    tree
}

/// A module's file: `a/b.rs` for a leaf, `a/b/mod.rs` for a module with children, `mod.rs` for
/// the root; its text is `//! header` followed by the tokens formatted by prettyplease.
pub(crate) fn render(
    module: &[String],
    has_children: bool,
    header: &str,
    tokens: TokenStream,
) -> Result<(PathBuf, String)> {
    let file: syn::File = syn::parse2(tokens).map_err(|err| Error::Internal {
        module: if module.is_empty() {
            "<root>".to_owned()
        } else {
            module.join("::")
        },
        message: err.to_string(),
    })?;
    let mut path: PathBuf = module.iter().collect();
    if has_children || module.is_empty() {
        path.push("mod.rs");
    } else {
        path.set_extension("rs");
    }
    Ok((
        path,
        format!("//! {header}\n\n{}", prettyplease::unparse(&file)),
    ))
}
