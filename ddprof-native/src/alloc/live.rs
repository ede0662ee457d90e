//! The live-heap tracker (`memory=..:l` / `:L`): a subsample of the allocation samples,
//! each held by a JNI weak global reference with its allocation-time stack, context and
//! weight, so that each dump can say which sampled objects are still alive, how many GCs
//! they survived, and who allocated them (`datadog.HeapLiveObject`).
//!
//! - Subsampling: a sample is kept with probability `ratio`; the bytes a rejected sample
//!   stands for (weight x size) wait in a per-thread counter that the thread's next kept
//!   sample absorbs, so the weights of the kept samples add up to what all samples stood for.
//! - Capacity: `min(262,144, max heap / interval)` entries, starting at `min(2,048, max)` and
//!   doubling on demand; a full table at its maximum drops the sample (`live_heap_dropped_full`).
//! - Ages: GarbageCollectionFinish (inside the GC, so nothing but an atomic) bumps an epoch;
//!   cleanup, before a flush or a grow, drops entries whose referent is gone and adds the
//!   epochs since their last cleanup to the survivors' age.
//! - Stacks: a dump empties the call-trace tables, so the tracker keeps its own copy of each
//!   distinct stack its entries use (reference-counted), and the dump writes them beside the
//!   generation's traces.
//! - State outlives a recording: entries stay across stop/start, and the capacity set by the
//!   first start holds.
//!
//! Everything here runs on JVM threads (the allocating thread's callback, the dump), never in
//! a signal handler; one mutex guards the table, and its memory is charged to `live_heap`.

// JNI handles are opaque tokens the JVM validates (as in crate::jvmti::jvm).
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use crate::word_map::WordMap;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use jni::sys::{jobject, JNIEnv};
use parking_lot::Mutex;

use crate::counters::Counter;
use crate::footprint::{self, Category};
use crate::sample::frame::Frame;
use crate::sample::record::Context;

/// Upstream's largest table.
pub const MAX_CAPACITY: usize = 262_144;
const INITIAL_CAPACITY: usize = 2_048;

static GC_EPOCH: AtomicU64 = AtomicU64::new(0);
static ENABLED: AtomicBool = AtomicBool::new(false);
/// `f64::to_bits` of the fraction of samples kept.
static RATIO: AtomicU64 = AtomicU64::new(0);
/// Bumped by every `start` (not `resume`): the context dictionary's ids are per recording.
static RECORDING: AtomicU64 = AtomicU64::new(0);

/// A new recording begins: attribute ids of entries made before it no longer mean anything.
pub fn new_recording() {
    RECORDING.fetch_add(1, Ordering::AcqRel);
}

struct Entry {
    weak: usize,
    /// Id in [`Traces`], 0 for no stack.
    trace: u32,
    tid: i32,
    ticks: i64,
    size: u64,
    weight: f32,
    /// Bytes of rejected samples this entry stands for too.
    skipped: u64,
    /// GC epoch at the last cleanup that saw it alive.
    epoch: u64,
    age: u64,
    context: Context,
    class_id: u32,
    /// [`RECORDING`] when it was made.
    recording: u64,
}

struct Trace {
    frames: Arc<[Frame]>,
    truncated: bool,
    refs: u32,
}

/// The stacks of live entries, interned and counted.
#[derive(Default)]
struct Traces {
    ids: WordMap<(Arc<[Frame]>, bool), u32>,
    /// Id `i + 1` is `slots[i]`.
    slots: Vec<Option<Trace>>,
    free: Vec<u32>,
}

impl Traces {
    fn acquire(&mut self, frames: &[Frame], truncated: bool) -> u32 {
        if frames.is_empty() {
            return 0;
        }
        let shared: Arc<[Frame]> = Arc::from(frames);
        if let Some(&id) = self.ids.get(&(shared.clone(), truncated)) {
            if let Some(Some(t)) = self.slots.get_mut(id as usize - 1) {
                t.refs += 1;
            }
            return id;
        }
        let trace = Trace {
            frames: shared.clone(),
            truncated,
            refs: 1,
        };
        let id = match self.free.pop() {
            Some(id) => {
                if let Some(slot) = self.slots.get_mut(id as usize - 1) {
                    *slot = Some(trace);
                }
                id
            }
            None => {
                self.slots.push(Some(trace));
                self.slots.len() as u32
            }
        };
        self.ids.insert((shared, truncated), id);
        id
    }

    fn release(&mut self, id: u32) {
        let Some(slot) = (id as usize)
            .checked_sub(1)
            .and_then(|i| self.slots.get_mut(i))
        else {
            return;
        };
        let Some(t) = slot.as_mut() else { return };
        t.refs = t.refs.saturating_sub(1);
        if t.refs == 0 {
            if let Some(t) = slot.take() {
                self.ids.remove(&(t.frames, t.truncated));
            }
            self.free.push(id);
        }
    }

