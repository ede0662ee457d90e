//! Parser for the profiler command string passed to `JavaProfiler.execute`.
//!
//! The grammar is the one of `DataDog/java-profiler` (contract section 3): a comma-separated list of
//! `key[=value]` tokens, keys compared case-insensitively, empty tokens skipped, unknown keys collected
//! for a warning rather than rejected. Values follow upstream's conventions, including its quirks
//! (numbers are read the way C's `strtol` with base 0 reads them, so `0x10` is hex and `010` is octal;
//! each boolean-ish option has its own upstream truth rule). Where ddprof is stricter than upstream
//! (malformed or negative sizes, out-of-range ratios, unknown log levels) the option's doc says so.
//!
//! This module is pure: no I/O, no environment access, no clock. The caller passes the environment
//! lookup, the pid and the current time used by `file=` pattern expansion.

use std::fmt;

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

/// Reason of the error `validate_for_start` returns when nothing would be sampled. Upstream raises
/// it from `Profiler::start`, i.e. as an `IllegalStateException`; see [`ArgError::is_state_error`].
pub const REASON_NO_EVENTS: &str = "No profiling events specified";
/// Reason of the error `validate_for_start` returns when `file=` is missing.
pub const REASON_FILE_REQUIRED: &str = "required for start";

/// Longest `%{NAME}` that `file=` expansion looks up (upstream's 128-byte key buffer).
const MAX_ENV_NAME_LEN: usize = 127;

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
    /// ddprof only: no jmethodID preloading at all (contract section 5).
    Lazy,
}

/// Timer behind CPU sampling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuEngine {
    /// Per-thread CPU timers (`event=cpu`, `event=ctimer`, or just `cpu`).
    CTimer,
    /// Process-wide `setitimer(ITIMER_PROF)` (`event=itimer`).
    ITimer,
}

/// `loglevel=`; names compared case-insensitively as upstream does.
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
    /// Record `datadog.HeapLiveObject` events.
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
    /// `wall=~INTERVAL`: collapse consecutive identical wall samples into one weighted sample.
    pub wall_collapsing: bool,
    pub wall_threads_per_tick: u32,
    /// `wallsampler=j…`: JVMTI wall sampler instead of ASGCT.
    pub wall_sampler_jvmti: bool,
    pub wall_precheck: bool,
    /// `event=` as given, or `"cpu"` when the default-event rule applied. `event=alloc` is never
    /// stored here (it only touches `memory`).
    pub event: Option<String>,
    /// Raw `interval=` (ns, or bytes for a perf event): the CPU interval when `cpu` has no positive
    /// value, and the wall interval when `event=` was given and `wall` has no positive value.
    pub interval: Option<u64>,
    pub memory: Option<Memory>,
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
    /// Set by any `cpu` key: resolve the receiver class of vtable/itable stub frames.
    pub vtable_receiver: bool,
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
    pub ring: Ring,
    /// Unknown keys in order of appearance (the caller warns "Unknown argument: X").
    pub unknown: Vec<String>,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            action: Action::None,
            cpu_interval_ns: None,
            cpu_engine: CpuEngine::CTimer,
            wall_interval_ns: None,
            wall_collapsing: false,
            wall_threads_per_tick: DEFAULT_WALL_THREADS_PER_TICK,
            wall_sampler_jvmti: false,
            wall_precheck: false,
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
            attributes: Vec::new(),
            filter: true,
            file: None,
            jfr_mask: 0,
            log: None,
            loglevel: None,
            nosanity: false,
            walkcompare: false,
            ring: Ring::Any,
            unknown: Vec::new(),
        }
    }
}

/// A rejected command: which option, which value, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgError {
    /// The option key, lower-cased.
    pub option: String,
    /// The value as given; empty for a bare key.
    pub value: String,
    pub reason: String,
}

impl ArgError {
    fn new(option: &str, value: &str, reason: &str) -> ArgError {
        ArgError {
            option: option.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        }
    }

    /// True for the two start-time checks (no events, no file). Upstream detects these in
    /// `Profiler::start`, after "Profiler already started", and raises `IllegalStateException`;
    /// every other `ArgError` is a parse error (`IllegalArgumentException`).
    #[must_use]
    pub fn is_state_error(&self) -> bool {
        (self.option == "event" && self.reason == REASON_NO_EVENTS)
            || (self.option == "file" && self.reason == REASON_FILE_REQUIRED)
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Invalid value for option '{}': '{}' ({})",
            self.option, self.value, self.reason
        )
    }
}

impl std::error::Error for ArgError {}

/// Parses `command`; for `start` / `resume` also checks that something would be sampled and that
/// `file=` is given (see [`Args::validate_for_start`]).
///
/// `env` looks up environment variables for `%{ENV}`, `pid` replaces `%p`, `now_epoch_secs`
/// replaces `%t` (formatted `yyyyMMdd-HHmmss`, in UTC).
///
/// # Errors
/// An [`ArgError`] naming the first option whose value is rejected, or, for `start` / `resume`,
/// the start-time check that failed.
pub fn parse(
    command: &str,
    env: &dyn Fn(&str) -> Option<String>,
    pid: u32,
    now_epoch_secs: i64,
) -> Result<Args, ArgError> {
    let args = parse_unchecked(command, env, pid, now_epoch_secs)?;
    if matches!(args.action, Action::Start | Action::Resume) {
        args.validate_for_start()?;
    }
    Ok(args)
}

