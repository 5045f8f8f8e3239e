//! Atomic file writes: a temporary file beside the target, fsync, rename, fsync of the folder,
//! so that a crash at any point leaves the previous file whole.
//!
//! The temporary file of a write to `dir/NAME` is `dir/.NAME.tmp-PID-N` (the writer's process
//! id, and a counter of the process). A writer killed before its rename leaves it behind, so
//! every write of `NAME` first removes the stale temporary files of `NAME`, those whose writer
//! is certainly gone:
//!
//! - PID is this process and N is not a write of this process in flight: this process removes
//!   its own temporary file on every error, so the file was left by an earlier process that had
//!   the same id (ids are reused; in a container a restarted process often gets the same one);
//! - PID is another process that is not running (no `/proc/PID`), and the file was last
//!   modified [`STALE_AFTER`] ago or more. The age guards against a live writer whose id means
//!   nothing here (another PID namespace or host sharing the folder), whose write takes
//!   milliseconds: its file is never that old.
//! - where process ids cannot be checked (no `/proc`), a file of another process is stale
//!   once [`STALE_WITHOUT_PROC`] old.
//!
//! Anything else is kept: the temporary files of writes in flight in this process (a thread
//! writing the same target), of running processes, of other targets, and names not of this
//! form. Removal is best effort: a file that cannot be removed does not fail the write.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use crate::{Error, Result};

/// How long a temporary file of a process that is not running must have been left unmodified
/// before a write of its target removes it (see the module docs).
pub const STALE_AFTER: Duration = Duration::from_secs(60);
/// The same, where process ids cannot be checked (no `/proc`): the age alone decides.
pub const STALE_WITHOUT_PROC: Duration = Duration::from_secs(3600);

/// The counters `N` of this process's temporary files staged and not committed yet.
static IN_FLIGHT: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

/// Runs `f` on the set of writes in flight (no panic can leave the set half-changed, so a
/// poisoned lock is used as is).
fn in_flight<T>(f: impl FnOnce(&mut BTreeSet<u64>) -> T) -> T {
    f(&mut IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner))
}

/// The name prefix of the temporary files of target `name`: `.NAME.tmp-`.
fn temp_prefix(name: &str) -> String {
    format!(".{name}.tmp-")
}

/// `(PID, N)` of a temporary file name's suffix after the prefix, if it has that form.
fn temp_ids(suffix: &str) -> Option<(u32, u64)> {
    let (pid, n) = suffix.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(pid) && digits(n)).then_some(())?;
    Some((pid.parse().ok()?, n.parse().ok()?))
}

/// Whether process `pid` is running, or None where that cannot be checked.
fn process_running(pid: u32) -> Option<bool> {
    if !Path::new("/proc/self").exists() {
        return None;
    }
    Some(Path::new("/proc").join(pid.to_string()).exists())
}

/// Whether the temporary file `(pid, n)`, last modified `age` ago, is stale (module docs).
fn is_stale(pid: u32, n: u64, age: Duration) -> bool {
    if pid == std::process::id() {
        return !in_flight(|set| set.contains(&n));
    }
    match process_running(pid) {
        Some(running) => !running && age >= STALE_AFTER,
        None => age >= STALE_WITHOUT_PROC,
    }
}

/// Removes the stale temporary files of target `name` in `dir` (module docs), best effort.
fn remove_stale_temps(dir: &Path, name: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let prefix = temp_prefix(name);
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some((pid, n)) = file_name
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(temp_ids)
        else {
            continue;
        };
        let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        // A file modified "in the future" (clock skew) has age zero: not stale by age.
        let age = now.duration_since(modified).unwrap_or_default();
        if entry.file_type().is_ok_and(|t| t.is_file()) && is_stale(pid, n, age) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The folder of `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to a new temporary file beside `path` and fsyncs it; returns its path.
///
/// First removes the stale temporary files that killed writers of `path` left (module docs).
/// The file counts as a write in flight, kept by concurrent writes, until [`commit`].
pub fn stage(path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| Error::snapshot(path, "the path names no file"))?
        .to_string_lossy();
    remove_stale_temps(parent_dir(path), &name);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // Registered before the file exists, so that no concurrent write sees it unregistered.
    in_flight(|set| set.insert(n));
    let tmp = path.with_file_name(format!("{}{}-{n}", temp_prefix(&name), std::process::id()));
    let written = File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        in_flight(|set| set.remove(&n));
        return Err(Error::snapshot(
            path,
            format!("cannot write {}: {e}", tmp.display()),
        ));
    }
    Ok(tmp)
}

/// Renames a staged file over `path` and fsyncs the folder, making the new snapshot durable.
pub fn commit(staged: &Path, path: &Path) -> Result<()> {
    let renamed = fs::rename(staged, path);
    if renamed.is_err() {
        let _ = fs::remove_file(staged);
    }
    // The staged file is gone (renamed or removed): no longer a write in flight.
    let counter = staged
        .file_name()
        .and_then(|f| f.to_str())
        .and_then(|f| f.rsplit_once('-'))
        .and_then(|(_, n)| n.parse::<u64>().ok());
    if let Some(n) = counter {
        in_flight(|set| set.remove(&n));
    }
    if let Err(e) = renamed {
        return Err(Error::snapshot(
            path,
            format!("cannot rename into place: {e}"),
        ));
    }
    let dir = parent_dir(path);
    // Persist the rename itself; a folder that cannot be opened for fsync (some platforms)
    // leaves the file durable but the rename possibly not, which is the best available there.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
