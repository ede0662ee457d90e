//! Native frames: unwinding from a pc outside the code cache (libjvm, libc, JNI
//! libraries) back to the Java frames, for the VM walker (`vm.rs`).
//!
//! Each step takes the first rule that gives a plausible caller: the function's DWARF row
//! (`dwarf.rs`, built at start from `.eh_frame` by `crate::libs::eh_frame`: libc, zlib and other code without
//! frame pointers), then the frame-pointer chain (HotSpot's own code, libjvm.so, is built
//! with frame pointers on x86_64 Linux and has no rows), then, for the interrupted frame
//! only, a short scan above sp for a return address into Java (a function caught in its
//! prologue). How a row or a frame record is applied is the architecture's
//! (`arch::caller_by_rule`, `arch::caller`; on aarch64 the interrupted frame's return address
//! may still be in lr). Where none works the walker falls back to the thread's frame anchor,
//! as it did before this module existed.
//!
//! `cstack=vmx` also records the native pcs walked (one `traces::kind::NATIVE_PC` frame
//! each, named at dump time by `crate::libs::symbols`), and gives threads without any Java frame
//! (compiler, GC, attached native threads) their native stack. `cstack=vm` records none.
//!
//! Rules of the chain (each step, before a frame is trusted):
//! - the caller's sp (CFA) is above sp (aarch64: or at it, while the return address is in
//!   lr), 8-aligned, inside the thread's stack, at most `MAX_FRAME_BYTES` away; a frame
//!   pointer is 8-aligned, not below sp, inside the stack;
//! - the saved return address follows a call instruction (a cheap test that rejects most
//!   values read through a frame pointer register that held something else);
//! - frame pointers increase strictly (a chain that loops or goes back is broken): each
//!   must be at or above the sp its callee's frame gives (`callee fp + 16`).
//!
//! Everything here is signal-safe: memory through [`Memory`] (crash-protected loads in the
//! handler, byte arrays in the tests), no allocation, every loop bounded.

use std::sync::atomic::{AtomicU8, Ordering};

use super::{arch, dwarf};
use crate::counters::Counter;
use crate::sample::frame::Frame;
use crate::sample::load_census::Site;
use crate::sample::safe_access::load_usize_at;
use crate::sample::vm::debuginfo::Memory;
use crate::sample::vm::SiteMemory;

/// Native frames walked at most per sample (recorded or not).
pub const MAX_NATIVE_FRAMES: usize = 256;
#[cfg(all(test, target_arch = "x86_64"))] // the tests below are x86_64's
use super::stack::UNKNOWN_STACK_BYTES;
pub use super::stack::{Bounds, Cursor, MAX_FRAME_BYTES};

/// Which native frames a signal sample records ([`Record`]). Set at start.
static RECORD: AtomicU8 = AtomicU8::new(Record::None as u8);

/// Which native frames a signal sample records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Record {
    /// None (allocation stacks, AsyncGetCallTrace).
    None = 0,
    /// `cstack=vm`: those above the top Java frame (the C code a JNI method or the VM runs,
    /// from the interrupted pc down to the anchor or the first Java frame), and the native
    /// stack of a thread with no Java frame; not those between Java frames.
    Leaf = 1,
    /// `cstack=vmx`: all of them, between Java frames too.
    Mixed = 2,
}

/// Sets which native frames are recorded. Not called from signals.
pub fn set_record(r: Record) {
    RECORD.store(r as u8, Ordering::Relaxed);
}

/// Whether native frames are recorded everywhere (`cstack=vmx`). Signal-safe.
pub fn mixed() -> bool {
    RECORD.load(Ordering::Relaxed) == Record::Mixed as u8
}

/// Whether the native frames above the top Java frame are recorded. Signal-safe.
pub fn leaf() -> bool {
    RECORD.load(Ordering::Relaxed) != Record::None as u8
}

/// How a native walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// A return address inside the code cache, after at least one native frame: the Java
    /// walk goes on from this frame.
    Java(Cursor),
    /// sp reached the frame anchor's sp: Java frames resume at the anchor.
    Anchor,
    /// A frame pointer of 0: the outermost frame of the thread (the thread start code
    /// clears it).
    Root,
    /// The chain broke one of the rules, or was longer than `MAX_NATIVE_FRAMES`.
    Broken,
    /// The output buffer is full.
    Full,
}

