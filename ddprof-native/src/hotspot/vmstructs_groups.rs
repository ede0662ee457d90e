//! Resolution: VMStructs names -> the typed groups of [`VmLayout`], each field declared
//! once as a row of a `vm_group!`, which yields both its lookup and its summary.

use std::fmt::Write as _;

use super::tables::{FieldEntry, VmTables};
use crate::sample::vm::layout::*;
use crate::sample::walk::arch;

/// Looks names up for one group and remembers the ones that were not found.
struct Lookup<'a> {
    tables: &'a VmTables,
    missing: Vec<String>,
}

impl<'a> Lookup<'a> {
    fn new(tables: &'a VmTables) -> Self {
        Lookup {
            tables,
            missing: Vec::new(),
        }
    }

    fn note_missing(&mut self, names: &[&str]) {
        self.missing.push(names.join(" | "));
    }

    /// The first non-static field among `names` (alternative spellings). Does not record
    /// a miss.
    fn find(&self, names: &[&str]) -> Option<&'a FieldEntry> {
        names
            .iter()
            .find_map(|n| self.tables.field(n).filter(|e| !e.is_static))
    }

    /// Offset of a non-static field (pointer or embedded struct); 0 and a recorded miss
    /// if none of the spellings exists.
    fn offset(&mut self, names: &[&str]) -> usize {
        match self.find(names) {
            Some(e) => e.offset,
            None => {
                self.note_missing(names);
                0
            }
        }
    }

    /// A non-static field that is not required.
    fn optional_offset(&mut self, names: &[&str]) -> Option<usize> {
        self.find(names).map(|e| e.offset)
    }

    /// A scalar field with the width of its declared type; `fallback` (size, signed) is
    /// used only when libjvm does not name the type or the type is unknown.
    fn scalar(&mut self, names: &[&str], fallback: (u8, bool)) -> Field {
        match self.find(names) {
            Some(e) => self.scalar_of(names, e, fallback),
            None => {
                self.note_missing(names);
                Field {
                    offset: 0,
                    size: fallback.0,
                    signed: fallback.1,
                }
            }
        }
    }

    fn scalar_of(&mut self, names: &[&str], e: &FieldEntry, fallback: (u8, bool)) -> Field {
        let (size, signed) = e
            .type_string
            .as_deref()
            .and_then(|t| self.tables.scalar_type(t))
            .unwrap_or(fallback);
        if !matches!(size, 1 | 2 | 4 | 8) {
            self.missing
                .push(format!("{} (unexpected width {size})", names.join(" | ")));
        }
        Field {
            offset: e.offset,
            size,
            signed,
        }
    }

    fn find_static(&self, names: &[&str]) -> Option<usize> {
        names.iter().find_map(|n| {
            self.tables
                .field(n)
                .filter(|e| e.is_static && e.address != 0)
                .map(|e| e.address)
        })
    }

    /// Address of a static variable; 0 and a recorded miss if absent.
    fn static_addr(&mut self, names: &[&str]) -> usize {
        self.find_static(names).unwrap_or_else(|| {
            self.note_missing(names);
            0
        })
    }

    fn optional_static_addr(&mut self, names: &[&str]) -> Option<usize> {
        self.find_static(names)
    }

    /// sizeof a type; 0 and a recorded miss if absent.
    fn type_size(&mut self, names: &[&str]) -> usize {
        match names.iter().find_map(|n| self.tables.type_info(n)) {
            Some(t) => t.size as usize,
            None => {
                let sizeofs: Vec<String> = names.iter().map(|n| format!("sizeof({n})")).collect();
                self.missing.push(sizeofs.join(" | "));
                0
            }
        }
    }

    /// An int or long constant; 0 and a recorded miss if absent.
    fn constant(&mut self, names: &[&str]) -> i64 {
        match names.iter().find_map(|n| self.tables.constant(n)) {
            Some(v) => v,
            None => {
                self.note_missing(names);
                0
            }
        }
    }

    /// An int or long constant; `default` (the architecture's value) if absent.
    fn constant_or(&mut self, names: &[&str], default: i64) -> i64 {
        names
            .iter()
            .find_map(|n| self.tables.constant(n))
            .unwrap_or(default)
    }

    fn constant_i32(&mut self, names: &[&str]) -> i32 {
        let v = self.constant(names);
        i32::try_from(v).unwrap_or_else(|_| {
            self.missing
                .push(format!("{} (out of range: {v})", names.join(" | ")));
            0
        })
    }
}

