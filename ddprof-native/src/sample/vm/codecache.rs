//! Signal-safe questions about HotSpot's code cache, answered from the VMStructs layout:
//! is this pc in compiled code or a stub, which blob holds it, and what does the blob say
//! about itself (name, frame, code range, and for nmethods the Method*, compilation level,
//! PcDescs, scopes data and metadata array) (docs/hotspot.md 3.1-3.4).
//!
//! The code cache changes under a sampled thread: blobs are freed, reused and unloaded,
//! so every value read may be stale and every pointer may dangle. Hence:
//! - every read of VM memory is a crash-protected load (`None` when it faults);
//! - results are plausibility-checked (ranges ordered, sizes bounded) before they are
//!   returned, and every loop has a fixed bound;
//! - nothing here allocates, locks, panics or calls into the JVM.
//!
//! Two levels of API: methods on the layout groups (`CodeCacheGroup::find_blob`,
//! `CodeBlobGroup::size`, ...) for callers that already hold the layout (the walker, and
//! the tests, which build layouts over synthetic memory), and thin wrappers
//! ([`find_blob`], [`Blob::size`], ...) that fetch the global layout themselves.

use super::layout::{
    self, BlobKind, CodeAddr, CodeBlobGroup, CodeCacheGroup, DebugInfo, EntryAddr, Field,
    NMethodGroup,
};

use std::sync::atomic::{AtomicUsize, Ordering};

// Every read of VM memory here may race with the code cache changing under us.
use crate::sample::load_census::Site;
use crate::sample::safe_access::{load_u16_at, load_u32_at, load_u8_at, load_usize, load_usize_at};

/// HotSpot has one code heap, or three when segmented; a larger count is a stale read.
const MAX_HEAPS: i64 = 16;
/// Segment-map entries point back at most 254 segments, so a 2 GiB heap of 128-byte
/// segments needs fewer hops than this.
const MAX_SEGMAP_HOPS: usize = 1 << 17;
/// The segment-map value of a free segment.
const FREE_SEGMENT: u8 = 0xFF;
/// Longest blob name compared byte by byte.
const MAX_NAME: usize = 256;
/// Upper bound for the size of one nmethod's PcDesc array or metadata array.
const MAX_TABLE_BYTES: usize = 64 << 20;

/// A CodeBlob in the code cache (the address of its header). Accessors return None when
/// a read faults or a value is implausible. The nmethod accessors are meaningful only for
/// blobs where [`Blob::is_nmethod`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blob {
    pub addr: usize,
}

/// Reads a scalar field at `base + field.offset`, sign- or zero-extended as its type
/// says. Signal-safe.
#[inline]
pub fn load_field(base: usize, field: Field) -> Option<i64> {
    load_field_at(Site::Other, base, field)
}

/// [`load_field`], counted at `site` by the load census. Signal-safe.
#[inline]
#[link_section = sample_path_section!()]
pub fn load_field_at(site: Site, base: usize, field: Field) -> Option<i64> {
    let addr = base.checked_add(field.offset)?;
    Some(match (field.size, field.signed) {
        (1, true) => i64::from(load_u8_at(site, addr)? as i8),
        (1, false) => i64::from(load_u8_at(site, addr)?),
        (2, true) => i64::from(load_u16_at(site, addr)? as i16),
        (2, false) => i64::from(load_u16_at(site, addr)?),
        (4, true) => i64::from(load_u32_at(site, addr)? as i32),
        (4, false) => i64::from(load_u32_at(site, addr)?),
        (8, _) => load_usize_at(site, addr)? as i64,
        _ => return None,
    })
}

/// A blob's or nmethod's header field. Signal-safe.
#[inline]
fn header_field(base: usize, field: Field) -> Option<i64> {
    load_field_at(Site::NmethodHeader, base, field)
}

/// Reads a pointer field at `base + offset` (of a blob's header, for the load census).
/// Signal-safe.
#[inline]
fn load_ptr(base: usize, offset: usize) -> Option<usize> {
    load_usize_at(Site::NmethodHeader, base.checked_add(offset)?)
}

