//! Java stack walkers. Each turns the interrupted context of the current thread into
//! frames, leaf first: our VMStructs walker (`vm.rs`, `cstack=vm|vmx`, with native
//! unwinding in `native.rs` and `dwarf.rs`, the architecture's frames in `arch/`) and AsyncGetCallTrace (`agct.rs`).

pub mod agct;
pub mod arch;
mod chain_cache;
pub mod compare;
pub mod dwarf;
mod memo;
pub mod native;
mod nmethod_cache;
pub mod own_stack;
mod seq_slots;
pub mod stack;
pub mod vm;

use crate::sample::frame::Frame;

/// Outcome of one walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    /// Frames written to the output buffer.
    pub frames: usize,
    /// The stack was deeper than the buffer.
    pub truncated: bool,
}

/// The `ucontext_t*` a signal handler received: the interrupted registers.
#[derive(Clone, Copy)]
pub struct SignalContext(pub *mut libc::c_void);

pub trait StackWalker: Sync {
    /// Name shown in logs and status ("asgct").
    fn name(&self) -> &'static str;

    /// Walks the current thread's Java stack into `out`.
    ///
    /// Signal-safe: called from the sampling signal handler on the sampled thread, with
    /// the handler's `ucontext`. Must not allocate, lock or call the JVM except through
    /// entry points documented as async-signal-safe.
    fn walk(&self, ucontext: SignalContext, out: &mut [Frame]) -> Walk;
}
