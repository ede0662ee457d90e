use super::*;
use crate::libs::elf::{executable_files, LE};
use crate::sample::walk::dwarf::{publish, read};
use std::sync::atomic::Ordering;

/// The synthetic sections below are x86_64's (rsp, rbp): read as such on any target.
fn x86_rows(data: &[u8], vaddr: u64, bias: u64) -> Vec<Row> {
    rows_of_eh_frame_for(data, vaddr, bias, &crate::sample::walk::arch::x86_64::DWARF)
}

/// One CIE (zR, pcrel|sdata4, code align 1, data align -8, CFA = rsp+8, ra at CFA-8)
/// and one FDE of a classic `push rbp; mov rbp, rsp; ... leave; ret` function at ELF
/// address 0x1000, size 0x40, in a section at address 0x2000.
fn section() -> Vec<u8> {
    section_with(&[
        0x41, // advance 1 (after push rbp)
        0x0e, 16, // def_cfa_offset 16
        0x86, 2,    // rbp at cfa-16
        0x43, // advance 3 (after mov rbp, rsp)
        0x0d, 6, // def_cfa_register rbp
        0x02, 0x30, // advance1 0x30 (at leave+1... ret)
        0x0c, 7, 8, // def_cfa rsp+8
    ])
}

/// [`section`]'s CIE and an FDE of the same function running `program`.
fn section_with(program: &[u8]) -> Vec<u8> {
    section_of(&[0x0c, 7, 8], program)
}

/// [`section_with`], the CIE defining the CFA by `cie_cfa` (three bytes: nops for none).
fn section_of(cie_cfa: &[u8; 3], program: &[u8]) -> Vec<u8> {
    let mut d = Vec::new();
    // CIE
    let cie: Vec<u8> = [
        &0u32.to_le_bytes()[..],
        &[1],       // version
        b"zR\0",    // augmentation
        &[1],       // code align
        &[0x78],    // data align -8
        &[16],      // return address register
        &[1, 0x1b], // augmentation data: R = pcrel|sdata4
        cie_cfa,    // def_cfa rsp+8 (in section())
        &[0x90, 1], // offset r16 (ra) at cfa-8
        &[0, 0],    // padding
    ]
    .concat();
    d.extend_from_slice(&(cie.len() as u32).to_le_bytes());
    d.extend_from_slice(&cie);
    // FDE
    let fde_pos = d.len();
    let mut fde = Vec::new();
    fde.extend_from_slice(&((fde_pos + 4) as u32).to_le_bytes()); // CIE pointer
    let field_vaddr = 0x2000 + (fde_pos + 8) as i64;
    fde.extend_from_slice(&((0x1000 - field_vaddr) as i32).to_le_bytes());
    fde.extend_from_slice(&0x40u32.to_le_bytes());
    fde.push(0); // augmentation data length
    fde.extend_from_slice(program);
    while (fde.len() + 4) % 8 != 0 {
        fde.push(0);
    }
    d.extend_from_slice(&(fde.len() as u32).to_le_bytes());
    d.extend_from_slice(&fde);
    d.extend_from_slice(&0u32.to_le_bytes());
    d
}

#[test]
fn a_frame_pointer_function_gives_four_rules_and_an_end() {
    let rows = x86_rows(&section(), 0x2000, 0x10_0000);
    let b = 0x10_0000u64;
    let want = [
        (b + 0x1000, CFA_RSP, 8, FP_SAME),
        (b + 0x1001, CFA_RSP, 16, -16),
        (b + 0x1004, CFA_RBP, 16, -16),
        (b + 0x1034, CFA_RSP, 8, -16),
        (b + 0x1040, CFA_UNKNOWN, 0, 0),
    ];
    let got: Vec<_> = rows
        .iter()
        .map(|r| (r.pc, r.cfa_reg, r.cfa_off, r.fp_off))
        .collect();
    assert_eq!(got, want);
}

