//! The class registry of the lazy mode: `Klass*` -> JNI weak global reference to the
//! class's mirror. It answers one question at dump time: is the class at this `Klass*`
//! still alive, and which class is it? `pin` turns the weak reference into a strong local
//! one, so the class cannot unload while its frames are being named.
//!
//! Open addressing with linear probing, behind one mutex. Never touched from a signal
//! handler (the walker only tags frames; see `tags.rs`).
//!
//! Memory follows the live classes. Nothing tells us when a class unloads, so dead
//! entries (mirror collected) are found by sweeping:
//! - every insertion examines the next [`SWEEP_PER_INSERT`] slots after a cursor that
//!   goes round the table, so under class churn the sweep keeps pace with the loading
//!   (the table is gone through once per `capacity / SWEEP_PER_INSERT` insertions);
//! - every dump examines up to [`SWEEP_PER_DUMP`] more ([`Registry::sweep`]), for classes
//!   that unload while nothing new loads;
//! - when an insertion would push the load over 3/4, every entry is checked and the
//!   table is rebuilt at most half full.
//!
//! Dead entries are removed by backward-shift deletion (no tombstones), and when removals
//! leave the table under 1/8 full it is rebuilt smaller (at most half full, never below
//! [`MIN_CAPACITY`] slots).
//!
//! A class registered at a `Klass*` that is already known with a different mirror (the
//! old class unloaded and its metadata was reused) replaces the entry, and the old weak
//! reference is deleted.
//!
//! JNI is reached through the [`Refs`] trait so the table is unit-tested without a JVM.

use parking_lot::Mutex;

/// Smallest table (slots).
const MIN_CAPACITY: usize = 1024;
/// Slots examined for dead entries after each insertion: a pass over the table takes
/// `capacity / 16` insertions, at most 1/4 of the entries it can hold (load <= 3/4), so the
/// dead entries waiting for the sweep stay a small fraction of the live ones even when a
/// GC unloads many classes at once. Each examination is one load (see `Refs::is_cleared`
/// in `mod.rs`), about 50 ns per insertion in all. (At 4 per insertion the class-churn
/// benchmark still ended with 1.34 entries per loaded class.)
pub const SWEEP_PER_INSERT: usize = 16;
/// Slots whose weak refs are requested ahead of the sweep (see `Table::sweep`).
const SWEEP_AHEAD: usize = 16;
/// Slots examined at each dump (about 10-20 µs of work with the cheap dead-entry check).
pub const SWEEP_PER_DUMP: usize = 16_384;

/// What the registry needs from JNI. Handles are plain words; 0 is never a valid handle.
pub trait Refs {
    /// A new weak global reference to `class` (a local or global class reference).
    fn new_weak(&self, class: usize) -> Option<usize>;
    fn delete_weak(&self, weak: usize);
    /// Whether the referent of `weak` was collected.
    fn is_cleared(&self, weak: usize) -> bool;
    /// Whether `weak` refers to the same object as `class`.
    fn same_object(&self, weak: usize, class: usize) -> bool;
    /// A strong local reference to the referent of `weak`; `None` once it was collected.
    fn new_local(&self, weak: usize) -> Option<usize>;
    /// A hint that [`Self::is_cleared`] will soon be asked about `weak`.
    fn prefetch(&self, _weak: usize) {}
}

#[derive(Clone, Copy, Default)]
struct Entry {
    /// 0: empty slot.
    klass: usize,
    weak: usize,
}

struct Table {
    slots: Vec<Entry>,
    used: usize,
    /// Next slot the incremental sweep examines.
    cursor: usize,
}

/// Outcome of [`Registry::register`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registered {
    Added,
    /// Already known with this mirror.
    Unchanged,
    /// Known with another (dead or different) mirror, now replaced.
    Replaced,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterError {
    NoKlass,
    /// JNI could not make the weak reference.
    NoWeakRef,
}

