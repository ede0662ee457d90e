//! `nativemem[=BYTES]`: sampled malloc/calloc/realloc/posix_memalign/aligned_alloc and free,
//! hooked without `LD_PRELOAD` by redirecting the import slots (GOT entries, `got.rs`) of
//! the libraries loaded in the process to the hooks of `crate::sample::nativemem`.
//!
//! - Which objects: every one `dl_iterate_phdr` lists except this library (its own calls
//!   are the profiler's allocations, never sampled), the dynamic linker (its allocations
//!   serve our own thread-local storage, see the hooks' module) and the vDSO.
//! - When: at start, and again at every dump, so a library loaded after start is hooked
//!   from the next chunk on. `dlopen` itself is not hooked: glibc resolves a relative
//!   name against the RUNPATH of its caller's object, which a hook in between would make
//!   this library.
//! - At stop the slots are put back (only those still holding our hook, and only in
//!   objects still loaded: the writes happen inside `dl_iterate_phdr`, which holds the
//!   loader's lock, so no object is unloaded under them). A thread already inside a hook
//!   finishes it: the hook's code and the real functions' addresses stay, and with
//!   sampling off it only calls the real function (docs/architecture.md, "Native memory").

pub mod got;

use parking_lot::Mutex;

use crate::counters::Counter;
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

/// A slot we redirected: where, what it held, and the object it belongs to.
struct Patched {
    slot: usize,
    original: usize,
    bias: u64,
}

static PATCHED: Mutex<Vec<Patched>> = Mutex::new(Vec::new());
static RUNNING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The real functions, as a call from this library binds them (the first definition in
/// the global scope: libc's, or a preloaded allocator's).
fn resolve() -> Result<(), String> {
    for f in FUNCS {
        if hooks::real(f) != 0 {
            continue;
        }
        let name = std::ffi::CString::new(NAMES[f as usize]).unwrap_or_default();
        // SAFETY: dlsym only reads the loader's tables.
        let addr = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize;
        if addr == 0 && matches!(f, Func::Malloc | Func::Free) {
            return Err(format!(
                "nativemem: cannot resolve {}; native memory profiling unavailable",
                NAMES[f as usize]
            ));
        }
        hooks::set_real(f, addr);
    }
    Ok(())
}

/// Objects we never hook.
fn skipped(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.starts_with("ld-linux")
        || base.starts_with("ld-musl")
        || base.starts_with("ld.so")
        || base.starts_with("linux-vdso")
        || base.starts_with("linux-gate")
}

/// Redirects the slots of every hookable object not yet redirected. Returns the objects
/// newly hooked.
fn patch_all() -> usize {
    let mut patched = PATCHED.lock();
    let own = hooks::hook(Func::Malloc);
    let mut libraries = 0;
    got::for_each_object(|o| {
        if o.contains(own) || skipped(o.name) || o.dynamic().is_none() {
            return;
        }
        let relro = o.relro();
        let mut any = false;
        for i in o.imports(&NAMES) {
            let Some(f) = FUNCS.iter().copied().find(|f| NAMES[*f as usize] == i.name) else {
                continue;
            };
            if hooks::real(f) == 0 {
                continue;
            }
            let hook = hooks::hook(f);
            // SAFETY: a slot of an object `dl_iterate_phdr` keeps loaded for this visit.
            let current = unsafe { std::ptr::read_volatile(i.slot as *const usize) };
            if current == hook {
                continue;
            }
            // SAFETY: as above; `relro` is this object's.
            match unsafe { got::write_slot(i.slot, hook, relro) } {
                Ok(original) => {
                    patched.push(Patched {
                        slot: i.slot,
                        original,
                        bias: o.bias,
                    });
                    Counter::NativememHookedSlots.inc();
                    any = true;
                }
                Err(e) => {
                    Counter::NativememHookFailures.inc();
                    crate::log::info(&format!(
                        "nativemem: cannot hook {} in {}: {e:?}",
                        i.name, o.name
                    ));
                }
            }
        }
        if any {
            libraries += 1;
            Counter::NativememHookedLibraries.inc();
        }
    });
    libraries
}

/// Puts back every slot still holding our hook, in objects still loaded.
fn restore_all() {
    let mut patched = PATCHED.lock();
    if patched.is_empty() {
        return;
    }
    let hooks_of: Vec<usize> = FUNCS.iter().map(|f| hooks::hook(*f)).collect();
    got::for_each_object(|o| {
        let relro = o.relro();
        for p in patched.iter().filter(|p| p.bias == o.bias) {
            if !o.contains(p.slot) {
                continue;
            }
            // SAFETY: a slot inside an object loaded for this visit.
            let current = unsafe { std::ptr::read_volatile(p.slot as *const usize) };
            if !hooks_of.contains(&current) {
                continue;
            }
            // SAFETY: as above.
            if unsafe { got::write_slot(p.slot, p.original, relro) }.is_err() {
                Counter::NativememHookFailures.inc();
            }
        }
    });
    patched.clear();
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
    crate::sample::alloc::arm(walker, depth);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_and_vdso_are_never_hooked() {
        assert!(skipped("/lib64/ld-linux-x86-64.so.2"));
        assert!(skipped("/lib/ld-linux-aarch64.so.1"));
        assert!(skipped("linux-vdso.so.1"));
        assert!(!skipped("/usr/lib/jvm/lib/libzip.so"));
        assert!(!skipped(""));
    }
}
