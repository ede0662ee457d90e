//! HotSpot's VMStructs tables, read once at load into a typed, immutable [`VmLayout`].
//!
//! libjvm exports four tables for its serviceability agent (`gHotSpotVMStructs`,
//! `gHotSpotVMTypes`, `gHotSpotVMIntConstants`, `gHotSpotVMLongConstants`), each an array
//! of entries whose stride and field offsets are exported as well (facts.md 1.1, 1.2).
//! They name every field offset, static address, type size and constant a stack walker
//! and a method resolver need.
//!
//! Rules this module keeps:
//! - Everything is looked up BY NAME, never by JDK version. Where HotSpot renamed or
//!   reshaped something, each known spelling is accepted (facts.md 1.3, 1.5): the first
//!   spelling found wins, and the shape found (pointer vs offset, in-blob vs immutable
//!   debug data) is recorded as an enum variant.
//! - Integer widths that changed across JDKs (`int` -> `int16_t`, `size_t` -> `uint32_t`,
//!   `u2` -> `u4`) come from the field's C++ type string, sized through the type table,
//!   so every scalar the walker reads is a [`Field`] carrying its width and signedness.
//! - Entries are grouped by the feature that needs them. A missing entry disables only
//!   its group, with one log line naming what is missing; [`missing`] lists them all.
//!
//! Reading the tables allocates and happens once, in [`init`] at library load. The signal
//! path only calls [`layout`] (an atomic load) and reads the plain integers inside.
//! The VM memory those integers point into is read by `codecache` and the walker, through
//! crash-protected loads.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt::Write as _;
use std::sync::OnceLock;

use crate::sample::vm::layout::{self, *};

// ---------------------------------------------------------------------------------------
// Raw tables: where the four arrays live and how their entries are laid out.
// ---------------------------------------------------------------------------------------

/// Layout of `gHotSpotVMStructs` entries: byte offsets inside one entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StructTable {
    /// Address of the first entry (0: no table).
    pub base: usize,
    pub stride: usize,
    /// `const char*` type name ("JavaThread").
    pub type_name: usize,
    /// `const char*` field name ("_anchor").
    pub field_name: usize,
    /// `const char*` C++ type of the field ("int16_t"); None if libjvm does not say.
    pub type_string: Option<usize>,
    /// `int32_t`, 1 for static fields.
    pub is_static: usize,
    /// `uint64_t` byte offset of a non-static field.
    pub offset: usize,
    /// `void*` address of a static field.
    pub address: usize,
}

/// Layout of `gHotSpotVMTypes` entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TypeTable {
    pub base: usize,
    pub stride: usize,
    /// `const char*`.
    pub type_name: usize,
    /// `int32_t`, 1 when an integer type is unsigned.
    pub is_unsigned: usize,
    /// `uint64_t` sizeof.
    pub size: usize,
}

/// Layout of `gHotSpotVMIntConstants` (value `int32_t`) or `gHotSpotVMLongConstants`
/// (value `int64_t`) entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConstantTable {
    pub base: usize,
    pub stride: usize,
    /// `const char*`.
    pub name: usize,
    pub value: usize,
}

/// The values of the `gHotSpotVM*` symbols: table addresses, strides and offsets.
/// Plain numbers, so tests can describe tables they built in memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawTables {
    pub structs: StructTable,
    pub types: TypeTable,
    pub int_constants: ConstantTable,
    pub long_constants: ConstantTable,
}

/// Stop reading a table after this many entries: a wrong stride must not spin forever.
const MAX_ENTRIES: usize = 1 << 16;

impl RawTables {
    /// Reads every entry into name-keyed maps.
    ///
    /// A table with base 0, or whose stride cannot hold its own fields, is skipped (its
    /// entries will show up as missing).
    ///
    /// # Safety
    /// Each table with a non-zero base must be an array of `stride`-byte entries laid out
    /// as described, terminated by an entry whose name pointer (for structs: type or field
    /// name) is null; every non-null name is a NUL-terminated string.
    pub unsafe fn read(&self) -> VmTables {
        let mut tables = VmTables::default();
        // SAFETY: forwarded from this function's contract.
        unsafe {
            self.read_structs(&mut tables);
            self.read_types(&mut tables);
            read_constants(&self.int_constants, 4, &mut tables);
            read_constants(&self.long_constants, 8, &mut tables);
        }
        tables
    }

