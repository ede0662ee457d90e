//! Turning one retired generation into one JFR chunk: settings (`settings.rs`) and system
//! information (`host.rs`) first, then the stack traces, each frame named once by the dump's
//! [`FrameNamer`] (`crate::methods::namer`), then the samples and live objects ([`Events`]: one
//! `match` on the kind), then the end-of-chunk events and the constant pools.
//! Runs on a JVM thread (JNI/JVMTI available), under the profiler lock.

mod host;
mod settings;
#[cfg(test)]
mod tests;

use std::time::Instant;

use jni::sys::JNIEnv;

pub use host::prepare;

use super::session::{PendingSetting, Session};
use super::VERSION;
use crate::alloc::live::{LiveObject, Snapshot};
use crate::counters;
use crate::jfr::{
    ActiveRecording, ChunkBuilder, ChunkStart, FrameRef, HeapLiveObject, NativeAllocation,
    NativeSocketSample, ObjectSample, ProfilerConfig, Sample,
};
use crate::jvmti::jvm;
use crate::methods::namer::{DumpNamer, FrameNamer};
use crate::sample::frame::{frame_type, kind, Frame};
use crate::sample::handler::TICKS_PER_SECOND;
use crate::sample::record::{EventKind, Socket};
use crate::sample::traces::{Generation, SampleRecord};
use crate::threads;
use crate::word_map::{RecentTids, WordMap, WordSet};

const LOG_WARN: u8 = 3;
// jfr mask bits (the `jfr=` option).
const NO_SYSTEM_INFO: u32 = 1;
const NO_SYSTEM_PROPS: u32 = 2;
const NO_NATIVE_LIBS: u32 = 4;
const NO_CPU_LOAD: u32 = 8;

/// How a chunk ends and where it goes.
pub struct ChunkEnd {
    pub ticks: i64,
    pub nanos: i64,
    /// Pool ids start after this (chunks appended to a file, see `jfr::pools::Pools`).
    pub id_base: u32,
}

/// What one pass over a generation's samples finds before the chunk is written: when each
/// trace was first sampled (a lazy frame of a redefined class stands only in traces sampled
/// after its redefinition ended, `methods::lazy::resolve`), how many samples there are, and
/// what the CPU samples stand for (`chunk_sample_weight`: more than the samples when CPU
/// timers overran; `chunk_samples_per_thread_second`, so a recording shows when the timer
/// could not keep the asked rate). One pass: the records of a 1 ms chunk are megabytes.
#[derive(Default)]
struct SampleScan {
    first_sampled: WordMap<u64, i64>,
    samples: i64,
    cpu_samples: i64,
    cpu_weight: u64,
    cpu_threads: WordSet<i32>,
}

impl SampleScan {
    fn of(gen: &Generation) -> SampleScan {
        let mut scan = SampleScan::default();
        // Consecutive samples mostly repeat a trace (a thread spinning in one place) and a
        // thread: the maps are touched when either changes.
        let mut run: Option<(u64, i64)> = None;
        let mut cpu_tids = RecentTids::default();
        for s in gen.samples() {
            scan.samples += 1;
            let id = u64::from(s.trace_id);
            run = match run {
                Some((rid, t)) if rid == id => Some((id, t.min(s.ticks))),
                Some((rid, t)) => {
                    scan.sampled_at(rid, t);
                    Some((id, s.ticks))
                }
                None => Some((id, s.ticks)),
            };
            if s.event == EventKind::Cpu as u8 {
                scan.cpu_samples += 1;
                scan.cpu_weight += s.weight;
                if !cpu_tids.seen(i64::from(s.tid)) {
                    scan.cpu_threads.insert(s.tid);
                }
            }
        }
        if let Some((id, t)) = run {
            scan.sampled_at(id, t);
        }
        scan
    }

    fn sampled_at(&mut self, id: u64, ticks: i64) {
        let t = self.first_sampled.entry(id).or_insert(ticks);
        *t = (*t).min(ticks);
    }

