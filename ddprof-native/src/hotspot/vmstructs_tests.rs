use super::*;
use std::ffi::c_char;
use std::mem::offset_of;

const JDK11: &str = include_str!("fixtures/vmstructs-jdk11.txt");
const JDK17: &str = include_str!("fixtures/vmstructs-jdk17.txt");
const JDK21: &str = include_str!("fixtures/vmstructs-jdk21.txt");
const JDK25: &str = include_str!("fixtures/vmstructs-jdk25.txt");

fn field(offset: usize, size: u8, signed: bool) -> Field {
    Field {
        offset,
        size,
        signed,
    }
}

// ---- synthetic in-memory tables ---------------------------------------------------

/// HotSpot's own entry layouts on x86_64 (stride 48 / 40 / 16).
#[repr(C)]
struct StructEntry {
    type_name: *const c_char,
    field_name: *const c_char,
    type_string: *const c_char,
    is_static: i32,
    offset: u64,
    address: usize,
}

#[repr(C)]
struct TypeEntry {
    type_name: *const c_char,
    superclass_name: *const c_char,
    is_oop: i32,
    is_integer: i32,
    is_unsigned: i32,
    size: u64,
}

#[repr(C)]
struct IntEntry {
    name: *const c_char,
    value: i32,
}

#[repr(C)]
struct LongEntry {
    name: *const c_char,
    value: i64,
}

/// A shuffled, padded struct entry: proves the reader honours the exported offsets
/// and stride instead of assuming HotSpot's.
#[repr(C)]
struct OddStructEntry {
    pad: u64,
    is_static: i32,
    pad2: i32,
    address: usize,
    field_name: *const c_char,
    offset: u64,
    type_string: *const c_char,
    type_name: *const c_char,
    pad3: [u64; 2],
}

/// Owns the strings and entry arrays that a `RawTables` points into.
#[derive(Default)]
struct Synthetic {
    strings: Vec<CString>,
    structs: Vec<StructEntry>,
    odd_structs: Vec<OddStructEntry>,
    types: Vec<TypeEntry>,
    ints: Vec<IntEntry>,
    longs: Vec<LongEntry>,
}

impl Synthetic {
    fn s(&mut self, text: &str) -> *const c_char {
        let c = CString::new(text).unwrap();
        let p = c.as_ptr();
        self.strings.push(c);
        p
    }

    /// `name` is "Type::field"; the type part may itself contain "::".
    fn field(&mut self, name: &str, offset: u64, ty: Option<&str>) -> &mut Self {
        self.entry(name, false, offset, 0, ty)
    }

    fn static_field(&mut self, name: &str, address: usize) -> &mut Self {
        self.entry(name, true, 0, address, None)
    }

    fn entry(
        &mut self,
        name: &str,
        is_static: bool,
        offset: u64,
        address: usize,
        ty: Option<&str>,
    ) -> &mut Self {
        let (t, f) = name.rsplit_once("::").unwrap();
        let e = StructEntry {
            type_name: self.s(t),
            field_name: self.s(f),
            type_string: ty.map_or(std::ptr::null(), |t| self.s(t)),
            is_static: i32::from(is_static),
            offset,
            address,
        };
        self.structs.push(e);
        self
    }

    fn ty(&mut self, name: &str, size: u64, unsigned: bool) -> &mut Self {
        let e = TypeEntry {
            type_name: self.s(name),
            superclass_name: std::ptr::null(),
            is_oop: 0,
            is_integer: 1,
            is_unsigned: i32::from(unsigned),
            size,
        };
        self.types.push(e);
        self
    }

    fn int(&mut self, name: &str, value: i32) -> &mut Self {
        let e = IntEntry {
            name: self.s(name),
            value,
        };
        self.ints.push(e);
        self
    }

    fn long(&mut self, name: &str, value: i64) -> &mut Self {
        let e = LongEntry {
            name: self.s(name),
            value,
        };
        self.longs.push(e);
        self
    }

    /// Copies every struct entry into the shuffled layout.
    fn make_odd(&mut self) {
        self.odd_structs = self
            .structs
            .iter()
            .map(|e| OddStructEntry {
                pad: u64::MAX,
                is_static: e.is_static,
                pad2: -1,
                address: e.address,
                field_name: e.field_name,
                offset: e.offset,
                type_string: e.type_string,
                type_name: e.type_name,
                pad3: [u64::MAX; 2],
            })
            .collect();
    }

