//! Signal-safe storage of what the handler records: interned call traces and sample
//! records, in two generations so that a dump reads one while signals write the other.
//!
//! Contract: `Recorder::record` is signal-safe (no allocation, no lock; bounded spins
//! only). Everything else runs on JVM threads, serialised by the profiler lock.

mod generation;
mod table;

pub use generation::{Generation, Recorder, SampleRecord, ScanCursor};
pub use table::{TraceTable, TraceView};

use super::frame::Frame;
