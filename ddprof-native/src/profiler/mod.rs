//! The profiler's lifecycle: idle -> running -> (dumps) -> stopped. Start, stop, dump and
//! status run under the session lock (`SESSION`); thread start and end take only `ENGINE`'s
//! read lock, and pending settings and the code maps have locks of their own. The signal
//! handler takes none of them (it reads `sample::handler`'s atomics).

use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use jni::sys::JNIEnv;
use parking_lot::{Mutex, RwLock};

use crate::args::{self, Action};
use crate::counters;
use crate::engine::{Engine, EngineId};
use crate::sample::handler;
use crate::sample::signal::SigactionFailed;
use crate::{log, threads};

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
mod start;
mod switch_price;
mod walkers;

pub use session::{PendingSetting, Session, Walker};
use sources::Sources;

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
        Action::Start | Action::Resume => start::start(jni, args, warnings),
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
    crate::methods::kept_ids::clear();
    crate::methods::ahead_ids::clear();
    crate::methods::native_names::clear();
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
    let allocations = crate::footprint::thread_allocations();
    // Libraries loaded since the last scan get their malloc and socket hooks.
    crate::nativemem::rescan();
    crate::natsock::rescan();
    if session.walker != Walker::Asgct || handler::native_top() {
        // Libraries loaded since the last check get their DWARF rules.
        let bytes = crate::libs::eh_frame::refresh();
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
        .set((crate::footprint::thread_allocations() - allocations) as i64);
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
        crate::context::thread_filter::set(c, false);
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