/// `base` plus a non-negative int field read at `holder + field.offset`. Signal-safe.
fn plus_offset_field(base: usize, holder: usize, field: Field) -> Option<usize> {
    let offset = usize::try_from(header_field(holder, field)?).ok()?;
    base.checked_add(offset)
}

fn non_null(v: &usize) -> bool {
    *v != 0
}

/// `(begin, end)` if it is an ordered range of plausible size.
fn sane_range(begin: usize, end: usize) -> Option<(usize, usize)> {
    (begin != 0 && begin <= end && end - begin <= MAX_TABLE_BYTES).then_some((begin, end))
}

// ---------------------------------------------------------------------------------------
// The code cache: bounds, heaps, segment maps, stubs.
// ---------------------------------------------------------------------------------------

/// The parts of one code heap that never change: the `CodeHeap*`, the start of its
/// memory, its segment map and its segment size.
#[derive(Clone, Copy, Debug, Default)]
struct HeapView {
    heap: usize,
    low: usize,
    segmap: usize,
    shift: u32,
}

/// What a stack walk needs to know about the code cache, read by
/// [`CodeCacheGroup::view`] instead of once per frame: the cache's reserved bounds, each
/// heap's start, segment map and segment size, the interpreter's code range and the call
/// stub's return address. HotSpot sets all of them up before the first Java code runs
/// and never changes them; the one moving part, a heap's committed end (it grows), is
/// read at each lookup. So a view read once the JVM runs stays right for the life of the
/// process: the walker reads one when it is set up (per layout, never a global), and
/// tests read their own over synthetic memory. Signal-safe.
#[derive(Clone, Copy, Debug)]
pub struct CodeCacheView {
    low: usize,
    high: usize,
    heaps: [HeapView; MAX_HEAPS as usize],
    len: usize,
    interpreter: (usize, usize),
    call_stub: Option<usize>,
}

impl CodeCacheGroup {
    /// Whether `low_bound <= pc < high_bound` of the whole code cache. Signal-safe.
    pub fn contains(&self, pc: usize) -> bool {
        let low = load_usize(self.low_bound_addr);
        let high = load_usize(self.high_bound_addr);
        matches!((low, high), (Some(l), Some(h)) if l != 0 && l <= pc && pc < h)
    }

    /// The used blob whose heap block holds `pc`, found through the heap's segment map.
    /// Signal-safe. A walk asks [`CodeCacheView::find_blob`] instead, to read the heaps
    /// once.
    pub fn find_blob(&self, pc: usize) -> Option<Blob> {
        self.view().find_blob(self, pc)
    }

    /// Reads what a walk needs of the code cache (see [`CodeCacheView`]): about four
    /// protected loads per heap plus seven. Unreadable parts leave the view empty there
    /// (no heap, no interpreter, no call stub), so lookups answer "unknown"
    /// ([`CodeCacheView::complete`] tells). Signal-safe.
    pub fn view(&self) -> CodeCacheView {
        let mut view = CodeCacheView {
            low: load_usize(self.low_bound_addr).unwrap_or(0),
            high: load_usize(self.high_bound_addr).unwrap_or(0),
            heaps: [HeapView::default(); MAX_HEAPS as usize],
            len: 0,
            interpreter: self.interpreter_range().unwrap_or((0, 0)),
            call_stub: self.call_stub_return_address(),
        };
        if view.low == 0 || view.low >= view.high {
            view.low = 0;
            view.high = 0;
            return view;
        }
        let array = load_usize(self.heaps_addr).filter(non_null);
        let len = array.and_then(|a| load_field(a, self.array_len));
        let data = array.and_then(|a| load_ptr(a, self.array_data).filter(non_null));
        let (Some(len), Some(data)) = (len, data) else {
            return view;
        };
        // The heaps are in no particular order (docs/hotspot.md 3.1): keep each readable one.
        for i in 0..len.clamp(0, MAX_HEAPS) as usize {
            let Some(heap) = data.checked_add(i * 8).and_then(load_usize) else {
                continue;
            };
            if let (Some(h), Some(slot)) = (self.heap_view(heap), view.heaps.get_mut(view.len)) {
                *slot = h;
                view.len += 1;
            }
        }
        view
    }

