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
//! Any thread's handler may read or write any slot, and a handler may interrupt a write on
//! its own thread: the slots are `super::seq_slots`'s, never read torn, never waited on.
//! Signal-safe: no allocation after `new`.

use super::memo::NmethodFacts;
use super::seq_slots::SeqSlots;
use crate::sample::vm::debuginfo::{NmethodDebugInfo, NmethodScopes};

/// Slots: 2048 of 112 bytes (with the sequence number) padded to 128, 256 KiB.
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

pub(super) struct NmethodCache {
    slots: SeqSlots<WORDS>,
}

/// A blob's slot key: its address above the blob alignment (at least 32 bytes).
fn key(blob: usize) -> usize {
    blob >> 5
}

impl NmethodCache {
    /// An empty cache (allocates; not signal-safe).
    pub(super) fn new() -> NmethodCache {
        NmethodCache {
            slots: SeqSlots::new(SLOTS),
        }
    }

    /// The facts an earlier walk read of the nmethod at `blob` whose compile id is
    /// `compile_id` (read now), if this cache still has them. Signal-safe.
    #[link_section = sample_path_section!()]
    pub(super) fn get(&self, blob: usize, compile_id: i32) -> Option<NmethodFacts> {
        let w = self.slots.read(key(blob))?;
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
        self.slots.write(key(facts.blob), w);
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
}
