//! Hooks on JVMTI `RedefineClasses` and `RetransformClasses` (docs/hotspot.md 8.4).
//!
//! Redefinition swaps a class's methods; the old `Method*`s are freed later and their
//! memory may be reused for methods of the same class, so a raw frame of a redefined
//! class could be named after the wrong method. The lazy resolver therefore refuses raw
//! frames of classes being redefined, and those sampled before a redefinition ended.
//!
//! All JVMTI environments share one function table (writable, in libjvm's data), so the
//! two entries are replaced once, when the library loads, and never restored: calls from
//! any agent (java.lang.instrument's included) come through here. Each hook marks the
//! classes, calls the original, then keeps the marks for good on success, with the time
//! the redefinition ended, or drops them on failure. The lazy resolver accepts a frame of a
//! redefined class only from samples taken after its last redefinition ended
//! ([`redefinition`]). A successful redefinition also creates the classes' jmethodIDs, so
//! that their later samples carry IDs (in the lazy mode, the one case where it makes any).
//! Arguments the hook cannot make sense of (null array, array or primitive classes,
//! objects that are not classes) are passed on untouched for JVMTI to reject as usual.
//! Tracking stays on whatever mode later sessions run in.

// JNI/JVMTI handles are opaque tokens the JVM validates.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use jni::sys::{jclass, jint};
use parking_lot::Mutex;

use super::{Jvmti, JvmtiEnvPtr, JvmtiError};
use crate::counters::Counter;
use crate::sample::safe_access::load_usize;
use crate::sample::vm::layout::{self, MethodGroup};
use crate::sample::vm::{klass, method, trace_id};

// Function numbers from the JVMTI specification (table index = number - 1).
const REDEFINE_CLASSES: usize = 87;
const RETRANSFORM_CLASSES: usize = 152;
/// `jvmtiClassDefinition`: jclass, jint byte count, const unsigned char* bytes.
const CLASS_DEFINITION_BYTES: usize = 24;

type RedefineFn = unsafe extern "C" fn(*mut JvmtiEnvPtr, jint, *const c_void) -> JvmtiError;
type RetransformFn = unsafe extern "C" fn(*mut JvmtiEnvPtr, jint, *const jclass) -> JvmtiError;

static ORIGINAL_REDEFINE: AtomicUsize = AtomicUsize::new(0);
static ORIGINAL_RETRANSFORM: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// One marked class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Mark {
    /// The class's trace ID when marked: a later class at the same `Klass*` (after this
    /// one unloaded) has another ID and is not marked. `None` before calibration.
    trace_id: Option<u64>,
    /// Redefinition calls on this class still running.
    in_flight: u32,
    /// When the latest successful redefinition ended (`sample::handler::ticks`): marked for
    /// good.
    redefined_at: Option<i64>,
}

/// Where a class stands with redefinitions ([`redefinition`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Redefinition {
    /// A redefinition of it is running.
    pub in_flight: bool,
    /// When its latest successful redefinition ended, if it ever had one.
    pub ended_at: Option<i64>,
}

static MARKS: Mutex<Option<HashMap<usize, Mark>>> = Mutex::new(None);
/// Set (for good) before the first class is marked: until then [`is_marked`] answers
/// without the lock, which the lazy resolver asks once per frame. SeqCst on both sides:
/// a redefinition's hook stores it before calling through, so a resolver that reads
/// `false` after its metadata reads read metadata no redefinition had touched yet.
static EVER_MARKED: AtomicBool = AtomicBool::new(false);
/// Hook calls begun (whatever their classes). See [`redefining_named`].
static BEGUN: AtomicU64 = AtomicU64::new(0);
/// Hook calls returned (whatever their outcome). See [`settled`].
static ENDED: AtomicU64 = AtomicU64::new(0);

/// Redefinitions by class name (`Klass::_name`, an interned `Symbol*`): while one runs, the
/// new version's `Method*`s belong to a scratch class of the same name that no mark names
/// (its safepoint swaps them into the real class), and they may sit in the memory of old
/// methods freed earlier, so a raw frame read then could name one of them.
#[derive(Clone, Copy, Debug, Default)]
struct Named {
    in_flight: u32,
    /// [`BEGUN`] as the latest call on a class of this name began.
    last_begun: u64,
}

static NAMES: Mutex<Option<HashMap<usize, Named>>> = Mutex::new(None);

/// Our env, for the calls the hooks make themselves.
static OWN_ENV: AtomicUsize = AtomicUsize::new(0);

/// Whether the hooks are in place.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Acquire)
}

