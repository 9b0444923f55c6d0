//! Files a program is told to read by name (a flag's file, a kubeconfig, a certificate, a
//! policy): read whole, but never more than a limit and one byte, whatever the file is (a
//! device such as `/dev/zero`, a FIFO, a file that grows while it is read), so that a wrong
//! path costs a bounded amount of memory and time.

use std::io::Read as _;
use std::path::Path;

/// What a file of settings may hold (a policy, a kubeconfig, a certificate, a token file):
/// 4 MiB.
pub const SETTINGS_FILE_LIMIT: u64 = 4 << 20;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The system's error (no such file, no permission).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A directory, not a file.
    #[error("is a directory")]
    Directory,
    /// More than the limit, in bytes.
    #[error("larger than {}", size(*.0))]
    TooLarge(u64),
    /// Not UTF-8, where text was wanted.
    #[error("not UTF-8 text")]
    NotText,
}

/// The limit in words: whole MiB as such, else bytes.
fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The bytes of the file at `path`, when it holds at most `limit`.
///
/// # Errors
///
/// A file that cannot be opened or read, a directory, or more than `limit` bytes.
pub fn read_at_most(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let file = std::fs::File::open(path)?;
    if file.metadata().is_ok_and(|metadata| metadata.is_dir()) {
        return Err(FileError::Directory);
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge(limit));
    }
    Ok(bytes)
}

/// The text of the file at `path`, when it holds at most `limit` bytes of UTF-8.
///
/// # Errors
///
/// As [`read_at_most`], and text that is not UTF-8.
pub fn read_text_at_most(path: &Path, limit: u64) -> Result<String, FileError> {
    String::from_utf8(read_at_most(path, limit)?).map_err(|_| FileError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_up_to_their_limit_whatever_they_are() {
        let dir = std::env::temp_dir().join(format!("apfkit-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("settings");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read_at_most(&file, 10).unwrap(), b"0123456789");
        assert_eq!(read_text_at_most(&file, 10).unwrap(), "0123456789");
        assert!(matches!(
            read_at_most(&file, 9),
            Err(FileError::TooLarge(9))
        ));
        // An endless device is refused after the limit, not read until memory runs out.
        let zero = read_at_most(Path::new("/dev/zero"), SETTINGS_FILE_LIMIT).unwrap_err();
        assert_eq!(zero.to_string(), "larger than 4 MiB");
        assert!(matches!(read_at_most(&dir, 10), Err(FileError::Directory)));
        assert!(matches!(
            read_at_most(&dir.join("missing"), 10),
            Err(FileError::Io(_))
        ));
        std::fs::write(&file, b"\xff\xfe").unwrap();
        assert!(matches!(
            read_text_at_most(&file, 10),
            Err(FileError::NotText)
        ));
        assert_eq!(
            FileError::TooLarge(1000).to_string(),
            "larger than 1000 bytes"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
