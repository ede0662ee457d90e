//! What a code map file (the perf map, a jitdump) already says about each address, so that a
//! record that would repeat it is not written again. Every `start` replays all the code that
//! exists (`GenerateEvents`); without this each start would add every compiled method once more
//! to a file that lives as long as the process.
//!
//! Only the latest record of each range is kept: a record is a repeat if the file's newest word
//! on its exact range is the same name, and no later record overlapped it. Code freed and its
//! range reused by other code therefore gets a new record when the first code comes back (a
//! jitdump reader takes the newest load covering an address). Memory follows the live code, not
//! the history.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

/// The latest record of each range a file holds: start -> (end, hash of the name).
#[derive(Default, Debug)]
pub struct LatestRecords {
    by_start: BTreeMap<usize, (usize, u64)>,
}

impl LatestRecords {
    pub const fn new() -> LatestRecords {
        LatestRecords {
            by_start: BTreeMap::new(),
        }
    }

    /// Whether `[start, start + size)` named `name` must be written: false if the file already
    /// says exactly that. If true, the record is noted as the latest for its range and every
    /// older record it overlaps is forgotten.
    pub fn note(&mut self, start: usize, size: usize, name: &str) -> bool {
        let end = start.saturating_add(size);
        let key = (end, name_hash(name));
        if self.by_start.get(&start) == Some(&key) {
            return false;
        }
        // The record before `start` may reach into the range; those from `start` to `end` start in it.
        let before = self
            .by_start
            .range(..start)
            .next_back()
            .filter(|(_, (e, _))| *e > start)
            .map(|(s, _)| *s);
        let inside: Vec<usize> = self.by_start.range(start..end).map(|(s, _)| *s).collect();
        for s in before.into_iter().chain(inside) {
            self.by_start.remove(&s);
        }
        self.by_start.insert(start, key);
        true
    }

    /// Forgets everything (the file was emptied).
    pub fn clear(&mut self) {
        self.by_start.clear();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_start.len()
    }
}

fn name_hash(name: &str) -> u64 {
    // SipHash with fixed keys: a 64-bit hash, equal across calls; a collision between two names
    // on the same range (one record not written) is a 2^-64 chance.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replayed_record_is_not_written_again() {
        let mut r = LatestRecords::default();
        assert!(r.note(0x1000, 0x40, "A::a()V"));
        assert!(r.note(0x2000, 0x40, "B::b()V"));
        // The replay of the next start.
        assert!(!r.note(0x1000, 0x40, "A::a()V"));
        assert!(!r.note(0x2000, 0x40, "B::b()V"));
        // Other name or size on the same start: a new record.
        assert!(r.note(0x2000, 0x40, "C::c()V"));
        assert!(r.note(0x2000, 0x80, "C::c()V"));
        assert!(!r.note(0x2000, 0x80, "C::c()V"));
    }

    #[test]
    fn code_that_comes_back_after_other_code_used_its_range_is_written() {
        let mut r = LatestRecords::default();
        assert!(r.note(0x1000, 0x100, "A"));
        // Other code over part of A's range, from inside and from before it.
        assert!(r.note(0x1080, 0x10, "B"));
        assert!(
            r.note(0x1000, 0x100, "A"),
            "A's record was overlapped by B's"
        );
        assert!(r.note(0x0f80, 0x100, "C"));
        assert!(
            r.note(0x1000, 0x100, "A"),
            "A's record was overlapped by C's"
        );
        // Adjacent ranges do not overlap.
        assert!(r.note(0x1100, 0x100, "D"));
        assert!(!r.note(0x1000, 0x100, "A"));
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn memory_follows_the_live_code() {
        let mut r = LatestRecords::default();
        for round in 0..100 {
            for i in 0..100usize {
                r.note(0x10_000 + i * 0x100, 0x100, &format!("M{round}::m{i}"));
            }
        }
        assert_eq!(r.len(), 100);
        r.clear();
        assert!(r.note(0x10_000, 0x100, "M99::m0"));
        // A range at the top of the address space does not overflow.
        assert!(r.note(usize::MAX - 8, 0x100, "top"));
        assert!(!r.note(usize::MAX - 8, 0x100, "top"));
    }
}