/// Replaces the two table entries with the hooks, once per process. `jvmti` is our env
/// (its table is everyone's). Not signal-safe.
pub fn install(jvmti: Jvmti) {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock();
    if INSTALLED.load(Ordering::Acquire) {
        return;
    }
    OWN_ENV.store(jvmti.raw() as usize, Ordering::Release);
    // SAFETY: a jvmtiEnv points at the shared function table, an array of function
    // pointers at least RETRANSFORM_CLASSES long; it is writable (docs/hotspot.md 8.4). Each
    // slot is one aligned word, so a concurrent caller reads the old or the new pointer.
    unsafe {
        let table = *jvmti.raw() as *mut usize;
        let redefine = table.add(REDEFINE_CLASSES - 1);
        let retransform = table.add(RETRANSFORM_CLASSES - 1);
        let (old_redefine, old_retransform) =
            (redefine.read_volatile(), retransform.read_volatile());
        if old_redefine == 0 || old_retransform == 0 {
            return;
        }
        ORIGINAL_REDEFINE.store(old_redefine, Ordering::Release);
        ORIGINAL_RETRANSFORM.store(old_retransform, Ordering::Release);
        redefine.write_volatile(redefine_hook as RedefineFn as usize);
        retransform.write_volatile(retransform_hook as RetransformFn as usize);
    }
    INSTALLED.store(true, Ordering::Release);
}

/// Whether raw frames of the class at `klass` must be refused: a redefinition of it is
/// running or has succeeded. Not signal-safe (takes a lock).
pub fn is_marked(klass: usize) -> bool {
    if !EVER_MARKED.load(Ordering::SeqCst) {
        return false;
    }
    let r = redefinition(klass);
    r.in_flight || r.ended_at.is_some()
}

/// Whether a redefinition of the class at `klass` is running, and when the latest
/// successful one ended. A mark left by another class that lived at the same `Klass*`
/// (another trace ID) does not count. Not signal-safe (takes a lock).
pub fn redefinition(klass: usize) -> Redefinition {
    if !EVER_MARKED.load(Ordering::SeqCst) {
        return Redefinition::default();
    }
    let marks = MARKS.lock();
    let Some(mark) = marks.as_ref().and_then(|m| m.get(&klass)) else {
        return Redefinition::default();
    };
    let same_class = match (mark.trace_id, trace_id::trace_id(klass)) {
        (Some(then), Some(now)) => then == now,
        // Without IDs to compare, assume it is the same class.
        _ => true,
    };
    if !same_class {
        return Redefinition::default();
    }
    Redefinition {
        in_flight: mark.in_flight > 0,
        ended_at: mark.redefined_at,
    }
}

/// A stamp for [`redefining_named`], taken before metadata reads.
pub fn stamp() -> u64 {
    BEGUN.load(Ordering::SeqCst)
}

/// [`stamp`] if no hook call is running now, else `None`: what a cache of names that hold
/// until the next redefinition of any class is made under (`methods/kept_ids.rs`). Ended
/// read first: a call that began after it makes the two differ.
pub fn settled() -> Option<u64> {
    let ended = ENDED.load(Ordering::SeqCst);
    let begun = BEGUN.load(Ordering::SeqCst);
    (begun == ended).then_some(begun)
}

/// Whether a redefinition of a class named `name` (its `Klass::_name`) is running, or began
/// after `stamp`. Asked before and after reading a raw frame's metadata: a call running at
/// the first question, or begun since the stamp at the second, may have made what the reads
/// saw (a call that began and ended in between would be seen running at the first). Not
/// signal-safe (takes a lock).
pub fn redefining_named(name: usize, stamp: u64) -> bool {
    if !EVER_MARKED.load(Ordering::SeqCst) {
        return false;
    }
    NAMES
        .lock()
        .as_ref()
        .and_then(|n| n.get(&name))
        .is_some_and(|n| n.in_flight > 0 || n.last_begun > stamp)
}

/// Marks in force (for tests and logs).
pub fn marked_count() -> usize {
    MARKS.lock().as_ref().map_or(0, |m| {
        m.values()
            .filter(|k| k.in_flight > 0 || k.redefined_at.is_some())
            .count()
    })
}

fn begin(klass: usize, name: Option<usize>, begun: u64) {
    let id = trace_id::trace_id(klass);
    EVER_MARKED.store(true, Ordering::SeqCst);
    if let Some(name) = name {
        let mut names = NAMES.lock();
        let n = names
            .get_or_insert_with(HashMap::new)
            .entry(name)
            .or_default();
        n.in_flight = n.in_flight.saturating_add(1);
        n.last_begun = n.last_begun.max(begun);
    }
    let mut marks = MARKS.lock();
    let mark = marks
        .get_or_insert_with(HashMap::new)
        .entry(klass)
        .or_default();
    if mark.trace_id != id {
        // Another class lived at this Klass* before.
        *mark = Mark {
            trace_id: id,
            ..Mark::default()
        };
    }
    mark.in_flight = mark.in_flight.saturating_add(1);
    Counter::KlassRegistryRedefinitionsMarked.inc();
}

