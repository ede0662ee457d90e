//! The sampling signal handler and the state it reads. Everything reachable from
//! `on_signal` is signal-safe: atomics, preallocated buffers, the walker and the
//! lock-free recorder. The profiler lifecycle (`crate::profiler`) arms and disarms it
//! through the atomics here, naming the engine's [`SignalSource`] so the handler can tell
//! the engine's signals from anyone else's.

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::context::gettid;
use super::frame::Frame;
use super::mode;
use super::record::{self, Context, Event, EventKind};
use super::signal::{self, ErrnoGuard, TIMER_SIGNAL_MAGIC};
use super::traces::Recorder;
use super::vm::current_thread::Lookup;
use super::walk::{agct::Agct, compare, vm::VmWalker, SignalContext, StackWalker, Walk};
use crate::counters::{Counter, Hot, HOT_STRIPES};
use crate::footprint::{Category, Mapped, Zeroable};

/// Deepest stack a walk records; `jstackdepth` is clamped to it.
pub const MAX_DEPTH: usize = 4096;
/// Frame buffers shared by signal handlers; a handler takes one with a try-lock.
const STRIPES: usize = 16;

// Per-generation capacities of the recorder.
const TRACE_SLOTS: usize = 1 << 16;
const TRACE_FRAMES: usize = 1 << 20;
/// Sample records per generation (a chunk's), unless the first start asked for fewer
/// ([`init`]).
pub const SAMPLES: usize = 1 << 18;
/// The fewest sample records a generation may be given.
pub const MIN_SAMPLES: usize = 1 << 10;

/// How an engine's signals are told from anyone else's SIGPROF (`si_code`, `si_value`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SignalSource {
    /// A POSIX timer of ours: `SI_TIMER` carrying [`TIMER_SIGNAL_MAGIC`] (ctimer).
    Timer = 1,
    /// The kernel's interval timer: `SI_KERNEL` (itimer).
    Kernel = 2,
    /// A perf fd of ours: `POLL_IN`/`POLL_HUP` with `si_fd` the fd of the thread's slot
    /// (`super::perf`).
    Perf = 3,
}

static RUNNING: AtomicBool = AtomicBool::new(false);
static SOURCE: AtomicU8 = AtomicU8::new(SignalSource::Timer as u8);
static DEPTH: AtomicUsize = AtomicUsize::new(2048);
static WALKER: AtomicU8 = AtomicU8::new(WalkerKind::Agct as u8);
/// With AsyncGetCallTrace: record the native frames above the top Java frame first, by the
/// VM walker's native unwinding (`cstack=fp|dwarf|lbr`, where the VM walker could be set up).
static NATIVE_TOP: AtomicBool = AtomicBool::new(false);

/// Sets whether AsyncGetCallTrace samples get their native frames above the top Java frame
/// (`VmWalker::native_top`). Not called from signals.
pub fn set_native_top(on: bool) {
    NATIVE_TOP.store(on, Ordering::Relaxed);
}

pub fn native_top() -> bool {
    NATIVE_TOP.load(Ordering::Relaxed)
}
static COMPARE: AtomicBool = AtomicBool::new(false);

#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum WalkerKind {
    Agct = 0,
    Vm = 1,
}

struct Stripe {
    busy: AtomicBool,
    frames: UnsafeCell<[Frame; MAX_DEPTH]>,
}

// SAFETY: an AtomicBool and plain-integer frames are valid when zeroed.
unsafe impl Zeroable for Stripe {}
// SAFETY: a stripe's frames are touched only by the handler holding its `busy` flag.
unsafe impl Sync for Stripe {}

struct State {
    stripes: Mapped<Stripe>,
    recorder: Recorder,
}

static STATE: OnceLock<State> = OnceLock::new();

