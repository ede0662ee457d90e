//! Naming native and kernel frames at dump time (`sample::frame::kind::NATIVE_PC`): by the
//! symbol of the library holding the pc (or the VM stub there), by `/proc/kallsyms` for kernel
//! pcs, or, with `remotesym`, left to the backend as upstream's remote frame. One dump's names:
//! the symbolizer and the caches live as long as [`super::namer::DumpNamer`], except the
//! names of pcs in files, which the next dump takes if no object was loaded or unloaded in
//! between ([`KeptPcNames`]), with those the library watcher named ahead ([`keep_ahead`]).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::counters;
use crate::jfr::{ChunkBuilder, MethodShape};
use crate::libs::mappings::Snapshot;
use crate::sample::frame::frame_type;
use crate::word_map::WordMap;

/// Method-pool keys of native frames (`cstack=vmx`): one entry per function name, so that
/// every pc of a function shares it. The symbolizer (reading `/proc/self/maps`) is made
/// on the first native frame of the dump.
pub struct NativeNames {
    symbols: Option<crate::libs::symbols::Symbolizer>,
    by_pc: WordMap<u64, u32>,
    by_name: WordMap<String, u32>,
    /// `remotesym`: frames in a library with a build id are left to the backend.
    remote: bool,
    /// pc -> method key of frames written for remote symbolication.
    remote_by_pc: WordMap<u64, u32>,
    /// Build ids by library path (and inode, deleted: `Mapping::deleted`), for this dump ("" without one).
    build_ids: HashMap<(String, Option<u64>), String>,
    /// pc -> method key of kernel frames.
    kernel_by_pc: WordMap<u64, u32>,
    /// Names of file pcs the previous dump left, and those this dump used or made.
    kept: Option<KeptPcNames>,
    named: WordMap<u64, String>,
    /// Native frames' class and descriptor in this dump's chunk.
    shape: Option<MethodShape>,
}

/// Names of pcs in files by pc, over one snapshot of the mappings: they stand while the
/// snapshot does (`mappings::current` makes a new one when an object is loaded or unloaded,
/// which is what could put another function at a pc). pcs in code the VM generates (stubs,
/// nmethods) are never kept: the code cache reuses its addresses.
struct KeptPcNames {
    maps: Arc<Snapshot>,
    names: WordMap<u64, String>,
}

static KEPT: Mutex<Option<KeptPcNames>> = Mutex::new(None);

impl KeptPcNames {
    /// Adds the names of pcs it has none for (one it has was made over the same mappings).
    fn add_missing(&mut self, named: impl IntoIterator<Item = (u64, String)>) {
        for (pc, name) in named {
            self.names.entry(pc).or_insert(name);
        }
    }
}

impl NativeNames {
    pub fn new(remote: bool) -> NativeNames {
        let kept = KEPT.lock().take();
        // The pcs the previous dump and the library watcher named are mostly those this dump
        // meets (on a first dump, all but the last moments'): sized for them, the maps of
        // this dump's pcs and names are not grown (and rehashed) from empty.
        let pcs = kept.as_ref().map_or(0, |k| k.names.len());
        NativeNames {
            symbols: None,
            by_pc: sized(pcs),
            by_name: sized(pcs),
            remote,
            remote_by_pc: WordMap::default(),
            build_ids: HashMap::new(),
            kernel_by_pc: WordMap::default(),
            kept,
            named: sized(pcs),
            shape: None,
        }
    }

    /// The method key and frame type of the native frame at `pc`: named by its symbol, or with
    /// `remotesym` and a library with a build id, upstream's remote frame (class = build id,
    /// name `<remote>`, descriptor = the pc's ELF address in hex, type 7).
    pub fn frame(&mut self, chunk: &mut ChunkBuilder, pc: u64) -> (u32, u8) {
        if self.remote {
            if let Some(k) = self.remote_key(chunk, pc) {
                return (k, frame_type::NATIVE_REMOTE);
            }
        }
        (self.key(chunk, pc), frame_type::NATIVE)
    }

    /// The method key of the kernel frame at `pc`: the `/proc/kallsyms` function holding it
    /// (`[kernel] 0x<pc>` when there is none), with the contract's kernel descriptor.
    pub fn kernel_key(&mut self, chunk: &mut ChunkBuilder, pc: u64) -> u32 {
        if let Some(k) = self.kernel_by_pc.get(&pc) {
            return *k;
        }
        let unnamed;
        let name = match crate::libs::kallsyms::get().and_then(|t| t.name(pc)) {
            Some(n) => n,
            None => {
                unnamed = format!("[kernel] 0x{pc:x}");
                unnamed.as_str()
            }
        };
        let k = chunk.intern_method("", name, "(Lk;)L;", 0x100, false);
        self.kernel_by_pc.insert(pc, k);
        k
    }

