use super::*;
use crate::hotspot::vmstructs::VmTables;
use crate::sample::vm::layout::{self, VmLayout};

const JDK17: &str = include_str!("../../hotspot/fixtures/vmstructs-jdk17.txt");
const JDK21: &str = include_str!("../../hotspot/fixtures/vmstructs-jdk21.txt");
const JDK25: &str = include_str!("../../hotspot/fixtures/vmstructs-jdk25.txt");

fn layout_of(dump: &str) -> VmLayout {
    let layout = VmLayout::resolve(&VmTables::from_dump(dump));
    assert!(layout.complete(), "{:?}", layout.missing());
    layout
}

/// Zeroed, 8-byte aligned memory standing in for VM structures.
struct Mem(Vec<u64>);

impl Mem {
    fn new(bytes: usize) -> Mem {
        Mem(vec![0; bytes.div_ceil(8)])
    }

    fn base(&self) -> usize {
        self.0.as_ptr() as usize
    }

    fn bytes(&mut self) -> &mut [u8] {
        let len = self.0.len() * 8;
        // SAFETY: the Vec owns `len` initialised bytes; u8 has no alignment needs.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), len) }
    }

    fn put(&mut self, offset: usize, value: &[u8]) -> &mut Self {
        self.bytes()[offset..offset + value.len()].copy_from_slice(value);
        self
    }

    fn word(&mut self, offset: usize, value: usize) -> &mut Self {
        self.put(offset, &value.to_ne_bytes())
    }

    /// Writes `value` with the field's width.
    fn field(&mut self, offset: usize, f: Field, value: i64) -> &mut Self {
        let bytes = value.to_ne_bytes();
        self.put(offset + f.offset, &bytes[..usize::from(f.size)])
    }
}

// ---- a synthetic code heap ---------------------------------------------------------

const SHIFT: u32 = 7;
const SEG: usize = 1 << SHIFT;

/// One CodeHeap (struct, memory, segment map) laid out like HotSpot's, plus the
/// statics and GrowableArray that make up `CodeCache::_heaps`.
struct FakeCache {
    group: CodeCacheGroup,
    heap_structs: Vec<Mem>,
    memories: Vec<Mem>,
    segmaps: Vec<Vec<u8>>,
    array: Mem,
    data: Mem,
    statics: Mem,
}

/// Statics area: heaps, low bound, high bound, call stub return, interpreter code.
const S_HEAPS: usize = 0;
const S_LOW: usize = 8;
const S_HIGH: usize = 16;
const S_CALL_STUB: usize = 24;
const S_INTERP: usize = 32;

impl FakeCache {
    /// `heaps[i]` has `segments[i]` segments; blocks are added with `block`.
    fn new(layout: &VmLayout, segments: &[usize]) -> FakeCache {
        let mut group = layout.code_cache.clone().unwrap();
        let statics = Mem::new(64);
        group.heaps_addr = statics.base() + S_HEAPS;
        group.low_bound_addr = statics.base() + S_LOW;
        group.high_bound_addr = statics.base() + S_HIGH;
        group.call_stub_return_address_addr = statics.base() + S_CALL_STUB;
        group.interpreter_code_addr = statics.base() + S_INTERP;
        let mut cache = FakeCache {
            group,
            heap_structs: Vec::new(),
            memories: Vec::new(),
            segmaps: Vec::new(),
            array: Mem::new(64),
            data: Mem::new(8 * segments.len()),
            statics,
        };
        for &n in segments {
            cache.add_heap(n);
        }
        cache.publish();
        cache
    }

    fn add_heap(&mut self, segments: usize) {
        let g = self.group.clone();
        let memory = Mem::new(segments * SEG);
        let segmap = vec![FREE_SEGMENT; segments];
        let mut heap = Mem::new(512);
        let low = memory.base();
        heap.word(g.heap_memory + g.vs_low, low)
            .word(g.heap_memory + g.vs_high, low + segments * SEG)
            .word(g.heap_segmap + g.vs_low, segmap.as_ptr() as usize)
            .word(
                g.heap_segmap + g.vs_high,
                segmap.as_ptr() as usize + segments,
            )
            .field(0, g.heap_log2_segment_size, i64::from(SHIFT));
        self.heap_structs.push(heap);
        self.memories.push(memory);
        self.segmaps.push(segmap);
    }