    fn write_rate_counters(&self, chunk_nanos: i64) {
        let threads = self.cpu_threads.len() as i128;
        let per_thread_second = if threads == 0 || chunk_nanos <= 0 {
            0
        } else {
            (i128::from(self.cpu_samples) * 1_000_000_000 / (i128::from(chunk_nanos) * threads))
                as i64
        };
        counters::Counter::ChunkSampleWeight.set(self.cpu_weight as i64);
        counters::Counter::ChunkSamplesPerThreadSecond.set(per_thread_second);
    }
}

/// What one chunk is made of, besides the chunk's own end-of-chunk reads.
struct Inputs<'a> {
    session: &'a Session,
    gen: &'a Generation,
    /// The live-heap tracker's entries (`memory=..:l|L`), empty without liveness.
    live: Snapshot,
    /// When the live snapshot was taken (`live_heap_flush_nanos_last` runs from there).
    live_started: Instant,
    settings: &'a [PendingSetting],
    traced: &'a crate::tracing::Pending,
    end: &'a ChunkEnd,
}

/// The chunk's bytes and the id base for a chunk appended after it.
pub fn build_chunk(
    jni: *mut JNIEnv,
    session: &Session,
    gen: &Generation,
    settings: &[PendingSetting],
    traced: &crate::tracing::Pending,
    end: &ChunkEnd,
) -> (crate::jfr::ChunkBytes, u32) {
    // Charged here unless a nested scope (pools, method resolution) claims it.
    let _mem = crate::footprint::scope(crate::footprint::Category::JfrBuffers);
    // Live objects: the tracker's entries and the stacks they keep, which outlive the
    // generation's trace table (keys above every table id).
    let live_started = Instant::now();
    let live = match allocation_memory(&session.args) {
        Some(m) if m.liveness => crate::alloc::live::snapshot(jni),
        _ => Snapshot::default(),
    };
    let inputs = Inputs {
        session,
        gen,
        live,
        live_started,
        settings,
        traced,
        end,
    };
    let namer = DumpNamer::new(jni, session.args.remotesym);
    write_chunk(jni, inputs, namer)
}

/// The `memory=` options when they sample allocations or track live objects.
fn allocation_memory(args: &crate::args::Args) -> Option<&crate::args::Memory> {
    args.memory.as_ref().filter(|m| m.allocations || m.liveness)
}

