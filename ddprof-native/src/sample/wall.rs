//! The wall-clock signal handler. The sampler thread (`crate::engine::wall`, outside the
//! wing) queues SIGVTALRM to the threads it picked, with `si_code` SI_QUEUE and
//! [`WALL_SIGNAL_COOKIE`] as `si_value`; anything else is someone else's and goes to the
//! previous handler. An own signal walks and records through the same path as a CPU sample
//! (`handler::walk_and_record_as`), as a `Wall` event with the thread's OSThread state
//! (`mode::of_wall`).
//!
//! Collapsing (`wall=~`): a thread whose pc, sp, span ids and generation epoch all equal its
//! previous wall sample's gets that sample's trace again without a walk (one event per signal,
//! weight 1; `skipped_wallclock_unwinds`). The previous sample lives in a direct-mapped slot
//! keyed by tid, written only by a handler holding the slot's flag.
//!
//! Idle threads: the slot also keeps the thread's CPU time when its handler finished. The
//! sampler reads the thread's CPU clock before signalling; if it has not advanced (beyond
//! the handler's own return path) since, and that sample found the thread waiting (blocked
//! or in a system call), the thread is still waiting there, so its stack and context are
//! those of the slot, and [`record_idle`] records the slot's trace again, weight 1, from the
//! sampler thread, without a signal (`wallclock_idle_samples`). A sample that found it
//! running is not repeated: a thread can block within the idle allowance of CPU.

//! `wallprecheck` (upstream's unowned-blocked fallback), for threads without a span: of the
//! observations that find the thread blocked (sleeping, parked, waiting, contended), the 1st,
//! 11th, 21st, ... are recorded, each carrying as weight the ones suppressed before it
//! (`wc_unowned_blocked_recorded` / `_suppressed`); the first observation that finds it
//! runnable again first records the pending tail with the blocked sample's trace and state.
//! A thread in an owned blocked run (`block_run`: the park/block hooks said so) is recorded
//! once per run instead, whole, and not again until the run ends.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;

use super::block_run::FilterCell;
use super::context::{self, gettid, MAX_ATTRIBUTES};
use super::handler::{self, InFlight, Sample};
use super::mode;
use super::record::{Context, EventKind};
use super::signal::{self, ErrnoGuard, WALL_SIGNAL_COOKIE};
use super::vm::current_thread::Lookup;
use super::walk::SignalContext;
use crate::counters::Counter;
use crate::footprint::{Category, Mapped, Zeroable};

/// Slots, by tid modulo this (a power of two).
const SLOTS: usize = 1 << 14;

static ARMED: AtomicBool = AtomicBool::new(false);
static COLLAPSING: AtomicBool = AtomicBool::new(false);
/// Keep each thread's last sample for [`record_idle`].
static KEEP_LAST: AtomicBool = AtomicBool::new(false);
static PRECHECK: AtomicBool = AtomicBool::new(false);
/// A CPU engine samples too: count the CPU signals that come while this handler runs.
static CPU_SAMPLED: AtomicBool = AtomicBool::new(false);
/// `wallprecheck`: one blocked observation in this many is recorded.
const UNOWNED_BLOCKED_RATIO: u32 = 10;
static TABLE: OnceLock<Mapped<Slot>> = OnceLock::new();

/// One thread's previous wall sample: what collapsing compares, and what an idle thread's
/// observation records again.
struct Slot {
    busy: AtomicBool,
    /// Owner of the fields below; 0: none.
    tid: AtomicI32,
    pc: AtomicU64,
    sp: AtomicU64,
    span: AtomicU64,
    root: AtomicU64,
    /// Trace id (high, low).
    trace_id: [AtomicU64; 2],
    attrs: [AtomicU32; MAX_ATTRIBUTES],
    mode: AtomicU8,
    state: AtomicU8,
    epoch: AtomicU64,
    /// 0: no trace to reuse.
    trace: AtomicU32,
    /// The thread's CPU time (ns) when the handler finished; 0 unknown.
    cpu_ns: AtomicU64,
    /// `wallprecheck`: blocked observations since the thread was last seen runnable, and
    /// those of them suppressed and not yet carried by a recorded sample.
    decisions: AtomicU32,
    unowned_pending: AtomicU64,
}

// SAFETY: atomics only; zero is a valid, empty slot.
unsafe impl Zeroable for Slot {}

/// Maps the slots and installs the handler (once; outside any signal).
pub fn init() -> Result<(), signal::SigactionFailed> {
    TABLE.get_or_init(|| Mapped::new(SLOTS, Category::SampleBuffers));
    signal::install_wall(on_wall_signal)
}

