//! aarch64 (Linux, LP64): HotSpot's frames and the AAPCS64 native frames as the walkers see
//! them (docs/hotspot.md, "aarch64"). The items every architecture file has are listed in
//! `arch/mod.rs`.
//!
//! What differs from x86_64: a call leaves its return address in the link register (x30,
//! `lr`), not on the stack, until the callee saves it with x29 (fp) as a pair; so a frame
//! caught before that save, or after its restore, returns through `lr`. Instructions are
//! four bytes, fixed: the prologue and epilogue checks decode them by mask. Return addresses
//! may carry a pointer-authentication code in their high bits (`strip_pc`).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::Top;
use crate::sample::vm::debuginfo::Memory;
use crate::sample::walk::dwarf;
use crate::sample::walk::stack::{Bounds, Cursor, MAX_FRAME_BYTES};
use crate::sample::walk::SignalContext;

/// The VM walker reads this architecture's frames.
pub const VM_WALKER: bool = true;

/// pc, sp, fp (x29), lr (x30), the registers the template interpreter keeps its state in
/// at method entry (x12 = `rmethod`, the `Method*`; the sender sp: x19 from JDK 20, x13
/// before, see [`configure`]), and the first Java argument register (x1: HotSpot's
/// `j_rarg0`, the C argument registers shifted by one), the receiver in a vtable/itable
/// stub.
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

/// The register the interpreter's method entry passes the sender's sp in.
static SENDER_SP_REG: AtomicUsize = AtomicUsize::new(19);

impl Regs {
    /// The interrupted registers. Signal-safe.
    #[cfg(target_arch = "aarch64")]
    pub fn from_context(uc: SignalContext) -> Option<Regs> {
        let uc = uc.0 as *const libc::ucontext_t;
        if uc.is_null() {
            return None;
        }
        // SAFETY: the kernel passed this ucontext to our SA_SIGINFO handler.
        let mc = unsafe { &(*uc).uc_mcontext };
        let reg = |i: usize| mc.regs.get(i).map_or(0, |v| *v as usize);
        Some(Regs {
            pc: mc.pc as usize,
            sp: mc.sp as usize,
            fp: reg(29),
            lr: reg(30),
            method: reg(12),
            sender_sp: reg(SENDER_SP_REG.load(Ordering::Relaxed)),
            receiver: reg(1),
        })
    }

    #[cfg(not(target_arch = "aarch64"))]
    pub fn from_context(_uc: SignalContext) -> Option<Regs> {
        None
    }

    /// The caller's own pc, sp and x29 at this point: where a walk of the current thread
    /// starts when there is no signal context (a hook called by native code). Inlined, so
    /// the pc is inside the calling function, past its prologue (it has saved lr, so lr is
    /// not needed: 0), and sp is that function's own at the pc: its DWARF row unwinds from
    /// there. The frame must still be live while the walk runs, so call it in the function
    /// that walks. Signal-safe.
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    pub fn here() -> Option<Regs> {
        let (pc, sp, fp): (usize, usize, usize);
        // SAFETY: reads three registers into outputs; no memory or stack is touched (x29 is
        // named: it is never given to an operand).
        unsafe {
            std::arch::asm!(
                "mov {fp}, x29",
                "mov {sp}, sp",
                "adr {pc}, .",
                pc = out(reg) pc,
                sp = out(reg) sp,
                fp = out(reg) fp,
                options(nomem, nostack, preserves_flags),
            );
        }
        Some(Regs {
            pc,
            sp,
            fp,
            ..Regs::default()
        })
    }

    #[cfg(not(target_arch = "aarch64"))]
    #[inline(always)]
    pub fn here() -> Option<Regs> {
        None
    }
}

/// Called once the JVM's feature version is known: JDK 20 moved the interpreter's
/// sender-sp register from x13 to x19 (JDK-8288971).
pub fn configure(java_feature: u32) {
    let reg = if java_feature >= 20 { 19 } else { 13 };
    SENDER_SP_REG.store(reg, Ordering::Relaxed);
}