/// [`build_chunk`] with the frames named by `namer` (none: no stack traces are written).
/// `jni` may be null (then no thread gets its Java name and the used heap reads 0).
fn write_chunk<N: FrameNamer>(
    jni: *mut JNIEnv,
    inputs: Inputs,
    namer: Option<N>,
) -> (crate::jfr::ChunkBytes, u32) {
    let (session, gen, live) = (inputs.session, inputs.gen, inputs.live);
    let (end_ticks, end_nanos) = (inputs.end.ticks, inputs.end.nanos);
    let args = &session.args;
    let start_ticks = session.chunk_start_ticks;
    let mut chunk = ChunkBuilder::new(
        ChunkStart {
            start_nanos: session.chunk_start_nanos,
            start_ticks,
            ticks_per_second: TICKS_PER_SECOND,
        },
        &args.attributes,
    )
    .with_id_base(inputs.end.id_base);
    let me = crate::sample::context::gettid() as i64;
    settings::write_settings(&mut chunk, session, start_ticks, me);
    host::write_system_info(&mut chunk, args, start_ticks);
    for w in &session.warnings {
        chunk.log(start_ticks, LOG_WARN, w);
    }

    let memory = allocation_memory(args);
    // Pools first: naming the frames tells which samples could not be walked or named.
    // A live object's trace counts as sampled when the object was allocated.
    let mut scan = SampleScan::of(gen);
    for o in &live.objects {
        scan.sampled_at(LIVE_TRACE_BASE + u64::from(o.trace), o.ticks);
    }
    let first_sampled = std::mem::take(&mut scan.first_sampled);
    // A trace no sample refers to (its sample was dropped): the earliest time there is.
    let since = |id: u64| first_sampled.get(&id).copied().unwrap_or(i64::MIN);
    let traces: Vec<Trace> = gen
        .traces
        .iter()
        .map(|t| Trace {
            id: u64::from(t.id),
            frames: t.frames,
            truncated: t.truncated,
            since: since(u64::from(t.id)),
        })
        .chain(live.traces.iter().map(|(id, frames, truncated)| {
            let id = LIVE_TRACE_BASE + u64::from(*id);
            Trace {
                id,
                frames: &frames[..],
                truncated: *truncated,
                since: since(id),
            }
        }))
        .collect();
    let unnamed = match namer {
        Some(namer) => write_traces(&mut chunk, namer, &traces),
        None => WordSet::default(),
    };
    drop(traces);
    let mut events = Events::new(
        &chunk,
        me,
        args.attributes.len(),
        &unnamed,
        args.jdk_samples,
    );
    drop(unnamed);
    chunk.reserve_events(scan.samples as usize * SAMPLE_EVENT_BYTES);
    for s in gen.samples() {
        events.sample(&mut chunk, s);
    }
    // The wall-clock sampler's epochs since the previous chunk.
    for e in crate::engine::wall::take_epochs() {
        chunk.wall_clock_epoch(&e);
    }
    // One HeapLiveObject per live tracked object, with its allocation-time stack and context.
    for o in &live.objects {
        events.live_object(&mut chunk, o);
    }
    if memory.is_some_and(|m| m.heap_usage) {
        // Used heap now (Runtime total - free): the heap the live objects are part of.
        let total = crate::alloc::runtime_long(jni, "totalMemory").unwrap_or(0);
        let free = crate::alloc::runtime_long(jni, "freeMemory").unwrap_or(0);
        chunk.heap_usage(end_ticks, (total - free).max(0), false);
    }
    if memory.is_some_and(|m| m.liveness) {
        counters::Counter::LiveHeapWrittenLast.set(live.objects.len() as i64);
        counters::Counter::LiveHeapFlushNanosLast
            .set(inputs.live_started.elapsed().as_nanos() as i64);
    }
    drop(live);
    let Events {
        mut tids,
        mut attr_keys,
        links,
        unnamed_samples,
        ..
    } = events;
    links.write(&mut chunk);
    // Endpoints and queue times recorded through the API since the previous chunk.
    tids.extend(crate::tracing::write_events(
        &mut chunk,
        inputs.traced,
        |chunk, id| attr_key(chunk, &mut attr_keys, id),
    ));
    for s in inputs.settings {
        chunk.profiler_setting(s.ticks, s.tid, &s.name, &s.value, &s.unit);
    }

    let samples = scan.samples;
    counters::Counter::ChunkSamples.set(samples);
    counters::Counter::ChunkSamplesUnnamed.set(unnamed_samples);
    scan.write_rate_counters(end_nanos - session.chunk_start_nanos);
    counters::Counter::UnwindingNanosAvg
        .set(counters::Counter::UnwindingNanos.get() / samples.max(1));
    counters::Counter::UnwindingNanosP50.set(crate::sample::handler_time::quantile(0.5) as i64);
    counters::Counter::UnwindingNanosP99.set(crate::sample::handler_time::quantile(0.99) as i64);
    tids.sort_unstable();
    tids.dedup();
    threads::refresh_java_threads(jni, &tids);
    let thread_names = threads::Namer::new();
    for tid in tids {
        let t = thread_names.name_of(tid as i32);
        chunk.add_thread(
            tid,
            &t.name,
            t.java_id.map(|_| t.name.as_str()),
            t.java_id.unwrap_or(0),
        );
    }

    // jdk.CPULoad is declared in every chunk, so every chunk has one (JDK tools such as JMC's
    // "High JVM CPU" rule expect a declared type to have events).
    if args.jfr_mask & NO_CPU_LOAD == 0 {
        if let Some((user, system, machine)) = super::cpu_load::sample() {
            chunk.cpu_load(end_ticks, user, system, machine);
        }
    }
    settings::write_memory_settings(&mut chunk, memory, end_ticks, me);
    let liveness = memory.filter(|m| m.liveness);
    chunk.profiler_config(&ProfilerConfig {
        ticks: end_ticks,
        tid: me,
        cpu_interval_ms: args.cpu_interval_ms(),
        wall_interval_ms: args.wall_interval_ms(),
        alloc_interval: memory.map_or(0, |m| crate::alloc::effective_interval(m.interval) as i64),
        memleak_interval: liveness
            .map_or(0, |m| crate::alloc::effective_interval(m.interval) as i64),
        memleak_capacity: liveness.map_or(0, |_| crate::alloc::live::sizes().2 as i64),
        memleak_track_percent: liveness.map_or(0, |m| (m.ratio * 100.0).round() as i64),
        gc_generations: args.generations,
        mode_mask: settings::sampled_mode_mask(args, memory.is_some()),
        version: VERSION,
        cpu_engine: session.engine.name(),
    });
    chunk.active_recording(&ActiveRecording {
        ticks: end_ticks,
        duration_ticks: end_ticks - start_ticks,
        tid: me,
        id: 1,
        name: &format!("java-profiler {VERSION}"),
        destination: &session.file.to_string_lossy(),
        max_age_ms: 0,
        flush_interval_ms: (jvm::java_feature_version() >= 14).then_some(0),
        max_size: 0,
        recording_start_ms: session.started_epoch_ms,
        recording_duration_ms: end_nanos / 1_000_000 - session.started_epoch_ms,
    });
    crate::footprint::refresh(true);
    for (name, value) in counters::snapshot() {
        chunk.profiler_counter(end_ticks, name, value);
    }
    // Per-dump counters start again with the next chunk.
    counters::Counter::UnwindingNanos.set(0);
    counters::Counter::UnwindingNanosMax.set(0);
    crate::sample::handler_time::reset();
    let next_id_base = chunk.next_id_base();
    (
        chunk.finish_parts(end_ticks, end_nanos - session.chunk_start_nanos),
        next_id_base,
    )
}

