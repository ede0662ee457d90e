//! Turning one retired generation into one JFR chunk: settings and system information
//! first, then the samples, then the end-of-chunk events and the constant pools.
//! Runs on a JVM thread (JNI/JVMTI available), under the profiler lock.

use std::collections::{HashMap, HashSet};

use jni::sys::JNIEnv;

use super::session::{PendingSetting, Session};
use super::VERSION;
use crate::args::Args;
use crate::counters;
use crate::jfr::{
    self, ActiveRecording, ChunkBuilder, ChunkStart, FrameRef, HeapLiveObject, NativeAllocation,
    NativeSocketSample, ObjectSample, ProfilerConfig, Sample,
};
use crate::methods::info::MethodInfo;
use crate::methods::receivers;
use crate::methods::resolve::Resolver;
use crate::sample::frame::{frame_type, kind, Frame};
use crate::sample::handler::TICKS_PER_SECOND;
use crate::sample::record::{EventKind, Socket};
use crate::sample::tags;
use crate::sample::traces::Generation;
use crate::word_map::WordMap;
use crate::{threads, vm};

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

/// What the chunk's samples stand for: the sampling intervals they weigh
/// (`chunk_sample_weight`: more than the samples when CPU timers overran), and the samples
/// per second each sampled thread got (`chunk_samples_per_thread_second`), so a recording
/// shows when the timer could not keep the asked rate.
fn write_rate_counters(gen: &Generation, chunk_nanos: i64) {
    let (mut count, mut weight) = (0i128, 0u64);
    let mut threads: HashSet<i32> = HashSet::new();
    for s in gen.samples().filter(|s| s.event == EventKind::Cpu as u8) {
        count += 1;
        weight += s.weight;
        threads.insert(s.tid);
    }
    let per_thread_second = if threads.is_empty() || chunk_nanos <= 0 {
        0
    } else {
        (count * 1_000_000_000 / (i128::from(chunk_nanos) * threads.len() as i128)) as i64
    };
    counters::Counter::ChunkSampleWeight.set(weight as i64);
    counters::Counter::ChunkSamplesPerThreadSecond.set(per_thread_second);
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
    let _mem = crate::memory::scope(crate::memory::Category::JfrBuffers);
    let (end_ticks, end_nanos) = (end.ticks, end.nanos);
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
    .with_id_base(end.id_base);
    let me = crate::sample::context::gettid() as i64;
    write_settings(&mut chunk, session, start_ticks, me);
    write_system_info(&mut chunk, args, start_ticks);
    for w in &session.warnings {
        chunk.log(start_ticks, LOG_WARN, w);
    }

    // Live objects (`memory=..:l|L`): the tracker's entries and the stacks they keep, which
    // outlive the generation's trace table (keys above every table id).
    let memory = args.memory.as_ref().filter(|m| m.allocations || m.liveness);
    let live_started = std::time::Instant::now();
    let live = match memory {
        Some(m) if m.liveness => crate::alloc::live::snapshot(jni),
        _ => crate::alloc::live::Snapshot::default(),
    };
    // Pools first: naming the frames tells which samples could not be walked or named.
    // When each trace was first sampled: a lazy frame of a redefined class stands only in
    // traces sampled after its redefinition ended (`methods::lazy::resolve`). A live object's
    // trace: when the object was allocated.
    let mut first_sampled: WordMap<u64, i64> = WordMap::default();
    let mut sampled_at = |id: u64, ticks: i64| {
        let t = first_sampled.entry(id).or_insert(ticks);
        *t = (*t).min(ticks);
    };
    for smp in gen.samples() {
        sampled_at(u64::from(smp.trace_id), smp.ticks);
    }
    for o in &live.objects {
        sampled_at(LIVE_TRACE_BASE + u64::from(o.trace), o.ticks);
    }
    // A trace no sample refers to (its sample was dropped): the earliest time there is.
    let since = |id: u64| first_sampled.get(&id).copied().unwrap_or(i64::MIN);
    let traces: Vec<(u64, &[Frame], bool, i64)> = gen
        .traces
        .iter()
        .map(|t| {
            (
                u64::from(t.id),
                t.frames,
                t.truncated,
                since(u64::from(t.id)),
            )
        })
        .chain(live.traces.iter().map(|(id, frames, truncated)| {
            let id = LIVE_TRACE_BASE + u64::from(*id);
            (id, &frames[..], *truncated, since(id))
        }))
        .collect();
    let unnamed = write_traces(&mut chunk, jni, &traces, args.remotesym);
    drop(traces);
    let mut classes: WordMap<u32, u32> = WordMap::default();
    let mut unnamed_samples = 0i64;
    let mut tids: Vec<i64> = vec![me];
    let mut attr_keys: WordMap<u32, u32> = WordMap::default();
    let mut attrs = vec![0u32; args.attributes.len()];
    let mut links = TraceLinks::default();
    for s in gen.samples() {
        // A free carries no stack or context: only its address.
        if EventKind::from_raw(s.event) == Some(EventKind::NativeFree) {
            tids.push(s.tid as i64);
            chunk.native_memory_free(s.ticks, s.tid as i64, s.address);
            continue;
        }
        links.note(s.ticks, s.root_span_id, (s.trace_high, s.trace_low));
        for (slot, id) in attrs.iter_mut().zip(s.attrs.iter()) {
            *slot = match *id {
                0 => 0,
                id => *attr_keys.entry(id).or_insert_with(|| {
                    crate::context::lookup(id).map_or(0, |v| chunk.intern_attribute_value(&v))
                }),
            };
        }
        tids.push(s.tid as i64);
        if s.trace_id == 0 || unnamed.contains(&u64::from(s.trace_id)) {
            unnamed_samples += 1;
        }
        // The record's kind picks its event type (`sample::record::EventKind`).
        if EventKind::from_raw(s.event) == Some(EventKind::Alloc) {
            let object_class = class_key(&mut chunk, &mut classes, s.class_id);
            chunk.object_sample(&ObjectSample {
                ticks: s.ticks,
                tid: s.tid as i64,
                trace_key: chunk.trace_ref(u64::from(s.trace_id)),
                object_class,
                size: s.size as i64,
                weight: f32::from_bits(s.alloc_weight),
                span_id: s.span_id as i64,
                local_root_span_id: s.root_span_id as i64,
                attrs: &attrs,
            });
            continue;
        }
        if EventKind::from_raw(s.event) == Some(EventKind::NativeAlloc) {
            chunk.native_memory_allocation(&NativeAllocation {
                ticks: s.ticks,
                tid: s.tid as i64,
                trace_key: chunk.trace_ref(u64::from(s.trace_id)),
                address: s.address,
                size: s.size as i64,
                weight: f32::from_bits(s.alloc_weight),
                span_id: s.span_id as i64,
                local_root_span_id: s.root_span_id as i64,
                attrs: &attrs,
            });
            continue;
        }
        if EventKind::from_raw(s.event) == Some(EventKind::NativeSocket) {
            let socket = Socket::of_record(s);
            chunk.native_socket_event(&NativeSocketSample {
                ticks: s.ticks,
                tid: s.tid as i64,
                trace_key: chunk.trace_ref(u64::from(s.trace_id)),
                duration_ticks: s.weight as i64,
                operation: crate::natsock::operation(&socket),
                remote_address: &crate::natsock::remote_address(&socket),
                bytes_transferred: socket.bytes as i64,
                weight: socket.weight,
                span_id: s.span_id as i64,
                local_root_span_id: s.root_span_id as i64,
                attrs: &attrs,
            });
            continue;
        }
        let sample = Sample {
            ticks: s.ticks,
            tid: s.tid as i64,
            trace_key: chunk.trace_ref(s.trace_id as u64),
            state: s.state,
            mode: s.mode,
            weight: s.weight as i64,
            correlation_id: 0,
            span_id: s.span_id as i64,
            local_root_span_id: s.root_span_id as i64,
            attrs: &attrs,
        };
        // The record's kind picks the event type (`sample::record::EventKind`).
        match EventKind::from_raw(s.event) {
            Some(EventKind::Wall) => chunk.method_sample(&sample),
            _ => chunk.execution_sample(&sample),
        }
    }
    // The wall-clock sampler's epochs since the previous chunk.
    for e in crate::engine::wall::take_epochs() {
        chunk.wall_clock_epoch(&e);
    }
    // One HeapLiveObject per live tracked object, with its allocation-time stack and context.
    for o in &live.objects {
        links.note(o.ticks, o.context.root_span_id, o.context.trace);
        for (slot, id) in attrs.iter_mut().zip(o.context.attrs.iter()) {
            *slot = match *id {
                0 => 0,
                id => *attr_keys.entry(id).or_insert_with(|| {
                    crate::context::lookup(id).map_or(0, |v| chunk.intern_attribute_value(&v))
                }),
            };
        }
        tids.push(i64::from(o.tid));
        let object_class = class_key(&mut chunk, &mut classes, o.class_id);
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
            attrs: &attrs,
        });
    }
    if memory.is_some_and(|m| m.heap_usage) {
        // Used heap now (Runtime total - free): the heap the live objects are part of.
        let total = crate::alloc::runtime_long(jni, "totalMemory").unwrap_or(0);
        let free = crate::alloc::runtime_long(jni, "freeMemory").unwrap_or(0);
        chunk.heap_usage(end_ticks, (total - free).max(0), false);
    }
    if memory.is_some_and(|m| m.liveness) {
        counters::Counter::LiveHeapWrittenLast.set(live.objects.len() as i64);
        counters::Counter::LiveHeapFlushNanosLast.set(live_started.elapsed().as_nanos() as i64);
    }
    drop(live);
    links.write(&mut chunk);
    // Endpoints and queue times recorded through the API since the previous chunk.
    tids.extend(crate::tracing::write_events(
        &mut chunk,
        traced,
        |chunk, id| {
            *attr_keys.entry(id).or_insert_with(|| {
                crate::context::lookup(id).map_or(0, |v| chunk.intern_attribute_value(&v))
            })
        },
    ));
    for s in settings {
        chunk.profiler_setting(s.ticks, s.tid, &s.name, &s.value, &s.unit);
    }

    let samples = gen.sample_count() as i64;
    counters::Counter::ChunkSamples.set(samples);
    counters::Counter::ChunkSamplesUnnamed.set(unnamed_samples);
    write_rate_counters(gen, end_nanos - session.chunk_start_nanos);
    counters::Counter::UnwindingNanosAvg
        .set(counters::Counter::UnwindingNanos.get() / samples.max(1));
    counters::Counter::UnwindingNanosP50.set(crate::sample::handler_time::quantile(0.5) as i64);
    counters::Counter::UnwindingNanosP99.set(crate::sample::handler_time::quantile(0.99) as i64);
    tids.sort_unstable();
    tids.dedup();
    threads::refresh_java_threads(jni, &tids);
    let namer = threads::Namer::new();
    for tid in tids {
        let t = namer.name_of(tid as i32);
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
    write_memory_settings(&mut chunk, memory, end_ticks, me);
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
        mode_mask: sampled_mode_mask(args, memory.is_some()),
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
        flush_interval_ms: (vm::java_feature_version() >= 14).then_some(0),
        max_size: 0,
        recording_start_ms: session.started_epoch_ms,
        recording_duration_ms: end_nanos / 1_000_000 - session.started_epoch_ms,
    });
    crate::memory::refresh(true);
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