    fn remote_key(&mut self, chunk: &mut ChunkBuilder, pc: u64) -> Option<u32> {
        if let Some(k) = self.remote_by_pc.get(&pc) {
            return Some(*k);
        }
        if crate::hotspot::stubs::name_of(pc as usize).is_some() {
            return None; // VM code: no file to symbolize it from
        }
        let symbols = self
            .symbols
            .get_or_insert_with(crate::libs::symbols::Symbolizer::new);
        let (mapping, vaddr) = symbols.locate(pc)?;
        let id = self
            .build_ids
            .entry((mapping.path.clone(), mapping.deleted))
            .or_insert_with(|| {
                let id = mapping
                    .open()
                    .and_then(|e| e.build_id())
                    .unwrap_or_default();
                if !id.is_empty() {
                    counters::Counter::RemoteSymbolicationLibs.inc();
                }
                id
            });
        if id.is_empty() {
            return None;
        }
        let k = chunk.intern_method(id, "<remote>", &format!("0x{vaddr:x}"), 0x100, false);
        counters::Counter::RemoteSymbolicationFrames.inc();
        self.remote_by_pc.insert(pc, k);
        Some(k)
    }

    fn key(&mut self, chunk: &mut ChunkBuilder, pc: u64) -> u32 {
        if let Some(k) = self.by_pc.get(&pc) {
            return *k;
        }
        // A native unwind can end in code the VM generated (a stub is not in any file's
        // symbols): the stub's name, as a stub frame would get.
        let stub = crate::hotspot::stubs::name_of(pc as usize);
        let in_file = stub.is_none();
        let name = stub.unwrap_or_else(|| self.file_name(pc));
        let k = match self.by_name.get(&name) {
            Some(k) => *k,
            None => {
                let k = chunk.intern_native_method(&mut self.shape, &name);
                self.by_name.insert(name.clone(), k);
                k
            }
        };
        if in_file {
            self.named.insert(pc, name);
        }
        self.by_pc.insert(pc, k);
        k
    }

    /// The name of the function of a file holding `pc`: the previous dump's if it stands.
    fn file_name(&mut self, pc: u64) -> String {
        let symbols = self
            .symbols
            .get_or_insert_with(crate::libs::symbols::Symbolizer::new);
        let kept = self
            .kept
            .as_mut()
            .filter(|k| Arc::ptr_eq(&k.maps, symbols.snapshot()))
            .and_then(|k| k.names.remove(&pc));
        match kept {
            Some(name) => {
                counters::Counter::NativePcNamesKept.inc();
                name
            }
            None => {
                counters::Counter::NativePcsNamedAtDump.inc();
                symbols.name(pc)
            }
        }
    }
}

fn sized<K, V>(entries: usize) -> WordMap<K, V> {
    WordMap::with_capacity_and_hasher(entries, Default::default())
}

/// Drops the kept names (at stop).
pub fn clear() {
    KEPT.lock().take();
}

/// Keeps names the library watcher made ahead of the dump (`profiler::ahead`) for the next
/// dump, as a dump's own names are kept: over the watcher's snapshot of the mappings, so the
/// dump takes them only if no object was loaded or unloaded since. Names kept over another
/// snapshot are dropped: a newer snapshot means theirs is stale.
pub fn keep_ahead(maps: &Arc<Snapshot>, named: Vec<(u64, String)>) {
    let _mem = crate::footprint::scope(crate::footprint::Category::NativeSymbols);
    let mut kept = KEPT.lock();
    let store = match kept.take() {
        Some(k) if Arc::ptr_eq(&k.maps, maps) => k,
        _ => KeptPcNames {
            maps: maps.clone(),
            names: WordMap::default(),
        },
    };
    kept.insert(store).add_missing(named);
}

impl Drop for NativeNames {
    /// Leaves the names of file pcs this dump used or made to the next dump, over this dump's
    /// snapshot of the mappings; the previous dump's unused ones are dropped.
    fn drop(&mut self) {
        let _mem = crate::footprint::scope(crate::footprint::Category::NativeSymbols);
        let mut left = self.symbols.as_ref().map(|s| KeptPcNames {
            maps: s.snapshot().clone(),
            names: std::mem::take(&mut self.named),
        });
        let mut kept = KEPT.lock();
        // What the watcher named ahead while this dump ran, over the same mappings, stays.
        if let (Some(mine), Some(ahead)) = (left.as_mut(), kept.take()) {
            if Arc::ptr_eq(&mine.maps, &ahead.maps) {
                mine.add_missing(ahead.names);
            }
        }
        *kept = left;
    }
}
