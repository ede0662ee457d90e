//! The allocation sample's walk and record: what the JVMTI SampledObjectAlloc callback does
//! on the allocating thread, inside the VM (`crate::alloc` calls it). The stack comes from
//! our VM walker started at the thread's frame anchor (`VmWalker::walk_from_anchor`), so
//! frames are raw `Method*`s (tagged in the lazy mode) exactly as in CPU samples and no
//! jmethodID is created; without the VM walker, AsyncGetCallTrace (which needs no signal
//! context for a thread stopped in native code). Allocation-free and lock-free like the
//! signal path: frame buffers are mapped once, taken with a try-lock, and the record goes
//! through the one recording entry (`record::record_allocation`).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::context::gettid;
use super::frame::kind;
use super::frame::Frame;
use super::handler::{self, WalkerKind};
use super::mode::execution;
use super::record::{self, Allocation, Context, Event, EventKind};
use super::walk::arch::Regs;
use super::walk::{agct::Agct, vm::VmWalker, SignalContext, StackWalker, Walk};
use crate::counters::Counter;
use crate::footprint::{Category, Mapped, Zeroable};

/// Deepest allocation stack recorded (`jstackdepth` is clamped to it).
pub const MAX_DEPTH: usize = 2048;
/// Frame buffers for concurrent callbacks; one is taken with a try-lock.
const STRIPES: usize = 8;

static DEPTH: AtomicUsize = AtomicUsize::new(MAX_DEPTH);
/// This library's code, `[lo, hi)`: the frames a hook's walk drops from the top of its stack
/// (the hook itself and what it called), so a stack starts at the hook's caller.
static OWN_LO: AtomicUsize = AtomicUsize::new(0);
static OWN_HI: AtomicUsize = AtomicUsize::new(0);
static WALKER: AtomicU8 = AtomicU8::new(WalkerKind::Agct as u8);

struct Stripe {
    busy: AtomicBool,
    frames: UnsafeCell<[Frame; MAX_DEPTH]>,
}

// SAFETY: an AtomicBool and plain-integer frames are valid when zeroed.
unsafe impl Zeroable for Stripe {}
// SAFETY: a stripe's frames are touched only by the thread holding its `busy` flag.
unsafe impl Sync for Stripe {}

static STRIPES_MAP: OnceLock<Mapped<Stripe>> = OnceLock::new();

/// Maps the frame buffers (once, not on the allocation path) and sets the walker and depth
/// the callbacks use.
pub fn arm(walker: WalkerKind, depth: usize) {
    STRIPES_MAP.get_or_init(|| Mapped::new(STRIPES, Category::SampleBuffers));
    THIN_RNG.fetch_xor(handler::ticks() as u64, Ordering::Relaxed);
    WALKER.store(walker as u8, Ordering::Relaxed);
    DEPTH.store(depth.clamp(1, MAX_DEPTH), Ordering::Relaxed);
}

/// Where this library's code is mapped (`crate::libs::mappings::own_code`), for the hooks' walks.
/// Not called on the sampling path.
pub fn set_own_code(lo: usize, hi: usize) {
    OWN_LO.store(lo, Ordering::Relaxed);
    OWN_HI.store(hi, Ordering::Relaxed);
}

/// Drops the leading native frames of this library from the `n` walked into `frames`;
/// returns how many remain.
fn drop_own_frames(frames: &mut [Frame], n: usize) -> usize {
    let (lo, hi) = (
        OWN_LO.load(Ordering::Relaxed),
        OWN_HI.load(Ordering::Relaxed),
    );
    let n = n.min(frames.len());
    let own = frames
        .get(..n)
        .unwrap_or(&[])
        .iter()
        .take_while(|f| f.kind == kind::NATIVE_PC && (lo..hi).contains(&(f.method as usize)))
        .count();
    if own > 0 {
        frames.copy_within(own..n, 0);
    }
    n - own
}

/// Whether a native frame of `frames` lies in this library's code: the stack runs through
/// the profiler (a JNI entry, a JVMTI callback, one of its threads), so the allocation is
/// the profiler's own, whichever function under it made the call.
fn runs_own_code(frames: &[Frame]) -> bool {
    let (lo, hi) = (
        OWN_LO.load(Ordering::Relaxed),
        OWN_HI.load(Ordering::Relaxed),
    );
    frames
        .iter()
        .any(|f| f.kind == kind::NATIVE_PC && (lo..hi).contains(&(f.method as usize)))
}

