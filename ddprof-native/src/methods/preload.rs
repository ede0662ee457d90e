//! Which classes get their jmethodIDs created up front (GetClassMethods), by mode:
//! - `fjmethodid=true` (preload): every class, at start and at ClassPrepare.
//! - `fjmethodid=false` (partial, needs the VM walker): only classes that can unload
//!   (custom loaders, hidden classes, lambdas). Classes of the boot, platform and
//!   application loaders never unload, so their frames are kept as raw `Method*` and
//!   named from metadata at dump time.
//! - `fjmethodid=lazy` (needs the VM walker and a calibrated trace ID): none; every
//!   class is registered in the class registry instead (`methods/lazy`).
//!
//! The JVMTI ClassPrepare callback consults the mode of the last session started (before
//! the first start: nothing is done, the first start catches up). Starting in preload
//! mode after another one preloads what was skipped.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use jni::sys::{jclass, jobject, JNIEnv};
use parking_lot::Mutex;

use super::lazy;
use crate::args::FjMethodId;
use crate::counters::Counter;
use crate::footprint::{self, Category};
use crate::jvmti::{self, Jvmti};

/// The `FjMethodId` in force for the last session started, or `IDLE` before the first one.
static MODE: AtomicU8 = AtomicU8::new(IDLE);
const IDLE: u8 = 0;
/// Every class loaded so far has IDs (a preload-mode start happened, and no class was
/// prepared in another mode since).
static ALL_LOADED: AtomicBool = AtomicBool::new(false);

/// Global refs to the platform and application class loaders.
struct PermanentLoaders {
    platform: jobject,
    application: jobject,
}
// SAFETY: JNI global refs may be used from any thread.
unsafe impl Send for PermanentLoaders {}

static LOADERS: Mutex<Option<PermanentLoaders>> = Mutex::new(None);

/// The mode of the last session started, `None` before the first start.
pub fn current() -> Option<FjMethodId> {
    FjMethodId::from_raw(MODE.load(Ordering::Acquire))
}

/// Applies `mode` for a starting session. Runs on a JVM thread. The mode is switched
/// before the loaded classes are listed, so a class prepared meanwhile is handled by
/// one or the other.
pub fn apply(mode: FjMethodId, jvmti: Jvmti, jni: *mut JNIEnv) {
    remember_loaders(jni);
    MODE.store(mode.to_raw(), Ordering::Release);
    crate::sample::tags::set_active(mode == FjMethodId::Lazy);
    match mode {
        FjMethodId::True if !ALL_LOADED.swap(true, Ordering::AcqRel) => {
            load_existing(jvmti, jni, |_| true)
        }
        FjMethodId::True => {}
        FjMethodId::False => {
            ALL_LOADED.store(false, Ordering::Release);
            load_existing(jvmti, jni, |class| can_unload(jvmti, jni, class))
        }
        FjMethodId::Lazy => {
            ALL_LOADED.store(false, Ordering::Release);
            let _mem = footprint::scope(Category::ClassRegistry);
            lazy::register_loaded(jvmti, jni)
        }
    }
    if crate::sample::vm::receiver::active().is_some() {
        remember_loaded(jvmti, jni);
    }
}

/// Remembers the receiver names of the loaded classes that can unload; those prepared from
/// now on are remembered by `on_class_prepare` (a class prepared meanwhile, by both).
fn remember_loaded(jvmti: Jvmti, jni: *mut JNIEnv) {
    let started = std::time::Instant::now();
    let mut remembered = 0usize;
    for class in jvmti.loaded_classes(jni) {
        if can_unload(jvmti, jni, class) {
            crate::methods::receivers::remember_class(jni, class);
            remembered += 1;
        }
        jvmti::delete_local_ref(jni, class);
    }
    crate::log::info(&format!(
        "receiver names of {remembered} loaded classes that can unload remembered in {} us",
        started.elapsed().as_micros()
    ));
}