    /// Appends the null terminators and describes the tables.
    fn raw(&mut self) -> RawTables {
        let null = std::ptr::null();
        self.structs.push(StructEntry {
            type_name: null,
            field_name: null,
            type_string: null,
            is_static: 0,
            offset: 0,
            address: 0,
        });
        self.types.push(TypeEntry {
            type_name: null,
            superclass_name: null,
            is_oop: 0,
            is_integer: 0,
            is_unsigned: 0,
            size: 0,
        });
        self.ints.push(IntEntry {
            name: null,
            value: 0,
        });
        self.longs.push(LongEntry {
            name: null,
            value: 0,
        });
        RawTables {
            structs: StructTable {
                base: self.structs.as_ptr() as usize,
                stride: std::mem::size_of::<StructEntry>(),
                type_name: offset_of!(StructEntry, type_name),
                field_name: offset_of!(StructEntry, field_name),
                type_string: Some(offset_of!(StructEntry, type_string)),
                is_static: offset_of!(StructEntry, is_static),
                offset: offset_of!(StructEntry, offset),
                address: offset_of!(StructEntry, address),
            },
            types: TypeTable {
                base: self.types.as_ptr() as usize,
                stride: std::mem::size_of::<TypeEntry>(),
                type_name: offset_of!(TypeEntry, type_name),
                is_unsigned: offset_of!(TypeEntry, is_unsigned),
                size: offset_of!(TypeEntry, size),
            },
            int_constants: ConstantTable {
                base: self.ints.as_ptr() as usize,
                stride: std::mem::size_of::<IntEntry>(),
                name: offset_of!(IntEntry, name),
                value: offset_of!(IntEntry, value),
            },
            long_constants: ConstantTable {
                base: self.longs.as_ptr() as usize,
                stride: std::mem::size_of::<LongEntry>(),
                name: offset_of!(LongEntry, name),
                value: offset_of!(LongEntry, value),
            },
        }
    }

    /// Loads a text dump into synthetic memory, so the memory reader and the dump
    /// parser can be compared on the same data.
    fn from_dump(text: &str) -> Synthetic {
        let tables = VmTables::from_dump(text);
        let mut syn = Synthetic::default();
        let mut names: Vec<_> = tables.fields.iter().collect();
        names.sort_by(|a, b| a.0.cmp(b.0));
        for (name, e) in names {
            let ty = e.type_string.as_deref();
            syn.entry(name, e.is_static, e.offset as u64, e.address, ty);
        }
        for (name, t) in &tables.types {
            syn.ty(name, t.size, t.is_unsigned);
        }
        for (name, v) in &tables.constants {
            match i32::try_from(*v) {
                Ok(v) => syn.int(name, v),
                Err(_) => syn.long(name, *v),
            };
        }
        syn
    }
}

fn read(raw: &RawTables) -> VmTables {
    // SAFETY: `raw` describes tables owned by a live `Synthetic`.
    unsafe { raw.read() }
}

#[test]
fn reads_structs_types_and_constants_from_memory() {
    let mut syn = Synthetic::default();
    syn.field("JavaThread::_anchor", 656, Some("JavaFrameAnchor"))
        .field("HeapBlock::Header::_used", 4, Some("bool"))
        .static_field("CodeCache::_heaps", 0xdead_b000)
        .ty("HeapBlock", 8, false)
        .ty("u2", 2, true)
        .int("_thread_in_Java", 8)
        .long("markWord::klass_shift", 42);
    let tables = read(&syn.raw());

    let anchor = tables.field("JavaThread::_anchor").unwrap();
    assert_eq!((anchor.offset, anchor.is_static), (656, false));
    assert_eq!(anchor.type_string.as_deref(), Some("JavaFrameAnchor"));
    // A type name containing "::" keeps it: the key is "Type::field" verbatim.
    assert_eq!(tables.field("HeapBlock::Header::_used").unwrap().offset, 4);
    let heaps = tables.field("CodeCache::_heaps").unwrap();
    assert_eq!((heaps.is_static, heaps.address), (true, 0xdead_b000));
    assert_eq!(heaps.type_string, None);
    assert_eq!(tables.type_info("HeapBlock").unwrap().size, 8);
    assert!(tables.type_info("u2").unwrap().is_unsigned);
    assert_eq!(tables.constant("_thread_in_Java"), Some(8));
    assert_eq!(tables.constant("markWord::klass_shift"), Some(42));
    assert_eq!(tables.counts(), (3, 2, 2));
}