const INT: (u8, bool) = (4, true);
const U2: (u8, bool) = (2, false);
const U1: (u8, bool) = (1, false);

/// How a group reads in [`VmLayout::summary`]: `field=value` for each of its fields.
trait Summary {
    fn summary(&self) -> String;
}

/// Declares how one layout struct is resolved, one row per field:
/// `field: kind "Type::_spelling" | "Alt::_spelling",` where `kind` names the [`Lookup`]
/// method that reads it (`scalar(fallback)` passes the fallback width), or
/// `field: nested(build),` / `field: shape(build),` for a sub-struct or an enum that a
/// hand-written `build` resolves. Expands to `fn $build(&mut Lookup) -> $Struct`, resolving
/// the rows in order (the order misses are reported in), and to the struct's [`Summary`].
macro_rules! vm_group {
    ($build:ident -> $Struct:ident {
        $($field:ident: $kind:ident $(($arg:expr))? $($name:literal)|*,)*
    }) => {
        fn $build(l: &mut Lookup) -> $Struct {
            $Struct {
                $($field: vm_lookup!(l, $kind $(($arg))?, [$($name),*]),)*
            }
        }

        impl Summary for $Struct {
            fn summary(&self) -> String {
                [$(format!(
                    concat!(stringify!($field), "={}"),
                    vm_show!($kind, &self.$field)
                )),*]
                .join(" ")
            }
        }
    };
}

/// A row's lookup: builder kinds call their function; every other kind is the `Lookup`
/// method of that name, so a new kind needs no macro arm.
macro_rules! vm_lookup {
    ($l:ident, nested($build:expr), []) => {
        $build($l)
    };
    ($l:ident, shape($build:expr), []) => {
        $build($l)
    };
    ($l:ident, $kind:ident $(($arg:expr))?, [$($name:literal),*]) => {
        $l.$kind(&[$($name),*] $(, $arg)?)
    };
}

/// A row's summary value: statics as hex addresses (they differ per run, offsets do not),
/// scalars with their width, sub-structs in parentheses, the rest as Debug.
macro_rules! vm_show {
    (scalar, $v:expr) => {
        $v
    };
    (static_addr, $v:expr) => {
        format_args!("@{:#x}", $v)
    };
    (optional_static_addr, $v:expr) => {
        match $v {
            Some(a) => format!("@{a:#x}"),
            None => "None".to_string(),
        }
    };
    (nested, $v:expr) => {
        format_args!("({})", $v.summary())
    };
    ($kind:ident, $v:expr) => {
        format_args!("{:?}", $v)
    };
}

vm_group!(threads_group -> ThreadsGroup {
    anchor: offset "JavaThread::_anchor",
    thread_state: scalar(INT) "JavaThread::_thread_state",
    vframe_array_head: offset "JavaThread::_vframe_array_head",
    osthread: offset "JavaThread::_osthread" | "Thread::_osthread",
    osthread_thread_id: scalar(INT) "OSThread::_thread_id",
    osthread_state: optional_offset "OSThread::_state",
    stack_base: offset "JavaThread::_stack_base" | "Thread::_stack_base",
    stack_size: offset "JavaThread::_stack_size" | "Thread::_stack_size",
    anchor_sp: offset "JavaFrameAnchor::_last_Java_sp",
    anchor_pc: offset "JavaFrameAnchor::_last_Java_pc",
    anchor_fp: offset "JavaFrameAnchor::_last_Java_fp",
    call_wrapper_anchor: offset "JavaCallWrapper::_anchor",
    cont_entry: optional_offset "JavaThread::_cont_entry",
    states: nested(thread_states),
});

