//! `nativemem[=BYTES]`: sampled malloc/calloc/realloc/posix_memalign/aligned_alloc and free,
//! hooked without `LD_PRELOAD` by redirecting the import slots of the libraries loaded in the
//! process (`crate::imports`: which objects, when, and what stop puts back) to the hooks of
//! `crate::sample::nativemem`. A thread already inside a hook at stop finishes it: with
//! sampling off it only calls the real function (docs/sources.md, "Native memory").

use crate::counters::Counter;
use crate::imports::{self, HookSet, Target};
use crate::sample::handler::WalkerKind;
use crate::sample::nativemem::{self as hooks, Func, NAMES};

const FUNCS: [Func; 6] = [
    Func::Malloc,
    Func::Calloc,
    Func::Realloc,
    Func::Free,
    Func::PosixMemalign,
    Func::AlignedAlloc,
];

static SLOTS: HookSet = HookSet::new("nativemem");
static RUNNING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The real functions, as a call from this library binds them (the first definition in
/// the global scope: libc's, or a preloaded allocator's); malloc and free are required.
fn resolve() -> Result<(), String> {
    imports::resolve_reals(
        &NAMES,
        |i| hooks::real(FUNCS[i]),
        |i, a| hooks::set_real(FUNCS[i], a),
        |i| matches!(FUNCS[i], Func::Malloc | Func::Free),
    )
    .map_err(|name| {
        format!("nativemem: cannot resolve {name}; native memory profiling unavailable")
    })
}

fn targets() -> Vec<Target> {
    imports::targets(&NAMES, |i| hooks::hook(FUNCS[i]), |i| hooks::real(FUNCS[i]))
}

/// Redirects the slots of every hookable object not yet redirected. Returns the objects
/// newly hooked.
fn patch_all() -> usize {
    let p = SLOTS.patch_all(&targets());
    Counter::NativememHookedSlots.add(p.slots as i64);
    Counter::NativememHookedLibraries.add(p.libraries as i64);
    Counter::NativememHookFailures.add(p.failures as i64);
    p.libraries
}

/// Puts back every slot still holding our hook, in objects still loaded.
fn restore_all() {
    let failures = SLOTS.restore_all(&targets());
    Counter::NativememHookFailures.add(failures as i64);
    Counter::NativememHookedLibraries.set(0);
    Counter::NativememHookedSlots.set(0);
}

/// Starts native memory sampling at `interval` bytes (0: every allocation).
pub fn start(
    interval: u64,
    walker: WalkerKind,
    depth: usize,
    new_recording: bool,
) -> Result<(), String> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return Err("nativemem is not supported on this architecture".into());
    }
    resolve()?;
    imports::arm_sampler(walker, depth);
    if new_recording {
        hooks::clear_live();
    }
    let seed = crate::sample::handler::ticks() as u64;
    hooks::arm(interval, seed);
    Counter::NativememIntervalBytes.set(interval as i64);
    RUNNING.store(true, std::sync::atomic::Ordering::Release);
    let n = patch_all();
    crate::log::info(&format!("nativemem: hooked {n} libraries"));
    if Counter::NativememHookedSlots.get() == 0 {
        crate::log::warn("nativemem: no library imports malloc through a slot we could hook");
    }
    Ok(())
}

/// At a dump: hooks the libraries loaded since the last scan.
pub fn rescan() {
    if RUNNING.load(std::sync::atomic::Ordering::Acquire) {
        patch_all();
    }
}

/// Stops sampling and puts the slots back.
pub fn stop() {
    if !RUNNING.swap(false, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    hooks::disarm();
    restore_all();
}

pub fn running() -> bool {
    RUNNING.load(std::sync::atomic::Ordering::Acquire)
}
