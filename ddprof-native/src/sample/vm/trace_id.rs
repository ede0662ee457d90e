//! Reading JFR's class trace ID (`Klass::_trace_id`) from a `Klass*`. VMStructs does not
//! export the field: its offset is found at run time by calibration
//! (`crate::hotspot::trace_id`) and published here before the lazy mode can start.
//!
//! The low 16 bits of the word are JFR's tag, epoch and meta bits: the ID is `value >> 16`.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::super::safe_access::load_u64;

/// The low bits of `_trace_id` that are JFR's tags, not the ID.
pub const ID_SHIFT: u32 = 16;

/// The calibrated offset; 0 until calibration succeeded. Read by signal handlers.
static OFFSET: AtomicUsize = AtomicUsize::new(0);

/// Publishes the calibrated offset (once, from the calibration).
pub fn publish_offset(offset: usize) {
    OFFSET.store(offset, Ordering::Release);
}

/// The calibrated offset; 0 if calibration has not run or failed. Signal-safe.
pub fn offset() -> usize {
    OFFSET.load(Ordering::Acquire)
}

/// The JFR trace ID of `klass` (`_trace_id >> 16`); `None` before calibration, when the
/// word is unreadable or 0. Signal-safe.
pub fn trace_id(klass: usize) -> Option<u64> {
    let offset = offset();
    if offset == 0 || klass == 0 {
        return None;
    }
    let id = load_u64(klass.checked_add(offset)?)? >> ID_SHIFT;
    (id != 0).then_some(id)
}