vm_group!(thread_states -> ThreadStates {
    uninitialized: constant_i32 "_thread_uninitialized",
    new: constant_i32 "_thread_new",
    new_trans: constant_i32 "_thread_new_trans",
    in_native: constant_i32 "_thread_in_native",
    in_native_trans: constant_i32 "_thread_in_native_trans",
    in_vm: constant_i32 "_thread_in_vm",
    in_vm_trans: constant_i32 "_thread_in_vm_trans",
    in_java: constant_i32 "_thread_in_Java",
    in_java_trans: constant_i32 "_thread_in_Java_trans",
    blocked: constant_i32 "_thread_blocked",
    blocked_trans: constant_i32 "_thread_blocked_trans",
});

vm_group!(code_cache_group -> CodeCacheGroup {
    heaps_addr: static_addr "CodeCache::_heaps",
    low_bound_addr: static_addr "CodeCache::_low_bound",
    high_bound_addr: static_addr "CodeCache::_high_bound",
    array_len: scalar(INT) "GrowableArrayBase::_len" | "GenericGrowableArray::_len",
    array_data: offset "GrowableArray<int>::_data",
    heap_memory: offset "CodeHeap::_memory",
    heap_segmap: offset "CodeHeap::_segmap",
    heap_log2_segment_size: scalar(INT) "CodeHeap::_log2_segment_size",
    vs_low: offset "VirtualSpace::_low",
    vs_high: offset "VirtualSpace::_high",
    heap_block_size: type_size "HeapBlock",
    block_length: scalar((8, false)) "HeapBlock::Header::_length",
    block_used: scalar(U1) "HeapBlock::Header::_used",
    call_stub_return_address_addr: static_addr "StubRoutines::_call_stub_return_address",
    interpreter_code_addr: static_addr "AbstractInterpreter::_code",
    stub_queue_buffer: offset "StubQueue::_stub_buffer",
    stub_queue_buffer_limit: scalar(INT) "StubQueue::_buffer_limit",
    continuation_return_pc_addr: optional_static_addr "ContinuationEntry::_return_pc",
});

// The shapes resolve before the plain fields, as they always have: misses are reported in
// resolution order.
vm_group!(code_blob_group -> CodeBlobGroup {
    code_begin: shape(code_begin),
    code_end: shape(code_end),
    kind: shape(blob_kind),
    name: offset "CodeBlob::_name",
    size: scalar(INT) "CodeBlob::_size",
    frame_size: scalar(INT) "CodeBlob::_frame_size",
    frame_complete_offset: scalar(INT) "CodeBlob::_frame_complete_offset",
});

fn code_begin(l: &mut Lookup) -> CodeAddr {
    match l.find(&["CodeBlob::_code_begin"]) {
        Some(e) => CodeAddr::Pointer(e.offset),
        None => CodeAddr::BlobOffset(
            l.scalar(&["CodeBlob::_code_begin", "CodeBlob::_code_offset"], INT),
        ),
    }
}

fn code_end(l: &mut Lookup) -> CodeAddr {
    match l.find(&["CodeBlob::_code_end"]) {
        Some(e) => CodeAddr::Pointer(e.offset),
        None => {
            CodeAddr::BlobOffset(l.scalar(&["CodeBlob::_code_end", "CodeBlob::_data_offset"], INT))
        }
    }
}

fn blob_kind(l: &mut Lookup) -> BlobKind {
    match l.find(&["CodeBlob::_kind"]) {
        Some(e) => BlobKind::Field {
            kind: l.scalar_of(&["CodeBlob::_kind"], e, U1),
            nmethod: l.constant(&["CodeBlobKind::Nmethod"]),
        },
        None => BlobKind::Name,
    }
}

