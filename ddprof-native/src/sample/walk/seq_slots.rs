//! Fixed slots of `W` words that any thread's signal handler may read or write at once
//! ([`SeqSlots`]): the store of the walker's cross-walk caches (`super::nmethod_cache`,
//! `super::chain_cache`).
//!
//! Each slot has a sequence number, odd while a write is under way: a writer claims the
//! slot with one compare-and-swap from even to odd and gives up if that fails (another
//! write is under way, perhaps the one this handler interrupted on its own thread; the
//! words are only a cache); a reader takes a slot's words only if the number was even and
//! unchanged across its reads. Nothing waits, so nothing can deadlock in a signal handler,
//! and no reader sees words of two writes. Signal-safe: atomics, no allocation after `new`.

use std::sync::atomic::{fence, AtomicUsize, Ordering};

/// Aligned to 128 bytes: a slot of up to 16 words (its sequence number included) then lies in
/// one aligned pair of cache lines, which the L2's adjacent-line prefetcher fetches together,
/// instead of straddling two or three lines at any offset; a cold hit waits for one miss.
#[repr(C, align(128))]
struct Slot<const W: usize> {
    seq: AtomicUsize,
    words: [AtomicUsize; W],
}

pub(super) struct SeqSlots<const W: usize> {
    slots: Box<[Slot<W>]>,
    /// log2 of the slot count.
    bits: u32,
}

impl<const W: usize> SeqSlots<W> {
    /// `count` slots (a power of two), all words 0 (allocates; not signal-safe).
    pub(super) fn new(count: usize) -> SeqSlots<W> {
        debug_assert!(count.is_power_of_two());
        SeqSlots {
            slots: std::iter::repeat_with(|| Slot {
                seq: AtomicUsize::new(0),
                words: std::array::from_fn(|_| AtomicUsize::new(0)),
            })
            .take(count)
            .collect(),
            bits: count.trailing_zeros(),
        }
    }

    /// The slot of `key` (Fibonacci hashing; `key` should have its alignment shifted out).
    fn slot(&self, key: usize) -> Option<&Slot<W>> {
        let i = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - self.bits);
        self.slots.get(i)
    }

    /// The words last written whole to `key`'s slot (whatever key wrote them: the caller
    /// checks), or None while a write is under way. Signal-safe.
    pub(super) fn read(&self, key: usize) -> Option<[usize; W]> {
        let slot = self.slot(key)?;
        let before = slot.seq.load(Ordering::Acquire);
        if before & 1 != 0 {
            return None;
        }
        let mut w = [0usize; W];
        for (v, a) in w.iter_mut().zip(&slot.words) {
            *v = a.load(Ordering::Relaxed);
        }
        fence(Ordering::Acquire);
        (slot.seq.load(Ordering::Relaxed) == before).then_some(w)
    }

    /// Writes `words` to `key`'s slot, unless another write to it is under way. Signal-safe.
    pub(super) fn write(&self, key: usize, words: [usize; W]) {
        let Some(slot) = self.slot(key) else {
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
        for (a, v) in slot.words.iter().zip(words) {
            a.store(v, Ordering::Relaxed);
        }
        slot.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// Marks `key`'s slot as being written (as a handler interrupted mid-write leaves it),
    /// or done again. For tests.
    #[cfg(test)]
    pub(super) fn bump(&self, key: usize) {
        if let Some(slot) = self.slot(key) {
            slot.seq.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether two keys share a slot. For tests.
    #[cfg(test)]
    pub(super) fn same_slot(&self, a: usize, b: usize) -> bool {
        std::ptr::eq(self.slot(a).unwrap(), self.slot(b).unwrap())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_being_written_is_neither_read_nor_written() {
        let s = SeqSlots::<2>::new(16);
        s.write(5, [1, 2]);
        assert_eq!(s.read(5), Some([1, 2]));
        s.bump(5);
        assert_eq!(s.read(5), None, "read while odd");
        s.write(5, [3, 4]);
        s.bump(5);
        assert_eq!(s.read(5), Some([1, 2]), "the nested write gave up");
    }

    #[test]
    fn concurrent_writers_never_give_a_reader_a_torn_slot() {
        // Two writers on one slot, each writing words that agree with each other; a reader
        // must only ever see one writer's words whole.
        let s = std::sync::Arc::new(SeqSlots::<8>::new(16));
        let a = 1usize;
        let b = (2..).find(|&k| s.same_slot(a, k)).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = [a, b]
            .into_iter()
            .map(|k| {
                let (s, stop) = (s.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        s.write(k, [k; 8]);
                        for _ in 0..64 {
                            std::hint::spin_loop();
                        }
                    }
                })
            })
            .collect();
        let (mut hits, deadline) = (
            0,
            std::time::Instant::now() + std::time::Duration::from_secs(10),
        );
        while hits < 10_000 && std::time::Instant::now() < deadline {
            if let Some(w) = s.read(a) {
                assert!(w.iter().all(|&v| v == w[0]), "torn: {w:?}");
                hits += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        assert!(hits > 0);
    }
}