#[test]
fn honours_exported_stride_and_offsets() {
    let mut syn = Synthetic::default();
    syn.field("JavaThread::_anchor", 1152, Some("JavaFrameAnchor"))
        .static_field("StubRoutines::_call_stub_return_address", 0x4000);
    let mut raw = syn.raw();
    syn.make_odd();
    raw.structs = StructTable {
        base: syn.odd_structs.as_ptr() as usize,
        stride: std::mem::size_of::<OddStructEntry>(),
        type_name: offset_of!(OddStructEntry, type_name),
        field_name: offset_of!(OddStructEntry, field_name),
        type_string: Some(offset_of!(OddStructEntry, type_string)),
        is_static: offset_of!(OddStructEntry, is_static),
        offset: offset_of!(OddStructEntry, offset),
        address: offset_of!(OddStructEntry, address),
    };
    let tables = read(&raw);
    assert_eq!(tables.field("JavaThread::_anchor").unwrap().offset, 1152);
    let stub = tables
        .field("StubRoutines::_call_stub_return_address")
        .unwrap();
    assert_eq!((stub.is_static, stub.address), (true, 0x4000));
    assert_eq!(tables.counts().0, 2);
}

#[test]
fn absent_or_implausible_tables_read_as_empty() {
    let mut syn = Synthetic::default();
    syn.field("JavaThread::_anchor", 1, None).int("x", 1);
    let mut raw = syn.raw();
    raw.structs.stride = 8; // cannot hold its own fields
    raw.int_constants.base = 0;
    let tables = read(&raw);
    assert_eq!(tables.counts(), (0, 0, 0));
    assert_eq!(read(&RawTables::default()).counts(), (0, 0, 0));
}

#[test]
fn memory_reader_and_dump_parser_agree() {
    for dump in [JDK11, JDK17, JDK21, JDK25] {
        let from_text = VmLayout::resolve(&VmTables::from_dump(dump));
        let mut syn = Synthetic::from_dump(dump);
        let from_memory = VmLayout::resolve(&read(&syn.raw()));
        assert!(from_memory.complete(), "{:?}", from_memory.missing());
        assert_eq!(from_text, from_memory);
    }
}

// ---- resolution: spellings, statics, degradation -----------------------------------

/// The JDK 17 fixture as synthetic memory, minus `drop` and plus `add`.
fn jdk17_with(drop: &[&str], add: &mut dyn FnMut(&mut Synthetic)) -> VmLayout {
    let mut tables = VmTables::from_dump(JDK17);
    for name in drop {
        assert!(
            tables.fields.remove(*name).is_some()
                || tables.constants.remove(*name).is_some()
                || tables.types.remove(*name).is_some(),
            "{name}"
        );
    }
    let mut syn = Synthetic::default();
    for (name, e) in &tables.fields {
        syn.entry(
            name,
            e.is_static,
            e.offset as u64,
            e.address,
            e.type_string.as_deref(),
        );
    }
    for (name, t) in &tables.types {
        syn.ty(name, t.size, t.is_unsigned);
    }
    for (name, v) in &tables.constants {
        syn.long(name, *v);
    }
    add(&mut syn);
    VmLayout::resolve(&read(&syn.raw()))
}

#[test]
fn a_missing_entry_disables_only_its_group() {
    let layout = jdk17_with(&["JavaThread::_anchor"], &mut |_| {});
    assert!(layout.threads.is_none());
    assert!(layout.code_cache.is_some());
    assert!(layout.code_blob.is_some());
    assert!(layout.nmethod.is_some());
    assert!(layout.pc_desc.is_some());
    assert!(layout.method.is_some());
    assert!(layout.frame.is_some());
    assert_eq!(layout.missing(), ["threads: JavaThread::_anchor"]);
    assert!(layout
        .summary()
        .contains("threads: absent (missing JavaThread::_anchor)"));
}

#[test]
fn missing_alternatives_are_named_together() {
    let layout = jdk17_with(&["JavaThread::_osthread", "PcDesc"], &mut |_| {});
    assert!(layout.threads.is_none() && layout.pc_desc.is_none());
    assert_eq!(
        layout.missing(),
        [
            "threads: JavaThread::_osthread | Thread::_osthread",
            "pc_desc: sizeof(PcDesc)"
        ]
    );
}

