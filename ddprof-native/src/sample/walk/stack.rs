//! What a frame of any walk is, below the walkers and the architecture files that both use it:
//! its registers ([`Cursor`]) and the thread's stack it must lie in ([`Bounds`]).

/// Largest distance between two consecutive frame pointers.
pub const MAX_FRAME_BYTES: usize = 1 << 20;
/// Stack window assumed for a thread whose stack bounds are unknown (no HotSpot `Thread`).
pub(crate) const UNKNOWN_STACK_BYTES: usize = 16 << 20;

/// pc, sp and fp of one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub pc: usize,
    pub sp: usize,
    pub fp: usize,
}

/// The thread's stack, `[low, high)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub low: usize,
    pub high: usize,
}

impl Bounds {
    /// `[low, base)` from a HotSpot `Thread`'s stack base and size; a window above `sp`
    /// when they are unknown (0) or do not hold `sp`.
    pub fn of_stack(base: usize, size: usize, sp: usize) -> Bounds {
        let low = base.saturating_sub(size);
        if base != 0 && size != 0 && low <= sp && sp < base {
            Bounds { low, high: base }
        } else {
            Bounds {
                low: sp,
                high: sp.saturating_add(UNKNOWN_STACK_BYTES),
            }
        }
    }

    pub fn holds(&self, addr: usize) -> bool {
        self.low <= addr && addr < self.high
    }

    /// Whether a frame record (two words: the caller's fp, the return address) can be at `fp`
    /// for a frame whose sp is `sp`: aligned, at or above `sp` and within [`MAX_FRAME_BYTES`]
    /// of it, both words inside the stack. Every architecture's frame-pointer step asks this.
    pub fn holds_record(&self, sp: usize, fp: usize) -> bool {
        fp.is_multiple_of(8)
            && fp >= sp
            && fp - sp <= MAX_FRAME_BYTES
            && self.holds(fp)
            && fp.checked_add(15).is_some_and(|end| self.holds(end))
    }
}
