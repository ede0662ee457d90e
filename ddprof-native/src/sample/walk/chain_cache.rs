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

/// Slots: 2048 of 128 bytes (with the sequence number), 256 KiB.
const SLOTS: usize = 2048;

/// Scopes a cached chain holds at most: a compiled frame and up to nine methods inlined
/// into it. Six missed the chains of a small recursive workload's hot frames (eight scopes,
/// `OverheadWorker`'s `CpuWorkload`), which were then decoded on every sample; longer chains
/// are still decoded every time.
pub(super) const MAX_CACHED: usize = 10;

// A slot's words: the key, the compile id and count, the methods, the bcis four to a word
// (each bci + 1 in 16 bits: a bytecode index is below 65,535, and -1 is the one negative
// value a scope holds). With the sequence number, 16 words: one 128-byte aligned slot.
const PC: usize = 0;
const ID_COUNT: usize = 1;
const METHODS: usize = 2;
const BCIS: usize = METHODS + MAX_CACHED;
const WORDS: usize = BCIS + MAX_CACHED.div_ceil(4);
const _: () = assert!(
    WORDS + 1 == 16,
    "a slot is one 128-byte pair of cache lines"
);

/// A bci as a slot keeps it, if it fits.
fn pack_bci(bci: i32) -> Option<usize> {
    (-1..=0xfffe).contains(&bci).then(|| (bci + 1) as usize)
}

fn unpack_bci(bits: usize) -> i32 {
    (bits & 0xffff) as i32 - 1
}

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
    #[link_section = sample_path_section!()]
    pub(super) fn get(&self, pc: usize, compile_id: i32, out: &mut [ScopeFrame]) -> Option<usize> {
        let w = self.slots.read(pc)?;
        let count = w[ID_COUNT] >> 32;
        if pc == 0
            || w[PC] != pc
            || w[ID_COUNT] as u32 != compile_id as u32
            || count == 0
            || count > MAX_CACHED
            || count > out.len()
        {
            return None;
        }
        for (i, s) in out.iter_mut().take(count).enumerate() {
            *s = ScopeFrame {
                method: w[METHODS + i],
                bci: unpack_bci(w[BCIS + i / 4] >> (16 * (i % 4))),
            };
        }
        Some(count)
    }

    /// Keeps a complete chain decoded at `pc` of the nmethod with `compile_id`, if it is
    /// short enough, its bcis fit, and no other write to its slot is under way. Signal-safe.
    #[link_section = sample_path_section!()]
    pub(super) fn put(&self, pc: usize, compile_id: i32, chain: &[ScopeFrame]) {
        if pc == 0 || chain.is_empty() || chain.len() > MAX_CACHED {
            return;
        }
        let mut w = [0usize; WORDS];
        w[PC] = pc;
        w[ID_COUNT] = compile_id as u32 as usize | (chain.len() << 32);
        for (i, s) in chain.iter().enumerate() {
            let Some(bci) = pack_bci(s.bci) else {
                return;
            };
            w[METHODS + i] = s.method;
            w[BCIS + i / 4] |= bci << (16 * (i % 4));
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
        // Longer chains are not kept (the old entry stays); nor are empty ones, nor chains
        // with a bci the slot cannot hold.
        cache.put(pc, 7, &chain(MAX_CACHED + 1, 1));
        cache.put(pc, 8, &[]);
        let mut odd = chain(3, 2);
        odd[1].bci = 0x1_0000;
        cache.put(pc, 9, &odd);
        assert_eq!(cache.get(pc, 7, &mut out), None);
        assert_eq!(cache.get(pc, 9, &mut out), None);
        // The largest bci a method can have round-trips.
        let mut wide = chain(2, 3);
        wide[1].bci = 0xfffe;
        cache.put(pc + 8, 10, &wide);
        assert_eq!(cache.get(pc + 8, 10, &mut out), Some(2));
        assert_eq!(&out[..2], &wide[..]);
        assert_eq!(cache.get(pc, 5, &mut out), Some(MAX_CACHED));
        // An output too short for the chain is a miss, never a partial chain.
        assert_eq!(cache.get(pc, 5, &mut out[..2]), None);
    }
}
