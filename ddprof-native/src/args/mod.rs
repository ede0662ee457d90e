//! Parser for the profiler command string passed to `JavaProfiler.execute`.
//!
//! The grammar is upstream java-profiler's: a comma-separated list of `key[=value]` tokens, keys
//! compared case-insensitively, empty tokens skipped, unknown keys collected for a warning rather
//! than rejected. Values follow upstream's conventions, including its quirks (numbers are read the
//! way C's `strtol` with base 0 reads them, so `0x10` is hex and `010` is octal; each boolean-ish
//! option has its own upstream truth rule). Where ddprof is stricter than upstream (malformed or
//! negative sizes, out-of-range ratios, unknown log levels) the option's handler says so.
//!
//! Contract: this module is pure. No I/O, no environment access, no clock, no JVM; the caller
//! passes the environment lookup, the pid and the current time used by `file=` pattern expansion,
//! so every rule here is unit-tested without a JVM.
//!
//! Layout: this file holds the parsed [`Args`] and its enums. `parse` is the token loop over the
//! option table in `options`; the handlers live in one module per topic (`cpu`, `wall`,
//! `memory`, `native`, `stacks`, `methods`, `context`, `output`) and read values with `values`.
//! `derived` holds what a parsed `Args` implies (mode mask, start-time checks), `error` the
//! error type.

mod context;
mod cpu;
mod derived;
mod draft;
mod error;
mod exporter;
mod memory;
mod methods;
mod native;
mod options;
mod output;

pub(crate) use output::format_timestamp;
mod parse;
mod stacks;
mod values;
mod wall;

#[cfg(test)]
mod tests;

pub use error::{ArgError, REASON_FILE_REQUIRED, REASON_NO_EVENTS};
pub use parse::{parse, parse_unchecked};

/// CPU sampling interval used by a bare `cpu`, `cpu=0` or an `event=cpu|ctimer|itimer` (10 ms).
pub const DEFAULT_CPU_INTERVAL_NS: u64 = 10_000_000;
/// Wall-clock sampling interval used by a bare `wall` or `wall=0` (50 ms).
pub const DEFAULT_WALL_INTERVAL_NS: u64 = 50_000_000;
/// Allocation sampling interval used by a bare `memory` (upstream's 512 KiB - 1).
pub const DEFAULT_ALLOC_INTERVAL: u64 = 524_287;
/// Allocation interval that `generations=true` sets when no memory interval is set yet (4 MiB).
pub const GENERATIONS_ALLOC_INTERVAL: u64 = 4 * 1024 * 1024;
/// Threads sampled per wall-clock tick unless `walltpt` says otherwise.
pub const DEFAULT_WALL_THREADS_PER_TICK: u32 = 16;
/// Maximum Java stack depth unless `jstackdepth` says otherwise.
pub const DEFAULT_JSTACKDEPTH: u32 = 2048;
/// Fraction of allocation samples tracked for liveness unless `memory=..:l:RATIO` says otherwise.
pub const DEFAULT_LIVE_SAMPLES_RATIO: f64 = 0.1;
/// Smallest accepted liveness ratio.
pub const MIN_LIVE_SAMPLES_RATIO: f64 = 0.01;
/// Largest accepted liveness ratio.
pub const MAX_LIVE_SAMPLES_RATIO: f64 = 1.0;
/// Value of a bare `safemode`: every recovery technique turned off (upstream's `INT_MAX`).
pub const SAFEMODE_ALL: u32 = i32::MAX as u32;

/// Bits of `datadog.DatadogProfilerConfig.modeMask` (upstream `EventMask`).
pub const EM_CPU: u32 = 1;
/// Allocation / liveness / generations.
pub const EM_ALLOC: u32 = 2;
/// Lock profiling (never enabled by this grammar).
pub const EM_LOCK: u32 = 4;
/// Wall-clock sampling.
pub const EM_WALL: u32 = 8;
/// Native memory (malloc) sampling.
pub const EM_NATIVEMEM: u32 = 16;
/// Method tracing (never enabled by this grammar).
pub const EM_METHOD_TRACE: u32 = 32;
/// Native socket I/O sampling.
pub const EM_NATIVESOCKET: u32 = 64;

/// `jfr=MASK` bits.
pub const JFR_NO_SYSTEM_INFO: u32 = 0x1;
/// Do not write `jdk.InitialSystemProperty` events.
pub const JFR_NO_SYSTEM_PROPS: u32 = 0x2;
/// Do not write `jdk.NativeLibrary` events.
pub const JFR_NO_NATIVE_LIBS: u32 = 0x4;
/// Do not write `jdk.CPULoad` events.
pub const JFR_NO_CPU_LOAD: u32 = 0x8;

