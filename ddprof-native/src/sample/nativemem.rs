//! The malloc hooks of `nativemem`: the functions whose addresses `crate::nativemem`
//! writes into other libraries' import slots. Each calls the real function first (its
//! address resolved once at start and never cleared), then, while sampling is on, decides
//! by bytes whether this block is sampled (`super::poisson`), walks and records it through the allocation
//! sampler (`super::alloc::sample`, kind `NativeAlloc`), and keeps its address in the live
//! table so a `free` of it is matched.
//!
//! Rules (stricter than the JVMTI callback's, because these run inside any library's
//! malloc, on any thread, with whatever locks the caller holds):
//! - allocation-free and lock-free: atomics, mapped-once tables, our walker;
//! - the profiler's own allocations are never sampled: a thread-local flag marks the
//!   profiler's own threads (`crate::threads::spawn_own`), and the sampler drops any stack
//!   that runs through this library's code (`super::alloc::sample`), whatever the thread;
//! - reentrancy-safe: a thread-local flag marks a thread already inside a hook's sampling
//!   part; a nested hooked allocation (the walker never allocates, but a library the
//!   sampling calls into could) goes straight to the real function. The flag is a `const`
//!   thread-local without destructor: no registration, and its first access in a
//!   dlopen'ed library is served by the dynamic linker's own calls to the real malloc,
//!   which never pass through a slot we redirected (the linker's slots are not patched);
//! - inert when off: with sampling stopped a hook is one real call plus one relaxed load,
//!   so a thread that entered a hook before `stop` (or calls through a slot not yet
//!   restored) only finishes its sample into buffers that are never freed.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::poisson::PoissonSampler;
use super::rate_window::RateWindow;
use super::real_fns::RealFns;
use std::sync::OnceLock;

use super::alloc::{self as sampler, Sampled};
use super::context::gettid;
use super::handler;
use super::record::{self, Allocation, Context, Event, EventKind};
use crate::counters::Counter;
use crate::footprint::{Category, Mapped, Zeroable};

/// The functions we hook, in slot-name order ([`NAMES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Func {
    Malloc,
    Calloc,
    Realloc,
    Free,
    PosixMemalign,
    AlignedAlloc,
}

/// Import names of [`Func`], same order.
pub const NAMES: [&str; 6] = [
    "malloc",
    "calloc",
    "realloc",
    "free",
    "posix_memalign",
    "aligned_alloc",
];

/// The real functions, by [`Func`] (`super::real_fns`).
static REAL: RealFns<6> = RealFns::new();

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Bytes between samples (one countdown shared by all threads, as upstream).
static SAMPLER: PoissonSampler = PoissonSampler::new();
/// The interval asked for (0: every allocation): the rate controller never samples more
/// densely.
static BASE: AtomicU64 = AtomicU64::new(0);
static WINDOW: RateWindow = RateWindow::new();
/// Samples per second the rate controller aims at (upstream's).
pub const TARGET_PER_SECOND: u64 = 100;
/// The highest interval the controller goes to (upstream's bound).
const MAX_INTERVAL: u64 = 1 << 40;
/// Samples that close a window before its second is up (50 seconds' worth at the target): a
/// malloc-heavy burst records tens of thousands a second, and left a whole second it fills the
/// recording's buffers (131,072 samples in the first half second of a zip loop) and every sample
/// after is dropped.
const WINDOW_EVENTS: u64 = 50 * TARGET_PER_SECOND;

