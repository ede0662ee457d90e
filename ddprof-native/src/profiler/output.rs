//! Writing recordings safely: never through a symbolic link or into anything but a regular
//! file, each write to a temporary file in the target's directory renamed into place (a
//! reader sees the old file or the new one, never a partial chunk; the replacement keeps the
//! replaced file's mode and, where allowed, owner; the temporary name is random, so no one
//! can block it by creating it first), and chunks whose write
//! failed (ENOSPC, EIO, a vanished directory) kept, up to a bound, for the next write that
//! succeeds instead of lost. Runs under the profiler lock.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::counters::Counter;
use crate::footprint::{self, Category};

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
    let _mem = footprint::scope(Category::JfrBuffers);
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

/// Writes `parts` in order to a new file beside `path` and renames it over `path`. The new
/// file gets the replaced one's permission bits and, where this process may give them, its
/// owner and group; a new recording is created `0644` less the umask (as upstream). The
/// temporary file is `0600` until its mode is set, before any byte is written: no one
/// opens it meanwhile who could not read the finished recording.
fn replace(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    let existing = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.file_type().is_file());
    let (tmp, file) =
        create_temporary_beside(path, if existing.is_some() { 0o600 } else { 0o644 })?;
    let written = keep_mode_and_owner(&file, existing.as_ref())
        .and_then(|()| {
            let mut f = &file;
            for p in parts {
                f.write_all(p)?;
            }
            f.flush()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        // Only the file this call created: a name someone else made is never removed.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Gives `file` the permission bits of `existing` (the file it will replace) and its owner and
/// group as far as this process may: root keeps both, another user keeps the group if it is
/// one of theirs; otherwise the file stays this user's (the mode is kept all the same).
fn keep_mode_and_owner(file: &File, existing: Option<&std::fs::Metadata>) -> std::io::Result<()> {
    let Some(m) = existing else {
        return Ok(());
    };
    let fd = file.as_raw_fd();
    // SAFETY: geteuid/getegid have no memory effects.
    let (me, my_group) = unsafe { (libc::geteuid(), libc::getegid()) };
    if m.uid() != me || m.gid() != my_group {
        // SAFETY: fchown on a descriptor this call owns; no memory is passed.
        if unsafe { libc::fchown(fd, m.uid(), m.gid()) } != 0 {
            // Not root: the group alone, if it is one of ours (EPERM otherwise, ignored).
            // SAFETY: as above; uid -1 leaves the owner.
            unsafe { libc::fchown(fd, u32::MAX, m.gid()) };
        }
    }
    // After fchown, which may clear set-id bits; those are not kept anyway (a recording is
    // not a program).
    // SAFETY: fchmod on a descriptor this call owns.
    if unsafe { libc::fchmod(fd, m.mode() & 0o777) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Attempts at a fresh temporary name before giving up: another process that guesses a random
/// 64-bit name each time is not a concern; this bounds a broken random source.
const TEMPORARY_ATTEMPTS: u32 = 16;

/// Creates a new file (`O_EXCL`, never through a link) in `path`'s directory, so the rename stays
/// on one file system and is atomic, named `.<name>.<random>.tmp`: no one can predict the name
/// and make the start fail by creating it first (the directory may be shared, like `/tmp`); a
/// name that exists is retried with another.
fn create_temporary_beside(path: &Path, mode: u32) -> std::io::Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .ok_or_else(|| refusal("has no file name"))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut last = None;
    for _ in 0..TEMPORARY_ATTEMPTS {
        let tmp = dir.join(temporary_name(name.as_bytes(), random_u64()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::AlreadyExists)))
}

/// `.<name>.<16 hex digits>.tmp`, the name cut (at a byte) so that the whole fits the 255 bytes
/// a file name may have.
fn temporary_name(name: &[u8], random: u64) -> std::ffi::OsString {
    const NAME_MAX: usize = 255;
    let suffix = format!(".{random:016x}.tmp");
    let keep = name.len().min(NAME_MAX - 1 - suffix.len());
    let mut out = Vec::with_capacity(NAME_MAX);
    out.push(b'.');
    out.extend_from_slice(&name[..keep]);
    out.extend_from_slice(suffix.as_bytes());
    std::ffi::OsString::from_vec(out)
}

/// 64 bits from the kernel's random source; if it cannot give them (a kernel before 3.17), a mix
/// of the time, the pid and a counter, which is no secret but differs each time.
fn random_u64() -> u64 {
    let mut buf = [0u8; 8];
    // SAFETY: getrandom writes at most `buf.len()` bytes into `buf`.
    let got = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), libc::GRND_NONBLOCK) };
    if got == buf.len() as isize {
        return u64::from_ne_bytes(buf);
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mix = nanos ^ (u64::from(std::process::id()) << 32) ^ NEXT.fetch_add(1, Ordering::Relaxed);
    // splitmix64's finalizer: every input bit reaches every output bit.
    let mut z = mix.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
