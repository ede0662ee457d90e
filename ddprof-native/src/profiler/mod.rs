//! The profiler's lifecycle: idle -> running -> (dumps) -> stopped. Start, stop, dump and
//! status run under the session lock (`SESSION`); thread start and end take only `ENGINE`'s
//! read lock, and pending settings and the code maps have locks of their own. The signal
//! handler takes none of them (it reads `sample::handler`'s atomics).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use jni::sys::JNIEnv;
use parking_lot::{Mutex, RwLock};

use crate::args::{self, Action, Args, CStack, CpuEngine as EngineChoice, FjMethodId};
use crate::counters;
use crate::engine::wall::{self, WallClock};
use crate::engine::{
    ctimer::CTimer, itimer::ITimer, none::NoCpu, perf::PerfEvents, Engine, EngineId,
};
use crate::hotspot::{trace_id, vmstructs};
use crate::methods::{lazy, preload};
use crate::sample::handler::{self, SignalSource, WalkerKind};
use crate::sample::safe_access;
use crate::sample::signal::SigactionFailed;
use crate::sample::vm::current_thread;
use crate::sample::walk::agct::Agct;
use crate::sample::walk::vm::VmWalker;
use crate::{log, threads, vm};

mod ahead;
pub mod codemap;
mod cpu_load;
mod dump;
mod handlers;
pub mod jitdump;
mod libraries;
mod map_records;
mod output;
pub mod perfmap;
mod sanity;
mod session;
mod sources;
mod switch_price;

pub use session::{PendingSetting, Session, Walker};
use sources::{Source, Sources};

/// The library's version: the Maven project's (`DDPROF_VERSION`, which the build of the jar puts
/// in cargo's environment), so that `getVersion()`, the `version` command and the recordings say
/// what the jar's manifest says; the crate's own version only for a bare `cargo build`.
pub const VERSION: &str = match option_env!("DDPROF_VERSION") {
    Some(v) => v,
    None => env!("CARGO_PKG_VERSION"),
};

/// Errors as the Java API reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A bad command string: IllegalArgumentException.
    Argument(String),
    /// Wrong state or a runtime failure: IllegalStateException.
    State(String),
    /// The output file: IOException.
    Io(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Argument(m) | Error::State(m) | Error::Io(m) => f.write_str(m),
        }
    }
}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);
/// The armed engine, for thread start/end callbacks (which must not wait for a dump).
static ENGINE: RwLock<Option<Arc<dyn Engine>>> = RwLock::new(None);
static PENDING_SETTINGS: Mutex<Vec<PendingSetting>> = Mutex::new(Vec::new());
/// Counts chunk boundaries; thread names are kept until the chunk after their end.
static EPOCH: AtomicU64 = AtomicU64::new(0);

pub fn epoch_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Runs a command string (`JavaProfiler.execute`). Returns the text for the caller.
pub fn execute(jni: *mut JNIEnv, command: &str) -> Result<String, Error> {
    let now_secs = epoch_nanos() / 1_000_000_000;
    let args = args::parse(command, &env_lookup, std::process::id(), now_secs).map_err(|e| {
        if e.is_state_error() {
            Error::State(e.to_string())
        } else {
            Error::Argument(e.to_string())
        }
    })?;
    if let Some(level) = args.loglevel {
        log::set_level(log_level(level));
    }
    let mut warnings: Vec<String> = Vec::new();
    if let Some(first) = args.unknown.first() {
        warnings.push(format!("Unknown argument: {first}"));
    }
    match args.action {
        Action::Start | Action::Resume => start(jni, args, warnings),
        Action::Stop => stop(jni).map(|_| String::new()),
        Action::Status => Ok(status_line()),
        Action::Check => Ok("OK\n".into()),
        Action::List => Ok("Basic events:\n  cpu\n  ctimer\n  itimer\n".into()),
        Action::Version => Ok(format!("{VERSION}\n")),
        Action::None => Ok(warnings.iter().map(|w| format!("WARNING: {w}\n")).collect()),
    }
}

fn log_level(l: args::LogLevel) -> log::Level {
    match l {
        args::LogLevel::Trace => log::Level::Trace,
        args::LogLevel::Debug => log::Level::Debug,
        args::LogLevel::Info => log::Level::Info,
        args::LogLevel::Warn => log::Level::Warn,
        args::LogLevel::Error => log::Level::Error,
        args::LogLevel::None => log::Level::None,
    }
}

