//! Lock-free interning of call traces: open addressing over a fixed slot array, frames
//! copied into a fixed arena. Signal-safe insert; nothing ever grows.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::Frame;
use crate::counters::Counter;
use crate::memory::{Category, Mapped, Zeroable};

const EMPTY: u32 = 0;
const READY: u32 = 1;
/// The slot was claimed but the arena had no room: it stays dead until `clear`.
const DEAD: u32 = 2;
const MAX_PROBES: usize = 512;
/// Bounded wait for another CPU that is copying a trace with the same hash.
const MAX_SPINS: usize = 10_000;

#[repr(C)]
struct Slot {
    hash: AtomicU64,
    state: AtomicU32,
    offset: AtomicU32,
    len: AtomicU32,
    truncated: AtomicU32,
}
// SAFETY: atomics are valid when zeroed.
unsafe impl Zeroable for Slot {}

#[repr(transparent)]
struct FrameCell(UnsafeCell<Frame>);
// SAFETY: Frame is plain data whose all-zero value is valid (kind 0 = JavaMethodId).
unsafe impl Zeroable for FrameCell {}

pub struct TraceTable {
    slots: Mapped<Slot>,
    frames: Mapped<FrameCell>,
    frames_used: AtomicUsize,
    traces: AtomicUsize,
    /// Bytes the stored traces take (frames and slots), as `calltrace_storage_bytes` counts.
    bytes: AtomicUsize,
    mask: usize,
}

// SAFETY: a frame range is written only by the thread that claimed its slot, before it
// publishes the slot with a Release store of READY; readers read it only after an
// Acquire load of READY. Ranges never overlap (fetch_add on `frames_used`).
unsafe impl Sync for TraceTable {}

/// One stored trace, as a dump sees it.
pub struct TraceView<'a> {
    pub id: u32,
    pub truncated: bool,
    pub frames: &'a [Frame],
}

/// Two independent multiply-rotate chains, one over the methods and one over bci and kinds,
/// which the CPU runs side by side (one chain over both words was a serial dependency of two
/// rounds per frame: the larger part of interning a hit), folded by a finalizer so that the
/// low bits the table indexes by depend on every input bit.
fn hash(frames: &[Frame], truncated: bool) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut a: u64 = 0xcbf2_9ce4_8422_2325 ^ truncated as u64;
    let mut b: u64 = frames.len() as u64;
    for f in frames {
        let packed = ((f.bci as u32 as u64) << 16) | ((f.kind as u64) << 8) | f.frame_type as u64;
        a = (a ^ f.method).wrapping_mul(K).rotate_left(29);
        b = (b ^ packed).wrapping_mul(K).rotate_left(29);
    }
    let mut h = a ^ b.rotate_left(32);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h | 1
}

impl TraceTable {
    /// `slots` must be a power of two.
    pub fn new(slots: usize, frames: usize) -> TraceTable {
        assert!(slots.is_power_of_two());
        TraceTable {
            slots: Mapped::new(slots, Category::CallTrace),
            frames: Mapped::new(frames, Category::CallTrace),
            frames_used: AtomicUsize::new(0),
            traces: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            mask: slots - 1,
        }
    }

    /// Interns `frames` and returns its id (>= 1), or None when the table or arena is full.
    /// Signal-safe.
    pub fn insert(&self, frames: &[Frame], truncated: bool) -> Option<u32> {
        let h = hash(frames, truncated);
        let mut i = (h as usize) & self.mask;
        for _ in 0..MAX_PROBES {
            let slot = self.slots.get(i)?;
            let mut cur = slot.hash.load(Ordering::Acquire);
            if cur == 0 {
                match slot
                    .hash
                    .compare_exchange(0, h, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => return self.fill(slot, i, frames, truncated),
                    Err(actual) => cur = actual,
                }
            }
            if cur == h && self.matches(slot, frames, truncated) {
                return Some(i as u32 + 1);
            }
            i = (i + 1) & self.mask;
        }
        Counter::CallTraceStorageDroppedTraces.inc();
        None
    }

    fn fill(&self, slot: &Slot, index: usize, frames: &[Frame], truncated: bool) -> Option<u32> {
        let n = frames.len();
        let offset = self.frames_used.fetch_add(n, Ordering::Relaxed);
        let Some(cells) = self.frames.get(offset..offset.wrapping_add(n)) else {
            slot.state.store(DEAD, Ordering::Release);
            Counter::CallTraceStorageDroppedTraces.inc();
            return None;
        };
        for (cell, f) in cells.iter().zip(frames) {
            // SAFETY: this range belongs to this slot alone and is not yet published.
            unsafe { *cell.0.get() = *f };
        }
        slot.offset.store(offset as u32, Ordering::Relaxed);
        slot.len.store(n as u32, Ordering::Relaxed);
        slot.truncated.store(truncated as u32, Ordering::Relaxed);
        slot.state.store(READY, Ordering::Release);
        self.traces.fetch_add(1, Ordering::Relaxed);
        let bytes = std::mem::size_of_val(frames) + std::mem::size_of::<Slot>();
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        Counter::CallTraceStorageTraces.inc();
        Counter::CallTraceStorageBytes.add(bytes as i64);
        Counter::CallTraceStorageInserts.inc();
        Counter::CallTraceStorageInsertedBytes.add(bytes as i64);
        Some(index as u32 + 1)
    }

