//! Naming the receiver frame a vtable/itable stub sample carries (`sample::frame::kind::
//! VTABLE_RECEIVER`) at dump time (the stub frame below it is `stub_names.rs`'). It recorded a `Klass*`
//! and the JFR trace ID that class had when sampled; its name is read only if the same
//! trace ID is at that `Klass*` now and its mirror still leads back to it (a class unloaded
//! since, whose `Klass*` memory was reused, fails one or the other), and is refused rather
//! than guessed otherwise: `<unresolved_vtable_receiver>`, counted in
//! `vtable_receiver_resolve_failed`. Upstream's encoding (docs/jfr-format.md): class = the
//! receiver, name `<vtable_receiver>`, descriptor `()V`, type Native, line 0, bci -21.
//!
//! A class that can unload is remembered at the start or when it is prepared (its trace ID,
//! `Klass*` and name, read then from the live class), so that the receivers sampled before it unloaded are still
//! named at the dump: trace IDs are never reused, so the name remembered for the recorded trace
//! ID and `Klass*` is the receiver's. The same classes loaded again by another loader thus give
//! the same frame, and a stack that is otherwise equal the same StackTrace entry. Entries of
//! classes gone by a dump are dropped once that dump has named its frames.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use jni::sys::{jclass, JNIEnv};
use parking_lot::Mutex;

use crate::counters::Counter;
use crate::jfr::names::normalize_cow;
use crate::jfr::ChunkBuilder;
use crate::sample::safe_access::load_usize;
use crate::sample::vm::layout;
use crate::sample::vm::method::symbol;
use crate::sample::vm::{receiver, trace_id};

/// Method name and descriptor of a receiver frame, and its bci.
pub const RECEIVER_METHOD: &str = "<vtable_receiver>";
pub const RECEIVER_DESCRIPTOR: &str = "()V";
pub const RECEIVER_BCI: i32 = -21;
/// The class of a receiver frame that cannot be named.
pub const UNRESOLVED_CLASS: &str = "<unresolved_vtable_receiver>";
/// Longest class name accepted (a stale `Symbol*` can claim any length).
const MAX_NAME: usize = 4096;
/// Bits of the trace ID a frame keeps (`Frame::vtable_receiver`).
const ID_MASK: u64 = 0x7fff_ffff;

/// The unloadable classes loaded or prepared while receiver frames were on: trace ID (masked
/// as frames keep it) -> (`Klass*`, internal name).
static REMEMBERED: Mutex<Option<HashMap<u64, (usize, String)>>> = Mutex::new(None);

/// Remembers the name of a class that may unload (at start or ClassPrepare, on a JVM thread),
/// if receiver frames are on.
pub fn remember_class(jni: *mut JNIEnv, class: jclass) {
    if receiver::active().is_none() {
        return;
    }
    let Some(m) = layout::get().and_then(|l| l.method.as_ref()) else {
        return;
    };
    let Some(klass) = crate::hotspot::zgc::klass_of_class_ref(m, jni, class) else {
        return;
    };
    let Some(id) = trace_id::trace_id(klass).map(|v| v & ID_MASK) else {
        return;
    };
    let Some(name) = klass_name(klass) else {
        return;
    };
    if id == 0 {
        return;
    }
    let _mem = crate::footprint::scope(crate::footprint::Category::ClassRegistry);
    REMEMBERED
        .lock()
        .get_or_insert_with(HashMap::new)
        .insert(id, (klass, name));
}

/// The remembered name of the class sampled as (`klass`, `id`).
fn remembered(klass: usize, id: u64) -> Option<String> {
    let guard = REMEMBERED.lock();
    let (k, name) = guard.as_ref()?.get(&id)?;
    (*k == klass).then(|| normalize_class(name))
}

/// Drops the remembered classes that are gone (after a dump named its frames: any receiver of
/// theirs was sampled before they unloaded, so in this dump or an earlier one), one
/// [`SWEEP_SLICES`]th of them per dump. A class gone and not yet swept costs only its entry's
/// memory: trace IDs are never reused, so its entry names no other class. Checking every entry
/// was 3-4% of a first dump of the Kotlin compiler (~10,000 classes of its own loader, each a
/// few protected loads).
pub fn forget_unloaded() {
    static ROUND: AtomicU64 = AtomicU64::new(0);
    let round = ROUND.fetch_add(1, Ordering::Relaxed) % SWEEP_SLICES;
    let _mem = crate::footprint::scope(crate::footprint::Category::ClassRegistry);
    if let Some(map) = REMEMBERED.lock().as_mut() {
        map.retain(|&id, &mut (klass, _)| slice_of(id) != round || is_same_class(klass, id));
    }
}

/// Remembered classes are checked in this many turns, one per dump.
const SWEEP_SLICES: u64 = 8;