/// A program that cannot be run on keeps the rows before the failing instruction and has
/// no rule from there to the function's end. Before gimli, an unknown opcode left the whole
/// function without a rule, and `DW_CFA_def_cfa_register` after `DW_CFA_def_cfa_expression`
/// (which DWARF forbids: it needs a register-and-offset rule; libgcrypt's assembly has one,
/// in an epilogue) was read as the register plus the offset before the expression.
#[test]
fn a_program_that_cannot_go_on_keeps_its_rows_before_the_failure() {
    let b = 0x10_0000u64;
    let rows_of = |program: &[u8]| -> Vec<_> {
        x86_rows(&section_with(program), 0x2000, b)
            .iter()
            .map(|r| (r.pc, r.cfa_reg, r.cfa_off))
            .collect()
    };
    let after_push = [0x41, 0x0e, 16, 0x86, 2]; // advance 1; rsp+16; rbp at cfa-16
    let unknown_opcode = [&after_push[..], &[0x43, 0x3f, 0x43, 0x0e, 8]].concat();
    let want = [
        (b + 0x1000, CFA_RSP, 8),
        (b + 0x1001, CFA_RSP, 16),
        (b + 0x1004, CFA_UNKNOWN, 0),
    ];
    assert_eq!(rows_of(&unknown_opcode), want);
    // def_cfa_expression (DW_OP_breg7 0), advance 3, def_cfa_register rsp.
    let register_after_expression =
        [&after_push[..], &[0x43, 0x0f, 2, 0x77, 0, 0x43, 0x0d, 7]].concat();
    assert_eq!(rows_of(&register_after_expression), want);
}

/// A CIE that does not define the CFA leaves it where a call leaves it (x86_64: rsp + 8), as
/// the architecture says: gimli alone would start it at register 0 (rax), which no row can use.
#[test]
fn a_cie_without_a_cfa_rule_starts_from_the_call() {
    let b = 0x10_0000u64;
    let program = [0x41, 0x0e, 16]; // advance 1; def_cfa_offset 16
    let rows: Vec<_> = x86_rows(&section_of(&[0, 0, 0], &program), 0x2000, b)
        .iter()
        .map(|r| (r.pc, r.cfa_reg, r.cfa_off))
        .collect();
    let want = [
        (b + 0x1000, CFA_RSP, 8),
        (b + 0x1001, CFA_RSP, 16),
        (b + 0x1040, CFA_UNKNOWN, 0),
    ];
    assert_eq!(rows, want);
}

#[test]
fn table_lookup_finds_the_rule_in_force() {
    let rows = x86_rows(&section(), 0x2000, 0);
    let t = Table::single(0x1000, 0x2000, rows);
    assert_eq!(t.rule(0x1000).map(|r| r.cfa_off), Some(8));
    assert_eq!(
        t.rule(0x1002).map(|r| (r.cfa_reg, r.cfa_off)),
        Some((CFA_RSP, 16))
    );
    assert_eq!(t.rule(0x1010).map(|r| r.cfa_reg), Some(CFA_RBP));
    assert_eq!(t.rule(0x103f).map(|r| r.cfa_off), Some(8));
    assert_eq!(t.rule(0x1040), None, "past the function");
    assert_eq!(t.rule(0xfff), None, "before the library");
    assert_eq!(t.rule(0x2000), None, "after the library");
}

/// Damaged sections (cut short, bytes flipped, noise) give fewer rows, never a panic.
#[test]
fn damaged_sections_never_panic() {
    let good = section();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for cut in 0..good.len() {
        x86_rows(&good[..cut], 0x2000, 0);
    }
    for _ in 0..2000 {
        let mut d = good.clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() as usize) % d.len();
            d[i] = next() as u8;
        }
        x86_rows(&d, next(), next());
        let noise: Vec<u8> = (0..next() % 200).map(|_| next() as u8).collect();
        x86_rows(&noise, next(), next());
    }
}

