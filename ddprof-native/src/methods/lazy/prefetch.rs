//! Cache warming for the lazy checks at dump time.
//!
//! The first dump of a lazy session checks about one frame per sampled class, and the
//! metadata each check reads (`Method`, `ConstMethod`, `ConstantPool`, the holder
//! `Klass`, its methods array and ID cache, the name symbols) was last touched when the
//! class loaded: nearly every read is a cache miss, and each depends on the one before,
//! so they are paid one after the other. Here the same chains are followed for many
//! frames at once, a stage at a time, with prefetches: the misses of one
//! stage overlap instead of queueing.
//!
//! Nothing here decides anything: the reads are crash-protected loads whose values only
//! feed prefetch hints, and a prefetch never faults, whatever the address. A stale
//! `Method*` at worst warms memory nobody reads.

use crate::sample::safe_access::load_usize;
use crate::sample::vm::codecache::load_field;
use crate::sample::vm::layout::MethodGroup;
use crate::sample::vm::trace_id;

/// Frames followed together: enough misses in flight to fill the memory pipeline, few
/// enough lines (about 10 per frame) to stay in the L2 cache until used.
const BLOCK: usize = 64;

/// A hint that `addr` will be read soon. Never faults.
#[inline]
pub fn prefetch(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is only a hint: it does not fault on any address (unmapped or
    // not) and has no architectural effect.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(addr as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// Warms what `resolve.rs` reads for each of `methods` (untagged `Method*`s of distinct
/// tagged frames, in the order the dump will meet them).
pub fn warm_frames(m: &MethodGroup, methods: &[usize]) {
    let trace_id_offset = trace_id::offset();
    for chunk in methods.chunks(BLOCK) {
        let mut cm = [0usize; BLOCK];
        let mut cp = [0usize; BLOCK];
        for &method in chunk {
            prefetch(method.wrapping_add(m.method.const_method));
        }
        for (i, &method) in chunk.iter().enumerate() {
            cm[i] = load_usize(method.wrapping_add(m.method.const_method)).unwrap_or(0);
            if cm[i] != 0 {
                prefetch(cm[i].wrapping_add(m.const_method.constants));
                prefetch(cm[i].wrapping_add(m.const_method.method_idnum.offset));
            }
        }
        for i in 0..chunk.len() {
            if cm[i] == 0 {
                continue;
            }
            cp[i] = load_usize(cm[i].wrapping_add(m.const_method.constants)).unwrap_or(0);
            if cp[i] != 0 {
                prefetch(cp[i].wrapping_add(m.constant_pool.pool_holder));
                for index in [m.const_method.name_index, m.const_method.signature_index] {
                    if let Some(x) = load_field(cm[i], index) {
                        prefetch(cp[i].wrapping_add(m.constant_pool.size + x as usize * 8));
                    }
                }
            }
        }
        for i in 0..chunk.len() {
            let Some(holder) = (cp[i] != 0)
                .then(|| load_usize(cp[i].wrapping_add(m.constant_pool.pool_holder)))
                .flatten()
            else {
                continue;
            };
            if trace_id_offset != 0 {
                prefetch(holder.wrapping_add(trace_id_offset));
            }
            prefetch(holder.wrapping_add(m.instance_klass.methods));
            prefetch(holder.wrapping_add(m.instance_klass.methods_jmethod_ids));
            // The line table follows the bytecodes.
            if let Some(code_size) = load_field(cm[i], m.const_method.code_size) {
                prefetch(cm[i].wrapping_add(m.const_method.size + code_size as usize));
            }
            for index in [m.const_method.name_index, m.const_method.signature_index] {
                if let Some(sym) = load_field(cm[i], index).and_then(|x| {
                    load_usize(cp[i].wrapping_add(m.constant_pool.size + x as usize * 8))
                }) {
                    prefetch((sym & !7).wrapping_add(m.symbol.body));
                }
            }
        }
        for i in 0..chunk.len() {
            let Some(holder) = (cp[i] != 0)
                .then(|| load_usize(cp[i].wrapping_add(m.constant_pool.pool_holder)))
                .flatten()
            else {
                continue;
            };
            let idnum = load_field(cm[i], m.const_method.method_idnum).unwrap_or(0) as usize;
            if let Some(array) = load_usize(holder.wrapping_add(m.instance_klass.methods)) {
                prefetch(array.wrapping_add(m.array.method_data + idnum * 8));
            }
            if let Some(ids) = load_usize(holder.wrapping_add(m.instance_klass.methods_jmethod_ids))
                .filter(|ids| *ids != 0)
            {
                prefetch(ids.wrapping_add((idnum + 1) * 8));
            }
        }
    }
}
