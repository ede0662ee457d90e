//! Making the jmethodIDs of sampled classes after the dump, on a thread of our own.
//!
//! A dump that accepts a frame of a class with no jmethodIDs names it from the metadata
//! it has just checked (`resolve.rs`), so the chunk does not need the IDs. The IDs are for
//! the samples to come: once a class has them, its frames are recorded with real IDs. Making
//! them (JVMTI GetClassMethods: one ID per method, each under HotSpot's
//! `JmethodIdCreation_lock`, and every method's metadata walked) costs about 3 µs per class
//! of 21 methods, which made the first lazy dump of ~2,000 sampled classes ~1.7x as long as
//! a preloading one. So the dump queues the class here, and after the chunk is written this
//! thread makes the IDs: the dump returns sooner, the CPU is spent the same.
//!
//! The queue holds a class as (`Klass*`, trace ID) seen in the dump, never a reference:
//! the thread pins it again through the registry and makes IDs only if the pinned class
//! still has that trace ID (otherwise it unloaded and the `Klass*` now belongs to another
//! class, which gets no IDs from here). GetClassMethods on a pinned class is safe whatever
//! happened meanwhile (a redefinition included).
//!
//! If the thread cannot be started or attached, [`request`] says so and the dump makes the
//! IDs itself, as before.

// JNI handles are opaque tokens the JVM validates.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::sync::atomic::{AtomicU8, Ordering};

use jni::sys::{jclass, JNIEnv, JavaVMAttachArgs, JNI_OK, JNI_VERSION_1_6};
use parking_lot::{Condvar, Mutex};

use super::JniRefs;
use crate::counters::Counter;
use crate::jvmti;
use crate::methods::word_map::WordMap;
use crate::sample::vm::trace_id;

/// The thread's state.
const NOT_STARTED: u8 = 0;
const RUNNING: u8 = 1;
const FAILED: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(NOT_STARTED);

#[derive(Default)]
struct Queue {
    /// Classes to give IDs, oldest first.
    pending: Vec<(usize, u64)>,
    /// The same classes, by `Klass*` (a class is queued once until served).
    queued: Option<WordMap<usize, u64>>,
    /// Whether the thread may start on `pending` (set after each dump is written).
    ready: bool,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    pending: Vec::new(),
    queued: None,
    ready: false,
});
static WAKE: Condvar = Condvar::new();

/// Answer of [`request`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requested {
    Queued,
    /// Queued by an earlier dump and not served yet.
    AlreadyQueued,
    /// The thread is unavailable: the caller makes the IDs itself.
    Unavailable,
}

/// Queues the class at `klass`, whose trace ID the dump read after pinning it.
pub fn request(klass: usize, trace_id: u64) -> Requested {
    if !ensure_started() {
        return Requested::Unavailable;
    }
    let mut q = QUEUE.lock();
    let queued = q.queued.get_or_insert_with(WordMap::default);
    if queued.get(&klass) == Some(&trace_id) {
        return Requested::AlreadyQueued;
    }
    queued.insert(klass, trace_id);
    q.pending.push((klass, trace_id));
    Requested::Queued
}

/// Lets the thread work through what the dump queued. Called once the chunk is written, so
/// that the thread does not compete with the dump for a CPU.
pub fn release() {
    if STATE.load(Ordering::Acquire) != RUNNING {
        return;
    }
    let mut q = QUEUE.lock();
    if !q.pending.is_empty() {
        q.ready = true;
        WAKE.notify_one();
    }
}

/// Forgets what is queued and not yet taken by the thread (at `stop`: no sample follows,
/// so those IDs would serve nobody).
pub fn discard() {
    let mut q = QUEUE.lock();
    q.pending.clear();
    q.queued = None;
    q.ready = false;
}

/// Starts the thread the first time; false if it could not start or attach.
fn ensure_started() -> bool {
    match STATE.load(Ordering::Acquire) {
        RUNNING => return true,
        FAILED => return false,
        _ => {}
    }
    static START: Mutex<()> = Mutex::new(());
    let _guard = START.lock();
    if STATE.load(Ordering::Acquire) != NOT_STARTED {
        return STATE.load(Ordering::Acquire) == RUNNING;
    }
    let (tx, rx) = std::sync::mpsc::channel::<bool>();
    let spawned = std::thread::Builder::new()
        .name("ddprof-lazy-ids".into())
        .spawn(move || {
            let jni = attach();
            let _ = tx.send(jni.is_some());
            if let Some(jni) = jni {
                serve(jni);
            }
        });
    // The thread says whether it attached; until then no request is accepted. The dump
    // waits on it holding the profiler's lock, so not for ever (an attach during VM exit).
    let ok = spawned.is_ok()
        && rx
            .recv_timeout(std::time::Duration::from_secs(1))
            .unwrap_or(false);
    STATE.store(if ok { RUNNING } else { FAILED }, Ordering::Release);
    if !ok {
        crate::log::warn("lazy mode: the jmethodID thread could not start; dumps make the IDs");
    }
    ok
}

/// Attaches the current thread to the JVM as a daemon; its JNIEnv.
fn attach() -> Option<*mut JNIEnv> {
    let vm = crate::vm::java_vm();
    if vm.is_null() {
        return None;
    }
    let mut args = JavaVMAttachArgs {
        version: JNI_VERSION_1_6,
        name: c"ddprof-lazy-ids".as_ptr() as *mut _,
        group: std::ptr::null_mut(),
    };
    let mut env: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: `vm` is the process's JavaVM (set at load); the arguments live across the
    // call; a daemon thread does not keep the JVM from exiting.
    let rc = unsafe {
        let f = (**vm).AttachCurrentThreadAsDaemon?;
        f(
            vm,
            &mut env,
            &mut args as *mut JavaVMAttachArgs as *mut std::ffi::c_void,
        )
    };
    (rc == JNI_OK && !env.is_null()).then_some(env as *mut JNIEnv)
}

/// The thread's loop: wait for a released batch, make its IDs, forget it. Never returns
/// (the thread is a daemon; it ends with the process).
fn serve(jni: *mut JNIEnv) {
    let _mem = crate::memory::scope(crate::memory::Category::MethodMap);
    loop {
        let batch = {
            let mut q = QUEUE.lock();
            while !q.ready || q.pending.is_empty() {
                WAKE.wait(&mut q);
            }
            q.ready = false;
            std::mem::take(&mut q.pending)
        };
        for &(klass, id) in &batch {
            make_ids(jni, klass, id);
        }
        let mut q = QUEUE.lock();
        if let Some(queued) = q.queued.as_mut() {
            for (klass, id) in &batch {
                // A newer request for a reused Klass* (another trace ID) stays queued.
                if queued.get(klass) == Some(id) {
                    queued.remove(klass);
                }
            }
        }
    }
}

fn make_ids(jni: *mut JNIEnv, klass: usize, id: u64) {
    let Some(jvmti) = crate::vm::jvmti() else {
        return;
    };
    // Unloaded meanwhile: nothing to do.
    let Some(class) = super::registry().pin(&JniRefs(jni), klass) else {
        return;
    };
    if trace_id::trace_id(klass) == Some(id) {
        if let Ok(n) = jvmti.load_method_ids(class as jclass) {
            Counter::MethodResolveLazyIdsCreated.add(n as i64);
        }
    }
    jvmti::delete_local_ref(jni, class as jclass);
}
