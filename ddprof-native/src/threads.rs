//! What the profiler knows per thread: thread names and Java ids for the JFR thread pool
//! (filled at ThreadStart and registration, refreshed at every dump and at ThreadEnd, else
//! from /proc at dump), and the creation and end of a thread's trace context (the context
//! itself, read by signal handlers, is `crate::sample::context`; docs/context.md).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use jni::sys::JNIEnv;
use parking_lot::Mutex;

use crate::counters::Counter;
use crate::footprint::{self, Category};
use crate::sample::context::{self, ThreadContext};

/// Creates the pthread key of the thread contexts. Once, at library load.
pub fn init_contexts() {
    context::init(end_context);
}

/// The key's destructor, at thread exit: the exported TLS slot stops pointing at the record,
/// then the context is freed. glibc has already set the thread's key value to NULL, so a
/// signal arriving now sees no context rather than freed memory; TLS is still in place (it
/// is torn down after the key destructors).
unsafe extern "C" fn end_context(p: *mut libc::c_void) {
    if p.is_null() {
        return;
    }
    let c = p as *mut ThreadContext;
    // SAFETY: p came from Box::into_raw in `current_context` and is freed only here.
    if unsafe { (*c).published.load(Ordering::Relaxed) } {
        crate::context::otel_tls::publish(std::ptr::null());
    }
    // SAFETY: as above.
    crate::context::thread_filter::release(unsafe { &*c });
    // SAFETY: as above; nothing reaches the context any more (key value cleared, TLS slot
    // cleared).
    drop(unsafe { Box::from_raw(c) });
}

/// The calling thread's context, created on first use, its record published in the exported
/// TLS slot `otel_thread_ctx_v1` on creation. Not signal-safe (allocates, touches TLS): JNI
/// calls only. None only if the key could not be created.
pub fn current_context() -> Option<&'static ThreadContext> {
    if let Some(c) = context::current() {
        return Some(c);
    }
    let c = {
        let _mem = footprint::scope(Category::ThreadInfo);
        Box::<ThreadContext>::default()
    };
    let c = context::install(c)?;
    crate::context::otel_tls::publish(&c.record as *const _ as *const libc::c_void);
    c.published.store(true, Ordering::Relaxed);
    Some(c)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadName {
    pub name: String,
    /// None for threads not known to be Java threads.
    pub java_id: Option<i64>,
}

struct Entry {
    name: ThreadName,
    /// Dump epoch at which the thread ended; the entry is kept until a chunk that may
    /// hold its samples has been written.
    ended_at: Option<u64>,
    /// A thread that started on the same tid before the ended one was written (the
    /// launcher's main thread re-attaches as "DestroyJavaVM"); it takes over at `prune`,
    /// with its own end if it ended too.
    successor: Option<(ThreadName, Option<u64>)>,
}

static NAMES: OnceLock<Mutex<HashMap<i32, Entry>>> = OnceLock::new();

fn names() -> &'static Mutex<HashMap<i32, Entry>> {
    NAMES.get_or_init(|| Mutex::new(HashMap::new()))
}

fn publish_counts(map: &HashMap<i32, Entry>) {
    Counter::ThreadNamesCount.set(map.len() as i64);
    Counter::ThreadIdsCount.set(map.len() as i64);
}

fn java_thread(name: String, java_id: i64) -> ThreadName {
    ThreadName {
        name,
        java_id: Some(java_id),
    }
}

/// Records the name of a Java thread (ThreadStart, or a thread calling into the API).
pub fn register_java_thread(tid: i32, name: String, java_id: i64) {
    let _mem = footprint::scope(Category::ThreadInfo);
    let name = java_thread(name, java_id);
    let mut map = names().lock();
    match map.get_mut(&tid) {
        // Samples of the ended thread are not written yet: within this chunk the tid
        // keeps its first name.
        Some(e) if e.ended_at.is_some() => e.successor = Some((name, None)),
        _ => {
            map.insert(
                tid,
                Entry {
                    name,
                    ended_at: None,
                    successor: None,
                },
            );
        }
    }
    publish_counts(&map);
}

