//! The aarch64 prologue, epilogue and stub checks on hand-assembled code (the encodings in
//! the comments), run on any host.

use super::*;
use crate::sample::vm::debuginfo::Bytes;

const STACK: usize = 0x7000_0000;
const STACK_LEN: usize = 0x400;
const CODE: usize = 0x4000_0000;
const CODE_LEN: usize = 0x200;
/// A return address into the caller's code, as lr holds it.
const LR: usize = CODE + 0x1f0;

const NOP: u32 = 0xd503_201f;
const BANG_SUB: u32 = 0xd140_07e9; // sub x9, sp, #1, lsl #12
const BANG_STR: u32 = 0xf900_013f; // str xzr, [x9]
const SUB_SP_64: u32 = 0xd101_03ff; // sub sp, sp, #64
const STP_48: u32 = 0xa903_7bfd; // stp x29, x30, [sp, #48]
const LDP_48: u32 = 0xa943_7bfd; // ldp x29, x30, [sp, #48]
const ADD_SP_64: u32 = 0x9101_03ff; // add sp, sp, #64
const POLL_LDR: u32 = 0xf940_1788; // ldr x8, [x28, #40]
const CMP_SP_X8: u32 = 0xeb28_63ff; // cmp sp, x8
const B_HI: u32 = 0x5400_0108; // b.hi .+32
const RET: u32 = 0xd65f_03c0;
const MOVZ_X8: u32 = 0xd284_0008; // mov x8, #0x2000
const ADD_SP_X8: u32 = 0x8b28_63ff; // add sp, sp, x8
const SUB_SP_X8: u32 = 0xcb28_63ff; // sub sp, sp, x8
const LDP_POST: u32 = 0xa8c1_7bfd; // ldp x29, x30, [sp], #16
const PUSH: u32 = 0xa9bf_7bfd; // stp x29, x30, [sp, #-16]!
const MOV_FP: u32 = 0x9100_03fd; // mov x29, sp
const MUL: u32 = 0x9b02_7c20; // mul x0, x1, x2

struct Mem {
    stack: Vec<u8>,
    code: Vec<u8>,
}