// ---------------------------------------------------------------------------------------
// HotSpot's frames.
// ---------------------------------------------------------------------------------------

/// A frame record at fp: the caller's fp at `fp + LINK_AT_FP`, the return address (saved
/// lr) at `fp + RETURN_AT_FP`. Compiled frames keep the same pair just below their sender's
/// sp: the return address at `sender_sp - RETURN_BELOW_SENDER_SP`, the saved fp at
/// `sender_sp - LINK_BELOW_SENDER_SP`.
pub const LINK_AT_FP: usize = 0;
pub const RETURN_AT_FP: usize = 8;
pub const RETURN_BELOW_SENDER_SP: usize = 8;
pub const LINK_BELOW_SENDER_SP: usize = 16;

/// Interpreter frame slots below fp, in words (JDK 11+; aarch64 keeps one slot more than
/// x86_64 between the `Method*` and the bcp: padding before JDK 21, the extended sp after).
pub const INTERP_METHOD_SLOT: usize = 3;
pub const INTERP_BCP_SLOT: usize = 9;
/// `frame::interpreter_frame_sender_sp_offset` and `..._last_sp_offset` (words from fp)
/// where VMStructs lack them.
pub const INTERP_SENDER_SP_WORDS: i64 = -1;
pub const INTERP_LAST_SP_WORDS: i64 = -2;

/// `frame::entry_frame_call_wrapper_offset` (words from fp): aarch64's VMStructs do not
/// export it.
pub const ENTRY_FRAME_CALL_WRAPPER_WORDS: i64 = -8;

/// User-space addresses on Linux aarch64 fit in 48 bits (52 only for mappings asked for
/// above 2^48, which the JVM does not make). The bits above hold a pointer-authentication
/// code when the JVM (`-XX:UseBranchProtection`) or the C library signs return addresses,
/// and the top byte may hold a tag.
const VA_MASK: usize = (1 << 48) - 1;

/// A return address as loaded (or as lr holds it), made usable: its authentication code
/// and tag bits cleared.
#[inline(always)]
pub fn strip_pc(pc: usize) -> usize {
    pc & VA_MASK
}

/// The interpreter caught at method entry, before its frame is built: x12 holds the
/// `Method*` (`regs.method`), lr the return address, the sender-sp register the caller's sp;
/// fp is still the caller's.
pub fn interpreter_entry<M: Memory>(_mem: &M, cur: Cursor, regs: &Regs) -> Option<Cursor> {
    let sp = regs.sender_sp;
    if regs.lr == 0 || !sp.is_multiple_of(8) || sp < cur.sp || sp - cur.sp > MAX_FRAME_BYTES {
        return None;
    }
    Some(Cursor {
        pc: regs.lr,
        sp,
        fp: cur.fp,
    })
}

/// Instruction encodings the checks below decode (A64, little-endian words).
mod insn {
    /// `ret` (x30), and the authenticating `retaa`/`retab`.
    pub const RET: u32 = 0xd65f_03c0;
    pub const RETAA: u32 = 0xd65f_0bff;
    pub const RETAB: u32 = 0xd65f_0fff;
    /// `stp x29, x30, [sp, #-16]!`: the usual frame push.
    pub const PUSH_FP_LR: u32 = 0xa9bf_7bfd;
    /// `mov x29, sp`.
    pub const MOV_FP_SP: u32 = 0x9100_03fd;
    /// `svc #0`: the Linux system call.
    pub const SVC0: u32 = 0xd400_0001;