/// A table replaced while a handler holds it stays readable until the hold is dropped;
/// holds taken after the replacement see the new table.
#[test]
fn a_replaced_table_is_freed_only_after_its_holders_left() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let row = |off| Row {
        pc: 0x1000,
        cfa_off: off,
        fp_off: FP_SAME,
        cfa_reg: CFA_RSP,
        ra: RA_BELOW_CFA,
    };
    publish(Box::new(Table::single(0x1000, 0x2000, vec![row(8)])));
    let hold = read();
    let done = Arc::new(AtomicBool::new(false));
    let replacer = {
        let done = done.clone();
        std::thread::spawn(move || {
            publish(Box::new(Table::single(0x1000, 0x2000, vec![row(16)])));
            done.store(true, Ordering::SeqCst);
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        !done.load(Ordering::SeqCst),
        "the old table was retired under a hold"
    );
    assert_eq!(
        hold.table().and_then(|t| t.rule(0x1000)).map(|r| r.cfa_off),
        Some(8)
    );
    drop(hold);
    replacer.join().unwrap();
    assert!(done.load(Ordering::SeqCst));
    assert_eq!(
        read()
            .table()
            .and_then(|t| t.rule(0x1000))
            .map(|r| r.cfa_off),
        Some(16)
    );
}

/// libc of this process: at the first instruction of any function, the return address is
/// where the call left it: x86_64 CFA = rsp + 8 (ra at CFA - 8); aarch64 CFA = sp, ra in x30.
#[test]
fn libc_rows_say_where_the_return_address_is_at_function_entry() {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let files = executable_files(&maps);
    let libc = files
        .iter()
        .find(|f| f.path.contains("/libc.so"))
        .expect("libc is mapped");
    let rows = rows_of_file(libc).expect("libc .eh_frame");
    assert!(rows.len() > 1000, "rows: {}", rows.len());
    // The same rows from libc as loaded (how a deleted library's are read).
    let image = crate::libs::elf::loaded_image::open(libc.exec_start).expect("libc in memory");
    let from_memory = rows_of_elf(&image, libc.exec_start, libc.exec_offset).expect("in memory");
    assert!(
        rows == from_memory,
        "{} rows from the file, {} in memory",
        rows.len(),
        from_memory.len()
    );
    let t = Table::single(libc.start, libc.end, rows);
    let sym = |name: &std::ffi::CStr| {
        // SAFETY: dlsym only reads the link map; `name` is NUL-terminated.
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as u64 }
    };
    for f in [sym(c"getpid"), sym(c"qsort")] {
        assert_ne!(f, 0);
        let r = t.rule(f).expect("a rule at function entry");
        let entry = if cfg!(target_arch = "aarch64") {
            (CFA_RSP, 0, FP_SAME, dwarf::RA_IN_LR)
        } else {
            (CFA_RSP, 8, FP_SAME, RA_BELOW_CFA)
        };
        assert_eq!((r.cfa_reg, r.cfa_off, r.fp_off, r.ra), entry, "at {f:#x}");
    }
}

// ---------------------------------------------------------------------------------------
// aarch64 rows, read on any host from aarch64 ELF files.
// ---------------------------------------------------------------------------------------

use crate::sample::walk::arch::aarch64::DWARF as AARCH64;
use crate::sample::walk::dwarf::{CFA_FP, CFA_SP, RA_BESIDE_FP, RA_IN_LR};

/// The aarch64 rows of the ELF file at `path` at its link addresses (bias 0).
fn aarch64_rows(path: &str) -> Table {
    let elf = Elf::open(path).unwrap_or_else(|| panic!("{path}"));
    let eh = elf.section_named(".eh_frame").expect(".eh_frame");
    let data = elf.read(eh.offset, eh.size).unwrap();
    let rows = rows_of_eh_frame_for(&data, eh.addr, 0, &AARCH64);
    Table::single(0, u64::MAX, rows)
}