fn start(jni: *mut JNIEnv, args: Args, mut warnings: Vec<String>) -> Result<String, Error> {
    let mut session = SESSION.lock();
    if session.is_some() {
        return Err(Error::State("Profiler already started".into()));
    }
    let jvmti = vm::jvmti().ok_or_else(|| Error::State("JVMTI is not available".into()))?;
    // `args::parse` ran the start-time checks (`Args::validate_for_start`): a file is set
    // and something is asked for. What remains is whether this build samples any of it:
    // CPU, wall clock and allocations (`memory` with `a`, `l` or `L`).
    let file = PathBuf::from(args.file.clone().unwrap_or_default());
    let reset = args.action == Action::Start;
    let interval = args.cpu_interval_ns;
    let memory = args.memory.clone().filter(|m| m.allocations || m.liveness);
    if interval.is_none()
        && args.wall_interval_ns.is_none()
        && memory.is_none()
        && args.nativemem.is_none()
    {
        return Err(Error::Argument(args::REASON_NO_EVENTS.into()));
    }
    open_output(&file, reset)?;
    if sanity::check_once(args.nosanity).is_some_and(|o| o.failed) {
        warnings.push(
            "Continuing to start profiler despite failed sanity check (see the recording's sanityCheckDetail setting)"
                .into(),
        );
    }

    for option in args.not_yet_sampled() {
        warnings.push(format!(
            "'{option}' is accepted but not yet sampled by this version of ddprof"
        ));
    }
    if args.jstackdepth as usize > handler::MAX_DEPTH {
        warnings.push(format!(
            "jstackdepth={} is above the maximum {}; using {}",
            args.jstackdepth,
            handler::MAX_DEPTH,
            handler::MAX_DEPTH
        ));
    }
    Agct::find().ok_or_else(|| {
        Error::State(
            "AsyncGetCallTrace is not exported by this JVM; cannot walk Java stacks".into(),
        )
    })?;
    let signals = handlers::InUse {
        cpu: interval.is_some(),
        wall: args.wall_interval_ns.is_some(),
    };
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
    // The JFR metadata of this session's chunks, built now rather than by the first dump (and
    // before the memory peaks start again: building it is transient memory of the start).
    crate::jfr::warm_metadata(&args.attributes);
    if reset {
        // Tables first: clearing them takes their traces off the counters zeroed next.
        recorder.reset();
        counters::reset_all();
        // One context dictionary per recording (docs/context.md).
        crate::context::clear();
        PENDING_SETTINGS.lock().clear();
    }
    let walker = resolve_walker(&args, &mut warnings);
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

    // From here on every source that starts registers its stop: an error return (or a panic)
    // before the session exists stops exactly those, in reverse order, and so does the
    // session's `stop` (sources.rs).
    let mut sources = Sources::new();
    codemap::start(jvmti, &args, &mut warnings);
    sources.push(Source::CodeMap, codemap::stop);

    let id_mode = resolve_id_mode(&args, walker, jni, &mut warnings);
    preload::apply(id_mode, jvmti, jni);
    // The caller's thread is often the one doing the work; name it now, since it
    // started before us and JVMTI ThreadStart will never report it.
    register_current_thread(jni);

    let wall_engine = match args.wall_interval_ns {
        Some(ns) => {
            crate::sample::wall::init().map_err(|e| Error::State(sigaction_message(e)))?;
            if args.wall_sampler_jvmti {
                warnings.push(
                    "wallsampler=jvmti is not available in this version; using the signal-based sampler (asgct)"
                        .into(),
                );
            }
            Some(Arc::new(WallClock::new(wall::Config {
                interval_ns: ns.max(1),
                threads_per_tick: args.wall_threads_per_tick,
                filter: args.filter,
                skip_idle: args.wall_skip_idle,
                precheck: args.wall_precheck,
            })))
        }
        None => None,
    };
    // The VM walker records the native frames above the top Java frame, and with cstack=vmx
    // those between Java frames too (sample/walk/native.rs).
    // cstack=fp|dwarf|lbr name upstream's native unwinders beside AsyncGetCallTrace: there the
    // VM walker's native unwinding gives the C frames above the top Java frame (when it can be
    // set up), AsyncGetCallTrace the Java frames.
    use crate::sample::walk::native::{set_record, Record};
    let mixed = walker == WalkerKind::Vm && args.cstack == CStack::Vmx;
    let native_top = walker == WalkerKind::Agct
        && matches!(args.cstack, CStack::Fp | CStack::Dwarf | CStack::Lbr)
        && allocation_walker(walker) == WalkerKind::Vm;
    handler::set_native_top(native_top);
    set_record(match walker {
        WalkerKind::Vm if mixed => Record::Mixed,
        WalkerKind::Vm => Record::Leaf,
        WalkerKind::Agct if native_top => Record::Leaf,
        WalkerKind::Agct => Record::None,
    });
    if walker == WalkerKind::Vm || native_top {
        // DWARF rules for the libraries mapped now (rebuilt when they change, at starts
        // and dumps).
        let bytes = crate::eh_frame::refresh();
        counters::Counter::NativeUnwindTableBytes.set(bytes as i64);
    }
    let (engine, cpu_engine_fallback) = start_cpu_engine(&args, walker, interval, &mut sources)?;
    if let Some(reason) = &cpu_engine_fallback {
        warnings.push(reason.clone());
    }
    if let Some(w) = &wall_engine {
        crate::sample::wall::arm(
            args.wall_collapsing,
            args.wall_skip_idle,
            args.wall_precheck,
            interval.is_some(),
        );
        sources.push(Source::Wall, crate::sample::wall::disarm);
        if reset {
            drop(wall::take_epochs());
        }
        let sampler = w.clone();
        sources
            .start(Source::Wall, || w.start(), move || sampler.stop())
            .map_err(|e| Error::State(format!("Failed to start the {} engine: {e}", w.name())))?;
    }
    if let Some(m) = &memory {
        // Allocation samples walk with the same walker and depth as CPU samples.
        let depth = (args.jstackdepth as usize).min(crate::sample::alloc::MAX_DEPTH);
        let w = sources
            .start(
                Source::Alloc,
                || crate::alloc::start(jvmti, jni, m, allocation_walker(walker), depth, reset),
                move || crate::alloc::stop(jvmti),
            )
            .map_err(Error::State)?;
        warnings.extend(w);
    }
    if let Some(n) = args.nativemem {
        // Native allocations walk like JVMTI allocation samples: from the frame anchor.
        let depth = (args.jstackdepth as usize).min(crate::sample::alloc::MAX_DEPTH);
        sources
            .start(
                Source::NativeMem,
                || crate::nativemem::start(n, allocation_walker(walker), depth, reset),
                crate::nativemem::stop,
            )
            .map_err(Error::State)?;
    }
    if let Some(n) = args.natsock_ns {
        // As upstream: socket sampling that cannot start leaves the other engines running.
        let depth = (args.jstackdepth as usize).min(crate::sample::alloc::MAX_DEPTH);
        let natsock = sources.start(
            Source::NatSock,
            || crate::natsock::start(n, allocation_walker(walker), depth),
            crate::natsock::stop,
        );
        if let Err(e) = natsock {
            warnings.push(e);
        }
    }
    // Libraries loaded from now on: unwind rules and hooks within a moment, not at the next dump.
    let refresh = libraries::Refresh {
        unwind_rules: walker == WalkerKind::Vm || native_top,
        // The modes that record native frames (C frames at the top of stacks, native stacks).
        symbols: walker == WalkerKind::Vm || native_top,
        names_ahead: (walker == WalkerKind::Vm || native_top) && !args.remotesym,
        kernel_symbols: crate::engine::perf::kernel_frames_on(),
        engine: Some(engine.clone()),
        signals,
    };
    // What the first dump would read (symbol tables, build ids, host facts), read now: the
    // watcher keeps it current from here on.
    dump::prepare(refresh.symbols, refresh.kernel_symbols);
    if reset {
        // Peaks and averages start again once the start's own transient work is done.
        crate::memory::on_start();
    }
    // Stopped before natsock and nativemem: no refresh hooks a library again after their
    // hooks are put back.
    let watches_libraries = match libraries::Watcher::start(refresh) {
        Some(watcher) => {
            sources.push(Source::Libraries, move || drop(watcher));
            true
        }
        None => false,
    };
    for w in &warnings {
        log::warn(w);
    }
    let mut out = String::new();
    for w in &warnings {
        out.push_str("WARNING: ");
        out.push_str(w);
        out.push('\n');
    }
    out.push_str("Profiling started\n");
    // Endpoints and queue times: `start` empties their dictionaries, `resume` keeps them.
    crate::tracing::on_start(reset);
    sources.push(Source::Tracing, crate::tracing::on_stop);
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
            WalkerKind::Vm if mixed => Walker::Vmx,
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

/// CPU time of the whole process, ns.
fn process_cpu_nanos() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime with a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// CPU-engine signals taken as ours since the start (either engine's counter).
fn own_cpu_signals() -> i64 {
    counters::Counter::CtimerSignalOwn.get() + counters::Counter::PerfSignalOwn.get()
}

/// Samples per CPU-second of the process since `base` (what a busy thread gets per second),
/// and the new base. None when too little CPU was used to tell.
fn achieved_rate(base: (i64, i64)) -> (Option<f64>, (i64, i64)) {
    let now = (process_cpu_nanos(), own_cpu_signals());
    let cpu = now.0 - base.0;
    let rate = (cpu >= 10_000_000).then(|| (now.1 - base.1) as f64 * 1e9 / cpu as f64);
    (rate, now)
}

/// What a failed `sigaction` tells the user.
fn sigaction_message(e: SigactionFailed) -> String {
    format!(
        "sigaction({}) {} failed: {}",
        e.signal,
        e.step,
        std::io::Error::from_raw_os_error(e.errno)
    )
}

/// `fjmethodid` as the resolved walker allows (docs/compatibility.md 5): raw frames need the
/// VM walker, so with AsyncGetCallTrace every mode preloads. `lazy` also needs what
/// `lazy::prerequisites` checks; without it, it behaves as `false`. Every fallback is a
/// returned warning (logged and written to the recording) and, for `lazy`, the counter
/// `fjmethodid_lazy_fallback`.
fn resolve_id_mode(
    args: &Args,
    walker: WalkerKind,
    jni: *mut JNIEnv,
    warnings: &mut Vec<String>,
) -> FjMethodId {
    match (args.fjmethodid, walker) {
        (FjMethodId::True, _) => FjMethodId::True,
        (mode, WalkerKind::Agct) => {
            warnings.push(format!("fjmethodid={} needs the VMStructs stack walker (cstack=vm); jmethodIDs are preloaded as with fjmethodid=true", mode.name()));
            if mode == FjMethodId::Lazy {
                counters::Counter::LazyFallback.set(1);
            }
            FjMethodId::True
        }
        (FjMethodId::Lazy, WalkerKind::Vm) => {
            match lazy::prerequisites(jni, vm::java_feature_version()) {
                Ok(()) => FjMethodId::Lazy,
                Err(e) => {
                    warnings.push(format!("fjmethodid=lazy is unavailable: {e}; using fjmethodid=false (jmethodIDs only for classes that can unload)"));
                    counters::Counter::LazyFallback.set(1);
                    FjMethodId::False
                }
            }
        }
        (FjMethodId::False, WalkerKind::Vm) => FjMethodId::False,
    }
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

/// The stack walker `cstack` resolves to: `vm`/`vmx` (and `default`) take our VMStructs
/// walker when this JVM's layout, the current-thread lookup and the crash protection are
/// all available; everything else, or a failure of any of those, uses AsyncGetCallTrace.
fn resolve_walker(args: &Args, warnings: &mut Vec<String>) -> WalkerKind {
    if !matches!(args.cstack, CStack::Vm | CStack::Vmx | CStack::Default) {
        return WalkerKind::Agct;
    }
    if !crate::sample::walk::arch::VM_WALKER {
        if args.cstack != CStack::Default {
            warnings.push(format!(
                "cstack={}: the VMStructs walker does not read this architecture's frames; using AsyncGetCallTrace",
                args.cstack_requested
            ));
        }
        return WalkerKind::Agct;
    }
    let ready = safe_access::install()
        .map_err(sigaction_message)
        .and_then(|_| {
            if current_thread::available() {
                Ok(())
            } else {
                Err("the current JavaThread cannot be found from a signal handler".into())
            }
        })
        .and_then(|_| match init_vm_walker() {
            Some(_) => Ok(()),
            None => Err(match vmstructs::missing() {
                [] => "VMStructs are not available".to_string(),
                missing => format!("VMStructs entries missing: {}", missing.join(", ")),
            }),
        });
    match ready {
        Ok(()) => WalkerKind::Vm,
        Err(e) => {
            if args.cstack != CStack::Default {
                warnings.push(format!(
                    "cstack={}: the VMStructs walker is unavailable ({e}); using AsyncGetCallTrace",
                    args.cstack_requested
                ));
            }
            crate::log::info(&format!("VMStructs walker unavailable: {e}"));
            WalkerKind::Agct
        }
    }
}

/// The VM walker, with the thread stacks' guard zones it needs to read stacks plainly.
fn init_vm_walker() -> Option<&'static VmWalker> {
    crate::sample::walk::own_stack::set_guard_zones(crate::sample::walk::own_stack::GuardZones(
        crate::hotspot::vmstructs::flags::stack_guard_bytes(),
    ));
    VmWalker::init(vm::java_feature_version())
}

/// The walker of allocation stacks: ours whenever it can run, whatever `cstack` chose for CPU
/// samples. `cstack` names how signal samples are unwound; upstream takes allocation stacks
/// with JVMTI whatever it says, and AsyncGetCallTrace started from a callback fails on a share
/// of them (the thread's last frame is not always walkable for it). Raw frames it records in
/// the preloading modes are named as in `fjmethodid=false`.
fn allocation_walker(walker: WalkerKind) -> WalkerKind {
    if walker == WalkerKind::Vm {
        return walker;
    }
    let ready = crate::sample::walk::arch::VM_WALKER
        && safe_access::install().is_ok()
        && current_thread::available()
        && init_vm_walker().is_some();
    if ready {
        WalkerKind::Vm
    } else {
        WalkerKind::Agct
    }
}

/// Pool-id base for the next chunk appended to the main file: past every id of the chunks
/// it already holds (see `jfr::pools::Pools`); 0 whenever the file starts empty.
static NEXT_ID_BASE: AtomicU32 = AtomicU32::new(0);

/// Creates (start: truncates) the output file, so a bad path fails before anything runs.
fn open_output(file: &Path, truncate: bool) -> Result<(), Error> {
    if truncate {
        NEXT_ID_BASE.store(0, Ordering::Relaxed);
    }
    let opened = if truncate {
        output::create_empty(file)
    } else {
        // `resume` appends to what is there: only refuse what must not be written.
        output::check_target(file)
    };
    opened.map_err(|e| {
        Error::Io(format!(
            "Could not open output file '{}': {e}",
            file.display()
        ))
    })
}

fn register_current_thread(jni: *mut JNIEnv) {
    let Some(jvmti) = vm::jvmti() else { return };
    let _mem = crate::memory::scope(crate::memory::Category::ThreadInfo);
    if let Some((name, id)) = vm::describe_thread(jvmti, jni, std::ptr::null_mut()) {
        threads::register_java_thread(crate::sample::context::gettid(), name, id);
    }
}

/// Stops sampling and completes the main file.
pub fn stop(jni: *mut JNIEnv) -> Result<(), Error> {
    let mut guard = SESSION.lock();
    let Some(session) = guard.as_mut() else {
        return Err(Error::State("Profiler is not active".into()));
    };
    // Every source the start started, last first: the same unwinding as a failed start's.
    std::mem::replace(&mut session.sources, Sources::new()).stop();
    session.watches_libraries = false;
    let file = session.file.clone();
    // Appended: `start` emptied the file, `dump` restarted it, and `resume` keeps the
    // chunks written before it.
    let result = write_chunk(jni, session, &file, ChunkTarget::Append);
    // The names that last chunk kept for a next dump: there is none in this session.
    crate::methods::lazy::kept::clear();
    *guard = None;
    result
}

/// Writes everything since the previous dump to `path` and restarts the main file.
/// Idle: does nothing. Dumping to the main file itself is ignored, as upstream does.
pub fn dump_to(jni: *mut JNIEnv, path: &Path) -> Result<(), Error> {
    let mut guard = SESSION.lock();
    let Some(session) = guard.as_mut() else {
        return Ok(());
    };
    if same_file(path, &session.file) {
        return Ok(());
    }
    write_chunk(jni, session, path, ChunkTarget::Replace)?;
    open_output(&session.file.clone(), true)
}

/// The OTLP exporter's dump (`JavaProfiler.exportChunk0`): writes everything since the
/// previous dump to `path` as one chunk, like `dump_to`, but leaves the main file as it is and
/// numbers the chunk's pool ids past the main file's chunks, so that the caller can append
/// `path`'s bytes to the main file and keep it one readable recording of the whole session.
/// Idle: does nothing.
pub fn export_chunk_to(jni: *mut JNIEnv, path: &Path) -> Result<(), Error> {
    let mut guard = SESSION.lock();
    let Some(session) = guard.as_mut() else {
        return Ok(());
    };
    if same_file(path, &session.file) {
        return Err(Error::State(
            "the export chunk must not be the recording file".into(),
        ));
    }
    write_chunk(jni, session, path, ChunkTarget::ForMainFile)
}

/// The running session's main file (as `file=` expanded), for the exporter, which appends its
/// chunks to it; `None` while idle.
pub fn recording_file() -> Option<std::path::PathBuf> {
    SESSION.lock().as_ref().map(|s| s.file.clone())
}

/// Where `write_chunk` puts its chunk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ChunkTarget {
    /// Instead of what the file holds (a dump to another file).
    Replace,
    /// After what the file holds (`stop` into the main file).
    Append,
    /// Instead of what the file holds, with pool ids that continue the main file's, for the
    /// caller to append to it (the exporter).
    ForMainFile,
}

