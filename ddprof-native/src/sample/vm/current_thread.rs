//! The current `JavaThread*` and its `JNIEnv*`, from inside a signal handler.
//!
//! AsyncGetCallTrace needs the interrupted thread's real JNIEnv on JDK 11, where it
//! derives the thread from `env_id` (later JDKs read HotSpot's TLS and only check the
//! pointer for null). The handler may not call GetEnv, so we learn three facts once,
//! on a Java thread with JNI (docs/hotspot.md 2.2):
//! 1. HotSpot keeps `Thread::current()` in a pthread key: scan keys for the value
//!    `java.lang.Thread.eetop` (the JavaThread*) of the calling thread.
//! 2. The JNIEnv is embedded in JavaThread: `env - thread` is a constant offset.
//! 3. GC, compiler and VM threads also have a Thread* in that key: compare vtable words
//!    1, 3 and 5 with a JavaThread's (two must match), so we never hand AGCT one.

use std::sync::OnceLock;

use jni::sys::JNIEnv;

use crate::sample::load_census::Site;
use crate::sample::safe_access::load_usize_at;

/// The current thread's fields, for the load census.
#[inline]
fn load_usize(addr: usize) -> Option<usize> {
    load_usize_at(Site::Thread, addr)
}

#[derive(Debug)]
struct Layout {
    key: libc::pthread_key_t,
    env_offset: usize,
    vtable: [usize; 6],
}

static LAYOUT: OnceLock<Option<Layout>> = OnceLock::new();

/// Learns the layout from the calling Java thread. Not signal-safe; idempotent.
/// Returns a reason when the facts could not be established.
/// Only the first call probes: it alone returns the reason of a failure (for the log);
/// later calls fail with `None`.
pub fn init(jni: *mut JNIEnv) -> Result<(), Option<String>> {
    let mut reason = None;
    let layout = LAYOUT.get_or_init(|| probe(jni).map_err(|e| reason = Some(e)).ok());
    match layout {
        Some(_) => Ok(()),
        None => Err(reason),
    }
}

fn probe(jni: *mut JNIEnv) -> Result<Layout, String> {
    // SAFETY: `jni` is the calling thread's env; the sequence below is plain JNI.
    let thread = unsafe {
        let env = &**jni;
        let find_class = env.FindClass.ok_or("no FindClass")?;
        let class = find_class(jni, c"java/lang/Thread".as_ptr());
        if class.is_null() {
            (env.ExceptionClear.ok_or("no ExceptionClear")?)(jni);
            return Err("java/lang/Thread not found".into());
        }
        let current = (env.GetStaticMethodID.ok_or("no GetStaticMethodID")?)(
            jni,
            class,
            c"currentThread".as_ptr(),
            c"()Ljava/lang/Thread;".as_ptr(),
        );
        let eetop =
            (env.GetFieldID.ok_or("no GetFieldID")?)(jni, class, c"eetop".as_ptr(), c"J".as_ptr());
        if current.is_null() || eetop.is_null() {
            (env.ExceptionClear.ok_or("no ExceptionClear")?)(jni);
            (env.DeleteLocalRef.ok_or("no DeleteLocalRef")?)(jni, class);
            return Err("java.lang.Thread.eetop not found".into());
        }
        let obj = (env
            .CallStaticObjectMethodA
            .ok_or("no CallStaticObjectMethodA")?)(
            jni, class, current, std::ptr::null()
        );
        let value = (env.GetLongField.ok_or("no GetLongField")?)(jni, obj, eetop);
        (env.DeleteLocalRef.ok_or("no DeleteLocalRef")?)(jni, obj);
        (env.DeleteLocalRef.ok_or("no DeleteLocalRef")?)(jni, class);
        value as usize
    };
    if thread == 0 {
        return Err("eetop is 0".into());
    }
    // The C library's own key count: glibc checks a key against its 1024, but musl indexes
    // its 128-entry array unchecked, so a larger bound would read past it.
    // SAFETY: sysconf has no preconditions.
    let keys = match unsafe { libc::sysconf(libc::_SC_THREAD_KEYS_MAX) } {
        n if n > 0 => n.min(1024) as u32,
        _ => 128, // POSIX's minimum, _POSIX_THREAD_KEYS_MAX
    };
    let key = (0..keys)
        // SAFETY: pthread_getspecific on keys below the library's key count only reads the
        // calling thread's key array.
        .find(
            |&k| unsafe { libc::pthread_getspecific(k as libc::pthread_key_t) } as usize == thread,
        )
        .ok_or("no pthread key holds the current JavaThread")?;
    let env_offset = (jni as usize)
        .checked_sub(thread)
        .filter(|o| *o < 8192)
        .ok_or("JNIEnv is not inside JavaThread")?;
    // SAFETY: `thread` is the live JavaThread of the calling thread; its first word is
    // the vtable pointer and every Thread vtable has more than six entries.
    let vtable = unsafe {
        let vt = *(thread as *const *const usize);
        std::array::from_fn(|i| *vt.add(i))
    };
    Ok(Layout {
        key: key as libc::pthread_key_t,
        env_offset,
        vtable,
    })
}