/// Wall signals from now on are sampled (the recording gate of `handler::arm` must be open
/// too). `collapsing`: reuse the trace of an unchanged stack; `idle`: keep each thread's
/// last sample for [`record_idle`]; `precheck`: thin out blocked spanless threads; `cpu`: a
/// CPU engine runs beside (its signals held by this handler are counted).
pub fn arm(collapsing: bool, idle: bool, precheck: bool, cpu: bool) {
    if let Some(t) = TABLE.get() {
        for slot in t.iter() {
            slot.trace.store(0, Ordering::Relaxed);
            slot.tid.store(0, Ordering::Relaxed);
            slot.decisions.store(0, Ordering::Relaxed);
            slot.unowned_pending.store(0, Ordering::Relaxed);
        }
    }
    COLLAPSING.store(collapsing, Ordering::Relaxed);
    KEEP_LAST.store(idle, Ordering::Relaxed);
    PRECHECK.store(precheck, Ordering::Relaxed);
    CPU_SAMPLED.store(cpu, Ordering::Relaxed);
    ARMED.store(true, Ordering::Release);
}

/// Wall signals still arriving are counted and ignored.
pub fn disarm() {
    ARMED.store(false, Ordering::Release);
}

fn slot_of(tid: i32) -> Option<&'static Slot> {
    TABLE.get()?.get((tid as u32 as usize) & (SLOTS - 1))
}

/// Thread `tid` is ending (JVMTI ThreadEnd): its slot no longer describes anyone, so a later
/// thread with the same tid is never taken for idle with its stack. Not called from a handler.
pub fn forget(tid: i32) {
    let Some(slot) = slot_of(tid) else { return };
    for _ in 0..1000 {
        if slot
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            if slot.tid.load(Ordering::Relaxed) == tid {
                slot.tid.store(0, Ordering::Relaxed);
                slot.trace.store(0, Ordering::Relaxed);
            }
            slot.busy.store(false, Ordering::Release);
            return;
        }
        std::hint::spin_loop();
    }
}

/// The CPU time (ns) `tid` had when its last wall sample's handler finished, if its slot
/// holds a sample that can be recorded again: one that found the thread waiting (blocked or
/// in a system call). A thread sampled running can stop within the few microseconds the idle
/// test allows (a sample caught on its way into a park), so its next observation must look.
pub fn last_sample_cpu_ns(tid: i32) -> Option<u64> {
    let slot = slot_of(tid)?;
    if slot.tid.load(Ordering::Acquire) != tid || slot.trace.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let state = slot.state.load(Ordering::Relaxed);
    if !(is_blocked(state) || state == mode::state::SYSCALL) {
        return None;
    }
    match slot.cpu_ns.load(Ordering::Relaxed) {
        0 => None,
        ns => Some(ns),
    }
}

/// Records `tid`'s last wall sample again (its trace, context, mode and state), weight 1,
/// stamped now: an observation of a thread that ran nothing since. Called by the sampler
/// thread instead of signalling. False when nothing could be recorded (slot busy or taken
/// by another thread, the trace's generation retired by a dump): signal it instead.
pub fn record_idle(tid: i32) -> bool {
    let Some(slot) = slot_of(tid) else {
        return false;
    };
    if slot
        .busy
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return false;
    }
    let trace = slot.trace.load(Ordering::Relaxed);
    let done = if slot.tid.load(Ordering::Relaxed) == tid && trace != 0 {
        let mut context = Context {
            span_id: slot.span.load(Ordering::Relaxed),
            root_span_id: slot.root.load(Ordering::Relaxed),
            trace: (
                slot.trace_id[0].load(Ordering::Relaxed),
                slot.trace_id[1].load(Ordering::Relaxed),
            ),
            attrs: [0; MAX_ATTRIBUTES],
        };
        for (a, s) in context.attrs.iter_mut().zip(slot.attrs.iter()) {
            *a = s.load(Ordering::Relaxed);
        }
        let mut s = Sample {
            kind: EventKind::Wall,
            weight: 1,
            mode: slot.mode.load(Ordering::Relaxed),
            state: slot.state.load(Ordering::Relaxed),
            context,
            thread: Lookup::Later,
        };
        match precheck(slot, tid, &s) {
            // The observation is accounted for: it is weight of a later sample.
            Precheck::Suppress => true,
            Precheck::Record(weight) => {
                s.weight = weight;
                let epoch = slot.epoch.load(Ordering::Relaxed);
                let done = handler::record_reused(tid, &s, epoch, trace) == Some(true);
                if !done {
                    restore(slot, weight);
                }
                done
            }
        }
    } else {
        false
    };
    slot.busy.store(false, Ordering::Release);
    done
}

