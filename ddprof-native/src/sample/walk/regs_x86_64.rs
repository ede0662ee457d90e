//! Registers of the interrupted context on x86_64 (docs/hotspot.md 4.1).

use super::SignalContext;

/// pc, sp, fp, the two registers the template interpreter keeps its state in at
/// method entry (rbx = Method*, r13 = sender sp), and the first Java argument register
/// (rsi: HotSpot's `j_rarg0`, the C argument registers shifted by one), which holds the
/// receiver inside a vtable/itable stub.
#[derive(Clone, Copy, Debug, Default)]
pub struct Regs {
    pub pc: usize,
    pub sp: usize,
    pub fp: usize,
    pub method: usize,
    pub sender_sp: usize,
    pub receiver: usize,
}

impl Regs {
    /// Signal-safe.
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
            method: reg(libc::REG_RBX),
            sender_sp: reg(libc::REG_R13),
            receiver: reg(libc::REG_RSI),
        })
    }
}

impl Regs {
    /// The caller's own pc, sp and fp at this point: where a walk of the current thread
    /// starts when there is no signal context (a hook called by native code). Inlined, so
    /// the pc is inside the calling function and sp is that function's own at the pc: its
    /// DWARF row (or frame pointer) unwinds from there. The frame must still be live while
    /// the walk runs, so call it in the function that walks. Signal-safe.
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
}

/// Opcodes the prologue/epilogue heuristics look for (docs/hotspot.md 4.5).
pub mod op {
    pub const PUSH_RBP: u8 = 0x55;
    pub const POP_RBP: u8 = 0x5d;
    pub const RET: u8 = 0xc3;
}