    /// Whether the slot, once published, holds exactly this trace.
    fn matches(&self, slot: &Slot, frames: &[Frame], truncated: bool) -> bool {
        for _ in 0..MAX_SPINS {
            match slot.state.load(Ordering::Acquire) {
                READY => {
                    return self.stored(slot) == Some(frames)
                        && (slot.truncated.load(Ordering::Relaxed) != 0) == truncated
                }
                DEAD => return false,
                _ => std::hint::spin_loop(),
            }
        }
        false
    }

    fn stored(&self, slot: &Slot) -> Option<&[Frame]> {
        let offset = slot.offset.load(Ordering::Relaxed) as usize;
        let len = slot.len.load(Ordering::Relaxed) as usize;
        let cells = self.frames.get(offset..offset + len)?;
        // SAFETY: FrameCell is repr(transparent) over UnsafeCell<Frame>, itself
        // layout-compatible with Frame; the range was published READY and is never
        // written again until `clear`, which needs `&mut self`.
        Some(unsafe { std::slice::from_raw_parts(cells.as_ptr() as *const Frame, len) })
    }

    pub fn len(&self) -> usize {
        self.traces.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every published trace. Call only when no writer is active.
    pub fn iter(&self) -> impl Iterator<Item = TraceView<'_>> {
        self.slots.iter().enumerate().filter_map(|(i, slot)| {
            if slot.state.load(Ordering::Acquire) != READY {
                return None;
            }
            Some(TraceView {
                id: i as u32 + 1,
                truncated: slot.truncated.load(Ordering::Relaxed) != 0,
                frames: self.stored(slot)?,
            })
        })
    }

    /// Frames of trace `id`, if stored.
    pub fn get(&self, id: u32) -> Option<&[Frame]> {
        let slot = self.slots.get((id as usize).checked_sub(1)?)?;
        (slot.state.load(Ordering::Acquire) == READY)
            .then(|| self.stored(slot))
            .flatten()
    }

    /// Forgets every trace; the counters then count only what the other generation holds,
    /// so they follow the working set of stacks, not the run's history. Call only when no
    /// writer is active.
    pub fn clear(&self) {
        let traces = self.traces.load(Ordering::Relaxed);
        let bytes = self.bytes.swap(0, Ordering::Relaxed);
        Counter::CallTraceStorageTraces.add(-(traces as i64));
        Counter::CallTraceStorageBytes.add(-(bytes as i64));
        for slot in self.slots.iter() {
            if slot.hash.load(Ordering::Relaxed) != 0 {
                slot.state.store(EMPTY, Ordering::Relaxed);
                slot.hash.store(0, Ordering::Relaxed);
            }
        }
        self.frames_used.store(0, Ordering::Relaxed);
        self.traces.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn trace(seed: u64, depth: usize) -> Vec<Frame> {
        (0..depth)
            .map(|d| Frame::java(seed * 1000 + d as u64, d as i32, 1))
            .collect()
    }

    #[test]
    fn same_trace_gets_same_id_and_different_traces_differ() {
        let t = TraceTable::new(64, 1024);
        let a = t.insert(&trace(1, 5), false).unwrap();
        let b = t.insert(&trace(2, 5), false).unwrap();
        assert_ne!(a, b);
        assert_eq!(t.insert(&trace(1, 5), false), Some(a));
        assert_ne!(
            t.insert(&trace(1, 5), true),
            Some(a),
            "truncation is part of identity"
        );
        assert_eq!(t.get(a).unwrap(), &trace(1, 5)[..]);
    }

    #[test]
    fn full_arena_drops_instead_of_blocking() {
        let t = TraceTable::new(64, 8);
        assert!(t.insert(&trace(1, 6), false).is_some());
        assert!(t.insert(&trace(2, 6), false).is_none());
        t.clear();
        assert!(t.is_empty());
        assert!(t.insert(&trace(2, 6), false).is_some());
    }

    #[test]
    fn concurrent_inserts_agree_on_ids() {
        let t = Arc::new(TraceTable::new(4096, 1 << 16));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    (0..500u64)
                        .map(|k| {
                            t.insert(&trace(k % 200, 1 + (k % 200 % 7) as usize), false)
                                .unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let results: Vec<Vec<u32>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        // Every id holds the trace it was returned for.
        for r in &results {
            for (k, id) in r.iter().enumerate() {
                assert_eq!(
                    t.get(*id).unwrap(),
                    &trace(k as u64 % 200, 1 + k % 200 % 7)[..]
                );
            }
        }
        // A writer waits only so long for a slot another one is filling (a signal
        // handler must not wait on a preempted thread), so on a loaded host the same
        // trace can, rarely, take a second slot: a little more than 200, never fewer.
        assert!((200..=240).contains(&t.len()), "{} traces", t.len());
    }
}