#[test]
fn alternative_spellings_are_accepted() {
    // JDK 25 moved _osthread to Thread; a table with only that spelling still works.
    let layout = jdk17_with(&["JavaThread::_osthread"], &mut |s| {
        s.field("Thread::_osthread", 1016, Some("OSThread*"));
    });
    assert_eq!(layout.threads.unwrap().osthread, 1016);
    // nmethod::_method (25) instead of CompiledMethod::_method (<= 21).
    let layout = jdk17_with(&["CompiledMethod::_method"], &mut |s| {
        s.field("nmethod::_method", 80, Some("Method*"));
    });
    assert_eq!(layout.nmethod.unwrap().method, 80);
}

#[test]
fn statics_and_fields_are_not_interchangeable() {
    // A static where a field is expected, and a field where a static is expected,
    // count as missing.
    let layout = jdk17_with(&["JavaThread::_anchor", "CodeCache::_heaps"], &mut |s| {
        s.static_field("JavaThread::_anchor", 0x5000);
        s.field("CodeCache::_heaps", 16, Some("GrowableArray<CodeHeap*>*"));
    });
    assert!(layout.threads.is_none());
    assert!(layout.code_cache.is_none());
    assert_eq!(
        layout.missing(),
        [
            "threads: JavaThread::_anchor",
            "code_cache: CodeCache::_heaps"
        ]
    );
}

#[test]
fn widths_come_from_type_strings() {
    let tables = VmTables::from_dump(JDK25);
    assert_eq!(tables.scalar_type("volatile signed char"), Some((1, true)));
    assert_eq!(tables.scalar_type("HeapWord* const"), Some((8, false)));
    assert_eq!(tables.scalar_type("int16_t"), Some((2, true)));
    assert_eq!(tables.scalar_type("u2"), Some((2, false)));
    assert_eq!(tables.scalar_type("CompLevel"), Some((1, true)));
    assert_eq!(tables.scalar_type("NoSuchType"), None);
    // An unknown type string falls back to the expected width.
    let layout = jdk17_with(&["nmethod::_comp_level"], &mut |s| {
        s.field("nmethod::_comp_level", 308, Some("MysteryLevel"));
    });
    assert_eq!(layout.nmethod.unwrap().comp_level, field(308, 4, true));
    // A scalar whose type is not 1/2/4/8 bytes wide disables the group.
    let layout = jdk17_with(&["CodeBlob::_size"], &mut |s| {
        s.field("CodeBlob::_size", 12, Some("JavaFrameAnchor"));
    });
    assert!(layout.code_blob.is_none());
    assert!(layout.missing()[0].contains("unexpected width"));
}

#[test]
fn symbol_length_and_refcount_is_understood() {
    // Early JDK 11 builds pack the length in the high half of a u4.
    let layout = jdk17_with(&["Symbol::_length"], &mut |s| {
        s.field("Symbol::_length_and_refcount", 0, Some("volatile uint32_t"));
    });
    let symbol = layout.method.unwrap().symbol;
    assert_eq!(symbol.length, field(0, 4, false));
    assert_eq!(symbol.length_shift, 16);
}

// ---- fixtures: every group on every JDK of the matrix ------------------------------

fn fixture(dump: &str) -> VmLayout {
    let layout = VmLayout::resolve(&VmTables::from_dump(dump));
    assert!(layout.complete(), "missing: {:?}", layout.missing());
    layout
}