/// JVMTI ClassPrepare.
pub fn on_class_prepare(jvmti: Jvmti, jni: *mut JNIEnv, class: jclass) {
    // Asked at most once per class: receiver names and `fjmethodid=false` both want it.
    let mut unloadable = None;
    let mut can_unload = |class| *unloadable.get_or_insert_with(|| can_unload(jvmti, jni, class));
    if crate::sample::vm::receiver::active().is_some() && can_unload(class) {
        crate::methods::receivers::remember_class(jni, class);
    }
    let load = match current() {
        Some(FjMethodId::True) => true,
        Some(FjMethodId::False) => can_unload(class),
        Some(FjMethodId::Lazy) => {
            let _mem = footprint::scope(Category::ClassRegistry);
            lazy::register_class(jvmti, jni, class);
            lazy::publish_gauges();
            false
        }
        None => false,
    };
    if !load {
        ALL_LOADED.store(false, Ordering::Release);
        return;
    }
    if let Ok(n) = jvmti.load_method_ids(class) {
        Counter::MethodIdsPreloaded.add(n as i64);
    }
}

fn load_existing(jvmti: Jvmti, jni: *mut JNIEnv, wanted: impl Fn(jclass) -> bool) {
    for class in jvmti.loaded_classes(jni) {
        if wanted(class) {
            if let Ok(n) = jvmti.load_method_ids(class) {
                Counter::ClassesPreloaded.inc();
                Counter::MethodIdsPreloaded.add(n as i64);
            }
        }
        jvmti::delete_local_ref(jni, class);
    }
}

/// Hidden classes and VM-anonymous classes (lambdas, LambdaForms) carry `/0x` or `+0x`
/// in their names and unload with their host or alone.
fn is_hidden(signature: &str) -> bool {
    signature.contains("/0x") || signature.contains("+0x")
}

/// Whether the class may unload: its loader is not one of the three permanent ones, or
/// it is hidden. On doubt, yes (it then gets IDs, which is always safe).
fn can_unload(jvmti: Jvmti, jni: *mut JNIEnv, class: jclass) -> bool {
    if jvmti.class_signature(class).map_or(true, |s| is_hidden(&s)) {
        return true;
    }
    let Ok(loader) = jvmti.class_loader(class) else {
        return true;
    };
    if loader.is_null() {
        return false;
    }
    let permanent = LOADERS.lock().as_ref().is_some_and(|l| {
        same_object(jni, loader, l.platform) || same_object(jni, loader, l.application)
    });
    jvmti::delete_local_ref(jni, loader);
    !permanent
}

fn same_object(jni: *mut JNIEnv, a: jobject, b: jobject) -> bool {
    if b.is_null() {
        return false;
    }
    // SAFETY: valid env of this thread; both refs live.
    unsafe { ((**jni).IsSameObject.expect("JNI table"))(jni, a, b) != 0 }
}

fn remember_loaders(jni: *mut JNIEnv) {
    let mut guard = LOADERS.lock();
    if guard.is_some() {
        return;
    }
    let loader = |method: &str| -> jobject {
        // SAFETY: valid env; jni crate wrappers check for exceptions.
        let Ok(mut env) = (unsafe { jni::JNIEnv::from_raw(jni) }) else {
            return std::ptr::null_mut();
        };
        let obj = env
            .call_static_method(
                "java/lang/ClassLoader",
                method,
                "()Ljava/lang/ClassLoader;",
                &[],
            )
            .and_then(|v| v.l());
        if env.exception_check().unwrap_or(false) {
            let _ = env.exception_clear();
        }
        match obj {
            Ok(o) if !o.is_null() => env
                .new_global_ref(&o)
                .map(|g| {
                    let raw = g.as_obj().as_raw();
                    // Kept for the life of the process.
                    std::mem::forget(g);
                    raw
                })
                .unwrap_or(std::ptr::null_mut()),
            _ => std::ptr::null_mut(),
        }
    };
    // getPlatformClassLoader exists from JDK 9; on 8 the extension loader's classes are
    // then treated as unloadable, which only costs IDs.
    *guard = Some(PermanentLoaders {
        platform: loader("getPlatformClassLoader"),
        application: loader("getSystemClassLoader"),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_and_anonymous_class_names_are_recognised() {
        assert!(is_hidden("Lcom/x/Foo$$Lambda/0x0000000800c01234;"));
        assert!(is_hidden("Lcom/x/Foo$$Lambda+0x0000000800c01234;"));
        assert!(is_hidden("Lcom/x/Foo$$Lambda$14/0x0000000800c01234;"));
        assert!(!is_hidden("Ljava/lang/String;"));
    }
}