    /// `stp x29, x30, [sp, #imm]!` (pre-index): the signed byte offset.
    pub fn stp_fp_lr_pre(i: u32) -> Option<isize> {
        (i & 0xffc0_7fff == 0xa980_7bfd).then(|| imm7(i))
    }
    /// `stp x29, x30, [sp, #imm]` (signed offset).
    pub fn stp_fp_lr_off(i: u32) -> Option<isize> {
        (i & 0xffc0_7fff == 0xa900_7bfd).then(|| imm7(i))
    }
    /// `ldp x29, x30, [sp, #imm]` (signed offset).
    pub fn ldp_fp_lr_off(i: u32) -> bool {
        i & 0xffc0_7fff == 0xa940_7bfd
    }
    /// `ldp x29, x30, [sp], #imm` (post-index).
    pub fn ldp_fp_lr_post(i: u32) -> Option<isize> {
        (i & 0xffc0_7fff == 0xa8c0_7bfd).then(|| imm7(i))
    }
    /// `sub sp, sp, #imm{, lsl #12}`.
    pub fn sub_sp_imm(i: u32) -> Option<usize> {
        (i & 0xff80_03ff == 0xd100_03ff).then(|| imm12(i))
    }
    /// `add sp, sp, #imm{, lsl #12}`.
    pub fn add_sp_imm(i: u32) -> Option<usize> {
        (i & 0xff80_03ff == 0x9100_03ff).then(|| imm12(i))
    }
    /// `sub sp, sp, xM` (extended register, uxtx): a frame size from a register.
    pub fn sub_sp_reg(i: u32) -> bool {
        i & 0xffe0_ffff == 0xcb20_63ff
    }
    /// `add sp, sp, xM` (extended register, uxtx).
    pub fn add_sp_reg(i: u32) -> bool {
        i & 0xffe0_ffff == 0x8b20_63ff
    }
    /// What may sit in a compiled method's epilogue besides the sp and pair restores: hints
    /// (`nop`, `autiasp`/`autiaz`...), PAC/AUT on registers (`autia x30, x29`), loads
    /// (the safepoint poll's `ldr x8, [x28, #off]`), `cmp sp, xM`, a conditional branch
    /// to the poll's slow path, and `movz`/`movk`/`movn` of a large frame size.
    pub fn epilogue_other(i: u32) -> bool {
        i & 0xffff_f01f == 0xd503_201f
            || i & 0xffff_c000 == 0xdac1_0000
            || i & 0xbfc0_0000 == 0xb940_0000
            || i & 0xffe0_ffff == 0xeb20_63ff
            || i & 0xff00_0010 == 0x5400_0000
            || i & 0x1f80_0000 == 0x1280_0000
    }

    fn imm7(i: u32) -> isize {
        ((((i >> 15) & 0x7f) as i32) << 25 >> 25) as isize * 8
    }
    fn imm12(i: u32) -> usize {
        let imm = ((i >> 10) & 0xfff) as usize;
        if i & (1 << 22) != 0 {
            imm << 12
        } else {
            imm
        }
    }
}

/// Instructions decoded at most from the verified entry to the pc (a C1/C2 prologue: an
/// optional patching nop, the stack bang, the frame push, the nmethod entry barrier).
const PROLOGUE_SCAN: usize = 48;
/// Instructions decoded at most from the pc to the `ret` of an epilogue.
const EPILOGUE_SCAN: usize = 12;

/// The top compiled frame (C1/C2 nmethod or native wrapper) whose pc may sit in its
/// prologue (before `complete`, from the code blob's frame-complete offset) or epilogue.
/// `entry` is the verified entry point. Shapes (HotSpot's `build_frame`/`remove_frame`):
/// `sub sp, sp, #N; stp x29, x30, [sp, #N-16]` or, for large frames, `stp x29, x30, [sp,
/// #-16]!; ...; sub sp, sp, xM`; and back: `ldp x29, x30, [sp, #N-16]; add sp, sp, #N` or
/// `add sp, sp, xM; ldp x29, x30, [sp], #16`; then the return poll and `ret`.
pub fn compiled_top<M: Memory>(
    mem: &M,
    cur: Cursor,
    regs: &Regs,
    entry: usize,
    complete: usize,
    frame_bytes: usize,
) -> Top {
    if cur.pc < complete {
        prologue(mem, cur, regs, entry, frame_bytes)
    } else {
        epilogue(mem, cur, regs)
    }
}

fn via_lr(cur: Cursor, regs: &Regs, sp: usize) -> Top {
    if regs.lr == 0 {
        return Top::Broken;
    }
    Top::Caller(Cursor {
        pc: regs.lr,
        sp,
        fp: cur.fp,
    })
}