/// About the bytes of one sample event without attributes (size, type, ticks, tid, trace,
/// state, mode, weight and ids as varints), to size the event buffer once.
const SAMPLE_EVENT_BYTES: usize = 32;

/// Trace keys of the live-heap tracker's stacks: above every trace-table id (u32).
const LIVE_TRACE_BASE: u64 = 1 << 32;

/// One stack trace of the chunk: its key, frames, whether the walk stopped short, and when
/// it was first sampled.
struct Trace<'a> {
    id: u64,
    frames: &'a [Frame],
    truncated: bool,
    since: i64,
}

/// Names every distinct frame once (through `namer`) and writes the StackTrace pool. Returns
/// the ids of traces with a frame that could not be walked or named.
fn write_traces<N: FrameNamer>(
    chunk: &mut ChunkBuilder,
    mut namer: N,
    traces: &[Trace],
) -> WordSet<u64> {
    let mut unnamed = WordSet::default();
    namer.prepare(chunk, traces.iter().flat_map(|t| t.frames.iter()));
    chunk.reserve_traces(traces.len(), traces.iter().map(|t| t.frames.len()).sum());
    let mut refs: Vec<FrameRef> = Vec::new();
    for t in traces {
        refs.clear();
        let mut root_is_entry = false;
        for f in t.frames {
            let named = namer.name(chunk, f, t.since);
            root_is_entry = named.entry_point;
            if !named.named {
                unnamed.insert(t.id);
            }
            refs.push(named.frame);
        }
        // A Java-rooted trace is whole when it ends in a thread's entry point, whatever the walk said.
        let root_is_java = t
            .frames
            .last()
            .is_some_and(|f| f.kind != kind::ERROR && f.frame_type != frame_type::NATIVE);
        let truncated = if root_is_java {
            !root_is_entry
        } else {
            t.truncated
        };
        chunk.add_stack_trace(t.id, truncated, &refs);
    }
    namer.finish();
    unnamed
}

/// The fields every sample event starts with, read once from its record.
struct Common {
    ticks: i64,
    tid: i64,
    trace_key: u64,
    span_id: i64,
    local_root_span_id: i64,
}