/// Whether `a` and `b` name one file (through symbolic or hard links too): by device and
/// inode, two `stat` calls where resolving both paths took one per component.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => a == b,
    }
}

/// Retires the current generation and writes it as one chunk to `path` (see [`ChunkTarget`]).
fn write_chunk(
    jni: *mut JNIEnv,
    session: &mut Session,
    path: &Path,
    target: ChunkTarget,
) -> Result<(), Error> {
    let append = target == ChunkTarget::Append;
    let t0 = Instant::now();
    let recorder =
        handler::recorder().ok_or_else(|| Error::State("profiler buffers missing".into()))?;
    let old = recorder.flip().ok_or_else(|| {
        Error::State(
            "Dump deferred: a signal handler is still inside the buffers of the previous dump; \
             its samples go to the next dump"
                .into(),
        )
    })?;
    let end_nanos = epoch_nanos();
    let end_ticks = handler::ticks();
    let epoch = EPOCH.fetch_add(1, Ordering::AcqRel);
    let (rate, base) = achieved_rate(session.rate_base);
    session.rate_base = base;
    session.cpu_rate = rate;
    if let Some(r) = rate {
        counters::Counter::CpuSamplesPerCpuSecond.set(r.round() as i64);
    }
    let settings = std::mem::take(&mut *PENDING_SETTINGS.lock());
    let traced = crate::tracing::take();
    let allocations = crate::memory::thread_allocations();
    // Libraries loaded since the last scan get their malloc and socket hooks.
    crate::nativemem::rescan();
    crate::natsock::rescan();
    if session.walker != Walker::Asgct || handler::native_top() {
        // Libraries loaded since the last check get their DWARF rules.
        let bytes = crate::eh_frame::refresh();
        counters::Counter::NativeUnwindTableBytes.set(bytes as i64);
    }
    // Chunks that wait for a successful write go first into this file: pool ids keep
    // counting past theirs.
    let continues = target != ChunkTarget::Replace || output::has_unwritten();
    let id_base = if continues {
        NEXT_ID_BASE.load(Ordering::Relaxed)
    } else {
        0
    };
    let end = dump::ChunkEnd {
        ticks: end_ticks,
        nanos: end_nanos,
        id_base,
    };
    let (chunk, next_id_base) = dump::build_chunk(
        jni,
        session,
        recorder.generation(old),
        &settings,
        &traced,
        &end,
    );
    if continues {
        NEXT_ID_BASE.store(next_id_base, Ordering::Relaxed);
    }
    recorder.clear(old);
    crate::methods::lazy::sweep_registry(jni);
    session.chunk_start_nanos = end_nanos;
    session.chunk_start_ticks = end_ticks;
    threads::prune(epoch);
    if !session.watches_libraries {
        session.engine.prune(); // else the library watcher does, about once a second
    }
    counters::Counter::DumpCount.inc();
    counters::Counter::DumpNanosLast.set(t0.elapsed().as_nanos() as i64);
    counters::Counter::DumpAllocationsLast
        .set((crate::memory::thread_allocations() - allocations) as i64);
    let written = output::write(path, &chunk.parts(), append);
    if written.is_err() {
        // The chunk now waits for the next write, into whatever file: ids after it.
        NEXT_ID_BASE.fetch_max(next_id_base, Ordering::Relaxed);
    }
    let written = written.map_err(|e| {
        Error::Io(format!(
            "Could not write recording '{}': {e}",
            path.display()
        ))
    });
    written
}