/// The thinning level of a sample buffer holding `used` of `capacity` records: 0 (keep every
/// sample) below half of it, then one level more for each further 1/64 of it, at most
/// [`MAX_THINNING`]. At level `k` a weighted sample is kept with probability `2^-k` and its
/// weight multiplied by `2^k`, so each 1/64 of the buffer's second half takes twice as many
/// offered samples as the one before: whatever the rate, the weighted samples never fill the
/// buffer (level 30 is reached after about 2^30 / 32 buffers' worth), and the estimate stays
/// unbiased.
pub fn thinning_level(used: usize, capacity: usize) -> u32 {
    let half = capacity / 2;
    if used < half {
        return 0;
    }
    let step = (capacity / 64).max(1);
    (1 + (used - half) / step).min(MAX_THINNING as usize) as u32
}

/// The highest thinning level: weights grow by at most 2^30 (an f32 holds that exactly).
pub const MAX_THINNING: u32 = 30;

/// splitmix64's counter, for [`thin`]'s draws (one shared state: any thread, no TLS).
static THIN_RNG: AtomicU64 = AtomicU64::new(0x2545_f491_4f6c_dd1d);

fn next_random() -> u64 {
    let mut z = THIN_RNG
        .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Whether a weighted sample about to be recorded (a JVMTI allocation, a native block, a socket
/// call) is kept as the chunk's sample buffer fills ([`thinning_level`]): Some(factor its
/// weight is multiplied by), or None, counted in `samples_thinned`, when it is left out. A
/// sample the buffer then has no room for (other kinds filled it) is lost as any other.
/// Lock-free, allocation-free.
pub fn thin() -> Option<f32> {
    let Some(recorder) = handler::recorder() else {
        return Some(1.0);
    };
    let (used, capacity) = recorder.fill();
    let k = thinning_level(used, capacity);
    if k == 0 {
        return Some(1.0);
    }
    if next_random() >> (64 - k) != 0 {
        Counter::SamplesThinned.inc();
        return None;
    }
    Some((1u64 << k) as f32)
}

/// One sampled allocation as the callback sees it.
pub struct Sampled {
    /// [`EventKind::Alloc`] (JVMTI), [`EventKind::NativeAlloc`] (malloc hooks) or
    /// [`EventKind::NativeSocket`] (socket hooks).
    pub kind: EventKind,
    pub alloc: Allocation,
    /// Record a `datadog.ObjectSample` (`memory=..:a`); else only `keep` sees the stack.
    pub record: bool,
    /// When the event began (a socket call's start); None: now.
    pub ticks: Option<i64>,
    /// The event's weight in its kind's unit (`record::Event::weight`): 1 for allocations,
    /// the duration in nanoseconds for socket calls.
    pub weight: u64,
}

/// Walks the current thread's Java stack, records the allocation sample (if asked) and
/// hands the frames to `keep` (the live-heap tracker), all while holding one frame buffer.
/// Returns the context the sample was recorded with, or None when it was dropped (counted
/// in `alloc_samples_dropped`) or, for a native allocation, was the profiler's own (counted in
/// `nativemem_own_skipped`). Allocation-free; `keep` is the caller's.
pub fn sample(s: &Sampled, keep: impl FnOnce(&[Frame], bool, &Context, i64)) -> Option<Context> {
    let stripes = STRIPES_MAP.get()?;
    let recorder = handler::recorder()?;
    let vm = match WALKER.load(Ordering::Relaxed) {
        x if x == WalkerKind::Vm as u8 => VmWalker::get(),
        _ => None,
    };
    let tid = gettid();
    let first = (tid as usize) % STRIPES;
    let Some(stripe) = stripes.iter().cycle().skip(first).take(STRIPES).find(|s| {
        s.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }) else {
        dropped(s.kind);
        return None;
    };
    // SAFETY: we hold this stripe's busy flag, so no other thread touches its frames.
    let frames = unsafe { &mut *stripe.frames.get() };
    let depth = DEPTH.load(Ordering::Relaxed).min(MAX_DEPTH);
    let buf = frames.get_mut(..depth).unwrap_or(&mut []);
    // JVMTI: the thread is inside the VM, called from Java. malloc: whatever HotSpot's thread
    // state says (native for a JNI library, the VM for libjvm's own allocations).
    let mode = match s.kind {
        EventKind::NativeAlloc | EventKind::NativeSocket => super::mode::of_current_thread(),
        _ => super::mode::execution::JVM,
    };
    // AsyncGetCallTrace without a signal context reads the frame anchor only for a thread in
    // the VM or in native code; for one in Java it would read the missing context (a
    // critical downcall can reach malloc in that state), so such a block gets no stack.
    let agct_safe =
        s.kind == EventKind::Alloc || matches!(mode, execution::JVM | execution::NATIVE);
    // A hook's caller is native code: its frames down to the anchor come first, from our
    // own registers (this frame stays live while the walk runs). The JVMTI callback's
    // stack starts at the allocating Java method, as upstream's.
    let from_hook = matches!(s.kind, EventKind::NativeAlloc | EventKind::NativeSocket);
    let walk = match (vm, Agct::loaded()) {
        (Some(v), _) => {
            match Regs::here().filter(|_| from_hook && OWN_HI.load(Ordering::Relaxed) != 0) {
                Some(regs) => {
                    let w = v.walk_from_here(regs, buf);
                    Walk {
                        frames: drop_own_frames(buf, w.frames),
                        truncated: w.truncated,
                    }
                }
                None => v.walk_from_anchor(buf),
            }
        }
        // A thread in native code: AsyncGetCallTrace starts at its last Java frame.
        (None, Some(a)) if agct_safe => a.walk(SignalContext(std::ptr::null_mut()), buf),
        (None, Some(_)) => Walk {
            frames: 0,
            truncated: false,
        },
        (None, None) => {
            stripe.busy.store(false, Ordering::Release);
            dropped(s.kind);
            return None;
        }
    };
    let walked = buf.get(..walk.frames).unwrap_or(&[]);
    // The profiler's own allocations stay out of the profile (its threads are marked before
    // they get here; this catches its code on any other thread and its threads' first steps).
    if s.kind == EventKind::NativeAlloc && runs_own_code(walked) {
        stripe.busy.store(false, Ordering::Release);
        Counter::NativememOwnSkipped.inc();
        return None;
    }
    let ticks = s.ticks.unwrap_or_else(handler::ticks);
    let context = Context::of_current_thread();
    let event = Event {
        kind: s.kind,
        weight: s.weight,
        ticks,
        tid,
        context,
        frames: walked,
        truncated: walk.truncated,
        mode,
        state: super::mode::state::RUNNABLE,
    };
    let recorded = s.record && record::record_allocation(recorder, &event, &s.alloc);
    keep(walked, walk.truncated, &context, ticks);
    stripe.busy.store(false, Ordering::Release);
    if recorded {
        match s.kind {
            EventKind::NativeAlloc => Counter::NativememSamples.inc(),
            EventKind::NativeSocket => Counter::NatsockEvents.inc(),
            _ => Counter::AllocSamples.inc(),
        }
    }
    Some(context)
}

fn dropped(kind: EventKind) {
    match kind {
        EventKind::NativeAlloc => Counter::NativememSamplesDropped.inc(),
        EventKind::NativeSocket => Counter::NatsockEventsDropped.inc(),
        _ => Counter::AllocSamplesDropped.inc(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_starts_at_half_and_climbs_per_sixty_fourth() {
        let c = 1 << 18;
        assert_eq!(thinning_level(0, c), 0);
        assert_eq!(thinning_level(c / 2 - 1, c), 0);
        assert_eq!(thinning_level(c / 2, c), 1);
        assert_eq!(thinning_level(c / 2 + c / 64, c), 2);
        assert_eq!(thinning_level(c - c / 64, c), MAX_THINNING);
        assert_eq!(thinning_level(c, c), MAX_THINNING);
        // A tiny buffer still climbs.
        assert_eq!(thinning_level(10, 16), 3);
    }

    /// A buffer of 16,384 records offered 2 million samples of weight 1 (a burst ~120 times what
    /// fits): it never fills, and the kept samples' weights add up to what was offered, within
    /// the standard error they imply (the variance of a kept sample of factor f is f(f-1)). The
    /// top levels carry most of the weight, so the relative error is about
    /// `0.6 / sqrt(capacity / 64)`: 3.6% here, under 1% for the default buffer.
    #[test]
    fn thinned_weights_stand_for_every_sample_offered() {
        let capacity = 16_384;
        let offered = 2_000_000u64;
        let (mut used, mut sum, mut var) = (0usize, 0f64, 0f64);
        for _ in 0..offered {
            let k = thinning_level(used, capacity);
            if k > 0 && next_random() >> (64 - k) != 0 {
                continue;
            }
            let f = (1u64 << k) as f64;
            used += 1;
            sum += f;
            var += f * (f - 1.0);
        }
        assert!(used < capacity, "the buffer filled: {used}");
        let se = var.sqrt();
        assert!(
            (sum - offered as f64).abs() <= 4.0 * se,
            "kept weights {sum}, offered {offered}, standard error {se}"
        );
        assert!(
            se < 0.06 * offered as f64,
            "standard error {se} of {offered}"
        );
    }
}
