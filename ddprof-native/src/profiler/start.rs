//! The start (`start`, `resume`): checks that change nothing, the signal wing's handlers, the
//! walker, then the sources one function each, in `sources::ORDER`. Each source's function
//! registers in the [`Sources`] the stop of every piece of it that runs, as it comes up, and
//! returns what the session keeps of it; so `start` reads as the composition, and an error
//! anywhere unwinds exactly what started (sources.rs).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use jni::sys::JNIEnv;

use super::sources::{Source, Sources};
use super::walkers::{
    allocation_walker, resolve_id_mode, resolve_walker, set_native_frames, NativeFrames,
};
use super::{
    codemap, dump, epoch_nanos, handlers, libraries, open_output, own_cpu_signals,
    process_cpu_nanos, sanity, sigaction_message, Error, Session, Walker, ENGINE, PENDING_SETTINGS,
    SESSION,
};
use crate::args::{self, Action, Args, CpuEngine as EngineChoice, Memory};
use crate::counters;
use crate::engine::wall::{self, WallClock};
use crate::engine::{ctimer::CTimer, itimer::ITimer, none::NoCpu, perf::PerfEvents, Engine};
use crate::hotspot::trace_id;
use crate::jvmti::jvm;
use crate::jvmti::Jvmti;
use crate::methods::preload;
use crate::sample::handler::{self, SignalSource, WalkerKind};
use crate::sample::safe_access;
use crate::sample::traces::Recorder;
use crate::sample::vm::current_thread;
use crate::sample::walk::agct::Agct;
use crate::{log, threads};

/// `start` (a new recording: `reset`) or `resume` (appending to the file): see the module
/// comment for its shape.
pub(super) fn start(
    jni: *mut JNIEnv,
    args: Args,
    mut warnings: Vec<String>,
) -> Result<String, Error> {
    let mut session = SESSION.lock();
    if session.is_some() {
        return Err(Error::State("Profiler already started".into()));
    }
    let jvmti = jvm::jvmti().ok_or_else(|| Error::State("JVMTI is not available".into()))?;
    let file = PathBuf::from(args.file.clone().unwrap_or_default());
    let reset = args.action == Action::Start;
    let interval = args.cpu_interval_ns;
    let memory = args.memory.clone().filter(|m| m.allocations || m.liveness);
    if !samples_anything(&args, memory.is_some()) {
        return Err(Error::Argument(args::REASON_NO_EVENTS.into()));
    }
    open_output(&file, reset)?;
    if sanity::check_once(args.nosanity).is_some_and(|o| o.failed) {
        warnings.push(
            "Continuing to start profiler despite failed sanity check (see the recording's sanityCheckDetail setting)"
                .into(),
        );
    }
    warnings.extend(option_warnings(&args));
    let signals = handlers::InUse {
        cpu: interval.is_some(),
        wall: args.wall_interval_ns.is_some(),
    };
    let recorder = install_handlers(jni, signals, &mut warnings)?;
    // The JFR metadata of this session's chunks, built now rather than by the first dump (and
    // before the memory peaks start again: building it is transient memory of the start).
    crate::jfr::warm_metadata(&args.attributes);
    if reset {
        reset_recording(recorder);
    }
    let walker = resolve_walker(&args, &mut warnings);
    prepare_vm_reads(jvmti, jni, &args, walker);

    // From here on every source that starts registers its stop: an error return (or a panic)
    // before the session exists stops exactly those, in reverse order, and so does the
    // session's `stop` (sources.rs).
    let mut sources = Sources::new();
    start_code_maps(jvmti, &args, &mut warnings, &mut sources);
    let id_mode = resolve_id_mode(&args, walker, jni, &mut warnings);
    preload::apply(id_mode, jvmti, jni);
    // The caller's thread is often the one doing the work; name it now, since it
    // started before us and JVMTI ThreadStart will never report it.
    register_current_thread(jni);
    let wall_engine = prepare_wall(&args, &mut warnings)?;
    let frames = set_native_frames(&args, walker);
    let (engine, cpu_engine_fallback) = start_cpu_engine(&args, walker, interval, &mut sources)?;
    if let Some(reason) = &cpu_engine_fallback {
        warnings.push(reason.clone());
    }
    if let Some(w) = &wall_engine {
        start_wall(w, &args, reset, &mut sources)?;
    }
    if let Some(m) = &memory {
        warnings.extend(start_allocations(
            jvmti,
            jni,
            m,
            &args,
            walker,
            reset,
            &mut sources,
        )?);
    }
    if let Some(n) = args.nativemem {
        start_native_memory(n, &args, walker, reset, &mut sources)?;
    }
    if let Some(n) = args.natsock_ns {
        // As upstream: socket sampling that cannot start leaves the other engines running.
        if let Err(e) = start_sockets(n, &args, walker, &mut sources) {
            warnings.push(e);
        }
    }
    let refresh = library_refresh(&args, walker, frames, &engine, signals);
    // What the first dump would read (symbol tables, build ids, host facts), read now: the
    // watcher keeps it current from here on.
    dump::prepare(refresh.symbols, refresh.kernel_symbols);
    if reset {
        // Peaks and averages start again once the start's own transient work is done.
        crate::footprint::on_start();
    }
    let watches_libraries = start_library_watcher(refresh, &mut sources);
    for w in &warnings {
        log::warn(w);
    }
    let out = started_text(&warnings);
    start_tracing(reset, &mut sources);
    *session = Some(Session {
        args,
        engine,
        wall: wall_engine,
        file,
        started: Instant::now(),
        started_epoch_ms: epoch_nanos() / 1_000_000,
        chunk_start_nanos: epoch_nanos(),
        chunk_start_ticks: handler::ticks(),
        walker: match walker {
            WalkerKind::Vm if frames.mixed => Walker::Vmx,
            WalkerKind::Vm => Walker::Vm,
            WalkerKind::Agct => Walker::Asgct,
        },
        fjmethodid: id_mode,
        warnings,
        cpu_engine_fallback,
        rate_base: (process_cpu_nanos(), own_cpu_signals()),
        cpu_rate: None,
        watches_libraries,
        sources,
    });
    Ok(out)
}