/// The pair saved at `at`: the caller's fp and the return address; `sp` the caller's sp.
fn via_pair<M: Memory>(mem: &M, at: usize, sp: usize) -> Top {
    match (mem.read_usize(at + 8), mem.read_usize(at)) {
        (Some(pc), Some(fp)) => Top::Caller(Cursor { pc, sp, fp }),
        _ => Top::Broken,
    }
}

/// Replays the prologue from `entry` to the pc: how far sp moved and where the pair went.
fn prologue<M: Memory>(mem: &M, cur: Cursor, regs: &Regs, entry: usize, frame_bytes: usize) -> Top {
    if entry == 0 || cur.pc <= entry {
        // The inline-cache check before the verified entry pushes nothing.
        return via_lr(cur, regs, cur.sp);
    }
    if !(cur.pc - entry).is_multiple_of(4) || cur.pc - entry > PROLOGUE_SCAN * 4 {
        return Top::Whole;
    }
    // Bytes sp moved down so far, and where the pair sits (bytes below the caller's sp).
    let mut down = 0usize;
    let mut pair_below: Option<usize> = None;
    let mut at = entry;
    while at < cur.pc {
        let Some(i) = mem.read_u32(at) else {
            return Top::Broken;
        };
        if let Some(n) = insn::sub_sp_imm(i) {
            down += n;
        } else if let Some(off) = insn::stp_fp_lr_pre(i) {
            down = down.wrapping_add_signed(-off);
            pair_below = Some(down);
        } else if let Some(off) = insn::stp_fp_lr_off(i) {
            pair_below = down.checked_add_signed(-off);
        } else if insn::sub_sp_reg(i) {
            // The last step of a large frame's build: it is whole now.
            return Top::Whole;
        }
        at += 4;
    }
    if down > frame_bytes.max(16) || down > MAX_FRAME_BYTES {
        return Top::Broken;
    }
    let caller_sp = cur.sp + down;
    match pair_below {
        Some(below) if below <= down && below >= 16 => via_pair(mem, caller_sp - below, caller_sp),
        Some(_) => Top::Broken,
        None => via_lr(cur, regs, caller_sp),
    }
}

/// Reads ahead from the pc to the `ret`: what of the frame is still to be popped.
fn epilogue<M: Memory>(mem: &M, cur: Cursor, regs: &Regs) -> Top {
    // Bytes sp still goes up before the `ret`.
    let mut up = 0usize;
    for k in 0..EPILOGUE_SCAN {
        let Some(i) = mem.read_u32(cur.pc + 4 * k) else {
            return Top::Whole;
        };
        if i == insn::RET || i == insn::RETAA || i == insn::RETAB {
            // The pair is restored: lr holds the return address.
            return via_lr(cur, regs, cur.sp + up);
        }
        if insn::ldp_fp_lr_off(i) {
            // The pair is still in place: the frame is whole.
            return Top::Whole;
        }
        if let Some(off) = insn::ldp_fp_lr_post(i) {
            if up != 0 || off <= 0 {
                return Top::Whole;
            }
            // sp is back at the pair (the large-frame form): pop it.
            return via_pair(mem, cur.sp, cur.sp + off as usize);
        }
        if let Some(n) = insn::add_sp_imm(i) {
            up += n;
        } else if insn::add_sp_reg(i) {
            // Before the large-frame form's pop: the frame is whole until it runs.
            return Top::Whole;
        } else if !insn::epilogue_other(i) {
            // Not an epilogue.
            return Top::Whole;
        }
    }
    Top::Whole
}