/// The current name of a live Java thread, read at a dump: a thread renamed since it was
/// registered, or one that existed before the library loaded (no ThreadStart). Only the
/// entry of that same Java thread (by id) is touched: the thread may have ended and its
/// tid been reused since it was read.
fn refresh(map: &mut HashMap<i32, Entry>, tid: i32, name: String, java_id: i64) {
    let same = |n: &ThreadName| n.java_id.is_none_or(|id| id == java_id);
    match map.get_mut(&tid) {
        None => {
            map.insert(
                tid,
                Entry {
                    name: java_thread(name, java_id),
                    ended_at: None,
                    successor: None,
                },
            );
        }
        Some(e) if e.ended_at.is_none() => {
            if same(&e.name) {
                e.name = java_thread(name, java_id);
            }
        }
        Some(e) => {
            if let Some((next, None)) = &mut e.successor {
                if same(next) {
                    *next = java_thread(name, java_id);
                }
            }
        }
    }
}

/// Reads the current name and Java id of every live Java thread among `tids` (the threads a
/// chunk names), as upstream does at every dump: a thread renamed after it started is written
/// with the name it has at the dump, and a thread that existed before the library loaded gets
/// its Java id. Threads are matched to tids through their `eetop` (`jvmti::thread_tid::tid_of`); on a VM
/// without that layout nothing changes. JNI and JVMTI: the dumping thread only.
// A JNIEnv is an opaque token the JVM validates, as in `vm`.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn refresh_java_threads(jni: *mut JNIEnv, tids: &[i64]) {
    let Some(jvmti) = crate::jvmti::jvm::jvmti() else {
        return;
    };
    if jni.is_null() || tids.is_empty() {
        return;
    }
    if !crate::jvmti::push_local_frame(jni, 16) {
        return;
    }
    let _mem = footprint::scope(Category::ThreadInfo);
    let threads = jvmti.all_threads(jni);
    let mut found = Vec::new();
    {
        // SAFETY: jni is the current thread's env.
        if let Ok(mut env) = unsafe { jni::JNIEnv::from_raw(jni) } {
            for &t in &threads {
                // SAFETY: a live local reference to a java.lang.Thread, from GetAllThreads.
                let obj = unsafe { jni::objects::JObject::from_raw(t) };
                let Some(tid) = crate::jvmti::thread_tid::tid_of(&mut env, &obj) else {
                    continue;
                };
                if tids.binary_search(&i64::from(tid)).is_err() {
                    continue;
                }
                if let Some((name, id)) = crate::jvmti::jvm::describe_thread(jvmti, jni, t) {
                    found.push((tid, name, id));
                }
            }
        }
    }
    crate::jvmti::pop_local_frame(jni);
    let mut map = names().lock();
    for (tid, name, id) in found {
        refresh(&mut map, tid, name, id);
    }
    publish_counts(&map);
}

/// Names threads for a dump: `comm` is opened relative to one descriptor of
/// `/proc/self/task` and read in one call, where opening `/proc/self/task/N/comm` and reading
/// it whole took twice as long (~11 µs a thread here, against ~4.5). The descriptor is opened
/// at the first unregistered thread and closed with the `Namer`: none outlives the dump.
#[derive(Default)]
pub struct Namer {
    tasks: std::cell::OnceCell<Option<std::fs::File>>,
}

impl Namer {
    pub fn new() -> Namer {
        Namer::default()
    }

    /// The best name known for `tid`: a registered Java name, else the kernel's `comm`
    /// (HotSpot copies the first 15 bytes of a Java thread's name there), else `[tid=N]`.
    pub fn name_of(&self, tid: i32) -> ThreadName {
        if let Some(e) = names().lock().get(&tid) {
            return e.name.clone();
        }
        ThreadName {
            name: self.comm(tid).unwrap_or_else(|| format!("[tid={tid}]")),
            java_id: None,
        }
    }

    /// `tid`'s `comm`, without its newline.
    fn comm(&self, tid: i32) -> Option<String> {
        use std::os::fd::AsRawFd;
        let dir = self
            .tasks
            .get_or_init(|| std::fs::File::open("/proc/self/task").ok())
            .as_ref()?
            .as_raw_fd();
        let path = std::ffi::CString::new(format!("{tid}/comm")).ok()?;
        // comm is at most 15 bytes and a newline.
        let mut buf = [0u8; 64];
        // SAFETY: openat/read/close on a descriptor we own, a NUL-terminated path and a
        // buffer of the length given.
        let n = unsafe {
            let fd = libc::openat(dir, path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return None;
            }
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            libc::close(fd);
            usize::try_from(n).ok()?
        };
        let name = String::from_utf8_lossy(buf.get(..n)?)
            .trim_end()
            .to_string();
        (!name.is_empty()).then_some(name)
    }
}