    /// Writes the heap array and the code cache bounds.
    fn publish(&mut self) {
        let g = self.group.clone();
        let n = self.heap_structs.len();
        for i in 0..n {
            let heap = self.heap_structs[i].base();
            self.data.word(i * 8, heap);
        }
        let data = self.data.base();
        self.array
            .field(0, g.array_len, n as i64)
            .word(g.array_data, data);
        let low = self.memories.iter().map(Mem::base).min().unwrap();
        let high = self
            .memories
            .iter()
            .map(|m| m.base() + m.0.len() * 8)
            .max()
            .unwrap();
        let array = self.array.base();
        self.statics
            .word(S_HEAPS, array)
            .word(S_LOW, low)
            .word(S_HIGH, high);
    }

    /// Marks `len` segments from `first` as one block, the way HotSpot's
    /// `mark_segmap_as_used` does: 0 at the head, then 1, 2, ... 0xFE, 1, 2, ...
    fn block(&mut self, heap: usize, first: usize, len: usize, used: bool) -> Blob {
        let g = self.group.clone();
        let mut value = 0u8;
        for slot in &mut self.segmaps[heap][first..first + len] {
            *slot = value;
            value = if value == FREE_SEGMENT - 1 {
                1
            } else {
                value + 1
            };
        }
        let offset = first * SEG;
        self.memories[heap]
            .field(offset, g.block_length, len as i64)
            .field(offset, g.block_used, i64::from(used));
        Blob {
            addr: self.memories[heap].base() + offset + g.heap_block_size,
        }
    }

    fn addr(&self, heap: usize, segment: usize, within: usize) -> usize {
        self.memories[heap].base() + segment * SEG + within
    }
}

fn check_segmap_walk(layout: &VmLayout) {
    let mut c = FakeCache::new(layout, &[600, 50]);
    let a = c.block(0, 0, 3, true);
    let b = c.block(0, 3, 300, true); // longer than 254 segments: several hops
                                      // segments 303..310 stay free
    let d = c.block(0, 310, 290, false);
    let e = c.block(1, 10, 5, true);
    let g = &c.group;

    assert_eq!(g.find_blob(c.addr(0, 0, 40)), Some(a));
    assert_eq!(g.find_blob(c.addr(0, 2, SEG - 1)), Some(a));
    assert_eq!(g.find_blob(c.addr(0, 3, 64)), Some(b));
    for seg in [4, 200, 256, 257, 258, 302] {
        assert_eq!(g.find_blob(c.addr(0, seg, 5)), Some(b), "segment {seg}");
    }
    assert_eq!(g.find_blob(c.addr(0, 305, 0)), None, "free segment");
    assert_eq!(g.find_blob(c.addr(0, 400, 0)), None, "unused block");
    assert_ne!(d.addr, 0);
    assert_eq!(g.find_blob(c.addr(1, 12, 3)), Some(e), "second heap");
    assert_eq!(g.find_blob(c.addr(1, 0, 3)), None, "free in second heap");
    // A pc in the block header, before the blob, is not code.
    assert_eq!(g.find_blob(c.addr(0, 3, 0)), None);
    // Outside every heap and outside the cache bounds.
    assert_eq!(g.find_blob(1 << 20), None);
    assert!(!g.contains(1 << 20));
    assert!(g.contains(c.addr(1, 49, 0)));
}

#[test]
fn segmap_walk_jdk17_layout() {
    check_segmap_walk(&layout_of(JDK17));
}

#[test]
fn segmap_walk_jdk25_layout() {
    // 8-byte HeapBlock with a uint32_t length and `used` at 4.
    check_segmap_walk(&layout_of(JDK25));
}

