//! An architecture without a port of the VM walker: no registers, so a walk ends at once,
//! and the profiler chooses AsyncGetCallTrace at start (`VM_WALKER` is false). The same
//! items as every architecture file (`arch/mod.rs`), so the walkers compile everywhere.

use super::Top;
use crate::sample::vm::debuginfo::Memory;
use crate::sample::walk::dwarf;
use crate::sample::walk::stack::{Bounds, Cursor};
use crate::sample::walk::SignalContext;

/// The VM walker has no port here.
pub const VM_WALKER: bool = false;

#[derive(Clone, Copy, Debug, Default)]
pub struct Regs {
    pub pc: usize,
    pub sp: usize,
    pub fp: usize,
    pub lr: usize,
    pub method: usize,
    pub sender_sp: usize,
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

pub fn configure(_java_feature: u32) {}

pub const LINK_AT_FP: usize = 0;
pub const RETURN_AT_FP: usize = 8;
pub const RETURN_BELOW_SENDER_SP: usize = 8;
pub const LINK_BELOW_SENDER_SP: usize = 16;
pub const INTERP_METHOD_SLOT: usize = 3;
pub const INTERP_BCP_SLOT: usize = 8;
pub const ENTRY_FRAME_CALL_WRAPPER_WORDS: i64 = 0;
pub const INTERP_SENDER_SP_WORDS: i64 = -1;
pub const INTERP_LAST_SP_WORDS: i64 = -2;

pub fn strip_pc(pc: usize) -> usize {
    pc
}

pub fn interpreter_entry<M: Memory>(_mem: &M, _cur: Cursor, _regs: &Regs) -> Option<Cursor> {
    None
}

pub fn compiled_top<M: Memory>(
    _mem: &M,
    _cur: Cursor,
    _regs: &Regs,
    _entry: usize,
    _complete: usize,
    _frame_bytes: usize,
) -> Top {
    Top::Broken
}

pub fn stub_top<M: Memory>(
    _mem: &M,
    _cur: Cursor,
    _regs: &Regs,
    _start: usize,
    _bounds: Bounds,
    _in_code: &dyn Fn(usize) -> bool,
) -> Option<Cursor> {
    None
}

pub fn after_syscall<M: Memory>(_mem: &M, _pc: usize) -> bool {
    false
}

pub fn at_syscall<M: Memory>(_mem: &M, _pc: usize) -> bool {
    false
}

/// No DWARF registers: no register number matches, every row is unknown.
pub const DWARF: dwarf::Registers = dwarf::Registers {
    sp: u64::MAX,
    fp: u64::MAX,
    ra: None,
    initial_cfa_off: 0,
    negate_ra_state: false,
};

pub fn caller_by_rule<M: Memory>(
    _mem: &M,
    _cur: Cursor,
    _lr: usize,
    _bounds: Bounds,
    _row: dwarf::Row,
) -> Option<Cursor> {
    None
}

/// No frame layout is known for this architecture: every chain is broken.
pub fn caller<M: Memory>(
    _mem: &M,
    _cur: Cursor,
    _bounds: Bounds,
    _in_code: &dyn Fn(usize) -> bool,
) -> Option<Cursor> {
    None
}

pub fn return_at_sp<M: Memory>(
    _mem: &M,
    _cur: Cursor,
    _lr: usize,
    _bounds: Bounds,
    _in_code: &dyn Fn(usize) -> bool,
) -> Option<Cursor> {
    None
}
