//! `jitdump`: the JIT's code in the jitdump format of Linux perf (`perf inject --jit`), which,
//! unlike the perf map, carries the code bytes and line tables, inlined code included.
//!
//! `jit-<pid>.dump` is a 40-byte header, then records appended as code appears: for every
//! compiled method a JIT_CODE_DEBUG_INFO record (one entry per pc the VM describes: source file
//! and line of the innermost, possibly inlined, method there) immediately followed by its
//! JIT_CODE_LOAD record (name, range, code bytes); for every VM stub a JIT_CODE_LOAD alone.
//! Timestamps are CLOCK_MONOTONIC, which `perf record -k 1` uses too. `perf record` learns of
//! the file only from an executable mapping of it, so the file stays mapped (one page,
//! `PROT_READ|PROT_EXEC`, never touched) while the profiler runs. HotSpot never moves an
//! nmethod (no JIT_CODE_MOVE) and the format has no unload record: freed code stays named until
//! a later load covers the range. The facts are in docs/sources.md ("Code maps").

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::map_records::LatestRecords;
use crate::args::JitDumpDir;

/// "JiTD" as a native-endian u32: readers tell the byte order from it.
const MAGIC: u32 = 0x4A69_5444;
const VERSION: u32 = 1;
const HEADER_SIZE: usize = 40;
/// The record header: id, total size, timestamp.
const PREFIX_SIZE: usize = 16;
const JIT_CODE_LOAD: u32 = 0;
const JIT_CODE_DEBUG_INFO: u32 = 2;

/// The ELF machine of the code (`e_machine`).
#[cfg(target_arch = "x86_64")]
const ELF_MACH: u32 = 62; // EM_X86_64
#[cfg(target_arch = "aarch64")]
const ELF_MACH: u32 = 183; // EM_AARCH64
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ELF_MACH: u32 = 0; // EM_NONE

/// One line-table entry: from `addr` on, the code is `file`:`line`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebugEntry {
    pub addr: u64,
    pub line: u32,
    pub file: String,
}

/// A dump this process writes, and what it holds: kept across stops, so that a later start
/// appends to it (one `perf record` across a stop and a start sees all the code) without
/// writing again the code the replay reports and the file already names.
#[derive(Default)]
struct DumpFile {
    path: PathBuf,
    written: LatestRecords,
    /// `code_index` of the next JIT_CODE_LOAD: unique within the file, whatever the starts
    /// (`perf inject` names the code it extracts after it).
    next_index: u64,
}

struct Sink {
    file: File,
    /// The executable mapping that tells `perf record` where the file is.
    marker: usize,
    marker_len: usize,
    dump: DumpFile,
}

impl Drop for Sink {
    fn drop(&mut self) {
        // SAFETY: `marker` is the mapping `map_marker` made, of `marker_len` bytes; nothing else
        // refers to it.
        unsafe { libc::munmap(self.marker as *mut libc::c_void, self.marker_len) };
    }
}

static DUMP: Mutex<Option<Sink>> = Mutex::new(None);
/// Whether records are written (checked before any work in a callback).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The dumps this process made and is not writing now.
static DUMPS: Mutex<Vec<DumpFile>> = Mutex::new(Vec::new());
/// The directory the bare option made for this process: every later start uses it again, so
/// a process leaves one `java-jit-*` directory however many starts.
static DEFAULT_DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Whether `jitdump` is on (callbacks skip their work otherwise).
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

/// Opens this process's dump (a new one, or the one an earlier start of this process made) and
/// maps it executable. Records are written from then on; the JVMTI events that feed them are
/// `codemap`'s. On a JVM thread under the profiler lock. An error changes nothing (but a
/// default directory, once made, is kept for the next start).
pub fn open_sink(choice: &JitDumpDir) -> Result<PathBuf, String> {
    let pid = std::process::id();
    let path = directory(choice)?.join(format!("jit-{pid}.dump"));
    let earlier = DUMPS.lock().iter().position(|d| d.path == path);
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    super::perfmap::own_regular_file(&file, &path)?;
    let len = file
        .metadata()
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))?
        .len();
    // A file left by an earlier process with our pid describes someone else's code; one of ours
    // that someone emptied starts again.
    let fresh = earlier.is_none() || len == 0;
    if fresh {
        file.set_len(0)
            .and_then(|_| file.write_all(&header(ELF_MACH, pid, timestamp())))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    } else {
        let mut head = [0u8; HEADER_SIZE];
        let ours = (&file).read_exact(&mut head).is_ok() && header_pid(&head) == Some(pid);
        if !ours {
            return Err(format!(
                "{} is no longer this process's jitdump",
                path.display()
            ));
        }
    }
    let (marker, marker_len) = map_marker(&file).map_err(|e| {
        format!(
            "cannot map {} executable ({e}; perf finds the dump only through such a mapping: \
             is the directory on a noexec mount?)",
            path.display()
        )
    })?;
    let kept = earlier.map(|i| DUMPS.lock().swap_remove(i));
    let dump = match kept {
        Some(d) if !fresh => d,
        _ => DumpFile {
            path: path.clone(),
            ..DumpFile::default()
        },
    };
    *DUMP.lock() = Some(Sink {
        file,
        marker,
        marker_len,
        dump,
    });
    ACTIVE.store(true, Ordering::Release);
    Ok(path)
}

