//! `fjmethodid=lazy`: no jmethodID is created up front. A sampled method without one is
//! recorded as a raw `Method*` tagged with its holder's JFR class trace ID
//! (`crate::sample::tags`);
//! at dump time the frame is proven live against the class registry (`registry.rs`) and
//! only then named from the method's own metadata (`resolve.rs`): the profiler never makes
//! a jmethodID in this mode. Frames of redefined classes sampled before the redefinition
//! ended are refused (`crate::jvmti::redefine`). docs/lazy.md has the whole story.
//!
//! This file holds the mode switch the signal handler reads, the JNI side of the
//! registry, and class registration (at start and at ClassPrepare).

// JNI handles are opaque tokens the JVM validates.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod kept;
pub mod prefetch;
pub mod registry;
pub mod resolve;
pub mod version_keys;

use std::sync::OnceLock;

use jni::sys::{jclass, jobject, JNIEnv};

use self::registry::{Refs, Registered, Registry};
use crate::counters::Counter;
use crate::hotspot::trace_id;
use crate::jvmti::{self, Jvmti};
use crate::sample::tags;
use crate::sample::vm::klass;
use crate::sample::vm::layout::{self};
use crate::sample::vm::oop::HeapOops;

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// Highest JDK whose jmethodIDs are pointers to a `Method*` slot (JDK-8268406 made them
/// opaque numbers in 26); the walker and resolver dereference them.
const MAX_FEATURE_VERSION: u32 = 25;

pub fn registry() -> &'static Registry {
    REGISTRY.get_or_init(Registry::new)
}

/// Why the lazy mode cannot run here, if it cannot: it needs the VM walker, the
/// `InstanceKlass::_methods` field (the method group of the layout), jmethodIDs that are
/// pointers (JDK <= 25), the redefinition hooks, an oop encoding it can decode (ZGC's
/// colored pointers: `crate::hotspot::zgc`), and a calibrated trace-ID offset.
/// Runs the calibration the first time. On a JVM thread.
pub fn prerequisites(jni: *mut JNIEnv, java_feature: u32) -> Result<(), String> {
    if crate::sample::walk::vm::VmWalker::get().is_none() {
        return Err("the VMStructs stack walker is unavailable".into());
    }
    if layout::get().and_then(|l| l.method.as_ref()).is_none() {
        return Err("VMStructs lack the Klass/Method fields it reads".into());
    }
    if java_feature > MAX_FEATURE_VERSION {
        return Err(format!(
            "jmethodIDs are not pointers on JDK {java_feature} (JDK-8268406)"
        ));
    }
    if !crate::jvmti::redefine::installed() {
        return Err("the RedefineClasses/RetransformClasses hooks are not installed".into());
    }
    if let HeapOops::Unknown(reason) = crate::hotspot::zgc::init() {
        return Err(format!(
            "oops in JNI handles cannot be decoded under this ZGC ({reason})"
        ));
    }
    trace_id::calibrate(jni)
        .map(drop)
        .map_err(|e| format!("the JFR class trace ID offset could not be calibrated ({e})"))
}

/// JNI behind the registry, on the calling thread's env.
pub struct JniRefs(pub *mut JNIEnv);

impl JniRefs {
    fn env(&self) -> &jni::sys::JNINativeInterface_ {
        // SAFETY: self.0 is the current thread's valid JNIEnv (constructor contract).
        unsafe { &**self.0 }
    }
}

