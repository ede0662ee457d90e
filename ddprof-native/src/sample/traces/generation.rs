//! Two generations of (trace table, sample buffer). Signal handlers write the active
//! one; a dump flips `active`, waits for writers still inside the old one, reads it and
//! clears it. So sampling never stops for a dump and each chunk holds exactly the
//! samples taken since the previous flip.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::super::context::MAX_ATTRIBUTES;
use super::table::TraceTable;
use super::Frame;
use crate::counters::Counter;
use crate::memory::{Category, Mapped, Zeroable};

/// One sample as the handler records it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SampleRecord {
    pub ticks: i64,
    pub span_id: u64,
    pub root_span_id: u64,
    /// In the event kind's unit (`crate::sample::record::Event::weight`).
    pub weight: u64,
    pub tid: i32,
    /// 0 when the trace could not be stored.
    pub trace_id: u32,
    /// Context attribute ids (`crate::context`), 0 = unset.
    pub attrs: [u32; MAX_ATTRIBUTES],
    /// `crate::sample::record::EventKind` as a byte: every bit pattern stays a valid record.
    pub event: u8,
}

#[repr(transparent)]
struct RecordCell(UnsafeCell<SampleRecord>);
// SAFETY: plain integers; zero is valid.
unsafe impl Zeroable for RecordCell {}

pub struct Generation {
    pub traces: TraceTable,
    samples: Mapped<RecordCell>,
    samples_used: AtomicUsize,
    writers: AtomicUsize,
}

// SAFETY: a record cell is written only by the writer that reserved its index with
// fetch_add, and read only after `writers` dropped to zero (Acquire/Release pair).
unsafe impl Sync for Generation {}

impl Generation {
    fn new(trace_slots: usize, frames: usize, samples: usize) -> Generation {
        Generation {
            traces: TraceTable::new(trace_slots, frames),
            samples: Mapped::new(samples, Category::SampleBuffers),
            samples_used: AtomicUsize::new(0),
            writers: AtomicUsize::new(0),
        }
    }

    /// Samples recorded so far. Call only when the generation is quiescent.
    pub fn samples(&self) -> &[SampleRecord] {
        let n = self
            .samples_used
            .load(Ordering::Acquire)
            .min(self.samples.len());
        // SAFETY: repr(transparent) cells over plain records; no writer is active.
        unsafe { std::slice::from_raw_parts(self.samples.as_ptr() as *const SampleRecord, n) }
    }

    fn clear(&self) {
        self.traces.clear();
        self.samples_used.store(0, Ordering::Release);
    }
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
                Generation::new(trace_slots, frames, samples),
                Generation::new(trace_slots, frames, samples),
            ],
            active: AtomicUsize::new(0),
        }
    }

    /// Interns the trace and appends a sample built by `make` (which receives the trace
    /// id) to the active generation. Signal-safe. Returns false when the sample was dropped.
    pub fn record(
        &self,
        frames: &[Frame],
        truncated: bool,
        make: impl Fn(u32) -> SampleRecord,
    ) -> bool {
        let gen = loop {
            let g = self.active.load(Ordering::Acquire) & 1;
            let gen = &self.gens[g];
            gen.writers.fetch_add(1, Ordering::AcqRel);
            if self.active.load(Ordering::Acquire) & 1 == g {
                break gen;
            }
            // A dump flipped between our load and our registration: use the new one.
            gen.writers.fetch_sub(1, Ordering::Release);
        };
        let index = gen.samples_used.fetch_add(1, Ordering::Relaxed);
        let stored = match gen.samples.get(index) {
            Some(cell) => {
                let trace_id = if frames.is_empty() {
                    0
                } else {
                    gen.traces.insert(frames, truncated).unwrap_or(0)
                };
                // SAFETY: `index` was reserved by this writer alone.
                unsafe { *cell.0.get() = make(trace_id) };
                true
            }
            None => {
                Counter::SamplesDroppedBufferFull.inc();
                false
            }
        };
        gen.writers.fetch_sub(1, Ordering::Release);
        stored
    }

    /// Makes the other generation active and returns the index of the one just retired,
    /// after every writer has left it (bounded wait; a timeout is counted).
    pub fn flip(&self) -> usize {
        let old = self.active.fetch_xor(1, Ordering::AcqRel) & 1;
        let deadline = Instant::now() + Duration::from_millis(200);
        while self.gens[old].writers.load(Ordering::Acquire) != 0 {
            if Instant::now() > deadline {
                Counter::WriterWaitTimeouts.inc();
                break;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        old
    }

    pub fn generation(&self, index: usize) -> &Generation {
        &self.gens[index & 1]
    }

    /// Empties a retired generation so it can become active again.
    pub fn clear(&self, index: usize) {
        self.gens[index & 1].clear();
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
        let old = r.flip();
        assert!(r.record(&f, false, mk(2)));
        assert_eq!(
            r.generation(old)
                .samples()
                .iter()
                .map(|s| s.tid)
                .collect::<Vec<_>>(),
            vec![1]
        );
        r.clear(old);
        let newer = r.flip();
        assert_eq!(
            r.generation(newer)
                .samples()
                .iter()
                .map(|s| s.tid)
                .collect::<Vec<_>>(),
            vec![2]
        );
        let id = r.generation(newer).samples()[0].trace_id;
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
        assert_eq!(r.generation(0).samples().len(), 2);
    }
}