/// `args::parse` ran the start-time checks (`Args::validate_for_start`): a file is set and
/// something is asked for. What remains is whether this build samples any of it: CPU, wall
/// clock, allocations (`memory` with `a`, `l` or `L`: `allocations`) and native memory.
fn samples_anything(args: &Args, allocations: bool) -> bool {
    args.cpu_interval_ns.is_some()
        || args.wall_interval_ns.is_some()
        || allocations
        || args.nativemem.is_some()
}

/// The warnings the options alone give: accepted but not sampled, and a depth above the most
/// a frame buffer holds.
fn option_warnings(args: &Args) -> Vec<String> {
    let mut warnings: Vec<String> = args
        .not_yet_sampled()
        .into_iter()
        .map(|option| {
            format!("'{option}' is accepted but not yet sampled by this version of ddprof")
        })
        .collect();
    if args.jstackdepth as usize > handler::MAX_DEPTH {
        warnings.push(format!(
            "jstackdepth={} is above the maximum {}; using {}",
            args.jstackdepth,
            handler::MAX_DEPTH,
            handler::MAX_DEPTH
        ));
    }
    warnings
}

/// What the signal handlers need before any of them is installed, then the SIGPROF handler
/// (its buffers made by the process's first start: `handler::init`), the current-thread lookup
/// and the crash protection of VM reads. Returns the sample buffers.
fn install_handlers(
    jni: *mut JNIEnv,
    signals: handlers::InUse,
    warnings: &mut Vec<String>,
) -> Result<&'static Recorder, Error> {
    Agct::find().ok_or_else(|| {
        Error::State(
            "AsyncGetCallTrace is not exported by this JVM; cannot walk Java stacks".into(),
        )
    })?;
    warnings.extend(handlers::before_install(signals));
    let recorder =
        handler::init(sample_records()).map_err(|e| Error::State(sigaction_message(e)))?;
    // Without it AGCT still works on JDK 17+ but not on 11: the walker then records
    // every sample as a non-Java thread, which the counters show.
    if let Err(Some(e)) = current_thread::init(jni) {
        log::warn(&format!("current-thread lookup unavailable: {e}"));
    }
    // Both walkers read VM memory (at least the current JavaThread) through it.
    if let Err(e) = safe_access::install() {
        warnings.push(format!(
            "crash protection unavailable ({}); VM reads use process_vm_readv",
            sigaction_message(e)
        ));
    }
    Ok(recorder)
}

