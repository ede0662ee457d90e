//! Two generations of (trace table, sample buffer). Signal handlers write the active
//! one; a dump flips `active`, waits for writers still inside the old one, reads it and
//! clears it. So sampling never stops for a dump and each chunk holds exactly the
//! samples taken since the previous flip.
//!
//! A handler can be descheduled for longer than the dump waits (a loaded host). Then the
//! dump reads only the records that were complete (each carries the generation's round,
//! stored last), and the generation is not cleared under the writer: it is cleared when
//! the next flip is about to make it active again, once its writers left. If they still
//! have not, that flip does not happen and the samples go to the following dump.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::super::context::MAX_ATTRIBUTES;
use super::table::TraceTable;
use super::Frame;
use crate::counters::Counter;
use crate::footprint::{Category, Mapped, Zeroable};

/// One sample as the handler records it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SampleRecord {
    pub ticks: i64,
    pub span_id: u64,
    pub root_span_id: u64,
    /// The trace id (high, low) of the context, 0 if none (`datadog.TraceLink`).
    pub trace_high: u64,
    pub trace_low: u64,
    /// In the event kind's unit (`crate::sample::record::Event::weight`).
    pub weight: u64,
    pub tid: i32,
    /// 0 when the trace could not be stored.
    pub trace_id: u32,
    /// Context attribute ids (`crate::context::dictionary`), 0 = unset.
    pub attrs: [u32; MAX_ATTRIBUTES],
    /// `crate::sample::record::EventKind` as a byte: every bit pattern stays a valid record.
    pub event: u8,
    /// JFR ExecutionMode and ThreadState keys (`crate::sample::mode`).
    pub mode: u8,
    pub state: u8,
    /// Allocation samples (`EventKind::Alloc`): the object's bytes, its class (an id of the
    /// allocation class-name table, `crate::alloc`) and its weight (how many objects like
    /// it the sample stands for). Zero for every other kind.
    pub size: u64,
    pub class_id: u32,
    /// `f32::to_bits` of the weight (records stay `Eq`).
    pub alloc_weight: u32,
    /// Native allocation samples (`EventKind::NativeAlloc`): the block's address.
    pub address: u64,
}

struct RecordCell {
    record: UnsafeCell<SampleRecord>,
    /// The generation's round when the record was complete (0: never).
    round: AtomicU32,
}
// SAFETY: plain integers and an atomic; zero is valid.
unsafe impl Zeroable for RecordCell {}

pub struct Generation {
    pub traces: TraceTable,
    samples: Mapped<RecordCell>,
    samples_used: AtomicUsize,
    writers: AtomicUsize,
    /// Bumped by every clear: a record of an earlier round is not in this one.
    round: AtomicU32,
    /// A clear was due while a writer was still inside (see the module comment).
    dirty: AtomicBool,
    /// 0 or 1: which of the recorder's two this is (part of [`Generation::epoch`]).
    index: u64,
    /// Keeps a clear and a reader of the live traces apart ([`Generation::scan_traces`]):
    /// [`FREE`], [`SCANNING`] or [`CLEARING`].
    scan: AtomicU32,
}

/// Traces one [`Recorder::scan_active`] visits at most: a clear waits for a scan, so a scan
/// stays short (a trace is tens of frames; a few hundred microseconds for the budget).
const SCAN_BUDGET: usize = 4096;

const FREE: u32 = 0;
const SCANNING: u32 = 1;
const CLEARING: u32 = 2;

// SAFETY: a record cell is written only by the writer that reserved its index with
// fetch_add, and read only after its round was published with a Release store (read
// with Acquire); cells are reused only by a clear, which waits until no writer is inside.
unsafe impl Sync for Generation {}

impl Generation {
    fn new(index: u64, trace_slots: usize, frames: usize, samples: usize) -> Generation {
        Generation {
            traces: TraceTable::new(trace_slots, frames),
            samples: Mapped::new(samples, Category::SampleBuffers),
            samples_used: AtomicUsize::new(0),
            writers: AtomicUsize::new(0),
            round: AtomicU32::new(1),
            dirty: AtomicBool::new(false),
            index,
            scan: AtomicU32::new(FREE),
        }
    }

