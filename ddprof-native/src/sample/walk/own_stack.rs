//! Plain loads of the sampled thread's own stack.
//!
//! The walker reads a frame's slots (return address, saved fp, an interpreter frame's Method*
//! and bcp) from the stack of the thread it runs on: it walks in that thread's signal handler,
//! or from that thread's own registers. Memory between the interrupted `sp` and the thread's
//! stack base is that thread's stack in use, so it is mapped and readable, and such a read
//! needs no crash protection; a frame slot outside that range (a stale frame size or fp
//! pointing elsewhere) still goes through the protected loads. That makes the commonest load
//! of a deep stack an ordinary memory read (docs/benchmarks.md, "The tracer's full
//! configuration": two to five of them per frame).
//!
//! Why `[sp, base)` is readable:
//! - `base` is `JavaThread::_stack_base` of the current thread (found through its TLS, not
//!   guessed), and the range's top word is probed with a protected load before any plain one;
//! - a thread stack is one mapping (an mmap for threads, the grows-down stack of the primordial
//!   thread, grown past `sp` already), so nothing between `sp` and `base` is unmapped;
//! - the only inaccessible pages inside it are HotSpot's guard zones (red, yellow, reserved)
//!   and a libc guard page, all at its low end: the range is used only when `sp` lies above
//!   them ([`GuardZones`]: their size from the JVM's flags, read at start), so none is
//!   between `sp` and `base`. An `sp` inside them (a stack overflow being handled), outside the
//!   stack (an alternate signal stack) or an unknown guard size leaves the range empty.
//!
//! Reads are volatile: the VM may write the slots of a thread blocked in native code (a GC
//! updating its oops) while we read them; a torn or changed value is only a bad frame, which
//! the walker's checks already reject.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::sample::load_census::{self, Site};
use crate::sample::safe_access;
use crate::sample::vm::debuginfo::Memory;

/// Bytes at the low end of a Java thread's stack that may be protected: HotSpot's red, yellow
/// and reserved zones plus a libc guard page. `None` when unknown (then no plain loads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardZones(pub Option<usize>);

/// The guard zones of this JVM's Java threads, set once at start ([`set_guard_zones`]);
/// `usize::MAX` until then (unknown: no plain loads).
static GUARD: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Records this JVM's guard zone bytes (`hotspot::vmstructs::flags::stack_guard_bytes`), before
/// the walker first runs.
pub fn set_guard_zones(guard: GuardZones) {
    GUARD.store(guard.0.unwrap_or(usize::MAX), Ordering::Relaxed);
}

/// What [`set_guard_zones`] recorded. Signal-safe.
pub fn guard_zones() -> GuardZones {
    match GUARD.load(Ordering::Relaxed) {
        usize::MAX => GuardZones(None),
        bytes => GuardZones(Some(bytes)),
    }
}

/// Memory for one walk: plain loads in `[low, high)` (the thread's own live stack, or
/// nothing), crash-protected loads elsewhere, counted at `site` by the load census.
#[derive(Clone, Copy, Debug)]
pub struct OwnStack {
    low: usize,
    high: usize,
    site: Site,
}

impl OwnStack {
    /// No plain range: every read is protected.
    pub const fn protected(site: Site) -> OwnStack {
        OwnStack {
            low: 0,
            high: 0,
            site,
        }
    }

    /// The current thread's live stack `[sp, stack_base)`, if `sp` is a stack pointer of the
    /// current thread (the interrupted one of its signal, or its own) inside
    /// `[stack_low + guard, stack_base)` and the stack's top word is readable. Signal-safe.
    #[link_section = sample_path_section!()]
    pub fn of_current_thread(
        sp: usize,
        stack_low: usize,
        stack_base: usize,
        guard: GuardZones,
        site: Site,
    ) -> OwnStack {
        let Some(guard) = guard.0 else {
            return OwnStack::protected(site);
        };
        let usable = stack_low != 0 && stack_low.checked_add(guard).is_some_and(|l| l <= sp);
        if !usable || sp >= stack_base || stack_base < 8 {
            return OwnStack::protected(site);
        }
        if safe_access::load_usize_at(Site::Thread, stack_base - 8).is_none() {
            return OwnStack::protected(site);
        }
        OwnStack {
            low: sp,
            high: stack_base,
            site,
        }
    }