/// `start` (not `resume`): a new recording. Tables first: clearing them takes their traces
/// off the counters zeroed next.
fn reset_recording(recorder: &Recorder) {
    recorder.reset();
    counters::reset_all();
    // One context dictionary per recording (docs/context.md).
    crate::context::dictionary::clear();
    PENDING_SETTINGS.lock().clear();
}

/// What reading the VM's memory needs before a walk or a dump reads it: ZGC's colors, the
/// trace-id offset, the receiver classes of vtable/itable stubs and the stubs' names.
fn prepare_vm_reads(jvmti: Jvmti, jni: *mut JNIEnv, args: &Args, walker: WalkerKind) {
    // Before any oop is read through a handle: under ZGC they are colored pointers.
    let oops = crate::hotspot::zgc::init();
    log::info(&format!("oops outside the heap: {oops:?}"));
    // Once per process; the lazy mode needs it, the gauge reports it in every mode.
    let _ = trace_id::calibrate(jni);
    counters::Counter::KlassTraceIdOffset.set(crate::sample::vm::trace_id::offset() as i64);

    // Receiver classes of vtable/itable stubs: only our walker reads the register, and
    // only a HotSpot layout says how a header names its class.
    let receivers = args.vtable_receiver
        && walker == WalkerKind::Vm
        && crate::hotspot::receiver::init()
            .map_err(|e| log::info(&format!("vtable receiver frames unavailable: {e}")))
            .is_ok();
    // Stub frames (and the vtable/itable stub under a receiver frame) are named from the
    // stubs the JVM reports; only our walker records them.
    if walker == WalkerKind::Vm {
        crate::hotspot::stubs::start(jvmti);
    }
    crate::sample::vm::receiver::set_enabled(
        receivers,
        std::env::var_os(MISRECORD_RECEIVERS_ENV).is_some(),
    );
}

/// The perf map and jitdump; what cannot be written is a warning (`codemap::start`).
fn start_code_maps(jvmti: Jvmti, args: &Args, warnings: &mut Vec<String>, sources: &mut Sources) {
    codemap::start(jvmti, args, warnings);
    sources.push(Source::CodeMap, codemap::stop);
}

fn register_current_thread(jni: *mut JNIEnv) {
    let Some(jvmti) = jvm::jvmti() else { return };
    let _mem = crate::footprint::scope(crate::footprint::Category::ThreadInfo);
    if let Some((name, id)) = jvm::describe_thread(jvmti, jni, std::ptr::null_mut()) {
        threads::register_java_thread(crate::sample::context::gettid(), name, id);
    }
}

/// What `cpu=` / `event=` ask of the CPU engine, given the scheduler tick: the engines to
/// try in order. `cpu=INTERVAL` keeps ctimer (upstream's engine) where it delivers the
/// interval and takes perf_events only below the tick, where ctimer cannot; `event=cpu`
/// asks for perf_events. Either falls back to ctimer when perf_events is refused.
fn engine_plan(choice: EngineChoice, interval_ns: u64, tick_ns: u64) -> EngineChoice {
    match choice {
        EngineChoice::Auto if interval_ns < tick_ns => EngineChoice::Perf,
        EngineChoice::Auto => EngineChoice::CTimer,
        other => other,
    }
}