    fn heap_view(&self, heap: usize) -> Option<HeapView> {
        let memory = heap.checked_add(self.heap_memory)?;
        let low = load_ptr(memory, self.vs_low).filter(non_null)?;
        let segmap = load_ptr(heap.checked_add(self.heap_segmap)?, self.vs_low)?;
        let shift = load_field(heap, self.heap_log2_segment_size)?;
        if !(0..32).contains(&shift) {
            return None;
        }
        Some(HeapView {
            heap,
            low,
            segmap,
            shift: shift as u32,
        })
    }

    /// A heap's committed end (`_memory._high`), which grows as code is added.
    fn heap_high(&self, heap: usize) -> Option<usize> {
        load_usize_at(
            Site::CodeCache,
            heap.checked_add(self.heap_memory)?
                .checked_add(self.vs_high)?,
        )
    }

    /// `[begin, end)` of the interpreter's code: `AbstractInterpreter::_code`, a StubQueue
    /// covering `[_stub_buffer, _stub_buffer + _buffer_limit)`.
    fn interpreter_range(&self) -> Option<(usize, usize)> {
        let queue = load_usize(self.interpreter_code_addr).filter(non_null)?;
        let begin = load_ptr(queue, self.stub_queue_buffer).filter(non_null)?;
        let limit = usize::try_from(load_field(queue, self.stub_queue_buffer_limit)?).ok()?;
        (limit > 0).then_some((begin, begin.checked_add(limit)?))
    }

    /// The blob in the block starting at `block`, if the block is used and covers `pc`.
    fn used_block(&self, block: usize, shift: u32, pc: usize) -> Option<Blob> {
        if load_field_at(Site::CodeCache, block, self.block_used)? == 0 {
            return None;
        }
        let segments =
            usize::try_from(load_field_at(Site::CodeCache, block, self.block_length)?).ok()?;
        // checked_mul, not a shift: a stale length must not wrap into a plausible end.
        let end = block.checked_add(segments.checked_mul(1usize << shift)?)?;
        let blob = block.checked_add(self.heap_block_size)?;
        (blob <= pc && pc < end).then_some(Blob { addr: blob })
    }

    /// Whether `pc` is in the template interpreter's code: `AbstractInterpreter::_code`,
    /// a StubQueue covering `[_stub_buffer, _stub_buffer + _buffer_limit)`. Signal-safe.
    pub fn is_interpreter(&self, pc: usize) -> bool {
        self.interpreter_range()
            .is_some_and(|(begin, end)| begin <= pc && pc < end)
    }

    /// The return address into the call stub (an entry frame's pc). Signal-safe.
    pub fn call_stub_return_address(&self) -> Option<usize> {
        load_usize(self.call_stub_return_address_addr).filter(non_null)
    }

    /// `ContinuationEntry::_return_pc` where exported (virtual-thread entry frames).
    /// Signal-safe.
    pub fn continuation_return_pc(&self) -> Option<usize> {
        load_usize(self.continuation_return_pc_addr?).filter(non_null)
    }
}

/// Each code heap's committed end as read during one walk (see
/// [`CodeCacheView::find_blob_in_walk`]); empty at the start of each walk.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeapHighs([Option<usize>; MAX_HEAPS as usize]);

impl CodeCacheView {
    /// Whether everything a walk needs was readable: bounds, at least one heap, the
    /// interpreter and the call stub. Signal-safe.
    pub fn complete(&self) -> bool {
        self.low != 0 && self.len > 0 && self.interpreter.0 != 0 && self.call_stub.is_some()
    }

    /// Whether `pc` is inside the code cache's bounds. Signal-safe.
    pub fn contains(&self, pc: usize) -> bool {
        self.low <= pc && pc < self.high
    }

    /// The used blob whose heap block holds `pc`, found through the heap's segment map;
    /// `group` is the layout the view was read with. One protected load (the heap's
    /// committed end) plus the segment-map walk. Signal-safe.
    pub fn find_blob(&self, group: &CodeCacheGroup, pc: usize) -> Option<Blob> {
        self.find_blob_in_walk(group, pc, &mut HeapHighs::default())
    }