vm_group!(nmethod_group -> NMethodGroup {
    verified_entry: shape(verified_entry),
    method: offset "nmethod::_method" | "CompiledMethod::_method",
    comp_level: scalar(INT) "nmethod::_comp_level",
    compile_id: scalar(INT) "nmethod::_compile_id",
    debug: shape(debug_info),
});

fn verified_entry(l: &mut Lookup) -> EntryAddr {
    match l.find(&["nmethod::_verified_entry_point"]) {
        Some(e) => EntryAddr::Pointer(e.offset),
        None => EntryAddr::CodeOffset(l.scalar(
            &[
                "nmethod::_verified_entry_point",
                "nmethod::_verified_entry_offset",
            ],
            U2,
        )),
    }
}

/// The debug-info shape is chosen as a whole: `nmethod::_immutable_data` means the split
/// shape and then all of its pieces are required. JDK 23/24 have immutable data but no
/// `CodeBlob::_mutable_data` (metadata sat elsewhere); they fail the split shape and
/// disable the group rather than being read with the wrong rule.
fn debug_info(l: &mut Lookup) -> DebugInfo {
    if l.find(&["nmethod::_immutable_data"]).is_some() {
        DebugInfo::Split {
            immutable_data: l.offset(&["nmethod::_immutable_data"]),
            scopes_pcs_offset: l.scalar(&["nmethod::_scopes_pcs_offset"], INT),
            scopes_data_offset: l.scalar(&["nmethod::_scopes_data_offset"], INT),
            mutable_data: l.offset(&["CodeBlob::_mutable_data"]),
            relocation_size: l.scalar(&["CodeBlob::_relocation_size"], INT),
            mutable_data_size: l.scalar(&["CodeBlob::_mutable_data_size"], INT),
        }
    } else {
        DebugInfo::InBlob {
            scopes_pcs_offset: l.scalar(&["nmethod::_scopes_pcs_offset"], INT),
            dependencies_offset: l.scalar(&["nmethod::_dependencies_offset"], INT),
            scopes_data_begin: l.offset(&[
                "CompiledMethod::_scopes_data_begin",
                "nmethod::_scopes_data_begin",
            ]),
            metadata_offset: l.scalar(&["nmethod::_metadata_offset"], INT),
        }
    }
}

vm_group!(pc_desc_group -> PcDescGroup {
    size: type_size "PcDesc",
    pc_offset: scalar(INT) "PcDesc::_pc_offset",
    scope_decode_offset: scalar(INT) "PcDesc::_scope_decode_offset",
    obj_decode_offset: scalar(INT) "PcDesc::_obj_decode_offset",
    flags: scalar(INT) "PcDesc::_flags",
});

vm_group!(method_group -> MethodGroup {
    method: nested(method_fields),
    const_method: nested(const_method_fields),
    constant_pool: nested(constant_pool_fields),
    symbol: nested(symbol_fields),
    klass: nested(klass_fields),
    instance_klass: nested(instance_klass_fields),
    array: nested(array_fields),
    class_loader_data: nested(class_loader_data_fields),
    java_lang_class_klass_offset_addr: static_addr "java_lang_Class::_klass_offset",
    compressed_klass_base_addr: static_addr "CompressedKlassPointers::_base"
        | "CompressedKlassPointers::_narrow_klass._base"
        | "Universe::_narrow_klass._base",
    compressed_klass_shift_addr: static_addr "CompressedKlassPointers::_shift"
        | "CompressedKlassPointers::_narrow_klass._shift"
        | "Universe::_narrow_klass._shift",
    header: shape(object_header),
});