#[test]
fn corrupt_segmap_or_heaps_give_none() {
    let layout = layout_of(JDK17);
    let mut c = FakeCache::new(&layout, &[20]);
    c.block(0, 2, 4, true);
    // A back-offset that points before the heap start.
    c.segmaps[0][3] = 9;
    assert_eq!(c.group.find_blob(c.addr(0, 3, 0)), None);
    // A block whose length does not reach the pc.
    let g = c.group.clone();
    c.memories[0].field(2 * SEG, g.block_length, 1);
    assert_eq!(c.group.find_blob(c.addr(0, 4, 0)), None);
    // A null heap array.
    c.statics.word(S_HEAPS, 0);
    assert_eq!(c.group.find_blob(c.addr(0, 2, 32)), None);
}

#[test]
fn interpreter_call_stub_and_bounds() {
    let layout = layout_of(JDK21);
    let mut c = FakeCache::new(&layout, &[8]);
    let g = c.group.clone();
    let interp_code = c.addr(0, 1, 0);
    let mut queue = Mem::new(64);
    queue.word(g.stub_queue_buffer, interp_code).field(
        0,
        g.stub_queue_buffer_limit,
        2 * SEG as i64,
    );
    c.statics.word(S_INTERP, queue.base());
    assert!(c.group.is_interpreter(interp_code));
    assert!(c.group.is_interpreter(interp_code + 2 * SEG - 1));
    assert!(!c.group.is_interpreter(interp_code + 2 * SEG));
    assert!(!c.group.is_interpreter(interp_code - 1));

    assert_eq!(c.group.call_stub_return_address(), None);
    let ret = c.addr(0, 5, 17);
    c.statics.word(S_CALL_STUB, ret);
    assert_eq!(c.group.call_stub_return_address(), Some(ret));
    assert_eq!(c.group.continuation_return_pc(), None);
}

// ---- blobs and nmethods ------------------------------------------------------------

const BLOB_BYTES: usize = 4096;

#[test]
fn blob_accessors_pointer_layout_jdk17() {
    let layout = layout_of(JDK17);
    let g = layout.code_blob.clone().unwrap();
    let mut mem = Mem::new(BLOB_BYTES);
    let blob = Blob { addr: mem.base() };
    let name = c"nmethod";
    let (CodeAddr::Pointer(begin_at), CodeAddr::Pointer(end_at)) = (g.code_begin, g.code_end)
    else {
        panic!("17 stores code pointers");
    };
    mem.word(g.name, name.as_ptr() as usize)
        .field(0, g.size, BLOB_BYTES as i64)
        .field(0, g.frame_size, 6)
        .field(0, g.frame_complete_offset, 20)
        .word(begin_at, blob.addr + 352)
        .word(end_at, blob.addr + 1000);
    assert_eq!(g.size(blob), Some(BLOB_BYTES));
    assert_eq!(g.frame_size_words(blob), Some(6));
    assert_eq!(g.frame_complete_offset(blob), Some(20));
    assert_eq!(g.code_begin(blob), Some(blob.addr + 352));
    assert_eq!(g.code_end(blob), Some(blob.addr + 1000));
    assert!(g.contains(blob, blob.addr + BLOB_BYTES - 1));
    assert!(!g.contains(blob, blob.addr + BLOB_BYTES));
    assert!(g.is_nmethod(blob));
    assert!(g.name_starts_with(blob, b"nmeth"));
    assert!(g.name_eq(blob, b"nmethod"));
    assert!(!g.name_eq(blob, b"nmetho"));

    for (name, nmethod) in [
        (c"native nmethod", true),
        (c"nmethods", false),
        (c"StubRoutines (1)", false),
        (c"Interpreter", false),
    ] {
        mem.word(g.name, name.as_ptr() as usize);
        assert_eq!(g.is_nmethod(blob), nmethod, "{name:?}");
    }
    assert!(g.name_starts_with(blob, b"Interp"));
    assert!(!g.name_starts_with(blob, b"Interpreter!"));
    mem.word(g.name, 0);
    assert_eq!(g.name_ptr(blob), None);
    assert!(!g.is_nmethod(blob));
}

