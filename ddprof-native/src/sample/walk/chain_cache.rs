//! The inline chains earlier walks decoded at compiled pcs ([`ChainCache`]), shared by
//! every walk of one walker: a return address sampled again gives the same chain, and
//! finding its PcDesc and decoding its scopes costs about six protected loads a frame
//! (docs/benchmarks.md, "Loads per sample").
//!
//! # Why a hit is safe
//! An entry is keyed by the pc (with the top frame's offset rule applied, as the PcDesc
//! search is) and the compile id of the nmethod it was decoded in. The walker takes one
//! only for the nmethod it found for that pc now, whose compile id it has read in this
//! walk (`super::nmethod_cache` has why a compile id names one nmethod for the life of the
//! process); an nmethod's PcDescs and scopes never change while it exists, so the chain
//! decoded then is the chain decoded now. Only complete chains of at most [`MAX_CACHED`]
//! scopes are kept; the methods in them are lookup keys, validated where they are used as
//! before.
//!
//! # Concurrency
//! The slots are `super::seq_slots`'s: never read torn, never waited on. Signal-safe: no
//! allocation after `new`.

use super::seq_slots::SeqSlots;
use crate::sample::vm::debuginfo::ScopeFrame;

/// Slots: 2048 of 96 bytes, 192 KiB.
const SLOTS: usize = 2048;

/// Scopes a cached chain holds at most (a compiled frame and up to five methods inlined
/// into it: most chains; longer ones are decoded every time).
pub(super) const MAX_CACHED: usize = 6;

// A slot's words: the key, the count, the methods, the bcis two to a word.
const PC: usize = 0;
const COMPILE_ID: usize = 1;
const COUNT: usize = 2;
const METHODS: usize = 3;
const BCIS: usize = METHODS + MAX_CACHED;
const WORDS: usize = BCIS + MAX_CACHED / 2;

pub(super) struct ChainCache {
    slots: SeqSlots<WORDS>,
}

impl ChainCache {
    /// An empty cache (allocates; not signal-safe).
    pub(super) fn new() -> ChainCache {
        ChainCache {
            slots: SeqSlots::new(SLOTS),
        }
    }

    /// The chain decoded at `pc` of the nmethod with `compile_id`, innermost scope first,
    /// copied into `out`; its length, or None. Signal-safe.
    pub(super) fn get(&self, pc: usize, compile_id: i32, out: &mut [ScopeFrame]) -> Option<usize> {
        let w = self.slots.read(pc)?;
        let count = w[COUNT];
        if pc == 0
            || w[PC] != pc
            || w[COMPILE_ID] != compile_id as u32 as usize
            || count == 0
            || count > MAX_CACHED
            || count > out.len()
        {
            return None;
        }
        for (i, s) in out.iter_mut().take(count).enumerate() {
            *s = ScopeFrame {
                method: w[METHODS + i],
                bci: (w[BCIS + i / 2] >> (32 * (i % 2))) as u32 as i32,
            };
        }
        Some(count)
    }

    /// Keeps a complete chain decoded at `pc` of the nmethod with `compile_id`, if it is
    /// short enough and no other write to its slot is under way. Signal-safe.
    pub(super) fn put(&self, pc: usize, compile_id: i32, chain: &[ScopeFrame]) {
        if pc == 0 || chain.is_empty() || chain.len() > MAX_CACHED {
            return;
        }
        let mut w = [0usize; WORDS];
        w[PC] = pc;
        w[COMPILE_ID] = compile_id as u32 as usize;
        w[COUNT] = chain.len();
        for (i, s) in chain.iter().enumerate() {
            w[METHODS + i] = s.method;
            w[BCIS + i / 2] |= (s.bci as u32 as usize) << (32 * (i % 2));
        }
        self.slots.write(pc, w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: usize, salt: usize) -> Vec<ScopeFrame> {
        (0..n)
            .map(|i| ScopeFrame {
                method: 0x7f00_0000_1000 + 0x100 * (i + salt),
                bci: if i == 0 { -1 } else { (i * 7 + salt) as i32 },
            })
            .collect()
    }

    #[test]
    fn a_hit_needs_the_same_pc_and_compile_id_and_gives_the_chain_whole() {
        let cache = ChainCache::new();
        let pc = 0x7f11_0000_1234;
        let mut out = [ScopeFrame { method: 0, bci: 0 }; 64];
        assert_eq!(cache.get(pc, 5, &mut out), None, "empty");
        let c = chain(MAX_CACHED, 0);
        cache.put(pc, 5, &c);
        assert_eq!(cache.get(pc, 5, &mut out), Some(MAX_CACHED));
        assert_eq!(&out[..MAX_CACHED], &c[..], "methods and bcis, -1 included");
        assert_eq!(
            cache.get(pc, 6, &mut out),
            None,
            "another nmethod at the address"
        );
        assert_eq!(cache.get(pc + 1, 5, &mut out), None, "another pc");
        // Longer chains are not kept (the old entry stays); nor are empty ones.
        cache.put(pc, 7, &chain(MAX_CACHED + 1, 1));
        cache.put(pc, 8, &[]);
        assert_eq!(cache.get(pc, 7, &mut out), None);
        assert_eq!(cache.get(pc, 5, &mut out), Some(MAX_CACHED));
        // An output too short for the chain is a miss, never a partial chain.
        assert_eq!(cache.get(pc, 5, &mut out[..2]), None);
    }
}