    /// [`find_blob`](Self::find_blob) for one of the pcs of a walk: each heap's committed
    /// end is read at its first lookup and kept in `highs` for the rest of the walk. Code
    /// on the walked stack was installed before the walk began, so an end read during the
    /// walk covers it. Signal-safe.
    #[link_section = sample_path_section!()]
    pub fn find_blob_in_walk(
        &self,
        group: &CodeCacheGroup,
        pc: usize,
        highs: &mut HeapHighs,
    ) -> Option<Blob> {
        if !self.contains(pc) {
            return None;
        }
        // Heaps do not overlap: the one that starts last at or below pc is the only
        // candidate (they are in no particular order, docs/hotspot.md 3.1).
        let (index, heap) = self
            .heaps
            .get(..self.len)?
            .iter()
            .enumerate()
            .filter(|(_, h)| h.low <= pc)
            .max_by_key(|(_, h)| h.low)?;
        let high = match highs.0.get(index).copied().flatten() {
            Some(high) => high,
            None => {
                let high = group.heap_high(heap.heap)?;
                if let Some(slot) = highs.0.get_mut(index) {
                    *slot = Some(high);
                }
                high
            }
        };
        if pc >= high {
            return None;
        }
        Self::blob_in_heap(group, heap, pc)
    }

    /// Segment-map walk (docs/hotspot.md 3.2): the map holds one byte per segment, 0xFF for a
    /// free segment, else the distance back towards the block's first segment (0).
    fn blob_in_heap(group: &CodeCacheGroup, heap: &HeapView, pc: usize) -> Option<Blob> {
        let shift = heap.shift;
        let mut index = (pc - heap.low) >> shift;
        for _ in 0..MAX_SEGMAP_HOPS {
            match load_u8_at(Site::CodeCache, heap.segmap.checked_add(index)?)? {
                FREE_SEGMENT => return None,
                0 => {
                    let block = heap.low.checked_add(index << shift)?;
                    return group.used_block(block, shift, pc);
                }
                hop => index = index.checked_sub(usize::from(hop))?,
            }
        }
        None
    }

    /// Whether `pc` is in the template interpreter's code. Signal-safe.
    pub fn is_interpreter(&self, pc: usize) -> bool {
        self.interpreter.0 <= pc && pc < self.interpreter.1
    }

    /// The return address into the call stub (an entry frame's pc). Signal-safe.
    pub fn call_stub_return_address(&self) -> Option<usize> {
        self.call_stub
    }
}

// ---------------------------------------------------------------------------------------
// CodeBlob accessors.
// ---------------------------------------------------------------------------------------

impl CodeBlobGroup {
    /// The blob's `const char*` name. Signal-safe.
    pub fn name_ptr(&self, blob: Blob) -> Option<usize> {
        load_ptr(blob.addr, self.name).filter(non_null)
    }

    /// Whether the blob holds vtable and itable stubs: HotSpot's VtableBlob, named
    /// "vtable chunks" on every JDK (kind Vtable on 25). Signal-safe.
    pub fn is_vtable_blob(&self, blob: Blob) -> bool {
        self.name_starts_with(blob, b"vtable chunks")
    }

    /// Whether the name starts with `prefix` (false if unreadable). Signal-safe.
    pub fn name_starts_with(&self, blob: Blob, prefix: &[u8]) -> bool {
        match self.name_ptr(blob) {
            Some(name) => c_string_starts_with(name, prefix),
            None => false,
        }
    }

    /// Whether the name is exactly `expected` (false if unreadable). Signal-safe.
    pub fn name_eq(&self, blob: Blob, expected: &[u8]) -> bool {
        self.name_ptr(blob)
            .is_some_and(|name| c_string_eq(name, expected))
    }

    /// `CodeBlob::_size`: the whole blob in bytes, header included. Signal-safe.
    pub fn size(&self, blob: Blob) -> Option<usize> {
        let size = header_field(blob.addr, self.size)?;
        usize::try_from(size).ok().filter(non_null)
    }

    /// Whether `blob <= pc < blob + size`. Signal-safe.
    pub fn contains(&self, blob: Blob, pc: usize) -> bool {
        pc >= blob.addr && self.size(blob).is_some_and(|s| pc - blob.addr < s)
    }

