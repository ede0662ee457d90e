//! x86_64: HotSpot's frames and the System V native frames as the walkers see them
//! (docs/hotspot.md 4.1-4.5). The items every architecture file has are listed in
//! `arch/mod.rs`.

use super::Top;
use crate::sample::vm::debuginfo::Memory;
use crate::sample::walk::dwarf;
use crate::sample::walk::stack::{Bounds, Cursor, MAX_FRAME_BYTES};
use crate::sample::walk::SignalContext;

/// The VM walker reads this architecture's frames.
pub const VM_WALKER: bool = true;

/// pc, sp, fp, the two registers the template interpreter keeps its state in at
/// method entry (rbx = Method*, r13 = sender sp), and the first Java argument register
/// (rsi: HotSpot's `j_rarg0`, the C argument registers shifted by one), which holds the
/// receiver inside a vtable/itable stub. No link register (`lr` is 0): calls push the
/// return address.
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
    /// The interrupted registers. Signal-safe.
    #[cfg(target_arch = "x86_64")]
    pub fn from_context(uc: SignalContext) -> Option<Regs> {
        let uc = uc.0 as *const libc::ucontext_t;
        if uc.is_null() {
            return None;
        }
        // SAFETY: the kernel passed this ucontext to our SA_SIGINFO handler.
        let g = unsafe { &(*uc).uc_mcontext.gregs };
        let reg = |i: libc::c_int| g.get(i as usize).map_or(0, |v| *v as usize);
        Some(Regs {
            pc: reg(libc::REG_RIP),
            sp: reg(libc::REG_RSP),
            fp: reg(libc::REG_RBP),
            lr: 0,
            method: reg(libc::REG_RBX),
            sender_sp: reg(libc::REG_R13),
            receiver: reg(libc::REG_RSI),
        })
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub fn from_context(_uc: SignalContext) -> Option<Regs> {
        None
    }

    /// The caller's own pc, sp and fp at this point: where a walk of the current thread
    /// starts when there is no signal context (a hook called by native code). Inlined, so
    /// the pc is inside the calling function and sp is that function's own at the pc: its
    /// DWARF row (or frame pointer) unwinds from there. The frame must still be live while
    /// the walk runs, so call it in the function that walks. Signal-safe.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub fn here() -> Option<Regs> {
        let (pc, sp, fp): (usize, usize, usize);
        // SAFETY: reads three registers into outputs; no memory or stack is touched. rbp
        // first: without frame pointers the compiler may give rbp to another output.
        unsafe {
            std::arch::asm!(
                "mov {fp}, rbp",
                "mov {sp}, rsp",
                "lea {pc}, [rip]",
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

    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub fn here() -> Option<Regs> {
        None
    }
}

/// Called once the JVM's feature version is known; x86_64's frames do not depend on it.
pub fn configure(_java_feature: u32) {}

// ---------------------------------------------------------------------------------------
// HotSpot's frames (docs/hotspot.md 4.2-4.4).
// ---------------------------------------------------------------------------------------

/// A frame record at fp: the caller's fp at `fp + LINK_AT_FP`, the return address at
/// `fp + RETURN_AT_FP`. Compiled frames keep the same pair just below their sender's sp:
/// the return address at `sender_sp - RETURN_BELOW_SENDER_SP`, the saved fp at
/// `sender_sp - LINK_BELOW_SENDER_SP`.
pub const LINK_AT_FP: usize = 0;
pub const RETURN_AT_FP: usize = 8;
pub const RETURN_BELOW_SENDER_SP: usize = 8;
pub const LINK_BELOW_SENDER_SP: usize = 16;

/// Interpreter frame slots below fp, in words (JDK 11+): the `Method*` and the bcp.
pub const INTERP_METHOD_SLOT: usize = 3;
pub const INTERP_BCP_SLOT: usize = 8;
/// `frame::interpreter_frame_sender_sp_offset` and `..._last_sp_offset` (words from fp)
/// where VMStructs lack them.
pub const INTERP_SENDER_SP_WORDS: i64 = -1;
pub const INTERP_LAST_SP_WORDS: i64 = -2;

/// `frame::entry_frame_call_wrapper_offset` (words from fp) where VMStructs lacks it;
/// x86_64's VMStructs export it.
pub const ENTRY_FRAME_CALL_WRAPPER_WORDS: i64 = -6;

/// A return address as loaded, made usable: x86_64 stores them as they are.
#[inline(always)]
pub fn strip_pc(pc: usize) -> usize {
    pc
}

/// The interpreter caught at method entry, before its frame is built: rbx holds the
/// `Method*` (`regs.method`), the return address is at sp. The caller's frame.
pub fn interpreter_entry<M: Memory>(mem: &M, cur: Cursor, _regs: &Regs) -> Option<Cursor> {
    mem.read_usize(cur.sp).map(|pc| Cursor {
        pc,
        sp: cur.sp + 8,
        fp: cur.fp,
    })
}

/// Opcodes of the prologue/epilogue heuristics (docs/hotspot.md 4.5).
mod op {
    pub const PUSH_RBP: u8 = 0x55;
    pub const POP_RBP: u8 = 0x5d;
    pub const RET: u8 = 0xc3;
}

/// The top compiled frame (C1/C2 nmethod or native wrapper) whose pc may sit in its
/// prologue (before `complete`, from the code blob's frame-complete offset) or epilogue,
/// where the frame is not (or no longer) `frame_bytes` long. `entry` is the verified entry
/// point. Shapes (docs/hotspot.md 4.5): `push rbp; sub rsp, N` ... `add rsp, N; pop rbp;
/// <return poll>; ret`.
pub fn compiled_top<M: Memory>(
    mem: &M,
    cur: Cursor,
    _regs: &Regs,
    entry: usize,
    complete: usize,
    frame_bytes: usize,
) -> Top {
    let Some(at) = mem.read_u8(cur.pc) else {
        return Top::Whole;
    };
    let ret_at_sp = |sp: usize| {
        mem.read_usize(sp).map_or(Top::Broken, |pc| {
            Top::Caller(Cursor {
                pc,
                sp: sp + 8,
                fp: cur.fp,
            })
        })
    };
    if cur.pc < complete {
        if cur.pc <= entry || at == op::PUSH_RBP || frame_bytes == 0 {
            return ret_at_sp(cur.sp);
        }
        if cur.pc <= entry + 15 && mem.read_u8(cur.pc - 1) == Some(op::PUSH_RBP) {
            return mem.read_usize(cur.sp + 8).map_or(Top::Broken, |pc| {
                Top::Caller(Cursor {
                    pc,
                    sp: cur.sp + 16,
                    fp: cur.fp,
                })
            });
        }
        // Past push rbp and sub rsp: the frame is complete in all but name.
        return Top::Whole;
    }
    match at {
        op::RET => ret_at_sp(cur.sp),
        op::POP_RBP => match (mem.read_usize(cur.sp), mem.read_usize(cur.sp + 8)) {
            (Some(fp), Some(pc)) => Top::Caller(Cursor {
                pc,
                sp: cur.sp + 16,
                fp,
            }),
            _ => Top::Whole,
        },
        // Return safepoint poll after `pop rbp`: `cmp rsp, [r15+off]` then `ja`.
        0x49 if mem.read_u8(cur.pc - 1) == Some(op::POP_RBP)
            && mem.read_u8(cur.pc + 1) == Some(0x3b) =>
        {
            ret_at_sp(cur.sp)
        }
        0x0f if mem.read_u8(cur.pc + 1) == Some(0x87)
            && mem.read_u8(cur.pc + 6) == Some(op::RET) =>
        {
            ret_at_sp(cur.sp)
        }
        _ => Top::Whole,
    }
}

/// The caller of a stub caught as the leaf with no frame size of its own, or before its
/// frame is complete (`start` is its first instruction): by the native rules of
/// [`stub_caller`], else the return address at sp.
pub fn stub_top<M: Memory>(
    mem: &M,
    cur: Cursor,
    _regs: &Regs,
    _start: usize,
    bounds: Bounds,
    in_code: &dyn Fn(usize) -> bool,
) -> Option<Cursor> {
    stub_caller(mem, cur, bounds, in_code).or_else(|| {
        mem.read_usize(cur.sp).map(|pc| Cursor {
            pc,
            sp: cur.sp + 8,
            fp: cur.fp,
        })
    })
}

/// Whether the signal interrupted a system call: the pc is just after a `syscall`
/// instruction (the kernel delivers the signal on its way out of the call).
pub fn after_syscall<M: Memory>(mem: &M, pc: usize) -> bool {
    pc.checked_sub(2).is_some_and(|a| is_syscall(mem, a))
}

/// Whether the pc is at a `syscall` instruction: a restartable system call interrupted by
/// the signal, which the kernel rewound to run again after the handler.
pub fn at_syscall<M: Memory>(mem: &M, pc: usize) -> bool {
    is_syscall(mem, pc)
}

/// `syscall` (0f 05) at `at`.
#[link_section = sample_path_section!()]
fn is_syscall<M: Memory>(mem: &M, at: usize) -> bool {
    mem.read_u8(at) == Some(0x0f) && at.checked_add(1).and_then(|b| mem.read_u8(b)) == Some(0x05)
}

// ---------------------------------------------------------------------------------------
// Native frames (`native.rs`): DWARF rows, frame pointers, return addresses.
// ---------------------------------------------------------------------------------------

/// The DWARF registers of the unwind rows (`crate::libs::eh_frame`): rsp (7), rbp (6); the
/// return address is always at `CFA - 8` (the call pushed it), so the rows keep no rule for
/// it (16, the return-address column). Before a CIE's instructions, CFA = rsp + 8.
pub const DWARF: dwarf::Registers = dwarf::Registers {
    sp: 7,
    fp: 6,
    ra: None,
    initial_cfa_off: 8,
    negate_ra_state: false,
};

/// Words above sp searched for the top frame's return address into Java.
const RETURN_SCAN_WORDS: usize = 4;

/// The caller of the frame at `cur` by a DWARF rule: CFA from rsp or rbp, the return
/// address at `CFA - 8`, rbp restored from its slot or kept. Held to the same rules as
/// a frame-pointer step (the CFA is the caller's sp).
pub fn caller_by_rule<M: Memory>(
    mem: &M,
    cur: Cursor,
    _lr: usize,
    bounds: Bounds,
    row: dwarf::Row,
) -> Option<Cursor> {
    let base = if row.cfa_reg == dwarf::CFA_RBP {
        cur.fp
    } else {
        cur.sp
    };
    let cfa = base.checked_add_signed(row.cfa_off as isize)?;
    if !cfa.is_multiple_of(8)
        || cfa <= cur.sp
        || cfa - cur.sp > MAX_FRAME_BYTES
        || !bounds.holds(cfa - 8)
    {
        return None;
    }
    let pc = mem.read_usize(cfa - 8)?;
    let fp = if row.fp_off == dwarf::FP_SAME {
        cur.fp
    } else {
        mem.read_usize(cfa.checked_add_signed(row.fp_off as isize)?)?
    };
    if !follows_call(mem, pc) {
        return None;
    }
    Some(Cursor { pc, sp: cfa, fp })
}

/// The caller of the frame at `cur` through the x86_64 frame-pointer layout:
/// `[fp]` = caller's fp, `[fp + 8]` = return address, caller's sp = `fp + 16`.
/// `in_code` is not needed here: `fp + 16` is the caller's exact sp, Java's too.
pub fn caller<M: Memory>(
    mem: &M,
    cur: Cursor,
    bounds: Bounds,
    _in_code: &dyn Fn(usize) -> bool,
) -> Option<Cursor> {
    let fp = cur.fp;
    if !bounds.holds_record(cur.sp, fp) {
        return None;
    }
    let pc = mem.read_usize(fp + 8)?;
    // Not checked here: a Java caller's rbp may hold anything. The next step checks it
    // against the caller's sp (`fp + 16`), so native frame pointers increase strictly.
    let caller_fp = mem.read_usize(fp)?;
    if !follows_call(mem, pc) {
        return None;
    }
    Some(Cursor {
        pc,
        sp: fp + 16,
        fp: caller_fp,
    })
}

/// The interrupted function's return address when neither its DWARF rule nor frame
/// pointers give it: the first of the words at sp, sp+8, sp+16, sp+24 that returns into
/// the code cache right after a call (a frameless function called from compiled Java
/// code, or one caught inside its prologue, after `push rbp` but before `mov rbp, rsp`,
/// as the compiler may schedule other instructions in between). The word just below
/// that return address is what the function pushed first: the caller's rbp when it
/// looks like a frame pointer, else rbp is taken as unchanged.
pub fn return_at_sp<M: Memory>(
    mem: &M,
    cur: Cursor,
    _lr: usize,
    bounds: Bounds,
    in_code: &dyn Fn(usize) -> bool,
) -> Option<Cursor> {
    (0..RETURN_SCAN_WORDS).find_map(|k| {
        let slot = cur.sp.checked_add(k * 8)?;
        let pc = mem.read_usize(slot)?;
        if !(in_code(pc) && follows_call(mem, pc)) {
            return None;
        }
        let pushed = (k > 0)
            .then(|| mem.read_usize(slot - 8))
            .flatten()
            .filter(|fp| fp.is_multiple_of(8) && *fp > slot && bounds.holds(*fp));
        Some(Cursor {
            pc,
            sp: slot + 8,
            fp: pushed.unwrap_or(cur.fp),
        })
    })
}

/// The caller of a stub with no frame size of its own (a stub routine such as
/// `libmSin`) caught as the leaf: its return address at sp when it pushed nothing, else
/// through rbp when the stub opened a frame (`push rbp; mov rbp, rsp`, then saved
/// registers: sp no longer points at the return address) and that frame returns into
/// the code cache, else a return address a few words above sp.
fn stub_caller<M: Memory>(
    mem: &M,
    cur: Cursor,
    bounds: Bounds,
    in_code: &dyn Fn(usize) -> bool,
) -> Option<Cursor> {
    let returns = |pc: usize| in_code(pc) && follows_call(mem, pc);
    if let Some(pc) = mem.read_usize(cur.sp).filter(|&pc| returns(pc)) {
        return Some(Cursor {
            pc,
            sp: cur.sp + 8,
            fp: cur.fp,
        });
    }
    caller(mem, cur, bounds, in_code)
        .filter(|c| in_code(c.pc))
        .or_else(|| return_at_sp(mem, cur, 0, bounds, in_code))
}

/// Whether the instruction that ends just before `ret` is a call: `E8 rel32`, or
/// `FF /2` (indirect, through a register or memory, with any ModRM/SIB/displacement).
/// One 8-byte read of the bytes before `ret`.
pub fn follows_call<M: Memory>(mem: &M, ret: usize) -> bool {
    let Some(word) = ret.checked_sub(8).and_then(|a| mem.read_usize(a)) else {
        return false;
    };
    // b[i] is the byte at ret - 8 + i.
    let b = (word as u64).to_le_bytes();
    if b[3] == 0xe8 {
        return true;
    }
    // FF /2 of length k ends at ret: opcode at ret - k, ModRM after it.
    (2..=7).any(|k: usize| {
        let at = 8 - k;
        b[at] == 0xff
            && b.get(at + 1)
                .is_some_and(|&m| indirect_call_len(m, b.get(at + 2).copied()) == Some(k))
    })
}

/// Length of `FF /2` given its ModRM (and SIB, when there is one), or None if the
/// ModRM is not the call form.
fn indirect_call_len(modrm: u8, sib: Option<u8>) -> Option<usize> {
    if (modrm >> 3) & 7 != 2 {
        return None;
    }
    let md = modrm >> 6;
    let rm = modrm & 7;
    if md == 3 {
        return Some(2);
    }
    let mut len = 2;
    if rm == 4 {
        len += 1;
        if md == 0 && sib? & 7 == 5 {
            len += 4;
        }
    }
    len += match (md, rm) {
        (0, 5) => 4,
        (1, _) => 1,
        (2, _) => 4,
        _ => 0,
    };
    Some(len)
}
