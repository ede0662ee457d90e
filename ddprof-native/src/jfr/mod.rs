//! JFR chunk encoder (pure Rust, std only).
//!
//! Produces chunks in the layout of the compatibility contract's JFR schema
//! (docs/jfr-format.md): a 68-byte header, the metadata event,
//! the events in the order the caller writes them, and one checkpoint with
//! every non-empty constant pool. A [`ChunkBuilder`] owns one chunk; dumps and
//! rotations start a new one, and chunks can simply be concatenated.
//!
//! Values are written the way JDK readers (`jdk.jfr.consumer`, `jfr print`)
//! and upstream's own consumers expect; see `buffer.rs` for the encodings and
//! `metadata.rs` for the declared types, which fix the field order of every
//! event written by `chunk.rs`.

mod buffer;
mod chunk;
mod metadata;
pub mod names;
mod pools;
#[cfg(test)]
pub(crate) mod reader;
#[cfg(test)]
mod tests;

pub use buffer::MAX_STRING_BYTES;
pub use chunk::{ChunkBuilder, ChunkBytes};
pub use metadata::warm as warm_metadata;
pub use pools::MethodShape;

/// Event type ids (docs/jfr-format.md 7), declared once in the metadata they describe.
pub use metadata::{
    T_ACTIVE_RECORDING, T_ACTIVE_SETTING, T_CLASS_REF_CACHE, T_CPU_INFORMATION, T_CPU_LOAD,
    T_ENDPOINT, T_EXECUTION_SAMPLE, T_HEAP_LIVE_OBJECT, T_HEAP_USAGE, T_INITIAL_SYSTEM_PROPERTY,
    T_JDK_EXECUTION_SAMPLE, T_JVM_INFORMATION, T_LOG, T_METHOD_SAMPLE, T_NATIVE_LIBRARY,
    T_NATIVE_MEMORY_ALLOCATION, T_NATIVE_MEMORY_FREE, T_NATIVE_SOCKET_EVENT, T_OBJECT_SAMPLE,
    T_OS_INFORMATION, T_PROFILER_CONFIG, T_PROFILER_COUNTER, T_PROFILER_SETTING, T_QUEUE_TIME,
    T_UNWIND_FAILURE, T_WALL_CLOCK_EPOCH,
};

/// Pool type ids, for tests that read chunks back.
#[cfg(test)]
pub(crate) use metadata::{
    T_ATTRIBUTE_VALUE, T_CLASS, T_STACK_TRACE, T_STRING, T_SYMBOL, T_THREAD,
};

/// `FrameRef::frame_type` values: the FrameType pool keys.
pub use crate::sample::frame::frame_type;

/// `Sample::state` values (ThreadState pool keys).
pub const STATE_UNKNOWN: u8 = 0;
pub const STATE_NEW: u8 = 1;
pub const STATE_RUNNABLE: u8 = 2;
pub const STATE_CONTENDED: u8 = 3;
pub const STATE_PARKED: u8 = 4;
pub const STATE_WAITING: u8 = 5;
pub const STATE_BREAKPOINT: u8 = 6;
pub const STATE_SLEEPING: u8 = 7;
pub const STATE_TERMINATED: u8 = 8;
pub const STATE_SYSCALL: u8 = 9;

/// `Sample::mode` values (ExecutionMode pool keys).
pub const MODE_UNKNOWN: u8 = 0;
pub const MODE_JAVA: u8 = 1;
pub const MODE_JVM: u8 = 2;
pub const MODE_NATIVE: u8 = 3;
pub const MODE_SAFEPOINT: u8 = 4;
pub const MODE_SYSCALL: u8 = 5;

/// `ChunkBuilder::log` levels (LogLevel pool keys).
pub const LOG_TRACE: u8 = 0;
pub const LOG_DEBUG: u8 = 1;
pub const LOG_INFO: u8 = 2;
pub const LOG_WARN: u8 = 3;
pub const LOG_ERROR: u8 = 4;

/// Where the chunk starts, on both clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkStart {
    /// Wall-clock start, nanoseconds since the Unix epoch.
    pub start_nanos: i64,
    /// The same instant on the event clock.
    pub start_ticks: i64,
    /// Event-clock frequency.
    pub ticks_per_second: i64,
}

/// A CPU (`datadog.ExecutionSample`) or wall-clock (`datadog.MethodSample`) sample.
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    pub ticks: i64,
    pub tid: i64,
    /// StackTrace pool key, or 0 for none.
    pub trace_key: u64,
    /// ThreadState pool id ([`STATE_RUNNABLE`] for CPU samples).
    pub state: u8,
    /// ExecutionMode pool id.
    pub mode: u8,
    pub weight: i64,
    pub correlation_id: i64,
    pub span_id: i64,
    pub local_root_span_id: i64,
    /// AttributeValue pool keys, one per configured attribute; missing
    /// trailing entries are written as 0 (unset), extra ones are ignored.
    pub attrs: &'a [u32],
}