/// (CFA register, CFA offset, x29's slot, return address).
type Rule = (u8, i32, i16, i8);

/// The [`Rule`] at `pc`.
fn rule_at(t: &Table, pc: u64) -> Option<Rule> {
    t.rule(pc).map(|r| (r.cfa_reg, r.cfa_off, r.fp_off, r.ra))
}

/// The committed fixture (`fixtures/aarch64_unwind.c`, built with Debian's
/// aarch64-linux-gnu-gcc -O2): a leaf keeps its return address in x30; a caller saves the
/// pair x29/x30 (`stp x29, x30, [sp, #-16]!`) and restores it; a variable-sized frame moves
/// the CFA to x29; a large frame saves its record 8 KiB below the CFA.
#[test]
fn aarch64_rows_follow_the_prologues_of_gcc_code() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/libs/fixtures/aarch64_unwind.so"
    );
    let t = aarch64_rows(path);
    let syms = crate::libs::symbols::Table::read(path).expect("symbols");
    for (addr, name) in [
        (0x350, "fixture_leaf"),
        (0x360, "fixture_calls"),
        (0x390, "fixture_alloca"),
        (0x3e0, "fixture_big"),
    ] {
        assert_eq!(syms.symbol_at(addr).as_deref(), Some(name), "at {addr:#x}");
    }
    let leaf = (CFA_SP, 0, FP_SAME, RA_IN_LR);
    let pair = (CFA_SP, 16, -16, RA_BESIDE_FP);
    let want: &[(u64, Rule)] = &[
        // fixture_leaf: add; add; ret.
        (0x350, leaf),
        (0x358, leaf),
        // fixture_calls: stp x29, x30, [sp, #-16]!; ...; ldp x29, x30, [sp], #16; add; ret.
        (0x360, leaf),
        (0x364, pair),
        (0x37c, pair),
        (0x380, leaf),
        // fixture_alloca: ... mov x29, sp; sub sp, sp, x0: the CFA is x29 + 16.
        (0x394, pair),
        (0x3a0, pair),
        (0x3a4, (CFA_FP, 16, -16, RA_BESIDE_FP)),
        (0x3d4, (CFA_FP, 16, -16, RA_BESIDE_FP)),
        (0x3d8, leaf),
        // fixture_big: mov x12, #8208; sub sp, sp, x12; ...; stp x29, x30, [sp].
        (0x3e4, leaf),
        (0x3e8, (CFA_SP, 8208, FP_SAME, RA_IN_LR)),
        (0x3f4, (CFA_SP, 8208, -8208, RA_BESIDE_FP)),
        (0x418, leaf),
    ];
    for (pc, rule) in want {
        assert_eq!(rule_at(&t, *pc), Some(*rule), "at {pc:#x}");
    }
    assert_eq!(rule_at(&t, 0x420), None, "past the last function");
}