/// Allocates the handler's buffers (once, outside any signal; `samples` records per
/// generation, clamped to [`MIN_SAMPLES`]..=[`SAMPLES`], taken from the first call only) and
/// installs the handler.
pub fn init(samples: usize) -> Result<&'static Recorder, signal::SigactionFailed> {
    let state = STATE.get_or_init(|| State {
        // Straight into a mapping: 1 MiB would not fit on a JNI thread's stack.
        stripes: Mapped::new(STRIPES, Category::SampleBuffers),
        recorder: Recorder::new(
            TRACE_SLOTS,
            TRACE_FRAMES,
            samples.clamp(MIN_SAMPLES, SAMPLES),
        ),
    });
    signal::install(on_signal)?;
    Ok(&state.recorder)
}

pub fn recorder() -> Option<&'static Recorder> {
    STATE.get().map(|s| &s.recorder)
}

/// Opens the gate: signals from now on are sampled.
/// `compare`: also run AsyncGetCallTrace on every VM-walked sample and count agreement.
pub fn arm(source: SignalSource, walker: WalkerKind, compare: bool, depth: usize) {
    WALKER.store(walker as u8, Ordering::Relaxed);
    COMPARE.store(compare && walker == WalkerKind::Vm, Ordering::Relaxed);
    DEPTH.store(depth.clamp(1, MAX_DEPTH), Ordering::Relaxed);
    SOURCE.store(source as u8, Ordering::Relaxed);
    RUNNING.store(true, Ordering::Release);
}

/// Changes whose signals are sampled (an engine that fell back to another at start).
pub fn set_source(source: SignalSource) {
    SOURCE.store(source as u8, Ordering::Release);
}