#[test]
fn jdk11_resolves_every_group() {
    let l = fixture(JDK11);
    let t = l.threads.unwrap();
    assert_eq!((t.anchor, t.osthread, t.vframe_array_head), (808, 624, 872));
    assert_eq!(t.thread_state, field(960, 4, true));
    assert_eq!(t.osthread_thread_id, field(216, 4, true));
    assert_eq!(t.cont_entry, None);
    let c = l.code_cache.unwrap();
    // GenericGrowableArray on 11, with the data pointer after an arena.
    assert_eq!((c.array_len, c.array_data), (field(0, 4, true), 24));
    assert_eq!((c.heap_memory, c.heap_segmap), (8, 120));
    assert_eq!(c.heap_block_size, 16);
    assert_eq!(c.block_length, field(0, 8, false));
    // HotSpot's type table calls bool signed; 0/1 read the same either way.
    assert_eq!(c.block_used, field(8, 1, true));
    let b = l.code_blob.unwrap();
    assert_eq!((b.name, b.kind), (96, BlobKind::Name));
    assert_eq!(b.frame_complete_offset, field(20, 4, true));
    assert_eq!(b.code_begin, CodeAddr::Pointer(32));
    assert_eq!(b.code_end, CodeAddr::Pointer(40));
    let n = l.nmethod.unwrap();
    assert_eq!(n.method, 112);
    assert_eq!(n.comp_level, field(328, 4, true));
    assert_eq!(n.verified_entry, EntryAddr::Pointer(256));
    assert_eq!(
        n.debug,
        DebugInfo::InBlob {
            scopes_pcs_offset: field(300, 4, true),
            dependencies_offset: field(304, 4, true),
            scopes_data_begin: 120,
            metadata_offset: field(292, 4, true),
        }
    );
    let m = l.method.unwrap();
    assert_eq!(m.method.code, 64);
    assert_eq!(m.const_method.flags, field(36, 2, false));
    assert_eq!(m.const_method.has_linenumber_table, 1);
    assert_eq!(m.const_method.size, 56);
    assert_eq!(
        m.constant_pool.source_file_name_index,
        SourceFileIndex::InstanceKlass(field(298, 2, false))
    );
    assert_eq!(m.constant_pool.size, 64);
    assert_eq!(m.symbol.length, field(0, 2, false));
    assert_eq!((m.symbol.length_shift, m.symbol.body), (0, 6));
    assert_eq!(m.instance_klass.idnum_allocated_count, field(392, 2, false));
    assert_eq!(m.instance_klass.methods_jmethod_ids, 344);
    assert_eq!(m.class_loader_data.has_class_mirror_holder.offset, 33);
    assert_ne!(m.compressed_klass_base_addr, 0); // Universe::_narrow_klass._base
    let f = l.frame.unwrap();
    assert_eq!(f.entry_frame_call_wrapper_offset, -6);
    assert_eq!(f.invocation_entry_bci, -1);
}

#[test]
fn jdk17_resolves_every_group() {
    let l = fixture(JDK17);
    let t = l.threads.unwrap();
    assert_eq!(t.anchor, 656);
    assert_eq!(t.thread_state.offset, 824);
    assert_eq!((t.osthread, t.osthread_thread_id.offset), (560, 208));
    assert_eq!((t.anchor_sp, t.anchor_pc, t.anchor_fp), (0, 8, 16));
    assert_eq!(t.call_wrapper_anchor, 32);
    assert_eq!(
        (t.states.in_java, t.states.in_native, t.states.blocked),
        (8, 4, 10)
    );
    let c = l.code_cache.unwrap();
    assert_eq!((c.array_len.offset, c.array_data), (0, 8));
    assert_eq!(c.heap_log2_segment_size, field(256, 4, true));
    assert_eq!((c.vs_low, c.vs_high), (16, 24));
    assert_eq!(
        (c.stub_queue_buffer, c.stub_queue_buffer_limit.offset),
        (8, 20)
    );
    let b = l.code_blob.unwrap();
    assert_eq!((b.size.offset, b.frame_size.offset), (12, 28));
    let n = l.nmethod.unwrap();
    assert_eq!(n.method, 112);
    assert_eq!(n.comp_level, field(308, 4, true));
    let p = l.pc_desc.unwrap();
    assert_eq!(p.size, 16);
    assert_eq!(p.scope_decode_offset, field(4, 4, true));
    let m = l.method.unwrap();
    assert_eq!(m.const_method.flags, field(28, 2, false));
    assert_eq!(m.symbol.length, field(4, 2, false));
    assert_eq!(
        m.constant_pool.source_file_name_index,
        SourceFileIndex::ConstantPool(field(54, 2, false))
    );
    assert_eq!(m.instance_klass.methods, 408);
    assert_eq!(m.array.method_data, 8);
    assert_eq!(m.array.u2_data, 4);
}

#[test]
fn jdk21_resolves_every_group() {
    let l = fixture(JDK21);
    let t = l.threads.unwrap();
    assert_eq!((t.anchor, t.osthread), (920, 784));
    let c = l.code_cache.unwrap();
    assert_eq!((c.heap_memory, c.heap_segmap), (0, 112));
    let b = l.code_blob.unwrap();
    assert_eq!(b.name, 64);
    assert_eq!(b.code_begin, CodeAddr::Pointer(8));
    assert_eq!(b.frame_complete_offset, field(80, 4, true));
    let n = l.nmethod.unwrap();
    // CompLevel became a one-byte enum in 21.
    assert_eq!(n.comp_level, field(328, 1, true));
    assert_eq!(n.method, 112);
    let m = l.method.unwrap();
    assert_eq!(m.const_method.flags, field(28, 4, false));
    assert_eq!(m.const_method.has_linenumber_table, 1);
    assert_eq!(m.instance_klass.init_state, field(305, 1, true));
}