/// What `execute` should do. Without an action key the command only configures (`None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    None,
    Start,
    Resume,
    Stop,
    Check,
    Status,
    List,
    Version,
}

/// Native stack walking mode (`cstack=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CStack {
    /// Not requested: resolved at start to `Vm` when `HotSpot` `VMStructs` are usable, else `Dwarf`.
    Default,
    No,
    Fp,
    Dwarf,
    Lbr,
    Vm,
    /// `vm` plus mixed Java/native frames plus carrier frames of virtual threads.
    Vmx,
}

impl CStack {
    /// The mode name upstream writes in the `cstack` `jdk.ActiveSetting` (it writes the mode in
    /// effect after resolution, e.g. `default` resolved to `vm` reads `vm`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CStack::Default => "default",
            CStack::No => "no",
            CStack::Fp => "fp",
            CStack::Dwarf => "dwarf",
            CStack::Lbr => "lbr",
            CStack::Vm => "vm",
            CStack::Vmx => "vmx",
        }
    }
}

/// `fjmethodid=`: when jmethodIDs are created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FjMethodId {
    /// Create all jmethodIDs at class prepare (upstream default).
    True,
    /// Keep raw `Method*` and resolve at dump time (only with the `vm` walker).
    False,
    /// ddprof only (upstream accepts only true / false): no jmethodID preloading; a class's
    /// IDs are made after the first dump that sees it.
    Lazy,
}

impl FjMethodId {
    /// The option value that names it, as the recording states it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            FjMethodId::True => "true",
            FjMethodId::False => "false",
            FjMethodId::Lazy => "lazy",
        }
    }

    /// A byte for an atomic (0 is "none").
    #[must_use]
    pub fn to_raw(self) -> u8 {
        match self {
            FjMethodId::True => 1,
            FjMethodId::False => 2,
            FjMethodId::Lazy => 3,
        }
    }

    /// The mode [`FjMethodId::to_raw`] made `raw` from.
    #[must_use]
    pub fn from_raw(raw: u8) -> Option<FjMethodId> {
        [FjMethodId::True, FjMethodId::False, FjMethodId::Lazy]
            .into_iter()
            .find(|m| m.to_raw() == raw)
    }
}

/// Timer behind CPU sampling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuEngine {
    /// `cpu=INTERVAL` or the default event: per-thread CPU timers where they can deliver the
    /// interval (not finer than the scheduler tick), else perf_events where permitted
    /// (`crate::engine::choice`).
    Auto,
    /// `event=cpu`: perf_events, falling back to ctimer with the reason when refused.
    Perf,
    /// Per-thread CPU timers (`event=ctimer`).
    CTimer,
    /// Process-wide `setitimer(ITIMER_PROF)` (`event=itimer`).
    ITimer,
}

/// `loglevel=`; names compared case-insensitively as upstream does.
/// Where `jitdump` writes `jit-<pid>.dump`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JitDumpDir {
    /// A fresh `java-jit-<date>.XXXXXX` under `$JITDUMPDIR/.debug/jit` (else `$HOME/.debug/jit`),
    /// where perf's own JVMTI agent writes.
    Default,
    /// The directory given (`jitdump=DIR`), relative to the JVM's working directory.
    Dir(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
    None,
}

impl LogLevel {
    /// Upper-case name, as written in the `loglevel` `jdk.ActiveSetting`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Trace => "TRACE",
            LogLevel::Debug => "DEBUG",
            LogLevel::Info => "INFO",
            LogLevel::Warn => "WARN",
            LogLevel::Error => "ERROR",
            LogLevel::None => "NONE",
        }
    }

    /// The level named `value`, case-insensitively (`loglevel=`).
    fn parse(value: &str) -> Option<LogLevel> {
        [
            LogLevel::Trace,
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Warn,
            LogLevel::Error,
            LogLevel::None,
        ]
        .into_iter()
        .find(|level| level.name().eq_ignore_ascii_case(value))
    }
}

/// `allkernel` / `alluser`: which privilege ring perf events count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ring {
    Any,
    Kernel,
    User,
}

/// Allocation / liveness sampling configuration (`memory=`, `event=alloc`, `generations=true`).
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    /// Requested sampling interval in bytes (the sampler floors it at 256 KiB).
    pub interval: u64,
    /// Record `datadog.ObjectSample` events.
    pub allocations: bool,
    /// Record `datadog.HeapLiveObject` events (flag `l` or `L`, or `generations=true`).
    pub liveness: bool,
    /// Record `datadog.HeapUsage` events (flag `L`).
    pub heap_usage: bool,
    /// Fraction of allocation samples tracked for liveness, in [0.01, 1].
    pub ratio: f64,
}