#[test]
fn nmethod_names_are_remembered_per_cache() {
    let layout = layout_of(JDK17);
    let g = layout.code_blob.clone().unwrap();
    let mut mem = Mem::new(BLOB_BYTES);
    let blob = Blob { addr: mem.base() };
    let names = NmethodNames::default();
    // Two copies of each name: a byte compare accepts both, the cache keeps the one
    // it saw until another copy comes along.
    let (nm, nm2) = (c"nmethod", std::ffi::CString::new("nmethod").unwrap());
    let native = c"native nmethod";
    for (name, expected) in [
        (nm.as_ptr(), true),
        (nm2.as_ptr(), true),
        (native.as_ptr(), true),
        (c"StubRoutines (1)".as_ptr(), false),
        (c"nmethods".as_ptr(), false),
        (nm.as_ptr(), true),
    ] {
        mem.word(g.name, name as usize);
        assert_eq!(g.is_nmethod_cached(blob, &names), expected);
        assert_eq!(g.is_nmethod(blob), expected);
    }
    let known: Vec<usize> = names
        .known
        .iter()
        .map(|k| k.load(Ordering::Relaxed))
        .collect();
    assert_eq!(known, [nm.as_ptr() as usize, native.as_ptr() as usize]);
    // A cached pointer is trusted without reading the string again.
    let mut own = *b"nmethod\0";
    mem.word(g.name, own.as_ptr() as usize);
    assert!(g.is_nmethod_cached(blob, &names));
    own[0] = b'x';
    mem.word(g.name, own.as_ptr() as usize);
    assert!(g.is_nmethod_cached(blob, &names));
    assert!(!g.is_nmethod(blob));
    // A fresh cache (another layout) starts empty.
    let other = NmethodNames::default();
    assert!(other.known.iter().all(|k| k.load(Ordering::Relaxed) == 0));
    mem.word(g.name, 0);
    assert!(!g.is_nmethod_cached(blob, &names));
}

#[test]
fn kind_field_layouts_ignore_the_name_cache() {
    let layout = layout_of(JDK25);
    let g = layout.code_blob.clone().unwrap();
    let BlobKind::Field { kind, nmethod } = g.kind else {
        panic!("25 has CodeBlob::_kind");
    };
    let mut mem = Mem::new(BLOB_BYTES);
    let blob = Blob { addr: mem.base() };
    let names = NmethodNames::default();
    mem.field(0, kind, nmethod)
        .word(g.name, c"native nmethod".as_ptr() as usize);
    assert!(g.is_nmethod_cached(blob, &names));
    mem.field(0, kind, 6);
    assert!(!g.is_nmethod_cached(blob, &names));
    assert!(names.known.iter().all(|k| k.load(Ordering::Relaxed) == 0));
}

#[test]
fn a_view_is_read_once_and_answers_like_the_group() {
    let layout = layout_of(JDK21);
    let mut c = FakeCache::new(&layout, &[40, 40, 40]);
    let a = c.block(0, 1, 2, true);
    let b = c.block(2, 5, 3, true);
    let g = c.group.clone();
    let mut queue = Mem::new(64);
    let interp = c.addr(1, 4, 0);
    queue
        .word(g.stub_queue_buffer, interp)
        .field(0, g.stub_queue_buffer_limit, SEG as i64);
    c.statics.word(S_INTERP, queue.base());
    c.statics.word(S_CALL_STUB, c.addr(1, 9, 3));
    let view = c.group.view();
    assert_eq!(view.find_blob(&c.group, c.addr(0, 2, 7)), Some(a));
    assert_eq!(view.find_blob(&c.group, c.addr(2, 7, 0)), Some(b));
    assert_eq!(view.find_blob(&c.group, c.addr(1, 0, 0)), None);
    assert!(view.is_interpreter(interp) && !view.is_interpreter(interp + SEG));
    assert_eq!(view.call_stub_return_address(), Some(c.addr(1, 9, 3)));
    // The view keeps what it read: the statics changing later (they do not, in a
    // JVM) does not change its answers, while the group reads them again.
    c.statics.word(S_HEAPS, 0).word(S_CALL_STUB, 0);
    assert_eq!(view.find_blob(&c.group, c.addr(0, 2, 7)), Some(a));
    assert_eq!(c.group.find_blob(c.addr(0, 2, 7)), None);
    // A heap's committed end is read at lookup time: a pc past it is not code.
    let (memory, high) = (g.heap_memory + g.vs_high, c.addr(2, 6, 0));
    c.heap_structs[2].word(memory, high);
    assert_eq!(view.find_blob(&c.group, c.addr(2, 7, 0)), None);
    assert_eq!(view.find_blob(&c.group, c.addr(2, 5, 40)), Some(b));
    // Blocks are still read through the segment map at lookup time.
    c.block(0, 1, 2, false);
    assert_eq!(view.find_blob(&c.group, c.addr(0, 2, 7)), None);
    assert!(view.complete());
    // Unreadable bounds give an empty view.
    c.statics.word(S_LOW, 0);
    let empty = c.group.view();
    assert!(!empty.complete());
    assert!(!empty.contains(c.addr(0, 2, 7)));
    assert_eq!(empty.find_blob(&c.group, c.addr(0, 2, 7)), None);
}