fn end(klass: usize, name: Option<usize>, succeeded: bool) {
    if let Some(name) = name {
        if let Some(n) = NAMES.lock().as_mut().and_then(|m| m.get_mut(&name)) {
            n.in_flight = n.in_flight.saturating_sub(1);
        }
    }
    let mut marks = MARKS.lock();
    if let Some(mark) = marks.as_mut().and_then(|m| m.get_mut(&klass)) {
        mark.in_flight = mark.in_flight.saturating_sub(1);
        if succeeded {
            mark.redefined_at = Some(crate::sample::handler::ticks());
        }
    }
}

fn own_env() -> Option<Jvmti> {
    match OWN_ENV.load(Ordering::Acquire) {
        0 => None,
        p => Some(Jvmti(p as *mut JvmtiEnvPtr)),
    }
}

/// The `Klass*` of an instance class named by a caller's jclass, or `None` for anything
/// the hook should leave alone (null, array, primitive, not a class, unreadable). First
/// from the mirror; if a moving GC defeats that, through a jmethodID of the class
/// (its Method* leads to the holder, and the IDs are created after a successful
/// redefinition anyway).
fn klass_of(m: &MethodGroup, jvmti: Option<Jvmti>, class: jclass) -> Option<usize> {
    if class.is_null() {
        return None;
    }
    if let Some(k) = klass::of_class_ref(m, class) {
        return klass::is_instance_klass(m, k).then_some(k);
    }
    let jvmti = jvmti?;
    if jvmti.is_array_or_primitive(class) {
        return None;
    }
    let ids = jvmti.class_methods(class).ok()?;
    let method = load_usize(*ids.first()? as usize)?;
    method::holder(m, method)
}

/// One class a hook marked: `Klass*`, its name's `Symbol*`, the caller's reference.
type Marked = (usize, Option<usize>, jclass);

/// Marks every class it can identify; returns them for [`finish`].
fn mark_all(classes: &[jclass], begun: u64) -> Vec<Marked> {
    let Some(m) = layout::get().and_then(|l| l.method.as_ref()) else {
        return Vec::new();
    };
    let jvmti = own_env();
    let mut marked = Vec::with_capacity(classes.len());
    for &c in classes {
        if let Some(k) = klass_of(m, jvmti, c) {
            let name = k
                .checked_add(m.klass.name)
                .and_then(load_usize)
                .filter(|&n| n != 0);
            begin(k, name, begun);
            marked.push((k, name, c));
        }
    }
    marked
}

fn finish(marked: &[Marked], rc: JvmtiError) {
    let ok = rc == super::JVMTI_ERROR_NONE;
    for &(k, name, _) in marked {
        end(k, name, ok);
    }
    // Outside the lazy mode the new methods' later samples carry IDs (their raw frames
    // would be refused). The lazy mode needs none: its frames carry the method's idnum,
    // which names the method in every version (`methods/lazy/resolve.rs`).
    if ok && !crate::sample::tags::is_active() {
        if let Some(jvmti) = own_env() {
            for &(_, _, c) in marked {
                if let Ok(n) = jvmti.load_method_ids(c) {
                    Counter::MethodIdsPreloaded.add(n as i64);
                }
            }
        }
    }
}

/// The `klass` fields of a caller's `jvmtiClassDefinition` array, read through
/// crash-protected loads; `None` if any is unreadable (then nothing is marked).
fn definition_classes(count: jint, defs: *const c_void) -> Option<Vec<jclass>> {
    if count <= 0 || defs.is_null() {
        return None;
    }
    (0..count as usize)
        .map(|i| {
            i.checked_mul(CLASS_DEFINITION_BYTES)
                .and_then(|o| (defs as usize).checked_add(o))
                .and_then(load_usize)
                .map(|c| c as jclass)
        })
        .collect()
}

fn array_classes(count: jint, classes: *const jclass) -> Option<Vec<jclass>> {
    if count <= 0 || classes.is_null() {
        return None;
    }
    (0..count as usize)
        .map(|i| {
            i.checked_mul(8)
                .and_then(|o| (classes as usize).checked_add(o))
                .and_then(load_usize)
                .map(|c| c as jclass)
        })
        .collect()
}

