//! A small direct-mapped cache of machine-word pairs (key -> value) whose entries are hints,
//! never facts: whoever reads one validates it against VM memory before use, so a stale
//! entry, or a torn pair written by two handlers at once, can only cost a lookup. The walker
//! keeps `Method*` -> jmethodID and pc -> `PcDesc*` pairs in it. Signal-safe: relaxed
//! atomics, no allocation after `new`.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Slots of every hint cache: 1024 pairs, 16 KiB.
pub const SLOTS: usize = 1024;

pub struct HintCache {
    slots: Box<[Slot]>,
}

#[derive(Default)]
struct Slot {
    key: AtomicUsize,
    value: AtomicUsize,
}

impl HintCache {
    /// An empty cache (allocates; not signal-safe).
    pub fn new() -> HintCache {
        HintCache {
            slots: std::iter::repeat_with(Slot::default).take(SLOTS).collect(),
        }
    }

    fn slot(&self, key: usize) -> Option<&Slot> {
        // Fibonacci hashing: the top ten bits of the product spread aligned keys.
        let i = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - 10);
        self.slots.get(i % SLOTS)
    }

    /// The value last put for `key`, if its slot still holds `key` (0 is never a key).
    /// Unvalidated. Signal-safe.
    pub fn get(&self, key: usize) -> Option<usize> {
        let slot = self.slot(key)?;
        (key != 0 && slot.key.load(Ordering::Relaxed) == key)
            .then(|| slot.value.load(Ordering::Relaxed))
    }

    /// Remembers `value` for `key`, replacing the slot's pair. Signal-safe.
    pub fn put(&self, key: usize, value: usize) {
        if let Some(slot) = self.slot(key) {
            slot.key.store(key, Ordering::Relaxed);
            slot.value.store(value, Ordering::Relaxed);
        }
    }
}

impl Default for HintCache {
    fn default() -> Self {
        HintCache::new()
    }
}