/// The caller of a stub caught as the leaf with no frame size of its own, or before its
/// frame is complete (`start` is its first instruction): through lr at its first
/// instruction or its `ret`; through the pair when it opens with `stp x29, x30, [sp,
/// #-16]!; mov x29, sp`; else through lr when lr returns into the code cache (a frameless
/// stub).
pub fn stub_top<M: Memory>(
    mem: &M,
    cur: Cursor,
    regs: &Regs,
    start: usize,
    bounds: Bounds,
    in_code: &dyn Fn(usize) -> bool,
) -> Option<Cursor> {
    let lr = Cursor {
        pc: regs.lr,
        sp: cur.sp,
        fp: cur.fp,
    };
    let at = mem.read_u32(cur.pc)?;
    if cur.pc == start || at == insn::RET {
        return (regs.lr != 0).then_some(lr);
    }
    if mem.read_u32(start) == Some(insn::PUSH_FP_LR) {
        if cur.pc == start + 4 {
            return Some(Cursor {
                pc: mem.read_usize(cur.sp + 8)?,
                sp: cur.sp + 16,
                fp: mem.read_usize(cur.sp)?,
            });
        }
        let fp = cur.fp;
        if mem.read_u32(start + 4) == Some(insn::MOV_FP_SP)
            && fp.is_multiple_of(8)
            && fp >= cur.sp
            && bounds.holds(fp)
            && bounds.holds(fp + 15)
        {
            return Some(Cursor {
                pc: mem.read_usize(fp + RETURN_AT_FP)?,
                sp: fp + 16,
                fp: mem.read_usize(fp + LINK_AT_FP)?,
            });
        }
    }
    in_code(strip_pc(regs.lr)).then_some(lr)
}

/// Whether the signal interrupted a system call: the pc is just after `svc #0` (the kernel
/// delivers the signal on its way out of the call).
pub fn after_syscall<M: Memory>(mem: &M, pc: usize) -> bool {
    pc.checked_sub(4)
        .and_then(|a| mem.read_u32(a))
        .is_some_and(|i| i == insn::SVC0)
}

/// Whether the pc is at `svc #0`: a restartable system call interrupted by the signal,
/// which the kernel rewound to run again after the handler.
pub fn at_syscall<M: Memory>(mem: &M, pc: usize) -> bool {
    mem.read_u32(pc).is_some_and(|i| i == insn::SVC0)
}

// ---------------------------------------------------------------------------------------
// Native frames (`native.rs`): DWARF rows, frame records, the link register.
// ---------------------------------------------------------------------------------------

/// The DWARF registers of the unwind rows (`crate::libs::eh_frame`): sp (31), x29 (29), and the
/// return address in x30 (30), which stays in the register until the prologue saves it.
/// The CIE sets the CFA (GCC's: sp + 0). Code built with pointer authentication marks
/// where it signs x30 (`DW_CFA_AARCH64_negate_ra_state`); [`strip_pc`] clears the code.
pub const DWARF: dwarf::Registers = dwarf::Registers {
    sp: 31,
    fp: 29,
    ra: Some(30),
    initial_cfa_off: 0,
    negate_ra_state: true,
};

/// The caller of the frame at `cur` by a DWARF rule: CFA from sp or x29; the return
/// address in lr (`lr`: the interrupted frame's link register, 0 for any other frame, which
/// has called out and so must have saved it), or saved at `CFA + off`; x29 restored from its
/// slot or kept. The CFA is the caller's sp: at or above sp (equal only while the return
/// address is still in lr, a leaf with no frame), inside the thread's stack; the slots read
/// lie between sp and the CFA's stack; the return address follows a call once stripped.
pub fn caller_by_rule<M: Memory>(
    mem: &M,
    cur: Cursor,
    lr: usize,
    bounds: Bounds,
    row: dwarf::Row,
) -> Option<Cursor> {
    let base = if row.cfa_reg == dwarf::CFA_FP {
        cur.fp
    } else {
        cur.sp
    };
    let cfa = base.checked_add_signed(row.cfa_off as isize)?;
    let in_lr = row.ra == dwarf::RA_IN_LR;
    if !cfa.is_multiple_of(8)
        || cfa < cur.sp
        || (cfa == cur.sp && !in_lr)
        || cfa - cur.sp > MAX_FRAME_BYTES
        || cfa > bounds.high
    {
        return None;
    }
    // A saved register's slot: in this frame, inside the stack.
    let slot = |off: isize| {
        let at = cfa.checked_add_signed(off)?;
        (at.is_multiple_of(8) && at >= cur.sp && bounds.holds(at) && bounds.holds(at + 7))
            .then(|| mem.read_usize(at))
            .flatten()
    };
    let fp = if row.fp_off == dwarf::FP_SAME {
        cur.fp
    } else {
        slot(row.fp_off as isize)?
    };
    let ra = match row.ra {
        dwarf::RA_IN_LR => lr,
        dwarf::RA_BESIDE_FP if row.fp_off != dwarf::FP_SAME => slot(row.fp_off as isize + 8)?,
        dwarf::RA_BESIDE_FP => return None,
        words => slot(words as isize * 8)?,
    };
    let pc = strip_pc(ra);
    if pc == 0 || !follows_call(mem, pc) {
        return None;
    }
    Some(Cursor { pc, sp: cfa, fp })
}

