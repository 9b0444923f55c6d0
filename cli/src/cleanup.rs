//! Temporary files that must not outlive the command: every temporary file is registered here
//! (while holding the registry, from its creation on) while it exists, and SIGINT, SIGTERM and SIGHUP remove them all before the process exits
//! (with 128 + the signal's number, as a shell reports it). Renames into place happen while
//! holding the registry, so a signal never interrupts a commit half-way.
//!
//! A `kill -9` cannot be caught: its leftovers are named `.NAME.apfkit-XXXXXX.tmp` beside the
//! target, or `apfkit-XXXXXX.tmp` in `$TMPDIR`, and can be deleted safely.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

static LIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// The registry of live temporary files, locked.
pub fn lock() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    // A panic elsewhere while holding the lock leaves the set itself intact.
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Forgets a temporary file (removed or renamed into place).
pub fn unregister(path: &Path) {
    lock().remove(path);
}

/// Starts the thread that removes every registered file on SIGINT, SIGTERM or SIGHUP and
/// exits. Without it (if the handlers cannot be installed) the command still runs; only the
/// clean-up on signals is lost, which the warning says.
pub fn install_signal_handlers() {
    let mut signals = match Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("warning: cannot handle signals ({e}); temporary files may be left behind");
            return;
        }
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let live = lock();
            for path in live.iter() {
                let _ = std::fs::remove_file(path);
            }
            // Exit while holding the registry, so that no rename starts after the removal.
            std::process::exit(128 + signal);
        }
    });
}