    /// The complete samples recorded so far, in the order their slots were taken. Call
    /// on a retired generation.
    pub fn samples(&self) -> impl Iterator<Item = &SampleRecord> {
        let n = self
            .samples_used
            .load(Ordering::Acquire)
            .min(self.samples.len());
        let round = self.round.load(Ordering::Relaxed);
        self.samples
            .get(..n)
            .unwrap_or(&[])
            .iter()
            .filter(move |c| c.round.load(Ordering::Acquire) == round)
            // SAFETY: the round was stored with Release after the record was written, and
            // the cell is not written again before a clear.
            .map(|c| unsafe { &*c.record.get() })
    }

    /// How many [`Self::samples`] there are.
    pub fn sample_count(&self) -> usize {
        self.samples().count()
    }

    /// Which activation of this generation is running: its index and its round (bumped by
    /// every clear), so a trace id is reused only within the activation that interned it.
    fn epoch(&self) -> u64 {
        (u64::from(self.round.load(Ordering::Relaxed)) << 1) | self.index
    }

    /// Waits (bounded) until no writer is inside. Not signal-safe.
    fn drained(&self) -> bool {
        let deadline = Instant::now() + Duration::from_millis(WRITER_WAIT_MS);
        while self.writers.load(Ordering::SeqCst) != 0 {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        true
    }

    /// Empties the generation, or marks it to be emptied while a writer is inside.
    fn clear(&self) {
        if self.writers.load(Ordering::SeqCst) != 0 {
            self.dirty.store(true, Ordering::Release);
            return;
        }
        // A reader of the live traces (the library watcher naming ahead) holds the guard for
        // a walk of at most `SCAN_BUDGET` new traces, takes no lock meanwhile and releases it
        // even when it unwinds: the wait ends.
        while self
            .scan
            .compare_exchange(FREE, CLEARING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::sleep(Duration::from_micros(50));
        }
        self.traces.clear();
        self.samples_used.store(0, Ordering::Release);
        self.round.fetch_add(1, Ordering::Release);
        self.dirty.store(false, Ordering::Release);
        self.scan.store(FREE, Ordering::Release);
    }

    /// [`TraceTable::visit_from`] on this generation while it is active, outside a signal
    /// and outside the dump: None, and nothing visited, when a clear is running or has run
    /// since `epoch` (then start again from the new epoch). Not signal-safe.
    fn scan_traces(
        &self,
        epoch: u64,
        from: usize,
        budget: usize,
        f: impl FnMut(&[Frame]),
    ) -> Option<usize> {
        if self
            .scan
            .compare_exchange(FREE, SCANNING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // Released however the visit ends (a panic in `f` unwinds through here): a guard
        // left taken would hold every later clear, and with it the dump, for ever.
        struct Release<'a>(&'a AtomicU32);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.store(FREE, Ordering::Release);
            }
        }
        let _release = Release(&self.scan);
        // The round changes only inside a clear, which the guard keeps out until the end.
        (self.epoch() == epoch).then(|| self.traces.visit_from(from, budget, f))
    }
}

/// How long a flip waits for handlers still writing a generation.
const WRITER_WAIT_MS: u64 = 200;

/// Where [`Recorder::scan_active`] goes on from: a generation's epoch and a claim number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanCursor {
    epoch: u64,
    next: usize,
}

pub struct Recorder {
    gens: [Generation; 2],
    active: AtomicUsize,
}

impl Recorder {
    /// Capacities per generation: trace slots (power of two), frames, samples.
    pub fn new(trace_slots: usize, frames: usize, samples: usize) -> Recorder {
        Recorder {
            gens: [
                Generation::new(0, trace_slots, frames, samples),
                Generation::new(1, trace_slots, frames, samples),
            ],
            active: AtomicUsize::new(0),
        }
    }