/// The parsed command. `Default` is the state before any token is applied (no default event yet).
#[derive(Clone, Debug, PartialEq)]
pub struct Args {
    pub action: Action,
    /// `None` = CPU sampling off.
    pub cpu_interval_ns: Option<u64>,
    pub cpu_engine: CpuEngine,
    /// `None` = wall-clock sampling off.
    pub wall_interval_ns: Option<u64>,
    /// `wall=~INTERVAL`: a thread whose pc, sp and span ids are unchanged since its previous
    /// wall sample reuses that sample's trace without a walk (still one event per signal,
    /// weight 1).
    pub wall_collapsing: bool,
    pub wall_threads_per_tick: u32,
    /// `wallsampler=j…`: JVMTI wall sampler instead of ASGCT.
    pub wall_sampler_jvmti: bool,
    pub wall_precheck: bool,
    /// `wallidle=false` turns it off (ddprof's own option): a thread whose CPU time did not
    /// advance since its last wall sample is not signalled; that sample is recorded again.
    pub wall_skip_idle: bool,
    /// `event=` as given, or `"cpu"` when the default-event rule applied. `event=alloc` is never
    /// stored here (it only touches `memory`).
    pub event: Option<String>,
    /// Raw `interval=` (ns, or bytes for a perf event): the CPU interval when `cpu` has no positive
    /// value, and the wall interval when `event=` was given and `wall` has no positive value.
    pub interval: Option<u64>,
    pub memory: Option<Memory>,
    /// `generations=true`: live objects are tracked (`Memory::liveness`) and the recording's
    /// config says `gcGenerations`.
    pub generations: bool,
    /// `None` = off; `Some(0)` = every allocation.
    pub nativemem: Option<u64>,
    /// `None` = off; `Some(0)` = the engine's default interval.
    pub natsock_ns: Option<u64>,
    pub cstack: CStack,
    /// The `cstack=` value exactly as given; `"default"` when absent.
    pub cstack_requested: String,
    pub jstackdepth: u32,
    pub safemode: u32,
    pub fjmethodid: FjMethodId,
    pub mcleanup: bool,
    pub lightweight: bool,
    pub remotesym: bool,
    pub jvmtistacks: bool,
    /// Set by any `cpu` key and by `features=vtable`: receiver classes of vtable/itable stub frames.
    pub vtable_receiver: bool,
    /// `perfmap`: write the JIT code map `/tmp/perf-<pid>.map` while running.
    pub perfmap: bool,
    /// `jitdump[=DIR]`: write `jit-<pid>.dump` (perf's jitdump format) while running.
    pub jitdump: Option<JitDumpDir>,
    pub attributes: Vec<String>,
    /// Thread filter on (only wall-clock consults it). Absent = on; `filter` or `filter=` = off.
    pub filter: bool,
    /// After `%p` / `%t` / `%{ENV}` expansion.
    pub file: Option<String>,
    pub jfr_mask: u32,
    pub log: Option<String>,
    pub loglevel: Option<LogLevel>,
    pub nosanity: bool,
    /// ddprof only, a test mode: every sample is walked by both the VM walker and
    /// AsyncGetCallTrace and the `walk_compare_*` counters say how often they agree.
    pub walkcompare: bool,
    /// `jdksamples` (ddprof only): CPU samples also as `jdk.ExecutionSample`
    /// (`profiler/dump`), so that JDK tools and JMC find them.
    pub jdk_samples: bool,
    pub ring: Ring,
    /// Unknown keys in order of appearance (the caller warns "Unknown argument: X").
    pub unknown: Vec<String>,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            action: Action::None,
            cpu_interval_ns: None,
            cpu_engine: CpuEngine::Auto,
            wall_interval_ns: None,
            wall_collapsing: false,
            wall_threads_per_tick: DEFAULT_WALL_THREADS_PER_TICK,
            wall_sampler_jvmti: false,
            wall_precheck: false,
            wall_skip_idle: true,
            event: None,
            interval: None,
            memory: None,
            generations: false,
            nativemem: None,
            natsock_ns: None,
            cstack: CStack::Default,
            cstack_requested: "default".to_string(),
            jstackdepth: DEFAULT_JSTACKDEPTH,
            safemode: 0,
            fjmethodid: FjMethodId::True,
            mcleanup: true,
            lightweight: false,
            remotesym: false,
            jvmtistacks: false,
            vtable_receiver: false,
            perfmap: false,
            jitdump: None,
            attributes: Vec::new(),
            filter: true,
            file: None,
            jfr_mask: 0,
            log: None,
            loglevel: None,
            nosanity: false,
            walkcompare: false,
            jdk_samples: false,
            ring: Ring::Any,
            unknown: Vec::new(),
        }
    }
}
