//! HotSpot readers of the signal path: the VM layout they follow, the code cache and
//! blobs, nmethod debug info, `Method*`/`Klass*` fields, the current `JavaThread`, the
//! JFR class trace ID and the receiver class of a vtable/itable stub. Every read of VM
//! memory goes through `crate::sample::safe_access`.
//! The same readers serve the dump (metadata naming), which runs on a JVM thread.

pub mod codecache;
pub mod current_thread;
pub mod debuginfo;
pub mod klass;
pub mod layout;
pub mod method;
pub mod oop;
pub mod receiver;
pub mod trace_id;

use super::load_census::Site;
use super::safe_access;

/// VM memory read through the crash-protected loads, counted at one call site by the load
/// census (`load_census.rs`): what the walker and the dump-time metadata readers hand to the
/// decoders.
#[derive(Clone, Copy)]
pub struct SiteMemory(pub Site);

impl debuginfo::Memory for SiteMemory {
    #[inline]
    fn read_u8(&self, addr: usize) -> Option<u8> {
        safe_access::load_u8_at(self.0, addr)
    }
    #[inline]
    #[link_section = sample_path_section!()]
    fn read_u32(&self, addr: usize) -> Option<u32> {
        safe_access::load_u32_at(self.0, addr)
    }
    #[inline]
    fn read_usize(&self, addr: usize) -> Option<usize> {
        safe_access::load_usize_at(self.0, addr)
    }
}

/// [`SiteMemory`] for readers that are no call site of the census.
pub const SAFE_MEMORY: SiteMemory = SiteMemory(Site::Other);