    /// How full the active generation's sample buffer is: (records taken, capacity). A
    /// relaxed snapshot, for decisions that tolerate a concurrent writer. Signal-safe.
    pub fn fill(&self) -> (usize, usize) {
        let gen = &self.gens[self.active.load(Ordering::Relaxed) & 1];
        let capacity = gen.samples.len();
        (
            gen.samples_used.load(Ordering::Relaxed).min(capacity),
            capacity,
        )
    }

    /// Interns the trace and appends a sample built by `make` (which receives the trace
    /// id) to the active generation. Signal-safe. Returns false when the sample was dropped.
    pub fn record(
        &self,
        frames: &[Frame],
        truncated: bool,
        make: impl Fn(u32) -> SampleRecord,
    ) -> bool {
        self.record_traced(frames, truncated, make).is_some()
    }

    /// [`Recorder::record`], returning the generation's epoch and the trace id the sample
    /// got, so a later sample with the same stack can reuse it ([`Recorder::record_reused`]).
    /// None when the sample was dropped. Signal-safe.
    pub fn record_traced(
        &self,
        frames: &[Frame],
        truncated: bool,
        make: impl Fn(u32) -> SampleRecord,
    ) -> Option<(u64, u32)> {
        self.append(
            |gen| {
                Some(if frames.is_empty() {
                    0
                } else {
                    gen.traces.insert(frames, truncated).unwrap_or(0)
                })
            },
            make,
        )
    }

    /// Appends a sample whose trace was interned earlier in the same generation epoch (what
    /// [`Recorder::record_traced`] returned), without interning again. None, and nothing
    /// recorded, when a dump has retired that generation since. Signal-safe.
    pub fn record_reused(
        &self,
        epoch: u64,
        trace_id: u32,
        make: impl Fn(u32) -> SampleRecord,
    ) -> Option<bool> {
        let mut stale = false;
        let done = self.append(
            |gen| {
                if gen.epoch() == epoch {
                    Some(trace_id)
                } else {
                    stale = true;
                    None
                }
            },
            make,
        );
        if stale {
            None
        } else {
            Some(done.is_some())
        }
    }

    /// Registers as a writer of the active generation, takes a trace id from `trace` (None:
    /// record nothing), appends `make(trace_id)`, leaves. Returns the epoch and trace id of
    /// the stored sample.
    #[link_section = sample_path_section!()]
    fn append(
        &self,
        trace: impl FnOnce(&Generation) -> Option<u32>,
        make: impl Fn(u32) -> SampleRecord,
    ) -> Option<(u64, u32)> {
        let gen = loop {
            // SeqCst on both sides of the handshake (here and in `flip`): a store then a load
            // of another location, which only sequential consistency keeps in order.
            let g = self.active.load(Ordering::SeqCst) & 1;
            let gen = &self.gens[g];
            gen.writers.fetch_add(1, Ordering::SeqCst);
            if self.active.load(Ordering::SeqCst) & 1 == g {
                break gen;
            }
            // A dump flipped between our load and our registration: use the new one.
            gen.writers.fetch_sub(1, Ordering::Release);
        };
        let Some(trace_id) = trace(gen) else {
            gen.writers.fetch_sub(1, Ordering::Release);
            return None;
        };
        let index = gen.samples_used.fetch_add(1, Ordering::Relaxed);
        let stored = match gen.samples.get(index) {
            Some(cell) => {
                // SAFETY: `index` was reserved by this writer alone.
                unsafe { *cell.record.get() = make(trace_id) };
                cell.round
                    .store(gen.round.load(Ordering::Relaxed), Ordering::Release);
                Some((gen.epoch(), trace_id))
            }
            None => {
                Counter::SamplesDroppedBufferFull.inc();
                None
            }
        };
        gen.writers.fetch_sub(1, Ordering::Release);
        stored
    }