/// Arms the handler and starts the CPU engine `args` call for; perf_events refused is not
/// an error but ctimer with the reason (returned, and counted in `cpu_engine_fallback`).
fn start_cpu_engine(
    args: &Args,
    walker: WalkerKind,
    interval: Option<u64>,
    sources: &mut Sources,
) -> Result<(Arc<dyn Engine>, Option<String>), Error> {
    // The gate is armed below, once or (perf_events refused) twice; closing it and clearing
    // ENGINE are harmless before then.
    sources.push(Source::Cpu, || {
        handler::disarm();
        *ENGINE.write() = None;
    });
    let arm = |e: &Arc<dyn Engine>| {
        handler::arm(
            e.signal_source(),
            walker,
            args.walkcompare,
            args.jstackdepth as usize,
        );
        *ENGINE.write() = Some(e.clone());
    };
    let tick = crate::engine::scheduler_tick_ns();
    let plan = interval.map(|ns| engine_plan(args.cpu_engine, ns, tick));
    let mut fallback = None;
    let engine: Arc<dyn Engine> = match plan {
        None => Arc::new(NoCpu),
        Some(EngineChoice::ITimer) => Arc::new(ITimer),
        Some(EngineChoice::Perf) => {
            let concrete = Arc::new(PerfEvents::default());
            // `event=cpu` is async-profiler's event, with its kernel frames where the kernel
            // permits them (unless `alluser`); `cpu=` is upstream's, whose stacks have none
            // (docs/features.md, "CPU sampling").
            concrete.want_kernel_frames(
                args.cpu_engine == EngineChoice::Perf && args.ring != crate::args::Ring::User,
            );
            let perf: Arc<dyn Engine> = concrete;
            arm(&perf);
            match perf.start(interval.unwrap_or(0)) {
                Ok(()) => {
                    let ns = interval.unwrap_or(0);
                    if ns < crate::engine::perf::MIN_PERIOD_NS {
                        log::warn(&format!(
                            "cpu={}ns is below perf_events' shortest period; sampling every {}us, each sample weighing the intervals it stands for",
                            ns,
                            crate::engine::perf::MIN_PERIOD_NS / 1000
                        ));
                    }
                    counters::Counter::CpuEngine.set(perf.id().code());
                    counters::Counter::CpuEngineFallback.set(0);
                    let running = perf.clone();
                    sources.push(Source::Cpu, move || running.stop());
                    return Ok((perf, None));
                }
                Err(e) => {
                    let why = if args.cpu_engine == EngineChoice::Perf {
                        "event=cpu".to_string()
                    } else {
                        format!(
                            "cpu={}us is finer than the scheduler tick ({}us)",
                            interval.unwrap_or(0) / 1000,
                            tick / 1000
                        )
                    };
                    fallback = Some(format!(
                        "perf_events unavailable for {why}: {e}; using ctimer (at most one signal per thread per tick, weighted by the ticks it stands for)"
                    ));
                    handler::set_source(SignalSource::Timer);
                    Arc::new(CTimer::default())
                }
            }
        }
        Some(_) => Arc::new(CTimer::default()),
    };
    arm(&engine);
    let running = engine.clone();
    sources
        .start(
            Source::Cpu,
            || engine.start(interval.unwrap_or(0)),
            move || running.stop(),
        )
        .map_err(|e| Error::State(format!("Failed to start the {} engine: {e}", engine.name())))?;
    counters::Counter::CpuEngine.set(engine.id().code());
    counters::Counter::CpuEngineFallback.set(i64::from(fallback.is_some()));
    Ok((engine, fallback))
}
/// The wall-clock sampler `wall=` asks for, its handler installed (`sample::wall::init`)
/// but not armed: it starts after the CPU engine ([`start_wall`]).
fn prepare_wall(args: &Args, warnings: &mut Vec<String>) -> Result<Option<Arc<WallClock>>, Error> {
    let Some(ns) = args.wall_interval_ns else {
        return Ok(None);
    };
    crate::sample::wall::init().map_err(|e| Error::State(sigaction_message(e)))?;
    if args.wall_sampler_jvmti {
        warnings.push(
            "wallsampler=jvmti is not available in this version; using the signal-based sampler (asgct)"
                .into(),
        );
    }
    Ok(Some(Arc::new(WallClock::new(wall::Config {
        interval_ns: ns.max(1),
        threads_per_tick: args.wall_threads_per_tick,
        filter: args.filter,
        skip_idle: args.wall_skip_idle,
        precheck: args.wall_precheck,
    }))))
}

/// Arms the wall handler's gate (a piece of its own, closed by the unwinding), then starts the
/// sampler's thread.
fn start_wall(
    w: &Arc<WallClock>,
    args: &Args,
    reset: bool,
    sources: &mut Sources,
) -> Result<(), Error> {
    crate::sample::wall::arm(
        args.wall_collapsing,
        args.wall_skip_idle,
        args.wall_precheck,
        args.cpu_interval_ns.is_some(),
    );
    sources.push(Source::Wall, crate::sample::wall::disarm);
    if reset {
        drop(wall::take_epochs());
    }
    let sampler = w.clone();
    sources
        .start(Source::Wall, || w.start(), move || sampler.stop())
        .map_err(|e| Error::State(format!("Failed to start the {} engine: {e}", w.name())))
}

