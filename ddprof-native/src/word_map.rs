//! Hash maps keyed by machine words (`Method*`, `Klass*`, IDs, pool ids) or by the short
//! strings of a dump (names, descriptors), for the dump's caches and the chunk's pools:
//! the std maps' SipHash was a visible part of a first dump that names tens of thousands of
//! methods.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Hasher for keys that are already well-spread machine words (pointers, IDs): one
/// multiply per word instead of SipHash; bytes (strings) eight at a time. Not for keys an
/// attacker chooses: the profiler's keys come from the JVM and the kernel.
#[derive(Default)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        // The multiply leaves the entropy in the high bits; hashbrown takes the bucket
        // from the low ones.
        self.0 ^ (self.0 >> 32)
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.write_u64(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(26) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

pub type WordMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;
pub type WordSet<K> = HashSet<K, BuildHasherDefault<WordHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::tags::Tag;
    use std::hash::BuildHasher;

    #[test]
    fn word_hasher_spreads_aligned_pointers_and_tags() {
        let b = BuildHasherDefault::<WordHasher>::default();
        let (mut low, mut top) = (
            std::collections::HashSet::new(),
            std::collections::HashSet::new(),
        );
        for i in 0..4096u64 {
            let key = (0x7f00_0000_0000 + i * 0x58, Tag::of_trace_id(i % 7));
            // hashbrown takes the bucket from the low bits and a tag from the top 7.
            let h = b.hash_one(key);
            low.insert(h & 0xfff);
            top.insert(h >> 57);
        }
        assert!(
            low.len() > 2500,
            "only {} distinct low-12-bit values",
            low.len()
        );
        assert_eq!(top.len(), 128);
    }

    #[test]
    fn word_hasher_tells_strings_apart_by_every_byte() {
        let b = BuildHasherDefault::<WordHasher>::default();
        let base = "java/util/concurrent/ConcurrentHashMap";
        let mut seen = std::collections::HashSet::new();
        for i in 0..base.len() {
            // The same string with one byte changed, at each position (the tail that is
            // not a whole word included), and every prefix.
            let mut changed = base.as_bytes().to_vec();
            changed[i] ^= 1;
            assert!(seen.insert(b.hash_one(std::str::from_utf8(&changed).unwrap())));
            assert!(seen.insert(b.hash_one(&base[..i])));
        }
        assert!(seen.insert(b.hash_one(base)));
        let mut top = std::collections::HashSet::new();
        for i in 0..4096 {
            top.insert(b.hash_one(format!("m{i}")) >> 57);
        }
        assert_eq!(top.len(), 128);
    }
}

/// Which of a few recent thread ids were seen already: a direct-mapped cache in front of a
/// per-event set insert, for a chunk's events, which come from a handful of threads
/// interleaved (a "last one seen" misses at every switch between two busy threads). A miss
/// only means the caller does its set insert again; 0 is never reported as seen.
#[derive(Default, Debug)]
pub struct RecentTids([i64; RECENT_TIDS]);

const RECENT_TIDS: usize = 16;

impl RecentTids {
    /// Whether `tid` was seen recently; remembers it either way.
    pub fn seen(&mut self, tid: i64) -> bool {
        let slot = &mut self.0[(tid as u64 as usize) % RECENT_TIDS];
        let seen = *slot == tid && tid != 0;
        *slot = tid;
        seen
    }
}

#[cfg(test)]
mod recent_tids_tests {
    use super::RecentTids;

    #[test]
    fn interleaved_threads_are_seen_after_their_first_event() {
        let mut r = RecentTids::default();
        assert!(!r.seen(101));
        assert!(!r.seen(102));
        assert!(r.seen(101) && r.seen(102) && r.seen(101));
        // 117 shares 101's slot: it replaces it, and 101 is new again.
        assert!(!r.seen(117));
        assert!(!r.seen(101));
        assert!(!r.seen(0) && !r.seen(0));
    }
}