/// Hand-written: every entry is optional (the receiver classes of vtable stubs need them,
/// nothing else does), so none records a miss.
fn object_header(l: &mut Lookup) -> ObjectHeaderFields {
    ObjectHeaderFields {
        compressed_klass: l.optional_offset(&["oopDesc::_metadata._compressed_klass"]),
        klass: l.optional_offset(&["oopDesc::_metadata._klass"]),
        mark_klass_shift: l
            .tables
            .constant("markWord::klass_shift")
            .and_then(|v| u32::try_from(v).ok())
            .filter(|&v| v < 64),
        monitor_header: l.optional_offset(&["ObjectMonitor::_metadata", "ObjectMonitor::_header"]),
    }
}

vm_group!(method_fields -> MethodFields {
    size: type_size "Method",
    const_method: offset "Method::_constMethod",
    access_flags: scalar(INT) "Method::_access_flags",
    code: offset "Method::_code",
});

vm_group!(const_method_fields -> ConstMethodFields {
    size: type_size "ConstMethod",
    constants: offset "ConstMethod::_constants",
    flags: scalar(U2) "ConstMethod::_flags._flags" | "ConstMethod::_flags",
    has_linenumber_table: constant "ConstMethodFlags::_misc_has_linenumber_table"
        | "ConstMethod::_has_linenumber_table",
    code_size: scalar(U2) "ConstMethod::_code_size",
    name_index: scalar(U2) "ConstMethod::_name_index",
    signature_index: scalar(U2) "ConstMethod::_signature_index",
    method_idnum: scalar(U2) "ConstMethod::_method_idnum",
});

vm_group!(constant_pool_fields -> ConstantPoolFields {
    source_file_name_index: shape(source_file_index),
    size: type_size "ConstantPool",
    pool_holder: offset "ConstantPool::_pool_holder",
    length: scalar(INT) "ConstantPool::_length",
});

fn source_file_index(l: &mut Lookup) -> SourceFileIndex {
    match l.find(&["ConstantPool::_source_file_name_index"]) {
        Some(e) => SourceFileIndex::ConstantPool(l.scalar_of(
            &["ConstantPool::_source_file_name_index"],
            e,
            U2,
        )),
        None => SourceFileIndex::InstanceKlass(l.scalar(
            &[
                "ConstantPool::_source_file_name_index",
                "InstanceKlass::_source_file_name_index",
            ],
            U2,
        )),
    }
}

/// Hand-written: the length's spelling also decides `length_shift`.
fn symbol_fields(l: &mut Lookup) -> SymbolFields {
    let (length, length_shift) = match l.find(&["Symbol::_length"]) {
        Some(e) => (l.scalar_of(&["Symbol::_length"], e, U2), 0),
        None => {
            let names = ["Symbol::_length", "Symbol::_length_and_refcount"];
            (l.scalar(&names, (4, false)), 16)
        }
    };
    SymbolFields {
        length,
        length_shift,
        body: l.offset(&["Symbol::_body"]),
    }
}

impl Summary for SymbolFields {
    fn summary(&self) -> String {
        format!(
            "length={} length_shift={} body={}",
            self.length, self.length_shift, self.body
        )
    }
}

vm_group!(klass_fields -> KlassFields {
    size: type_size "Klass",
    layout_helper: scalar(INT) "Klass::_layout_helper",
    name: offset "Klass::_name",
    java_mirror: offset "Klass::_java_mirror",
    super_klass: offset "Klass::_super",
    class_loader_data: offset "Klass::_class_loader_data",
    access_flags: scalar(INT) "Klass::_access_flags",
});

vm_group!(instance_klass_fields -> InstanceKlassFields {
    size: type_size "InstanceKlass",
    constants: offset "InstanceKlass::_constants",
    methods: offset "InstanceKlass::_methods",
    default_methods: offset "InstanceKlass::_default_methods",
    methods_jmethod_ids: offset "InstanceKlass::_methods_jmethod_ids",
    idnum_allocated_count: scalar(U2) "InstanceKlass::_idnum_allocated_count",
    init_state: scalar(U1) "InstanceKlass::_init_state",
});