impl Mem {
    fn new(code: &[u32]) -> Mem {
        let mut m = Mem {
            stack: vec![0; STACK_LEN],
            code: vec![0; CODE_LEN],
        };
        for (k, i) in code.iter().enumerate() {
            m.code[k * 4..k * 4 + 4].copy_from_slice(&i.to_le_bytes());
        }
        m
    }
    fn word(&mut self, addr: usize, v: usize) {
        let at = addr - STACK;
        self.stack[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
}

impl Memory for Mem {
    fn read_u8(&self, addr: usize) -> Option<u8> {
        self.read_u32(addr).map(|w| w as u8)
    }
    fn read_u32(&self, addr: usize) -> Option<u32> {
        let c = Bytes {
            base: CODE,
            data: &self.code,
        };
        c.read_u32(addr)
    }
    fn read_usize(&self, addr: usize) -> Option<usize> {
        let s = Bytes {
            base: STACK,
            data: &self.stack,
        };
        s.read_usize(addr)
    }
}

fn regs() -> Regs {
    Regs {
        lr: LR,
        ..Regs::default()
    }
}

fn at(k: usize, sp: usize) -> Cursor {
    Cursor {
        pc: CODE + 4 * k,
        sp,
        fp: 0x1234_5678,
    }
}

const SP: usize = STACK + 0x100;

#[test]
fn a_small_prologue_returns_through_lr_until_the_pair_is_stored() {
    // Verified entry at 0; frame complete at 6.
    let code = [NOP, BANG_SUB, BANG_STR, SUB_SP_64, STP_48, MUL, MUL];
    let mut m = Mem::new(&code);
    let complete = CODE + 4 * 6;
    let top = |k: usize, sp: usize| compiled_top(&m, at(k, sp), &regs(), CODE, complete, 64);
    let lr = |sp: usize| {
        Top::Caller(Cursor {
            pc: LR,
            sp,
            fp: 0x1234_5678,
        })
    };
    assert_eq!(top(0, SP), lr(SP));
    assert_eq!(top(3, SP), lr(SP), "at the sub: nothing moved yet");
    assert_eq!(
        top(4, SP - 64),
        lr(SP),
        "at the stp: sp moved, the pair not stored"
    );
    m.word(SP - 16, 0xf00d);
    m.word(SP - 8, 0x0bad_cafe);
    let top = compiled_top(&m, at(5, SP - 64), &regs(), CODE, complete, 64);
    assert_eq!(
        top,
        Top::Caller(Cursor {
            pc: 0x0bad_cafe,
            sp: SP,
            fp: 0xf00d
        })
    );
}

#[test]
fn a_large_prologue_pops_the_pushed_pair_then_is_whole() {
    let code = [PUSH, MOV_FP, MOVZ_X8, SUB_SP_X8, MUL];
    let mut m = Mem::new(&code);
    m.word(SP - 16, 0xf00d);
    m.word(SP - 8, 0x0bad_cafe);
    let complete = CODE + 4 * 4;
    let pair = Top::Caller(Cursor {
        pc: 0x0bad_cafe,
        sp: SP,
        fp: 0xf00d,
    });
    for k in 1..=3 {
        assert_eq!(
            compiled_top(&m, at(k, SP - 16), &regs(), CODE, complete, 0x2010),
            pair,
            "pc at {k}"
        );
    }
    // Not decodable as a prologue past the register sub: whole (complete in all but name).
    let code = [PUSH, MOVZ_X8, SUB_SP_X8, MUL, MUL];
    let m = Mem::new(&code);
    assert_eq!(
        compiled_top(&m, at(3, SP - 0x2010), &regs(), CODE, CODE + 16, 0x2010),
        Top::Whole
    );
}

#[test]
fn the_epilogue_returns_through_lr_once_the_pair_is_loaded() {
    let code = [MUL, LDP_48, ADD_SP_64, POLL_LDR, CMP_SP_X8, B_HI, RET];
    let m = Mem::new(&code);
    let top = |k: usize, sp: usize| compiled_top(&m, at(k, sp), &regs(), CODE, CODE, 64);
    let lr = |sp: usize| {
        Top::Caller(Cursor {
            pc: LR,
            sp,
            fp: 0x1234_5678,
        })
    };
    assert_eq!(top(0, SP - 64), Top::Whole, "in the body");
    assert_eq!(
        top(1, SP - 64),
        Top::Whole,
        "at the ldp: the frame is whole"
    );
    assert_eq!(top(2, SP - 64), lr(SP), "at the add");
    for k in 3..=6 {
        assert_eq!(top(k, SP), lr(SP), "at {k}: frame popped");
    }
}

#[test]
fn the_large_epilogue_pops_the_pair_at_sp() {
    let code = [MOVZ_X8, ADD_SP_X8, LDP_POST, RET];
    let mut m = Mem::new(&code);
    m.word(SP - 16, 0xf00d);
    m.word(SP - 8, 0x0bad_cafe);
    let top = |k: usize, sp: usize| compiled_top(&m, at(k, sp), &regs(), CODE, CODE, 0x2010);
    assert_eq!(top(0, SP - 0x2010), Top::Whole);
    assert_eq!(top(1, SP - 0x2010), Top::Whole);
    assert_eq!(
        top(2, SP - 16),
        Top::Caller(Cursor {
            pc: 0x0bad_cafe,
            sp: SP,
            fp: 0xf00d
        })
    );
}

#[test]
fn stubs_return_through_lr_or_their_frame_record() {
    let in_code = |pc: usize| (CODE..CODE + CODE_LEN).contains(&pc);
    let bounds = Bounds {
        low: STACK,
        high: STACK + STACK_LEN,
    };
    // Frameless: lr.
    let m = Mem::new(&[MUL, MUL, RET]);
    let c = stub_top(&m, at(1, SP), &regs(), CODE, bounds, &in_code);
    assert_eq!(c.map(|c| (c.pc, c.sp)), Some((LR, SP)));
    // lr signed (as by a JVM built with branch protection, -XX:UseBranchProtection): in the
    // code cache once stripped; the walk strips every pc a step gives (walk/vm.rs).
    let signed = Regs {
        lr: 0x0042_0000_0000_0000 | LR,
        ..Regs::default()
    };
    let c = stub_top(&m, at(1, SP), &signed, CODE, bounds, &in_code);
    assert_eq!(c.map(|c| (strip_pc(c.pc), c.sp)), Some((LR, SP)));
    // lr outside the code cache: no caller.
    let r = Regs {
        lr: 0x10,
        ..Regs::default()
    };
    assert_eq!(stub_top(&m, at(1, SP), &r, CODE, bounds, &in_code), None);
    // A frame record: just pushed, then through fp.
    let mut m = Mem::new(&[PUSH, MOV_FP, MUL, MUL, RET]);
    m.word(SP - 16, 0xf00d);
    m.word(SP - 8, 0x0bad_cafe);
    let c = stub_top(&m, at(1, SP - 16), &regs(), CODE, bounds, &in_code);
    assert_eq!(
        c.map(|c| (c.pc, c.sp, c.fp)),
        Some((0x0bad_cafe, SP, 0xf00d))
    );
    let cur = Cursor {
        fp: SP - 16,
        ..at(3, SP - 48)
    };
    let c = stub_top(&m, cur, &regs(), CODE, bounds, &in_code);
    assert_eq!(
        c.map(|c| (c.pc, c.sp, c.fp)),
        Some((0x0bad_cafe, SP, 0xf00d))
    );
}

#[test]
fn return_addresses_lose_their_authentication_code() {
    assert_eq!(strip_pc(0x002d_ffff_a1b2_c3d4), 0xffff_a1b2_c3d4);
    // As qemu-user's default CPU signed one (paciasp) in the aarch64 suite's mode pac.
    assert_eq!(strip_pc(0x0042_0055_17a7_a870), 0x55_17a7_a870);
    assert_eq!(strip_pc(0xff00_0000_0040_1000), 0x40_1000);
    assert_eq!(strip_pc(0x40_1000), 0x40_1000);
}

#[test]
fn svc_is_a_system_call() {
    let m = Mem::new(&[MUL, 0xd400_0001, MUL]);
    assert!(at_syscall(&m, CODE + 4));
    assert!(after_syscall(&m, CODE + 8));
    assert!(!after_syscall(&m, CODE + 4));
}

#[test]
fn the_interpreter_entry_returns_through_lr_to_the_sender_sp() {
    let m = Mem::new(&[]);
    let r = Regs {
        lr: LR,
        sender_sp: SP + 64,
        ..Regs::default()
    };
    let c = interpreter_entry(&m, at(0, SP), &r);
    assert_eq!(c.map(|c| (c.pc, c.sp)), Some((LR, SP + 64)));
    let below = Regs {
        sender_sp: SP - 8,
        ..r
    };
    assert_eq!(interpreter_entry(&m, at(0, SP), &below), None);
}

#[test]
fn a_leaf_c_function_called_from_java_returns_through_lr() {
    let in_code = |pc: usize| (CODE..CODE + CODE_LEN).contains(&pc);
    let bounds = Bounds {
        low: STACK,
        high: STACK + STACK_LEN,
    };
    // A return address after `bl` (at CODE) and one after `blr x8` (at CODE + 8).
    let mut m = Mem::new(&[0x9400_0010, MUL, 0xd63f_0100, MUL]);
    let native = Cursor {
        pc: 0x10_0000,
        sp: SP,
        fp: 0x1234_5678,
    };
    for lr in [CODE + 4, CODE + 12] {
        let c = return_at_sp(&m, native, lr, bounds, &in_code);
        assert_eq!(c, Some(Cursor { pc: lr, ..native }));
    }
    // Not after a call, outside the code cache, or unknown: none.
    assert_eq!(return_at_sp(&m, native, CODE + 8, bounds, &in_code), None);
    assert_eq!(return_at_sp(&m, native, 0x10_0040, bounds, &in_code), None);
    assert_eq!(return_at_sp(&m, native, 0, bounds, &in_code), None);
    // The function saved lr in a frame record at fp: it may have moved sp, so none.
    m.word(SP + 0x20 + 8, CODE + 4);
    let framed = Cursor {
        fp: SP + 0x20,
        ..native
    };
    assert_eq!(return_at_sp(&m, framed, CODE + 4, bounds, &in_code), None);
}

/// Native frames by DWARF rows: a leaf returns through lr (the interrupted frame's only),
/// a frame that saved its record returns through the saved pair (its return address
/// stripped of an authentication code), a variable-sized frame from x29.
#[test]
fn dwarf_rows_unwind_leaf_paired_and_fp_based_frames() {
    let bounds = Bounds {
        low: STACK,
        high: STACK + STACK_LEN,
    };
    // Return addresses after a `bl`: CODE + 4 and CODE + 12.
    let mut m = Mem::new(&[0x9400_0010, MUL, 0x9400_0010, MUL]);
    let row = |cfa_reg, cfa_off, fp_off, ra| dwarf::Row {
        pc: 0,
        cfa_off,
        fp_off,
        cfa_reg,
        ra,
    };
    let cur = Cursor {
        pc: 0x10_0000,
        sp: SP,
        fp: 0x1234_5678,
    };
    let leaf = row(dwarf::CFA_SP, 0, dwarf::FP_SAME, dwarf::RA_IN_LR);
    assert_eq!(
        caller_by_rule(&m, cur, CODE + 4, bounds, leaf),
        Some(Cursor {
            pc: CODE + 4,
            ..cur
        })
    );
    // A leaf built with pac-ret+leaf signs lr at entry (paciasp): the caller is the address
    // without its code (the suite's mode pac samples such a leaf).
    assert_eq!(
        caller_by_rule(&m, cur, 0x0042_0000_0000_0000 | (CODE + 4), bounds, leaf),
        Some(Cursor {
            pc: CODE + 4,
            ..cur
        })
    );
    // Past the interrupted frame lr is gone: no caller from it.
    assert_eq!(caller_by_rule(&m, cur, 0, bounds, leaf), None);
    // Not after a call.
    assert_eq!(caller_by_rule(&m, cur, CODE + 8, bounds, leaf), None);

    // stp x29, x30, [sp, #-32]!: the pair at CFA - 32, CFA = sp + 32.
    m.word(SP, STACK + 0x300);
    m.word(SP + 8, 0x002d_0000_0000_0000 | (CODE + 12));
    let pair = row(dwarf::CFA_SP, 32, -32, dwarf::RA_BESIDE_FP);
    let want = Cursor {
        pc: CODE + 12,
        sp: SP + 32,
        fp: STACK + 0x300,
    };
    assert_eq!(caller_by_rule(&m, cur, 0, bounds, pair), Some(want));
    // The same, by words from the CFA.
    let words = row(dwarf::CFA_SP, 32, -32, -3);
    assert_eq!(caller_by_rule(&m, cur, 0, bounds, words), Some(want));
    // CFA = x29 + 16 with the record at x29 (sp moved by a run-time amount below it).
    let framed = Cursor {
        fp: SP,
        sp: SP - 0x40,
        ..cur
    };
    let by_fp = row(dwarf::CFA_FP, 16, -16, dwarf::RA_BESIDE_FP);
    assert_eq!(
        caller_by_rule(&m, framed, 0, bounds, by_fp),
        Some(Cursor {
            sp: SP + 16,
            ..want
        })
    );
    // A saved return address with the CFA at sp, or a CFA outside the stack: none.
    let none = row(dwarf::CFA_SP, 0, dwarf::FP_SAME, -2);
    assert_eq!(caller_by_rule(&m, cur, 0, bounds, none), None);
    let out = row(dwarf::CFA_SP, STACK_LEN as i32, -16, dwarf::RA_BESIDE_FP);
    assert_eq!(caller_by_rule(&m, cur, 0, bounds, out), None);
}

/// Without a row: the frame record at x29, monotonic, inside the stack, never into the
/// code cache (whose caller needs an exact sp); the caller's sp is the record's top.
#[test]
fn frame_records_chain_native_frames_but_not_into_java() {
    let bounds = Bounds {
        low: STACK,
        high: STACK + STACK_LEN,
    };
    let mut m = Mem::new(&[0x9400_0010, MUL, 0x9400_0010, MUL]);
    // Only the second return address counts as Java code here.
    let in_code = |pc: usize| pc == CODE + 12;
    m.word(SP + 0x20, SP + 0x80);
    m.word(SP + 0x28, 0x002d_0000_0000_0000 | (CODE + 4));
    let cur = Cursor {
        pc: 0x10_0000,
        sp: SP,
        fp: SP + 0x20,
    };
    assert_eq!(
        caller(&m, cur, bounds, &in_code),
        Some(Cursor {
            pc: CODE + 4,
            sp: SP + 0x30,
            fp: SP + 0x80
        })
    );
    // Into the code cache: not taken.
    m.word(SP + 0x28, CODE + 12);
    assert_eq!(caller(&m, cur, bounds, &in_code), None);
    m.word(SP + 0x28, CODE + 4);
    // A record below sp, misaligned, or outside the stack: none.
    for fp in [SP - 0x10, SP + 0x21, STACK + STACK_LEN - 8] {
        assert_eq!(
            caller(&m, Cursor { fp, ..cur }, bounds, &in_code),
            None,
            "{fp:#x}"
        );
    }
    // Not after a call.
    m.word(SP + 0x28, CODE + 8);
    assert_eq!(caller(&m, cur, bounds, &in_code), None);
}
