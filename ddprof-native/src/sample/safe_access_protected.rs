//! The half of `safe_access` both architectures with protected loads share: the load
//! functions' Rust side (their symbols are defined in `safe_access_x86_64.rs` and
//! `safe_access_aarch64.rs`, one `global_asm!` each, the same names and contract: the load is
//! the first instruction, a shared landing pad returns `(0, 1)`), and the fault handler's
//! check. An architecture file gives the assembly and `pc`/`set_pc` of a `ucontext_t`.

use std::ffi::c_void;

use super::isa::{pc, set_pc};

/// What a protected load returns: the value and whether the load faulted.
#[repr(C)]
struct Loaded {
    value: u64,
    faulted: u64,
}

extern "C" {
    fn ddprof_safe_load64(addr: usize) -> Loaded;
    fn ddprof_safe_load32(addr: usize) -> Loaded;
    fn ddprof_safe_load16(addr: usize) -> Loaded;
    fn ddprof_safe_load8(addr: usize) -> Loaded;
    fn ddprof_safe_fault() -> Loaded;
}

/// True: on this architecture loads are protected by the fault handler.
pub const PROTECTED_LOADS: bool = true;

#[inline(always)]
fn result(loaded: Loaded) -> Option<u64> {
    if loaded.faulted == 0 {
        Some(loaded.value)
    } else {
        None
    }
}

// The four loads below must only be called once the fault handler is installed (the
// caller in safe_access.rs checks): before that, a fault would reach HotSpot's handler,
// which does not know these instructions.

/// 8-byte load. Signal-safe.
#[inline(always)]
pub fn load64(addr: usize) -> Option<u64> {
    // SAFETY: the function reads 8 bytes at `addr` and nothing else; if that faults, the
    // installed handler redirects it to the landing pad, which returns (0, faulted).
    result(unsafe { ddprof_safe_load64(addr) })
}

/// 4-byte load, zero-extended. Signal-safe.
#[inline(always)]
pub fn load32(addr: usize) -> Option<u64> {
    // SAFETY: as for `load64`, reading 4 bytes.
    result(unsafe { ddprof_safe_load32(addr) })
}

/// 2-byte load, zero-extended. Signal-safe.
#[inline(always)]
pub fn load16(addr: usize) -> Option<u64> {
    // SAFETY: as for `load64`, reading 2 bytes.
    result(unsafe { ddprof_safe_load16(addr) })
}

/// 1-byte load, zero-extended. Signal-safe.
#[inline(always)]
pub fn load8(addr: usize) -> Option<u64> {
    // SAFETY: as for `load64`, reading 1 byte.
    result(unsafe { ddprof_safe_load8(addr) })
}

/// If the fault described by `uc` happened on one of the protected load instructions,
/// moves the interrupted pc to the landing pad and returns true; otherwise leaves the
/// context untouched and returns false. Signal-safe.
///
/// # Safety
/// `uc` is null or the `ucontext_t` the kernel passed to an SA_SIGINFO handler.
pub unsafe fn recover(uc: *mut c_void) -> bool {
    if uc.is_null() {
        return false;
    }
    let loads = [
        ddprof_safe_load64 as *const () as usize,
        ddprof_safe_load32 as *const () as usize,
        ddprof_safe_load16 as *const () as usize,
        ddprof_safe_load8 as *const () as usize,
    ];
    // SAFETY: the kernel's ucontext is valid and writable for the duration of the handler;
    // changing its saved pc changes where the thread resumes after the handler returns.
    let uc = unsafe { &mut *uc.cast::<libc::ucontext_t>() };
    // The load is the first instruction of each function: an exact match means the fault
    // was that load, and nothing was saved or pushed since the call.
    if !pc(uc).is_some_and(|p| loads.contains(&p)) {
        return false;
    }
    set_pc(uc, ddprof_safe_fault as *const () as usize);
    true
}
