//! The trace context a thread sets for itself (span ids, attribute ids, the wall-clock
//! filter flag), read by signal handlers interrupting that same thread through a pthread
//! key: no thread-local (its first touch from a handler could allocate), no lock.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::OnceLock;

/// Per-thread trace context. Written by its own thread (JNI), read by signal handlers
/// interrupting that same thread.
#[derive(Default)]
pub struct ThreadContext {
    pub span_id: AtomicU64,
    pub root_span_id: AtomicU64,
    /// Registered with `addThread()` (the wall-clock thread filter).
    pub filtered_in: AtomicBool,
    /// Context attribute values (AttributeValue dictionary ids; 0 = unset).
    pub attrs: [AtomicU32; MAX_ATTRIBUTES],
}

pub const MAX_ATTRIBUTES: usize = 10;

static KEY: OnceLock<libc::pthread_key_t> = OnceLock::new();

unsafe extern "C" fn free_context(p: *mut libc::c_void) {
    if !p.is_null() {
        // glibc has already set this thread's value to NULL, so a signal arriving now
        // sees no context rather than freed memory.
        // SAFETY: the pointer came from Box::into_raw in `install`.
        drop(unsafe { Box::from_raw(p as *mut ThreadContext) });
    }
}

/// Creates the pthread key. Called once at library load, outside any signal handler.
pub fn init() {
    KEY.get_or_init(|| {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: plain libc call with a valid out pointer and destructor.
        let rc = unsafe { libc::pthread_key_create(&mut key, Some(free_context)) };
        assert_eq!(rc, 0, "pthread_key_create failed");
        key
    });
}

/// The calling thread's context, if it has one. Signal-safe: a pthread key read.
#[inline]
pub fn current() -> Option<&'static ThreadContext> {
    context_for_signal()
}

/// Makes `c` the calling thread's context, freed when the thread exits. Not signal-safe:
/// the caller allocated `c`; called once per thread, before any handler reads it.
pub fn install(c: Box<ThreadContext>) -> &'static ThreadContext {
    init();
    let Some(&key) = KEY.get() else {
        return Box::leak(c);
    };
    let p = Box::into_raw(c);
    // SAFETY: key is valid; p is a leaked Box that lives until the thread's destructor
    // (free_context) runs.
    unsafe {
        libc::pthread_setspecific(key, p as *const libc::c_void);
        &*p
    }
}

/// The interrupted thread's context, if it ever set one. Signal-safe: a pthread key
/// read, no allocation.
#[inline]
pub fn context_for_signal() -> Option<&'static ThreadContext> {
    let key = *KEY.get()?;
    // SAFETY: see `install`; the handler runs on the thread owning the value.
    unsafe { (libc::pthread_getspecific(key) as *const ThreadContext).as_ref() }
}

/// The kernel thread id of the caller. Signal-safe (a raw syscall).
#[inline]
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}
