//! The chunk builder: event writers, pool registration and the final layout.

use super::buffer::{
    begin_event, end_event, put_bool, put_float, put_int, put_long, put_string, put_varint,
    EventBytes, VarintSink, EVENT_BYTES_MAX,
};
use super::metadata::{self as md, write_metadata_event, Layout};
use super::names::normalize_cow;
use super::pools::{MethodShape, Pools};
use super::*;

/// The descriptor of a native frame's method.
pub const NATIVE_DESCRIPTOR: &str = "()L;";

/// Size of the fixed chunk header.
pub(crate) const HEADER_SIZE: usize = 68;
const MAGIC: &[u8; 4] = b"FLR\0";
const MAJOR: u16 = 2;
const MINOR: u16 = 0;
/// Written in the size field until the chunk is complete, so a reader that
/// meets an unfinished chunk skips far ahead instead of parsing garbage.
const UNFINISHED_CHUNK_SIZE: i64 = 1 << 30;
/// Compressed integers.
const FEATURES: u32 = 1;

/// Builds one JFR chunk in memory.
///
/// Events are encoded as they are added; pools are collected and written
/// once, in the checkpoint at [`finish`](Self::finish). The metadata event is
/// also laid out at `finish`, so that the one layout choice that depends on
/// the events (`jdk.ActiveRecording.flushInterval`) can follow them.
#[derive(Debug)]
pub struct ChunkBuilder {
    start: ChunkStart,
    attributes: Vec<String>,
    /// Header placeholder; the metadata event is inserted after it at finish.
    header: Vec<u8>,
    events: Vec<u8>,
    pools: Pools,
    /// Fixed by the first ActiveRecording event; `None` until then.
    flush_interval_declared: Option<bool>,
}