/// The sweep turn of trace ID `id`: from its hash's top bits (the ID's low bits may be flags
/// that never change).
fn slice_of(id: u64) -> u64 {
    (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % SWEEP_SLICES
}

/// Whether the live class at `klass` has trace ID `id` (as frames keep it).
fn is_same_class(klass: usize, id: u64) -> bool {
    trace_id::trace_id(klass).map_or(0, |v| v & ID_MASK) == id && receiver::is_live_class(klass)
}

/// The internal name of the class at `klass`, read through the protected loads.
fn klass_name(klass: usize) -> Option<String> {
    let m = layout::get()?.method.as_ref()?;
    let name = symbol(m, load_usize(klass.checked_add(m.klass.name)?)?)?;
    plausible(&name).then_some(name)
}

/// One dump's receiver names, each pool entry made once.
#[derive(Default)]
pub struct ReceiverNames {
    receivers: HashMap<(u64, i32), u32>,
}

impl ReceiverNames {
    /// Method-pool key of a receiver frame (`klass`, recorded trace ID `id`).
    pub fn receiver(&mut self, chunk: &mut ChunkBuilder, klass: u64, id: i32) -> u32 {
        if let Some(&k) = self.receivers.get(&(klass, id)) {
            return k;
        }
        let class = match receiver_class(klass as usize, id as u64)
            .or_else(|| remembered(klass as usize, id as u64))
        {
            Some(name) => name,
            None => {
                Counter::VtableReceiverResolveFailed.inc();
                UNRESOLVED_CLASS.to_string()
            }
        };
        let k =
            chunk.intern_method_verbatim(&class, RECEIVER_METHOD, RECEIVER_DESCRIPTOR, 0, false);
        self.receivers.insert((klass, id), k);
        k
    }
}

/// The internal name of the class at `klass` if it still is the class sampled with trace
/// ID `id` (0: none was readable then, which is accepted only while none is readable now).
fn receiver_class(klass: usize, id: u64) -> Option<String> {
    let m = layout::get()?.method.as_ref()?;
    let same = || {
        trace_id::trace_id(klass).map_or(0, |v| v & ID_MASK) == id && receiver::is_live_class(klass)
    };
    if klass == 0 || !same() {
        return None;
    }
    let name = symbol(m, load_usize(klass.checked_add(m.klass.name)?)?)?;
    // The name was read from a live class only if it still is one afterwards.
    if !same() || !plausible(&name) {
        return None;
    }
    Some(normalize_class(&name))
}

/// A class name read from a `Symbol`: non-empty, bounded, no control bytes, valid UTF-8.
fn plausible(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.contains('\u{fffd}')
        && !name.chars().any(|c| c.is_control())
}

/// The receiver's class as the other frames name classes: a hidden class's `+0x...`
/// suffix in Java's `/0x...` form, generated reflection accessors and lambda forms folded
/// into their family (`jfr::names`).
pub fn normalize_class(internal: &str) -> String {
    let java = match internal.rfind("+0x") {
        Some(i) => format!("{}/{}", &internal[..i], &internal[i + 1..]),
        None => internal.to_string(),
    };
    let (class, _) = normalize_cow(&java, RECEIVER_METHOD);
    class.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_turns_spread_trace_ids_whose_low_bits_never_change() {
        // HotSpot's trace IDs count in their upper bits; the low ones are flags.
        let mut per = [0usize; SWEEP_SLICES as usize];
        for i in 1..=8000u64 {
            per[slice_of((i << 16) & ID_MASK) as usize] += 1;
        }
        for n in per {
            assert!((800..1200).contains(&n), "{per:?}");
        }
    }

    #[test]
    fn class_names_are_normalised_like_other_frames() {
        assert_eq!(normalize_class("java/lang/String"), "java/lang/String");
        assert_eq!(
            normalize_class("com/x/Foo$$Lambda+0x0000000801001234"),
            "com/x/Foo$$Lambda/0x0000000801001234"
        );
        assert_eq!(
            normalize_class("jdk/internal/reflect/GeneratedMethodAccessor17"),
            "jdk/internal/reflect/GeneratedMethodAccessor"
        );
        assert_eq!(
            normalize_class("java/lang/invoke/LambdaForm$MH+0x0000000800c04000"),
            "java/lang/invoke/LambdaForm$MH"
        );
        assert_eq!(
            normalize_class("[Ljava/lang/Object;"),
            "[Ljava/lang/Object;"
        );
    }

    #[test]
    fn implausible_names_are_refused() {
        assert!(plausible("a/B"));
        assert!(!plausible(""));
        assert!(!plausible("a\u{1}b"));
        assert!(!plausible("a\u{fffd}"));
        assert!(!plausible(&"x".repeat(MAX_NAME + 1)));
    }

    #[test]
    fn unreadable_receivers_are_unresolved() {
        assert_eq!(receiver_class(0, 0), None);
        assert_eq!(receiver_class(0x10, 5), None);
    }
}
