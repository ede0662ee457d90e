//! HotSpot's command-line flags, found through VMStructs (`JVMFlag::flags`, `numFlags`,
//! `_name`, `_addr`, `_flags`). The profiler turns on `DebugNonSafepoints` so the JIT
//! records debug info at every pc, not only at safepoints: without it the top compiled
//! frame of a sample loses its line and its inlined callers. async-profiler does the same;
//! the alternative, enabling JVMTI CompiledMethodLoad, would also make HotSpot create a
//! jmethodID for every compiled method, which the lazy mode exists to avoid.

use std::ffi::CStr;

use super::tables::VmTables;
use crate::sample::safe_access::{load_u32, load_u8, load_usize};

/// Most flags a JVM has (about 1,000 on 25): a larger count is a bad read.
const MAX_FLAGS: usize = 10_000;
/// `JVMFlag::_flags` low bits hold the origin; 0 is "default" (JVMFlagOrigin::DEFAULT).
const ORIGIN_MASK: u32 = 0xf;

/// Sets the boolean flag `name` to true if it is still at its default value. Returns
/// whether the flag is now true. Runs once at load, before any compilation we care about.
pub fn enable_if_default(tables: &VmTables, name: &str) -> bool {
    let (Some(flags), Some(count), Some(f_name), Some(f_addr)) = (
        tables.field("JVMFlag::flags"),
        tables.field("JVMFlag::numFlags"),
        tables.field("JVMFlag::_name"),
        tables.field("JVMFlag::_addr"),
    ) else {
        return false;
    };
    let origin = tables.field("JVMFlag::_flags").map(|f| f.offset);
    let Some(stride) = tables.type_info("JVMFlag").map(|t| t.size as usize) else {
        return false;
    };
    let (Some(base), Some(n)) = (load_usize(flags.address), load_usize(count.address)) else {
        return false;
    };
    for i in 0..n.min(MAX_FLAGS) {
        let entry = base + i * stride;
        let Some(name_ptr) = load_usize(entry + f_name.offset).filter(|p| *p != 0) else {
            continue;
        };
        // SAFETY: flag names are static NUL-terminated strings inside libjvm.
        if unsafe { CStr::from_ptr(name_ptr as *const libc::c_char) }.to_bytes() != name.as_bytes()
        {
            continue;
        }
        let Some(addr) = load_usize(entry + f_addr.offset).filter(|a| *a != 0) else {
            return false;
        };
        if load_u8(addr) == Some(1) {
            return true;
        }
        let is_default = origin
            .and_then(|o| load_u32(entry + o))
            .is_none_or(|v| v & ORIGIN_MASK == 0);
        if !is_default {
            return false;
        }
        // SAFETY: `addr` is the flag's storage (a bool in libjvm's data segment).
        unsafe { (addr as *mut u8).write_volatile(1) };
        return true;
    }
    false
}
