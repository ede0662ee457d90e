//! `perfmap`: a map of the JIT's code for native profilers (Linux `perf`, samply), which can
//! name code in anonymous memory only from `/tmp/perf-<pid>.map`: one `START SIZE name` line
//! per code range, hexadecimal without `0x`, appended as code appears. While the profiler
//! runs, every compiled method (JVMTI CompiledMethodLoad: `com.example.Foo::bar(I)V`) and
//! every stub the VM generates (DynamicCodeGenerated: `Interpreter`, `vtable stub`, ...) gets
//! a line; at start `GenerateEvents` replays what exists already. Freed code is not removed
//! (the format has no removal; code that later reuses the range gets a line of its own).
//! One map per process: the first start of the process empties a map left by an earlier
//! process with the same pid; later starts append, and the replay of code already in the map
//! adds nothing (`map_records`), so the map holds each piece of code once however many starts.
//! The events arrive through `codemap`, on whatever thread posts them, never in a signal handler.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::map_records::LatestRecords;

/// The map of this process: open while `perfmap` is on, and what it holds across starts.
struct Map {
    file: Option<File>,
    written: LatestRecords,
    /// Whether this process opened the map before (then it is ours, and is appended to).
    opened_before: bool,
}

static MAP: Mutex<Map> = Mutex::new(Map {
    file: None,
    written: LatestRecords::new(),
    opened_before: false,
});
/// Whether lines are written (checked before taking the lock).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Whether the map is open.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

/// Where `perf` looks for the map of process `pid`.
pub fn path_of(pid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/perf-{pid}.map"))
}

/// Opens (appending) this process's map; lines are written from then on. The JVMTI events that
/// feed it are `codemap`'s. The first start of the process empties the file: one left by an
/// earlier process with this pid describes someone else's code. An error changes nothing.
pub fn open_sink() -> Result<PathBuf, String> {
    let path = path_of(std::process::id());
    let mut map = MAP.lock();
    let file = open(&path, !map.opened_before)?;
    if !map.opened_before {
        map.written.clear();
        map.opened_before = true;
    }
    map.file = Some(file);
    ACTIVE.store(true, Ordering::Release);
    Ok(path)
}

/// Stops writing and closes the map (the file stays for the tools that read it).
pub fn stop() {
    ACTIVE.store(false, Ordering::Release);
    MAP.lock().file = None;
}

/// The map file, appended to, emptied first if `empty`; refused if it is not a regular file of
/// ours (`/tmp` is shared: never follow a symlink, never write into someone else's file).
fn open(path: &PathBuf, empty: bool) -> Result<File, String> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    own_regular_file(&file, path)?;
    if empty {
        file.set_len(0)
            .map_err(|e| format!("cannot empty {}: {e}", path.display()))?;
    }
    Ok(file)
}

/// Err unless `file` (opened with `O_NOFOLLOW` from `path`) is a regular file of this user.
pub(super) fn own_regular_file(file: &File, path: &Path) -> Result<(), String> {
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
    // SAFETY: geteuid has no memory effects.
    let me = unsafe { libc::geteuid() };
    if !meta.file_type().is_file() || meta.uid() != me {
        return Err(format!(
            "{} is not a regular file of this user",
            path.display()
        ));
    }
    Ok(())
}

/// One map line: `START SIZE name`, hexadecimal, no `0x`; newlines in a name become spaces.
pub fn line(start: usize, size: usize, name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    format!("{start:x} {size:x} {name}\n")
}

/// A method as the map names it: `com.example.Foo::bar(I)V` from JVMTI's class signature
/// (`Lcom/example/Foo;`), name and descriptor.
pub fn method_name(class_signature: &str, name: &str, descriptor: &str) -> String {
    let class = class_signature
        .strip_prefix('L')
        .and_then(|c| c.strip_suffix(';'))
        .unwrap_or(class_signature)
        .replace('/', ".");
    format!("{class}::{name}{descriptor}")
}

/// Appends one line, if the map is open.
pub fn write(start: usize, size: usize, name: &str) {
    if !ACTIVE.load(Ordering::Acquire) || start == 0 || size == 0 {
        return;
    }
    let mut map = MAP.lock();
    let Map { file, written, .. } = &mut *map;
    if let Some(f) = file.as_mut() {
        if written.note(start, size, name) {
            // One write per line, on an O_APPEND file: readers never see half a line.
            let _ = f.write_all(line(start, size, name).as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_perfs_format() {
        assert_eq!(
            line(0x7f12_3400_0a00, 0x1c0, "com.example.Foo::bar(I)V"),
            "7f1234000a00 1c0 com.example.Foo::bar(I)V\n"
        );
        assert_eq!(line(0x1000, 0x10, "a\nb"), "1000 10 a b\n");
    }

    #[test]
    fn methods_are_named_with_dots_and_descriptor() {
        assert_eq!(
            method_name("Lcom/example/Foo$Bar;", "run", "()V"),
            "com.example.Foo$Bar::run()V"
        );
        assert_eq!(
            method_name("[I", "clone", "()Ljava/lang/Object;"),
            "[I::clone()Ljava/lang/Object;"
        );
    }

    #[test]
    fn a_symlink_or_foreign_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("ddprof-perfmap-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let target = dir.join("target");
        std::fs::write(&target, b"").unwrap();
        let link = dir.join("link.map");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open(&link, true).is_err(), "followed a symlink");
        assert_eq!(std::fs::metadata(&target).unwrap().len(), 0);
        let own = dir.join("own.map");
        std::fs::write(&own, b"1000 10 stale\n").unwrap();
        assert!(open(&own, false).is_ok());
        assert_eq!(
            std::fs::metadata(&own).unwrap().len(),
            14,
            "appending keeps the lines"
        );
        assert!(open(&own, true).is_ok());
        assert_eq!(
            std::fs::metadata(&own).unwrap().len(),
            0,
            "the first open empties"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
