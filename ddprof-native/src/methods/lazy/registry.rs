//! The class registry of the lazy mode: `Klass*` -> JNI weak global reference to the
//! class's mirror. It answers one question at dump time: is the class at this `Klass*`
//! still alive, and which class is it? `pin` turns the weak reference into a strong local
//! one, so the class cannot unload while its frames are being named.
//!
//! Open addressing with linear probing, behind one mutex. Never touched from a signal
//! handler (the walker only tags frames; see `tags.rs`). Entries are never removed one
//! by one: when an insertion would push the load over 3/4, the entries whose mirror was
//! collected are purged and the table is rebuilt at a size that follows the live
//! classes (load at most 1/2 afterwards), so it can shrink as well as grow.
//!
//! A class registered at a `Klass*` that is already known with a different mirror (the
//! old class unloaded and its metadata was reused) replaces the entry, and the old weak
//! reference is deleted.
//!
//! JNI is reached through the [`Refs`] trait so the table is unit-tested without a JVM.

use parking_lot::Mutex;

/// Smallest table (slots).
const MIN_CAPACITY: usize = 1024;

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
        Ok(Registered::Added)
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
        self.capacity() * std::mem::size_of::<Entry>()
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
    fn dead_entries_are_purged_when_the_table_would_grow_and_memory_follows_live_classes() {
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
        // Keep adding until a rebuild happens: dead entries go, the table shrinks.
        let mut j = n + 1;
        while r.len() > 100 {
            r.register(&refs, klass(j), 10_000 + j).unwrap();
            j += 1;
        }
        assert!(r.capacity() < cap, "capacity {} after purge", r.capacity());
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