/// Like [`parse`] without the start-time checks, for a caller that wants upstream's order of
/// errors ("Profiler already started" first, then [`Args::validate_for_start`]).
///
/// # Errors
/// An [`ArgError`] naming the first option whose value is rejected.
pub fn parse_unchecked(
    command: &str,
    env: &dyn Fn(&str) -> Option<String>,
    pid: u32,
    now_epoch_secs: i64,
) -> Result<Args, ArgError> {
    let mut args = Args::default();
    // Raw values, resolved once every token is seen (upstream resolves them lazily too, so the
    // order of `cpu`, `interval` and `event` does not matter).
    let mut cpu: Option<u64> = None;
    let mut wall: Option<u64> = None;
    let mut memory_interval: Option<u64> = None;
    let mut record_allocations = false;
    let mut record_liveness = false;
    let mut record_heap_usage = false;
    let mut live_ratio = DEFAULT_LIVE_SAMPLES_RATIO;
    let mut file: Option<&str> = None;

    for token in command.split(',').filter(|t| !t.is_empty()) {
        let (key, value) = match token.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (token, None),
        };
        let option = key.to_ascii_lowercase();
        let opt = option.as_str();
        let raw = value.unwrap_or("");
        let fail = |reason: &str| ArgError::new(opt, raw, reason);

        match opt {
            "start" => args.action = Action::Start,
            "resume" => args.action = Action::Resume,
            "stop" => args.action = Action::Stop,
            "check" => args.action = Action::Check,
            "status" => args.action = Action::Status,
            "list" => args.action = Action::List,
            "version" => args.action = Action::Version,

            "cpu" => {
                cpu =
                    Some(parse_non_negative_units(raw, Units::Time).map_err(|e| fail(e.reason()))?);
                args.vtable_receiver = true;
            }
            "wall" => {
                let number = match raw.strip_prefix('~') {
                    Some(rest) => {
                        args.wall_collapsing = true;
                        rest
                    }
                    None => raw,
                };
                wall = Some(
                    parse_non_negative_units(number, Units::Time).map_err(|e| fail(e.reason()))?,
                );
            }
            "walltpt" => {
                args.wall_threads_per_tick =
                    parse_positive_decimal(value).map_err(|e| fail(e.reason()))?;
            }
            "wallsampler" => {
                if let Some(v) = value {
                    args.wall_sampler_jvmti = first_char_is(v, &['j']);
                }
            }
            "wallprecheck" => {
                args.wall_precheck = match value {
                    None => true,
                    Some(v) => !(v.eq_ignore_ascii_case("false") || v == "0"),
                };
            }
            "event" => match value {
                None | Some("") => return Err(fail("must not be empty")),
                Some(v) if v.eq_ignore_ascii_case("alloc") => {
                    memory_interval.get_or_insert(0);
                }
                Some(v) => {
                    if args.event.is_some() {
                        return Err(fail("duplicate event argument"));
                    }
                    args.event = Some(v.to_string());
                }
            },
            "interval" => {
                let v = match value {
                    None => return Err(fail("must be > 0")),
                    Some(v) => parse_units(v, Units::Universal).map_err(|e| fail(e.reason()))?,
                };
                if v <= 0 {
                    return Err(fail("must be > 0"));
                }
                args.interval = u64::try_from(v).ok();
            }
            "memory" => {
                let (number, flags, ratio) = match value {
                    None => (None, None, None),
                    Some(v) => {
                        let mut parts = v.splitn(3, ':');
                        (parts.next(), parts.next(), parts.next())
                    }
                };
                memory_interval = Some(match number {
                    None => DEFAULT_ALLOC_INTERVAL,
                    Some(n) => {
                        parse_non_negative_units(n, Units::Bytes).map_err(|e| fail(e.reason()))?
                    }
                });
                match flags {
                    // No flags section at all: both allocations and liveness. An empty flags
                    // section (`memory=1m:`) enables neither, as upstream.
                    None => {
                        record_allocations = true;
                        record_liveness = true;
                    }
                    Some(flags) => {
                        if flags.contains('a') {
                            record_allocations = true;
                        }
                        if flags.contains('l') {
                            record_liveness = true;
                        } else if flags.contains('L') {
                            record_liveness = true;
                            record_heap_usage = true;
                        }
                        // The ratio only means something when liveness is tracked; upstream
                        // ignores it otherwise, and so do we (no validation either).
                        if let (true, Some(r)) = (record_liveness, ratio) {
                            live_ratio = parse_ratio(r).map_err(fail)?;
                        }
                    }
                }
            }
            "generations" => {
                args.generations = value.is_some_and(|v| v.eq_ignore_ascii_case("true"));
                if args.generations && memory_interval.unwrap_or(0) == 0 {
                    memory_interval = Some(GENERATIONS_ALLOC_INTERVAL);
                }
            }
            "nativemem" => {
                args.nativemem = Some(
                    parse_non_negative_units(raw, Units::Bytes).map_err(|e| fail(e.reason()))?,
                );
            }
            "natsock" => {
                args.natsock_ns =
                    Some(parse_non_negative_units(raw, Units::Time).map_err(|e| fail(e.reason()))?);
            }
            "cstack" => {
                if let Some(v) = value {
                    args.cstack = parse_cstack(v);
                    args.cstack_requested = v.to_string();
                }
            }
            "jstackdepth" => {
                args.jstackdepth = parse_positive_decimal(value).map_err(|e| fail(e.reason()))?;
            }
            "safemode" => {
                args.safemode = match value {
                    None => SAFEMODE_ALL,
                    Some(v) => parse_u32_c(v).map_err(|e| fail(e.reason()))?,
                };
            }
            "fjmethodid" => {
                if let Some(v) = value {
                    args.fjmethodid = if v.eq_ignore_ascii_case("true") {
                        FjMethodId::True
                    } else if v.eq_ignore_ascii_case("false") {
                        FjMethodId::False
                    } else if v.eq_ignore_ascii_case("lazy") {
                        FjMethodId::Lazy
                    } else {
                        return Err(fail("expected true, false or lazy"));
                    };
                }
            }
            "mcleanup" => args.mcleanup = true_unless_negative(value),
            "remotesym" => args.remotesym = true_unless_negative(value),
            "nosanity" => args.nosanity = true_unless_negative(value),
            "walkcompare" => args.walkcompare = true_unless_negative(value),
            "jvmtistacks" => {
                args.jvmtistacks = value.is_none_or(|v| first_char_is(v, &['y', 't', '1']));
            }
            "lightweight" => {
                // A bare `lightweight` changes nothing (upstream); only y… / t… turn it on.
                if let Some(v) = value {
                    args.lightweight = first_char_is(v, &['y', 't']);
                }
            }
            "attributes" => {
                if let Some(v) = value {
                    args.attributes.extend(v.split(';').map(str::to_string));
                }
            }
            "filter" => args.filter = !raw.is_empty(),
            "file" => {
                if raw.is_empty() {
                    return Err(fail("must not be empty"));
                }
                file = Some(raw);
            }
            "jfr" => {
                if let Some(v) = value {
                    args.jfr_mask = parse_u32_c(v).map_err(|e| fail(e.reason()))?;
                }
            }
            "log" => args.log = value.filter(|v| !v.is_empty()).map(str::to_string),
            "loglevel" => {
                if raw.is_empty() {
                    return Err(fail("must not be empty"));
                }
                args.loglevel = Some(
                    LogLevel::parse(raw)
                        .ok_or_else(|| fail("expected TRACE, DEBUG, INFO, WARN, ERROR or NONE"))?,
                );
            }
            "allkernel" => args.ring = Ring::Kernel,
            "alluser" => args.ring = Ring::User,
            _ => args.unknown.push(key.to_string()),
        }
    }

    let explicit_event = args.event.is_some();
    if !explicit_event
        && cpu.is_none()
        && wall.is_none()
        && memory_interval.is_none()
        && args.nativemem.is_none()
    {
        args.event = Some("cpu".to_string());
    }
    let event_kind = args.event.as_deref().map(EventKind::of);

    if event_kind == Some(EventKind::ITimer) {
        args.cpu_engine = CpuEngine::ITimer;
    }
    let cpu_event = matches!(
        event_kind,
        Some(EventKind::Cpu | EventKind::CTimer | EventKind::ITimer)
    );
    if cpu.is_some() || cpu_event {
        args.cpu_interval_ns = Some(match cpu {
            Some(v) if v > 0 => v,
            _ => args.interval.unwrap_or(DEFAULT_CPU_INTERVAL_NS),
        });
    }
    if wall.is_some() || event_kind == Some(EventKind::Wall) {
        args.wall_interval_ns = Some(match wall {
            Some(v) if v > 0 => v,
            // Upstream's wall engine takes `interval` whenever an event was named.
            _ if explicit_event => args.interval.unwrap_or(DEFAULT_WALL_INTERVAL_NS),
            _ => DEFAULT_WALL_INTERVAL_NS,
        });
    }
    args.memory = memory_interval.map(|interval| Memory {
        interval,
        allocations: record_allocations,
        liveness: record_liveness,
        heap_usage: record_heap_usage,
        ratio: live_ratio,
    });
    args.file = file.map(|f| expand_file_pattern(f, env, pid, now_epoch_secs));
    Ok(args)
}

impl Args {
    /// Start-time checks, in upstream's order: something must be sampled, then `file=` must be set.
    /// Both errors are state errors ([`ArgError::is_state_error`]).
    ///
    /// # Errors
    /// `event` / [`REASON_NO_EVENTS`] when [`Args::mode_mask`] is 0, else `file` /
    /// [`REASON_FILE_REQUIRED`] when no output file is set.
    pub fn validate_for_start(&self) -> Result<(), ArgError> {
        if self.mode_mask() == 0 {
            let event = self.event.as_deref().unwrap_or("");
            return Err(ArgError::new("event", event, REASON_NO_EVENTS));
        }
        if self.file.as_deref().is_none_or(str::is_empty) {
            return Err(ArgError::new("file", "", REASON_FILE_REQUIRED));
        }
        Ok(())
    }

    /// The `event=` name when it is none of the built-in engines, i.e. a perf event.
    #[must_use]
    pub fn perf_event(&self) -> Option<&str> {
        self.event
            .as_deref()
            .filter(|e| EventKind::of(e) == EventKind::Perf)
    }

    /// `datadog.DatadogProfilerConfig.modeMask`: `EM_*` bits of what will be sampled.
    /// Zero means a start fails with "No profiling events specified".
    #[must_use]
    pub fn mode_mask(&self) -> u32 {
        let mut mask = 0;
        if self.cpu_interval_ns.is_some() || self.perf_event().is_some() {
            mask |= EM_CPU;
        }
        if self.generations
            || self
                .memory
                .as_ref()
                .is_some_and(|m| m.allocations || m.liveness)
        {
            mask |= EM_ALLOC;
        }
        if self.wall_interval_ns.is_some() {
            mask |= EM_WALL;
        }
        if self.nativemem.is_some() {
            mask |= EM_NATIVEMEM;
        }
        if self.natsock_ns.is_some() {
            mask |= EM_NATIVESOCKET;
        }
        mask
    }

    /// Options that were requested but that the core cannot sample or honour yet, by option name,
    /// for the "accepted but not yet sampled" warning.
    #[must_use]
    pub fn not_yet_sampled(&self) -> Vec<&'static str> {
        let memory_on = self
            .memory
            .as_ref()
            .is_some_and(|m| m.allocations || m.liveness);
        [
            ("wall", self.wall_interval_ns.is_some()),
            ("memory", memory_on),
            ("generations", self.generations),
            ("nativemem", self.nativemem.is_some()),
            ("natsock", self.natsock_ns.is_some()),
            ("jvmtistacks", self.jvmtistacks),
            ("lightweight", self.lightweight),
            ("event", self.perf_event().is_some()),
        ]
        .into_iter()
        .filter_map(|(name, requested)| requested.then_some(name))
        .collect()
    }

    /// `datadog.DatadogProfilerConfig.cpuInterval`: whole milliseconds (truncated, so 100 µs reads
    /// 0), and 0 when CPU sampling is off (upstream's no-op engine reports interval 0).
    #[must_use]
    pub fn cpu_interval_ms(&self) -> i64 {
        ns_to_ms(self.cpu_interval_ns)
    }

    /// `datadog.DatadogProfilerConfig.wallInterval`, with the same rules as `cpu_interval_ms`.
    #[must_use]
    pub fn wall_interval_ms(&self) -> i64 {
        ns_to_ms(self.wall_interval_ns)
    }
}