/// `modeMask` of what this session really samples (`crate::args::EM_*` bits).
fn sampled_mode_mask(args: &Args, allocations: bool) -> i32 {
    let mut mask = 0;
    if allocations {
        mask |= crate::args::EM_ALLOC;
    }
    if args.cpu_interval_ns.is_some() {
        mask |= crate::args::EM_CPU;
    }
    if args.wall_interval_ns.is_some() {
        mask |= crate::args::EM_WALL;
    }
    if args.nativemem.is_some() {
        mask |= crate::args::EM_NATIVEMEM;
    }
    if args.natsock_ns.is_some() && crate::natsock::started() {
        mask |= crate::args::EM_NATIVESOCKET;
    }
    mask as i32
}

fn write_settings(chunk: &mut ChunkBuilder, session: &Session, ticks: i64, tid: i64) {
    let args = &session.args;
    let rec = jfr::T_ACTIVE_RECORDING;
    let settings: [(&str, String); 11] = [
        ("asyncprofiler", "true".into()),
        ("version", VERSION.into()),
        ("tscfrequency", TICKS_PER_SECOND.to_string()),
        (
            "loglevel",
            args.loglevel
                .unwrap_or(crate::args::LogLevel::Warn)
                .name()
                .to_string(),
        ),
        ("hotspot", "true".into()),
        ("openj9", "false".into()),
        ("cpuEngine", session.engine.name().into()),
        (
            "wallEngine",
            session.wall.as_ref().map_or("None", |w| w.name()).into(),
        ),
        ("cstack", args.cstack_requested.clone()),
        ("stackwalker", session.walker.name().into()),
        ("fjmethodid", session.fjmethodid.name().to_string()),
    ];
    for (name, value) in &settings {
        chunk.active_setting(ticks, tid, rec, name, value);
    }
    if let Some(reason) = &session.cpu_engine_fallback {
        chunk.active_setting(ticks, tid, rec, "cpuEngineFallback", reason);
    }
    if session.engine.id() == crate::engine::EngineId::PerfEvents {
        let on = crate::engine::perf::kernel_frames_on();
        chunk.active_setting(
            ticks,
            tid,
            rec,
            "kernelFrames",
            if on { "true" } else { "false" },
        );
    }
    if let Some(ns) = args.cpu_interval_ns.filter(|&ns| ns > 0) {
        // Samples per CPU-second: asked for, and achieved over this chunk (what a thread
        // that ran all along got per second of its CPU time).
        let requested = 1e9 / ns as f64;
        // What decided between ctimer and perf_events for `cpu=` (README, "Status").
        let tick = crate::engine::scheduler_tick_ns().to_string();
        chunk.active_setting(ticks, tid, rec, "cpuSchedulerTick", &tick);
        chunk.active_setting(
            ticks,
            tid,
            rec,
            "cpuSamplingRateRequested",
            &format!("{requested:.1}"),
        );
        if let Some(rate) = session.cpu_rate {
            chunk.active_setting(ticks, tid, rec, "cpuSamplingRate", &format!("{rate:.1}"));
        }
    }
    for attr in &args.attributes {
        chunk.active_setting(ticks, tid, rec, "contextattribute", attr);
    }
    // Always said; the detail only when the host check failed (as upstream).
    let sanity = super::sanity::outcome();
    let failed = sanity.is_some_and(|o| o.failed);
    chunk.active_setting(ticks, tid, rec, "sanityCheckFailed", &failed.to_string());
    if let Some(o) = sanity.filter(|o| o.failed) {
        chunk.active_setting(ticks, tid, rec, "sanityCheckDetail", &o.detail);
    }
    let cpu = args.cpu_interval_ns;
    chunk.active_setting(
        ticks,
        tid,
        jfr::T_EXECUTION_SAMPLE,
        "enabled",
        &cpu.is_some().to_string(),
    );
    chunk.active_setting(
        ticks,
        tid,
        jfr::T_EXECUTION_SAMPLE,
        "interval",
        &cpu.unwrap_or(0).to_string(),
    );
    chunk.active_setting(
        ticks,
        tid,
        jfr::T_METHOD_SAMPLE,
        "enabled",
        &session.wall.is_some().to_string(),
    );
    chunk.active_setting(
        ticks,
        tid,
        jfr::T_METHOD_SAMPLE,
        "interval",
        &args.wall_interval_ns.unwrap_or(50_000_000).to_string(),
    );
    let memory = args.memory.as_ref();
    chunk.active_setting(
        ticks,
        tid,
        jfr::T_OBJECT_SAMPLE,
        "enabled",
        &memory.is_some_and(|m| m.allocations).to_string(),
    );
    chunk.active_setting(
        ticks,
        tid,
        jfr::T_HEAP_LIVE_OBJECT,
        "enabled",
        &memory.is_some_and(|m| m.liveness).to_string(),
    );
    chunk.active_setting(
        ticks,
        tid,
        jfr::T_NATIVE_MEMORY_ALLOCATION,
        "enabled",
        &args.nativemem.is_some().to_string(),
    );
    chunk.active_setting(
        ticks,
        tid,
        jfr::T_NATIVE_SOCKET_EVENT,
        "enabled",
        &(args.natsock_ns.is_some() && crate::natsock::started()).to_string(),
    );
    if let Some(n) = args.natsock_ns {
        chunk.active_setting(
            ticks,
            tid,
            jfr::T_NATIVE_SOCKET_EVENT,
            "natsock",
            &n.to_string(),
        );
    }
    if let Some(n) = args.nativemem {
        for name in ["nativemem", "samplingInterval"] {
            chunk.active_setting(
                ticks,
                tid,
                jfr::T_NATIVE_MEMORY_ALLOCATION,
                name,
                &n.to_string(),
            );
        }
    }
}