/// Stops writing, unmaps and closes the dump (the file stays for `perf inject`).
pub fn stop() {
    ACTIVE.store(false, Ordering::Release);
    let sink = DUMP.lock().take();
    if let Some(mut sink) = sink {
        DUMPS.lock().push(std::mem::take(&mut sink.dump));
    }
}

/// Appends the records of one piece of code: its debug info (if any), then its load record, with
/// nothing between them (perf pairs a debug-info record with the load that follows it).
///
/// # Safety
/// `[addr, addr + size)` is readable code for the duration of the call (JVMTI's promise for
/// the code of an event, during its callback).
pub unsafe fn write_code(name: &str, addr: usize, size: usize, debug: &[DebugEntry]) {
    if !is_active() || addr == 0 || size == 0 {
        return;
    }
    // SAFETY: as the caller promises.
    let code = unsafe { std::slice::from_raw_parts(addr as *const u8, size) };
    let tid = crate::sample::context::gettid() as u32;
    let mut guard = DUMP.lock();
    let Some(sink) = guard.as_mut() else {
        return;
    };
    // The replay of a start reports code the file names already.
    if !sink.dump.written.note(addr, size, name) {
        return;
    }
    // Timestamps taken under the lock: records are in time order, as perf inject reads them.
    let now = timestamp();
    let mut bytes = Vec::new();
    if !debug.is_empty() {
        bytes.extend_from_slice(&debug_info_record(now, addr as u64, debug));
    }
    let index = sink.dump.next_index;
    sink.dump.next_index += 1;
    bytes.extend_from_slice(&code_load_record(
        now,
        std::process::id(),
        tid,
        addr as u64,
        code,
        index,
        name,
    ));
    // One write per code: a reader never sees a debug record without its load.
    let _ = sink.file.write_all(&bytes);
}

/// The directory of the dump, created if missing: the one given, or a fresh
/// `java-jit-<yyyymmdd>.XXXXXX` under `$JITDUMPDIR/.debug/jit` (else `$HOME/.debug/jit`), as
/// perf's own JVMTI agent does, so that runs never overwrite each other; made once per process.
fn directory(choice: &JitDumpDir) -> Result<PathBuf, String> {
    let mkdir = |dir: &Path| {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))
    };
    match choice {
        JitDumpDir::Dir(d) => {
            let dir = PathBuf::from(d);
            mkdir(&dir)?;
            Ok(dir)
        }
        JitDumpDir::Default => {
            let mut default_dir = DEFAULT_DIR.lock();
            if let Some(dir) = default_dir.as_ref() {
                // Made again if someone removed it; still one directory per process.
                mkdir(dir)?;
                return Ok(dir.clone());
            }
            let base = std::env::var_os("JITDUMPDIR")
                .filter(|v| !v.is_empty())
                .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()))
                .ok_or("neither JITDUMPDIR nor HOME is set; give jitdump=DIR")?;
            let parent = PathBuf::from(base).join(".debug").join("jit");
            mkdir(&parent)?;
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0);
            let date = crate::args::format_timestamp(secs);
            let template = parent.join(format!("java-jit-{}.XXXXXX", &date[..8]));
            let template = CString::new(template.as_os_str().as_bytes())
                .map_err(|_| "the directory has a NUL byte".to_string())?;
            let mut raw = template.into_bytes_with_nul();
            // SAFETY: `raw` is a NUL-terminated template ending in XXXXXX, modified in place.
            let made = unsafe { libc::mkdtemp(raw.as_mut_ptr().cast()) };
            if made.is_null() {
                return Err(format!(
                    "cannot create a directory in {}: {}",
                    parent.display(),
                    std::io::Error::last_os_error()
                ));
            }
            raw.pop();
            let dir = PathBuf::from(std::ffi::OsStr::from_bytes(&raw));
            *default_dir = Some(dir.clone());
            Ok(dir)
        }
    }
}