pub fn status() -> String {
    let session = SESSION.lock();
    let (running, engine, wall) = match session.as_ref() {
        Some(s) => (
            true,
            s.engine.id(),
            s.wall.as_ref().map_or("None", |w| w.name()),
        ),
        None => (false, EngineId::None, "None"),
    };
    let allocations = match session.as_ref().and_then(|s| s.args.memory.as_ref()) {
        Some(m) if m.allocations || m.liveness => "JVMTI SampledObjectAlloc",
        _ => "None",
    };
    let mut out = format!(
        "== Java-Profiler Status ===\n Running          : {running}\n CPU Engine       : {}\n WallClock Engine : {wall}\n Allocations      : {allocations}\n",
        engine.name()
    );
    if let Some(reason) = session
        .as_ref()
        .and_then(|s| s.cpu_engine_fallback.as_ref())
    {
        out.push_str(&format!(" CPU Engine Note  : {reason}\n"));
    }
    if let Some(price) = switch_price::note() {
        out.push_str(&format!(" CPU Engine Price : {price}\n"));
    }
    if let Some(s) = session.as_ref() {
        out.push_str(&handlers::status(signals_in_use(s)));
    }
    if engine == EngineId::PerfEvents {
        let on = crate::engine::perf::kernel_frames_on();
        out.push_str(&format!(" Kernel Frames    : {on}\n"));
    }
    out
}