/// Where native pcs go: the walker's frame buffer from index `*n` on, when `record`.
pub struct Sink<'a> {
    pub frames: &'a mut [Frame],
    pub n: &'a mut usize,
    pub record: bool,
    /// Frames this walk recorded.
    pub recorded: usize,
}

impl<'a> Sink<'a> {
    pub fn new(frames: &'a mut [Frame], n: &'a mut usize, record: bool) -> Sink<'a> {
        Sink {
            frames,
            n,
            record,
            recorded: 0,
        }
    }

    /// false: the buffer is full.
    fn push(&mut self, pc: usize) -> bool {
        if !self.record {
            return true;
        }
        match self.frames.get_mut(*self.n) {
            Some(slot) => {
                *slot = Frame::native(pc as u64);
                *self.n += 1;
                self.recorded += 1;
                true
            }
            None => false,
        }
    }
}

/// Walks native frames from `start` by frame pointers: records each pc outside the code
/// cache (when the sink records), and stops at the first return address `in_code`, at
/// `stop_sp` (the anchor's sp; 0 = none), at the root, or where the chain breaks. `lr` is the
/// interrupted link register when `start` is the interrupted frame (aarch64), else 0.
/// Signal-safe.
#[allow(clippy::too_many_arguments)]
pub fn unwind<M: Memory>(
    mem: &M,
    rules: Option<&dwarf::Table>,
    start: Cursor,
    lr: usize,
    bounds: Bounds,
    stop_sp: usize,
    in_code: &dyn Fn(usize) -> bool,
    sink: &mut Sink,
) -> End {
    let mut cur = start;
    for step in 0..MAX_NATIVE_FRAMES {
        if in_code(cur.pc) {
            // The start pc itself in the code cache is no progress: not ours to walk.
            return if step == 0 {
                End::Broken
            } else {
                End::Java(cur)
            };
        }
        if stop_sp != 0 && cur.sp >= stop_sp {
            return End::Anchor;
        }
        if !sink.push(cur.pc) {
            return End::Full;
        }
        // The DWARF rule of the function holding the pc, where there is one (a return
        // address may be the first byte of the next function: look up the call's byte).
        let at = if step == 0 {
            cur.pc
        } else {
            cur.pc.wrapping_sub(1)
        };
        // The link register holds a return address for the interrupted frame only.
        let step_lr = if step == 0 { lr } else { 0 };
        let by_rule = rules
            .and_then(|t| t.rule(at as u64))
            .and_then(|row| arch::caller_by_rule(mem, cur, step_lr, bounds, row));
        // A frame pointer of 0 ends a chain of frame pointers; code with a DWARF rule (built
        // without them) may hold 0 in rbp as any other value.
        if by_rule.is_none() && cur.fp == 0 {
            return End::Root;
        }
        if by_rule.is_some() {
            Counter::WalkvmNativeDwarfSteps.inc();
        }
        let next = by_rule
            .or_else(|| arch::caller(mem, cur, bounds, in_code))
            .or_else(|| {
                // The interrupted function may not have pushed its frame pointer yet (or never
                // does): rbp is then its caller's, often compiled Java code's, where it holds
                // anything. Its return address is at sp if it pushed nothing else; take it
                // only when it returns into the code cache after a call.
                (step == 0)
                    .then(|| arch::return_at_sp(mem, cur, lr, bounds, in_code))
                    .flatten()
            });
        match next {
            Some(next) => cur = next,
            None => return End::Broken,
        }
    }
    End::Broken
}

// ---------------------------------------------------------------------------------------
// Entry points for the VM walker (`vm.rs`). Signal-safe.
// ---------------------------------------------------------------------------------------

