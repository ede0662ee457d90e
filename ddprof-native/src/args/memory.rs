//! Allocation and liveness sampling: `memory` and `generations`. They share the draft's memory
//! interval and record flags, which `parse` folds into `Args::memory` after the last token.

use super::draft::Draft;
use super::values::{parse_non_negative_units, parse_ratio, Reason, Units};
use super::{DEFAULT_ALLOC_INTERVAL, GENERATIONS_ALLOC_INTERVAL};

/// `memory[=INTERVAL[:FLAGS[:RATIO]]]`: `a` records allocations, `l` liveness, `L` liveness and
/// heap usage. Flags accumulate over repeated `memory` keys, as upstream. ddprof rejects a
/// malformed or negative interval where upstream does not.
pub(super) fn memory(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    let (number, flags, ratio) = match value {
        None => (None, None, None),
        Some(v) => {
            let mut parts = v.splitn(3, ':');
            (parts.next(), parts.next(), parts.next())
        }
    };
    d.memory_interval = Some(match number {
        None => DEFAULT_ALLOC_INTERVAL,
        Some(n) => parse_non_negative_units(n, Units::Bytes)?,
    });
    match flags {
        // No flags section at all: both allocations and liveness. An empty flags section
        // (`memory=1m:`) enables neither, as upstream.
        None => {
            d.record_allocations = true;
            d.record_liveness = true;
        }
        Some(flags) => {
            if flags.contains('a') {
                d.record_allocations = true;
            }
            if flags.contains('l') {
                d.record_liveness = true;
            } else if flags.contains('L') {
                d.record_liveness = true;
                d.record_heap_usage = true;
            }
            // The ratio only means something when liveness is tracked; upstream ignores it
            // otherwise, and so do we (no validation either).
            if let (true, Some(r)) = (d.record_liveness, ratio) {
                d.live_ratio = parse_ratio(r)?;
            }
        }
    }
    Ok(())
}

/// `generations=true` (only that value, any case) turns on the live-heap tracker (objects and
/// the GCs they survived; `parse` folds it into `Memory::liveness`, whatever the memory flags)
/// and, when no memory interval is set yet (or it is 0), sets a conservative one; a later
/// `memory=` replaces it.
pub(super) fn generations(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.generations = value.is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if d.args.generations && d.memory_interval.unwrap_or(0) == 0 {
        d.memory_interval = Some(GENERATIONS_ALLOC_INTERVAL);
    }
    Ok(())
}

/// `alloc[=BYTES]`, async-profiler's spelling that upstream's tests still use
/// (`cpu=1ms,alloc=512k`): allocation events at that interval, as `memory=BYTES:a`. A bare
/// `alloc` takes the default interval.
pub(super) fn alloc(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.memory_interval = Some(match value {
        None | Some("") => DEFAULT_ALLOC_INTERVAL,
        Some(n) => parse_non_negative_units(n, Units::Bytes)?,
    });
    d.record_allocations = true;
    Ok(())
}
