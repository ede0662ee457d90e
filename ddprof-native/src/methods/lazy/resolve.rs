//! Turning a tagged raw frame into a jmethodID at dump time, or refusing it.
//!
//! The `Method*` in the frame may be stale: its class may have unloaded, its memory may
//! hold another method now, or the class may have been redefined. It is used as a lookup
//! key until proven live, in this order:
//! 1. under crash protection, read only its holder `Klass*` and its idnum;
//! 2. refuse classes marked by the redefinition hooks (`method_resolve_lazy_redefined`);
//! 3. pin the holder through the registry: a strong local reference to its mirror, so it
//!    cannot unload from here on (not registered or collected: `method_resolve_lazy_unloaded`);
//! 4. the pinned class's trace ID must match the frame's tag, else the `Klass*` now
//!    belongs to another class (`method_resolve_lazy_stale`);
//! 5. the `Method*` must be one of the class's current methods: the slot of its idnum,
//!    else a scan of classes of at most [`SCAN_CAP`] methods (`method_resolve_lazy_not_current`);
//! 6. only now is the method dereferenced: its jmethodID is read from the class's ID
//!    cache, after creating the class's IDs with GetClassMethods if it has none
//!    (`method_resolve_lazy_class_loaded` classes, `method_resolve_lazy_jmethodids_created` IDs);
//! 7. the redefinition mark is checked again (a redefinition may have started meanwhile).
//!
//! The jmethodID is then named through JVMTI like any other (`methods/resolve.rs`), and
//! later samples of the class carry real IDs.

use jni::sys::{jclass, JNIEnv};

use super::tags::Tag;
use super::JniRefs;
use crate::counters::Counter;
use crate::hotspot::codecache::load_field;
use crate::hotspot::klass::{self, Contains};
use crate::hotspot::vmstructs::{self, MethodGroup};
use crate::hotspot::{method, trace_id};
use crate::jvmti::{self, redefine, Jvmti};
use crate::signal::safe_access::load_usize;

/// Largest class whose methods array is scanned when the idnum slot does not match.
pub const SCAN_CAP: usize = 256;

/// Why a tagged frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    Unloaded,
    Stale,
    NotCurrent,
    Redefined,
}

impl Refused {
    fn count(self) {
        match self {
            Refused::Unloaded => Counter::MethodResolveLazyUnloaded,
            Refused::Stale => Counter::MethodResolveLazyStale,
            Refused::NotCurrent => Counter::MethodResolveLazyNotCurrent,
            Refused::Redefined => Counter::MethodResolveLazyRedefined,
        }
        .inc();
    }
}

/// The jmethodID of a tagged raw frame's method, or why there is none (counted). On a
/// JVM thread (`jni` its env), at dump time.
pub fn method_id(
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    method: usize,
    tag: Tag,
) -> Result<jni::sys::jmethodID, Refused> {
    let result = vmstructs::layout()
        .and_then(|l| l.method.as_ref())
        .ok_or(Refused::Unloaded)
        .and_then(|m| checked_id(m, jvmti, jni, method, tag));
    if let Err(r) = result {
        r.count();
    }
    result
}

fn checked_id(
    m: &MethodGroup,
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    method: usize,
    tag: Tag,
) -> Result<jni::sys::jmethodID, Refused> {
    // 1. Holder and idnum only.
    let holder = method::holder(m, method).ok_or(Refused::Unloaded)?;
    let idnum = method
        .checked_add(m.method.const_method)
        .and_then(load_usize)
        .and_then(|cm| load_field(cm, m.const_method.method_idnum))
        .ok_or(Refused::Unloaded)? as usize;
    // 2.
    if redefine::is_marked(holder) {
        return Err(Refused::Redefined);
    }
    // 3.
    let class = super::registry()
        .pin(&JniRefs(jni), holder)
        .ok_or(Refused::Unloaded)? as jclass;
    let result = (|| {
        // 4.
        match trace_id::trace_id(holder) {
            Some(id) if tag.matches(id) => {}
            _ => return Err(Refused::Stale),
        }
        // 5.
        let (data, len) = klass::methods(m, holder).ok_or(Refused::NotCurrent)?;
        if klass::methods_contain(data, len, method, idnum, SCAN_CAP, load_usize) != Contains::Yes {
            return Err(Refused::NotCurrent);
        }
        // 6.
        let id = match method::jmethod_id(m, method) {
            Some(id) => id,
            None => {
                if let Ok(n) = jvmti.load_method_ids(class) {
                    Counter::MethodResolveLazyIdsCreated.add(n as i64);
                }
                Counter::MethodResolveLazyClassLoaded.inc();
                method::jmethod_id(m, method).ok_or(Refused::NotCurrent)?
            }
        };
        // 7.
        if redefine::is_marked(holder) {
            return Err(Refused::Redefined);
        }
        Ok(id as jni::sys::jmethodID)
    })();
    jvmti::delete_local_ref(jni, class);
    result
}
