//! Everything that knows HotSpot's internals: the VMStructs layout, the code cache,
//! debug info and line tables, Method*/Klass* readers, the current JavaThread, and the
//! calibrated JFR class trace ID.

pub mod codecache;
pub mod current_thread;
pub mod debuginfo;
pub mod flags;
pub mod klass;
pub mod linetable;
pub mod method;
pub mod trace_id;
pub mod vmstructs;

/// VM memory read through the crash-protected loads: what the walker and the dump-time
/// metadata readers hand to the decoders.
pub struct SafeMemory;

impl debuginfo::Memory for SafeMemory {
    #[inline]
    fn read_u8(&self, addr: usize) -> Option<u8> {
        crate::signal::safe_access::load_u8(addr)
    }
    #[inline]
    fn read_u32(&self, addr: usize) -> Option<u32> {
        crate::signal::safe_access::load_u32(addr)
    }
    #[inline]
    fn read_usize(&self, addr: usize) -> Option<usize> {
        crate::signal::safe_access::load_usize(addr)
    }
}