/// Chunk end, as upstream: the ObjectSample interval in force (the rate controller moves it)
/// and the HeapLiveObject interval, capacity and maximum capacity.
fn write_memory_settings(
    chunk: &mut ChunkBuilder,
    memory: Option<&crate::args::Memory>,
    ticks: i64,
    tid: i64,
) {
    let Some(m) = memory else { return };
    let interval = crate::alloc::interval().to_string();
    chunk.active_setting(ticks, tid, jfr::T_OBJECT_SAMPLE, "interval", &interval);
    if m.liveness {
        let (_, capacity, max) = crate::alloc::live::sizes();
        let live = jfr::T_HEAP_LIVE_OBJECT;
        chunk.active_setting(ticks, tid, live, "interval", &interval);
        chunk.active_setting(ticks, tid, live, "capacity", &capacity.to_string());
        chunk.active_setting(ticks, tid, live, "maximum capacity", &max.to_string());
    }
}

/// Trace keys of the live-heap tracker's stacks: above every trace-table id (u32).
const LIVE_TRACE_BASE: u64 = 1 << 32;

/// Class pool key of an allocation class-name id (`crate::alloc::classes`), once per chunk.
fn class_key(chunk: &mut ChunkBuilder, keys: &mut WordMap<u32, u32>, id: u32) -> u32 {
    *keys.entry(id).or_insert_with(|| {
        let name = crate::alloc::classes::name(id);
        chunk.intern_class(name.as_deref().unwrap_or("unknown"))
    })
}