    /// The same range, its protected loads counted at `site`.
    pub fn at(self, site: Site) -> OwnStack {
        OwnStack { site, ..self }
    }

    /// Whether `[addr, addr + len)` is in the plain range.
    #[inline(always)]
    fn holds(&self, addr: usize, len: usize) -> bool {
        addr >= self.low && addr.checked_add(len).is_some_and(|end| end <= self.high)
    }

    /// The word at `addr`. Signal-safe.
    #[inline]
    pub fn word(&self, addr: usize) -> Option<usize> {
        self.read_usize(addr)
    }
}

impl Memory for OwnStack {
    #[inline]
    fn read_u8(&self, addr: usize) -> Option<u8> {
        if self.holds(addr, 1) {
            load_census::count(Site::StackPlain);
            // SAFETY: `addr` is in the current thread's live stack (see the module docs).
            return Some(unsafe { core::ptr::read_volatile(addr as *const u8) });
        }
        safe_access::load_u8_at(self.site, addr)
    }

    #[inline]
    fn read_u32(&self, addr: usize) -> Option<u32> {
        if self.holds(addr, 4) {
            load_census::count(Site::StackPlain);
            // SAFETY: `addr` is in the current thread's live stack; it may be unaligned.
            return Some(unsafe { (addr as *const u32).read_unaligned() });
        }
        safe_access::load_u32_at(self.site, addr)
    }

    #[inline]
    #[link_section = sample_path_section!()]
    fn read_usize(&self, addr: usize) -> Option<usize> {
        if self.holds(addr, 8) {
            load_census::count(Site::StackPlain);
            if addr.is_multiple_of(8) {
                // SAFETY: `addr` is an aligned word of the current thread's live stack.
                return Some(unsafe { core::ptr::read_volatile(addr as *const usize) });
            }
            // SAFETY: as above, unaligned.
            return Some(unsafe { (addr as *const usize).read_unaligned() });
        }
        safe_access::load_usize_at(self.site, addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_live_stack_plainly_and_refuses_what_is_outside() {
        let words = [0x1111usize, 0x2222, 0x3333, 0x4444];
        let low = words.as_ptr() as usize;
        let high = low + 32;
        // A stack whose guard zones end below `low`: the range is [sp, base).
        let stack = OwnStack::of_current_thread(
            low + 8,
            low - 4096,
            high,
            GuardZones(Some(4096)),
            Site::Other,
        );
        assert_eq!(stack.word(low + 8), Some(0x2222));
        assert_eq!(stack.word(low + 24), Some(0x4444));
        // Below sp and past the base: not plain; the protected load reads it if readable.
        assert!(!stack.holds(low, 8));
        assert!(!stack.holds(high - 4, 8));
        // Null page through the protected path: None, no crash.
        assert_eq!(stack.word(8), None);
    }

    #[test]
    fn no_plain_range_when_sp_is_in_the_guard_zones_or_outside_the_stack() {
        let words = [0usize; 4];
        let low = words.as_ptr() as usize;
        let high = low + 32;
        let in_guard =
            OwnStack::of_current_thread(low, low - 64, high, GuardZones(Some(4096)), Site::Other);
        assert!(!in_guard.holds(low, 8));
        let unknown =
            OwnStack::of_current_thread(low, low - 8192, high, GuardZones(None), Site::Other);
        assert!(!unknown.holds(low, 8));
        let outside =
            OwnStack::of_current_thread(high, low - 8192, high, GuardZones(Some(0)), Site::Other);
        assert!(!outside.holds(high, 8));
    }
}
