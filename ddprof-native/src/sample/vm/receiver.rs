//! The receiver class of a megamorphic call caught in a vtable or itable stub
//! (docs/hotspot.md 3.8, 5.3). A stub is entered with the receiver in the first Java
//! argument register and dispatches on its class, so when a sample's leaf is a stub that
//! register names the object whose class was dispatched on. The handler reads the object's
//! header, decodes the `Klass*`, proves it is a class (its mirror leads back to it) and
//! records it with the class's JFR trace ID; the name is read at dump time, after the same
//! trace ID is found at that `Klass*` again (`crate::profiler::receivers`).
//!
//! How the header holds the class is fixed for the life of the JVM, and worked out once
//! off the signal path (`crate::hotspot::receiver`) from VMStructs and VM flags:
//! - compressed class pointers: a u32 narrow klass after the mark word,
//!   `Klass* = base + (narrow << shift)`;
//! - compact object headers (24+): the narrow klass in the mark word's top bits; a mark
//!   whose lock bits say "inflated monitor" points at the ObjectMonitor, which keeps the
//!   displaced mark (unless the VM keeps monitors in a side table, when the mark keeps
//!   its klass bits);
//! - neither: a full `Klass*` after the mark word.
//!
//! Every read goes through the crash-protected loads; nothing allocates or locks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use super::oop;
use super::trace_id;
use crate::sample::safe_access::{load_u32, load_usize};

/// Lock bits of a mark word (the low two).
const LOCK_MASK: usize = 0b11;
/// `markWord::unlocked_value`: a neutral header.
const UNLOCKED: usize = 0b01;
/// `markWord::monitor_value`: the mark points at an ObjectMonitor (2 on every JDK).
const MONITOR: usize = 0b10;
/// Lowest address an object can have.
const MIN_ADDRESS: usize = 4096;

/// Where an object's `Klass*` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KlassIn {
    /// A u32 narrow klass at `offset` from the object.
    Narrow {
        offset: usize,
        base: usize,
        shift: u32,
    },
    /// A full `Klass*` at `offset`.
    Wide { offset: usize },
    /// Compact object headers: the narrow klass is `mark >> mark_shift`.
    Mark {
        mark_shift: u32,
        base: usize,
        shift: u32,
        /// Where an ObjectMonitor keeps the displaced mark; `None` when inflated marks
        /// keep their klass bits (`UseObjectMonitorTable`).
        monitor_header: Option<usize>,
        /// Whether a mark with lock bits 00 still carries the klass (lightweight locking:
        /// only the lock bits change). Under legacy stack locking it points at the stack.
        fast_locked_keeps_klass: bool,
    },
}

/// What the handler needs beside the header layout to check a decoded `Klass*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiverLayout {
    pub klass: KlassIn,
    /// `Klass::_java_mirror` (an OopHandle).
    pub java_mirror: usize,
    /// `java_lang_Class::_klass_offset`'s value: where a mirror holds its `Klass*`.
    pub mirror_klass_offset: usize,
}

static LAYOUT: OnceLock<ReceiverLayout> = OnceLock::new();
static ENABLED: AtomicBool = AtomicBool::new(false);
/// Test mode: record every receiver with a trace ID it does not have, as if its `Klass*`
/// had been reused by another class before the dump (which must then refuse to name it).
static MISRECORD: AtomicBool = AtomicBool::new(false);

/// Publishes the layout (the first call wins). Not signal-safe.
pub fn publish(layout: ReceiverLayout) -> ReceiverLayout {
    *LAYOUT.get_or_init(|| layout)
}

/// Turns the receiver frames on or off (at a start, never from a handler). Only takes
/// effect once a layout was published.
pub fn set_enabled(on: bool, misrecord_for_test: bool) {
    MISRECORD.store(misrecord_for_test, Ordering::Release);
    ENABLED.store(on && LAYOUT.get().is_some(), Ordering::Release);
}

/// The trace ID to record for `r`: its own, or, in the test mode of [`set_enabled`], one
/// no class has (trace IDs are below 2^30). Signal-safe.
pub fn recorded_trace_id(r: Receiver) -> u64 {
    if MISRECORD.load(Ordering::Relaxed) {
        r.trace_id | (1 << 30)
    } else {
        r.trace_id
    }
}

/// The layout when receiver frames are on. Signal-safe.
pub fn active() -> Option<&'static ReceiverLayout> {
    if !ENABLED.load(Ordering::Acquire) {
        return None;
    }
    LAYOUT.get()
}

/// A receiver as recorded: its `Klass*` and the JFR trace ID it had then (0 if the
/// trace ID offset is not calibrated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Receiver {
    pub klass: usize,
    pub trace_id: u64,
}

