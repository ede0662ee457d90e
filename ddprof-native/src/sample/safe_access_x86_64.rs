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

core::arch::global_asm!(
    ".pushsection .text.hot.ddprof_safe_access,\"ax\",@progbits",
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

/// The interrupted pc of a fault's context (`rip`). Signal-safe.
pub fn pc(uc: &libc::ucontext_t) -> Option<usize> {
    uc.uc_mcontext
        .gregs
        .get(libc::REG_RIP as usize)
        .map(|r| *r as usize)
}

/// Makes the thread resume at `to` once the handler returns (`rip`; nothing else changes:
/// the load pushed nothing, so `rsp` still points at the caller's return address).
/// Signal-safe.
pub fn set_pc(uc: &mut libc::ucontext_t, to: usize) {
    if let Some(r) = uc.uc_mcontext.gregs.get_mut(libc::REG_RIP as usize) {
        *r = to as libc::greg_t;
    }
}