/// The SIGVTALRM handler. Signal-safe.
extern "C" fn on_wall_signal(sig: c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let _errno = ErrnoGuard::new();
    // SAFETY: `info` is the kernel's siginfo for this SA_SIGINFO handler.
    let si = unsafe { signal::read_info(info) };
    if si.code != libc::SI_QUEUE || si.value != WALL_SIGNAL_COOKIE {
        Counter::WallclockSignalForeign.inc();
        signal::chain_wall(sig, info, uc);
        return;
    }
    let tid = gettid();
    Counter::WallclockSignalOwn.inc();
    let gate = InFlight::enter(tid);
    if !gate.open() || !ARMED.load(Ordering::Acquire) {
        return;
    }
    // SIGPROF is blocked while this handler runs (`signal::sampling_signals`): one pending
    // at the end and not at the start is a CPU tick that fell in this handler, the
    // profiler's own CPU. It is recorded against the interrupted code once this returns;
    // the counter says how many there were. One pending at the start came before (the
    // thread resumed with both signals pending) and is the application's.
    let cpu = CPU_SAMPLED.load(Ordering::Relaxed);
    let pending_before = cpu && signal::cpu_signal_pending();
    sample(SignalContext(uc), tid);
    if cpu && !pending_before && signal::cpu_signal_pending() {
        Counter::CpuSamplesInHandlers.inc();
    }
}

fn sample(uc: SignalContext, tid: i32) {
    let thread = Lookup::now();
    let (mode, state) = mode::of_wall(uc, thread);
    let s = Sample {
        kind: EventKind::Wall,
        weight: 1,
        mode,
        state,
        context: Context::of_current_thread(),
        thread,
    };
    let owned = owned_run(&s);
    if owned.is_some_and(|(cell, _)| cell.run_sampled()) {
        Counter::WcSignalsSuppressedSampledRun.inc();
        return;
    }
    let collapsing = COLLAPSING.load(Ordering::Relaxed);
    let slot =
        if collapsing || KEEP_LAST.load(Ordering::Relaxed) || PRECHECK.load(Ordering::Relaxed) {
            slot_of(tid).filter(|slot| {
                slot.busy
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            })
        } else {
            None
        };
    let Some(slot) = slot else {
        let recorded = handler::walk_and_record_as(uc, &s, tid);
        if let (Some(_), Some((cell, run))) = (recorded, owned) {
            cell.mark_sampled(run);
        }
        return;
    };
    let mut s = s;
    // An owned run is sampled once, whole: the unowned thinning does not apply to it, and
    // what it held back for the slot's previous stack goes out before that stack is replaced.
    let decision = if owned.is_some() {
        if slot.tid.load(Ordering::Relaxed) == tid {
            flush_unowned_tail(slot, tid);
        }
        Precheck::Record(s.weight)
    } else {
        precheck(slot, tid, &s)
    };
    match decision {
        Precheck::Suppress => {
            slot.cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
            slot.busy.store(false, Ordering::Release);
            return;
        }
        Precheck::Record(weight) => s.weight = weight,
    }
    let (pc, sp) = pc_sp(uc);
    let same = collapsing
        && slot.tid.load(Ordering::Relaxed) == tid
        && pc != 0
        && slot.pc.load(Ordering::Relaxed) == pc
        && slot.sp.load(Ordering::Relaxed) == sp
        && slot.span.load(Ordering::Relaxed) == s.context.span_id
        && slot.root.load(Ordering::Relaxed) == s.context.root_span_id;
    let trace = slot.trace.load(Ordering::Relaxed);
    let reused = if same && trace != 0 {
        handler::record_reused(tid, &s, slot.epoch.load(Ordering::Relaxed), trace)
    } else {
        None
    };
    let recorded = if reused.is_some() {
        Counter::SkippedWallclockUnwinds.inc();
        reused == Some(true)
    } else {
        let recorded = handler::walk_and_record_as(uc, &s, tid);
        if recorded.is_none() {
            restore(slot, s.weight);
        }
        let (epoch, trace) = recorded.unwrap_or((0, 0));
        if slot.tid.load(Ordering::Relaxed) != tid {
            // Another thread's slot until now: its precheck state is not this thread's.
            slot.decisions.store(0, Ordering::Relaxed);
            slot.unowned_pending.store(0, Ordering::Relaxed);
        }
        slot.tid.store(tid, Ordering::Relaxed);
        slot.pc.store(pc, Ordering::Relaxed);
        slot.sp.store(sp, Ordering::Relaxed);
        slot.span.store(s.context.span_id, Ordering::Relaxed);
        slot.root.store(s.context.root_span_id, Ordering::Relaxed);
        slot.trace_id[0].store(s.context.trace.0, Ordering::Relaxed);
        slot.trace_id[1].store(s.context.trace.1, Ordering::Relaxed);
        for (a, v) in slot.attrs.iter().zip(s.context.attrs.iter()) {
            a.store(*v, Ordering::Relaxed);
        }
        slot.epoch.store(epoch, Ordering::Relaxed);
        slot.trace.store(trace, Ordering::Relaxed);
        recorded.is_some()
    };
    if let (true, Some((cell, run))) = (recorded, owned) {
        // Only a recorded sample covers the run: a lost one leaves the next signal to retry.
        cell.mark_sampled(run);
    }
    // Either way, the state of this sample is the one an idle observation repeats.
    slot.mode.store(s.mode, Ordering::Relaxed);
    slot.state.store(s.state, Ordering::Relaxed);
    slot.cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
    slot.busy.store(false, Ordering::Release);
}