/// A pc outside the code cache during a Java walk: find the Java caller by frame
/// pointers (recording the native frames under vmx, and under vm where they are the
/// `top` of the stack; `lr` is the interrupted link register there, else 0). `stop_sp` is the unused frame anchor's sp, 0 if none: where
/// nothing is recorded the anchor is taken at once (it is exact and cheaper); else the
/// native frames above it are recorded first. Signal-safe.
#[allow(clippy::too_many_arguments)]
pub fn to_java(
    start: Cursor,
    lr: usize,
    bounds: Bounds,
    stop_sp: usize,
    top: bool,
    in_code: &dyn Fn(usize) -> bool,
    frames: &mut [Frame],
    n: &mut usize,
) -> End {
    let record = mixed() || (top && leaf());
    if !record && stop_sp != 0 {
        return End::Anchor;
    }
    let (end, _) = run(start, lr, bounds, stop_sp, in_code, frames, n, record);
    if matches!(end, End::Java(_)) {
        Counter::WalkvmNativeRecovered.inc();
    }
    end
}

/// One unwind from `start` with the live DWARF rules, counted: how it ended and how many
/// native frames it recorded. Signal-safe.
#[allow(clippy::too_many_arguments)]
fn run(
    start: Cursor,
    lr: usize,
    bounds: Bounds,
    stop_sp: usize,
    in_code: &dyn Fn(usize) -> bool,
    frames: &mut [Frame],
    n: &mut usize,
    record: bool,
) -> (End, usize) {
    let mut sink = Sink::new(frames, n, record);
    // The DWARF table cannot be freed while this hold lives.
    let rules = dwarf::read();
    let end = unwind(
        &SiteMemory(Site::Native),
        rules.table(),
        start,
        lr,
        bounds,
        stop_sp,
        in_code,
        &mut sink,
    );
    count(end, &sink);
    (end, sink.recorded)
}

/// vm and vmx, a thread outside Java with a frame anchor: records the native frames between
/// the interrupted pc and the anchor (`lr`: the interrupted link register, 0 without one).
/// false: the buffer filled up. Signal-safe.
pub fn to_anchor(
    start: Cursor,
    lr: usize,
    bounds: Bounds,
    anchor_sp: usize,
    in_code: &dyn Fn(usize) -> bool,
    frames: &mut [Frame],
    n: &mut usize,
) -> bool {
    if !leaf() || in_code(start.pc) {
        return true;
    }
    run(start, lr, bounds, anchor_sp, in_code, frames, n, true).0 != End::Full
}

/// vm and vmx, a thread with no Java frame to walk (not a JavaThread, or one outside Java
/// with no anchor): its native stack (`lr`: the interrupted link register, 0 without one).
/// Some(complete) when at least one frame was recorded, None otherwise (and always when
/// native frames are not recorded). Signal-safe.
pub fn native_only(
    start: Cursor,
    lr: usize,
    bounds: Bounds,
    in_code: &dyn Fn(usize) -> bool,
    frames: &mut [Frame],
    n: &mut usize,
) -> Option<bool> {
    if !leaf() || in_code(start.pc) {
        return None;
    }
    let (end, recorded) = run(start, lr, bounds, 0, in_code, frames, n, true);
    if recorded == 0 {
        return None;
    }
    Counter::WalkvmNativeOnly.inc();
    Some(end == End::Root)
}

/// The stack of a HotSpot `Thread*` (any kind) from its `_stack_base`/`_stack_size`
/// fields, or a window above `sp` when they cannot be read or do not hold `sp`.
/// Signal-safe.
pub fn thread_bounds(
    thread: Option<usize>,
    base_field: usize,
    size_field: usize,
    sp: usize,
) -> Bounds {
    let read = |field: usize| {
        thread
            .and_then(|t| load_usize_at(Site::Thread, t.checked_add(field)?))
            .unwrap_or(0)
    };
    Bounds::of_stack(read(base_field), read(size_field), sp)
}

