//! What earlier walks read of nmethod headers ([`NmethodCache`]), shared by every walk
//! of one walker: a deep stack of a large program meets about two dozen nmethods a walk,
//! mostly the same ones sample after sample, and each costs about thirteen protected loads
//! on cold memory (code begin, frame size, method, level, where its debug info is) where
//! a hit here costs one: its compile id.
//!
//! # Why a hit is safe
//! The key is the blob's address as the code-cache lookup found it for this pc now, so a
//! blob of that address exists now and is an nmethod. The cached facts are taken only if
//! its `_compile_id` still equals the one read with them: HotSpot hands out compile ids
//! from a counter and never twice, so an nmethod freed and replaced by another at the same
//! address fails the check, and everything an nmethod's header says (its code, frame
//! size, method, level, debug-info ranges) is fixed from its installation to its
//! freeing. A hit reads the same values a miss would read again.
//!
//! # Concurrency
//! Any thread's handler may read or write any slot, and a handler may interrupt a write
//! on its own thread. Each slot has a sequence number, odd while a write is under way:
//! a writer claims the slot with one compare-and-swap from even to odd and gives up if
//! that fails (another write is under way; the facts are only a cache); a reader takes a
//! slot only if the number was even and unchanged across its reads. Nothing waits, so
//! nothing can deadlock in a signal handler. Signal-safe: atomics, no allocation after
//! `new`.

use std::sync::atomic::{fence, AtomicUsize, Ordering};

use super::memo::NmethodFacts;
use crate::sample::vm::debuginfo::{NmethodDebugInfo, NmethodScopes};

/// Slots: 2048 of 112 bytes, 224 KiB.
const SLOTS: usize = 2048;

/// Words of one slot's facts.
const WORDS: usize = 13;

// Where each fact sits in a slot's words.
const BLOB: usize = 0;
const COMPILE_ID: usize = 1;
const CODE_BEGIN: usize = 2;
const FRAME_BYTES: usize = 3;
const METHOD: usize = 4;
const COMPLETE: usize = 5;
/// The frame type in the low byte; above it whether the debug info is known, and readable.
const FLAGS: usize = 6;
const PCS_BEGIN: usize = 7;
const PCS_END: usize = 8;
const DATA: usize = 9;
const DATA_LEN: usize = 10;
const METADATA: usize = 11;
const METADATA_LEN: usize = 12;

const DEBUG_KNOWN: usize = 1 << 8;
const DEBUG_READABLE: usize = 1 << 9;

#[derive(Default)]
struct Slot {
    seq: AtomicUsize,
    words: [AtomicUsize; WORDS],
}

pub(super) struct NmethodCache {
    slots: Box<[Slot]>,
}

impl NmethodCache {
    /// An empty cache (allocates; not signal-safe).
    pub(super) fn new() -> NmethodCache {
        NmethodCache {
            slots: std::iter::repeat_with(Slot::default).take(SLOTS).collect(),
        }
    }

    fn slot(&self, blob: usize) -> Option<&Slot> {
        // Fibonacci hashing of the bits above the blob alignment (at least 32 bytes).
        let i = (blob >> 5).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            >> (usize::BITS - SLOTS.trailing_zeros());
        self.slots.get(i)
    }

    /// The facts an earlier walk read of the nmethod at `blob` whose compile id is
    /// `compile_id` (read now), if this cache still has them. Signal-safe.
    pub(super) fn get(&self, blob: usize, compile_id: i32) -> Option<NmethodFacts> {
        let slot = self.slot(blob)?;
        let before = slot.seq.load(Ordering::Acquire);
        if before & 1 != 0 {
            return None;
        }
        let mut w = [0usize; WORDS];
        for (v, a) in w.iter_mut().zip(&slot.words) {
            *v = a.load(Ordering::Relaxed);
        }
        fence(Ordering::Acquire);
        if slot.seq.load(Ordering::Relaxed) != before {
            return None;
        }
        if blob == 0 || w[BLOB] != blob || w[COMPILE_ID] != compile_id as u32 as usize {
            return None;
        }
        let flags = w[FLAGS];
        let debug = match (flags & DEBUG_KNOWN != 0, flags & DEBUG_READABLE != 0) {
            (false, _) => None,
            (true, false) => Some(None),
            (true, true) => Some(Some(NmethodDebugInfo {
                pcs_begin: w[PCS_BEGIN],
                pcs_end: w[PCS_END],
                scopes: NmethodScopes {
                    data: w[DATA],
                    data_len: w[DATA_LEN],
                    metadata: w[METADATA],
                    metadata_len: w[METADATA_LEN],
                },
            })),
        };
        Some(NmethodFacts {
            blob,
            compile_id,
            code_begin: w[CODE_BEGIN],
            frame_bytes: w[FRAME_BYTES],
            method: w[METHOD],
            frame_type: (flags & 0xff) as u8,
            complete: w[COMPLETE],
            debug,
        })
    }

