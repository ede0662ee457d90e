//! Writing recordings safely: never through a symbolic link or into anything but a regular
//! file, each write to a temporary file in the target's directory renamed into place (a
//! reader sees the old file or the new one, never a partial chunk), and chunks whose write
//! failed (ENOSPC, EIO, a vanished directory) kept, up to a bound, for the next write that
//! succeeds instead of lost. Runs under the profiler lock.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::counters::Counter;
use crate::memory::{self, Category};

/// Unwritten chunks kept at most; older ones are dropped (and counted) past it.
const MAX_UNWRITTEN_BYTES: usize = 64 << 20;

/// Chunks whose write failed, oldest first, for the next successful write.
static UNWRITTEN: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Whether chunks wait for a successful write (their pool ids then go on counting, so the
/// next chunk of the same file must not restart them).
pub fn has_unwritten() -> bool {
    !UNWRITTEN.lock().is_empty()
}

/// Refuses a path the profiler must not write: a symbolic link (dangling or not), or an
/// existing file that is not a regular one (a directory, `/dev/full`, a FIFO). Nothing
/// is touched.
pub fn check_target(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(refusal("is a symbolic link")),
        Ok(m) if m.is_dir() => Err(refusal("is a directory")),
        Ok(m) if m.file_type().is_char_device() || m.file_type().is_block_device() => {
            Err(refusal("is a device, not a regular file"))
        }
        Ok(m) if !m.is_file() => Err(refusal("is not a regular file")),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

fn refusal(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, what.to_string())
}

/// Makes `path` an empty regular file (at `start`, and for the main file after a dump).
pub fn create_empty(path: &Path) -> std::io::Result<()> {
    check_target(path)?;
    // A dump to another file empties the main one each time, and it is usually empty already:
    // a file creation and a rename saved from the dump's latency.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file() && m.len() == 0) {
        return Ok(());
    }
    replace(path, &[])
}

/// Writes `chunk` (its parts in order) to `path`, after the file's current content when
/// `append`, with any unwritten chunks first. On failure the chunk joins the unwritten ones.
pub fn write(path: &Path, chunk: &[&[u8]], append: bool) -> std::io::Result<()> {
    let _mem = memory::scope(Category::JfrBuffers);
    let mut unwritten = UNWRITTEN.lock();
    let result = check_target(path).and_then(|()| {
        let mut head = Vec::new();
        if append {
            match OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
            {
                Ok(mut f) => {
                    f.read_to_end(&mut head)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        head.extend_from_slice(&unwritten);
        let mut parts = vec![head.as_slice()];
        parts.extend_from_slice(chunk);
        replace(path, &parts)
    });
    match &result {
        Ok(()) => {
            unwritten.clear();
            unwritten.shrink_to_fit();
        }
        Err(_) => {
            Counter::RecordingWriteErrors.inc();
            keep(&mut unwritten, chunk);
        }
    }
    result
}

fn keep(unwritten: &mut Vec<u8>, chunk: &[&[u8]]) {
    let len: usize = chunk.iter().map(|p| p.len()).sum();
    if unwritten.len() + len > MAX_UNWRITTEN_BYTES {
        // Oldest first out: a reader wants the newest data most.
        Counter::RecordingChunksDropped.inc();
        unwritten.clear();
    }
    if len <= MAX_UNWRITTEN_BYTES {
        for p in chunk {
            unwritten.extend_from_slice(p);
        }
    } else {
        Counter::RecordingChunksDropped.inc();
    }
}

/// Writes `parts` in order to a new file beside `path` and renames it over `path`.
fn replace(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    let tmp = temporary_beside(path)?;
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .and_then(|mut f: File| {
            for p in parts {
                f.write_all(p)?;
            }
            f.flush()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A name in `path`'s directory that no one else uses: the rename stays on one file
/// system, so it is atomic.
fn temporary_beside(path: &Path) -> std::io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| refusal("has no file name"))?
        .to_string_lossy();
    let unique = format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    Ok(match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(unique),
        _ => PathBuf::from(unique),
    })
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
