//! Registers of the interrupted context where the VM walker has no port yet (everything
//! but x86_64): no registers, so a walk ends at once and the profiler chooses
//! AsyncGetCallTrace at start instead (`crate::profiler`). The same items as
//! `regs_x86_64.rs`, so the walker compiles everywhere; an aarch64 port adds
//! `regs_aarch64.rs` with the real ones.

use super::SignalContext;

#[derive(Clone, Copy, Debug, Default)]
pub struct Regs {
    pub pc: usize,
    pub sp: usize,
    pub fp: usize,
    pub method: usize,
    pub sender_sp: usize,
    /// The first Java argument register (`j_rarg0`: the receiver in a vtable/itable stub).
    pub receiver: usize,
}

impl Regs {
    /// None: not read on this architecture. Signal-safe.
    pub fn from_context(_uc: SignalContext) -> Option<Regs> {
        None
    }

    /// None: no walk from here on this architecture (hooks keep their anchor-only stacks).
    #[inline(always)]
    pub fn here() -> Option<Regs> {
        None
    }
}

/// The first Java argument register of the interrupted context, for the port to come:
/// x1 on aarch64 (`j_rarg0`: the C argument registers shifted by one, as on x86_64); None
/// where it is not known. Signal-safe.
#[allow(dead_code)]
pub fn java_arg0(uc: SignalContext) -> Option<usize> {
    #[cfg(target_arch = "aarch64")]
    {
        let uc = uc.0 as *const libc::ucontext_t;
        if uc.is_null() {
            return None;
        }
        // SAFETY: the kernel passed this ucontext to our SA_SIGINFO handler.
        let regs = unsafe { &(*uc).uc_mcontext.regs };
        regs.get(1).map(|&v| v as usize)
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        let _ = uc;
        None
    }
}

/// Opcodes of the x86_64 prologue/epilogue heuristics; they match nothing here because
/// no walk gets that far.
pub mod op {
    pub const PUSH_RBP: u8 = 0x55;
    pub const POP_RBP: u8 = 0x5d;
    pub const RET: u8 = 0xc3;
}