/// A Java thread ends (ThreadEnd) at dump epoch `epoch`, named as it is now (`name`, None if
/// it could not be read); its name stays until `prune`. A thread unknown so far (it existed
/// before the library loaded) is recorded here, so that the samples it left are named.
pub fn ended(tid: i32, epoch: u64, name: Option<(String, i64)>) {
    let _mem = footprint::scope(Category::ThreadInfo);
    let mut map = names().lock();
    match map.get_mut(&tid) {
        Some(e) if e.ended_at.is_none() => {
            if let Some((name, id)) = name {
                e.name = java_thread(name, id);
            }
            e.ended_at = Some(epoch);
        }
        // The successor ends before the first thread's samples are written.
        Some(e) => {
            if let Some((next, end)) = &mut e.successor {
                if let Some((name, id)) = name {
                    *next = java_thread(name, id);
                }
                *end = Some(epoch);
            }
        }
        None => {
            if let Some((name, id)) = name {
                map.insert(
                    tid,
                    Entry {
                        name: java_thread(name, id),
                        ended_at: Some(epoch),
                        successor: None,
                    },
                );
            }
        }
    }
    publish_counts(&map);
}

/// Drops threads that ended before dump epoch `epoch` began (their samples are written).
pub fn prune(epoch: u64) {
    let mut map = names().lock();
    map.retain(|_, e| {
        while e.ended_at.is_some_and(|at| at < epoch) {
            let Some((next, end)) = e.successor.take() else {
                return false;
            };
            e.name = next;
            e.ended_at = end;
        }
        true
    });
    publish_counts(&map);
}

/// Starts one of the profiler's own threads, named `name`: marked first thing as the
/// profiler's, so native memory sampling never records its allocations (what the spawn does
/// before the mark is below this library's code, which the sampler drops too). Every thread
/// the profiler starts goes through here.
pub fn spawn_own<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            crate::sample::nativemem::mark_own_thread();
            f()
        })
}

