//! aarch64 half of `safe_access`: the protected load instructions and the check the
//! fault handler uses to recognise them. Same items and shape as `safe_access_x86_64.rs`.
//!
//! Every protected load is a tiny leaf function whose *first* instruction is the load:
//!
//! ```text
//! ddprof_safe_load64:  ldr x0, [x0]    <- the only instruction that may fault
//!                      mov x1, xzr     <- status 0: the value is genuine
//!                      ret
//! ddprof_safe_fault:   mov x0, xzr     <- landing pad, shared by all widths
//!                      mov x1, #1      <- status 1: the load faulted
//!                      ret
//! ```
//!
//! The functions return a `#[repr(C)]` pair of two `u64`s, which AAPCS64 passes back in
//! `x0` (value) and `x1` (status). The functions are leaves that save nothing: when the
//! load faults, `lr` (x30) still holds the caller's return address and `sp` is the
//! caller's, so the fault handler only has to move `pc` (not `lr`) to the landing pad:
//! its `ret` returns `(0, 1)` to the caller as if the function had run normally.
//!
//! Unaligned addresses are fine: Linux runs user space with alignment checks off, and
//! `ldr`/`ldrh` of normal memory may be unaligned. `ldr w0`, `ldrh`, `ldrb` zero-extend
//! into x0. Entering the pad by a changed `pc` is not a branch, so branch target
//! identification (BTI) has nothing to check there; the loads are entered by `bl` from
//! the Rust wrappers in `safe_access_protected.rs`.

core::arch::global_asm!(
    ".pushsection .text.hot.ddprof_safe_access,\"ax\",%progbits",
    ".p2align 4",
    ".globl ddprof_safe_load64",
    ".hidden ddprof_safe_load64",
    ".type ddprof_safe_load64,%function",
    "ddprof_safe_load64:",
    ".cfi_startproc",
    "ldr x0, [x0]",
    "mov x1, xzr",
    "ret",
    ".cfi_endproc",
    ".size ddprof_safe_load64, . - ddprof_safe_load64",
    ".p2align 4",
    ".globl ddprof_safe_load32",
    ".hidden ddprof_safe_load32",
    ".type ddprof_safe_load32,%function",
    "ddprof_safe_load32:",
    ".cfi_startproc",
    "ldr w0, [x0]",
    "mov x1, xzr",
    "ret",
    ".cfi_endproc",
    ".size ddprof_safe_load32, . - ddprof_safe_load32",
    ".p2align 4",
    ".globl ddprof_safe_load16",
    ".hidden ddprof_safe_load16",
    ".type ddprof_safe_load16,%function",
    "ddprof_safe_load16:",
    ".cfi_startproc",
    "ldrh w0, [x0]",
    "mov x1, xzr",
    "ret",
    ".cfi_endproc",
    ".size ddprof_safe_load16, . - ddprof_safe_load16",
    ".p2align 4",
    ".globl ddprof_safe_load8",
    ".hidden ddprof_safe_load8",
    ".type ddprof_safe_load8,%function",
    "ddprof_safe_load8:",
    ".cfi_startproc",
    "ldrb w0, [x0]",
    "mov x1, xzr",
    "ret",
    ".cfi_endproc",
    ".size ddprof_safe_load8, . - ddprof_safe_load8",
    ".p2align 4",
    ".globl ddprof_safe_fault",
    ".hidden ddprof_safe_fault",
    ".type ddprof_safe_fault,%function",
    "ddprof_safe_fault:",
    ".cfi_startproc",
    "mov x0, xzr",
    "mov x1, #1",
    "ret",
    ".cfi_endproc",
    ".size ddprof_safe_fault, . - ddprof_safe_fault",
    ".popsection",
);

/// The interrupted pc of a fault's context. Signal-safe.
pub fn pc(uc: &libc::ucontext_t) -> Option<usize> {
    Some(uc.uc_mcontext.pc as usize)
}

/// Makes the thread resume at `to` once the handler returns (`pc`; nothing else changes:
/// the load saved nothing, so `lr` and `sp` are still the caller's). Signal-safe.
pub fn set_pc(uc: &mut libc::ucontext_t, to: usize) {
    uc.uc_mcontext.pc = to as u64;
}
