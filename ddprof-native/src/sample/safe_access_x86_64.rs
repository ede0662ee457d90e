//! x86_64 half of `safe_access`: the protected load instructions and the check the
//! fault handler uses to recognise them.
//!
//! Every protected load is a tiny leaf function whose *first* instruction is the load:
//!
//! ```text
//! ddprof_safe_load64:  mov rax, qword ptr [rdi]   <- the only instruction that may fault
//!                      xor edx, edx               <- status 0: the value is genuine
//!                      ret
//! ddprof_safe_fault:   xor eax, eax               <- landing pad, shared by all widths
//!                      mov edx, 1                 <- status 1: the load faulted
//!                      ret
//! ```
//!
//! The functions return a `#[repr(C)]` pair of two `u64`s, which the SysV ABI passes back
//! in `rax` (value) and `rdx` (status). When the load faults, `rsp` still points at the
//! caller's return address (nothing was pushed yet), so the fault handler only has to
//! move `rip` to the landing pad: the `ret` there returns `(0, 1)` to the caller as if
//! the function had run normally. No instruction lengths, no register juggling.
//!
//! `safe_access_aarch64.rs` has the same shape with `x0`/`x1` and `pc`.

use std::ffi::c_void;

/// What a protected load returns: the value and whether the load faulted.
#[repr(C)]
struct Loaded {
    value: u64,
    faulted: u64,
}

// The symbols are `.hidden`: they never leave libjavaProfiler.so, so no other library
// can interpose them, and two copies of the crate in different libraries cannot clash.
// CFI lets debuggers and HotSpot's crash reporter walk through them.
core::arch::global_asm!(
    ".pushsection .text.ddprof_safe_access,\"ax\",@progbits",
    ".p2align 4",
    ".globl ddprof_safe_load64",
    ".hidden ddprof_safe_load64",
    ".type ddprof_safe_load64,@function",
    "ddprof_safe_load64:",
    ".cfi_startproc",
    "mov rax, qword ptr [rdi]",
    "xor edx, edx",
    "ret",
    ".cfi_endproc",
    ".size ddprof_safe_load64, . - ddprof_safe_load64",
    ".p2align 4",
    ".globl ddprof_safe_load32",
    ".hidden ddprof_safe_load32",
    ".type ddprof_safe_load32,@function",
    "ddprof_safe_load32:",
    ".cfi_startproc",
    "mov eax, dword ptr [rdi]",
    "xor edx, edx",
    "ret",
    ".cfi_endproc",
    ".size ddprof_safe_load32, . - ddprof_safe_load32",
    ".p2align 4",
    ".globl ddprof_safe_load16",
    ".hidden ddprof_safe_load16",
    ".type ddprof_safe_load16,@function",
    "ddprof_safe_load16:",
    ".cfi_startproc",
    "movzx eax, word ptr [rdi]",
    "xor edx, edx",
    "ret",
    ".cfi_endproc",
    ".size ddprof_safe_load16, . - ddprof_safe_load16",
    ".p2align 4",
    ".globl ddprof_safe_load8",
    ".hidden ddprof_safe_load8",
    ".type ddprof_safe_load8,@function",
    "ddprof_safe_load8:",
    ".cfi_startproc",
    "movzx eax, byte ptr [rdi]",
    "xor edx, edx",
    "ret",
    ".cfi_endproc",
    ".size ddprof_safe_load8, . - ddprof_safe_load8",
    ".p2align 4",
    ".globl ddprof_safe_fault",
    ".hidden ddprof_safe_fault",
    ".type ddprof_safe_fault,@function",
    "ddprof_safe_fault:",
    ".cfi_startproc",
    "xor eax, eax",
    "mov edx, 1",
    "ret",
    ".cfi_endproc",
    ".size ddprof_safe_fault, . - ddprof_safe_fault",
    ".popsection",
);

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
    // changing its saved rip changes where the thread resumes after the handler returns.
    unsafe {
        let uc = &mut *uc.cast::<libc::ucontext_t>();
        let Some(rip) = uc.uc_mcontext.gregs.get_mut(libc::REG_RIP as usize) else {
            return false;
        };
        // The load is the first instruction of each function: an exact match means the
        // fault was that load, and nothing has been pushed since the call.
        if !loads.contains(&(*rip as usize)) {
            return false;
        }
        *rip = ddprof_safe_fault as *const () as usize as libc::greg_t;
    }
    true
}