    fn len(&self) -> usize {
        self.ids.len()
    }
}

struct Tracker {
    entries: Vec<Entry>,
    capacity: usize,
    max: usize,
    traces: Traces,
}

static TRACKER: Mutex<Option<Tracker>> = Mutex::new(None);

/// Sets the table up at the first start that asks for liveness (later starts keep its
/// capacity, as upstream), and turns tracking on with this start's `ratio`.
pub fn enable(ratio: f64, max_heap: u64, interval: u64) {
    let mut guard = TRACKER.lock();
    if guard.is_none() {
        let max = usize::try_from(max_heap / interval.max(1))
            .unwrap_or(MAX_CAPACITY)
            .clamp(1, MAX_CAPACITY);
        let capacity = INITIAL_CAPACITY.min(max);
        let _mem = footprint::scope(Category::LiveHeap);
        *guard = Some(Tracker {
            entries: Vec::with_capacity(capacity),
            capacity,
            max,
            traces: Traces::default(),
        });
        Counter::LiveHeapCapacity.set(capacity as i64);
    }
    RATIO.store(ratio.clamp(0.0, 1.0).to_bits(), Ordering::Relaxed);
    ENABLED.store(true, Ordering::Release);
}

/// No more entries (a stop); the table and its entries stay for the next recording.
pub fn disable() {
    ENABLED.store(false, Ordering::Release);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// GarbageCollectionFinish: inside the GC, so only an atomic.
pub fn on_gc_finish() {
    GC_EPOCH.fetch_add(1, Ordering::Relaxed);
}

thread_local! {
    /// (random state, bytes of rejected samples since this thread's last kept one).
    static SUBSAMPLE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Whether to keep a sample standing for `bytes` (weight x size) for liveness; Some(the
/// rejected bytes it absorbs). A per-thread xorshift, seeded from the thread and the clock.
pub fn keep(bytes: u64, seed: u64) -> Option<u64> {
    let ratio = f64::from_bits(RATIO.load(Ordering::Relaxed));
    SUBSAMPLE.with(|c| {
        let (mut x, skipped) = c.get();
        if x == 0 {
            x = seed | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = (x >> 11) as f64 / (1u64 << 53) as f64;
        if r < ratio {
            c.set((x, 0));
            Some(skipped)
        } else {
            c.set((x, skipped.saturating_add(bytes)));
            None
        }
    })
}

/// What [`add`] records about one kept sample.
pub struct Sample<'a> {
    pub frames: &'a [Frame],
    pub truncated: bool,
    pub context: Context,
    pub ticks: i64,
    pub tid: i32,
    pub size: u64,
    pub weight: f32,
    pub skipped: u64,
    pub class_id: u32,
}

/// Tracks `object` (the callback's local reference) with the sample's stack and context.
pub fn add(jni: *mut JNIEnv, object: jobject, s: &Sample) {
    let weak = new_weak(jni, object);
    if weak.is_null() {
        return;
    }
    let mut guard = TRACKER.lock();
    let Some(t) = guard.as_mut() else {
        delete_weak(jni, weak);
        return;
    };
    let _mem = footprint::scope(Category::LiveHeap);
    if t.entries.len() >= t.capacity {
        t.cleanup(jni);
        if t.entries.len() >= t.capacity {
            if t.capacity >= t.max {
                drop(guard);
                delete_weak(jni, weak);
                Counter::LiveHeapDroppedFull.inc();
                return;
            }
            t.capacity = (t.capacity * 2).min(t.max);
            let more = t.capacity - t.entries.len();
            t.entries.reserve_exact(more);
            Counter::LiveHeapCapacity.set(t.capacity as i64);
        }
    }
    let trace = t.traces.acquire(s.frames, s.truncated);
    t.entries.push(Entry {
        weak: weak as usize,
        trace,
        tid: s.tid,
        ticks: s.ticks,
        size: s.size,
        weight: s.weight,
        skipped: s.skipped,
        epoch: GC_EPOCH.load(Ordering::Relaxed),
        age: 0,
        context: s.context,
        class_id: s.class_id,
        recording: RECORDING.load(Ordering::Acquire),
    });
    Counter::LiveHeapTracked.set(t.entries.len() as i64);
    Counter::LiveHeapTraces.set(t.traces.len() as i64);
}

impl Tracker {
    /// Drops entries whose object is gone; ages the others by the GCs since they were last seen.
    fn cleanup(&mut self, jni: *mut JNIEnv) {
        let epoch = GC_EPOCH.load(Ordering::Relaxed);
        let mut i = 0;
        while i < self.entries.len() {
            let e = &mut self.entries[i];
            if is_cleared(jni, e.weak as jobject) {
                delete_weak(jni, e.weak as jobject);
                let trace = e.trace;
                self.traces.release(trace);
                self.entries.swap_remove(i);
                continue;
            }
            e.age += epoch.saturating_sub(e.epoch);
            e.epoch = epoch;
            i += 1;
        }
        Counter::LiveHeapTracked.set(self.entries.len() as i64);
        Counter::LiveHeapTraces.set(self.traces.len() as i64);
    }
}

/// One live entry as a dump writes it.
pub struct LiveObject {
    /// Key in [`Snapshot::traces`], 0 for none.
    pub trace: u32,
    pub tid: i32,
    pub ticks: i64,
    pub size: u64,
    /// `(weight x size + skipped) / size`.
    pub weight: f32,
    pub age: u64,
    pub context: Context,
    pub class_id: u32,
}

/// The live entries and the stacks they use, at one dump.
#[derive(Default)]
pub struct Snapshot {
    pub objects: Vec<LiveObject>,
    /// (trace id, frames, truncated).
    pub traces: Vec<(u32, Arc<[Frame]>, bool)>,
}

/// Cleans the table up and copies out what a dump writes. Empty when liveness was never on.
pub fn snapshot(jni: *mut JNIEnv) -> Snapshot {
    let mut guard = TRACKER.lock();
    let Some(t) = guard.as_mut() else {
        return Snapshot::default();
    };
    t.cleanup(jni);
    let recording = RECORDING.load(Ordering::Acquire);
    let objects = t
        .entries
        .iter()
        .map(|e| LiveObject {
            trace: e.trace,
            tid: e.tid,
            ticks: e.ticks,
            size: e.size,
            weight: if e.size == 0 {
                e.weight
            } else {
                ((f64::from(e.weight) * e.size as f64 + e.skipped as f64) / e.size as f64) as f32
            },
            age: e.age,
            context: if e.recording == recording {
                e.context
            } else {
                Context {
                    attrs: Default::default(),
                    ..e.context
                }
            },
            class_id: e.class_id,
        })
        .collect();
    let traces = t
        .traces
        .slots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            s.as_ref()
                .map(|t| (i as u32 + 1, t.frames.clone(), t.truncated))
        })
        .collect();
    Snapshot { objects, traces }
}

/// (entries, capacity, maximum capacity) for the recording's settings.
pub fn sizes() -> (usize, usize, usize) {
    TRACKER
        .lock()
        .as_ref()
        .map_or((0, 0, 0), |t| (t.entries.len(), t.capacity, t.max))
}

fn new_weak(jni: *mut JNIEnv, obj: jobject) -> jobject {
    if jni.is_null() || obj.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `jni` is the current thread's JNIEnv and `obj` a live local reference.
    unsafe {
        match (**jni).NewWeakGlobalRef {
            Some(f) => f(jni, obj),
            None => std::ptr::null_mut(),
        }
    }
}

fn delete_weak(jni: *mut JNIEnv, weak: jobject) {
    if jni.is_null() || weak.is_null() {
        return;
    }
    // SAFETY: `weak` is a weak global reference we made and still own.
    unsafe {
        if let Some(f) = (**jni).DeleteWeakGlobalRef {
            f(jni, weak);
        }
    }
}

/// Whether the weak reference's object was collected.
fn is_cleared(jni: *mut JNIEnv, weak: jobject) -> bool {
    if jni.is_null() {
        return false;
    }
    // SAFETY: `weak` is a weak global reference we own; comparing it with null is how JNI
    // tells a collected referent.
    unsafe {
        match (**jni).IsSameObject {
            Some(f) => f(jni, weak, std::ptr::null_mut()) != 0,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_are_shared_and_freed_with_their_last_entry() {
        let mut t = Traces::default();
        let a = [Frame::java(1, 2, 0), Frame::java(3, 4, 0)];
        let b = [Frame::java(5, 6, 0)];
        let ia = t.acquire(&a, false);
        assert_eq!(t.acquire(&a, false), ia);
        let ib = t.acquire(&b, false);
        assert_ne!(ia, ib);
        assert_eq!(t.len(), 2);
        t.release(ia);
        assert_eq!(t.len(), 2, "one entry still uses it");
        t.release(ia);
        assert_eq!(t.len(), 1);
        // The freed id is reused.
        assert_eq!(t.acquire(&a, true), ia);
        assert_eq!(t.acquire(&[], false), 0);
    }

    #[test]
    fn subsampling_keeps_about_the_ratio_and_carries_rejected_bytes() {
        RATIO.store(0.25f64.to_bits(), Ordering::Relaxed);
        let (mut kept, mut carried) = (0u64, 0u64);
        for _ in 0..10_000 {
            if let Some(s) = keep(100, 12345) {
                kept += 1;
                carried += s + 100;
            }
        }
        assert!((2_000..3_000).contains(&kept), "kept {kept}");
        // Every byte lands in a kept sample, except those after the last one.
        assert!(
            carried <= 1_000_000 && carried > 990_000,
            "carried {carried}"
        );
    }
}