impl ChunkBuilder {
    /// Header placeholder + metadata event. `attributes` = configured context
    /// attribute names (extra trailing AttributeValue cp fields on the sample
    /// events that take them).
    pub fn new(start: ChunkStart, attributes: &[String]) -> Self {
        let mut header = Vec::with_capacity(HEADER_SIZE);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&MAJOR.to_be_bytes());
        header.extend_from_slice(&MINOR.to_be_bytes());
        header.extend_from_slice(&UNFINISHED_CHUNK_SIZE.to_be_bytes());
        header.extend_from_slice(&0i64.to_be_bytes()); // cpool offset
        header.extend_from_slice(&0i64.to_be_bytes()); // metadata offset
        header.extend_from_slice(&start.start_nanos.to_be_bytes());
        header.extend_from_slice(&0i64.to_be_bytes()); // duration
        header.extend_from_slice(&start.start_ticks.to_be_bytes());
        header.extend_from_slice(&start.ticks_per_second.to_be_bytes());
        header.extend_from_slice(&FEATURES.to_be_bytes());
        debug_assert_eq!(header.len(), HEADER_SIZE);
        ChunkBuilder {
            start,
            attributes: attributes.to_vec(),
            header,
            events: Vec::with_capacity(64 * 1024),
            pools: Pools::default(),
            flush_interval_declared: None,
        }
    }

    pub fn start(&self) -> ChunkStart {
        self.start
    }

    /// Pool ids from `base + 1` (see `Pools`): for a chunk appended after others.
    pub fn with_id_base(mut self, base: u32) -> Self {
        self.pools = Pools::with_base(base);
        self
    }

    /// The id base for a chunk appended after this one.
    pub fn next_id_base(&self) -> u32 {
        self.pools.next_base()
    }

    /// The StackTrace pool key of trace-table id `trace_id`, for sample events.
    pub fn trace_ref(&self, trace_id: u64) -> u64 {
        self.pools.trace_ref(trace_id)
    }

    /// See [`Pools::trace_aliases`].
    pub fn trace_aliases(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.pools.trace_aliases()
    }

    /// See [`Pools::own_trace_ref`].
    pub fn own_trace_ref(&self, trace_id: u64) -> u64 {
        self.pools.own_trace_ref(trace_id)
    }

    /// Room for `bytes` more of events, so that a chunk of many samples does not copy its
    /// events at each doubling (fresh pages are much of a first dump's cost).
    pub fn reserve_events(&mut self, bytes: usize) {
        self.events.reserve(bytes);
    }

    /// Bytes of events written so far (excluding metadata and pools), for
    /// callers that rotate chunks by size.
    pub fn events_size(&self) -> usize {
        self.events.len()
    }

    // ---- events: chunk start -------------------------------------------

    pub fn active_setting(
        &mut self,
        ticks: i64,
        tid: i64,
        event_type: i64,
        name: &str,
        value: &str,
    ) {
        self.pools.note_thread(tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_ACTIVE_SETTING);
        put_long(out, ticks);
        put_long(out, 0); // duration
        put_long(out, tid);
        put_varint(out, 0); // stack trace: none
        put_long(out, event_type);
        put_string(out, name);
        put_string(out, value);
        end_event(out, e);
    }

    pub fn os_information(&mut self, ticks: i64, os_version: &str) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_OS_INFORMATION);
        put_long(out, ticks);
        put_string(out, os_version);
        end_event(out, e);
    }

    pub fn cpu_information(
        &mut self,
        ticks: i64,
        cpu: &str,
        description: &str,
        cores: i32,
        hw_threads: i32,
    ) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_CPU_INFORMATION);
        put_long(out, ticks);
        put_string(out, cpu);
        put_string(out, description);
        put_int(out, 1); // sockets: not detected, upstream reports 1
        put_int(out, cores);
        put_int(out, hw_threads);
        end_event(out, e);
    }

    #[allow(clippy::too_many_arguments)]
    pub fn jvm_information(
        &mut self,
        ticks: i64,
        jvm_name: &str,
        jvm_version: &str,
        jvm_args: &str,
        jvm_flags: &str,
        java_args: &str,
        jvm_start_ms: i64,
        pid: i64,
    ) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_JVM_INFORMATION);
        put_long(out, ticks);
        put_string(out, jvm_name);
        put_string(out, jvm_version);
        put_string(out, jvm_args);
        put_string(out, jvm_flags);
        put_string(out, java_args);
        put_long(out, jvm_start_ms);
        put_long(out, pid);
        end_event(out, e);
    }

    pub fn initial_system_property(&mut self, ticks: i64, key: &str, value: &str) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_INITIAL_SYSTEM_PROPERTY);
        put_long(out, ticks);
        put_string(out, key);
        put_string(out, value);
        end_event(out, e);
    }

    pub fn native_library(
        &mut self,
        ticks: i64,
        name: &str,
        base: u64,
        top: u64,
        build_id: &str,
        load_bias: u64,
    ) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_NATIVE_LIBRARY);
        put_long(out, ticks);
        put_string(out, name);
        put_varint(out, base);
        put_varint(out, top);
        put_string(out, build_id);
        put_varint(out, load_bias);
        end_event(out, e);
    }

    // ---- events: samples -------------------------------------------------

    /// `datadog.ExecutionSample` (CPU).
    pub fn execution_sample(&mut self, s: &Sample) {
        self.sample(md::T_EXECUTION_SAMPLE, s);
    }

    /// `jdk.ExecutionSample`: the CPU sample as the JDK writes it (`jdksamples`).
    pub fn jdk_execution_sample(&mut self, s: &Sample) {
        self.pools.note_thread(s.tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_JDK_EXECUTION_SAMPLE);
        put_long(out, s.ticks);
        put_long(out, s.tid);
        put_varint(out, s.trace_key);
        put_varint(out, u64::from(s.state));
        end_event(out, e);
    }

    /// `datadog.MethodSample` (wall clock); same layout as the CPU sample.
    pub fn method_sample(&mut self, s: &Sample) {
        self.sample(md::T_METHOD_SAMPLE, s);
    }

    fn sample(&mut self, type_id: i64, s: &Sample) {
        self.pools.note_thread(s.tid);
        let configured = self.attributes.len();
        // Ten longs of at most 9 bytes and the attribute keys (u32: at most 5 bytes each).
        if 10 * 9 + 5 * configured <= EVENT_BYTES_MAX {
            let mut e = EventBytes::begin(&mut self.events);
            sample_fields(&mut e, type_id, s, configured);
            e.finish();
        } else {
            let out = &mut self.events;
            let e = begin_event(out);
            sample_fields(out, type_id, s, configured);
            end_event(out, e);
        }
    }

    pub fn object_sample(&mut self, s: &ObjectSample) {
        self.pools.note_thread(s.tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_OBJECT_SAMPLE);
        put_long(out, s.ticks);
        put_long(out, s.tid);
        put_varint(out, s.trace_key);
        put_varint(out, u64::from(s.object_class));
        put_long(out, s.size);
        put_float(out, s.weight);
        put_long(out, s.span_id);
        put_long(out, s.local_root_span_id);
        put_attrs(out, self.attributes.len(), s.attrs);
        end_event(out, e);
    }

    pub fn heap_live_object(&mut self, s: &HeapLiveObject) {
        self.pools.note_thread(s.tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_HEAP_LIVE_OBJECT);
        put_long(out, s.ticks);
        put_long(out, s.tid);
        put_varint(out, s.trace_key);
        put_varint(out, u64::from(s.object_class));
        put_long(out, s.age);
        put_long(out, s.size);
        put_float(out, s.weight);
        put_long(out, s.span_id);
        put_long(out, s.local_root_span_id);
        put_attrs(out, self.attributes.len(), s.attrs);
        end_event(out, e);
    }

    pub fn native_memory_allocation(&mut self, s: &NativeAllocation) {
        self.pools.note_thread(s.tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_NATIVE_MEMORY_ALLOCATION);
        put_long(out, s.ticks);
        put_long(out, s.tid);
        put_varint(out, s.trace_key);
        put_varint(out, s.address);
        put_long(out, s.size);
        put_float(out, s.weight);
        put_long(out, s.span_id);
        put_long(out, s.local_root_span_id);
        put_attrs(out, self.attributes.len(), s.attrs);
        end_event(out, e);
    }

    /// `datadog.NativeMemoryFree`: a sampled block freed at `ticks` by thread `tid`.
    pub fn native_memory_free(&mut self, ticks: i64, tid: i64, address: u64) {
        self.pools.note_thread(tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_NATIVE_MEMORY_FREE);
        put_long(out, ticks);
        put_long(out, tid);
        put_varint(out, address);
        end_event(out, e);
    }

    /// `datadog.NativeSocketEvent`, `duration` second (see metadata.rs).
    pub fn native_socket_event(&mut self, s: &NativeSocketSample) {
        self.pools.note_thread(s.tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_NATIVE_SOCKET_EVENT);
        put_long(out, s.ticks);
        put_long(out, s.duration_ticks);
        put_long(out, s.tid);
        put_varint(out, s.trace_key);
        put_string(out, s.operation);
        put_string(out, s.remote_address);
        put_long(out, s.bytes_transferred);
        put_float(out, s.weight);
        put_long(out, s.span_id);
        put_long(out, s.local_root_span_id);
        put_attrs(out, self.attributes.len(), s.attrs);
        end_event(out, e);
    }

    pub fn queue_time(&mut self, q: &QueueTime) {
        self.pools.note_thread(q.tid);
        self.pools.note_thread(q.origin_tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_QUEUE_TIME);
        put_long(out, q.ticks);
        put_long(out, q.duration_ticks);
        put_long(out, q.tid);
        put_long(out, q.origin_tid);
        put_varint(out, u64::from(q.task));
        put_varint(out, u64::from(q.scheduler));
        put_varint(out, u64::from(q.queue_type));
        put_int(out, q.queue_length);
        put_long(out, q.span_id);
        put_long(out, q.local_root_span_id);
        put_attrs(out, self.attributes.len(), q.attrs);
        end_event(out, e);
    }

    pub fn endpoint(&mut self, ep: &Endpoint) {
        self.pools.note_thread(ep.tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_ENDPOINT);
        put_long(out, ep.ticks);
        put_long(out, ep.duration_ticks);
        put_long(out, ep.tid);
        put_varint(out, ep.trace_key);
        put_varint(out, u64::from(ep.endpoint));
        put_varint(out, u64::from(ep.operation));
        put_long(out, ep.local_root_span_id);
        end_event(out, e);
    }

    pub fn wall_clock_epoch(&mut self, w: &WallClockEpoch) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_WALL_CLOCK_EPOCH);
        put_long(out, w.ticks);
        put_long(out, w.duration_ms);
        put_int(out, w.sample_pool_size);
        put_int(out, w.num_successful_samples);
        put_int(out, w.num_failed_samples);
        put_int(out, w.num_exited_threads);
        put_int(out, w.num_permission_denied);
        put_long(out, w.num_suppressed_sampled_run);
        end_event(out, e);
    }

    /// `jdk.CPULoad`; values are fractions in [0, 1].
    pub fn cpu_load(&mut self, ticks: i64, jvm_user: f32, jvm_system: f32, machine_total: f32) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_CPU_LOAD);
        put_long(out, ticks);
        put_float(out, jvm_user);
        put_float(out, jvm_system);
        put_float(out, machine_total);
        end_event(out, e);
    }

    /// One `datadog.TraceLink`: the 128-bit trace id (`high`, `low`) of a local root span.
    pub fn trace_link(&mut self, ticks: i64, local_root_span_id: i64, high: i64, low: i64) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_TRACE_LINK);
        put_long(out, ticks);
        put_long(out, local_root_span_id);
        put_long(out, high);
        put_long(out, low);
        end_event(out, e);
    }

    pub fn heap_usage(&mut self, ticks: i64, size: i64, is_live: bool) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_HEAP_USAGE);
        put_long(out, ticks);
        put_long(out, size);
        put_bool(out, is_live);
        end_event(out, e);
    }

    // ---- events: chunk end -------------------------------------------------

    pub fn profiler_setting(&mut self, ticks: i64, tid: i64, name: &str, value: &str, unit: &str) {
        self.pools.note_thread(tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_PROFILER_SETTING);
        put_long(out, ticks);
        put_long(out, 0); // duration
        put_long(out, tid);
        put_varint(out, 0); // stack trace: none
        put_string(out, name);
        put_string(out, value);
        put_string(out, unit);
        end_event(out, e);
    }

    pub fn profiler_config(&mut self, c: &ProfilerConfig) {
        self.pools.note_thread(c.tid);
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_PROFILER_CONFIG);
        put_long(out, c.ticks);
        put_long(out, 0); // duration
        put_long(out, c.tid);
        put_long(out, c.cpu_interval_ms);
        put_long(out, c.wall_interval_ms);
        put_long(out, c.alloc_interval);
        put_long(out, c.memleak_interval);
        put_long(out, c.memleak_capacity);
        put_long(out, c.memleak_track_percent);
        put_bool(out, c.gc_generations);
        put_int(out, c.mode_mask);
        put_string(out, c.version);
        put_string(out, c.cpu_engine);
        end_event(out, e);
    }

    /// `jdk.ActiveRecording`. The first call decides whether the chunk
    /// declares `flushInterval`; later calls in the same chunk follow that
    /// decision (0 if declared but `None`, dropped if not declared).
    pub fn active_recording(&mut self, r: &ActiveRecording) {
        self.pools.note_thread(r.tid);
        let declared = *self
            .flush_interval_declared
            .get_or_insert(r.flush_interval_ms.is_some());
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_ACTIVE_RECORDING);
        put_long(out, r.ticks);
        put_long(out, r.duration_ticks);
        put_long(out, r.tid);
        put_varint(out, 0); // stack trace: none
        put_long(out, r.id);
        put_string(out, r.name);
        put_string(out, r.destination);
        put_long(out, r.max_age_ms);
        if declared {
            put_long(out, r.flush_interval_ms.unwrap_or(0));
        }
        put_long(out, r.max_size);
        put_long(out, r.recording_start_ms);
        put_long(out, r.recording_duration_ms);
        end_event(out, e);
    }

    /// `datadog.ProfilerCounter`; the name is written inline, not pooled.
    pub fn profiler_counter(&mut self, ticks: i64, name: &str, count: i64) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_PROFILER_COUNTER);
        put_long(out, ticks);
        put_string(out, name);
        put_long(out, count);
        end_event(out, e);
    }

    pub fn class_ref_cache(&mut self, ticks: i64, size: i64) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_CLASS_REF_CACHE);
        put_long(out, ticks);
        put_long(out, size);
        end_event(out, e);
    }

    /// `datadog.UnwindFailure`; `kind` is "stub" or "other".
    pub fn unwind_failure(&mut self, ticks: i64, kind: &str, name: &str, count: i64) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_UNWIND_FAILURE);
        put_long(out, ticks);
        put_string(out, kind);
        put_string(out, name);
        put_long(out, count);
        end_event(out, e);
    }

    /// `profiler.Log`; `level` is a LogLevel key ([`LOG_TRACE`]..[`LOG_ERROR`]).
    pub fn log(&mut self, ticks: i64, level: u8, message: &str) {
        let out = &mut self.events;
        let e = begin_event(out);
        put_long(out, md::T_LOG);
        put_long(out, ticks);
        put_varint(out, u64::from(level));
        put_string(out, message);
        end_event(out, e);
    }

    // ---- pools -------------------------------------------------------------

    /// Thread pool entry, key = OS tid. `java_name` None for non-Java threads
    /// (javaThreadId 0 then). A later call for the same tid replaces the entry.
    /// Tids that events use but that are never added get a `[tid=N]` entry.
    pub fn add_thread(
        &mut self,
        tid: i64,
        os_name: &str,
        java_name: Option<&str>,
        java_thread_id: i64,
    ) {
        self.pools
            .add_thread(tid, os_name, java_name, java_thread_id);
    }

    /// Method pool: dedups by (class_name, name, descriptor) after applying
    /// [`names::normalize`]; returns the method pool key (from 1). `class_name`
    /// in internal form ("java/lang/String", "" for native/unknown frames).
    /// Creates Class/Package/Symbol entries as needed.
    pub fn intern_method(
        &mut self,
        class_name: &str,
        name: &str,
        descriptor: &str,
        modifiers: i32,
        hidden: bool,
    ) -> u32 {
        let (class_name, name) = normalize_cow(class_name, name);
        self.pools
            .intern_method(&class_name, &name, descriptor, modifiers, hidden)
    }

    /// The contract's native frame (class "", the symbol `name`, `()L;`, ACC_NATIVE) as
    /// [`Self::intern_method`] makes it, its class and descriptor interned once per chunk
    /// (`shape`: `None` at first, then kept by the caller for this chunk only).
    pub fn intern_native_method(&mut self, shape: &mut Option<MethodShape>, name: &str) -> u32 {
        // Normalisation leaves class "" and its method names alone.
        self.pools
            .intern_method_shaped(shape, "", name, NATIVE_DESCRIPTOR, 0x100, false)
    }

    /// As [`Self::intern_method`] without the name normalisation (the caller has done what
    /// applies: a receiver frame's class is folded, its method name never replaced).
    pub fn intern_method_verbatim(
        &mut self,
        class_name: &str,
        name: &str,
        descriptor: &str,
        modifiers: i32,
        hidden: bool,
    ) -> u32 {
        self.pools
            .intern_method(class_name, name, descriptor, modifiers, hidden)
    }

    /// Class pool key (from 1) for a class in internal form, e.g. for
    /// `ObjectSample::object_class`. No name normalisation is applied.
    pub fn intern_class(&mut self, class_name: &str) -> u32 {
        self.pools.intern_class(class_name)
    }

    /// Adds a StackTrace pool entry; `frames[0]` is the leaf. A key that is
    /// already present is ignored.
    /// See [`Pools::reserve_traces`].
    pub fn reserve_traces(&mut self, traces: usize, frames: usize) {
        self.pools.reserve_traces(traces, frames);
    }

    /// See [`Pools::reserve_methods`].
    pub fn reserve_methods(&mut self, methods: usize) {
        self.pools.reserve_methods(methods);
    }

    pub fn add_stack_trace(&mut self, key: u64, truncated: bool, frames: &[FrameRef]) {
        self.pools.add_stack_trace(key, truncated, frames);
    }

    /// AttributeValue pool key; 0 is "unset", never returned.
    pub fn intern_attribute_value(&mut self, value: &str) -> u32 {
        self.pools.attributes.intern(value)
    }

    /// `java.lang.String` pool key (endpoint labels); never 0.
    pub fn intern_string(&mut self, value: &str) -> u32 {
        self.pools.strings.intern(value)
    }

    // ---- finish --------------------------------------------------------------

    /// Writes the chunk-end checkpoint with all non-empty pools (FrameType,
    /// ThreadState, ExecutionMode, LogLevel always; Thread whenever any thread
    /// was added or referenced), patches the header (size, cpool offset,
    /// metadata offset 68, duration) and returns the finished chunk bytes.
    /// `end_ticks` stamps the checkpoint. (The dump writes [`Self::finish_parts`].)
    #[cfg(test)]
    pub fn finish(self, end_ticks: i64, duration_nanos: i64) -> Vec<u8> {
        self.finish_parts(end_ticks, duration_nanos).into_vec()
    }

    /// [`Self::finish`] as the parts the chunk was built in, not copied into one buffer.
    pub fn finish_parts(mut self, end_ticks: i64, duration_nanos: i64) -> ChunkBytes {
        let layout = Layout {
            attributes: &self.attributes,
            flush_interval: self.flush_interval_declared.unwrap_or(true),
        };
        let mut head = std::mem::take(&mut self.header);
        head.reserve(32 * 1024);
        write_metadata_event(&mut head, self.start.start_ticks, &layout);
        let events = std::mem::take(&mut self.events);
        let cpool_offset = head.len() + events.len();
        let mut checkpoint = Vec::with_capacity(16 * 1024);
        // Reserved, not touched: only the bytes written fault pages in.
        let mut tail = Vec::with_capacity(self.pools.size_hint());
        let (traces, _) = self
            .pools
            .take_checkpoint(&mut checkpoint, &mut tail, end_ticks);

        let size = cpool_offset + checkpoint.len() + traces.len() + tail.len();
        let patch = |out: &mut Vec<u8>, at: usize, v: i64| {
            out[at..at + 8].copy_from_slice(&v.to_be_bytes())
        };
        patch(&mut head, 8, size as i64);
        patch(&mut head, 16, cpool_offset as i64);
        patch(&mut head, 24, HEADER_SIZE as i64);
        patch(&mut head, 40, duration_nanos);
        ChunkBytes {
            parts: vec![head, events, checkpoint, traces, tail],
        }
    }
}