/// The most frames an allocation, native-memory or socket sample walks: `jstackdepth`, within
/// what the allocation sampler's buffer holds.
fn allocation_depth(args: &Args) -> usize {
    (args.jstackdepth as usize).min(crate::sample::alloc::MAX_DEPTH)
}

/// JVMTI allocation sampling and the live heap (`memory=`). Returns its warnings.
/// Allocation samples walk with the same walker and depth as CPU samples.
fn start_allocations(
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    memory: &Memory,
    args: &Args,
    walker: WalkerKind,
    reset: bool,
    sources: &mut Sources,
) -> Result<Vec<String>, Error> {
    let depth = allocation_depth(args);
    sources
        .start(
            Source::Alloc,
            || crate::alloc::start(jvmti, jni, memory, allocation_walker(walker), depth, reset),
            move || crate::alloc::stop(jvmti),
        )
        .map_err(Error::State)
}

/// Native allocation hooks (`nativemem=`). They walk like JVMTI allocation samples: from the
/// frame anchor.
fn start_native_memory(
    interval: u64,
    args: &Args,
    walker: WalkerKind,
    reset: bool,
    sources: &mut Sources,
) -> Result<(), Error> {
    let depth = allocation_depth(args);
    sources
        .start(
            Source::NativeMem,
            || crate::nativemem::start(interval, allocation_walker(walker), depth, reset),
            crate::nativemem::stop,
        )
        .map_err(Error::State)
}

/// Socket I/O hooks (`natsock=`). Its error is a warning for the caller to give.
fn start_sockets(
    interval_ns: u64,
    args: &Args,
    walker: WalkerKind,
    sources: &mut Sources,
) -> Result<(), String> {
    let depth = allocation_depth(args);
    sources.start(
        Source::NatSock,
        || crate::natsock::start(interval_ns, allocation_walker(walker), depth),
        crate::natsock::stop,
    )
}

/// What the library watcher keeps current for libraries loaded from now on: unwind rules and
/// hooks within a moment, not at the next dump.
fn library_refresh(
    args: &Args,
    walker: WalkerKind,
    frames: NativeFrames,
    engine: &Arc<dyn Engine>,
    signals: handlers::InUse,
) -> libraries::Refresh {
    let unwound = frames.unwound(walker);
    libraries::Refresh {
        unwind_rules: unwound,
        // The modes that record native frames (C frames at the top of stacks, native stacks).
        symbols: unwound,
        names_ahead: unwound && !args.remotesym,
        java_ids_ahead: crate::methods::ahead_ids::plan(),
        kernel_symbols: crate::engine::perf::kernel_frames_on(),
        engine: Some(engine.clone()),
        signals,
    }
}

/// The library watcher, if the loader's counts can be read. Stopped before natsock and
/// nativemem: no refresh hooks a library again after their hooks are put back.
fn start_library_watcher(refresh: libraries::Refresh, sources: &mut Sources) -> bool {
    match libraries::Watcher::start(refresh) {
        Some(watcher) => {
            sources.push(Source::Libraries, move || drop(watcher));
            true
        }
        None => false,
    }
}

/// Endpoints and queue times: `start` empties their dictionaries, `resume` keeps them.
fn start_tracing(reset: bool, sources: &mut Sources) {
    crate::tracing::on_start(reset);
    sources.push(Source::Tracing, crate::tracing::on_stop);
}

/// What a start returns to its caller: each warning, then that it started.
fn started_text(warnings: &[String]) -> String {
    let mut out = String::new();
    for w in warnings {
        out.push_str("WARNING: ");
        out.push_str(w);
        out.push('\n');
    }
    out.push_str("Profiling started\n");
    out
}

/// Test mode (an environment variable, so no option of the grammar): a chunk's sample buffer
/// holds this many records (at least `handler::MIN_SAMPLES`, at most the default
/// `handler::SAMPLES`), so a test fills it with a few MB of allocation instead of tens of GB.
/// Read at the process's first start only; anything but a number is ignored.
const SAMPLE_RECORDS_ENV: &str = "DDPROF_TEST_SAMPLE_RECORDS";