/// The caller of a native frame without a DWARF row (libjvm, code without `.eh_frame`)
/// through its frame record at x29: `[fp]` = the caller's x29, `[fp + 8]` = the saved lr.
/// The record sits anywhere in its frame on aarch64, so the caller's sp is not known: it is
/// given as `fp + 16`, the lowest it can be, which keeps the chain monotonic (the next
/// record must lie at or above it) and bounded by the thread's stack. A Java caller needs
/// its exact sp, so a record returning into the code cache is not taken (the walker
/// resumes at the frame anchor instead); a DWARF rule after such a step that computes its
/// CFA from sp may be off, and is held to the checks of [`caller_by_rule`].
pub fn caller<M: Memory>(
    mem: &M,
    cur: Cursor,
    bounds: Bounds,
    in_code: &dyn Fn(usize) -> bool,
) -> Option<Cursor> {
    let fp = cur.fp;
    if !bounds.holds_record(cur.sp, fp) {
        return None;
    }
    let pc = strip_pc(mem.read_usize(fp + RETURN_AT_FP)?);
    let caller_fp = mem.read_usize(fp + LINK_AT_FP)?;
    if pc == 0 || in_code(pc) || !follows_call(mem, pc) {
        return None;
    }
    Some(Cursor {
        pc,
        sp: fp + 16,
        fp: caller_fp,
    })
}

/// The interrupted C function's caller when that is compiled Java code calling it without
/// a frame anchor (a leaf runtime call, the vDSO's `clock_gettime`): lr returns into the
/// code cache right after a `bl`/`blr`, so the function made no call of its own; taken only
/// while it has not saved lr in a frame record at fp (it may have moved sp then), so sp is
/// still its caller's.
pub fn return_at_sp<M: Memory>(
    mem: &M,
    cur: Cursor,
    lr: usize,
    _bounds: Bounds,
    in_code: &dyn Fn(usize) -> bool,
) -> Option<Cursor> {
    let pc = strip_pc(lr);
    if lr == 0 || !in_code(pc) || !follows_call(mem, pc) {
        return None;
    }
    let saved = cur
        .fp
        .checked_add(RETURN_AT_FP)
        .filter(|_| cur.fp >= cur.sp && cur.fp - cur.sp < MAX_FRAME_BYTES)
        .and_then(|a| mem.read_usize(a));
    if saved.is_some_and(|r| strip_pc(r) == pc) {
        return None;
    }
    Some(Cursor {
        pc,
        sp: cur.sp,
        fp: cur.fp,
    })
}

/// Whether the instruction before `ret` is a call: `bl`, `blr`, or the authenticating
/// `blraa`/`blrab` forms.
pub fn follows_call<M: Memory>(mem: &M, ret: usize) -> bool {
    let Some(i) = ret.checked_sub(4).and_then(|a| mem.read_u32(a)) else {
        return false;
    };
    i & 0xfc00_0000 == 0x9400_0000
        || i & 0xffff_fc1f == 0xd63f_0000
        || i & 0xfeff_f800 == 0xd63f_0800
}

#[cfg(test)]
#[path = "aarch64_tests.rs"]
mod tests;