    /// # Safety
    /// See [`RawTables::read`].
    unsafe fn read_structs(&self, tables: &mut VmTables) {
        let t = &self.structs;
        let widest = [t.type_name, t.field_name, t.offset, t.address, t.is_static]
            .into_iter()
            .chain(t.type_string)
            .max()
            .unwrap_or(0);
        if t.base == 0 || t.stride < widest.saturating_add(8) {
            return;
        }
        for i in 0..MAX_ENTRIES {
            let e = t.base.wrapping_add(i.wrapping_mul(t.stride));
            // SAFETY: `e` is entry i of a null-terminated table (caller's contract); we
            // stop at the terminator, so every entry read exists.
            unsafe {
                let (Some(ty), Some(field)) =
                    (c_string_at(e + t.type_name), c_string_at(e + t.field_name))
                else {
                    return;
                };
                let is_static = read_at::<i32>(e + t.is_static) != 0;
                let entry = FieldEntry {
                    offset: read_at::<u64>(e + t.offset) as usize,
                    address: read_at::<usize>(e + t.address),
                    is_static,
                    type_string: t.type_string.and_then(|o| c_string_at(e + o)),
                };
                tables.insert_field(format!("{ty}::{field}"), entry);
            }
        }
    }

    /// # Safety
    /// See [`RawTables::read`].
    unsafe fn read_types(&self, tables: &mut VmTables) {
        let t = &self.types;
        let widest = t.type_name.max(t.size).max(t.is_unsigned);
        if t.base == 0 || t.stride < widest.saturating_add(8) {
            return;
        }
        for i in 0..MAX_ENTRIES {
            let e = t.base.wrapping_add(i.wrapping_mul(t.stride));
            // SAFETY: as in `read_structs`.
            unsafe {
                let Some(name) = c_string_at(e + t.type_name) else {
                    return;
                };
                let info = TypeInfo {
                    size: read_at::<u64>(e + t.size),
                    is_unsigned: read_at::<i32>(e + t.is_unsigned) != 0,
                };
                tables.types.entry(name).or_insert(info);
            }
        }
    }
}

/// Reads a constant table whose values are `value_size` (4 or 8) bytes wide.
///
/// # Safety
/// See [`RawTables::read`].
unsafe fn read_constants(t: &ConstantTable, value_size: usize, tables: &mut VmTables) {
    if t.base == 0 || t.stride < t.name.max(t.value).saturating_add(value_size.max(8)) {
        return;
    }
    for i in 0..MAX_ENTRIES {
        let e = t.base.wrapping_add(i.wrapping_mul(t.stride));
        // SAFETY: as in `read_structs`.
        unsafe {
            let Some(name) = c_string_at(e + t.name) else {
                return;
            };
            let value = if value_size == 4 {
                i64::from(read_at::<i32>(e + t.value))
            } else {
                read_at::<i64>(e + t.value)
            };
            tables.constants.entry(name).or_insert(value);
        }
    }
}

/// # Safety
/// `addr` is readable for `size_of::<T>()` bytes.
unsafe fn read_at<T: Copy>(addr: usize) -> T {
    // SAFETY: caller's contract; entries need not be aligned for T.
    unsafe { (addr as *const T).read_unaligned() }
}

