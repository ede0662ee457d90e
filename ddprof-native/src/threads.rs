//! What the profiler knows per thread: thread names for the JFR thread pool (filled at
//! ThreadStart, at registration, or from /proc at dump), and the creation and end of a
//! thread's trace context (the context itself, read by signal handlers, is
//! `crate::sample::context`; docs/context.md).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::counters::Counter;
use crate::memory::{self, Category};
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
        crate::otel_tls::publish(std::ptr::null());
    }
    // SAFETY: as above.
    crate::thread_filter::release(unsafe { &*c });
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
        let _mem = memory::scope(Category::ThreadInfo);
        Box::<ThreadContext>::default()
    };
    let c = context::install(c)?;
    crate::otel_tls::publish(&c.record as *const _ as *const libc::c_void);
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
    /// launcher's main thread re-attaches as "DestroyJavaVM"); it takes over at `prune`.
    successor: Option<ThreadName>,
}

static NAMES: OnceLock<Mutex<HashMap<i32, Entry>>> = OnceLock::new();

fn names() -> &'static Mutex<HashMap<i32, Entry>> {
    NAMES.get_or_init(|| Mutex::new(HashMap::new()))
}

fn publish_counts(map: &HashMap<i32, Entry>) {
    Counter::ThreadNamesCount.set(map.len() as i64);
    Counter::ThreadIdsCount.set(map.len() as i64);
}

/// Records the name of a Java thread (ThreadStart, or a thread calling into the API).
pub fn register_java_thread(tid: i32, name: String, java_id: i64) {
    let _mem = memory::scope(Category::ThreadInfo);
    let name = ThreadName {
        name,
        java_id: Some(java_id),
    };
    let mut map = names().lock();
    match map.get_mut(&tid) {
        // Samples of the ended thread are not written yet: within this chunk the tid
        // keeps its first name.
        Some(e) if e.ended_at.is_some() => e.successor = Some(name),
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

/// The best name known for `tid`: a registered Java name, else the kernel's `comm`
/// (HotSpot copies the first 15 bytes of a Java thread's name there), else `[tid=N]`.
pub fn name_of(tid: i32) -> ThreadName {
    if let Some(e) = names().lock().get(&tid) {
        return e.name.clone();
    }
    let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok();
    ThreadName {
        name: comm
            .map(|s| s.trim_end().to_string())
            .unwrap_or_else(|| format!("[tid={tid}]")),
        java_id: None,
    }
}

/// Marks a thread as ended at dump epoch `epoch`; its name stays until `prune`.
pub fn ended(tid: i32, epoch: u64) {
    if let Some(e) = names().lock().get_mut(&tid) {
        e.ended_at = Some(epoch);
    }
}

/// Drops threads that ended before dump epoch `epoch` began (their samples are written).
pub fn prune(epoch: u64) {
    let mut map = names().lock();
    map.retain(|_, e| match e.ended_at {
        Some(at) if at < epoch => match e.successor.take() {
            Some(next) => {
                e.name = next;
                e.ended_at = None;
                true
            }
            None => false,
        },
        _ => true,
    });
    publish_counts(&map);
}

/// Every thread of this process, from /proc/self/task.
pub fn all_tids() -> Vec<i32> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_thread_keeps_its_name_until_pruned_then_successor_takes_over() {
        let tid = 1_000_001;
        register_java_thread(tid, "main".into(), 1);
        ended(tid, 5);
        register_java_thread(tid, "DestroyJavaVM".into(), 2);
        assert_eq!(name_of(tid).name, "main");
        prune(5);
        assert_eq!(name_of(tid).name, "main", "not yet written");
        prune(6);
        assert_eq!(name_of(tid).name, "DestroyJavaVM");
        ended(tid, 6);
        prune(7);
        assert!(!names().lock().contains_key(&tid));
    }
}