/// Maps the file's first page `PROT_READ|PROT_EXEC`: `perf record` sees the mapping (an mmap
/// event with the file's name) and `perf inject --jit` reads the file it names.
fn map_marker(file: &File) -> std::io::Result<(usize, usize)> {
    // SAFETY: sysconf has no memory effects.
    let len = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    // SAFETY: a new private mapping of an open file; nothing else is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_EXEC,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok((p as usize, len))
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of `perf record -k 1` (`-k mono`).
fn timestamp() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes only `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// The file header: magic, version, header size, ELF machine, padding, pid, timestamp, flags
/// (0: timestamps are not the architecture's counter).
pub fn header(elf_mach: u32, pid: u32, timestamp: u64) -> [u8; HEADER_SIZE] {
    let mut h = [0u8; HEADER_SIZE];
    let mut w = Writer(Vec::with_capacity(HEADER_SIZE));
    w.u32(MAGIC);
    w.u32(VERSION);
    w.u32(HEADER_SIZE as u32);
    w.u32(elf_mach);
    w.u32(0);
    w.u32(pid);
    w.u64(timestamp);
    w.u64(0);
    h.copy_from_slice(&w.0);
    h
}

/// The pid of a header of ours (native byte order, our magic), `None` for anything else.
fn header_pid(h: &[u8; HEADER_SIZE]) -> Option<u32> {
    let word = |at: usize| u32::from_ne_bytes(h[at..at + 4].try_into().unwrap_or_default());
    (word(0) == MAGIC && word(4) == VERSION).then(|| word(20))
}

/// JIT_CODE_LOAD: pid, tid, vma, code address, code size, code index, NUL-terminated name, code.
pub fn code_load_record(
    timestamp: u64,
    pid: u32,
    tid: u32,
    addr: u64,
    code: &[u8],
    index: u64,
    name: &str,
) -> Vec<u8> {
    let name = c_name(name);
    let size = PREFIX_SIZE + 4 + 4 + 8 * 4 + name.len() + code.len();
    let mut w = Writer(Vec::with_capacity(size));
    w.u32(JIT_CODE_LOAD);
    w.u32(size as u32);
    w.u64(timestamp);
    w.u32(pid);
    w.u32(tid);
    // The code runs where it lies: virtual address and code address are the same.
    w.u64(addr);
    w.u64(addr);
    w.u64(code.len() as u64);
    w.u64(index);
    w.0.extend_from_slice(&name);
    w.0.extend_from_slice(code);
    w.0
}

/// JIT_CODE_DEBUG_INFO: the code's address, the entry count, then per entry its address, line,
/// discriminator (0) and NUL-terminated file name.
pub fn debug_info_record(timestamp: u64, addr: u64, entries: &[DebugEntry]) -> Vec<u8> {
    let names: Vec<Vec<u8>> = entries.iter().map(|e| c_name(&e.file)).collect();
    let size = PREFIX_SIZE + 16 + names.iter().map(|n| 16 + n.len()).sum::<usize>();
    let mut w = Writer(Vec::with_capacity(size));
    w.u32(JIT_CODE_DEBUG_INFO);
    w.u32(size as u32);
    w.u64(timestamp);
    w.u64(addr);
    w.u64(entries.len() as u64);
    for (e, name) in entries.iter().zip(&names) {
        w.u64(e.addr);
        w.u32(e.line);
        w.u32(0);
        w.0.extend_from_slice(name);
    }
    w.0
}

/// A name as the format stores it: NUL-terminated, without inner NULs.
fn c_name(name: &str) -> Vec<u8> {
    let mut v: Vec<u8> = name.bytes().filter(|&b| b != 0).collect();
    v.push(0);
    v
}

/// Native-endian fields, as the format asks (the magic tells the reader the order).
struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
    }
    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn the_header_is_perfs() {
        let h = header(62, 4242, 77);
        assert_eq!(&h[..4], &MAGIC.to_ne_bytes());
        assert_eq!(u32_at(&h, 4), 1);
        assert_eq!(u32_at(&h, 8), 40);
        assert_eq!(u32_at(&h, 12), 62);
        assert_eq!(u32_at(&h, 20), 4242);
        assert_eq!(u64_at(&h, 24), 77);
        assert_eq!(u64_at(&h, 32), 0);
        assert_eq!(header_pid(&h), Some(4242));
        assert_eq!(header_pid(&[0u8; HEADER_SIZE]), None);
    }

    #[test]
    fn a_code_load_carries_name_and_code() {
        let r = code_load_record(9, 1, 2, 0x7000, &[0x90, 0xc3], 5, "Foo::bar()V");
        assert_eq!(u32_at(&r, 0), JIT_CODE_LOAD);
        assert_eq!(u32_at(&r, 4) as usize, r.len());
        assert_eq!(u64_at(&r, 8), 9);
        assert_eq!((u32_at(&r, 16), u32_at(&r, 20)), (1, 2));
        assert_eq!((u64_at(&r, 24), u64_at(&r, 32)), (0x7000, 0x7000));
        assert_eq!((u64_at(&r, 40), u64_at(&r, 48)), (2, 5));
        assert_eq!(&r[56..68], b"Foo::bar()V\0");
        assert_eq!(&r[68..], &[0x90, 0xc3]);
    }

    #[test]
    fn debug_info_lists_entries_in_order() {
        let entries = [
            DebugEntry {
                addr: 0x7000,
                line: 10,
                file: "a/A.java".into(),
            },
            DebugEntry {
                addr: 0x7010,
                line: 3,
                file: "B.java".into(),
            },
        ];
        let r = debug_info_record(1, 0x7000, &entries);
        assert_eq!(u32_at(&r, 0), JIT_CODE_DEBUG_INFO);
        assert_eq!(u32_at(&r, 4) as usize, r.len());
        assert_eq!((u64_at(&r, 16), u64_at(&r, 24)), (0x7000, 2));
        assert_eq!(
            (u64_at(&r, 32), u32_at(&r, 40), u32_at(&r, 44)),
            (0x7000, 10, 0)
        );
        assert_eq!(&r[48..57], b"a/A.java\0");
        assert_eq!((u64_at(&r, 57), u32_at(&r, 65)), (0x7010, 3));
        assert_eq!(&r[73..], b"B.java\0");
    }

    /// One test, as it goes through the process-wide sink: a symlink in the file's place is
    /// refused and its target untouched; a directory of ours gets a header and the records.
    #[test]
    fn the_sink_refuses_symlinks_and_writes_header_then_records() {
        let dir = std::env::temp_dir().join(format!("ddprof-jitdump-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let bad = dir.join("bad");
        std::fs::create_dir_all(&bad).unwrap();
        let target = dir.join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = bad.join(format!("jit-{}.dump", std::process::id()));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let choice = JitDumpDir::Dir(bad.to_string_lossy().into_owned());
        assert!(open_sink(&choice).is_err(), "followed a symlink");
        assert!(!is_active());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");

        let good = JitDumpDir::Dir(dir.join("good").to_string_lossy().into_owned());
        let path = open_sink(&good).unwrap();
        assert!(is_active());
        let code = [0x90u8, 0x90, 0xc3];
        let entries = [DebugEntry {
            addr: code.as_ptr() as u64,
            line: 7,
            file: "a/A.java".into(),
        }];
        // SAFETY: `code` is readable for its length.
        unsafe { write_code("A::f()V", code.as_ptr() as usize, code.len(), &entries) };
        stop();
        let bytes = std::fs::read(&path).unwrap();
        let head: [u8; HEADER_SIZE] = bytes[..HEADER_SIZE].try_into().unwrap();
        assert_eq!(header_pid(&head), Some(std::process::id()));
        let debug = u32_at(&bytes, HEADER_SIZE + 4) as usize;
        assert_eq!(u32_at(&bytes, HEADER_SIZE), JIT_CODE_DEBUG_INFO);
        assert_eq!(u32_at(&bytes, HEADER_SIZE + debug), JIT_CODE_LOAD);
        assert!(bytes.ends_with(&code));

        // A second start appends to the same file; the replay of code it names adds nothing.
        assert_eq!(open_sink(&good).unwrap(), path);
        // SAFETY: as above.
        unsafe { write_code("A::f()V", code.as_ptr() as usize, code.len(), &entries) };
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        // SAFETY: as above.
        unsafe { write_code("B::g()V", code.as_ptr() as usize, code.len(), &[]) };
        stop();
        let again = std::fs::read(&path).unwrap();
        assert_eq!(&again[..bytes.len()], &bytes[..]);
        let load = &again[bytes.len()..];
        assert_eq!(u32_at(load, 0), JIT_CODE_LOAD);
        assert_eq!(u64_at(load, 48), 1, "code_index goes on across starts");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn names_lose_inner_nuls() {
        assert_eq!(c_name("a\0b"), b"ab\0");
    }
}