fn sample_records() -> usize {
    std::env::var(SAMPLE_RECORDS_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(handler::SAMPLES)
}

/// Test mode (an environment variable, so no option of the grammar): every vtable receiver
/// is recorded with a trace ID no class has, which the dump must refuse to name.
const MISRECORD_RECEIVERS_ENV: &str = "DDPROF_TEST_MISRECORD_VTABLE_RECEIVERS";

#[cfg(test)]
mod engine_choice_tests {
    use super::{engine_plan, EngineChoice};

    const TICK: u64 = 4_000_000;

    #[test]
    fn cpu_interval_keeps_ctimer_where_the_tick_delivers_it() {
        assert_eq!(
            engine_plan(EngineChoice::Auto, 10_000_000, TICK),
            EngineChoice::CTimer
        );
        assert_eq!(
            engine_plan(EngineChoice::Auto, TICK, TICK),
            EngineChoice::CTimer
        );
        assert_eq!(
            engine_plan(EngineChoice::Auto, 1_000_000, TICK),
            EngineChoice::Perf
        );
        assert_eq!(
            engine_plan(EngineChoice::Auto, 1_000_000, 1_000_000),
            EngineChoice::CTimer
        );
    }

    #[test]
    fn named_events_are_what_they_name() {
        assert_eq!(
            engine_plan(EngineChoice::Perf, 10_000_000, TICK),
            EngineChoice::Perf
        );
        assert_eq!(
            engine_plan(EngineChoice::CTimer, 1_000_000, TICK),
            EngineChoice::CTimer
        );
        assert_eq!(
            engine_plan(EngineChoice::ITimer, 1_000_000, TICK),
            EngineChoice::ITimer
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_samples_cpu_wall_allocations_or_native_memory() {
        let none = Args::default();
        assert!(!samples_anything(&none, false));
        assert!(samples_anything(&none, true));
        for args in [
            Args {
                cpu_interval_ns: Some(10_000_000),
                ..Args::default()
            },
            Args {
                wall_interval_ns: Some(10_000_000),
                ..Args::default()
            },
            Args {
                nativemem: Some(0),
                ..Args::default()
            },
        ] {
            assert!(samples_anything(&args, false), "{args:?}");
        }
    }

    #[test]
    fn options_not_sampled_and_a_deep_jstackdepth_are_warned_of_in_that_order() {
        assert!(option_warnings(&Args::default()).is_empty());
        let max = handler::MAX_DEPTH as u32;
        assert!(option_warnings(&Args {
            jstackdepth: max,
            ..Args::default()
        })
        .is_empty());
        let warnings = option_warnings(&Args {
            lightweight: true,
            jstackdepth: max + 1,
            ..Args::default()
        });
        assert_eq!(
            warnings,
            [
                "'lightweight' is accepted but not yet sampled by this version of ddprof"
                    .to_string(),
                format!(
                    "jstackdepth={} is above the maximum {max}; using {max}",
                    max + 1
                ),
            ]
        );
    }

    #[test]
    fn allocation_stacks_are_as_deep_as_cpu_stacks_up_to_their_buffer() {
        let depth = |jstackdepth| {
            allocation_depth(&Args {
                jstackdepth,
                ..Args::default()
            })
        };
        assert_eq!(depth(64), 64);
        let max = crate::sample::alloc::MAX_DEPTH;
        assert_eq!(depth(max as u32 + 1), max);
    }

    #[test]
    fn the_watcher_keeps_native_names_current_only_where_native_frames_are_unwound() {
        let engine: Arc<dyn Engine> = Arc::new(NoCpu);
        let refresh = |walker, native_top, remotesym| {
            let frames = NativeFrames {
                mixed: false,
                native_top,
            };
            let args = Args {
                remotesym,
                ..Args::default()
            };
            let r = library_refresh(&args, walker, frames, &engine, handlers::InUse::default());
            (r.unwind_rules, r.symbols, r.names_ahead)
        };
        assert_eq!(refresh(WalkerKind::Vm, false, false), (true, true, true));
        assert_eq!(refresh(WalkerKind::Vm, false, true), (true, true, false));
        assert_eq!(refresh(WalkerKind::Agct, true, false), (true, true, true));
        assert_eq!(
            refresh(WalkerKind::Agct, false, false),
            (false, false, false)
        );
    }

    #[test]
    fn a_start_answers_each_warning_then_that_it_started() {
        assert_eq!(started_text(&[]), "Profiling started\n");
        assert_eq!(
            started_text(&["a".into(), "b".into()]),
            "WARNING: a\nWARNING: b\nProfiling started\n"
        );
    }
}