/// The string a `const char*` at `addr` points to; None for a null pointer.
///
/// # Safety
/// `addr` is readable for a pointer; a non-null pointer there is a C string.
unsafe fn c_string_at(addr: usize) -> Option<String> {
    // SAFETY: caller's contract.
    unsafe {
        let p = read_at::<*const c_char>(addr);
        (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

// ---------------------------------------------------------------------------------------
// Lookup maps, from memory or from a text dump.
// ---------------------------------------------------------------------------------------

/// One `gHotSpotVMStructs` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldEntry {
    /// Byte offset (non-static fields).
    pub offset: usize,
    /// Address of the variable (static fields).
    pub address: usize,
    pub is_static: bool,
    /// The field's C++ type, e.g. "int16_t" or "volatile signed char".
    pub type_string: Option<String>,
}

/// One `gHotSpotVMTypes` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeInfo {
    pub size: u64,
    pub is_unsigned: bool,
}

/// Every entry of the four tables, by name. Fields are keyed "Type::field" exactly as
/// HotSpot spells both parts ("HeapBlock::Header::_used", "ConstMethod::_flags._flags").
#[derive(Clone, Debug, Default)]
pub struct VmTables {
    fields: HashMap<String, FieldEntry>,
    types: HashMap<String, TypeInfo>,
    /// Int and long constants together (their names do not overlap).
    constants: HashMap<String, i64>,
}

impl VmTables {
    pub fn field(&self, name: &str) -> Option<&FieldEntry> {
        self.fields.get(name)
    }

    pub fn type_info(&self, name: &str) -> Option<TypeInfo> {
        self.types.get(name).copied()
    }

    pub fn constant(&self, name: &str) -> Option<i64> {
        self.constants.get(name).copied()
    }

    /// (fields, types, constants) counts, for the log.
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.fields.len(), self.types.len(), self.constants.len())
    }

    /// Keeps the first entry of a name (HotSpot lists a few twice, e.g. in subclasses).
    fn insert_field(&mut self, key: String, entry: FieldEntry) {
        self.fields.entry(key).or_insert(entry);
    }

    /// Parses the text dumps beside facts.md (`vmstructs-jdkNN.txt`, written by
    /// prototype/dump.c). Lines:
    /// `S Type::field off=N type=T`, `S Type::field static type=T`,
    /// `T name super=S size=N oop=0 int=1 uns=1`, `I name = V`, `L name = V (0x..)`;
    /// `#` lines describe the strides and are skipped. Dumps carry no addresses, so each
    /// static gets a distinct fake non-zero address. Unparseable lines are ignored.
    pub fn from_dump(text: &str) -> VmTables {
        let mut tables = VmTables::default();
        for (line_no, line) in text.lines().enumerate() {
            if let Some(rest) = line.strip_prefix("S ") {
                tables.parse_struct_line(rest, line_no);
            } else if let Some(rest) = line.strip_prefix("T ") {
                tables.parse_type_line(rest);
            } else if let Some(rest) = line.strip_prefix("I ").or(line.strip_prefix("L ")) {
                tables.parse_constant_line(rest);
            }
        }
        tables
    }

    fn parse_struct_line(&mut self, rest: &str, line_no: usize) {
        let Some((name, tail)) = rest.split_once(' ') else {
            return;
        };
        let (placement, type_string) = match tail.split_once(" type=") {
            Some((p, t)) => (p, (t != "?").then(|| t.to_string())),
            None => (tail, None),
        };
        let (is_static, offset) = if placement == "static" {
            (true, 0)
        } else if let Some(n) = placement.strip_prefix("off=").and_then(|n| n.parse().ok()) {
            (false, n)
        } else {
            return;
        };
        let address = if is_static { 0x1000 + line_no * 8 } else { 0 };
        let entry = FieldEntry {
            offset,
            address,
            is_static,
            type_string,
        };
        self.insert_field(name.to_string(), entry);
    }

    fn parse_type_line(&mut self, rest: &str) {
        // Type names may contain spaces ("unsigned short"): the name ends at " super=".
        let Some((name, tail)) = rest.split_once(" super=") else {
            return;
        };
        let attr = |key: &str| {
            tail.split(' ')
                .find_map(|kv| kv.strip_prefix(key))
                .and_then(|v| v.parse::<u64>().ok())
        };
        if let Some(size) = attr("size=") {
            let is_unsigned = attr("uns=") == Some(1);
            let info = TypeInfo { size, is_unsigned };
            self.types.entry(name.to_string()).or_insert(info);
        }
    }

    fn parse_constant_line(&mut self, rest: &str) {
        let Some((name, tail)) = rest.split_once(" = ") else {
            return;
        };
        let value = tail.split(' ').next().and_then(|v| v.parse::<i64>().ok());
        if let Some(v) = value {
            self.constants.entry(name.to_string()).or_insert(v);
        }
    }

    /// Width and signedness of a scalar field's C++ type: pointers are words, named types
    /// come from the type table, then from the LP64 sizes of C's primitive spellings
    /// (some field types, e.g. "signed char", are not in the type table).
    fn scalar_type(&self, type_string: &str) -> Option<(u8, bool)> {
        let t = strip_qualifiers(type_string);
        if t.ends_with('*') {
            return Some((std::mem::size_of::<usize>() as u8, false));
        }
        if let Some(info) = self.types.get(t) {
            return u8::try_from(info.size)
                .ok()
                .map(|size| (size, !info.is_unsigned));
        }
        primitive_type(t)
    }
}

fn strip_qualifiers(t: &str) -> &str {
    let mut t = t.trim();
    loop {
        let before = t;
        for q in ["volatile ", "const "] {
            t = t.strip_prefix(q).unwrap_or(t);
        }
        for q in [" volatile", " const"] {
            t = t.strip_suffix(q).unwrap_or(t);
        }
        if t == before {
            return t;
        }
    }
}