/// Writes the chunk's samples and live objects, and keeps what the chunk's end needs of
/// them: the threads they name, the traces their contexts link, how many were unnamed.
struct Events {
    /// Threads the chunk's events name (the dumping thread first).
    tids: Vec<i64>,
    recent_tids: RecentTids,
    /// Class pool key by allocation class-name id.
    classes: WordMap<u32, u32>,
    /// AttributeValue pool key by context attribute id.
    attr_keys: WordMap<u32, u32>,
    /// The current event's attribute keys, one per configured attribute.
    attrs: Vec<u32>,
    links: TraceLinks,
    /// The traces whose samples are not plain (key of their own, named): their StackTrace
    /// key, and whether a frame could not be walked or named ([`write_traces`]). A few, in
    /// a small map: one lookup per sample where a lookup of the aliases and one of the
    /// unnamed traces were each a visible part of a dump at `cpu=1ms`.
    special: WordMap<u64, (u64, bool)>,
    /// Samples with such a trace or none (`chunk_samples_unwalked_or_unnamed`).
    unnamed_samples: i64,
    /// `jdksamples`: each CPU sample also as a `jdk.ExecutionSample`.
    jdk_samples: bool,
}

impl Events {
    fn new(
        chunk: &ChunkBuilder,
        me: i64,
        attributes: usize,
        unnamed: &WordSet<u64>,
        jdk_samples: bool,
    ) -> Events {
        let mut special: WordMap<u64, (u64, bool)> = chunk
            .trace_aliases()
            .map(|(id, key)| (id, (key, false)))
            .collect();
        for &id in unnamed {
            special.entry(id).or_insert((chunk.trace_ref(id), false)).1 = true;
        }
        Events {
            jdk_samples,
            tids: vec![me],
            recent_tids: RecentTids::default(),
            classes: WordMap::default(),
            attr_keys: WordMap::default(),
            attrs: vec![0; attributes],
            links: TraceLinks::default(),
            special,
            unnamed_samples: 0,
        }
    }

    /// One record of the generation: its kind picks the event type
    /// (`sample::record::EventKind`; a byte no kind has is written as a CPU sample).
    fn sample(&mut self, chunk: &mut ChunkBuilder, s: &SampleRecord) {
        let kind = EventKind::from_raw(s.event);
        let tid = i64::from(s.tid);
        // Sorted and deduplicated at the end; a chunk's samples come from a few threads.
        if !self.recent_tids.seen(tid) {
            self.tids.push(tid);
        }
        // A free carries no stack or context: only its address.
        if kind == Some(EventKind::NativeFree) {
            chunk.native_memory_free(s.ticks, tid, s.address);
            return;
        }
        self.links
            .note(s.ticks, s.root_span_id, (s.trace_high, s.trace_low));
        self.intern_attrs(chunk, &s.attrs);
        let id = u64::from(s.trace_id);
        let (trace_key, unnamed) = match self.special.get(&id) {
            Some(&special) => special,
            None if id == 0 => (0, true),
            None => (chunk.own_trace_ref(id), false),
        };
        if unnamed {
            self.unnamed_samples += 1;
        }
        let c = Common {
            ticks: s.ticks,
            tid,
            trace_key,
            span_id: s.span_id as i64,
            local_root_span_id: s.root_span_id as i64,
        };
        let attrs = &self.attrs[..];
        match kind {
            Some(EventKind::Alloc) => {
                let object_class = class_key(chunk, &mut self.classes, s.class_id);
                chunk.object_sample(&ObjectSample {
                    ticks: c.ticks,
                    tid: c.tid,
                    trace_key: c.trace_key,
                    object_class,
                    size: s.size as i64,
                    weight: f32::from_bits(s.alloc_weight),
                    span_id: c.span_id,
                    local_root_span_id: c.local_root_span_id,
                    attrs,
                });
            }
            Some(EventKind::NativeAlloc) => chunk.native_memory_allocation(&NativeAllocation {
                ticks: c.ticks,
                tid: c.tid,
                trace_key: c.trace_key,
                address: s.address,
                size: s.size as i64,
                weight: f32::from_bits(s.alloc_weight),
                span_id: c.span_id,
                local_root_span_id: c.local_root_span_id,
                attrs,
            }),
            Some(EventKind::NativeSocket) => {
                let socket = Socket::of_record(s);
                chunk.native_socket_event(&NativeSocketSample {
                    ticks: c.ticks,
                    tid: c.tid,
                    trace_key: c.trace_key,
                    duration_ticks: s.weight as i64,
                    operation: crate::natsock::operation(&socket),
                    remote_address: &crate::natsock::remote_address(&socket),
                    bytes_transferred: socket.bytes as i64,
                    weight: socket.weight,
                    span_id: c.span_id,
                    local_root_span_id: c.local_root_span_id,
                    attrs,
                });
            }
            Some(EventKind::Wall) => chunk.method_sample(&c.sample(s, attrs)),
            Some(EventKind::Cpu | EventKind::NativeFree) | None => {
                let sample = c.sample(s, attrs);
                chunk.execution_sample(&sample);
                if self.jdk_samples && kind == Some(EventKind::Cpu) {
                    chunk.jdk_execution_sample(&sample);
                }
            }
        }
    }