    /// Makes the other generation active and returns the index of the one just retired,
    /// after every writer has left it (bounded wait; a timeout is counted, and the dump
    /// then reads only the complete records). `None` when the generation to activate
    /// still has a writer from before its last clear: no flip, the samples stay for the
    /// next dump.
    pub fn flip(&self) -> Option<usize> {
        let next = &self.gens[(self.active.load(Ordering::SeqCst) & 1) ^ 1];
        if next.dirty.load(Ordering::Acquire) {
            if !next.drained() {
                Counter::WriterWaitTimeouts.inc();
                return None;
            }
            next.clear();
        }
        let old = self.active.fetch_xor(1, Ordering::SeqCst) & 1;
        if !self.gens[old].drained() {
            Counter::WriterWaitTimeouts.inc();
        }
        Some(old)
    }

    pub fn generation(&self, index: usize) -> &Generation {
        &self.gens[index & 1]
    }

    /// Empties a retired generation so it can become active again.
    pub fn clear(&self, index: usize) {
        self.gens[index & 1].clear();
    }

    /// Calls `f` with each trace the active generation published since the last call with
    /// this `cursor` (all of them after a flip or a clear), at most [`SCAN_BUDGET`] a call.
    /// For a reader outside the signal path and the dump (naming ahead,
    /// `crate::profiler::ahead`). Not signal-safe.
    pub fn scan_active(&self, cursor: &mut ScanCursor, f: impl FnMut(&[Frame])) {
        let gen = &self.gens[self.active.load(Ordering::SeqCst) & 1];
        let epoch = gen.epoch();
        if cursor.epoch != epoch {
            *cursor = ScanCursor { epoch, next: 0 };
        }
        if let Some(next) = gen.scan_traces(epoch, cursor.next, SCAN_BUDGET, f) {
            cursor.next = next;
        }
    }