unsafe extern "C" fn redefine_hook(
    env: *mut JvmtiEnvPtr,
    count: jint,
    defs: *const c_void,
) -> JvmtiError {
    let begun = BEGUN.fetch_add(1, Ordering::SeqCst) + 1;
    let marked = std::panic::catch_unwind(|| {
        definition_classes(count, defs).map_or_else(Vec::new, |c| mark_all(&c, begun))
    })
    .unwrap_or_default();
    // SAFETY: ORIGINAL_REDEFINE was read from this table slot before the hook replaced
    // it (install returns before storing the hook if it was null).
    let original: RedefineFn =
        unsafe { std::mem::transmute(ORIGINAL_REDEFINE.load(Ordering::Acquire)) };
    // SAFETY: the caller's arguments, passed on unchanged.
    let rc = unsafe { original(env, count, defs) };
    let _ = std::panic::catch_unwind(|| finish(&marked, rc));
    ENDED.fetch_add(1, Ordering::SeqCst);
    rc
}

unsafe extern "C" fn retransform_hook(
    env: *mut JvmtiEnvPtr,
    count: jint,
    classes: *const jclass,
) -> JvmtiError {
    let begun = BEGUN.fetch_add(1, Ordering::SeqCst) + 1;
    let marked = std::panic::catch_unwind(|| {
        array_classes(count, classes).map_or_else(Vec::new, |c| mark_all(&c, begun))
    })
    .unwrap_or_default();
    // SAFETY: as in redefine_hook.
    let original: RetransformFn =
        unsafe { std::mem::transmute(ORIGINAL_RETRANSFORM.load(Ordering::Acquire)) };
    // SAFETY: the caller's arguments, passed on unchanged.
    let rc = unsafe { original(env, count, classes) };
    let _ = std::panic::catch_unwind(|| finish(&marked, rc));
    ENDED.fetch_add(1, Ordering::SeqCst);
    rc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_argument_arrays_mark_nothing() {
        assert_eq!(definition_classes(0, 0x1000 as *const c_void), None);
        assert_eq!(definition_classes(3, std::ptr::null()), None);
        assert_eq!(definition_classes(-1, 0x1000 as *const c_void), None);
        assert_eq!(array_classes(2, std::ptr::null()), None);
        assert_eq!(array_classes(0, 0x1000 as *const jclass), None);
        // An unreadable array: nothing is marked, the call goes through untouched.
        assert_eq!(array_classes(2, 0x10 as *const jclass), None);
    }

    #[test]
    fn class_definitions_are_read_at_their_stride() {
        #[repr(C)]
        struct Def {
            klass: jclass,
            len: jint,
            bytes: *const u8,
        }
        assert_eq!(std::mem::size_of::<Def>(), CLASS_DEFINITION_BYTES);
        // Read through the crash-protected loads, as in a started profiler: qemu-user (where
        // the aarch64 unit tests run) lacks process_vm_readv, their fallback before install.
        crate::sample::safe_access::install().unwrap();
        let defs = [
            Def {
                klass: 0x1110 as jclass,
                len: 3,
                bytes: std::ptr::null(),
            },
            Def {
                klass: 0x2220 as jclass,
                len: 4,
                bytes: std::ptr::null(),
            },
        ];
        let got = definition_classes(2, defs.as_ptr() as *const c_void).unwrap();
        assert_eq!(got, vec![0x1110 as jclass, 0x2220 as jclass]);
        let arr = [0x10 as jclass, std::ptr::null_mut(), 0x30 as jclass];
        assert_eq!(array_classes(3, arr.as_ptr()).unwrap(), arr.to_vec());
    }

    #[test]
    fn marks_last_while_running_and_for_good_after_success() {
        let k = 0x7777_0000;
        assert!(!is_marked(k));
        begin(k, None, 0);
        assert!(is_marked(k));
        end(k, None, false);
        assert!(!is_marked(k), "a failed redefinition leaves no mark");
        begin(k, None, 0);
        begin(k, None, 0);
        end(k, None, false);
        assert!(is_marked(k), "another call on the class is still running");
        end(k, None, true);
        assert!(is_marked(k));
        begin(k, None, 0);
        end(k, None, false);
        assert!(is_marked(k), "a success is never forgotten");
    }

    #[test]
    fn names_are_refused_while_redefined_and_when_begun_since_the_stamp() {
        let (k, name, other) = (0x6666_0000, 0x5555_0000, 0x4444_0000);
        let stamp = 100;
        assert!(!redefining_named(name, stamp));
        begin(k, Some(name), stamp);
        assert!(redefining_named(name, stamp), "running");
        assert!(!redefining_named(other, stamp), "another name");
        end(k, Some(name), true);
        assert!(
            !redefining_named(name, stamp),
            "ended, began before the stamp"
        );
        begin(k, Some(name), stamp + 1);
        end(k, Some(name), true);
        assert!(redefining_named(name, stamp), "began after the stamp");
        assert!(!redefining_named(name, stamp + 1));
    }
}
