//! What the stack walkers know about one processor architecture, one file each, all with
//! the same items (docs/walker.md, "Per-architecture frame knowledge"): the
//! interrupted registers (`Regs`), HotSpot's frame slots on that architecture, the
//! instruction checks that tell a top frame caught in its prologue or epilogue, how a stub
//! or a native function returns, and how a return address is made usable (`strip_pc`).
//! `vm.rs` and `native.rs` hold the walk itself and no architecture facts.
//!
//! Every architecture file is compiled on every target (its register reads are cfg'd to
//! its own), so its instruction checks are unit-tested on any host; the one of the target
//! is re-exported here. A new architecture is a new file, a line below, and `VM_WALKER =
//! true` in it once its frames are known; `other.rs` is what a target without a port gets
//! (no registers, AsyncGetCallTrace).

use super::stack::Cursor;

#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub mod aarch64;
#[cfg_attr(any(target_arch = "x86_64", target_arch = "aarch64"), allow(dead_code))]
pub mod other;
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub mod x86_64;

#[cfg(target_arch = "aarch64")]
pub use aarch64::*;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub use other::*;
#[cfg(target_arch = "x86_64")]
pub use x86_64::*;

/// How the top compiled frame unwinds, from its pc's place in the prologue or epilogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Top {
    /// The frame is whole: unwind it with its frame size.
    Whole,
    /// Caught while its frame is (partly) built or torn down: this is its caller.
    Caller(Cursor),
    /// Neither: the walk cannot go on.
    Broken,
}