    /// One live tracked object (`datadog.HeapLiveObject`), with its allocation-time stack
    /// (0: none) and context.
    fn live_object(&mut self, chunk: &mut ChunkBuilder, o: &LiveObject) {
        self.links
            .note(o.ticks, o.context.root_span_id, o.context.trace);
        self.intern_attrs(chunk, &o.context.attrs);
        self.tids.push(i64::from(o.tid));
        let object_class = class_key(chunk, &mut self.classes, o.class_id);
        let trace_key = match o.trace {
            0 => 0,
            t => chunk.trace_ref(LIVE_TRACE_BASE + u64::from(t)),
        };
        chunk.heap_live_object(&HeapLiveObject {
            ticks: o.ticks,
            tid: i64::from(o.tid),
            trace_key,
            object_class,
            age: o.age as i64,
            size: o.size as i64,
            weight: o.weight,
            span_id: o.context.span_id as i64,
            local_root_span_id: o.context.root_span_id as i64,
            attrs: &self.attrs,
        });
    }

    /// Sets [`Self::attrs`] to the pool keys of a context's attribute ids.
    fn intern_attrs(&mut self, chunk: &mut ChunkBuilder, ids: &[u32]) {
        for (slot, &id) in self.attrs.iter_mut().zip(ids) {
            *slot = attr_key(chunk, &mut self.attr_keys, id);
        }
    }
}

impl Common {
    /// A CPU or wall sample.
    fn sample<'a>(&self, s: &SampleRecord, attrs: &'a [u32]) -> Sample<'a> {
        Sample {
            ticks: self.ticks,
            tid: self.tid,
            trace_key: self.trace_key,
            state: s.state,
            mode: s.mode,
            weight: s.weight as i64,
            correlation_id: 0,
            span_id: self.span_id,
            local_root_span_id: self.local_root_span_id,
            attrs,
        }
    }
}

/// AttributeValue pool key of a context attribute id (0: unset), once per chunk.
fn attr_key(chunk: &mut ChunkBuilder, keys: &mut WordMap<u32, u32>, id: u32) -> u32 {
    match id {
        0 => 0,
        id => *keys.entry(id).or_insert_with(|| {
            crate::context::dictionary::lookup(id).map_or(0, |v| chunk.intern_attribute_value(&v))
        }),
    }
}

/// Class pool key of an allocation class-name id (`crate::alloc::classes`), once per chunk.
fn class_key(chunk: &mut ChunkBuilder, keys: &mut WordMap<u32, u32>, id: u32) -> u32 {
    *keys.entry(id).or_insert_with(|| {
        let name = crate::alloc::classes::name(id);
        chunk.intern_class(name.as_deref().unwrap_or("unknown"))
    })
}

/// The trace of each local root span met in a chunk's events, first sighting first: one
/// `datadog.TraceLink` per root, so that readers can link samples (which carry only span ids,
/// as upstream's schema has it) to their 128-bit trace id.
#[derive(Default)]
struct TraceLinks {
    seen: WordSet<u64>,
    order: Vec<(i64, u64, (u64, u64))>,
}

impl TraceLinks {
    fn note(&mut self, ticks: i64, root: u64, trace: (u64, u64)) {
        if root != 0 && trace != (0, 0) && self.seen.insert(root) {
            self.order.push((ticks, root, trace));
        }
    }

    fn write(self, chunk: &mut ChunkBuilder) {
        for (ticks, root, (high, low)) in self.order {
            chunk.trace_link(ticks, root as i64, high as i64, low as i64);
        }
    }
}