#[test]
fn jdk25_resolves_every_group() {
    let l = fixture(JDK25);
    let t = l.threads.unwrap();
    assert_eq!(t.anchor, 1152);
    assert_eq!(t.osthread, 1016); // Thread::_osthread
    assert_eq!(t.osthread_thread_id, field(12, 4, true));
    assert_eq!(t.cont_entry, Some(1560));
    let c = l.code_cache.unwrap();
    assert_eq!(c.heap_block_size, 8);
    assert_eq!(c.block_length, field(0, 4, false));
    assert_eq!(c.block_used, field(4, 1, true));
    assert!(c.continuation_return_pc_addr.is_some());
    let b = l.code_blob.unwrap();
    assert_eq!(b.name, 8);
    assert_eq!(b.size, field(24, 4, true));
    assert_eq!(b.frame_complete_offset, field(54, 2, true));
    assert_eq!(b.code_begin, CodeAddr::BlobOffset(field(36, 4, true)));
    assert_eq!(b.code_end, CodeAddr::BlobOffset(field(40, 4, true)));
    assert_eq!(
        b.kind,
        BlobKind::Field {
            kind: field(56, 1, true),
            nmethod: 1
        }
    );
    let n = l.nmethod.unwrap();
    assert_eq!(n.method, 80);
    assert_eq!(n.comp_level, field(216, 1, true));
    assert_eq!(
        n.verified_entry,
        EntryAddr::CodeOffset(field(154, 2, false))
    );
    assert_eq!(
        n.debug,
        DebugInfo::Split {
            immutable_data: 96,
            scopes_pcs_offset: field(196, 4, true),
            scopes_data_offset: field(200, 4, true),
            mutable_data: 16,
            relocation_size: field(28, 4, true),
            mutable_data_size: field(48, 4, true),
        }
    );
    let m = l.method.unwrap();
    assert_eq!(m.method.access_flags, field(44, 2, true));
    assert_eq!(m.klass.access_flags, field(14, 2, true));
    assert_eq!(m.const_method.size, 56);
    assert_eq!(m.instance_klass.methods_jmethod_ids, 336);
    let f = l.frame.unwrap();
    assert_eq!(
        (
            f.interpreter_frame_sender_sp_offset,
            f.interpreter_frame_last_sp_offset
        ),
        (-1, -2)
    );
}

#[test]
fn summary_has_one_line_per_group() {
    let s = fixture(JDK25).summary();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 7, "{s}");
    assert!(lines.iter().all(|l| l.contains(": present ")), "{s}");
    assert!(lines[0].starts_with("threads: present anchor=1152"), "{s}");
}

#[test]
fn jdk23_shape_disables_nmethod_instead_of_misreading() {
    // 23/24: immutable data exists but metadata is not yet in CodeBlob mutable data.
    let mut tables = VmTables::from_dump(JDK25);
    tables.fields.remove("CodeBlob::_mutable_data");
    let layout = VmLayout::resolve(&tables);
    assert!(layout.nmethod.is_none());
    assert!(layout.code_blob.is_some());
    assert_eq!(layout.missing(), ["nmethod: CodeBlob::_mutable_data"]);
}

#[test]
fn object_header_entries_are_optional_and_found_where_exported() {
    let h25 = fixture(JDK25).method.unwrap().header;
    assert_eq!(h25.compressed_klass, Some(8));
    assert_eq!(h25.mark_klass_shift, Some(42));
    assert_eq!(h25.monitor_header, Some(0)); // ObjectMonitor::_metadata
    let h11 = fixture(JDK11).method.unwrap().header;
    assert_eq!((h11.compressed_klass, h11.klass), (Some(8), Some(8)));
    assert_eq!(h11.mark_klass_shift, None);
    assert_eq!(h11.monitor_header, Some(0)); // ObjectMonitor::_header
                                             // Missing entries disable nothing.
    let layout = jdk17_with(
        &[
            "ObjectMonitor::_header",
            "oopDesc::_metadata._compressed_klass",
        ],
        &mut |_| {},
    );
    assert!(layout.complete(), "{:?}", layout.missing());
    let h = layout.method.unwrap().header;
    assert_eq!((h.compressed_klass, h.monitor_header), (None, None));
}