/// A finished chunk as the parts it was built in (header and metadata, events, checkpoint
/// up to the stack traces, the stack traces, the rest of the checkpoint), written one
/// after the other. Joining them would copy the whole chunk into fresh pages: on a dump of
/// thousands of deep stacks, megabytes, and in a VM guest each fresh page costs microseconds.
pub struct ChunkBytes {
    parts: Vec<Vec<u8>>,
}

impl ChunkBytes {
    pub fn len(&self) -> usize {
        self.parts.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parts, in file order.
    pub fn parts(&self) -> Vec<&[u8]> {
        self.parts.iter().map(Vec::as_slice).collect()
    }

    /// The chunk in one buffer.
    #[cfg(test)]
    pub fn into_vec(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        for p in &self.parts {
            out.extend_from_slice(p);
        }
        out
    }
}

/// Writes exactly `configured` attribute keys so the event always matches
/// the metadata, whatever the caller passed.
/// The fields of a CPU or wall sample (`datadog.ExecutionSample`, `datadog.MethodSample`).
fn sample_fields(out: &mut impl VarintSink, type_id: i64, s: &Sample, configured: usize) {
    out.long(type_id);
    out.long(s.ticks);
    out.long(s.tid);
    out.varint(s.trace_key);
    out.varint(u64::from(s.state));
    out.varint(u64::from(s.mode));
    out.long(s.weight);
    out.long(s.correlation_id);
    out.long(s.span_id);
    out.long(s.local_root_span_id);
    for i in 0..configured {
        out.varint(u64::from(s.attrs.get(i).copied().unwrap_or(0)));
    }
}

fn put_attrs(out: &mut Vec<u8>, configured: usize, attrs: &[u32]) {
    for i in 0..configured {
        put_varint(out, u64::from(attrs.get(i).copied().unwrap_or(0)));
    }
}
