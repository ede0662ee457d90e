//! Hash maps keyed by machine words (`Method*`, `Klass*`, IDs), for the dump's per-frame
//! caches.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hasher for keys that are already well-spread machine words (pointers, IDs): one
/// multiply per word instead of SipHash. Not for keys an attacker chooses.
#[derive(Default)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        // The multiply leaves the entropy in the high bits; hashbrown takes the bucket
        // from the low ones.
        self.0 ^ (self.0 >> 32)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
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
}