fn write_system_info(chunk: &mut ChunkBuilder, args: &Args, ticks: i64) {
    let jvmti = vm::jvmti();
    let prop = |k: &str| jvmti.and_then(|j| j.system_property(k)).unwrap_or_default();
    if args.jfr_mask & NO_SYSTEM_INFO == 0 {
        let host = Host::get();
        chunk.os_information(ticks, &host.os_version);
        chunk.cpu_information(ticks, &host.cpu, &host.cpu, host.cores, host.cores);
        chunk.jvm_information(
            ticks,
            &prop("java.vm.name"),
            &format!("{} ({})", prop("java.vm.version"), prop("java.vm.info")),
            &host.command_line,
            "",
            &prop("sun.java.command"),
            host.start_ms,
            std::process::id() as i64,
        );
    }
    if args.jfr_mask & NO_SYSTEM_PROPS == 0 {
        if let Some(j) = jvmti {
            for key in j.system_property_names() {
                let value = j.system_property(&key).unwrap_or_default();
                chunk.initial_system_property(ticks, &key, &value);
            }
        }
    }
    if args.jfr_mask & NO_NATIVE_LIBS == 0 {
        for f in crate::mappings::current().files.iter() {
            let build_id = build_id_of(f);
            chunk.native_library(ticks, &f.path, f.start, f.end, &build_id, f.start);
        }
    }
}