/// Native frames recorded and chains broken, for the counters.
fn count(end: End, sink: &Sink) {
    if sink.recorded != 0 {
        Counter::WalkvmNativeFrames.add(sink.recorded as i64);
    }
    if end == End::Broken {
        Counter::WalkvmNativeBroken.inc();
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::sample::frame::kind;
    use crate::sample::vm::debuginfo::Bytes;

    const STACK: usize = 0x7000_0000;
    const STACK_LEN: usize = 0x1000;
    const CODE: usize = 0x4000_0000;
    const CODE_LEN: usize = 0x200;
    /// The "code cache" of these tests: the upper half of the code area.
    const JAVA: usize = CODE + 0x100;

    /// A stack and a code area in one address space (two byte arrays).
    struct Mem {
        stack: Vec<u8>,
        code: Vec<u8>,
    }

    impl Mem {
        fn new() -> Mem {
            Mem {
                stack: vec![0; STACK_LEN],
                code: vec![0x90; CODE_LEN],
            }
        }
        fn word(&mut self, addr: usize, v: usize) {
            let at = addr - STACK;
            self.stack[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        fn code(&mut self, addr: usize, bytes: &[u8]) {
            let at = addr - CODE;
            self.code[at..at + bytes.len()].copy_from_slice(bytes);
        }
        /// A return address at `CODE + end` preceded by `call rel32`.
        fn call_site(&mut self, end: usize) -> usize {
            self.code(CODE + end - 5, &[0xe8, 1, 2, 3, 4]);
            CODE + end
        }
    }

    impl Memory for Mem {
        fn read_u8(&self, addr: usize) -> Option<u8> {
            self.read_usize(addr).map(|w| w as u8)
        }
        fn read_u32(&self, addr: usize) -> Option<u32> {
            self.read_usize(addr).map(|w| w as u32)
        }
        fn read_usize(&self, addr: usize) -> Option<usize> {
            let s = Bytes {
                base: STACK,
                data: &self.stack,
            };
            let c = Bytes {
                base: CODE,
                data: &self.code,
            };
            s.read_usize(addr).or_else(|| c.read_usize(addr))
        }
    }

    fn bounds() -> Bounds {
        Bounds {
            low: STACK,
            high: STACK + STACK_LEN,
        }
    }

    fn in_java(pc: usize) -> bool {
        (JAVA..CODE + CODE_LEN).contains(&pc)
    }

    /// leaf (pc in CODE) -> two native callers -> a Java return address.
    fn three_frames(m: &mut Mem) -> (Cursor, [usize; 2]) {
        let r1 = m.call_site(0x20);
        let r2 = m.call_site(0x40);
        let (fp0, fp1, fp2) = (STACK + 0x100, STACK + 0x200, STACK + 0x300);
        m.word(fp0, fp1);
        m.word(fp0 + 8, r1);
        m.word(fp1, fp2);
        m.word(fp1 + 8, r2);
        m.word(fp2, 0x1234_5678);
        let r3 = m.call_site(0x110);
        m.word(fp2 + 8, r3);
        (
            Cursor {
                pc: CODE + 0x80,
                sp: STACK + 0x80,
                fp: fp0,
            },
            [r1, r2],
        )
    }

    fn run(m: &Mem, start: Cursor, stop_sp: usize, record: bool) -> (End, Vec<Frame>) {
        let mut frames = [Frame::default(); 8];
        let mut n = 0;
        let mut sink = Sink::new(&mut frames, &mut n, record);
        let end = unwind(m, None, start, 0, bounds(), stop_sp, &in_java, &mut sink);
        (end, frames[..n].to_vec())
    }

    #[test]
    fn walks_the_chain_to_the_java_caller_and_records_each_pc() {
        let mut m = Mem::new();
        let (start, [r1, r2]) = three_frames(&mut m);
        let (end, frames) = run(&m, start, 0, true);
        assert_eq!(
            end,
            End::Java(Cursor {
                pc: CODE + 0x110,
                sp: STACK + 0x310,
                fp: 0x1234_5678
            })
        );
        let pcs: Vec<u64> = frames.iter().map(|f| f.method).collect();
        assert_eq!(pcs, vec![start.pc as u64, r1 as u64, r2 as u64]);
        assert!(frames.iter().all(|f| f.kind == kind::NATIVE_PC));
    }

    #[test]
    fn without_recording_it_still_finds_the_java_caller() {
        let mut m = Mem::new();
        let (start, _) = three_frames(&mut m);
        let (end, frames) = run(&m, start, 0, false);
        assert!(matches!(end, End::Java(c) if c.pc == CODE + 0x110));
        assert!(frames.is_empty());
    }

    #[test]
    fn stops_at_the_anchor_sp() {
        let mut m = Mem::new();
        let (start, _) = three_frames(&mut m);
        // The anchor lies between the first and the second caller.
        let (end, frames) = run(&m, start, STACK + 0x200, true);
        assert_eq!(end, End::Anchor);
        assert_eq!(frames.len(), 2);
    }

    #[test]
    fn a_zero_frame_pointer_is_the_root() {
        let mut m = Mem::new();
        let (start, _) = three_frames(&mut m);
        // The second caller's frame pointer is 0: it is the thread's first frame.
        m.word(STACK + 0x200, 0);
        let (end, frames) = run(&m, start, 0, true);
        assert_eq!(end, End::Root);
        assert_eq!(frames.len(), 3);
    }

    #[test]
    fn breaks_on_a_return_address_not_after_a_call() {
        let mut m = Mem::new();
        let (start, _) = three_frames(&mut m);
        m.code(CODE + 0x40 - 5, &[0x90; 5]);
        let (end, frames) = run(&m, start, 0, true);
        assert_eq!(end, End::Broken);
        assert_eq!(
            frames.len(),
            2,
            "the leaf and the first caller were plausible"
        );
    }

    #[test]
    fn breaks_on_frame_pointers_that_go_back_or_leave_the_stack() {
        let mut m = Mem::new();
        let (start, _) = three_frames(&mut m);
        m.word(STACK + 0x200, STACK + 0x100); // a loop
        assert_eq!(run(&m, start, 0, false).0, End::Broken);

        let (start, _) = three_frames(&mut m);
        for bad in [STACK + 0x10, STACK + 0x101, STACK + STACK_LEN, 0x10] {
            let s = Cursor { fp: bad, ..start };
            assert_eq!(run(&m, s, 0, false).0, End::Broken, "fp {bad:#x}");
        }
        // A frame pointer inside the stack whose words are unreadable at the top.
        let s = Cursor {
            fp: STACK + STACK_LEN - 8,
            ..start
        };
        assert_eq!(run(&m, s, 0, false).0, End::Broken);
    }

    #[test]
    fn a_leaf_without_a_frame_returns_to_java_through_sp() {
        let mut m = Mem::new();
        let ret = m.call_site(0x120);
        m.word(STACK + 0x80, ret);
        // rbp is compiled Java code's: no frame pointer at all.
        let start = Cursor {
            pc: CODE + 0x30,
            sp: STACK + 0x80,
            fp: 0x42,
        };
        let (end, frames) = run(&m, start, 0, true);
        assert_eq!(
            end,
            End::Java(Cursor {
                pc: ret,
                sp: STACK + 0x88,
                fp: 0x42
            })
        );
        assert_eq!(frames.len(), 1);
        // Not into the code cache, or not after a call: broken.
        let native_ret = m.call_site(0x20);
        m.word(STACK + 0x80, native_ret);
        assert_eq!(run(&m, start, 0, false).0, End::Broken);
        m.word(STACK + 0x80, CODE + 0x140);
        assert_eq!(run(&m, start, 0, false).0, End::Broken);

        // Caught after `push rbp`: the caller's rbp at sp, the return address above.
        m.word(STACK + 0x80, STACK + 0x400);
        m.word(STACK + 0x88, ret);
        assert_eq!(
            run(&m, start, 0, false).0,
            End::Java(Cursor {
                pc: ret,
                sp: STACK + 0x90,
                fp: STACK + 0x400
            })
        );
        // After pushing something else first: rbp is taken as unchanged.
        m.word(STACK + 0x80, 0x77);
        assert_eq!(
            run(&m, start, 0, false).0,
            End::Java(Cursor {
                pc: ret,
                sp: STACK + 0x90,
                fp: 0x42
            })
        );
    }

    /// A frameless function (CFA = rsp + 24, rbp untouched) between the leaf and a
    /// frame-pointer caller: its DWARF rule finds its caller, which frame pointers skip.
    #[test]
    fn a_dwarf_rule_unwinds_a_frameless_function() {
        let mut m = Mem::new();
        let r1 = m.call_site(0x20);
        let java = m.call_site(0x120);
        let (fp0, fp1) = (STACK + 0x100, STACK + 0x200);
        m.word(STACK + 0x80 + 16, r1);
        m.word(fp0, fp1);
        m.word(fp0 + 8, java);
        let start = Cursor {
            pc: CODE + 0x80,
            sp: STACK + 0x80,
            fp: fp0,
        };
        let row = |pc: usize, cfa_reg, cfa_off| dwarf::Row {
            pc: pc as u64,
            cfa_off,
            fp_off: dwarf::FP_SAME,
            cfa_reg,
            ra: dwarf::RA_BELOW_CFA,
        };
        let rules = dwarf::Table::single(
            CODE as u64,
            (CODE + 0x100) as u64,
            vec![
                row(CODE + 0x70, dwarf::CFA_RSP, 24),
                row(CODE + 0x90, dwarf::CFA_UNKNOWN, 0),
            ],
        );
        let mut frames = [Frame::default(); 8];
        let mut n = 0;
        let mut sink = Sink::new(&mut frames, &mut n, true);
        let end = unwind(&m, Some(&rules), start, 0, bounds(), 0, &in_java, &mut sink);
        assert_eq!(
            end,
            End::Java(Cursor {
                pc: java,
                sp: fp0 + 16,
                fp: fp1
            })
        );
        let pcs: Vec<u64> = frames[..n].iter().map(|f| f.method).collect();
        assert_eq!(pcs, vec![start.pc as u64, r1 as u64]);

        // Frame pointers alone skip the frameless function's caller.
        let (end, frames) = run(&m, start, 0, true);
        assert!(matches!(end, End::Java(c) if c.pc == java));
        assert_eq!(frames.len(), 1);
    }

    #[test]
    fn a_start_pc_in_the_code_cache_is_no_progress() {
        let m = Mem::new();
        let s = Cursor {
            pc: JAVA + 4,
            sp: STACK + 0x80,
            fp: STACK + 0x100,
        };
        assert_eq!(run(&m, s, 0, true).0, End::Broken);
    }

    #[test]
    fn a_full_buffer_ends_the_walk() {
        let mut m = Mem::new();
        let (start, _) = three_frames(&mut m);
        let mut frames = [Frame::default(); 2];
        let mut n = 0;
        let mut sink = Sink::new(&mut frames, &mut n, true);
        let end = unwind(&m, None, start, 0, bounds(), 0, &in_java, &mut sink);
        assert_eq!(end, End::Full);
        assert_eq!(sink.recorded, 2);
    }

    #[test]
    fn call_instruction_forms_are_recognised() {
        let forms: &[&[u8]] = &[
            &[0xe8, 0, 0, 0, 0],             // call rel32
            &[0xff, 0xd0],                   // call rax
            &[0x41, 0xff, 0xd3],             // call r11
            &[0xff, 0x10],                   // call [rax]
            &[0xff, 0x50, 0x08],             // call [rax+8]
            &[0xff, 0x14, 0x24],             // call [rsp]
            &[0xff, 0x54, 0x24, 0x08],       // call [rsp+8]
            &[0xff, 0x15, 0, 0, 0, 0],       // call [rip+rel32]
            &[0xff, 0x90, 0, 1, 0, 0],       // call [rax+disp32]
            &[0xff, 0x94, 0xc8, 0, 1, 0, 0], // call [rax+rcx*8+disp32]
        ];
        for form in forms {
            let mut m = Mem::new();
            m.code(CODE + 0x40 - form.len(), form);
            assert!(arch::follows_call(&m, CODE + 0x40), "{form:x?}");
        }
        let not_calls: &[&[u8]] = &[
            &[0x90; 8],
            &[0xff, 0xe0],       // jmp rax
            &[0xff, 0x20],       // jmp [rax]
            &[0xff, 0x50],       // FF /2 with disp8 cut short
            &[0x48, 0x89, 0xe5], // mov rbp, rsp
        ];
        for form in not_calls {
            let mut m = Mem::new();
            m.code(CODE + 0x40 - form.len(), form);
            assert!(!arch::follows_call(&m, CODE + 0x40), "{form:x?}");
        }
    }

    #[test]
    fn bounds_fall_back_to_a_window_above_sp() {
        let b = Bounds::of_stack(0x10_000, 0x8000, 0xc000);
        assert_eq!((b.low, b.high), (0x8000, 0x10_000));
        let b = Bounds::of_stack(0, 0, 0xc000);
        assert_eq!((b.low, b.high), (0xc000, 0xc000 + UNKNOWN_STACK_BYTES));
        // A stack that does not hold sp (another thread's, or stale) is not trusted.
        let b = Bounds::of_stack(0x10_000, 0x8000, 0x20_000);
        assert_eq!(b.low, 0x20_000);
    }
}
