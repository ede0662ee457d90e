//! A small direct-mapped cache of machine-word pairs (key -> value) whose entries are hints,
//! never facts: whoever reads one validates it against VM memory before use, so a stale
//! entry, or a torn pair written by two handlers at once, can only cost a lookup. The walker
//! keeps `Method*` -> jmethodID and pc -> `PcDesc*` pairs in it. Signal-safe: relaxed
//! atomics, no allocation after `new`.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Slots of a hint cache unless its owner asks for more: 1024 pairs, 16 KiB.
pub const SLOTS: usize = 1024;

pub struct HintCache {
    slots: Box<[Slot]>,
    /// log2 of the slot count.
    bits: u32,
}

#[derive(Default)]
struct Slot {
    key: AtomicUsize,
    value: AtomicUsize,
}

impl HintCache {
    /// An empty cache of [`SLOTS`] pairs (allocates; not signal-safe).
    pub fn new() -> HintCache {
        HintCache::with_slots(SLOTS)
    }

    /// An empty cache of `slots` pairs, rounded up to a power of two (allocates; not
    /// signal-safe). Sized by what its keys are: a walker's caches see every method and
    /// pc that deep stacks of a large program reach, where 1024 slots thrash.
    pub fn with_slots(slots: usize) -> HintCache {
        let slots = slots.clamp(2, 1 << 20).next_power_of_two();
        HintCache {
            slots: std::iter::repeat_with(Slot::default).take(slots).collect(),
            bits: slots.trailing_zeros(),
        }
    }

    fn slot(&self, key: usize) -> Option<&Slot> {
        // Fibonacci hashing: the top bits of the product spread aligned keys.
        let i = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - self.bits);
        self.slots.get(i)
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