thread_local! {
    /// This thread is inside a hook's sampling part.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    /// This thread is one of the profiler's own ([`mark_own_thread`]).
    static OWN: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as the profiler's own: from now on its allocations are never
/// sampled (`crate::threads::spawn_own` calls it first thing on every thread it starts).
pub fn mark_own_thread() {
    let _ = OWN.try_with(|c| c.set(true));
}

/// Sets the real function of `f` (from `dlsym`, at start).
pub fn set_real(f: Func, addr: usize) {
    REAL.set(f as usize, addr);
}

pub fn real(f: Func) -> usize {
    REAL.get(f as usize)
}

/// Our hook for `f`.
pub fn hook(f: Func) -> usize {
    match f {
        Func::Malloc => malloc_hook as *const () as usize,
        Func::Calloc => calloc_hook as *const () as usize,
        Func::Realloc => realloc_hook as *const () as usize,
        Func::Free => free_hook as *const () as usize,
        Func::PosixMemalign => posix_memalign_hook as *const () as usize,
        Func::AlignedAlloc => aligned_alloc_hook as *const () as usize,
    }
}

/// Turns sampling on at `interval` bytes (0: every allocation), with the frame buffers
/// and the live table mapped (`live_slots` entries, a power of two).
pub fn arm(interval: u64, seed: u64) {
    LIVE.get_or_init(|| Mapped::new(LIVE_SLOTS, Category::SampleBuffers));
    SAMPLER.arm(interval, seed);
    BASE.store(interval, Ordering::Relaxed);
    WINDOW.reset(handler::ticks());
    ACTIVE.store(true, Ordering::Release);
}

/// Turns sampling off; the hooks keep calling the real functions.
pub fn disarm() {
    ACTIVE.store(false, Ordering::Release);
}

/// Forgets every live sampled block (a new recording).
pub fn clear_live() {
    if let Some(t) = LIVE.get() {
        for s in t.iter() {
            s.0.store(EMPTY, Ordering::Relaxed);
        }
    }
    Counter::NativememLiveSamples.set(0);
}

pub fn interval() -> u64 {
    SAMPLER.interval()
}

/// After a successful allocation of `size` bytes at `ptr`: sample it if its bytes say so.
fn on_alloc(ptr: *mut c_void, size: usize) {
    if ptr.is_null() || size == 0 || !ACTIVE.load(Ordering::Relaxed) {
        return;
    }
    let size = size as u64;
    if !SAMPLER.take(size) {
        return;
    }
    // The flag is read only for a block the countdown picked, so the common path pays nothing
    // for it. Dropping a picked block of the profiler's leaves the application's estimate
    // unbiased: each block's chance of being picked is its own (`super::poisson`), so the
    // application's picked blocks, weighted, still stand for the application's bytes.
    if OWN.try_with(Cell::get).unwrap_or(true) {
        Counter::NativememOwnSkipped.inc();
        return;
    }
    // As the chunk's buffer fills, fewer blocks are recorded and each weighs more.
    let Some(thinned) = sampler::thin() else {
        return;
    };
    let Ok(entered) = INSIDE.try_with(|c| !c.replace(true)) else {
        return;
    };
    if !entered {
        return;
    }
    let alloc = Allocation {
        size,
        class_id: 0,
        weight: SAMPLER.weight(size) * thinned,
        address: ptr as u64,
    };
    let sampled = Sampled {
        kind: EventKind::NativeAlloc,
        alloc,
        record: true,

        ticks: None,
        weight: 1,
    };
    if sampler::sample(&sampled, |_, _, _, _| {}).is_some() {
        live_insert(ptr as u64);
        control_rate((f64::from(alloc.weight) * size as f64) as u64);
    }
    let _ = INSIDE.try_with(|c| c.set(false));
}

/// The rate controller, after each recorded sample standing for `bytes`: once a second (or
/// after [`WINDOW_EVENTS`] samples), when the samples came more than 25% faster than
/// [`TARGET_PER_SECOND`], the interval becomes the bytes allocated per second (the window's
/// weighted bytes) over the target; when they came more than 25% slower, it is lowered in
/// proportion, never below the interval asked for (so bare `nativemem` samples every allocation
/// again once the process calms down). Weights follow: each is taken with the interval in force,
/// and a new interval draws a new distance.
fn control_rate(bytes: u64) {
    let due =
        |events: u64, elapsed: i64| elapsed >= handler::TICKS_PER_SECOND || events >= WINDOW_EVENTS;
    let Some(window) = WINDOW.count(handler::ticks(), bytes, due) else {
        return;
    };
    let seconds = window.elapsed as f64 / handler::TICKS_PER_SECOND as f64;
    let target = TARGET_PER_SECOND as f64;
    let rate = window.events as f64 / seconds;
    let current = SAMPLER.interval();
    let next = if rate > 1.25 * target {
        window.amount as f64 / seconds / target
    } else if rate < 0.8 * target {
        current as f64 * rate / target
    } else {
        return;
    };
    let base = BASE.load(Ordering::Relaxed);
    let next = (next as u64).clamp(base, MAX_INTERVAL.max(base));
    if next != current {
        SAMPLER.set_interval(next);
        Counter::NativememIntervalBytes.set(next as i64);
    }
}

/// Before a block goes back to the allocator: forget it if it was sampled.
fn on_free(ptr: *mut c_void) {
    if ptr.is_null() || Counter::NativememLiveSamples.get() <= 0 {
        return;
    }
    live_remove(ptr as u64);
}

/// The real function as a typed pointer; used only inside an `unsafe` block whose caller
/// is a hook, which a slot points at only once its REAL entry is the non-zero address
/// `dlsym` gave for this very function, whose C signature `$ty` is.
macro_rules! real {
    ($f:expr, $ty:ty) => {
        std::mem::transmute::<usize, $ty>(real($f))
    };
}

type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type CallocFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type PosixMemalignFn = unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> i32;
type AlignedAllocFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;

/// # Safety
/// Called as `malloc` by a library whose slot we redirected (the real one is resolved).
pub unsafe extern "C" fn malloc_hook(size: usize) -> *mut c_void {
    // SAFETY: the real malloc (see `real!`), called with the caller's arguments.
    let p = unsafe { real!(Func::Malloc, MallocFn)(size) };
    on_alloc(p, size);
    p
}

/// # Safety
/// As [`malloc_hook`], for `calloc`.
pub unsafe extern "C" fn calloc_hook(n: usize, size: usize) -> *mut c_void {
    // SAFETY: the real calloc (see `real!`), called with the caller's arguments.
    let p = unsafe { real!(Func::Calloc, CallocFn)(n, size) };
    // An overflowing product fails in calloc itself (null), so it is never sampled.
    on_alloc(p, n.wrapping_mul(size));
    p
}

/// # Safety
/// As [`malloc_hook`], for `realloc`.
pub unsafe extern "C" fn realloc_hook(old: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the real realloc (see `real!`), called with the caller's arguments.
    let p = unsafe { real!(Func::Realloc, ReallocFn)(old, size) };
    // The old block is gone when realloc succeeded (moved or not), or freed by size 0.
    if !p.is_null() || size == 0 {
        on_free(old);
    }
    on_alloc(p, size);
    p
}

/// # Safety
/// As [`malloc_hook`], for `free`.
pub unsafe extern "C" fn free_hook(ptr: *mut c_void) {
    on_free(ptr);
    // SAFETY: the real free (see `real!`), called with the caller's arguments.
    unsafe { real!(Func::Free, FreeFn)(ptr) }
}

/// # Safety
/// As [`malloc_hook`], for `posix_memalign`.
pub unsafe extern "C" fn posix_memalign_hook(
    out: *mut *mut c_void,
    align: usize,
    size: usize,
) -> i32 {
    // SAFETY: the real posix_memalign (see `real!`), called with the caller's arguments.
    let rc = unsafe { real!(Func::PosixMemalign, PosixMemalignFn)(out, align, size) };
    if rc == 0 && !out.is_null() {
        // SAFETY: on success posix_memalign stored the block in the caller's `*out`.
        on_alloc(unsafe { *out }, size);
    }
    rc
}

/// # Safety
/// As [`malloc_hook`], for `aligned_alloc`.
pub unsafe extern "C" fn aligned_alloc_hook(align: usize, size: usize) -> *mut c_void {
    // SAFETY: the real aligned_alloc (see `real!`), called with the caller's arguments.
    let p = unsafe { real!(Func::AlignedAlloc, AlignedAllocFn)(align, size) };
    on_alloc(p, size);
    p
}

// ---- The live table: addresses of sampled blocks not freed yet ----

/// Slots of the live table (a power of two); 512 KiB mapped, committed as touched.
pub const LIVE_SLOTS: usize = 1 << 16;
/// Slots probed before giving up (insert: counted as full; remove: not ours).
const PROBES: usize = 32;
const EMPTY: u64 = 0;
/// A removed entry: lookups go past it, inserts reuse it.
const TOMBSTONE: u64 = 1;

/// One live-table entry: a block's address, [`EMPTY`] or [`TOMBSTONE`].
#[repr(transparent)]
pub struct LiveSlot(AtomicU64);
// SAFETY: an AtomicU64 is valid when zeroed (EMPTY).
unsafe impl Zeroable for LiveSlot {}

static LIVE: OnceLock<Mapped<LiveSlot>> = OnceLock::new();

fn home(addr: u64, len: usize) -> usize {
    ((addr >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & (len - 1)
}

fn live_insert(addr: u64) {
    let Some(t) = LIVE.get() else { return };
    let h = home(addr, t.len());
    for i in 0..PROBES {
        let Some(s) = t.get((h + i) & (t.len() - 1)) else {
            break;
        };
        let cur = s.0.load(Ordering::Relaxed);
        // A stale entry of the same address (freed where we do not hook): it is this block now.
        if cur == addr {
            return;
        }
        if (cur == EMPTY || cur == TOMBSTONE)
            && s.0
                .compare_exchange(cur, addr, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            Counter::NativememLiveSamples.inc();
            return;
        }
    }
    Counter::NativememLiveTableFull.inc();
}

fn live_remove(addr: u64) {
    let Some(t) = LIVE.get() else { return };
    let h = home(addr, t.len());
    for i in 0..PROBES {
        let Some(s) = t.get((h + i) & (t.len() - 1)) else {
            break;
        };
        match s.0.load(Ordering::Relaxed) {
            EMPTY => return,
            cur if cur == addr => {
                if s.0
                    .compare_exchange(addr, TOMBSTONE, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    Counter::NativememLiveSamples.add(-1);
                    Counter::NativememFreedSamples.inc();
                    record_free(addr);
                }
                return;
            }
            _ => {}
        }
    }
}

/// Records the free of the sampled block at `addr` (`datadog.NativeMemoryFree`, what
/// `convert --leak` matches allocations against): no stack, no context.
fn record_free(addr: u64) {
    if !ACTIVE.load(Ordering::Relaxed) {
        return;
    }
    let Some(recorder) = handler::recorder() else {
        return;
    };
    let event = Event {
        kind: EventKind::NativeFree,
        weight: 1,
        ticks: handler::ticks(),
        tid: gettid(),
        context: Context::default(),
        frames: &[],
        truncated: false,
        mode: 0,
        state: 0,
    };
    let alloc = Allocation {
        address: addr,
        ..Allocation::default()
    };
    if !record::record_allocation(recorder, &event, &alloc) {
        Counter::NativememSamplesDropped.inc();
    }
}

/// Whether `addr` is a live sampled block (for tests and the dump).
pub fn is_live(addr: u64) -> bool {
    let Some(t) = LIVE.get() else { return false };
    let h = home(addr, t.len());
    (0..PROBES)
        .map_while(|i| t.get((h + i) & (t.len() - 1)))
        .map(|s| s.0.load(Ordering::Relaxed))
        .take_while(|&v| v != EMPTY)
        .any(|v| v == addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_table_matches_frees_to_sampled_blocks() {
        LIVE.get_or_init(|| Mapped::new(LIVE_SLOTS, Category::SampleBuffers));
        let base = 0x5555_0000_0000u64;
        for i in 0..1000 {
            live_insert(base + i * 48);
        }
        for i in (0..1000).step_by(2) {
            live_remove(base + i * 48);
        }
        for i in 0..1000 {
            assert_eq!(is_live(base + i * 48), i % 2 == 1, "block {i}");
        }
        // A block never sampled is not found, and freeing it changes nothing.
        live_remove(base + 7);
        assert!(!is_live(base + 7));
        for i in 0..1000 {
            live_remove(base + i * 48);
        }
        assert!((0..1000).all(|i| !is_live(base + i * 48)));
    }
}