#[test]
fn blob_accessors_offset_layout_jdk25() {
    let layout = layout_of(JDK25);
    let g = layout.code_blob.clone().unwrap();
    let (CodeAddr::BlobOffset(begin_at), CodeAddr::BlobOffset(end_at)) = (g.code_begin, g.code_end)
    else {
        panic!("25 stores code offsets");
    };
    let BlobKind::Field { kind, nmethod } = g.kind else {
        panic!("25 has CodeBlob::_kind");
    };
    let mut mem = Mem::new(BLOB_BYTES);
    let blob = Blob { addr: mem.base() };
    mem.field(0, g.size, 2048)
        .field(0, g.frame_complete_offset, -1) // int16_t: frame never complete
        .field(0, begin_at, 224)
        .field(0, end_at, 900)
        .field(0, kind, nmethod);
    assert_eq!(g.frame_complete_offset(blob), Some(-1));
    assert_eq!(g.code_begin(blob), Some(blob.addr + 224));
    assert_eq!(g.code_end(blob), Some(blob.addr + 900));
    assert!(g.is_nmethod(blob));
    mem.field(0, kind, 6); // RuntimeStub
    assert!(!g.is_nmethod(blob));
    // The name plays no part in the kind strategy.
    mem.word(g.name, c"nmethod".as_ptr() as usize);
    assert!(!g.is_nmethod(blob));
}

#[test]
fn nmethod_debug_info_in_blob_jdk17() {
    let layout = layout_of(JDK17);
    let cb = layout.code_blob.clone().unwrap();
    let n = layout.nmethod.clone().unwrap();
    let DebugInfo::InBlob {
        scopes_pcs_offset,
        dependencies_offset,
        scopes_data_begin,
        metadata_offset,
    } = n.debug
    else {
        panic!("17 keeps debug info in the blob");
    };
    let EntryAddr::Pointer(vep_at) = n.verified_entry else {
        panic!("17 stores the entry pointer");
    };
    let mut mem = Mem::new(BLOB_BYTES);
    let nm = Blob { addr: mem.base() };
    mem.word(n.method, 0x7f00_1234_5678)
        .field(0, n.comp_level, 4)
        .word(vep_at, nm.addr + 384)
        .field(0, metadata_offset, 1200)
        .word(scopes_data_begin, nm.addr + 1248)
        .field(0, scopes_pcs_offset, 1600)
        .field(0, dependencies_offset, 1600 + 5 * 16);
    assert_eq!(n.method(nm), Some(0x7f00_1234_5678));
    assert_eq!(n.comp_level(nm), Some(4));
    assert_eq!(n.verified_entry_point(&cb, nm), Some(nm.addr + 384));
    assert_eq!(n.pc_desc_range(nm), Some((nm.addr + 1600, nm.addr + 1680)));
    assert_eq!(n.scopes_data_begin(nm), Some(nm.addr + 1248));
    assert_eq!(n.metadata_range(nm), Some((nm.addr + 1200, nm.addr + 1248)));
    // Out-of-order offsets are refused.
    mem.field(0, dependencies_offset, 1500);
    assert_eq!(n.pc_desc_range(nm), None);
    mem.field(0, scopes_pcs_offset, -8);
    assert_eq!(n.pc_desc_range(nm), None);
}