    /// `CodeBlob::_frame_size`, in words. Signal-safe.
    pub fn frame_size_words(&self, blob: Blob) -> Option<usize> {
        usize::try_from(header_field(blob.addr, self.frame_size)?).ok()
    }

    /// `CodeBlob::_frame_complete_offset`: pcs before `code_begin + offset` have not
    /// built their frame yet. Negative (-1) when the frame is never complete. Signal-safe.
    pub fn frame_complete_offset(&self, blob: Blob) -> Option<i32> {
        i32::try_from(header_field(blob.addr, self.frame_complete_offset)?).ok()
    }

    /// First instruction of the blob's code. Signal-safe.
    pub fn code_begin(&self, blob: Blob) -> Option<usize> {
        self.code_addr(blob, self.code_begin)
    }

    /// End of the blob's code (exclusive). Signal-safe.
    pub fn code_end(&self, blob: Blob) -> Option<usize> {
        self.code_addr(blob, self.code_end)
    }

    fn code_addr(&self, blob: Blob, at: CodeAddr) -> Option<usize> {
        match at {
            CodeAddr::Pointer(offset) => load_ptr(blob.addr, offset).filter(non_null),
            CodeAddr::BlobOffset(field) => plus_offset_field(blob.addr, blob.addr, field),
        }
    }

    /// Whether the blob is an nmethod (compiled Java method or native wrapper): by
    /// `CodeBlob::_kind` where exported (25), else by name — see [`BlobKind`].
    /// Signal-safe.
    pub fn is_nmethod(&self, blob: Blob) -> bool {
        match self.kind {
            BlobKind::Field { kind, nmethod } => header_field(blob.addr, kind) == Some(nmethod),
            BlobKind::Name => {
                self.name_eq(blob, b"nmethod") || self.name_eq(blob, b"native nmethod")
            }
        }
    }

    /// [`is_nmethod`](Self::is_nmethod), remembering in `names` the name pointers that
    /// spelled an nmethod name: every nmethod's `_name` is one of two string literals in
    /// libjvm, so after the first of each kind an nmethod costs one load and a compare
    /// instead of a byte-by-byte compare (up to 17 protected loads). Other names are
    /// still compared (they differ at the first byte). Signal-safe.
    #[link_section = sample_path_section!()]
    pub fn is_nmethod_cached(&self, blob: Blob, names: &NmethodNames) -> bool {
        if !matches!(self.kind, BlobKind::Name) {
            return self.is_nmethod(blob);
        }
        let Some(name) = self.name_ptr(blob) else {
            return false;
        };
        if names
            .known
            .iter()
            .any(|k| k.load(Ordering::Relaxed) == name)
        {
            return true;
        }
        let slot = if c_string_eq(name, b"nmethod") {
            &names.known[0]
        } else if c_string_eq(name, b"native nmethod") {
            &names.known[1]
        } else {
            return false;
        };
        slot.store(name, Ordering::Relaxed);
        true
    }
}

/// Name pointers known to spell "nmethod" and "native nmethod" (see
/// [`CodeBlobGroup::is_nmethod_cached`]), 0 until seen. Owned by whoever owns the layout
/// (the walker), so a test's synthetic layout starts with its own empty set. The
/// pointers name string literals in libjvm, which stays loaded for the life of the
/// process. Signal-safe (relaxed atomics).
#[derive(Debug, Default)]
pub struct NmethodNames {
    known: [AtomicUsize; 2],
}

/// Whether the C string at `addr` is exactly `expected`. Signal-safe.
fn c_string_eq(addr: usize, expected: &[u8]) -> bool {
    c_string_starts_with(addr, expected)
        && addr
            .checked_add(expected.len())
            .and_then(|a| load_u8_at(Site::NmethodHeader, a))
            .is_some_and(|b| b == 0)
}

/// Whether the C string at `addr` starts with `prefix`, byte by byte through protected
/// loads (the string may live in a library being unloaded). Signal-safe.
fn c_string_starts_with(addr: usize, prefix: &[u8]) -> bool {
    if prefix.len() > MAX_NAME {
        return false;
    }
    prefix.iter().enumerate().all(|(i, &expected)| {
        addr.checked_add(i)
            .and_then(|a| load_u8_at(Site::NmethodHeader, a))
            .is_some_and(|b| b == expected)
    })
}

