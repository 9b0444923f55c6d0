//! The guides under `docs/`, for tests that run their commands as written.

/// The text of `docs/<page>`.
///
/// # Panics
///
/// When the page cannot be read.
pub fn text(page: &str) -> String {
    let path = format!("{}/../docs/{page}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The first `sh` block of the section `## title` of `docs/<page>`, without its fences.
///
/// # Panics
///
/// When the page, the section or the block is missing.
pub fn first_sh_block(page: &str, title: &str) -> String {
    let text = text(page);
    let section = text
        .split(&format!("\n## {title}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("a {title} section in docs/{page}"));
    section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("an sh block in {title} of docs/{page}"))
        .to_owned()
}