#[test]
fn nmethod_debug_info_split_jdk25() {
    let layout = layout_of(JDK25);
    let cb = layout.code_blob.clone().unwrap();
    let n = layout.nmethod.clone().unwrap();
    let DebugInfo::Split {
        immutable_data,
        scopes_pcs_offset,
        scopes_data_offset,
        mutable_data,
        relocation_size,
        mutable_data_size,
    } = n.debug
    else {
        panic!("25 splits debug info");
    };
    let (CodeAddr::BlobOffset(code_offset), EntryAddr::CodeOffset(vep_offset)) =
        (cb.code_begin, n.verified_entry)
    else {
        panic!("25 stores offsets");
    };
    let mut mem = Mem::new(BLOB_BYTES);
    let imm = Mem::new(1024);
    let mutable = Mem::new(1024);
    let nm = Blob { addr: mem.base() };
    mem.word(n.method, 0x7f00_0000_1000)
        .field(0, n.comp_level, 3)
        .field(0, code_offset, 224)
        .field(0, vep_offset, 32)
        .word(immutable_data, imm.base())
        .field(0, scopes_pcs_offset, 64)
        .field(0, scopes_data_offset, 64 + 3 * 16)
        .word(mutable_data, mutable.base())
        .field(0, relocation_size, 100)
        .field(0, mutable_data_size, 100 + 4 * 8);
    assert_eq!(n.method(nm), Some(0x7f00_0000_1000));
    assert_eq!(n.comp_level(nm), Some(3));
    assert_eq!(n.verified_entry_point(&cb, nm), Some(nm.addr + 224 + 32));
    assert_eq!(
        n.pc_desc_range(nm),
        Some((imm.base() + 64, imm.base() + 112))
    );
    assert_eq!(n.scopes_data_begin(nm), Some(imm.base() + 112));
    let metadata = (mutable.base() + 100, mutable.base() + 132);
    assert_eq!(n.metadata_range(nm), Some(metadata));
    // Native wrappers have no immutable data.
    mem.word(immutable_data, 0);
    assert_eq!(n.pc_desc_range(nm), None);
    assert_eq!(n.scopes_data_begin(nm), None);
}

#[test]
fn comp_level_is_one_signed_byte_on_21() {
    let layout = layout_of(JDK21);
    let n = layout.nmethod.clone().unwrap();
    let mut mem = Mem::new(BLOB_BYTES);
    let nm = Blob { addr: mem.base() };
    mem.field(0, n.comp_level, 2)
        .put(n.comp_level.offset + 1, &[0xAB; 3]);
    assert_eq!(n.comp_level(nm), Some(2));
}

#[test]
fn load_field_extends_by_sign() {
    let mut mem = Mem::new(16);
    mem.put(0, &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
    let f = |size, signed| Field {
        offset: 0,
        size,
        signed,
    };
    assert_eq!(load_field(mem.base(), f(1, true)), Some(-1));
    assert_eq!(load_field(mem.base(), f(1, false)), Some(255));
    assert_eq!(load_field(mem.base(), f(2, true)), Some(-1));
    assert_eq!(load_field(mem.base(), f(2, false)), Some(65535));
    assert_eq!(load_field(mem.base(), f(4, true)), Some(-1));
    assert_eq!(load_field(mem.base(), f(4, false)), Some(0xFFFF_FFFF));
    assert_eq!(load_field(mem.base(), f(8, false)), Some(-1));
    assert_eq!(load_field(mem.base(), f(3, false)), None);
    // The null page reads as a fault.
    assert_eq!(load_field(0, f(4, true)), None);
    assert_eq!(load_field(usize::MAX - 2, f(4, true)), None);
}

#[test]
fn global_wrappers_without_layout_answer_nothing() {
    // No JVM in unit tests: init() never ran, so the wrappers must degrade quietly.
    if layout::get().is_some() {
        return;
    }
    assert!(!is_in_code_cache(0x1000));
    assert_eq!(find_blob(0x1000), None);
    assert!(!is_interpreter(0x1000));
    assert_eq!(call_stub_return_address(), None);
    let b = Blob { addr: 0x1000 };
    assert_eq!(b.size(), None);
    assert!(!b.is_nmethod());
    assert_eq!(b.pc_desc_range(), None);
}