/// Reads now what the first dump would otherwise read (at start, before the memory peaks start
/// again, and on the library watcher's thread after a library change): the host facts, each
/// library's build id and, where native frames are recorded, the symbol tables (and kallsyms
/// where kernel frames are).
pub fn prepare(symbols: bool, kernel_symbols: bool) {
    if kernel_symbols {
        crate::kallsyms::get();
    }
    Host::get();
    super::cpu_load::prepare();
    for f in &crate::mappings::current().files {
        build_id_of(f);
    }
    if symbols {
        crate::symbols::preload();
    }
}

/// What every chunk repeats about the machine and the process, read once: each of these is a
/// file read or a cgroup walk (`available_parallelism`), none changes while the JVM runs.
struct Host {
    os_version: String,
    cpu: String,
    cores: i32,
    command_line: String,
    start_ms: i64,
}

impl Host {
    fn get() -> &'static Host {
        static HOST: std::sync::OnceLock<Host> = std::sync::OnceLock::new();
        HOST.get_or_init(|| {
            let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
            Host {
                os_version: os_version(),
                cpu: cpu_model(),
                cores: std::thread::available_parallelism().map_or(1, |n| n.get()) as i32,
                command_line: cmdline
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
                start_ms: jvm_start_ms(),
            }
        })
    }
}