/// The interrupted thread's `JavaThread*` if it is a plain JavaThread; None for native,
/// GC, compiler and VM threads, or when `init` failed. Signal-safe.
#[link_section = sample_path_section!()]
pub fn java_thread() -> Option<usize> {
    let layout = LAYOUT.get()?.as_ref()?;
    // SAFETY: pthread_getspecific is a TLS array read of the calling thread.
    let thread = unsafe { libc::pthread_getspecific(layout.key) } as usize;
    if thread == 0 {
        return None;
    }
    // A thread being torn down may still have its key set: read the object and its
    // vtable through the crash-protected loads.
    let vt = load_usize(thread)?;
    let matches = [1usize, 3, 5]
        .iter()
        .filter(|&&i| load_usize(vt.wrapping_add(i * 8)) == layout.vtable.get(i).copied())
        .count();
    (matches >= 2).then_some(thread)
}

/// The interrupted thread's `JavaThread*` for the steps of one sample (its mode, its walk):
/// looked up once by the handler ([`java_thread`]: a TLS read and four protected loads,
/// three of them in libjvm's vtables, cold lines at a 10 ms interval), or left to each step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Not looked up: a step that needs it calls [`java_thread`].
    Later,
    /// What [`java_thread`] answered in this handler (None: not a plain JavaThread).
    Done(Option<usize>),
}

impl Lookup {
    /// Looks the thread up now. Signal-safe.
    pub fn now() -> Lookup {
        Lookup::Done(java_thread())
    }

    /// The `JavaThread*`, looked up now if it was not. Signal-safe.
    pub fn java_thread(self) -> Option<usize> {
        match self {
            Lookup::Done(t) => t,
            Lookup::Later => java_thread(),
        }
    }
}

/// The interrupted thread's HotSpot `Thread*` of any kind (Java, compiler, GC, VM), not
/// checked: only for fields every `Thread` has (its stack bounds), read through
/// crash-protected loads. None for threads HotSpot did not create or attach. Signal-safe.
pub fn any_thread() -> Option<usize> {
    let layout = LAYOUT.get()?.as_ref()?;
    // SAFETY: pthread_getspecific is a TLS array read of the calling thread.
    let thread = unsafe { libc::pthread_getspecific(layout.key) } as usize;
    (thread != 0).then_some(thread)
}

/// The interrupted thread's JNIEnv (see `java_thread`). Signal-safe.
pub fn jni_env() -> Option<*mut JNIEnv> {
    let layout = LAYOUT.get()?.as_ref()?;
    java_thread().map(|t| (t + layout.env_offset) as *mut JNIEnv)
}

/// Whether the layout is known (for status and tests).
pub fn available() -> bool {
    matches!(LAYOUT.get(), Some(Some(_)))
}
