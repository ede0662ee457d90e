//! The settings a chunk records: `jdk.ActiveSetting` events at its start (what the session
//! runs with) and end (what the allocation rate controller left in force), and the
//! `modeMask` of `datadog.ProfilerConfig`.

use crate::args::Args;
use crate::jfr::{self, ChunkBuilder};
use crate::profiler::session::Session;
use crate::profiler::VERSION;
use crate::sample::handler::TICKS_PER_SECOND;

/// `modeMask` of what this session really samples (`crate::args::EM_*` bits).
pub(super) fn sampled_mode_mask(args: &Args, allocations: bool) -> i32 {
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

pub(super) fn write_settings(chunk: &mut ChunkBuilder, session: &Session, ticks: i64, tid: i64) {
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
        // What decided between ctimer and perf_events for `cpu=` (docs/features.md, "CPU sampling").
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
    let sanity = crate::profiler::sanity::outcome();
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
    if let Some(ns) = cpu.filter(|_| args.jdk_samples) {
        // The copies' settings as the JDK writes its own (JMC's method profiling rule scales the
        // samples it sees by the `period` in force, and is not applicable without one).
        chunk.active_setting(ticks, tid, jfr::T_JDK_EXECUTION_SAMPLE, "enabled", "true");
        chunk.active_setting(
            ticks,
            tid,
            jfr::T_JDK_EXECUTION_SAMPLE,
            "period",
            &jdk_timespan(ns),
        );
    }
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
pub(super) fn write_memory_settings(
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

/// A period as the JDK writes a timespan setting: the largest of s, ms, us, ns that divides it
/// ("10 ms", "1500 us").
fn jdk_timespan(ns: u64) -> String {
    for (unit, size) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns >= size && ns.is_multiple_of(size) {
            return format!("{} {unit}", ns / size);
        }
    }
    format!("{ns} ns")
}

#[cfg(test)]
mod timespan_tests {
    #[test]
    fn periods_are_written_as_the_jdk_writes_them() {
        assert_eq!(super::jdk_timespan(10_000_000), "10 ms");
        assert_eq!(super::jdk_timespan(1_500_000), "1500 us");
        assert_eq!(super::jdk_timespan(2_000_000_000), "2 s");
        assert_eq!(super::jdk_timespan(999), "999 ns");
    }
}