    /// Keeps `facts` for later walks, unless another write to its slot is under way.
    /// Signal-safe.
    pub(super) fn put(&self, facts: &NmethodFacts) {
        let Some(slot) = self.slot(facts.blob) else {
            return;
        };
        let seq = slot.seq.load(Ordering::Relaxed);
        if seq & 1 != 0
            || slot
                .seq
                .compare_exchange(
                    seq,
                    seq.wrapping_add(1),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return;
        }
        // Readers that see any of the words below see the odd number first.
        fence(Ordering::Release);
        let (known, info) = match facts.debug {
            None => (0, None),
            Some(None) => (DEBUG_KNOWN, None),
            Some(Some(d)) => (DEBUG_KNOWN | DEBUG_READABLE, Some(d)),
        };
        let mut w = [0usize; WORDS];
        w[BLOB] = facts.blob;
        w[COMPILE_ID] = facts.compile_id as u32 as usize;
        w[CODE_BEGIN] = facts.code_begin;
        w[FRAME_BYTES] = facts.frame_bytes;
        w[METHOD] = facts.method;
        w[COMPLETE] = facts.complete;
        w[FLAGS] = usize::from(facts.frame_type) | known;
        if let Some(d) = info {
            w[PCS_BEGIN] = d.pcs_begin;
            w[PCS_END] = d.pcs_end;
            w[DATA] = d.scopes.data;
            w[DATA_LEN] = d.scopes.data_len;
            w[METADATA] = d.scopes.metadata;
            w[METADATA_LEN] = d.scopes.metadata_len;
        }
        for (a, v) in slot.words.iter().zip(w) {
            a.store(v, Ordering::Relaxed);
        }
        slot.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(blob: usize, compile_id: i32) -> NmethodFacts {
        NmethodFacts {
            blob,
            compile_id,
            code_begin: blob + 0x100,
            frame_bytes: 48,
            method: 0x7f00_1000,
            frame_type: 3,
            complete: blob + 0x120,
            debug: None,
        }
    }

    #[test]
    fn a_hit_needs_the_same_blob_and_compile_id() {
        let cache = NmethodCache::new();
        let blob = 0x7f12_3456_7880;
        assert!(cache.get(blob, 7).is_none(), "empty");
        cache.put(&facts(blob, 7));
        let hit = cache.get(blob, 7).expect("hit");
        assert_eq!(
            (hit.code_begin, hit.frame_bytes, hit.method),
            (blob + 0x100, 48, 0x7f00_1000)
        );
        assert_eq!((hit.frame_type, hit.complete), (3, blob + 0x120));
        assert!(hit.debug.is_none());
        // Another nmethod installed at the freed one's address: a new compile id.
        assert!(cache.get(blob, 8).is_none());
        // Negative ids compare as the 32 bits they are.
        cache.put(&facts(blob, -2));
        assert!(cache.get(blob, -2).is_some());
        assert!(cache.get(0, 0).is_none());
    }

    #[test]
    fn debug_info_round_trips_known_unreadable_and_unknown() {
        let cache = NmethodCache::new();
        let blob = 0x7f12_0000_0040;
        let mut f = facts(blob, 1);
        f.debug = Some(None);
        cache.put(&f);
        assert_eq!(cache.get(blob, 1).unwrap().debug, Some(None));
        let d = NmethodDebugInfo {
            pcs_begin: 1,
            pcs_end: 2,
            scopes: NmethodScopes {
                data: 3,
                data_len: usize::MAX / 4,
                metadata: 5,
                metadata_len: 6,
            },
        };
        f.debug = Some(Some(d));
        cache.put(&f);
        assert_eq!(cache.get(blob, 1).unwrap().debug, Some(Some(d)));
    }

    #[test]
    fn a_slot_being_written_is_neither_read_nor_written() {
        let cache = NmethodCache::new();
        let blob = 0x7f12_0000_0080;
        cache.put(&facts(blob, 1));
        let slot = cache.slot(blob).unwrap();
        // A write interrupted (by a signal) half way: the sequence number is odd.
        slot.seq.fetch_add(1, Ordering::Relaxed);
        assert!(cache.get(blob, 1).is_none(), "read while odd");
        cache.put(&facts(blob, 2));
        slot.seq.fetch_add(1, Ordering::Relaxed);
        assert!(cache.get(blob, 2).is_none(), "the nested write gave up");
        assert!(
            cache.get(blob, 1).is_some(),
            "the first write's facts stand"
        );
    }

    #[test]
    fn concurrent_writers_never_give_a_reader_a_torn_slot() {
        // Two nmethods sharing one slot, written over and over by two threads while a third
        // reads: every hit must be one nmethod's facts whole.
        let cache = std::sync::Arc::new(NmethodCache::new());
        let a = 0x7f00_0000_0000usize;
        let mut b = a + 32;
        while cache.slot(b).map(|s| s as *const Slot) != cache.slot(a).map(|s| s as *const Slot) {
            b += 32;
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = [(a, 1), (b, 2)]
            .into_iter()
            .map(|(blob, id)| {
                let (cache, stop) = (cache.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        cache.put(&facts(blob, id));
                        for _ in 0..64 {
                            std::hint::spin_loop();
                        }
                    }
                })
            })
            .collect();
        let mut hits = 0;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        for i in 0.. {
            if hits >= 10_000 || std::time::Instant::now() > deadline {
                break;
            }
            let (blob, id) = if i % 2 == 0 { (a, 1) } else { (b, 2) };
            if let Some(f) = cache.get(blob, id) {
                hits += 1;
                assert_eq!((f.code_begin, f.complete), (blob + 0x100, blob + 0x120));
            }
        }
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        assert!(hits > 0);
    }
}