/// Under `wallprecheck`, the owned blocked run (`block_run`) the interrupted thread is in, if
/// it has no span and is seen waiting: its filter cell and the run. Signal-safe.
fn owned_run(s: &Sample) -> Option<(&'static FilterCell, u32)> {
    // Only while the thread is seen waiting: a run whose exit hook was lost must not hide a
    // thread that runs again.
    if !PRECHECK.load(Ordering::Relaxed)
        || s.context.span_id != 0
        || !(is_blocked(s.state) || s.state == mode::state::SYSCALL)
    {
        return None;
    }
    let cell = context::current()?.filter_cell()?;
    let run = cell.open_run();
    (run != 0).then_some((cell, run))
}

/// The calling thread's CPU time in ns, 0 if unreadable. Signal-safe.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime is async-signal-safe; ts is a valid out pointer.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

enum Precheck {
    Suppress,
    Record(u64),
}

fn is_blocked(state: u8) -> bool {
    matches!(
        state,
        mode::state::SLEEPING | mode::state::PARKED | mode::state::WAITING | mode::state::CONTENDED
    )
}

/// The `wallprecheck` decision for an observation `s` of `tid`, whose slot the caller holds:
/// suppress it (counted as weight for later), or record it with the returned weight. An
/// observation that finds the thread runnable first records the pending tail. Signal-safe.
fn precheck(slot: &Slot, tid: i32, s: &Sample) -> Precheck {
    if !PRECHECK.load(Ordering::Relaxed)
        || s.context.span_id != 0
        || slot.tid.load(Ordering::Relaxed) != tid
    {
        return Precheck::Record(s.weight);
    }
    if is_blocked(s.state) {
        let decision = slot.decisions.fetch_add(1, Ordering::Relaxed) + 1;
        if decision % UNOWNED_BLOCKED_RATIO != 1 {
            slot.unowned_pending.fetch_add(1, Ordering::Relaxed);
            Counter::WcUnownedBlockedSuppressed.inc();
            return Precheck::Suppress;
        }
        Counter::WcUnownedBlockedRecorded.inc();
        return Precheck::Record(s.weight + slot.unowned_pending.swap(0, Ordering::Relaxed));
    }
    // Runnable again: the observations suppressed since the last recorded blocked sample go
    // out with that sample's trace and state, as one sample.
    flush_unowned_tail(slot, tid);
    Precheck::Record(s.weight)
}

/// Records the blocked observations held back since the slot's last recorded blocked sample
/// as one sample of that sample's trace and state, and starts counting afresh. Signal-safe.
fn flush_unowned_tail(slot: &Slot, tid: i32) {
    slot.decisions.store(0, Ordering::Relaxed);
    let tail = slot.unowned_pending.swap(0, Ordering::Relaxed);
    let trace = slot.trace.load(Ordering::Relaxed);
    if tail > 0 && trace != 0 {
        let mut context = Context {
            span_id: slot.span.load(Ordering::Relaxed),
            root_span_id: slot.root.load(Ordering::Relaxed),
            trace: (
                slot.trace_id[0].load(Ordering::Relaxed),
                slot.trace_id[1].load(Ordering::Relaxed),
            ),
            attrs: [0; MAX_ATTRIBUTES],
        };
        for (a, v) in context.attrs.iter_mut().zip(slot.attrs.iter()) {
            *a = v.load(Ordering::Relaxed);
        }
        let deferred = Sample {
            kind: EventKind::Wall,
            weight: tail,
            mode: slot.mode.load(Ordering::Relaxed),
            state: slot.state.load(Ordering::Relaxed),
            context,
            thread: Lookup::Later,
        };
        let _ = handler::record_reused(tid, &deferred, slot.epoch.load(Ordering::Relaxed), trace);
    }
}

/// A recorded weight that could not be written goes back to the pending weight.
fn restore(slot: &Slot, weight: u64) {
    if weight > 1 {
        slot.unowned_pending
            .fetch_add(weight - 1, Ordering::Relaxed);
    }
}

fn pc_sp(uc: SignalContext) -> (u64, u64) {
    super::walk::arch::Regs::from_context(uc).map_or((0, 0), |r| (r.pc as u64, r.sp as u64))
}
