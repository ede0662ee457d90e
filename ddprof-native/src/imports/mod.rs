//! Redirecting other libraries' calls to our hooks without `LD_PRELOAD`: the import slots
//! (GOT entries, `got.rs`) of the objects loaded in this process are rewritten to point at a
//! hook, and put back at stop. `nativemem` (malloc and free) and `natsock` (socket I/O) each
//! own one [`HookSet`].
//!
//! - Which objects: every one `dl_iterate_phdr` lists except this library (its own calls are
//!   the profiler's, never sampled), the dynamic linker (its allocations serve our own
//!   thread-local storage) and the vDSO.
//! - When: at start, when the library watcher (`crate::profiler::libraries`) sees objects added,
//!   and at every dump. `dlopen` itself is not hooked: glibc resolves a relative name against
//!   the RUNPATH of its caller's object, which a hook in between would make this library.
//! - At stop the slots are put back (only those still holding one of the set's hooks, and
//!   only in objects still loaded: the writes happen inside `dl_iterate_phdr`, which holds
//!   the loader's lock, so no object is unloaded under them). A thread already inside a hook
//!   finishes it: the hook's code and the real functions' addresses stay, and with sampling
//!   off a hook only calls the real function.

pub mod got;

use parking_lot::Mutex;

/// One function a set hooks: its import name, our hook, and the real function (0 when it
/// could not be resolved: such a slot is left alone).
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub name: &'static str,
    pub hook: usize,
    pub real: usize,
}

/// What one pass changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Patch {
    /// Objects with at least one slot newly redirected.
    pub libraries: usize,
    pub slots: usize,
    /// Slots that could not be written (logged).
    pub failures: usize,
}

/// A slot we redirected: where, what it held, and the object it belongs to.
struct Patched {
    slot: usize,
    original: usize,
    bias: u64,
}

/// The slots one feature redirected.
pub struct HookSet {
    /// The feature's option name, for log lines.
    what: &'static str,
    patched: Mutex<Vec<Patched>>,
}

/// Readies the walks of a hook set's samples (frame buffers, walker, depth), which start
/// at the hook's caller: this library's own frames are dropped from their tops.
pub fn arm_sampler(walker: crate::sample::handler::WalkerKind, depth: usize) {
    crate::sample::alloc::arm(walker, depth);
    if let Some((lo, hi)) = crate::libs::mappings::own_code() {
        crate::sample::alloc::set_own_code(lo, hi);
    }
}

/// Objects we never hook.
pub fn skipped(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.starts_with("ld-linux")
        || base.starts_with("ld-musl")
        || base.starts_with("ld.so")
        || base.starts_with("linux-vdso")
        || base.starts_with("linux-gate")
}

/// The address `name` binds to for a call from this library (the first definition in the
/// global scope: libc's, or a preloaded library's), 0 if none.
pub fn resolve(name: &str) -> usize {
    let Ok(name) = std::ffi::CString::new(name) else {
        return 0;
    };
    // SAFETY: dlsym only reads the loader's tables.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}

/// The real function of every `names[i]` not resolved yet (`real(i) == 0`), handed to
/// `set_real`; Err(name) when one that `required(i)` says a set cannot do without is missing.
pub fn resolve_reals(
    names: &[&'static str],
    real: impl Fn(usize) -> usize,
    set_real: impl Fn(usize, usize),
    required: impl Fn(usize) -> bool,
) -> Result<(), &'static str> {
    for (i, name) in names.iter().enumerate() {
        if real(i) != 0 {
            continue;
        }
        let addr = resolve(name);
        if addr == 0 && required(i) {
            return Err(name);
        }
        set_real(i, addr);
    }
    Ok(())
}

/// The targets of a set whose functions are `names`, by index.
pub fn targets(
    names: &[&'static str],
    hook: impl Fn(usize) -> usize,
    real: impl Fn(usize) -> usize,
) -> Vec<Target> {
    names
        .iter()
        .enumerate()
        .map(|(i, &name)| Target {
            name,
            hook: hook(i),
            real: real(i),
        })
        .collect()
}

impl HookSet {
    pub const fn new(what: &'static str) -> HookSet {
        HookSet {
            what,
            patched: Mutex::new(Vec::new()),
        }
    }

    /// Redirects the slots of `targets` in every hookable object not yet redirected.
    pub fn patch_all(&self, targets: &[Target]) -> Patch {
        let mut patched = self.patched.lock();
        let names: Vec<&str> = targets.iter().map(|t| t.name).collect();
        // This library: whatever slot of it imports these is the profiler's own call.
        let own = resolve as *const () as usize;
        let mut result = Patch::default();
        got::for_each_object(|o| {
            if o.contains(own) || skipped(o.name) || o.dynamic().is_none() {
                return;
            }
            let relro = o.relro();
            let mut any = false;
            for i in o.imports(&names) {
                let Some(t) = targets.iter().find(|t| t.name == i.name && t.real != 0) else {
                    continue;
                };
                // SAFETY: a slot of an object `dl_iterate_phdr` keeps loaded for this visit.
                let current = unsafe { std::ptr::read_volatile(i.slot as *const usize) };
                if current == t.hook {
                    continue;
                }
                // SAFETY: as above; `relro` is this object's.
                match unsafe { got::write_slot(i.slot, t.hook, relro) } {
                    Ok(original) => {
                        patched.push(Patched {
                            slot: i.slot,
                            original,
                            bias: o.bias,
                        });
                        result.slots += 1;
                        any = true;
                    }
                    Err(e) => {
                        result.failures += 1;
                        crate::log::info(&format!(
                            "{}: cannot hook {} in {}: {e:?}",
                            self.what, i.name, o.name
                        ));
                    }
                }
            }
            if any {
                result.libraries += 1;
            }
        });
        result
    }

    /// Puts back every slot still holding one of `targets`' hooks, in objects still loaded.
    /// Returns the slots that could not be written back.
    pub fn restore_all(&self, targets: &[Target]) -> usize {
        let mut patched = self.patched.lock();
        let mut failures = 0;
        if patched.is_empty() {
            return failures;
        }
        got::for_each_object(|o| {
            let relro = o.relro();
            for p in patched.iter().filter(|p| p.bias == o.bias) {
                if !o.contains(p.slot) {
                    continue;
                }
                // SAFETY: a slot inside an object loaded for this visit.
                let current = unsafe { std::ptr::read_volatile(p.slot as *const usize) };
                if !targets.iter().any(|t| t.hook == current) {
                    continue;
                }
                // SAFETY: as above.
                if unsafe { got::write_slot(p.slot, p.original, relro) }.is_err() {
                    failures += 1;
                }
            }
        });
        patched.clear();
        failures
    }
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

    #[test]
    fn libc_functions_resolve() {
        assert_ne!(resolve("malloc"), 0);
        assert_ne!(resolve("send"), 0);
        assert_eq!(resolve("no_such_function_anywhere"), 0);
    }
}