// ---------------------------------------------------------------------------------------
// nmethod accessors.
// ---------------------------------------------------------------------------------------

impl NMethodGroup {
    /// The compiled method's `Method*`. Signal-safe.
    pub fn method(&self, blob: Blob) -> Option<usize> {
        load_ptr(blob.addr, self.method).filter(non_null)
    }

    /// `nmethod::_comp_level` (0 interpreter .. 4 C2). Signal-safe.
    pub fn comp_level(&self, blob: Blob) -> Option<i32> {
        i32::try_from(header_field(blob.addr, self.comp_level)?).ok()
    }

    /// `nmethod::_compile_id`. Signal-safe.
    pub fn compile_id(&self, blob: Blob) -> Option<i32> {
        i32::try_from(header_field(blob.addr, self.compile_id)?).ok()
    }

    /// The verified entry point (after the inline-cache check). Signal-safe.
    pub fn verified_entry_point(&self, code_blob: &CodeBlobGroup, blob: Blob) -> Option<usize> {
        match self.verified_entry {
            EntryAddr::Pointer(offset) => load_ptr(blob.addr, offset).filter(non_null),
            EntryAddr::CodeOffset(field) => {
                plus_offset_field(code_blob.code_begin(blob)?, blob.addr, field)
            }
        }
    }

    /// `[begin, end)` of the PcDesc array. Empty for native wrappers. Signal-safe.
    pub fn pc_desc_range(&self, blob: Blob) -> Option<(usize, usize)> {
        let nm = blob.addr;
        let (begin, end) = match self.debug {
            DebugInfo::InBlob {
                scopes_pcs_offset,
                dependencies_offset,
                ..
            } => (
                plus_offset_field(nm, nm, scopes_pcs_offset)?,
                plus_offset_field(nm, nm, dependencies_offset)?,
            ),
            DebugInfo::Split {
                immutable_data,
                scopes_pcs_offset,
                scopes_data_offset,
                ..
            } => {
                let imm = load_ptr(nm, immutable_data).filter(non_null)?;
                (
                    plus_offset_field(imm, nm, scopes_pcs_offset)?,
                    plus_offset_field(imm, nm, scopes_data_offset)?,
                )
            }
        };
        sane_range(begin, end)
    }

    /// Start of the compressed scopes stream that `PcDesc::_scope_decode_offset` indexes.
    /// Signal-safe.
    pub fn scopes_data_begin(&self, blob: Blob) -> Option<usize> {
        let nm = blob.addr;
        match self.debug {
            DebugInfo::InBlob {
                scopes_data_begin, ..
            } => load_ptr(nm, scopes_data_begin).filter(non_null),
            DebugInfo::Split {
                immutable_data,
                scopes_data_offset,
                ..
            } => {
                let imm = load_ptr(nm, immutable_data).filter(non_null)?;
                plus_offset_field(imm, nm, scopes_data_offset)
            }
        }
    }

    /// `[begin, end)` of the `Metadata*` array; a ScopeDesc method index `i` (1-based)
    /// names `begin[i - 1]`. Signal-safe.
    pub fn metadata_range(&self, blob: Blob) -> Option<(usize, usize)> {
        let nm = blob.addr;
        let (begin, end) = match self.debug {
            DebugInfo::InBlob {
                metadata_offset,
                scopes_data_begin,
                ..
            } => (
                plus_offset_field(nm, nm, metadata_offset)?,
                load_ptr(nm, scopes_data_begin)?,
            ),
            DebugInfo::Split {
                mutable_data,
                relocation_size,
                mutable_data_size,
                ..
            } => {
                let data = load_ptr(nm, mutable_data).filter(non_null)?;
                (
                    plus_offset_field(data, nm, relocation_size)?,
                    plus_offset_field(data, nm, mutable_data_size)?,
                )
            }
        };
        sane_range(begin, end)
    }
}

// ---------------------------------------------------------------------------------------
// Wrappers over the global layout.
// ---------------------------------------------------------------------------------------

fn code_cache() -> Option<&'static CodeCacheGroup> {
    layout::get()?.code_cache.as_ref()
}