fn ns_to_ms(ns: Option<u64>) -> i64 {
    ns.map_or(0, |ns| i64::try_from(ns / 1_000_000).unwrap_or(i64::MAX))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventKind {
    Cpu,
    CTimer,
    ITimer,
    Wall,
    Noop,
    Perf,
}

impl EventKind {
    fn of(name: &str) -> EventKind {
        [
            ("cpu", EventKind::Cpu),
            ("ctimer", EventKind::CTimer),
            ("itimer", EventKind::ITimer),
            ("wall", EventKind::Wall),
            ("noop", EventKind::Noop),
        ]
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map_or(EventKind::Perf, |(_, kind)| kind)
    }
}

fn parse_cstack(value: &str) -> CStack {
    [
        CStack::Default,
        CStack::Fp,
        CStack::Dwarf,
        CStack::Lbr,
        CStack::Vm,
        CStack::Vmx,
    ]
    .into_iter()
    .find(|mode| mode.as_str().eq_ignore_ascii_case(value))
    .unwrap_or(CStack::No)
}

/// Upstream's rule for `mcleanup`, `remotesym`, `nosanity`: bare = on; a value starting with
/// n, f or 0 = off; anything else (including empty) = on.
fn true_unless_negative(value: Option<&str>) -> bool {
    value.is_none_or(|v| !first_char_is(v, &['n', 'f', '0']))
}

fn first_char_is(value: &str, choices: &[char]) -> bool {
    value
        .chars()
        .next()
        .is_some_and(|c| choices.contains(&c.to_ascii_lowercase()))
}

fn parse_ratio(value: &str) -> Result<f64, &'static str> {
    let ratio: f64 = value.trim().parse().map_err(|_| "not a number")?;
    if (MIN_LIVE_SAMPLES_RATIO..=MAX_LIVE_SAMPLES_RATIO).contains(&ratio) {
        Ok(ratio)
    } else {
        Err("ratio must be between 0.01 and 1")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Units {
    /// n, u, m, s → ns.
    Time,
    /// b, k, m, g → bytes (powers of 1024).
    Bytes,
    /// `interval`: the time letters plus b, k, g (`m` is milliseconds).
    Universal,
}

impl Units {
    fn multiplier(self, letter: char) -> Option<i64> {
        let time = match letter {
            'n' => Some(1),
            'u' => Some(1_000),
            'm' => Some(1_000_000),
            's' => Some(1_000_000_000),
            _ => None,
        };
        let bytes = match letter {
            'b' => Some(1),
            'k' => Some(1 << 10),
            'm' => Some(1 << 20),
            'g' => Some(1 << 30),
            _ => None,
        };
        match self {
            Units::Time => time,
            Units::Bytes => bytes,
            Units::Universal => time.or(bytes),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NumError {
    Malformed,
    Overflow,
    Negative,
    NotPositive,
    UnknownUnit(Units),
}

impl NumError {
    fn reason(self) -> &'static str {
        match self {
            NumError::Malformed => "not a number",
            NumError::Overflow => "number out of range",
            NumError::Negative => "must be >= 0",
            NumError::NotPositive => "must be > 0",
            NumError::UnknownUnit(Units::Time) => "unknown time unit",
            NumError::UnknownUnit(Units::Bytes) => "unknown size unit",
            NumError::UnknownUnit(Units::Universal) => "unknown unit",
        }
    }
}

/// Reads a leading integer the way C's `strtol` does: optional leading white space and sign, then
/// with `base0` a `0x` prefix for hex or a leading `0` for octal (decimal otherwise). Returns the
/// value and the unread rest. Unlike `strtol`, no digits at all is an error.
fn parse_c_integer(text: &str, base0: bool) -> Result<(i64, &str), NumError> {
    let text = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, text) = if let Some(rest) = text.strip_prefix('-') {
        (true, rest)
    } else {
        (false, text.strip_prefix('+').unwrap_or(text))
    };
    let hex_digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .filter(|rest| rest.starts_with(|c: char| c.is_ascii_hexdigit()));
    let (radix, digits) = match hex_digits {
        Some(rest) if base0 => (16, rest),
        _ if base0 && text.starts_with('0') => (8, text),
        _ => (10, text),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return Err(NumError::Malformed);
    }
    let mut magnitude: i128 = 0;
    for c in digits[..end].chars() {
        let digit = c.to_digit(radix).ok_or(NumError::Malformed)?;
        magnitude = magnitude * i128::from(radix) + i128::from(digit);
        if magnitude > i128::from(i64::MAX) + 1 {
            return Err(NumError::Overflow);
        }
    }
    let value = if negative { -magnitude } else { magnitude };
    let value = i64::try_from(value).map_err(|_| NumError::Overflow)?;
    Ok((value, &digits[end..]))
}

/// A number with an optional unit decided by the first letter after it (case-insensitive; the
/// rest of the word is ignored, so `10ms` and `10msec` agree). An empty value reads 0, as upstream.
fn parse_units(text: &str, units: Units) -> Result<i64, NumError> {
    if text.is_empty() {
        return Ok(0);
    }
    let (value, rest) = parse_c_integer(text, true)?;
    match rest.chars().next() {
        None => Ok(value),
        Some(letter) => {
            let multiplier = units
                .multiplier(letter.to_ascii_lowercase())
                .ok_or(NumError::UnknownUnit(units))?;
            value.checked_mul(multiplier).ok_or(NumError::Overflow)
        }
    }
}

fn parse_non_negative_units(text: &str, units: Units) -> Result<u64, NumError> {
    let value = parse_units(text, units)?;
    u64::try_from(value).map_err(|_| NumError::Negative)
}

/// `walltpt`, `jstackdepth`: a decimal integer in `1..=i32::MAX`; bare is an error.
fn parse_positive_decimal(value: Option<&str>) -> Result<u32, NumError> {
    let (number, rest) = parse_c_integer(value.ok_or(NumError::NotPositive)?, false)?;
    if !rest.is_empty() {
        return Err(NumError::Malformed);
    }
    if number <= 0 {
        return Err(NumError::NotPositive);
    }
    i32::try_from(number)
        .map(i32::unsigned_abs)
        .map_err(|_| NumError::Overflow)
}

/// `safemode`, `jfr`: a C integer (hex / octal accepted) in `0..=u32::MAX`.
fn parse_u32_c(value: &str) -> Result<u32, NumError> {
    let (number, rest) = parse_c_integer(value, true)?;
    if !rest.is_empty() {
        return Err(NumError::Malformed);
    }
    if number < 0 {
        return Err(NumError::Negative);
    }
    u32::try_from(number).map_err(|_| NumError::Overflow)
}

/// Expands `%p` (pid), `%t` (`yyyyMMdd-HHmmss`, UTC) and `%{NAME}` (environment). As upstream:
/// `%` before any other character yields that character (`%%` is `%`), a trailing `%` is dropped,
/// and an unset, empty or unterminated `%{NAME}` is kept as `{NAME…` (without the `%`).
fn expand_file_pattern(
    pattern: &str,
    env: &dyn Fn(&str) -> Option<String>,
    pid: u32,
    now_epoch_secs: i64,
) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut rest = pattern;
    while let Some(pos) = rest.find('%') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let Some(c) = after.chars().next() else {
            return out;
        };
        rest = &after[c.len_utf8()..];
        match c {
            'p' => out.push_str(&pid.to_string()),
            't' => out.push_str(&format_timestamp(now_epoch_secs)),
            '{' => {
                let name_end = rest.find('}');
                let value = name_end
                    .filter(|&end| end > 0 && end <= MAX_ENV_NAME_LEN)
                    .and_then(|end| env(&rest[..end]).map(|v| (end, v)));
                match value {
                    Some((end, v)) => {
                        out.push_str(&v);
                        rest = &rest[end + 1..];
                    }
                    None => out.push('{'),
                }
            }
            other => out.push(other),
        }
    }
    out.push_str(rest);
    out
}

/// `yyyyMMdd-HHmmss` of a Unix time, in UTC (upstream uses local time; the format is the same).
fn format_timestamp(epoch_secs: i64) -> String {
    let days = epoch_secs.div_euclid(86_400);
    let secs_of_day = epoch_secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year}{month:02}{day:02}-{:02}{:02}{:02}",
        secs_of_day / 3600,
        secs_of_day % 3600 / 60,
        secs_of_day % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm), in