/// Waits (bounded, as `disarm`) until no handler is inside the gate, without closing it:
/// an engine that took its fds out of the table closes them only once no handler can
/// still be reading one. False on timeout. Not signal-safe.
pub fn wait_for_handlers() -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(DISARM_WAIT_MS);
    while handlers_in_flight() {
        if std::time::Instant::now() > deadline {
            Counter::HandlerDrainTimeout.inc();
            return false;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    true
}

/// Handlers past the gate check and not yet done, per stripe of threads (`tid % HOT_STRIPES`,
/// as the per-sample counters: handlers on different CPUs then rarely write one cache line):
/// `disarm` waits until every stripe's is 0.
static IN_FLIGHT: [InFlightCount; HOT_STRIPES] =
    [const { InFlightCount(AtomicUsize::new(0)) }; HOT_STRIPES];

#[repr(align(128))]
struct InFlightCount(AtomicUsize);

/// Whether a handler is inside the gate. A handler that passed it before the gate closed
/// counted itself first (SeqCst, see [`InFlight::enter`]), so each stripe read after the close
/// sees it until it leaves.
fn handlers_in_flight() -> bool {
    IN_FLIGHT.iter().any(|c| c.0.load(Ordering::SeqCst) != 0)
}
/// How long `disarm` waits for handlers still recording (a walk takes microseconds).
const DISARM_WAIT_MS: u64 = 200;

/// Closes the gate, then waits (bounded) until no handler that passed it is still
/// recording, so that a stop's last dump sees every sample taken before it. A timeout is
/// counted (`handler_drain_timeout`). Not signal-safe.
pub fn disarm() {
    RUNNING.store(false, Ordering::SeqCst);
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(DISARM_WAIT_MS);
    while handlers_in_flight() {
        if std::time::Instant::now() > deadline {
            Counter::HandlerDrainTimeout.inc();
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

/// Whether a signal came from the armed engine. Signal-safe.
fn owns(code: c_int, value: u64) -> bool {
    match SOURCE.load(Ordering::Relaxed) {
        x if x == SignalSource::Kernel as u8 => code == libc::SI_KERNEL,
        _ => code == libc::SI_TIMER && value == TIMER_SIGNAL_MAGIC,
    }
}

pub(super) fn monotonic_nanos() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime is async-signal-safe; ts is a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec)
}

/// Ticks of event timestamps (CLOCK_MONOTONIC nanoseconds).
pub fn ticks() -> i64 {
    monotonic_nanos()
}
pub const TICKS_PER_SECOND: i64 = 1_000_000_000;

/// The SIGPROF handler. Signal-safe.
#[link_section = sample_path_section!()]
extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let _errno = ErrnoGuard::new();
    // SAFETY: `info` is the kernel's siginfo for this SA_SIGINFO handler.
    let si = unsafe { signal::read_info(info) };
    if SOURCE.load(Ordering::Relaxed) == SignalSource::Perf as u8 {
        on_perf_signal(sig, info, uc, si);
        return;
    }
    if !owns(si.code, si.value) {
        Counter::CtimerSignalForeign.inc();
        signal::chain(sig, info, uc);
        return;
    }
    let tid = gettid();
    Hot::CtimerSignalOwn.inc(tid);
    let gate = InFlight::enter(tid);
    if gate.open() {
        // A per-thread CPU timer fires on the scheduler tick: the expirations the kernel
        // merged into this signal (`si_overrun`) are CPU time this sample stands for.
        if si.overrun > 0 {
            Counter::CtimerOverruns.add(i64::from(si.overrun));
        }
        let uc = SignalContext(uc);
        let thread = Lookup::now();
        let (mode, thread_state) = mode::of_interrupted(uc, thread);
        let sample = Sample {
            kind: EventKind::Cpu,
            weight: 1 + u64::from(si.overrun),
            mode,
            state: thread_state,
            context: Context::of_current_thread(),
            thread,
        };
        walk_and_record_as(uc, &sample, tid);
    }
}

/// A SIGPROF while the perf_events engine is armed. The fd check, the ring's reading (or the
/// fd's `read`) happen inside the gate, so that an engine closing fds (`wait_for_handlers`)
/// never lets a handler read an fd number that was closed and reused, or a ring unmapped.
/// Signal-safe.
fn on_perf_signal(
    sig: c_int,
    info: *mut libc::siginfo_t,
    uc: *mut libc::c_void,
    si: signal::SigInfo,
) {
    let tid = gettid();
    let gate = InFlight::enter(tid);
    let Some((weight, seen)) = super::perf::claim(tid, si.code, si.fd, monotonic_nanos() as u64)
    else {
        drop(gate);
        Counter::CtimerSignalForeign.inc();
        signal::chain(sig, info, uc);
        return;
    };
    Hot::PerfSignalOwn.inc(tid);
    // The kernel frames of this overflow's record (empties what claim saw of the ring even
    // when no sample is taken, so that it never fills).
    let mut kernel = [0u64; KERNEL_DEPTH];
    let kernel_frames = super::perf::kernel_frames(&seen, &mut kernel);
    if weight > 0 && gate.open() {
        let uc = SignalContext(uc);
        let thread = Lookup::now();
        let (mode, thread_state) = mode::of_interrupted(uc, thread);
        let sample = Sample {
            kind: EventKind::Cpu,
            weight,
            mode,
            state: thread_state,
            context: Context::of_current_thread(),
            thread,
        };
        walk_and_record_with(uc, &sample, tid, kernel.get(..kernel_frames).unwrap_or(&[]));
        super::perf::finish(tid, monotonic_nanos() as u64);
    }
}

/// A handler inside the gate, counted in its stripe: `disarm` waits until every one has left.
/// Signal-safe.
pub(super) struct InFlight(&'static AtomicUsize);

impl InFlight {
    /// Enters the gate for thread `tid`.
    pub(super) fn enter(tid: i32) -> InFlight {
        let count = &IN_FLIGHT[tid as u32 as usize % HOT_STRIPES].0;
        // SeqCst pairs with `disarm`: either it sees this handler in flight, or this handler
        // sees the gate closed.
        count.fetch_add(1, Ordering::SeqCst);
        InFlight(count)
    }

    /// Whether sampling is armed.
    pub(super) fn open(&self) -> bool {
        RUNNING.load(Ordering::SeqCst)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

/// What a handler records besides the stack: the event kind, its weight, the thread's mode,
/// state and context; and the thread's JavaThread if the handler looked it up (the VM
/// walker then does not read it again).
pub(super) struct Sample {
    pub kind: EventKind,
    pub weight: u64,
    pub mode: u8,
    pub state: u8,
    pub context: Context,
    pub thread: Lookup,
}

/// Records `s` as a sample of thread `tid` with the trace `trace_id` interned in
/// generation epoch `epoch`, without walking. None when that generation was retired since
/// (walk instead). Signal-safe.
pub(super) fn record_reused(tid: i32, s: &Sample, epoch: u64, trace_id: u32) -> Option<bool> {
    let state = STATE.get()?;
    let event = Event {
        kind: s.kind,
        weight: s.weight,
        ticks: monotonic_nanos(),
        tid,
        context: s.context,
        frames: &[],
        truncated: false,
        mode: s.mode,
        state: s.state,
    };
    let done = record::record_reused(&state.recorder, &event, epoch, trace_id);
    if done == Some(true) {
        Hot::Samples.inc(tid);
    }
    done
}

/// AsyncGetCallTrace's walk below the native frames above the top Java frame (C code a JNI
/// method runs, a leaf call of compiled code), which it cannot see. Signal-safe.
fn with_native_top(uc: SignalContext, agct: &dyn StackWalker, buf: &mut [Frame]) -> Walk {
    let Some(vm) = VmWalker::get() else {
        return agct.walk(uc, buf);
    };
    let (n, java) = vm.native_top(uc, buf);
    if !java || n >= buf.len() {
        return Walk {
            frames: n,
            truncated: java,
        };
    }
    let rest = agct.walk(uc, buf.get_mut(n..).unwrap_or(&mut []));
    Walk {
        frames: n + rest.frames,
        truncated: rest.truncated,
    }
}

/// Kernel frames a perf_events sample keeps at most (the kernel's own default limit,
/// `perf_event_max_stack`, is 127; the deepest syscall paths are about 40).
const KERNEL_DEPTH: usize = 64;

/// Walks and records one sample of the current thread `tid` (the caller's `gettid`, a system
/// call made once per signal). Returns the generation epoch and trace id it was recorded with
/// (None: dropped). Signal-safe.
pub(super) fn walk_and_record_as(uc: SignalContext, s: &Sample, tid: i32) -> Option<(u64, u32)> {
    walk_and_record_with(uc, s, tid, &[])
}

/// [`walk_and_record_as`] with `kernel` (pcs, leaf first) as the trace's first frames:
/// `Kernel` frames above what the walk finds.
#[link_section = sample_path_section!()]
fn walk_and_record_with(
    uc: SignalContext,
    s: &Sample,
    tid: i32,
    kernel: &[u64],
) -> Option<(u64, u32)> {
    let state = STATE.get()?;
    let vm = match WALKER.load(Ordering::Relaxed) {
        x if x == WalkerKind::Vm as u8 => VmWalker::get(),
        _ => None,
    };
    let agct = Agct::loaded();
    let walker: &dyn StackWalker = match (vm, agct) {
        (Some(v), _) => v,
        (None, Some(a)) => a,
        (None, None) => {
            Counter::AgctUnavailable.inc();
            return None;
        }
    };
    let start = monotonic_nanos();
    let first = (tid as usize) % STRIPES;
    let Some(stripe) = state
        .stripes
        .iter()
        .cycle()
        .skip(first)
        .take(STRIPES)
        .find(|s| {
            s.busy
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        })
    else {
        Counter::SamplesDroppedBusy.inc();
        return None;
    };
    // SAFETY: we hold this stripe's busy flag, so no other handler touches its frames.
    let frames = unsafe { &mut *stripe.frames.get() };
    let depth = DEPTH.load(Ordering::Relaxed).min(MAX_DEPTH);
    let compare = COMPARE.load(Ordering::Relaxed) && depth <= MAX_DEPTH / 2;
    let (mine, theirs) = frames.split_at_mut(if compare { MAX_DEPTH / 2 } else { MAX_DEPTH });
    let buf = mine.get_mut(..depth).unwrap_or(&mut []);
    let k = kernel.len().min(buf.len() / 2);
    for (slot, &pc) in buf.iter_mut().zip(kernel.iter().take(k)) {
        *slot = Frame::kernel(pc);
    }
    let buf = buf.get_mut(k..).unwrap_or(&mut []);
    let mut walk = match (vm, NATIVE_TOP.load(Ordering::Relaxed)) {
        (Some(v), _) => v.walk_signal(uc, s.thread, buf),
        (None, true) => with_native_top(uc, walker, buf),
        (None, false) => walker.walk(uc, buf),
    };
    walk.frames += k;
    if compare {
        if let Some(a) = agct {
            let other = a.walk(uc, theirs.get_mut(..depth).unwrap_or(&mut []));
            compare::count(
                mine.get(k..walk.frames).unwrap_or(&[]),
                theirs.get(..other.frames).unwrap_or(&[]),
            );
        }
    }
    let frames = mine;
    if walk.truncated {
        Counter::WalkTruncated.inc();
    }
    let recorded = record::record_traced(
        &state.recorder,
        &Event {
            kind: s.kind,
            weight: s.weight,
            ticks: start,
            tid,
            context: s.context,
            frames: frames.get(..walk.frames).unwrap_or(&[]),
            truncated: walk.truncated,
            mode: s.mode,
            state: s.state,
        },
    );
    stripe.busy.store(false, Ordering::Release);
    if recorded.is_some() {
        Hot::Samples.inc(tid);
    }
    let spent = monotonic_nanos().wrapping_sub(start);
    Hot::UnwindingNanos.add(tid, spent);
    Counter::UnwindingNanosMax.max(spent);
    super::handler_time::record(tid, spent as u64);
    recorded
}

/// What the steps of a sample cost outside the walk, one thread, warm caches: run by hand
/// (`cargo test --release --lib record_step_costs -- --ignored --nocapture`) when working on
/// the handler's cost; it prints, asserts nothing.
#[cfg(test)]
mod cost_tests {
    use super::*;

    /// The best of 5 rounds of `n / 5` calls (the machine may be shared).
    fn per_op(n: u32, mut f: impl FnMut(u32)) -> f64 {
        let round = n / 5;
        (0..5)
            .map(|r| {
                let t = std::time::Instant::now();
                for i in 0..round {
                    f(r * round + i);
                }
                t.elapsed().as_nanos() as f64 / f64::from(round)
            })
            .fold(f64::MAX, f64::min)
    }

    #[test]
    #[ignore]
    fn record_step_costs() {
        let frames: Vec<Frame> = (0..30)
            .map(|d| Frame::java(0x7f00_0000 + d * 64, d as i32, 1))
            .collect();
        let r = Recorder::new(TRACE_SLOTS, TRACE_FRAMES, SAMPLES);
        let ev = |ticks| Event {
            kind: EventKind::Cpu,
            weight: 1,
            ticks,
            tid: 1,
            context: Context::default(),
            frames: &frames,
            truncated: false,
            mode: 1,
            state: 2,
        };
        let n = 100_000;
        let cold = per_op(n, |i| {
            std::hint::black_box(record::record_traced(&r, &ev(i64::from(i))));
        });
        // Both generations' pages touched once, as after the first dumps of a session.
        let a = r.flip().expect("flip");
        per_op(n, |i| {
            std::hint::black_box(record::record_traced(&r, &ev(i64::from(i))));
        });
        r.clear(a);
        let b = r.flip().expect("flip");
        r.clear(b);
        let record = per_op(n, |i| {
            std::hint::black_box(record::record_traced(&r, &ev(i64::from(i))));
        });
        let gen = r.generation(a);
        let intern = per_op(n, |_| {
            std::hint::black_box(gen.traces.insert(&frames, false));
        });
        let clock = per_op(n, |_| {
            std::hint::black_box(monotonic_nanos());
        });
        let tid = per_op(n, |_| {
            std::hint::black_box(gettid());
        });
        let context = per_op(n, |_| {
            std::hint::black_box(Context::of_current_thread());
        });
        let counter = per_op(n, |_| Counter::Samples.inc());
        println!(
            "record_traced (30 frames, hit) {record:.0} ns ({cold:.0} ns on fresh pages), of which interning {intern:.0} ns; clock_gettime {clock:.0} ns; gettid {tid:.0} ns; context {context:.0} ns; counter inc {counter:.1} ns"
        );
    }
}