/// One stack frame of [`ChunkBuilder::add_stack_trace`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRef {
    /// Method pool key from [`ChunkBuilder::intern_method`].
    pub method: u32,
    pub line: i32,
    pub bci: i32,
    /// 0 Interpreted, 1 JIT, 2 Inlined, 3 Native, 4 C++, 5 Kernel, 6 C1.
    pub frame_type: u8,
}

/// `datadog.DatadogProfilerConfig`.
#[derive(Clone, Copy, Debug)]
pub struct ProfilerConfig<'a> {
    pub ticks: i64,
    pub tid: i64,
    pub cpu_interval_ms: i64,
    pub wall_interval_ms: i64,
    pub alloc_interval: i64,
    pub memleak_interval: i64,
    pub memleak_capacity: i64,
    pub memleak_track_percent: i64,
    pub gc_generations: bool,
    pub mode_mask: i32,
    pub version: &'a str,
    pub cpu_engine: &'a str,
}

/// `jdk.ActiveRecording`.
#[derive(Clone, Copy, Debug)]
pub struct ActiveRecording<'a> {
    pub ticks: i64,
    pub duration_ticks: i64,
    pub tid: i64,
    pub id: i64,
    pub name: &'a str,
    pub destination: &'a str,
    pub max_age_ms: i64,
    /// `None` on JVMs before JDK 14: the field is then left out of both the
    /// event and the metadata, as upstream does.
    pub flush_interval_ms: Option<i64>,
    pub max_size: i64,
    pub recording_start_ms: i64,
    pub recording_duration_ms: i64,
}

/// `datadog.ObjectSample` (allocation sample).
#[derive(Clone, Copy, Debug)]
pub struct ObjectSample<'a> {
    pub ticks: i64,
    pub tid: i64,
    pub trace_key: u64,
    /// Class pool key from [`ChunkBuilder::intern_class`].
    pub object_class: u32,
    pub size: i64,
    pub weight: f32,
    pub span_id: i64,
    pub local_root_span_id: i64,
    pub attrs: &'a [u32],
}

/// `datadog.HeapLiveObject`.
#[derive(Clone, Copy, Debug)]
pub struct HeapLiveObject<'a> {
    pub ticks: i64,
    pub tid: i64,
    pub trace_key: u64,
    pub object_class: u32,
    pub age: i64,
    pub size: i64,
    pub weight: f32,
    pub span_id: i64,
    pub local_root_span_id: i64,
    pub attrs: &'a [u32],
}

/// `datadog.NativeMemoryAllocation`.
#[derive(Clone, Copy, Debug)]
pub struct NativeAllocation<'a> {
    pub ticks: i64,
    pub tid: i64,
    pub trace_key: u64,
    pub address: u64,
    pub size: i64,
    pub weight: f32,
    pub span_id: i64,
    pub local_root_span_id: i64,
    pub attrs: &'a [u32],
}

/// `datadog.NativeSocketEvent`.
#[derive(Clone, Copy, Debug)]
pub struct NativeSocketSample<'a> {
    pub ticks: i64,
    pub tid: i64,
    pub trace_key: u64,
    pub duration_ticks: i64,
    /// SEND / RECV / WRITE / READ.
    pub operation: &'a str,
    pub remote_address: &'a str,
    pub bytes_transferred: i64,
    pub weight: f32,
    pub span_id: i64,
    pub local_root_span_id: i64,
    pub attrs: &'a [u32],
}

/// `datadog.QueueTime`.
#[derive(Clone, Copy, Debug)]
pub struct QueueTime<'a> {
    pub ticks: i64,
    pub duration_ticks: i64,
    pub tid: i64,
    pub origin_tid: i64,
    /// Class pool keys from [`ChunkBuilder::intern_class`].
    pub task: u32,
    pub scheduler: u32,
    pub queue_type: u32,
    pub queue_length: i32,
    pub span_id: i64,
    pub local_root_span_id: i64,
    pub attrs: &'a [u32],
}

/// `datadog.Endpoint`.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint {
    pub ticks: i64,
    pub duration_ticks: i64,
    pub tid: i64,
    pub trace_key: u64,
    /// String pool key from [`ChunkBuilder::intern_string`].
    pub endpoint: u32,
    /// AttributeValue pool key from [`ChunkBuilder::intern_attribute_value`].
    pub operation: u32,
    pub local_root_span_id: i64,
}

/// `datadog.WallClockSamplingEpoch`.
#[derive(Clone, Copy, Debug)]
pub struct WallClockEpoch {
    pub ticks: i64,
    pub duration_ms: i64,
    pub sample_pool_size: i32,
    pub num_successful_samples: i32,
    pub num_failed_samples: i32,
    pub num_exited_threads: i32,
    pub num_permission_denied: i32,
    pub num_suppressed_sampled_run: i64,
}