fn os_version() -> String {
    // SAFETY: uname fills a zeroed struct of NUL-terminated fields.
    let u = unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        libc::uname(&mut u);
        u
    };
    let f = |b: &[libc::c_char]| {
        // SAFETY: uname's fields are NUL-terminated within their arrays.
        unsafe { std::ffi::CStr::from_ptr(b.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    format!(
        "uname: {} {} {} {}",
        f(&u.sysname),
        f(&u.release),
        f(&u.version),
        f(&u.machine)
    )
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Process start time, from /proc/self/stat (field 22, clock ticks since boot).
fn jvm_start_ms() -> i64 {
    let ticks = super::cpu_load::start_ticks()
        .and_then(|t| i64::try_from(t).ok())
        .unwrap_or(0);
    let btime: i64 = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("btime"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0);
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    btime * 1000 + ticks * 1000 / hz
}

/// The build id of the library mapped as `f` (`""` without one), read from its file once per
/// mapping: every chunk lists every library again.
fn build_id_of(f: &crate::elf::MappedFile) -> String {
    static IDS: parking_lot::Mutex<Option<HashMap<(String, u64), String>>> =
        parking_lot::Mutex::new(None);
    let mut ids = IDS.lock();
    ids.get_or_insert_with(HashMap::new)
        .entry((f.path.clone(), f.start))
        .or_insert_with(|| f.open().and_then(|e| e.build_id()).unwrap_or_default())
        .clone()
}

/// The bytecode index upstream gives a frame left for remote symbolication.
const REMOTE_BCI: i32 = -19;

/// Names every distinct frame once and writes the StackTrace pool. Returns the ids of
/// traces with a frame that could not be walked or named.
fn write_traces(
    chunk: &mut ChunkBuilder,
    jni: *mut JNIEnv,
    traces: &[(u64, &[Frame], bool, i64)],
    remotesym: bool,
) -> HashSet<u64> {
    let mut unnamed = HashSet::new();
    let Some(jvmti) = vm::jvmti() else {
        return unnamed;
    };
    let mut resolver = Resolver::new(jvmti, jni);
    let (methods, tagged) = resolver.prepare(traces.iter().flat_map(|t| t.1.iter()));
    chunk.reserve_traces(traces.len(), traces.iter().map(|t| t.1.len()).sum());
    chunk.reserve_methods(methods);
    let mut method_keys: WordMap<(u8, u64), u32> =
        WordMap::with_capacity_and_hasher(methods, Default::default());
    let mut java_frames = JavaFrames::default();
    // Sized for the usual distinct frames per method (the Kotlin compiler's first dump: 1.3)
    // instead of doubling from empty (each doubling fresh pages).
    java_frames.by_words.reserve(tagged + tagged / 2);
    let mut unknown: Option<u32> = None;
    let mut natives = NativeNames::new(remotesym);
    let mut receivers = receivers::ReceiverNames::default();
    let mut stubs = crate::methods::stub_names::StubNames::default();
    let mut refs: Vec<FrameRef> = Vec::new();
    for &(id, frames, walk_truncated, since) in traces {
        refs.clear();
        let mut root_is_entry = false;
        for f in frames {
            let mut frame_type = f.frame_type;
            let (key, line, info_entry, named) =
                if f.kind == kind::NATIVE_PC && f.frame_type == frame_type::KERNEL {
                    (natives.kernel_key(chunk, f.method), 0, false, true)
                } else if f.kind == kind::NATIVE_PC {
                    let (key, t) = natives.frame(chunk, f.method);
                    frame_type = t;
                    (key, 0, false, true)
                } else if f.kind == kind::VTABLE_RECEIVER {
                    (receivers.receiver(chunk, f.method, f.bci), 0, false, true)
                } else if f.kind == kind::STUB {
                    (stubs.key(chunk, f.method), 0, false, true)
                } else {
                    frame_ref(
                        chunk,
                        &mut resolver,
                        &mut method_keys,
                        &mut java_frames,
                        &mut unknown,
                        f,
                        since,
                    )
                };
            root_is_entry = info_entry;
            if !named {
                unnamed.insert(id);
            }
            // Non-Java frames of upstream's that carry a bci of their own keep it raw.
            let bci = match f.kind {
                kind::VTABLE_RECEIVER => receivers::RECEIVER_BCI,
                kind::STUB => 0,
                _ if frame_type == frame_type::NATIVE_REMOTE => REMOTE_BCI,
                _ => tags::bci(f).max(0),
            };
            refs.push(FrameRef {
                method: key,
                line,
                bci,
                frame_type,
            });
        }
        let root_is_java = frames
            .last()
            .is_some_and(|f| f.kind != kind::ERROR && f.frame_type != frame_type::NATIVE);
        let truncated = if root_is_java {
            !root_is_entry
        } else {
            walk_truncated
        };
        chunk.add_stack_trace(id, truncated, &refs);
    }
    counters::Counter::RawFrameResolveCacheHits.add(java_frames.hits);
    // Receivers of classes gone by now were all named above (or in an earlier dump).
    receivers::forget_unloaded();
    unnamed
}

/// Method-pool keys of native frames (`cstack=vmx`): one entry per function name, so that
/// every pc of a function shares it. The symbolizer (reading `/proc/self/maps`) is made
/// on the first native frame of the dump.
struct NativeNames {
    symbols: Option<crate::symbols::Symbolizer>,
    by_pc: WordMap<u64, u32>,
    by_name: WordMap<String, u32>,
    /// `remotesym`: frames in a library with a build id are left to the backend.
    remote: bool,
    /// pc -> method key of frames written for remote symbolication.
    remote_by_pc: WordMap<u64, u32>,
    /// Build ids by library path (and inode, deleted: `Mapping::deleted`), for this dump ("" without one).
    build_ids: HashMap<(String, Option<u64>), String>,
    /// pc -> method key of kernel frames.
    kernel_by_pc: WordMap<u64, u32>,
}

impl NativeNames {
    fn new(remote: bool) -> NativeNames {
        NativeNames {
            symbols: None,
            by_pc: WordMap::default(),
            by_name: WordMap::default(),
            remote,
            remote_by_pc: WordMap::default(),
            build_ids: HashMap::new(),
            kernel_by_pc: WordMap::default(),
        }
    }

    /// The method key and frame type of the native frame at `pc`: named by its symbol, or with
    /// `remotesym` and a library with a build id, upstream's remote frame (class = build id,
    /// name `<remote>`, descriptor = the pc's ELF address in hex, type 7).
    fn frame(&mut self, chunk: &mut ChunkBuilder, pc: u64) -> (u32, u8) {
        if self.remote {
            if let Some(k) = self.remote_key(chunk, pc) {
                return (k, frame_type::NATIVE_REMOTE);
            }
        }
        (self.key(chunk, pc), frame_type::NATIVE)
    }

    /// The method key of the kernel frame at `pc`: the `/proc/kallsyms` function holding it
    /// (`[kernel] 0x<pc>` when there is none), with the contract's kernel descriptor.
    fn kernel_key(&mut self, chunk: &mut ChunkBuilder, pc: u64) -> u32 {
        if let Some(k) = self.kernel_by_pc.get(&pc) {
            return *k;
        }
        let unnamed;
        let name = match crate::kallsyms::get().and_then(|t| t.name(pc)) {
            Some(n) => n,
            None => {
                unnamed = format!("[kernel] 0x{pc:x}");
                unnamed.as_str()
            }
        };
        let k = chunk.intern_method("", name, "(Lk;)L;", 0x100, false);
        self.kernel_by_pc.insert(pc, k);
        k
    }

    fn remote_key(&mut self, chunk: &mut ChunkBuilder, pc: u64) -> Option<u32> {
        if let Some(k) = self.remote_by_pc.get(&pc) {
            return Some(*k);
        }
        if crate::hotspot::stubs::name_of(pc as usize).is_some() {
            return None; // VM code: no file to symbolize it from
        }
        let symbols = self
            .symbols
            .get_or_insert_with(crate::symbols::Symbolizer::new);
        let (mapping, vaddr) = symbols.locate(pc)?;
        let id = self
            .build_ids
            .entry((mapping.path.clone(), mapping.deleted))
            .or_insert_with(|| {
                let id = mapping
                    .open()
                    .and_then(|e| e.build_id())
                    .unwrap_or_default();
                if !id.is_empty() {
                    counters::Counter::RemoteSymbolicationLibs.inc();
                }
                id
            });
        if id.is_empty() {
            return None;
        }
        let k = chunk.intern_method(id, "<remote>", &format!("0x{vaddr:x}"), 0x100, false);
        counters::Counter::RemoteSymbolicationFrames.inc();
        self.remote_by_pc.insert(pc, k);
        Some(k)
    }

    fn key(&mut self, chunk: &mut ChunkBuilder, pc: u64) -> u32 {
        if let Some(k) = self.by_pc.get(&pc) {
            return *k;
        }
        // A native unwind can end in code the VM generated (a stub is not in any file's
        // symbols): the stub's name, as a stub frame would get.
        let name = crate::hotspot::stubs::name_of(pc as usize).unwrap_or_else(|| {
            self.symbols
                .get_or_insert_with(crate::symbols::Symbolizer::new)
                .name(pc)
        });
        let k = match self.by_name.get(&name) {
            Some(k) => *k,
            None => {
                // The contract's native frame: class "", the symbol, `()L;`, ACC_NATIVE.
                let k = chunk.intern_method("", &name, "()L;", 0x100, false);
                self.by_name.insert(name, k);
                k
            }
        };
        self.by_pc.insert(pc, k);
        k
    }
}

/// What [`frame_ref`] made of each lazily tagged Java frame of a dump whose answer holds in
/// every trace (`Resolver::key_of`'s last field), by the frame's own words (method word, bci
/// word with its tag bits, idnum, frame type: [`java_frame_key`]): a frame repeats in many
/// traces (the Kotlin compiler's first dump: 180,000 Java frames of 6,000 methods at 8,000
/// distinct frames), and one lookup here replaces the lazy checks' cache, the method cache, the
/// method pool key's and the line table's searches. jmethodID frames go without it: in the
/// default mode the map's own fresh pages cost what it saved (docs/benchmarks.md).
#[derive(Default)]
struct JavaFrames {
    by_words: WordMap<(u64, u64), (u32, i32, bool, bool)>,
    hits: i64,
}

/// [`JavaFrames`]' key of a tagged frame.
fn java_frame_key(f: &Frame) -> (u64, u64) {
    let rest = u64::from(f.bci as u32) | u64::from(f.idnum) << 32 | u64::from(f.frame_type) << 48;
    (f.method, rest)
}

/// (method pool key, line, whether the method is a thread entry point, whether the frame
/// is named) of one frame.
fn frame_ref(
    chunk: &mut ChunkBuilder,
    resolver: &mut Resolver,
    keys: &mut WordMap<(u8, u64), u32>,
    java_frames: &mut JavaFrames,
    unknown: &mut Option<u32>,
    f: &Frame,
    since: i64,
) -> (u32, i32, bool, bool) {
    let at = tags::is_tagged(f).then(|| java_frame_key(f));
    if let Some(r) = at.and_then(|a| java_frames.by_words.get(&a)) {
        java_frames.hits += 1;
        return *r;
    }
    let (key_kind, key_value, lines, any_since) = resolver.key_of(f, since);
    let r = name_frame(
        chunk,
        resolver,
        keys,
        unknown,
        f,
        since,
        (key_kind, key_value, lines),
    );
    if let Some(a) = at.filter(|_| any_since) {
        java_frames.by_words.insert(a, r);
    }
    r
}

/// [`frame_ref`] for a frame not seen before in this dump, with its `key_of`.
fn name_frame(
    chunk: &mut ChunkBuilder,
    resolver: &mut Resolver,
    keys: &mut WordMap<(u8, u64), u32>,
    unknown: &mut Option<u32>,
    f: &Frame,
    since: i64,
    (key_kind, key_value, lines): (u8, u64, bool),
) -> (u32, i32, bool, bool) {
    let mut pool_key = (key_kind, key_value);
    let info: &MethodInfo = match pool_key.0 {
        kind::JAVA_METHOD_ID => resolver.resolve(pool_key.1),
        kind::RAW_METHOD => {
            // A tagged frame that is still raw was refused by the lazy checks: it is named
            // `<unloaded>` or `unknown`, one pool entry per name, not one per `Method*`.
            if tags::is_tagged(f) {
                pool_key = (kind::ERROR, 0);
            }
            let info = resolver.resolve_raw(f, since);
            if tags::is_tagged(f) && info.name != "unknown" {
                pool_key = (kind::ERROR, 1);
            }
            info
        }
        _ => {
            let key = *unknown
                .get_or_insert_with(|| chunk.intern_method("", "unknown", "()L;", 0x100, false));
            return (key, 0, false, false);
        }
    };
    let named = !info.class_name.is_empty();
    let line = if f.frame_type == frame_type::NATIVE || !lines {
        0
    } else {
        info.line_of(tags::bci(f).max(0)) // AGCT reports bci -1 at method entry: use bci 0
    };
    let entry = info.is_entry_point;
    let key = match keys.get(&pool_key) {
        Some(k) => *k,
        None => {
            let (class, name, desc) =
                jfr::names::normalize(&info.class_name, &info.name, &info.descriptor);
            let hidden = class.contains("/0x") || class.contains("LambdaForm$");
            let k = chunk.intern_method(&class, &name, &desc, info.modifiers, hidden);
            keys.insert(pool_key, k);
            k
        }
    };
    (key, line, entry, named)
}

/// The trace of each local root span met in a chunk's events, first sighting first: one
/// `datadog.TraceLink` per root, so that readers can link samples (which carry only span ids,
/// as upstream's schema has it) to their 128-bit trace id.
#[derive(Default)]
struct TraceLinks {
    seen: HashSet<u64>,
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