/// The `status` command: upstream's line, then one per sampling signal another library took
/// from us (`handlers::status`; none while ours are in force).
fn status_line() -> String {
    match SESSION.lock().as_ref() {
        Some(s) => format!(
            "Profiling is running for {} seconds\n{}",
            s.started.elapsed().as_secs(),
            handlers::status(signals_in_use(s))
        ),
        None => "Profiler is not active\n".into(),
    }
}

/// The sampling signals a session uses, whose handlers `handlers` watches.
fn signals_in_use(s: &Session) -> handlers::InUse {
    handlers::InUse {
        cpu: s.args.cpu_interval_ns.is_some(),
        wall: s.wall.is_some(),
    }
}

pub fn record_setting(name: String, value: String, unit: String) {
    PENDING_SETTINGS.lock().push(PendingSetting {
        ticks: handler::ticks(),
        tid: crate::sample::context::gettid() as i64,
        name,
        value,
        unit,
    });
}

pub fn thread_started(tid: i32) {
    if let Some(e) = ENGINE.read().as_ref() {
        e.thread_started(tid);
    }
}

/// A Java thread ends; `named` is its name and Java id as it ends, if they could be read.
pub fn thread_ended(tid: i32, named: Option<(String, i64)>) {
    if let Some(e) = ENGINE.read().as_ref() {
        e.thread_ended(tid);
    }
    crate::sample::wall::forget(tid);
    // A registered thread leaves the wall-clock filter when its Java life ends, not only when
    // its native thread exits later (the context's destructor frees the slot then).
    if let Some(c) = crate::sample::context::current() {
        crate::thread_filter::set(c, false);
    }
    threads::ended(tid, EPOCH.load(Ordering::Acquire), named);
}

/// JVM exit: complete the recording of a running session.
pub fn on_vm_death(jni: *mut JNIEnv) {
    if SESSION.lock().is_some() {
        if let Err(e) = stop(jni) {
            eprintln!("[ddprof] failed to complete the recording at JVM exit: {e}");
        }
    }
}

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
