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
}

impl Regs {
    /// None: not read on this architecture. Signal-safe.
    pub fn from_context(_uc: SignalContext) -> Option<Regs> {
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
