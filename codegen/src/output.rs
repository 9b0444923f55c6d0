//! Writing a generated tree atomically: everything goes to a sibling temporary directory first,
//! which then replaces the target in one rename, so a failure never leaves half a tree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// Replaces `dir` by a directory holding exactly `files` (paths relative to `dir`).
pub fn write_tree(dir: &Path, files: &BTreeMap<PathBuf, String>) -> Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(io_error(&parent))?;
    let staging = tempfile::Builder::new()
        .prefix(".apfkit-codegen-")
        .tempdir_in(&parent)
        .map_err(io_error(&parent))?;
    for (relative, contents) in files {
        let path = staging.path().join(relative);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).map_err(io_error(folder))?;
        }
        std::fs::write(&path, contents).map_err(io_error(&path))?;
    }
    let staged = staging.keep();
    let old = if dir.exists() {
        let aside = tempfile::Builder::new()
            .prefix(".apfkit-codegen-old-")
            .tempdir_in(&parent)
            .map_err(io_error(&parent))?
            .keep();
        std::fs::remove_dir(&aside).map_err(io_error(&aside))?;
        std::fs::rename(dir, &aside).map_err(io_error(dir))?;
        Some(aside)
    } else {
        None
    };
    if let Err(source) = std::fs::rename(&staged, dir) {
        if let Some(aside) = &old {
            let _ = std::fs::rename(aside, dir);
        }
        let _ = std::fs::remove_dir_all(&staged);
        return Err(Error::Io {
            path: dir.to_owned(),
            source,
        });
    }
    if let Some(aside) = old {
        std::fs::remove_dir_all(&aside).map_err(io_error(&aside))?;
    }
    Ok(())
}