/// (size, signed) of C primitive and HotSpot fixed-width spellings on LP64 Linux.
fn primitive_type(t: &str) -> Option<(u8, bool)> {
    Some(match t {
        "char" | "signed char" | "jbyte" | "s1" | "int8_t" => (1, true),
        "bool" | "unsigned char" | "u1" | "jboolean" | "uint8_t" => (1, false),
        "short" | "jshort" | "s2" | "int16_t" => (2, true),
        "unsigned short" | "u2" | "jchar" | "uint16_t" => (2, false),
        "int" | "jint" | "s4" | "int32_t" => (4, true),
        "unsigned int" | "unsigned" | "uint" | "u4" | "juint" | "uint32_t" => (4, false),
        "long" | "jlong" | "intptr_t" | "intx" | "int64_t" | "ssize_t" => (8, true),
        "unsigned long" | "size_t" | "uintptr_t" | "uintx" | "u8" | "uint64_t" | "julong"
        | "address" => (8, false),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------
// Resolution: names -> groups.
// ---------------------------------------------------------------------------------------

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
});

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

vm_group!(frame_group -> FrameGroup {
    entry_frame_call_wrapper_offset: constant "frame::entry_frame_call_wrapper_offset",
    interpreter_frame_sender_sp_offset: constant "frame::interpreter_frame_sender_sp_offset",
    interpreter_frame_last_sp_offset: constant "frame::interpreter_frame_last_sp_offset",
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

// ---------------------------------------------------------------------------------------
// Loading from the running JVM.
// ---------------------------------------------------------------------------------------

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.signed { 'i' } else { 'u' };
        write!(f, "{}:{}{}", self.offset, sign, u32::from(self.size) * 8)
    }
}

static MISSING: OnceLock<Vec<String>> = OnceLock::new();

/// Reads libjvm's tables and resolves the layout. Call once at library load (later calls
/// do nothing). Not signal-safe: allocates and logs.
pub fn init() {
    MISSING.get_or_init(|| {
        let (layout, missing) = match load_tables() {
            Ok(tables) => {
                if !super::flags::enable_if_default(&tables, "DebugNonSafepoints") {
                    crate::log::info("DebugNonSafepoints could not be enabled: compiled frames are located at safepoints only");
                }
                let layout = VmLayout::resolve(&tables);
                let missing = layout.missing.clone();
                (Some(layout), missing)
            }
            Err(reason) => {
                crate::log::warn(&format!("VMStructs unavailable: {reason}"));
                (None, vec![reason])
            }
        };
        if let Some(layout) = layout {
            layout::publish(layout);
        }
        missing
    });
}

/// The layout, once [`init`] found libjvm's tables. Signal-safe (an atomic load).
pub fn layout() -> Option<&'static VmLayout> {
    layout::get()
}

/// Every entry that disabled a group ("group: entry"), or why no tables were found.
/// Empty before [`init`].
pub fn missing() -> &'static [String] {
    MISSING.get().map(Vec::as_slice).unwrap_or(&[])
}

fn load_tables() -> Result<VmTables, String> {
    let jvm = Libjvm::open();
    let raw = jvm.raw_tables()?;
    // SAFETY: the addresses and layouts come from libjvm's own gHotSpotVM* symbols,
    // which describe static, null-terminated arrays that live as long as libjvm.
    let tables = unsafe { raw.read() };
    let (fields, types, constants) = tables.counts();
    crate::log::info(&format!(
        "VMStructs: {fields} fields, {types} types, {constants} constants"
    ));
    Ok(tables)
}

/// A handle on the already loaded libjvm (or the global scope as a last resort).
struct Libjvm {
    handle: *mut c_void,
    /// Whether `handle` came from dlopen and must be closed.
    opened: bool,
}

impl Libjvm {
    fn open() -> Libjvm {
        let by_name = noload(c"libjvm.so");
        let handle = if by_name.is_null() {
            loaded_libjvm_path().map_or(std::ptr::null_mut(), |p| noload(&p))
        } else {
            by_name
        };
        if handle.is_null() {
            // The java launcher loads libjvm RTLD_GLOBAL, so its symbols are in scope.
            Libjvm {
                handle: libc::RTLD_DEFAULT,
                opened: false,
            }
        } else {
            Libjvm {
                handle,
                opened: true,
            }
        }
    }

