//! Naming ahead of the dump: the library watcher's thread reads the traces handlers published
//! since its last poll and names their native pcs, and leaves the names by pc for the next
//! dump (`methods::native_names::keep_ahead`, valid while no object is loaded or unloaded);
//! it reads their new jmethodIDs' metadata the same way (`methods::ahead_ids`, JDK 11-24).
//! A first dump otherwise reads each new function's name from its file, one `pread` of 2-3
//! µs each on this kind of host, for the tens of JIT compiler and VM functions its samples
//! hold, and finds each pc's function in its file's symbol table (two binary searches, cache
//! misses on a table as large as libjvm's): that cost moves off the dump's latency (the
//! tracer's dumping thread waits for it), not out of the process.
//!
//! Only the active generation is read, through `Recorder::scan_active`, which keeps the
//! dump's clear of that generation out while it reads; the names themselves are looked up
//! after, with no guard held.

use std::collections::HashSet;

use crate::counters::Counter;
use crate::sample::frame::{frame_type, kind};
use crate::sample::handler;
use crate::sample::traces::ScanCursor;

/// Distinct pcs remembered as named; past it the memory is dropped and begins again (a pc
/// named twice costs a cache lookup).
const MAX_SEEN: usize = 1 << 16;

#[derive(Default)]
pub struct Ahead {
    cursor: ScanCursor,
    seen: HashSet<u64>,
    /// jmethodIDs met, as `seen` is for pcs.
    seen_ids: HashSet<u64>,
}

impl Ahead {
    /// Names the native pcs of the traces published since the last call (if `native_pcs`) and
    /// reads their new jmethodIDs' metadata (if `java_ids`). Returns how many pcs were named
    /// (new to this watcher, neither kernel frames nor stubs).
    pub fn poll(&mut self, native_pcs: bool, java_ids: crate::methods::ahead_ids::Plan) -> usize {
        let Some(recorder) = handler::recorder() else {
            return 0;
        };
        if !native_pcs && !java_ids.ids {
            return 0;
        }
        let _mem = crate::footprint::scope(crate::footprint::Category::NativeSymbols);
        for seen in [&mut self.seen, &mut self.seen_ids] {
            if seen.len() > MAX_SEEN {
                *seen = HashSet::new();
            }
        }
        let (mut pcs, mut ids) = (Vec::new(), Vec::new());
        let (seen, seen_ids) = (&mut self.seen, &mut self.seen_ids);
        recorder.scan_active(&mut self.cursor, |frames| {
            for f in frames {
                // Kernel frames are named from kallsyms, kept whole in memory.
                if native_pcs
                    && f.kind == kind::NATIVE_PC
                    && f.frame_type != frame_type::KERNEL
                    && seen.insert(f.method)
                {
                    pcs.push(f.method);
                } else if java_ids.ids
                    && f.kind == kind::JAVA_METHOD_ID
                    && seen_ids.insert(f.method)
                {
                    ids.push(f.method);
                }
            }
        });
        if !ids.is_empty() {
            crate::methods::ahead_ids::read(&ids, java_ids);
        }
        // The dump names a stub by the VM's list, not by a file: nothing to read ahead.
        pcs.retain(|&pc| crate::hotspot::stubs::name_of(pc as usize).is_none());
        if pcs.is_empty() {
            return 0;
        }
        let symbols = crate::libs::symbols::Symbolizer::new();
        let n = pcs.len();
        let named = pcs.into_iter().map(|pc| (pc, symbols.name(pc))).collect();
        crate::methods::native_names::keep_ahead(symbols.snapshot(), named);
        Counter::NativePcsNamedAhead.add(n as i64);
        n
    }
}