/// The receiver class of the object `receiver` (the first Java argument register), or
/// `None` if it is null or the reads do not prove a class. Signal-safe.
pub fn receiver_of(l: &ReceiverLayout, receiver: usize) -> Option<Receiver> {
    read_receiver(l, receiver, &Protected)
}

/// Loads, so the decoding can be tested on plain memory.
pub trait Loads {
    fn usize_at(&self, addr: usize) -> Option<usize>;
    fn u32_at(&self, addr: usize) -> Option<u32>;
}

struct Protected;

impl Loads for Protected {
    fn usize_at(&self, addr: usize) -> Option<usize> {
        load_usize(addr)
    }
    fn u32_at(&self, addr: usize) -> Option<u32> {
        load_u32(addr)
    }
}

/// Whether `klass` is a live class (its mirror leads back to it), through the protected
/// loads; `false` before a layout was published. Signal-safe.
pub fn is_live_class(klass: usize) -> bool {
    LAYOUT
        .get()
        .is_some_and(|l| klass != 0 && is_class(l, klass, &Protected))
}

/// [`receiver_of`] over any memory.
pub fn read_receiver(l: &ReceiverLayout, receiver: usize, mem: &impl Loads) -> Option<Receiver> {
    let klass = klass_of_object(&l.klass, receiver, mem)?;
    if !is_class(l, klass, mem) {
        return None;
    }
    Some(Receiver {
        klass,
        trace_id: trace_id::trace_id(klass).unwrap_or(0),
    })
}

/// The `Klass*` in the header of the object at `obj`. Pure decoding over `mem`.
pub fn klass_of_object(k: &KlassIn, obj: usize, mem: &impl Loads) -> Option<usize> {
    if obj < MIN_ADDRESS || !obj.is_multiple_of(8) {
        return None;
    }
    let klass = match *k {
        KlassIn::Narrow {
            offset,
            base,
            shift,
        } => {
            let narrow = mem.u32_at(obj.checked_add(offset)?)?;
            decode_narrow(narrow as usize, base, shift)?
        }
        KlassIn::Wide { offset } => mem.usize_at(obj.checked_add(offset)?)?,
        KlassIn::Mark {
            mark_shift,
            base,
            shift,
            monitor_header,
            fast_locked_keeps_klass,
        } => {
            let mark = mem.usize_at(obj)?;
            let mark = match mark & LOCK_MASK {
                UNLOCKED => mark,
                0b00 if fast_locked_keeps_klass => mark,
                MONITOR => match monitor_header {
                    None => mark,
                    Some(offset) => displaced_mark(mark & !LOCK_MASK, offset, mem)?,
                },
                // Stack-locked under legacy locking, or marked by the GC.
                _ => return None,
            };
            decode_narrow(mark >> mark_shift, base, shift)?
        }
    };
    (klass >= MIN_ADDRESS && klass.is_multiple_of(8)).then_some(klass)
}

/// The mark an ObjectMonitor saved. The monitor may be deflated and freed while we read:
/// two reads must agree and hold a neutral mark.
fn displaced_mark(monitor: usize, offset: usize, mem: &impl Loads) -> Option<usize> {
    if monitor < MIN_ADDRESS || !monitor.is_multiple_of(8) {
        return None;
    }
    let at = monitor.checked_add(offset)?;
    let first = mem.usize_at(at)?;
    let second = mem.usize_at(at)?;
    (first == second && first & LOCK_MASK == UNLOCKED).then_some(first)
}

fn decode_narrow(narrow: usize, base: usize, shift: u32) -> Option<usize> {
    if narrow == 0 || shift >= 64 {
        return None;
    }
    base.checked_add(narrow.checked_shl(shift)?)
}

/// Whether `klass` is a live class: its mirror's `Klass*` is `klass` again. A stray word
/// decoded as a narrow klass lands on metadata that fails this round trip.
fn is_class(l: &ReceiverLayout, klass: usize, mem: &impl Loads) -> bool {
    let mirror = klass
        .checked_add(l.java_mirror)
        .and_then(|slot| mem.usize_at(slot))
        .filter(|&slot| slot != 0)
        .and_then(|slot| mem.usize_at(slot))
        .and_then(|raw| oop::encoding().decode(raw, true))
        .filter(|&m| m != 0);
    mirror
        .and_then(|m| m.checked_add(l.mirror_klass_offset))
        .and_then(|at| mem.usize_at(at))
        == Some(klass)
}

#[cfg(test)]
#[path = "receiver_tests.rs"]
mod tests;