impl Refs for JniRefs {
    fn new_weak(&self, class: usize) -> Option<usize> {
        let f = self.env().NewWeakGlobalRef?;
        // SAFETY: valid env; `class` is a live class reference of this thread.
        let w = unsafe { f(self.0, class as jobject) };
        jvmti::clear_exception(self.0);
        (!w.is_null()).then_some(w as usize)
    }
    fn delete_weak(&self, weak: usize) {
        if let Some(f) = self.env().DeleteWeakGlobalRef {
            // SAFETY: `weak` is a weak global ref the registry owns and drops now.
            unsafe { f(self.0, weak as jobject) };
        }
    }
    fn is_cleared(&self, weak: usize) -> bool {
        // The sweeps ask this of many entries under the registry lock, and IsSameObject is
        // a VM transition each. A cleared weak ref holds null in its slot for good, so a
        // read of the slot answers without it. A non-null slot may still hold an object a
        // concurrent collector (ZGC, Shenandoah) is about to clear: that entry is simply
        // kept until a later sweep finds the slot null.
        if let Some(oop) = klass::oop_of(weak as jobject) {
            return oop == 0;
        }
        let Some(f) = self.env().IsSameObject else {
            return false;
        };
        // SAFETY: valid env and weak ref; comparing with null asks whether it was cleared.
        unsafe { f(self.0, weak as jobject, std::ptr::null_mut()) != 0 }
    }
    fn same_object(&self, weak: usize, class: usize) -> bool {
        let Some(f) = self.env().IsSameObject else {
            return false;
        };
        // SAFETY: valid env, weak ref and class reference.
        unsafe { f(self.0, weak as jobject, class as jobject) != 0 }
    }
    fn prefetch(&self, weak: usize) {
        prefetch::prefetch(weak & !0b11);
    }
    fn new_local(&self, weak: usize) -> Option<usize> {
        let f = self.env().NewLocalRef?;
        // SAFETY: valid env and weak ref; null comes back once the referent is collected.
        let l = unsafe { f(self.0, weak as jobject) };
        jvmti::clear_exception(self.0);
        (!l.is_null()).then_some(l as usize)
    }
}

/// Registers every loaded class (start of a lazy session). Classes prepared meanwhile
/// are registered by ClassPrepare: the mode is switched before this runs.
pub fn register_loaded(jvmti: Jvmti, jni: *mut JNIEnv) {
    for class in jvmti.loaded_classes(jni) {
        register_class(jvmti, jni, class);
        jvmti::delete_local_ref(jni, class);
    }
    publish_gauges();
}

/// Registers one class (ClassPrepare, or start). Array and primitive classes are
/// skipped (they have no methods). A class that cannot be registered (its `Klass*` unreadable,
/// or no weak reference to be had: JNI out of memory) gets no jmethodIDs either: its frames are
/// refused at dumps as those of an unloaded class (`method_resolve_lazy_unloaded`), and
/// `klass_registry_add_failed` counts it. The mode never makes an ID.
pub fn register_class(jvmti: Jvmti, jni: *mut JNIEnv, class: jclass) {
    let Some(m) = layout::get().and_then(|l| l.method.as_ref()) else {
        return;
    };
    let klass = crate::hotspot::zgc::klass_of_class_ref(m, jni, class);
    if let Some(k) = klass {
        if !klass::is_instance_klass(m, k) {
            return;
        }
    } else if jvmti.is_array_or_primitive(class) {
        return;
    }
    let result = klass
        .ok_or(registry::RegisterError::NoKlass)
        .and_then(|k| registry().register(&JniRefs(jni), k, class as usize));
    match result {
        Ok(r) => {
            if let Some(id) = klass.and_then(crate::sample::vm::trace_id::trace_id) {
                if id > tags::ID_MASK && r != Registered::Unchanged {
                    Counter::KlassTraceIdBeyondTagRange.inc();
                }
            }
        }
        Err(_) => Counter::KlassRegistryAddFailed.inc(),
    }
}

/// `klass_registry_entries` and `klass_registry_bytes`.
pub fn publish_gauges() {
    let (entries, bytes) = registry().stats();
    Counter::KlassRegistryEntries.set(entries as i64);
    Counter::KlassRegistryBytes.set(bytes as i64);
}

/// At each dump: looks for dead entries in the next slots of the registry (classes can
/// unload while none load, and then no insertion sweeps), shrinking it if it is mostly
/// empty. Nothing to do if no lazy session ever ran. On the dumping thread, after the
/// chunk is built (the resolver's pins are released by then).
pub fn sweep_registry(jni: *mut JNIEnv) {
    if let Some(r) = REGISTRY.get() {
        r.sweep(&JniRefs(jni), registry::SWEEP_PER_DUMP);
        publish_gauges();
    }
}