/// Every thread of this process, from /proc/self/task, read with `getdents64` into a buffer on
/// the stack. Not `std::fs::read_dir`: glibc's `opendir` mallocs a 32 KiB buffer through
/// libc's own import slot, which `nativemem` hooks, and the wall sampler calls this at every
/// period (with `filter=`).
pub fn all_tids() -> Vec<i32> {
    let mut tids = Vec::new();
    // SAFETY: open of a NUL-terminated path; the descriptor is ours and closed below.
    let fd = unsafe {
        libc::open(
            c"/proc/self/task".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return tids;
    }
    // linux_dirent64 records are 8-byte aligned within the buffer.
    #[repr(C, align(8))]
    struct Buf([u8; 4096]);
    let mut buf = Buf([0; 4096]);
    loop {
        // SAFETY: getdents64 writes at most the buffer's length into it.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.0.as_mut_ptr(), buf.0.len()) };
        let Ok(n) = usize::try_from(n) else { break };
        if n == 0 {
            break;
        }
        let mut at = 0;
        // Each record: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name (NUL-terminated).
        while let Some(rec) = buf.0.get(at..n) {
            let Some(len) = rec
                .get(16..18)
                .map(|b| u16::from_ne_bytes([b[0], b[1]]) as usize)
            else {
                break;
            };
            if len == 0 {
                break;
            }
            let name = rec.get(19..len.min(rec.len())).unwrap_or(&[]);
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            if let Some(tid) = std::str::from_utf8(name).ok().and_then(|s| s.parse().ok()) {
                tids.push(tid);
            }
            at += len;
        }
    }
    // SAFETY: our descriptor, closed once.
    unsafe { libc::close(fd) };
    tids
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `prune` is global: tests that end threads and prune run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn ended_thread_keeps_its_name_until_pruned_then_successor_takes_over() {
        let _serial = SERIAL.lock();
        let tid = 1_000_001;
        register_java_thread(tid, "main".into(), 1);
        ended(tid, 5, None);
        register_java_thread(tid, "DestroyJavaVM".into(), 2);
        assert_eq!(Namer::new().name_of(tid).name, "main");
        prune(5);
        assert_eq!(Namer::new().name_of(tid).name, "main", "not yet written");
        prune(6);
        assert_eq!(Namer::new().name_of(tid).name, "DestroyJavaVM");
        ended(tid, 6, None);
        prune(7);
        assert!(!names().lock().contains_key(&tid));
    }

    #[test]
    fn all_tids_lists_this_processs_threads() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            tx.send(crate::sample::context::gettid()).unwrap();
            done_rx.recv().unwrap();
        });
        let other = rx.recv().unwrap();
        let tids = all_tids();
        let from_std: Vec<i32> = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        done_tx.send(()).unwrap();
        h.join().unwrap();
        assert!(tids.contains(&crate::sample::context::gettid()), "{tids:?}");
        assert!(tids.contains(&other), "{tids:?}");
        assert!(!tids.contains(&0), "{tids:?}");
        // Other tests' threads come and go meanwhile: the two lists share these two at least.
        assert!(from_std.contains(&other), "{from_std:?}");
    }

    #[test]
    fn a_refresh_renames_the_same_java_thread_and_names_an_unknown_one() {
        let _serial = SERIAL.lock();
        let (renamed, unknown) = (1_000_011, 1_000_012);
        register_java_thread(renamed, "before".into(), 41);
        {
            let mut map = names().lock();
            refresh(&mut map, renamed, "after".into(), 41);
            refresh(&mut map, unknown, "pre-existing".into(), 42);
        }
        let namer = Namer::new();
        assert_eq!(namer.name_of(renamed), java_thread("after".into(), 41));
        assert_eq!(
            namer.name_of(unknown),
            java_thread("pre-existing".into(), 42)
        );
        for tid in [renamed, unknown] {
            ended(tid, 1, None);
        }
        prune(2);
    }

    #[test]
    fn a_refresh_leaves_another_java_threads_entry_alone() {
        let _serial = SERIAL.lock();
        let tid = 1_000_021;
        register_java_thread(tid, "live".into(), 51);
        // Read before thread 50 ended and the tid went to thread 51.
        refresh(&mut names().lock(), tid, "stale".into(), 50);
        assert_eq!(Namer::new().name_of(tid).name, "live");
        ended(tid, 3, None);
        register_java_thread(tid, "next".into(), 52);
        refresh(&mut names().lock(), tid, "ended".into(), 51);
        refresh(&mut names().lock(), tid, "next renamed".into(), 52);
        assert_eq!(Namer::new().name_of(tid).name, "live", "this chunk's name");
        prune(4);
        assert_eq!(
            Namer::new().name_of(tid),
            java_thread("next renamed".into(), 52)
        );
        ended(tid, 4, None);
        prune(5);
    }

    #[test]
    fn a_thread_ending_is_named_as_it_is_then_and_a_successor_that_ends_goes_too() {
        let _serial = SERIAL.lock();
        let tid = 1_000_031;
        // Unknown until its end: a thread that existed before the library loaded.
        ended(tid, 7, Some(("old-timer".into(), 61)));
        assert_eq!(
            Namer::new().name_of(tid),
            java_thread("old-timer".into(), 61)
        );
        register_java_thread(tid, "successor".into(), 62);
        ended(tid, 8, Some(("successor renamed".into(), 62)));
        prune(8);
        assert_eq!(Namer::new().name_of(tid).name, "successor renamed");
        prune(9);
        assert!(!names().lock().contains_key(&tid));
    }

    #[test]
    fn unregistered_threads_are_named_by_their_comm() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::Builder::new()
            .name("ddprof-comm-probe".into())
            .spawn(move || {
                tx.send(crate::sample::context::gettid()).unwrap();
                done_rx.recv().unwrap();
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        let namer = Namer::new();
        // comm keeps the first 15 bytes.
        assert_eq!(namer.name_of(tid).name, "ddprof-comm-pro");
        assert_eq!(namer.name_of(tid).java_id, None);
        done_tx.send(()).unwrap();
        h.join().unwrap();
        // join returns when the thread clears its tid, which the kernel does before it removes the
        // task from /proc: wait for that (a busy host makes the gap long enough to see).
        let task = std::path::PathBuf::from(format!("/proc/self/task/{tid}"));
        for _ in 0..10_000 {
            if !task.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(namer.name_of(tid).name, format!("[tid={tid}]"), "gone");
    }
}