/// The same fixture built with `-mbranch-protection=pac-ret+leaf` (`aarch64_unwind_pac.so`):
/// each function signs x30 (`paciasp`, after the leaf's first instruction) and authenticates it
/// before returning, and its rows say so with `DW_CFA_AARCH64_negate_ra_state`. The toggles
/// are read without ending the rows: the same rules as the plain build's at the same points,
/// the return address (signed, `arch::strip_pc` clears the code) where it is without them.
#[test]
fn aarch64_rows_of_pointer_authenticated_code_read_through_negate_ra_state() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/libs/fixtures/aarch64_unwind_pac.so"
    );
    let t = aarch64_rows(path);
    let syms = crate::libs::symbols::Table::read(path).expect("symbols");
    for (addr, name) in [
        (0x3c0, "fixture_leaf"),
        (0x3d4, "fixture_calls"),
        (0x404, "fixture_alloca"),
        (0x460, "fixture_big"),
    ] {
        assert_eq!(syms.symbol_at(addr).as_deref(), Some(name), "at {addr:#x}");
    }
    let leaf = (CFA_SP, 0, FP_SAME, RA_IN_LR);
    let pair = (CFA_SP, 16, -16, RA_BESIDE_FP);
    let want: &[(u64, Rule)] = &[
        // fixture_leaf: add; paciasp; add; autiasp; ret: x30 signed in between.
        (0x3c0, leaf),
        (0x3c8, leaf),
        (0x3d0, leaf),
        // fixture_calls: paciasp; stp x29, x30, [sp, #-16]!; ...; ldp; autiasp; add; ret.
        (0x3d4, leaf),
        (0x3d8, leaf),
        (0x3dc, pair),
        (0x3f4, pair),
        (0x3f8, leaf),
        (0x3fc, leaf),
        // fixture_alloca: ... mov x29, sp; sub sp, sp, x0: the CFA is x29 + 16.
        (0x410, pair),
        (0x41c, (CFA_FP, 16, -16, RA_BESIDE_FP)),
        (0x44c, (CFA_FP, 16, -16, RA_BESIDE_FP)),
        (0x450, leaf),
        // fixture_big: paciasp; mov x12, #8208; sub sp, sp, x12; ...; stp x29, x30, [sp].
        (0x464, leaf),
        (0x46c, (CFA_SP, 8208, FP_SAME, RA_IN_LR)),
        (0x478, (CFA_SP, 8208, -8208, RA_BESIDE_FP)),
        (0x4a0, leaf),
    ];
    for (pc, rule) in want {
        assert_eq!(rule_at(&t, *pc), Some(*rule), "at {pc:#x}");
    }
    assert_eq!(rule_at(&t, 0x4a8), None, "past the last function");
}

/// Debian's aarch64 C library (the cross toolchain's, when installed): `getpid` is a leaf
/// (`svc` with x30 untouched), `clock_gettime` saves its frame record after five
/// instructions.
#[test]
fn aarch64_libc_rows_keep_the_return_address_in_lr_until_it_is_saved() {
    let path = "/usr/aarch64-linux-gnu/lib/libc.so.6";
    if !std::path::Path::new(path).exists() {
        eprintln!("skipped: no {path} (Debian's libc6-arm64-cross)");
        return;
    }
    let t = aarch64_rows(path);
    let elf = Elf::open(path).unwrap();
    let dynsym = |name: &str| -> u64 {
        let s = elf.section_named(".dynsym").unwrap();
        let strs = elf.sections[s.link as usize];
        let data = elf.read(s.offset, s.size).unwrap();
        let names = elf.read(strs.offset, strs.size).unwrap();
        let syms = object::pod::slice_from_all_bytes::<object::elf::Sym64<LE>>(&data).unwrap();
        syms.iter()
            .find(|e| {
                use object::read::elf::Sym;
                let at = e.st_name(LE) as usize;
                names.get(at..at + name.len() + 1) == Some(&[name.as_bytes(), b"\0"].concat())
            })
            .map(|e| object::read::elf::Sym::st_value(e, LE))
            .unwrap_or_else(|| panic!("{name}"))
    };
    let leaf = (CFA_SP, 0, FP_SAME, RA_IN_LR);
    let getpid = dynsym("getpid");
    assert_eq!(rule_at(&t, getpid), Some(leaf));
    assert_eq!(rule_at(&t, getpid + 8), Some(leaf));
    let clock = dynsym("clock_gettime");
    assert_eq!(rule_at(&t, clock), Some(leaf));
    assert_eq!(
        rule_at(&t, clock + 20),
        Some((CFA_SP, 16, -16, RA_BESIDE_FP))
    );
    let known = t
        .libs()
        .iter()
        .flat_map(|l| &l.rows)
        .filter(|r| r.cfa_reg != CFA_UNKNOWN)
        .count();
    assert!(known > 10_000, "{known} usable rows");
}