    /// Empties both generations (on `start`).
    pub fn reset(&self) {
        self.gens.iter().for_each(Generation::clear);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_of_the_active_generation_sees_new_traces_once_and_starts_over_after_a_flip() {
        let r = Recorder::new(64, 1024, 16);
        let mk = |id| SampleRecord {
            trace_id: id,
            ..Default::default()
        };
        let a = [Frame::java(7, 1, 1)];
        let b = [Frame::java(8, 2, 1), Frame::java(9, 3, 1)];
        let mut cursor = ScanCursor::default();
        let mut seen = Vec::new();
        r.record_traced(&a, false, mk).unwrap();
        r.scan_active(&mut cursor, |f| seen.push(f.to_vec()));
        r.record_traced(&a, false, mk).unwrap();
        r.record_traced(&b, false, mk).unwrap();
        r.scan_active(&mut cursor, |f| seen.push(f.to_vec()));
        assert_eq!(seen, vec![a.to_vec(), b.to_vec()]);
        // A flip makes the other generation active: its traces are new to the cursor.
        let old = r.flip().unwrap();
        r.clear(old);
        seen.clear();
        r.record_traced(&b, false, mk).unwrap();
        r.scan_active(&mut cursor, |f| seen.push(f.to_vec()));
        assert_eq!(seen, vec![b.to_vec()]);
        // And back to the first one, cleared since: its old traces are gone.
        let old = r.flip().unwrap();
        r.clear(old);
        seen.clear();
        r.scan_active(&mut cursor, |f| seen.push(f.to_vec()));
        assert!(seen.is_empty());
    }

    #[test]
    fn a_clear_waits_for_a_scan_in_progress() {
        let r = std::sync::Arc::new(Recorder::new(64, 1024, 16));
        r.record_traced(&[Frame::java(7, 1, 1)], false, |id| SampleRecord {
            trace_id: id,
            ..Default::default()
        })
        .unwrap();
        let (inside_tx, inside_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let scanner = {
            let r = r.clone();
            std::thread::spawn(move || {
                let mut cursor = ScanCursor::default();
                let mut frames = Vec::new();
                r.scan_active(&mut cursor, |f| {
                    inside_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                    frames.push(f.to_vec());
                });
                frames
            })
        };
        inside_rx.recv().unwrap();
        let cleared = std::sync::Arc::new(AtomicBool::new(false));
        let clearer = {
            let (r, cleared) = (r.clone(), cleared.clone());
            std::thread::spawn(move || {
                r.reset();
                cleared.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!cleared.load(Ordering::SeqCst), "cleared under a scan");
        go_tx.send(()).unwrap();
        assert_eq!(scanner.join().unwrap(), vec![vec![Frame::java(7, 1, 1)]]);
        clearer.join().unwrap();
        assert!(cleared.load(Ordering::SeqCst));
    }

    #[test]
    fn flip_separates_samples_between_dumps() {
        let r = Recorder::new(64, 1024, 16);
        let f = [Frame::java(7, 1, 1)];
        let mk = |tid| {
            move |id| SampleRecord {
                tid,
                trace_id: id,
                ..Default::default()
            }
        };
        assert!(r.record(&f, false, mk(1)));
        let old = r.flip().unwrap();
        assert!(r.record(&f, false, mk(2)));
        assert_eq!(
            r.generation(old)
                .samples()
                .map(|s| s.tid)
                .collect::<Vec<_>>(),
            vec![1]
        );
        r.clear(old);
        let newer = r.flip().unwrap();
        assert_eq!(
            r.generation(newer)
                .samples()
                .map(|s| s.tid)
                .collect::<Vec<_>>(),
            vec![2]
        );
        let id = r.generation(newer).samples().next().unwrap().trace_id;
        assert_eq!(r.generation(newer).traces.get(id).unwrap(), &f[..]);
    }

    #[test]
    fn full_sample_buffer_counts_drops() {
        let r = Recorder::new(64, 1024, 2);
        let f = [Frame::java(7, 1, 1)];
        let mk = |id| SampleRecord {
            trace_id: id,
            ..Default::default()
        };
        assert!(r.record(&f, false, mk));
        assert!(r.record(&f, false, mk));
        assert!(!r.record(&f, false, mk));
        assert_eq!(r.generation(0).sample_count(), 2);
    }

    #[test]
    fn a_writer_still_inside_keeps_its_generation_from_being_cleared_or_reused() {
        let r = Recorder::new(64, 1024, 16);
        let f = [Frame::java(7, 1, 1)];
        let mk = |id| SampleRecord {
            trace_id: id,
            tid: 5,
            ..Default::default()
        };
        assert!(r.record(&f, false, mk));
        // A handler descheduled inside generation 0 across the flip.
        r.gens[0].writers.fetch_add(1, Ordering::SeqCst);
        let old = r.flip().unwrap();
        assert_eq!(old, 0);
        assert_eq!(
            r.generation(old).sample_count(),
            1,
            "complete records are read"
        );
        r.clear(old);
        assert!(
            r.gens[0].dirty.load(Ordering::Acquire),
            "no clear under a writer"
        );
        assert_eq!(r.generation(old).traces.len(), 1);
        // The next flip would make it active again: it refuses while the writer is inside.
        assert_eq!(r.flip(), None);
        assert_eq!(r.active.load(Ordering::SeqCst) & 1, 1);
        // Once the writer left, the deferred clear happens and the flip goes through.
        r.gens[0].writers.fetch_sub(1, Ordering::SeqCst);
        assert_eq!(r.flip(), Some(1));
        assert_eq!(r.generation(0).sample_count(), 0);
        assert_eq!(r.generation(0).traces.len(), 0);
    }

    #[test]
    fn a_reserved_record_not_yet_written_is_not_read() {
        let r = Recorder::new(64, 1024, 16);
        let f = [Frame::java(7, 1, 1)];
        assert!(r.record(&f, false, |id| SampleRecord {
            trace_id: id,
            ..Default::default()
        }));
        // A slot taken by a writer that was interrupted before writing it.
        r.gens[0].samples_used.fetch_add(1, Ordering::SeqCst);
        let old = r.flip().unwrap();
        assert_eq!(r.generation(old).sample_count(), 1);
    }
}