vm_group!(array_fields -> ArrayFields {
    length: scalar(INT) "Array<int>::_length",
    method_data: offset "Array<Method*>::_data",
    u2_data: offset "Array<u2>::_data",
});

vm_group!(class_loader_data_fields -> ClassLoaderDataFields {
    class_loader: offset "ClassLoaderData::_class_loader",
    klasses: offset "ClassLoaderData::_klasses",
    next: offset "ClassLoaderData::_next",
    has_class_mirror_holder: scalar(U1) "ClassLoaderData::_has_class_mirror_holder"
        | "ClassLoaderData::_is_anonymous",
});

// Frame constants aarch64's VMStructs do not export (docs/hotspot.md 4.7): the architecture
// file's values then.
vm_group!(frame_group -> FrameGroup {
    entry_frame_call_wrapper_offset: constant_or(arch::ENTRY_FRAME_CALL_WRAPPER_WORDS)
        "frame::entry_frame_call_wrapper_offset",
    interpreter_frame_sender_sp_offset: constant_or(arch::INTERP_SENDER_SP_WORDS)
        "frame::interpreter_frame_sender_sp_offset",
    interpreter_frame_last_sp_offset: constant_or(arch::INTERP_LAST_SP_WORDS)
        "frame::interpreter_frame_last_sp_offset",
    invocation_entry_bci: constant "InvocationEntryBci",
});

/// Builds one group; on any miss logs one line, records "group: entry" and yields None.
fn resolve_group<T>(
    tables: &VmTables,
    group: &str,
    build: fn(&mut Lookup) -> T,
    missing: &mut Vec<String>,
) -> Option<T> {
    let mut lookup = Lookup::new(tables);
    let value = build(&mut lookup);
    if lookup.missing.is_empty() {
        return Some(value);
    }
    crate::log::warn(&format!(
        "VMStructs: '{group}' disabled, missing {}",
        lookup.missing.join(", ")
    ));
    missing.extend(lookup.missing.iter().map(|m| format!("{group}: {m}")));
    None
}

/// The groups of [`VmLayout`], each named by its field: `resolve` builds them in this
/// order and `summary` prints one line each.
macro_rules! vm_layout {
    ($($group:ident: $build:ident,)*) => {
        impl VmLayout {
            /// Resolves every group from the lookup maps. Logs one line per disabled group.
            pub fn resolve(tables: &VmTables) -> VmLayout {
                let mut missing = Vec::new();
                VmLayout {
                    $($group: resolve_group(tables, stringify!($group), $build, &mut missing),)*
                    missing,
                }
            }

            /// One line per group: present with its fields, or absent with what is missing.
            pub fn summary(&self) -> String {
                let mut out = String::new();
                $(self.line(
                    &mut out,
                    stringify!($group),
                    self.$group.as_ref().map(Summary::summary),
                );)*
                out
            }
        }
    };
}

vm_layout! {
    threads: threads_group,
    code_cache: code_cache_group,
    code_blob: code_blob_group,
    nmethod: nmethod_group,
    pc_desc: pc_desc_group,
    method: method_group,
    frame: frame_group,
}

impl VmLayout {
    fn line(&self, out: &mut String, group: &str, details: Option<String>) {
        match details {
            Some(d) => {
                let _ = writeln!(out, "{group}: present {d}");
            }
            None => {
                let prefix = format!("{group}: ");
                let names: Vec<&str> = self
                    .missing
                    .iter()
                    .filter_map(|m| m.strip_prefix(&prefix))
                    .collect();
                let _ = writeln!(out, "{group}: absent (missing {})", names.join(", "));
            }
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.signed { 'i' } else { 'u' };
        write!(f, "{}:{}{}", self.offset, sign, u32::from(self.size) * 8)
    }
}