    /// The value of a `uint64_t`/pointer variable exported by libjvm.
    fn value(&self, name: &CStr) -> Option<usize> {
        // SAFETY: dlsym on a valid handle; a found gHotSpotVM* symbol is a (u)int64 or
        // pointer variable initialised when libjvm was loaded.
        unsafe {
            let p = libc::dlsym(self.handle, name.as_ptr());
            (!p.is_null()).then(|| (p as *const usize).read())
        }
    }

    fn need(&self, name: &CStr) -> Result<usize, String> {
        self.value(name)
            .ok_or_else(|| format!("libjvm symbol {} not found", name.to_string_lossy()))
    }

    fn raw_tables(&self) -> Result<RawTables, String> {
        let structs = StructTable {
            base: self.need(c"gHotSpotVMStructs")?,
            stride: self.need(c"gHotSpotVMStructEntryArrayStride")?,
            type_name: self.need(c"gHotSpotVMStructEntryTypeNameOffset")?,
            field_name: self.need(c"gHotSpotVMStructEntryFieldNameOffset")?,
            type_string: self.value(c"gHotSpotVMStructEntryTypeStringOffset"),
            is_static: self.need(c"gHotSpotVMStructEntryIsStaticOffset")?,
            offset: self.need(c"gHotSpotVMStructEntryOffsetOffset")?,
            address: self.need(c"gHotSpotVMStructEntryAddressOffset")?,
        };
        // Types and constants are optional as tables: without them the groups that need
        // a size or a constant report those entries missing.
        let types = TypeTable {
            base: self.value(c"gHotSpotVMTypes").unwrap_or(0),
            stride: self.value(c"gHotSpotVMTypeEntryArrayStride").unwrap_or(0),
            type_name: self
                .value(c"gHotSpotVMTypeEntryTypeNameOffset")
                .unwrap_or(0),
            is_unsigned: self
                .value(c"gHotSpotVMTypeEntryIsUnsignedOffset")
                .unwrap_or(0),
            size: self.value(c"gHotSpotVMTypeEntrySizeOffset").unwrap_or(0),
        };
        let constants = |base: &CStr, stride: &CStr, name: &CStr, value: &CStr| ConstantTable {
            base: self.value(base).unwrap_or(0),
            stride: self.value(stride).unwrap_or(0),
            name: self.value(name).unwrap_or(0),
            value: self.value(value).unwrap_or(0),
        };
        Ok(RawTables {
            structs,
            types,
            int_constants: constants(
                c"gHotSpotVMIntConstants",
                c"gHotSpotVMIntConstantEntryArrayStride",
                c"gHotSpotVMIntConstantEntryNameOffset",
                c"gHotSpotVMIntConstantEntryValueOffset",
            ),
            long_constants: constants(
                c"gHotSpotVMLongConstants",
                c"gHotSpotVMLongConstantEntryArrayStride",
                c"gHotSpotVMLongConstantEntryNameOffset",
                c"gHotSpotVMLongConstantEntryValueOffset",
            ),
        })
    }
}

impl Drop for Libjvm {
    fn drop(&mut self) {
        if self.opened {
            // SAFETY: balances the RTLD_NOLOAD dlopen; libjvm stays loaded by the launcher.
            unsafe { libc::dlclose(self.handle) };
        }
    }
}

/// dlopen without loading: a handle only if the object is already in the process.
fn noload(name: &CStr) -> *mut c_void {
    // SAFETY: RTLD_NOLOAD never loads or initialises anything.
    unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_NOW) }
}

/// The path of a loaded object named `libjvm.so`, for JVMs whose libjvm is not findable
/// by bare name (e.g. loaded by full path from a non-standard directory).
fn loaded_libjvm_path() -> Option<CString> {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the duration of the call, and
        // `data` is the `Option<CString>` owned by the caller below.
        unsafe {
            let name = (*info).dlpi_name;
            if name.is_null() {
                return 0;
            }
            let name = CStr::from_ptr(name);
            if !name.to_bytes().ends_with(b"/libjvm.so") {
                return 0;
            }
            *(data as *mut Option<CString>) = Some(name.to_owned());
            1
        }
    }
    let mut found: Option<CString> = None;
    // SAFETY: `visit` only writes to `found`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut found as *mut _ as *mut c_void) };
    found
}

#[cfg(test)]
#[path = "vmstructs_tests.rs"]
mod tests;
