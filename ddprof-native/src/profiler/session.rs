//! What a running recording is (`Session`, with the `Walker` it resolved) and what waits for
//! its next chunk (`PendingSetting`): the state the lifecycle (`super`) keeps and the dump reads.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::args::{Args, FjMethodId};
use crate::engine::wall::WallClock;
use crate::engine::Engine;

/// A running recording.
pub struct Session {
    pub args: Args,
    pub engine: Arc<dyn Engine>,
    /// The wall-clock sampler, when `wall` was asked for.
    pub wall: Option<Arc<WallClock>>,
    pub file: PathBuf,
    pub started: Instant,
    pub started_epoch_ms: i64,
    /// Start of the chunk now being collected.
    pub chunk_start_nanos: i64,
    pub chunk_start_ticks: i64,
    /// The walker the requested `cstack` resolved to.
    pub walker: Walker,
    /// The `fjmethodid` mode in force: the requested one, or the one it fell back to.
    pub fjmethodid: FjMethodId,
    /// Warnings to repeat as log events in the recording.
    pub warnings: Vec<String>,
    /// Why the CPU engine is not the one asked for or chosen first (perf_events refused),
    /// for `status`, the log and the `cpuEngineFallback` setting.
    pub cpu_engine_fallback: Option<String>,
    /// Process CPU time (ns) and own CPU signals at the start of the chunk being collected:
    /// the base of the achieved rate (`cpu_samples_per_cpu_second`).
    pub rate_base: (i64, i64),
    /// That rate over the chunk just closed, for its `cpuSamplingRate` setting.
    pub cpu_rate: Option<f64>,
    /// Whether the library watcher runs (`libraries.rs`; it stops with the sources), which then
    /// prunes the CPU engine's threads in place of the dumps.
    pub watches_libraries: bool,
    /// What the start started, which `stop` stops (`sources.rs`).
    pub sources: super::sources::Sources,
}

/// The stack walker a session's `cstack` resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walker {
    /// AsyncGetCallTrace.
    Asgct,
    /// Our VMStructs walker, native frames above the top Java frame (`cstack=vm`).
    Vm,
    /// Our VMStructs walker, native frames between Java frames too (`cstack=vmx`).
    Vmx,
}

impl Walker {
    /// The name the `stackwalker` setting of every chunk writes.
    pub fn name(self) -> &'static str {
        match self {
            Walker::Asgct => "asgct",
            Walker::Vm => "vm",
            Walker::Vmx => "vmx",
        }
    }
}

/// `recordSetting` calls waiting for the next chunk.
pub struct PendingSetting {
    pub ticks: i64,
    pub tid: i64,
    pub name: String,
    pub value: String,
    pub unit: String,
}