fn code_blob() -> Option<&'static CodeBlobGroup> {
    layout::get()?.code_blob.as_ref()
}

fn nmethod() -> Option<&'static NMethodGroup> {
    layout::get()?.nmethod.as_ref()
}

/// Whether `pc` is inside the code cache's bounds. Signal-safe.
pub fn is_in_code_cache(pc: usize) -> bool {
    code_cache().is_some_and(|c| c.contains(pc))
}

/// The used blob holding `pc`. Signal-safe.
pub fn find_blob(pc: usize) -> Option<Blob> {
    code_cache()?.find_blob(pc)
}

/// Whether `pc` is in the template interpreter. Signal-safe.
pub fn is_interpreter(pc: usize) -> bool {
    code_cache().is_some_and(|c| c.is_interpreter(pc))
}

/// The call stub's return address (the pc of an entry frame). Signal-safe.
pub fn call_stub_return_address() -> Option<usize> {
    code_cache()?.call_stub_return_address()
}

/// `ContinuationEntry::_return_pc`, where exported. Signal-safe.
pub fn continuation_return_pc() -> Option<usize> {
    code_cache()?.continuation_return_pc()
}

impl Blob {
    /// The name (`const char*`). Signal-safe.
    pub fn name_ptr(self) -> Option<usize> {
        code_blob()?.name_ptr(self)
    }

    /// Signal-safe.
    pub fn name_starts_with(self, prefix: &[u8]) -> bool {
        code_blob().is_some_and(|g| g.name_starts_with(self, prefix))
    }

    /// Signal-safe.
    pub fn name_eq(self, name: &[u8]) -> bool {
        code_blob().is_some_and(|g| g.name_eq(self, name))
    }

    /// Whole blob size in bytes. Signal-safe.
    pub fn size(self) -> Option<usize> {
        code_blob()?.size(self)
    }

    /// Whether the blob covers `pc`. Signal-safe.
    pub fn contains(self, pc: usize) -> bool {
        code_blob().is_some_and(|g| g.contains(self, pc))
    }

    /// Frame size in words. Signal-safe.
    pub fn frame_size_words(self) -> Option<usize> {
        code_blob()?.frame_size_words(self)
    }

    /// Offset from code begin where the frame is complete (-1: never). Signal-safe.
    pub fn frame_complete_offset(self) -> Option<i32> {
        code_blob()?.frame_complete_offset(self)
    }

    /// Signal-safe.
    pub fn code_begin(self) -> Option<usize> {
        code_blob()?.code_begin(self)
    }

    /// Signal-safe.
    pub fn code_end(self) -> Option<usize> {
        code_blob()?.code_end(self)
    }

    /// Signal-safe.
    pub fn is_nmethod(self) -> bool {
        code_blob().is_some_and(|g| g.is_nmethod(self))
    }

    /// The nmethod's `Method*`. Signal-safe.
    pub fn nmethod_method(self) -> Option<usize> {
        nmethod()?.method(self)
    }

    /// Signal-safe.
    pub fn comp_level(self) -> Option<i32> {
        nmethod()?.comp_level(self)
    }

    /// Signal-safe.
    pub fn verified_entry_point(self) -> Option<usize> {
        nmethod()?.verified_entry_point(code_blob()?, self)
    }

    /// `[begin, end)` of the PcDesc array. Signal-safe.
    pub fn pc_desc_range(self) -> Option<(usize, usize)> {
        nmethod()?.pc_desc_range(self)
    }

    /// Signal-safe.
    pub fn scopes_data_begin(self) -> Option<usize> {
        nmethod()?.scopes_data_begin(self)
    }

    /// First `Metadata*` slot (ScopeDesc method indexes are 1-based into it).
    /// Signal-safe.
    pub fn metadata_begin(self) -> Option<usize> {
        Some(nmethod()?.metadata_range(self)?.0)
    }

    /// End of the `Metadata*` array (exclusive). Signal-safe.
    pub fn metadata_end(self) -> Option<usize> {
        Some(nmethod()?.metadata_range(self)?.1)
    }
}

#[cfg(test)]
#[path = "codecache_tests.rs"]
mod tests;