/// 128-bit arithmetic so that no `i64` input can overflow.
fn civil_from_days(days: i64) -> (i128, i128, i128) {
    let z = i128::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PID: u32 = 4242;
    const NOW: i64 = 1_700_000_000; // 2023-11-14 22:13:20 UTC

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn test_env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/me".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn ok(command: &str) -> Args {
        match parse(command, &test_env, PID, NOW) {
            Ok(args) => args,
            Err(e) => panic!("{command:?} should parse: {e}"),
        }
    }

    fn err(command: &str) -> ArgError {
        match parse(command, &test_env, PID, NOW) {
            Ok(args) => panic!("{command:?} should fail, got {args:?}"),
            Err(e) => e,
        }
    }

    fn assert_err(command: &str, option: &str, value: &str, reason: &str) {
        let e = err(command);
        assert_eq!(
            (e.option.as_str(), e.value.as_str(), e.reason.as_str()),
            (option, value, reason),
            "for {command:?}"
        );
    }

    /// `option=value` fails, naming the option and the value.
    fn rejects(option: &str, value: &str, reason: &str) {
        assert_err(&format!("{option}={value}"), option, value, reason);
    }

    fn cpu_ns(command: &str) -> Option<u64> {
        ok(command).cpu_interval_ns
    }

    fn memory(command: &str) -> Memory {
        ok(command).memory.expect("memory should be set")
    }

    // ---- defaults, tokens, keys ----

    #[test]
    fn default_args_hold_upstream_defaults() {
        let a = Args::default();
        assert_eq!(a.action, Action::None);
        assert_eq!(a.cpu_interval_ns, None);
        assert_eq!(a.cpu_engine, CpuEngine::CTimer);
        assert_eq!(a.wall_interval_ns, None);
        assert!(!a.wall_collapsing);
        assert_eq!(a.wall_threads_per_tick, 16);
        assert!(!a.wall_sampler_jvmti);
        assert!(!a.wall_precheck);
        assert_eq!(a.event, None);
        assert_eq!(a.interval, None);
        assert_eq!(a.memory, None);
        assert!(!a.generations);
        assert_eq!(a.nativemem, None);
        assert_eq!(a.natsock_ns, None);
        assert_eq!(a.cstack, CStack::Default);
        assert_eq!(a.cstack_requested, "default");
        assert_eq!(a.jstackdepth, 2048);
        assert_eq!(a.safemode, 0);
        assert_eq!(a.fjmethodid, FjMethodId::True);
        assert!(a.mcleanup);
        assert!(!a.lightweight);
        assert!(!a.remotesym);
        assert!(!a.jvmtistacks);
        assert!(!a.vtable_receiver);
        assert!(a.attributes.is_empty());
        assert!(a.filter);
        assert_eq!(a.file, None);
        assert_eq!(a.jfr_mask, 0);
        assert_eq!(a.log, None);
        assert_eq!(a.loglevel, None);
        assert!(!a.nosanity);
        assert_eq!(a.ring, Ring::Any);
        assert!(a.unknown.is_empty());
    }

    #[test]
    fn empty_command_defaults_to_cpu_event() {
        let a = ok("");
        assert_eq!(a.action, Action::None);
        assert_eq!(a.event.as_deref(), Some("cpu"));
        assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
        assert_eq!(a.cpu_engine, CpuEngine::CTimer);
        assert_eq!(a.wall_interval_ns, None);
        assert_eq!(a.mode_mask(), EM_CPU);
    }

    #[test]
    fn empty_tokens_are_ignored() {
        assert_eq!(ok(",,cpu=5ms,,,"), ok("cpu=5ms"));
        assert_eq!(ok(",,,"), ok(""));
    }

    #[test]
    fn keys_are_case_insensitive() {
        let a = ok("START,Cpu=5ms,WALL=~1ms,File=/tmp/x.jfr,CSTACK=vm,JStackDepth=7");
        assert_eq!(a.action, Action::Start);
        assert_eq!(a.cpu_interval_ns, Some(5_000_000));
        assert_eq!(a.wall_interval_ns, Some(1_000_000));
        assert!(a.wall_collapsing);
        assert_eq!(a.file.as_deref(), Some("/tmp/x.jfr"));
        assert_eq!(a.cstack, CStack::Vm);
        assert_eq!(a.jstackdepth, 7);
    }

    #[test]
    fn keys_are_not_trimmed() {
        let a = ok("cpu=1ms, wall=1ms");
        assert_eq!(a.unknown, vec![" wall".to_string()]);
        assert_eq!(a.wall_interval_ns, None);
    }

    #[test]
    fn each_action_key_sets_its_action() {
        assert_eq!(ok("start,file=f").action, Action::Start);
        assert_eq!(ok("resume,file=f").action, Action::Resume);
        assert_eq!(ok("stop").action, Action::Stop);
        assert_eq!(ok("check").action, Action::Check);
        assert_eq!(ok("status").action, Action::Status);
        assert_eq!(ok("list").action, Action::List);
        assert_eq!(ok("version").action, Action::Version);
        assert_eq!(ok("version=full").action, Action::Version);
        assert_eq!(ok("cpu").action, Action::None);
    }

    #[test]
    fn last_action_wins() {
        assert_eq!(ok("start,stop").action, Action::Stop);
        assert_eq!(ok("status,resume,file=f").action, Action::Resume);
    }

    #[test]
    fn unknown_keys_are_collected_in_order() {
        let a = ok("cpu,foo,alloc=512k,Bar=1,=x");
        assert_eq!(a.unknown, vec!["foo", "alloc", "Bar", ""]);
        assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
    }

    // ---- numbers and units ----

    #[test]
    fn time_units_scale_by_first_letter() {
        assert_eq!(cpu_ns("cpu=7"), Some(7));
        assert_eq!(cpu_ns("cpu=7n"), Some(7));
        assert_eq!(cpu_ns("cpu=7ns"), Some(7));
        assert_eq!(cpu_ns("cpu=100us"), Some(100_000));
        assert_eq!(cpu_ns("cpu=100u"), Some(100_000));
        assert_eq!(cpu_ns("cpu=10ms"), Some(10_000_000));
        assert_eq!(cpu_ns("cpu=10msec"), Some(10_000_000));
        assert_eq!(cpu_ns("cpu=2s"), Some(2_000_000_000));
        assert_eq!(cpu_ns("cpu=2seconds"), Some(2_000_000_000));
        assert_eq!(cpu_ns("cpu=3MS"), Some(3_000_000));
        assert_eq!(cpu_ns("cpu=3Us"), Some(3_000));
        assert_eq!(ok("wall=20ms").wall_interval_ns, Some(20_000_000));
        assert_eq!(ok("natsock=100us").natsock_ns, Some(100_000));
        assert_eq!(ok("natsock=1s").natsock_ns, Some(1_000_000_000));
    }

    #[test]
    fn byte_units_scale_by_first_letter() {
        assert_eq!(memory("memory=100").interval, 100);
        assert_eq!(memory("memory=100b").interval, 100);
        assert_eq!(memory("memory=2k").interval, 2048);
        assert_eq!(memory("memory=2kb").interval, 2048);
        assert_eq!(memory("memory=2M").interval, 2 << 20);
        assert_eq!(memory("memory=1g").interval, 1 << 30);
        assert_eq!(ok("nativemem=512").nativemem, Some(512));
        assert_eq!(ok("nativemem=4k").nativemem, Some(4096));
        assert_eq!(ok("nativemem=1m").nativemem, Some(1 << 20));
        assert_eq!(ok("nativemem=1G").nativemem, Some(1 << 30));
    }

    #[test]
    fn interval_accepts_time_and_byte_units() {
        let interval = |v: &str| ok(&format!("interval={v}")).interval;
        assert_eq!(interval("5"), Some(5));
        assert_eq!(interval("5n"), Some(5));
        assert_eq!(interval("5us"), Some(5_000));
        assert_eq!(interval("5ms"), Some(5_000_000)); // m is milliseconds here, not MiB
        assert_eq!(interval("5s"), Some(5_000_000_000));
        assert_eq!(interval("5b"), Some(5));
        assert_eq!(interval("5k"), Some(5 * 1024));
        assert_eq!(interval("5g"), Some(5 << 30));
    }

    #[test]
    fn unknown_time_unit_is_rejected() {
        rejects("cpu", "10xs", "unknown time unit");
        rejects("wall", "5g", "unknown time unit");
        rejects("wall", "~5k", "unknown time unit");
        rejects("natsock", "1k", "unknown time unit");
        rejects("cpu", "10 ms", "unknown time unit");
    }

    #[test]
    fn unknown_size_unit_is_rejected() {
        rejects("memory", "1s", "unknown size unit");
        rejects("memory", "1t:a", "unknown size unit");
        rejects("nativemem", "1u", "unknown size unit");
        rejects("interval", "1t", "unknown unit");
    }

    #[test]
    fn overflowing_interval_is_rejected() {
        assert_eq!(
            cpu_ns("cpu=9223372036854775807"),
            Some(9_223_372_036_854_775_807)
        );
        rejects("cpu", "9223372036854775808", "number out of range");
        rejects("cpu", "99999999999999999999s", "number out of range");
        rejects("cpu", "10000000000s", "number out of range");
        rejects("interval", "9999999999g", "number out of range");
        rejects("memory", "9999999999g", "number out of range");
        rejects("nativemem", "0x7fffffffffffffffk", "number out of range");
        rejects("wall", "-99999999999999999999", "number out of range");
    }

    #[test]
    fn negative_values_are_rejected() {
        rejects("cpu", "-1", "must be >= 0");
        rejects("cpu", "-5ms", "must be >= 0");
        rejects("wall", "-1", "must be >= 0");
        rejects("wall", "~-1", "must be >= 0");
        rejects("nativemem", "-1", "must be >= 0");
        rejects("natsock", "-5ms", "must be >= 0");
        rejects("memory", "-1", "must be >= 0");
        rejects("interval", "-1", "must be > 0");
    }

    #[test]
    fn malformed_numbers_are_rejected() {
        rejects("cpu", "abc", "not a number");
        rejects("cpu", "ms", "not a number");
        rejects("cpu", "-", "not a number");
        rejects("cpu", "+", "not a number");
        rejects("wall", "~~1ms", "not a number");
        rejects("memory", "x:a", "not a number");
        rejects("nativemem", "k", "not a number");
        rejects("natsock", " ", "not a number");
        rejects("interval", "x", "not a number");
    }

    #[test]
    fn numbers_follow_strtol_base_zero() {
        assert_eq!(cpu_ns("cpu=0x10"), Some(16));
        assert_eq!(cpu_ns("cpu=0X10us"), Some(16_000));
        assert_eq!(cpu_ns("cpu=010"), Some(8)); // leading 0 = octal, as upstream
        assert_eq!(cpu_ns("cpu=010ms"), Some(8_000_000));
        rejects("cpu", "08ms", "unknown time unit");
        rejects("cpu", "0x", "unknown time unit");
        // b is a hex digit, so no byte unit is read after a hex number ending in b.
        assert_eq!(memory("memory=0x1b").interval, 0x1b);
        assert_eq!(cpu_ns("cpu= \t5ms"), Some(5_000_000));
        assert_eq!(cpu_ns("cpu=+5ms"), Some(5_000_000));
    }

    #[test]
    fn empty_number_reads_zero() {
        assert_eq!(cpu_ns("cpu="), Some(DEFAULT_CPU_INTERVAL_NS));
        assert_eq!(ok("wall=").wall_interval_ns, Some(DEFAULT_WALL_INTERVAL_NS));
        assert_eq!(memory("memory=").interval, 0);
        assert_eq!(ok("nativemem=").nativemem, Some(0));
        assert_eq!(ok("natsock=").natsock_ns, Some(0));
        rejects("interval", "", "must be > 0");
    }

    // ---- cpu / interval / event ----

    #[test]
    fn bare_cpu_or_cpu_zero_uses_default_interval() {
        assert_eq!(cpu_ns("cpu"), Some(DEFAULT_CPU_INTERVAL_NS));
        assert_eq!(cpu_ns("cpu=0"), Some(DEFAULT_CPU_INTERVAL_NS));
        assert_eq!(cpu_ns("cpu=0ms"), Some(DEFAULT_CPU_INTERVAL_NS));
    }

    #[test]
    fn cpu_key_enables_vtable_receiver() {
        assert!(ok("cpu").vtable_receiver);
        assert!(ok("cpu=1ms").vtable_receiver);
        assert!(!ok("event=cpu").vtable_receiver);
        assert!(!ok("").vtable_receiver);
    }

    #[test]
    fn interval_applies_when_cpu_has_no_positive_value() {
        assert_eq!(cpu_ns("cpu,interval=2ms"), Some(2_000_000));
        assert_eq!(cpu_ns("interval=2ms,cpu=0"), Some(2_000_000));
        assert_eq!(cpu_ns("interval=2ms"), Some(2_000_000)); // default event cpu
        assert_eq!(cpu_ns("event=itimer,interval=3ms"), Some(3_000_000));
        assert_eq!(cpu_ns("cpu=7ms,interval=2ms"), Some(7_000_000));
        assert_eq!(cpu_ns("interval=2ms,cpu=7ms"), Some(7_000_000));
    }

    #[test]
    fn interval_must_be_positive() {
        assert_err("interval", "interval", "", "must be > 0");
        rejects("interval", "0", "must be > 0");
        rejects("interval", "0ms", "must be > 0");
        rejects("interval", "-5", "must be > 0");
    }

    #[test]
    fn cpu_events_select_engine() {
        let a = ok("event=cpu");
        assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
        assert_eq!(a.cpu_engine, CpuEngine::CTimer);
        let a = ok("event=ctimer");
        assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
        assert_eq!(a.cpu_engine, CpuEngine::CTimer);
        let a = ok("event=itimer");
        assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
        assert_eq!(a.cpu_engine, CpuEngine::ITimer);
        assert_eq!(a.event.as_deref(), Some("itimer"));
        let a = ok("cpu=1ms,event=ctimer");
        assert_eq!(a.cpu_interval_ns, Some(1_000_000));
        assert_eq!(ok("event=ITIMER").cpu_engine, CpuEngine::ITimer);
    }

    #[test]
    fn event_wall_enables_wall_only() {
        let a = ok("event=wall");
        assert_eq!(a.cpu_interval_ns, None);
        assert_eq!(a.wall_interval_ns, Some(DEFAULT_WALL_INTERVAL_NS));
        assert_eq!(a.mode_mask(), EM_WALL);
        assert_eq!(
            ok("event=wall,interval=20ms").wall_interval_ns,
            Some(20_000_000)
        );
    }

    #[test]
    fn wall_takes_interval_only_when_an_event_is_named() {
        assert_eq!(
            ok("event=cpu,interval=5ms,wall").wall_interval_ns,
            Some(5_000_000)
        );
        assert_eq!(
            ok("cpu,interval=5ms,wall").wall_interval_ns,
            Some(DEFAULT_WALL_INTERVAL_NS)
        );
        // An explicit positive wall interval always wins (upstream would take `interval` here).
        assert_eq!(
            ok("event=cpu,interval=5ms,wall=7ms").wall_interval_ns,
            Some(7_000_000)
        );
    }

    #[test]
    fn event_noop_and_perf_events() {
        let a = ok("event=noop");
        assert_eq!(a.cpu_interval_ns, None);
        assert_eq!(a.mode_mask(), 0);
        let a = ok("event=cache-misses,interval=1000");
        assert_eq!(a.perf_event(), Some("cache-misses"));
        assert_eq!(a.cpu_interval_ns, None);
        assert_eq!(a.interval, Some(1000));
        assert_eq!(a.mode_mask(), EM_CPU);
        assert_eq!(a.not_yet_sampled(), vec!["event"]);
        assert_eq!(ok("event=cpu").perf_event(), None);
    }

    #[test]
    fn event_must_not_be_empty_or_duplicated() {
        assert_err("event", "event", "", "must not be empty");
        rejects("event", "", "must not be empty");
        assert_err(
            "event=cpu,event=wall",
            "event",
            "wall",
            "duplicate event argument",
        );
        // alloc is not an event of its own, so it never counts as a duplicate.
        assert_eq!(ok("event=cpu,event=alloc").event.as_deref(), Some("cpu"));
        assert_eq!(ok("event=alloc,event=cpu").event.as_deref(), Some("cpu"));
    }

    #[test]
    fn event_alloc_only_sets_memory_interval() {
        let a = parse("event=alloc", &no_env, PID, NOW).unwrap();
        assert_eq!(a.event, None);
        assert_eq!(a.cpu_interval_ns, None);
        assert_eq!(
            a.memory,
            Some(Memory {
                interval: 0,
                allocations: false,
                liveness: false,
                heap_usage: false,
                ratio: DEFAULT_LIVE_SAMPLES_RATIO,
            })
        );
        assert_eq!(a.mode_mask(), 0);
        // An earlier memory interval is kept.
        assert_eq!(memory("memory=1m,event=alloc").interval, 1 << 20);
        assert!(memory("memory=1m,event=alloc").allocations);
    }

    #[test]
    fn event_alloc_alone_fails_start_with_no_events() {
        let e = err("start,event=alloc,file=/tmp/x.jfr");
        assert_eq!(e.option, "event");
        assert_eq!(e.reason, REASON_NO_EVENTS);
        assert!(e.is_state_error());
        assert!(e.to_string().contains("No profiling events specified"));
        assert_eq!(err("resume,event=noop,file=f").reason, REASON_NO_EVENTS);
        // Not at parse time for other actions.
        assert_eq!(ok("event=alloc").action, Action::None);
        assert_eq!(ok("check,event=alloc").action, Action::Check);
        // Something else enabled: fine.
        assert!(ok("start,event=alloc,cpu,file=f").cpu_interval_ns.is_some());
    }

    #[test]
    fn default_event_is_cpu_only_when_nothing_is_enabled() {
        assert_eq!(ok("wall").cpu_interval_ns, None);
        assert_eq!(ok("memory").cpu_interval_ns, None);
        assert_eq!(ok("nativemem").cpu_interval_ns, None);
        assert_eq!(ok("event=alloc").cpu_interval_ns, None);
        assert_eq!(ok("generations=true").cpu_interval_ns, None);
        // natsock is not part of upstream's rule, so CPU sampling comes with it.
        let a = ok("natsock");
        assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
        assert_eq!(a.event.as_deref(), Some("cpu"));
        assert_eq!(a.mode_mask(), EM_CPU | EM_NATIVESOCKET);
    }

    // ---- wall ----

    #[test]
    fn wall_options() {
        let a = ok("wall");
        assert_eq!(a.wall_interval_ns, Some(DEFAULT_WALL_INTERVAL_NS));
        assert!(!a.wall_collapsing);
        assert_eq!(
            ok("wall=0").wall_interval_ns,
            Some(DEFAULT_WALL_INTERVAL_NS)
        );
        let a = ok("wall=~");
        assert!(a.wall_collapsing);
        assert_eq!(a.wall_interval_ns, Some(DEFAULT_WALL_INTERVAL_NS));
        let a = ok("wall=~10ms");
        assert!(a.wall_collapsing);
        assert_eq!(a.wall_interval_ns, Some(10_000_000));
        // Collapsing sticks once requested, as upstream.
        assert!(ok("wall=~1ms,wall=2ms").wall_collapsing);
    }

    #[test]
    fn walltpt_must_be_a_positive_integer() {
        assert_eq!(ok("walltpt=4").wall_threads_per_tick, 4);
        assert_eq!(
            ok("walltpt=2147483647").wall_threads_per_tick,
            2_147_483_647
        );
        assert_err("walltpt", "walltpt", "", "must be > 0");
        rejects("walltpt", "0", "must be > 0");
        rejects("walltpt", "-3", "must be > 0");
        rejects("walltpt", "abc", "not a number");
        rejects("walltpt", "4x", "not a number");
        rejects("walltpt", "2147483648", "number out of range");
    }

    #[test]
    fn wallsampler_picks_jvmti_by_first_letter() {
        assert!(ok("wallsampler=jvmti").wall_sampler_jvmti);
        assert!(ok("wallsampler=j").wall_sampler_jvmti);
        assert!(ok("wallsampler=JVMTI").wall_sampler_jvmti);
        assert!(!ok("wallsampler=asgct").wall_sampler_jvmti);
        assert!(!ok("wallsampler=other").wall_sampler_jvmti);
        assert!(!ok("wallsampler=").wall_sampler_jvmti);
        assert!(ok("wallsampler=jvmti,wallsampler").wall_sampler_jvmti);
    }

    #[test]
    fn wallprecheck_is_off_only_for_false_or_zero() {
        assert!(!ok("").wall_precheck);
        assert!(ok("wallprecheck").wall_precheck);
        assert!(ok("wallprecheck=true").wall_precheck);
        assert!(!ok("wallprecheck=false").wall_precheck);
        assert!(!ok("wallprecheck=FALSE").wall_precheck);
        assert!(!ok("wallprecheck=0").wall_precheck);
        assert!(ok("wallprecheck=no").wall_precheck); // upstream quirk
    }

    // ---- memory, generations, nativemem, natsock ----

    #[test]
    fn bare_memory_samples_allocations_and_liveness() {
        assert_eq!(
            memory("memory"),
            Memory {
                interval: DEFAULT_ALLOC_INTERVAL,
                allocations: true,
                liveness: true,
                heap_usage: false,
                ratio: DEFAULT_LIVE_SAMPLES_RATIO,
            }
        );
        let m = memory("memory=1m");
        assert!(m.allocations && m.liveness && !m.heap_usage);
        assert_eq!(ok("memory").mode_mask(), EM_ALLOC);
    }

    #[test]
    fn memory_flags_select_what_is_recorded() {
        let flags = |cmd: &str| {
            let m = memory(cmd);
            (m.allocations, m.liveness, m.heap_usage)
        };
        assert_eq!(flags("memory=1m:a"), (true, false, false));
        assert_eq!(flags("memory=1m:l"), (false, true, false));
        assert_eq!(flags("memory=256:L"), (false, true, true));
        assert_eq!(flags("memory=1m:al"), (true, true, false));
        assert_eq!(flags("memory=1m:aL"), (true, true, true));
        assert_eq!(flags("memory=1m:lL"), (false, true, false)); // l wins, as upstream
        assert_eq!(flags("memory=1m:"), (false, false, false)); // empty flags: nothing
        assert_eq!(flags("memory=1m:x"), (false, false, false));
        assert_eq!(memory("memory=:a").interval, 0);
        // Flags accumulate over repeated memory keys, as upstream.
        assert_eq!(flags("memory=1m:a,memory=2m:l"), (true, true, false));
        assert_eq!(memory("memory=1m:a,memory=2m:l").interval, 2 << 20);
    }

    #[test]
    fn memory_ratio_must_be_within_bounds() {
        assert_eq!(memory("memory=524288:L:0.5").ratio, 0.5);
        assert_eq!(memory("memory=1m:l:0.01").ratio, 0.01);
        assert_eq!(memory("memory=1m:l:1").ratio, 1.0);
        assert_eq!(memory("memory=1m:al:1.0").ratio, 1.0);
        rejects("memory", "1m:l:0", "ratio must be between 0.01 and 1");
        rejects("memory", "1m:l:0.001", "ratio must be between 0.01 and 1");
        rejects("memory", "1m:L:1.5", "ratio must be between 0.01 and 1");
        rejects("memory", "1m:l:-0.5", "ratio must be between 0.01 and 1");
        rejects("memory", "1m:l:abc", "not a number");
        rejects("memory", "1m:l:", "not a number");
        rejects("memory", "1m:l:NaN", "ratio must be between 0.01 and 1");
        rejects("memory", "1m:l:inf", "ratio must be between 0.01 and 1");
    }

    #[test]
    fn memory_ratio_is_ignored_without_liveness() {
        let m = memory("memory=1m:a:7");
        assert!(m.allocations && !m.liveness);
        assert_eq!(m.ratio, DEFAULT_LIVE_SAMPLES_RATIO);
        // Upstream's own doc example: the third section is "L:0.1", the flags are just "a".
        let m = memory("memory=1048576:a:L:0.1");
        assert_eq!(
            (m.interval, m.allocations, m.liveness),
            (1_048_576, true, false)
        );
    }

    #[test]
    fn generations_true_tracks_generations_with_conservative_interval() {
        let a = ok("generations=true");
        assert!(a.generations);
        assert_eq!(
            a.memory,
            Some(Memory {
                interval: GENERATIONS_ALLOC_INTERVAL,
                allocations: false,
                liveness: false,
                heap_usage: false,
                ratio: DEFAULT_LIVE_SAMPLES_RATIO,
            })
        );
        assert_eq!(a.mode_mask(), EM_ALLOC);
        assert!(ok("generations=TRUE").generations);
        // An interval set before is kept; one set after replaces the 4 MiB.
        assert_eq!(memory("memory=128,generations=true").interval, 128);
        assert_eq!(memory("generations=true,memory=128").interval, 128);
        assert_eq!(
            memory("memory=0,generations=true").interval,
            GENERATIONS_ALLOC_INTERVAL
        );
        assert_eq!(
            memory("event=alloc,generations=true").interval,
            GENERATIONS_ALLOC_INTERVAL
        );
    }

    #[test]
    fn generations_needs_the_value_true() {
        assert!(!ok("generations").generations);
        assert_eq!(ok("generations").memory, None);
        assert!(!ok("generations=yes").generations);
        assert!(!ok("generations=1").generations);
        assert!(!ok("generations=true,generations=false").generations);
    }

    #[test]
    fn nativemem_options() {
        assert_eq!(ok("nativemem").nativemem, Some(0));
        assert_eq!(ok("nativemem=0").nativemem, Some(0));
        assert_eq!(ok("nativemem=512").nativemem, Some(512));
        assert_eq!(ok("nativemem").mode_mask(), EM_NATIVEMEM);
    }

    #[test]
    fn natsock_options() {
        assert_eq!(ok("natsock").natsock_ns, Some(0));
        assert_eq!(ok("natsock=0").natsock_ns, Some(0));
        assert_eq!(ok("natsock=100us").natsock_ns, Some(100_000));
        assert_eq!(ok("cpu").natsock_ns, None);
    }

    // ---- stacks and methods ----

    #[test]
    fn cstack_modes_parse_and_echo_the_request() {
        let mode = |v: &str| ok(&format!("cstack={v}")).cstack;
        assert_eq!(mode("fp"), CStack::Fp);
        assert_eq!(mode("dwarf"), CStack::Dwarf);
        assert_eq!(mode("lbr"), CStack::Lbr);
        assert_eq!(mode("vm"), CStack::Vm);
        assert_eq!(mode("vmx"), CStack::Vmx);
        assert_eq!(mode("no"), CStack::No);
        assert_eq!(mode("default"), CStack::Default);
        assert_eq!(mode("VM"), CStack::Vm);
        assert_eq!(mode("bogus"), CStack::No);
        assert_eq!(mode(""), CStack::No);
        assert_eq!(ok("cstack=VMX").cstack_requested, "VMX");
        assert_eq!(ok("cstack=bogus").cstack_requested, "bogus");
        assert_eq!(ok("cstack=").cstack_requested, "");
        assert_eq!(ok("cpu").cstack_requested, "default");
        // A bare key changes nothing.
        let a = ok("cstack=fp,cstack");
        assert_eq!((a.cstack, a.cstack_requested.as_str()), (CStack::Fp, "fp"));
    }

    #[test]
    fn cstack_names_round_trip() {
        for mode in [
            CStack::Default,
            CStack::No,
            CStack::Fp,
            CStack::Dwarf,
            CStack::Lbr,
            CStack::Vm,
            CStack::Vmx,
        ] {
            assert_eq!(parse_cstack(mode.as_str()), mode);
        }
    }

    #[test]
    fn jstackdepth_must_be_a_positive_integer() {
        assert_eq!(ok("jstackdepth=64").jstackdepth, 64);
        assert_eq!(ok("jstackdepth=+64").jstackdepth, 64);
        assert_err("jstackdepth", "jstackdepth", "", "must be > 0");
        rejects("jstackdepth", "0", "must be > 0");
        rejects("jstackdepth", "-1", "must be > 0");
        rejects("jstackdepth", "", "not a number");
        rejects("jstackdepth", "abc", "not a number");
        rejects("jstackdepth", "0x10", "not a number");
        rejects("jstackdepth", "99999999999", "number out of range");
    }

    #[test]
    fn safemode_bits() {
        assert_eq!(ok("safemode").safemode, SAFEMODE_ALL);
        assert_eq!(ok("safemode=0").safemode, 0);
        assert_eq!(ok("safemode=7").safemode, 7);
        assert_eq!(ok("safemode=0x1f").safemode, 31);
        assert_eq!(ok("safemode=4294967295").safemode, u32::MAX);
        rejects("safemode", "x", "not a number");
        rejects("safemode", "7x", "not a number");
        rejects("safemode", "-1", "must be >= 0");
        rejects("safemode", "4294967296", "number out of range");
    }

    #[test]
    fn fjmethodid_accepts_true_false_lazy() {
        assert_eq!(ok("").fjmethodid, FjMethodId::True);
        assert_eq!(ok("fjmethodid=true").fjmethodid, FjMethodId::True);
        assert_eq!(ok("fjmethodid=false").fjmethodid, FjMethodId::False);
        assert_eq!(ok("fjmethodid=lazy").fjmethodid, FjMethodId::Lazy);
        assert_eq!(ok("fjmethodid=LAZY").fjmethodid, FjMethodId::Lazy);
        assert_eq!(ok("fjmethodid=False").fjmethodid, FjMethodId::False);
        assert_eq!(
            ok("fjmethodid=false,fjmethodid").fjmethodid,
            FjMethodId::False
        );
        rejects("fjmethodid", "yes", "expected true, false or lazy");
        rejects("fjmethodid", "", "expected true, false or lazy");
        rejects("fjmethodid", "1", "expected true, false or lazy");
    }

    // ---- booleans ----

    #[test]
    fn mcleanup_remotesym_nosanity_are_off_only_for_n_f_0() {
        type Get = fn(&Args) -> bool;
        let cases: [(&str, Get, bool); 3] = [
            ("mcleanup", |a| a.mcleanup, true),
            ("remotesym", |a| a.remotesym, false),
            ("nosanity", |a| a.nosanity, false),
        ];
        for (key, get, default) in cases {
            assert_eq!(get(&ok("")), default, "{key} default");
            assert!(get(&ok(key)), "bare {key}");
            for on in ["true", "yes", "1", "on", "off", "", "x", "True"] {
                assert!(get(&ok(&format!("{key}={on}"))), "{key}={on}");
            }
            for off in ["false", "no", "0", "f", "n", "FALSE", "No", "nope"] {
                assert!(!get(&ok(&format!("{key}={off}"))), "{key}={off}");
            }
        }
    }

    #[test]
    fn jvmtistacks_is_on_only_for_y_t_1() {
        assert!(!ok("").jvmtistacks);
        assert!(ok("jvmtistacks").jvmtistacks);
        for on in ["true", "yes", "1", "t", "Y", "TRUE"] {
            assert!(ok(&format!("jvmtistacks={on}")).jvmtistacks, "{on}");
        }
        for off in ["false", "no", "0", "", "on", "x"] {
            assert!(!ok(&format!("jvmtistacks={off}")).jvmtistacks, "{off}");
        }
    }

    #[test]
    fn lightweight_needs_a_y_or_t_value() {
        assert!(!ok("lightweight").lightweight);
        assert!(ok("lightweight=yes,lightweight").lightweight); // bare changes nothing
        for on in ["yes", "true", "t", "y", "Yes", "TRUE"] {
            assert!(ok(&format!("lightweight={on}")).lightweight, "{on}");
        }
        for off in ["no", "false", "1", "0", "", "on"] {
            assert!(!ok(&format!("lightweight={off}")).lightweight, "{off}");
        }
    }

    // ---- attributes, filter ----

    #[test]
    fn attributes_split_on_semicolons_and_accumulate() {
        assert_eq!(
            ok("attributes=tag1;tag2;tag3").attributes,
            ["tag1", "tag2", "tag3"]
        );
        assert_eq!(
            ok("attributes=a,attributes=b;c").attributes,
            ["a", "b", "c"]
        );
        assert_eq!(ok("attributes=a;;b").attributes, ["a", "", "b"]);
        assert_eq!(ok("attributes=").attributes, [""]);
        assert!(ok("attributes").attributes.is_empty());
    }

    #[test]
    fn filter_is_on_unless_given_empty() {
        assert!(ok("").filter);
        assert!(ok("filter=0").filter);
        assert!(ok("filter=anything").filter);
        assert!(!ok("filter=").filter);
        assert!(!ok("filter").filter);
        assert!(ok("filter=,filter=1").filter);
    }

    // ---- file ----

    #[test]
    fn file_is_required_for_start_and_resume() {
        assert_err("start", "file", "", REASON_FILE_REQUIRED);
        assert_err("resume,cpu", "file", "", REASON_FILE_REQUIRED);
        assert!(err("start").is_state_error());
        for action in ["stop", "check", "status", "list", "version", "cpu"] {
            assert_eq!(ok(action).file, None, "{action}");
        }
        // A pattern that expands to nothing counts as missing.
        assert_err("start,file=%", "file", "", REASON_FILE_REQUIRED);
        // The events check comes first, as upstream.
        assert_eq!(err("start,event=noop").reason, REASON_NO_EVENTS);
    }

    #[test]
    fn parse_unchecked_skips_start_checks() {
        let a = parse_unchecked("start,event=alloc", &no_env, PID, NOW).unwrap();
        assert_eq!(a.action, Action::Start);
        assert_eq!(a.validate_for_start().unwrap_err().reason, REASON_NO_EVENTS);
        let a = parse_unchecked("start,cpu", &no_env, PID, NOW).unwrap();
        assert_eq!(a.validate_for_start().unwrap_err().option, "file");
        let a = parse_unchecked("start,cpu,file=x", &no_env, PID, NOW).unwrap();
        assert_eq!(a.validate_for_start(), Ok(()));
    }

    #[test]
    fn file_must_not_be_empty() {
        rejects("file", "", "must not be empty");
        assert_err("file", "file", "", "must not be empty");
        assert_err("status,file=", "file", "", "must not be empty");
    }

    #[test]
    fn file_pattern_expands_pid_time_and_env() {
        let file = |v: &str| ok(&format!("file={v}")).file.unwrap();
        assert_eq!(file("/tmp/plain.jfr"), "/tmp/plain.jfr");
        assert_eq!(file("/tmp/p-%p.jfr"), "/tmp/p-4242.jfr");
        assert_eq!(file("/tmp/t-%t.jfr"), "/tmp/t-20231114-221320.jfr");
        assert_eq!(file("%{HOME}/x-%p-%t"), "/home/me/x-4242-20231114-221320");
        assert_eq!(file("a%{EMPTY}b"), "ab");
    }

    #[test]
    fn file_pattern_keeps_upstream_edge_cases() {
        let file = |v: &str| ok(&format!("file={v}")).file.unwrap();
        assert_eq!(file("a%%b"), "a%b");
        assert_eq!(file("a%xb"), "axb");
        assert_eq!(file("a%éb"), "aéb");
        assert_eq!(file("ab%"), "ab");
        assert_eq!(file("%{UNSET}/x"), "{UNSET}/x");
        assert_eq!(file("%{HOME"), "{HOME");
        assert_eq!(file("%{}x"), "{}x");
        let long = "N".repeat(128);
        assert_eq!(file(&format!("%{{{long}}}")), format!("{{{long}}}"));
        let env_127 = |name: &str| (name.len() == 127).then(|| "v".to_string());
        let a = parse(&format!("file=%{{{}}}", "N".repeat(127)), &env_127, 1, 0).unwrap();
        assert_eq!(a.file.as_deref(), Some("v"));
    }

    #[test]
    fn timestamp_is_formatted_like_upstream_in_utc() {
        assert_eq!(format_timestamp(0), "19700101-000000");
        assert_eq!(format_timestamp(-1), "19691231-235959");
        assert_eq!(format_timestamp(951_782_400), "20000229-000000");
        assert_eq!(format_timestamp(NOW), "20231114-221320");
        assert_eq!(format_timestamp(4_102_444_799), "20991231-235959");
        // Extremes must not panic.
        let _ = format_timestamp(i64::MIN);
        let _ = format_timestamp(i64::MAX);
    }

    // ---- jfr, logging, ring ----

    #[test]
    fn jfr_mask_options() {
        assert_eq!(ok("jfr").jfr_mask, 0);
        assert_eq!(ok("jfr=15").jfr_mask, 15);
        assert_eq!(ok("jfr=0x8").jfr_mask, JFR_NO_CPU_LOAD);
        assert_eq!(ok("jfr=3,jfr").jfr_mask, 3);
        rejects("jfr", "abc", "not a number");
        rejects("jfr", "", "not a number");
        rejects("jfr", "-1", "must be >= 0");
    }

    #[test]
    fn log_and_loglevel() {
        assert_eq!(ok("log=/tmp/p.log").log.as_deref(), Some("/tmp/p.log"));
        assert_eq!(ok("log=").log, None);
        assert_eq!(ok("log").log, None);
        let level = |v: &str| ok(&format!("loglevel={v}")).loglevel;
        assert_eq!(level("TRACE"), Some(LogLevel::Trace));
        assert_eq!(level("debug"), Some(LogLevel::Debug));
        assert_eq!(level("Info"), Some(LogLevel::Info));
        assert_eq!(level("warn"), Some(LogLevel::Warn));
        assert_eq!(level("ERROR"), Some(LogLevel::Error));
        assert_eq!(level("none"), Some(LogLevel::None));
        assert_err("loglevel", "loglevel", "", "must not be empty");
        rejects("loglevel", "", "must not be empty");
        rejects(
            "loglevel",
            "warning",
            "expected TRACE, DEBUG, INFO, WARN, ERROR or NONE",
        );
        for l in [
            LogLevel::Trace,
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Warn,
            LogLevel::Error,
            LogLevel::None,
        ] {
            assert_eq!(LogLevel::parse(l.name()), Some(l));
        }
    }

    #[test]
    fn ring_options() {
        assert_eq!(ok("").ring, Ring::Any);
        assert_eq!(ok("allkernel").ring, Ring::Kernel);
        assert_eq!(ok("alluser").ring, Ring::User);
        assert_eq!(ok("allkernel,alluser").ring, Ring::User);
    }

    // ---- derived values ----

    #[test]
    fn config_intervals_are_whole_milliseconds_or_zero() {
        let a = ok("cpu=10ms,wall=~50ms");
        assert_eq!((a.cpu_interval_ms(), a.wall_interval_ms()), (10, 50));
        let a = ok("cpu=100us,wall=1500us");
        assert_eq!((a.cpu_interval_ms(), a.wall_interval_ms()), (0, 1));
        let a = ok("wall");
        assert_eq!((a.cpu_interval_ms(), a.wall_interval_ms()), (0, 50));
        let a = ok("cpu");
        assert_eq!((a.cpu_interval_ms(), a.wall_interval_ms()), (10, 0));
        let a = ok("cpu=9223372036854775807");
        assert_eq!(a.cpu_interval_ms(), 9_223_372_036_854);
    }

    #[test]
    fn mode_mask_combines_enabled_engines() {
        assert_eq!(
            ok("cpu,wall,memory,nativemem,natsock").mode_mask(),
            EM_CPU | EM_ALLOC | EM_WALL | EM_NATIVEMEM | EM_NATIVESOCKET
        );
        assert_eq!(ok("memory=1m:").mode_mask(), 0);
        assert_eq!(ok("memory=1m:L").mode_mask(), EM_ALLOC);
        assert_eq!(
            ok("memory=1m:a").mode_mask() & (EM_LOCK | EM_METHOD_TRACE),
            0
        );
    }

    #[test]
    fn not_yet_sampled_lists_requested_options() {
        assert!(ok("cpu=1ms").not_yet_sampled().is_empty());
        assert!(ok("").not_yet_sampled().is_empty());
        assert_eq!(
            ok("cpu,wall,memory,generations=true,nativemem,natsock,jvmtistacks,lightweight=yes")
                .not_yet_sampled(),
            vec![
                "wall",
                "memory",
                "generations",
                "nativemem",
                "natsock",
                "jvmtistacks",
                "lightweight"
            ]
        );
        assert!(ok("event=alloc,cpu").not_yet_sampled().is_empty());
        assert_eq!(ok("event=wall").not_yet_sampled(), vec!["wall"]);
    }

    #[test]
    fn typical_datadog_command_parses() {
        let a = ok(
            "start,cpu=10ms,wall=~50ms,filter=0,memory=524288:L:0.5,cstack=vm,\
                    attributes=tag1;tag2;tag3,loglevel=warn,file=/tmp/dd-%p.jfr",
        );
        assert_eq!(a.action, Action::Start);
        assert_eq!(a.cpu_interval_ns, Some(10_000_000));
        assert_eq!(a.wall_interval_ns, Some(50_000_000));
        assert!(a.wall_collapsing && a.filter);
        let m = a.memory.as_ref().unwrap();
        assert_eq!(
            (m.interval, m.allocations, m.liveness, m.heap_usage, m.ratio),
            (524_288, false, true, true, 0.5)
        );
        assert_eq!(a.cstack, CStack::Vm);
        assert_eq!(a.attributes.len(), 3);
        assert_eq!(a.loglevel, Some(LogLevel::Warn));
        assert_eq!(a.file.as_deref(), Some("/tmp/dd-4242.jfr"));
        assert_eq!(a.event, None);
        assert!(a.unknown.is_empty());
    }

    // ---- errors ----

    #[test]
    fn error_message_names_option_and_value() {
        let e = err("cpu=10xs");
        assert_eq!(
            e.to_string(),
            "Invalid value for option 'cpu': '10xs' (unknown time unit)"
        );
        let boxed: Box<dyn std::error::Error> = Box::new(e.clone());
        assert_eq!(boxed.to_string(), e.to_string());
        assert!(!e.is_state_error());
        // The option is reported lower-cased, the value as given.
        assert_err("CPU=10Xs", "cpu", "10Xs", "unknown time unit");
    }

    #[test]
    fn first_error_is_reported() {
        assert_eq!(err("cpu=x,wall=y").option, "cpu");
    }

    #[test]
    fn odd_inputs_never_panic() {
        let long_digits = "9".repeat(10_000);
        let inputs: Vec<String> = [
            "",
            ",",
            ",,,",
            "=",
            "==",
            "=x",
            "x=",
            "cpu=",
            "cpu==",
            "cpu=99999999999999999999s",
            "cpu=-9223372036854775808",
            "cpu=-9223372036854775809",
            "cpu=0x",
            "cpu=0xg",
            "cpu=~",
            "wall=~",
            "wall=~~",
            "wall=~-",
            "memory=::::",
            "memory=:",
            "memory=1:l:",
            "memory=1:l:1e400",
            "memory=1:l:-0",
            "memory=é:é:é",
            "cstack=é",
            "é=é",
            "ÉVENT=x",
            "\0",
            "cpu=\0",
            "file=%",
            "file=%{",
            "file=%{é}",
            "file=%é",
            "file=%{}}",
            "start,file=%t",
            "start,file=%{",
            "interval=0x8000000000000000",
            "safemode=-",
            "jfr=0x",
            "walltpt=+",
            "jstackdepth=-0",
            "attributes=;;;",
            "event=alloc,event=alloc",
            "loglevel=\u{1F600}",
            "fjmethodid=\u{1F600}",
            "start,resume,stop,check,status,list,version",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([
            format!("cpu={long_digits}"),
            format!("file=/{}", "%p%t%{HOME}%".repeat(1000)),
            ",".repeat(10_000),
        ])
        .collect();
        for input in &inputs {
            for now in [0, NOW, i64::MIN, i64::MAX] {
                let _ = parse(input, &test_env, u32::MAX, now);
                let _ = parse_unchecked(input, &no_env, 0, now);
            }
        }
        assert!(parse("start,file=%t", &no_env, 1, i64::MIN).is_ok());
    }
}