pub struct Registry {
    table: Mutex<Table>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

fn hash(klass: usize) -> usize {
    // Fibonacci hashing of the pointer without its alignment bits.
    ((klass >> 3) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize
}

impl Table {
    fn with_capacity(capacity: usize) -> Table {
        Table {
            slots: vec![Entry::default(); capacity],
            used: 0,
            cursor: 0,
        }
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot holding `klass`, or the empty slot where it would go.
    fn probe(&self, klass: usize) -> (usize, bool) {
        let mask = self.mask();
        let mut i = (hash(klass) >> (usize::BITS - mask.count_ones())) & mask;
        // The table is never full (load <= 3/4), so an empty slot ends every probe.
        loop {
            let e = self.slots[i];
            if e.klass == klass {
                return (i, true);
            }
            if e.klass == 0 {
                return (i, false);
            }
            i = (i + 1) & mask;
        }
    }

    fn insert_new(&mut self, klass: usize, weak: usize) {
        let (i, _) = self.probe(klass);
        self.slots[i] = Entry { klass, weak };
        self.used += 1;
    }

    fn home(&self, klass: usize) -> usize {
        let mask = self.mask();
        (hash(klass) >> (usize::BITS - mask.count_ones())) & mask
    }

    /// Empties slot `i` and moves later entries of its probe run back, so that every
    /// remaining entry is still found from its home slot (backward-shift deletion).
    fn remove_at(&mut self, mut i: usize) {
        let mask = self.mask();
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let e = self.slots[j];
            if e.klass == 0 {
                break;
            }
            // `e` may move to the hole at `i` unless its home lies cyclically in (i, j].
            let home = self.home(e.klass);
            let stays = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if !stays {
                self.slots[i] = e;
                i = j;
            }
        }
        self.slots[i] = Entry::default();
        self.used -= 1;
    }

    /// Examines up to `budget` slots from the cursor on and removes the entries whose
    /// mirror was collected (deleting their weak refs). Returns how many it removed.
    fn sweep(&mut self, refs: &impl Refs, budget: usize) -> usize {
        let mut removed = 0;
        let mut examined = 0;
        let mut i = self.cursor & self.mask();
        // Each weak ref lives somewhere else in the JVM's handle storage, so each check is
        // a cache miss: keep the next SWEEP_AHEAD of them requested so the misses overlap.
        let ahead = |t: &Table, at: usize| {
            let e = t.slots[at & t.mask()];
            if e.klass != 0 {
                refs.prefetch(e.weak);
            }
        };
        for k in 0..SWEEP_AHEAD.min(budget).min(self.slots.len()) {
            ahead(self, i + k);
        }
        // Removals do not count against the budget (there are at most `used` of them), so
        // a budget of `capacity` examines every entry at least once.
        while examined < budget.min(self.slots.len()) {
            let e = self.slots[i];
            if e.klass != 0 && refs.is_cleared(e.weak) {
                refs.delete_weak(e.weak);
                self.remove_at(i);
                removed += 1;
                // Slot i may now hold an entry shifted back from further on: look again.
                continue;
            }
            examined += 1;
            if examined + SWEEP_AHEAD <= budget {
                ahead(self, i + SWEEP_AHEAD);
            }
            i = (i + 1) & self.mask();
        }
        self.cursor = i;
        removed
    }

    /// Whether removals left the table so empty that it should be rebuilt smaller.
    fn too_sparse(&self) -> bool {
        self.slots.len() > MIN_CAPACITY && self.used * 8 < self.slots.len()
    }
}

impl Registry {
    pub fn new() -> Registry {
        Registry {
            table: Mutex::new(Table::with_capacity(MIN_CAPACITY)),
        }
    }

    /// Records `class` (a JNI class reference) as the class at `klass`.
    pub fn register(
        &self,
        refs: &impl Refs,
        klass: usize,
        class: usize,
    ) -> Result<Registered, RegisterError> {
        if klass == 0 {
            return Err(RegisterError::NoKlass);
        }
        let mut t = self.table.lock();
        let (i, found) = t.probe(klass);
        if found {
            let old = t.slots[i].weak;
            if refs.same_object(old, class) {
                return Ok(Registered::Unchanged);
            }
            let weak = refs.new_weak(class).ok_or(RegisterError::NoWeakRef)?;
            t.slots[i].weak = weak;
            refs.delete_weak(old);
            return Ok(Registered::Replaced);
        }
        let weak = refs.new_weak(class).ok_or(RegisterError::NoWeakRef)?;
        if (t.used + 1) * 4 > t.slots.len() * 3 {
            Self::rebuild(&mut t, refs);
        }
        t.insert_new(klass, weak);
        if t.sweep(refs, SWEEP_PER_INSERT) > 0 && t.too_sparse() {
            Self::rebuild(&mut t, refs);
        }
        Ok(Registered::Added)
    }

    /// Examines up to `budget` more slots for entries whose class unloaded (at each dump,
    /// [`SWEEP_PER_DUMP`]) and shrinks the table if that left it mostly empty. Returns the
    /// number of entries removed.
    pub fn sweep(&self, refs: &impl Refs, budget: usize) -> usize {
        let mut t = self.table.lock();
        let removed = t.sweep(refs, budget);
        if t.too_sparse() {
            Self::rebuild(&mut t, refs);
        }
        removed
    }

    /// Purges entries whose mirror was collected and rehashes the rest into a table of
    /// at most half load (one more entry is about to be added).
    fn rebuild(t: &mut Table, refs: &impl Refs) {
        let mut live: Vec<Entry> = Vec::with_capacity(t.used);
        for e in t.slots.iter().filter(|e| e.klass != 0) {
            if refs.is_cleared(e.weak) {
                refs.delete_weak(e.weak);
            } else {
                live.push(*e);
            }
        }
        let capacity = ((live.len() + 1) * 2).next_power_of_two().max(MIN_CAPACITY);
        *t = Table::with_capacity(capacity);
        for e in live {
            t.insert_new(e.klass, e.weak);
        }
    }

    /// A strong local reference to the class at `klass`, if it is registered and alive.
    /// The caller deletes it. The lookup and `new_local` happen under the lock, so a
    /// concurrent rebuild cannot delete the weak reference in between.
    pub fn pin(&self, refs: &impl Refs, klass: usize) -> Option<usize> {
        if klass == 0 {
            return None;
        }
        let t = self.table.lock();
        let (i, found) = t.probe(klass);
        if !found {
            return None;
        }
        refs.new_local(t.slots[i].weak)
    }

    /// Entries (live or not yet purged).
    pub fn len(&self) -> usize {
        self.table.lock().used
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots of the table.
    pub fn capacity(&self) -> usize {
        self.table.lock().slots.len()
    }

    /// Bytes the table itself holds (the weak references live in the JVM).
    pub fn bytes(&self) -> usize {
        self.stats().1
    }

    /// (entries, bytes), read under one lock.
    pub fn stats(&self) -> (usize, usize) {
        let t = self.table.lock();
        (t.used, t.slots.len() * std::mem::size_of::<Entry>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A fake JVM: objects are numbers, weak refs map to objects, and objects die when
    /// the test says so.
    #[derive(Default)]
    struct FakeRefs {
        state: parking_lot::Mutex<FakeState>,
        next: AtomicUsize,
    }

    #[derive(Default)]
    struct FakeState {
        /// weak handle -> object
        weak: HashMap<usize, usize>,
        dead: std::collections::HashSet<usize>,
        deleted: Vec<usize>,
        fail_next_weak: bool,
    }

    impl FakeRefs {
        fn kill(&self, obj: usize) {
            self.state.lock().dead.insert(obj);
        }
        fn live_weak_refs(&self) -> usize {
            self.state.lock().weak.len()
        }
        fn deleted(&self) -> Vec<usize> {
            self.state.lock().deleted.clone()
        }
    }

    impl Refs for FakeRefs {
        fn new_weak(&self, class: usize) -> Option<usize> {
            let mut s = self.state.lock();
            if std::mem::take(&mut s.fail_next_weak) {
                return None;
            }
            let h = 0x10_0000 + self.next.fetch_add(8, Ordering::Relaxed);
            s.weak.insert(h, class);
            Some(h)
        }
        fn delete_weak(&self, weak: usize) {
            let mut s = self.state.lock();
            assert!(
                s.weak.remove(&weak).is_some(),
                "weak ref {weak:#x} deleted twice"
            );
            s.deleted.push(weak);
        }
        fn is_cleared(&self, weak: usize) -> bool {
            let s = self.state.lock();
            s.dead.contains(&s.weak[&weak])
        }
        fn same_object(&self, weak: usize, class: usize) -> bool {
            let s = self.state.lock();
            let obj = s.weak[&weak];
            !s.dead.contains(&obj) && obj == class
        }
        fn new_local(&self, weak: usize) -> Option<usize> {
            let s = self.state.lock();
            let obj = *s.weak.get(&weak).expect("pinned a deleted weak ref");
            (!s.dead.contains(&obj)).then_some(obj)
        }
    }

    fn klass(i: usize) -> usize {
        0x8_0000_0000 + i * 0x240
    }

    #[test]
    fn registered_classes_pin_and_unknown_ones_do_not() {
        let refs = FakeRefs::default();
        let r = Registry::new();
        assert_eq!(r.register(&refs, klass(1), 501), Ok(Registered::Added));
        assert_eq!(r.register(&refs, klass(2), 502), Ok(Registered::Added));
        assert_eq!(r.pin(&refs, klass(1)), Some(501));
        assert_eq!(r.pin(&refs, klass(2)), Some(502));
        assert_eq!(r.pin(&refs, klass(3)), None);
        assert_eq!(r.pin(&refs, 0), None);
        assert_eq!(r.register(&refs, 0, 503), Err(RegisterError::NoKlass));
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn same_mirror_twice_is_unchanged_and_a_new_mirror_replaces_the_entry() {
        let refs = FakeRefs::default();
        let r = Registry::new();
        r.register(&refs, klass(1), 501).unwrap();
        assert_eq!(r.register(&refs, klass(1), 501), Ok(Registered::Unchanged));
        assert_eq!(refs.live_weak_refs(), 1);
        // The class unloads; another class is created at the same Klass*.
        refs.kill(501);
        assert_eq!(r.pin(&refs, klass(1)), None);
        assert_eq!(r.register(&refs, klass(1), 601), Ok(Registered::Replaced));
        assert_eq!(r.pin(&refs, klass(1)), Some(601));
        assert_eq!(refs.live_weak_refs(), 1, "the old weak ref was freed");
        assert_eq!(refs.deleted().len(), 1);
        assert_eq!(r.len(), 1);
        // A different live mirror at a known Klass* also replaces it.
        assert_eq!(r.register(&refs, klass(1), 701), Ok(Registered::Replaced));
        assert_eq!(r.pin(&refs, klass(1)), Some(701));
        assert_eq!(refs.live_weak_refs(), 1);
    }

    #[test]
    fn a_failed_weak_ref_is_an_error_and_leaves_the_table_unchanged() {
        let refs = FakeRefs::default();
        let r = Registry::new();
        r.register(&refs, klass(1), 501).unwrap();
        refs.state.lock().fail_next_weak = true;
        assert_eq!(
            r.register(&refs, klass(2), 502),
            Err(RegisterError::NoWeakRef)
        );
        refs.state.lock().fail_next_weak = true;
        assert_eq!(
            r.register(&refs, klass(1), 999),
            Err(RegisterError::NoWeakRef)
        );
        assert_eq!(r.pin(&refs, klass(1)), Some(501));
        assert_eq!(r.pin(&refs, klass(2)), None);
    }

    #[test]
    fn the_table_grows_and_every_entry_survives_rehashing() {
        let refs = FakeRefs::default();
        let r = Registry::new();
        let n = 10_000;
        for i in 1..=n {
            r.register(&refs, klass(i), 10_000 + i).unwrap();
        }
        assert_eq!(r.len(), n);
        assert!(r.capacity() >= n * 4 / 3, "capacity {}", r.capacity());
        assert!(r.capacity().is_power_of_two());
        for i in 1..=n {
            assert_eq!(r.pin(&refs, klass(i)), Some(10_000 + i), "entry {i}");
        }
        assert_eq!(r.bytes(), r.capacity() * 16);
    }

    #[test]
    fn dead_entries_are_purged_by_later_insertions() {
        let refs = FakeRefs::default();
        let r = Registry::new();
        // Fill to just under the growth threshold of a 4096-slot table.
        let n = 3000;
        for i in 1..=n {
            r.register(&refs, klass(i), 10_000 + i).unwrap();
        }
        let cap = r.capacity();
        assert_eq!(cap, 4096);
        // Almost everything unloads.
        for i in 11..=n {
            refs.kill(10_000 + i);
        }
        // Keep adding until the dead entries are gone (swept, or purged by the rebuild
        // that growth would trigger): the table shrinks.
        let mut j = n + 1;
        while r.len() > 10 + (j - n - 1) {
            r.register(&refs, klass(j), 10_000 + j).unwrap();
            j += 1;
            assert!(j < n + 5_000, "dead entries were never purged");
        }
        assert!(r.capacity() <= cap, "capacity {} after purge", r.capacity());
        assert_eq!(
            refs.live_weak_refs(),
            r.len(),
            "purged weak refs are deleted"
        );
        for i in 1..=10 {
            assert_eq!(r.pin(&refs, klass(i)), Some(10_000 + i));
        }
        for i in 11..=n {
            assert_eq!(r.pin(&refs, klass(i)), None);
        }
        assert_eq!(r.pin(&refs, klass(j - 1)), Some(10_000 + j - 1));
    }

    #[test]
    fn the_table_never_shrinks_below_its_minimum() {
        let refs = FakeRefs::default();
        let r = Registry::new();
        for i in 1..=800 {
            r.register(&refs, klass(i), i).unwrap();
            refs.kill(i);
        }
        r.register(&refs, klass(900), 900).unwrap();
        assert_eq!(r.capacity(), MIN_CAPACITY);
        assert_eq!(r.pin(&refs, klass(900)), Some(900));
    }

    /// Live entries the fake JVM still holds weak refs for, and what the table says.
    fn assert_consistent(r: &Registry, refs: &FakeRefs, live: &[(usize, usize)]) {
        assert_eq!(refs.live_weak_refs(), r.len(), "one weak ref per entry");
        for &(k, obj) in live {
            assert_eq!(r.pin(refs, klass(k)), Some(obj), "live class {k}");
        }
    }

    #[test]
    fn removing_dead_entries_keeps_every_survivor_reachable() {
        // Keys that share home slots make long probe runs (wrapping around the end of
        // the table too), so backward-shift deletion has entries to move.
        let refs = FakeRefs::default();
        let r = Registry::new();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut live: Vec<(usize, usize)> = Vec::new();
        for round in 0..40 {
            for i in 0..300 {
                let k = round * 1000 + i + 1;
                r.register(&refs, klass(k), k).unwrap();
                live.push((k, k));
            }
            // About half of the live classes unload.
            live.retain(|&(_, obj)| {
                let dies = next() % 2 == 0;
                if dies {
                    refs.kill(obj);
                }
                !dies
            });
            r.sweep(&refs, usize::MAX);
            assert_eq!(
                r.len(),
                live.len(),
                "round {round}: a full sweep leaves only live entries"
            );
            assert_consistent(&r, &refs, &live);
        }
    }

    #[test]
    fn under_class_churn_entries_follow_live_classes() {
        // Loaders of 50 classes come and go; at most 40 loaders are alive at a time
        // (2,000 live classes). Nothing but the insertions sweeps.
        let refs = FakeRefs::default();
        let r = Registry::new();
        let per_loader = 50;
        let alive = 40;
        let mut max_entries = 0;
        let mut max_capacity = 0;
        for loader in 0..2_000usize {
            for c in 0..per_loader {
                let k = loader * per_loader + c + 1;
                r.register(&refs, klass(k), k).unwrap();
            }
            if loader >= alive {
                let gone = loader - alive;
                for c in 0..per_loader {
                    refs.kill(gone * per_loader + c + 1);
                }
            }
            if loader > 200 {
                max_entries = max_entries.max(r.len());
                max_capacity = max_capacity.max(r.capacity());
            }
        }
        let live_classes = alive * per_loader;
        // Before: dead entries were purged only when the table would grow past 3/4, so
        // it held up to ~3/4 of 8,192 slots (6,100 entries) for 2,000 live classes.
        assert!(
            max_entries <= live_classes * 5 / 4 + per_loader,
            "{max_entries} entries for {live_classes} live classes"
        );
        assert!(max_capacity <= 4096, "capacity {max_capacity}");
        let live: Vec<(usize, usize)> = (2_000 - alive..2_000)
            .flat_map(|l| (0..per_loader).map(move |c| l * per_loader + c + 1))
            .map(|k| (k, k))
            .collect();
        assert_consistent(&r, &refs, &live);
    }

    #[test]
    fn dump_sweeps_purge_classes_that_unloaded_while_none_loaded_and_shrink_the_table() {
        let refs = FakeRefs::default();
        let r = Registry::new();
        for i in 1..=20_000 {
            r.register(&refs, klass(i), i).unwrap();
        }
        assert_eq!(r.capacity(), 32_768);
        for i in 101..=20_000 {
            refs.kill(i);
        }
        // No insertions from now on: only the per-dump sweeps run.
        let mut dumps = 0;
        while r.len() > 100 {
            r.sweep(&refs, SWEEP_PER_DUMP);
            dumps += 1;
            assert!(dumps <= 4, "{} entries left after {dumps} dumps", r.len());
        }
        assert_eq!(r.capacity(), MIN_CAPACITY, "the table shrank");
        assert_eq!(r.bytes(), MIN_CAPACITY * 16);
        let live: Vec<(usize, usize)> = (1..=100).map(|k| (k, k)).collect();
        assert_consistent(&r, &refs, &live);
        // A sweep of a table with nothing dead changes nothing.
        assert_eq!(r.sweep(&refs, SWEEP_PER_DUMP), 0);
        assert_eq!(r.len(), 100);
    }

    #[test]
    fn pin_is_consistent_while_other_threads_force_rehashes() {
        let refs = Arc::new(FakeRefs::default());
        let r = Arc::new(Registry::new());
        for i in 1..=100 {
            r.register(&*refs, klass(i), 50_000 + i).unwrap();
        }
        let writers: Vec<_> = (0..3)
            .map(|w| {
                let (r, refs) = (r.clone(), refs.clone());
                std::thread::spawn(move || {
                    for i in 0..4000 {
                        let k = 1000 + w * 10_000 + i;
                        r.register(&*refs, klass(k), k).unwrap();
                        if i % 2 == 0 {
                            refs.kill(k); // half of them unload: rebuilds purge them
                        }
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (r, refs) = (r.clone(), refs.clone());
                std::thread::spawn(move || {
                    for round in 0..200 {
                        for i in 1..=100 {
                            assert_eq!(r.pin(&*refs, klass(i)), Some(50_000 + i), "round {round}");
                        }
                    }
                })
            })
            .collect();
        for t in writers.into_iter().chain(readers) {
            t.join().unwrap();
        }
        for w in 0..3 {
            for i in (1..4000).step_by(2) {
                let k = 1000 + w * 10_000 + i;
                assert_eq!(r.pin(&*refs, klass(k)), Some(k));
            }
        }
    }
}
