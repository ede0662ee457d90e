//! The four VMStructs tables as name-keyed maps, read from libjvm's memory (through the
//! strides and offsets libjvm exports) or parsed from a text dump.

use std::collections::HashMap;
use std::ffi::{c_char, CStr};

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
    pub(super) fields: HashMap<String, FieldEntry>,
    pub(super) types: HashMap<String, TypeInfo>,
    /// Int and long constants together (their names do not overlap).
    pub(super) constants: HashMap<String, i64>,
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

    /// Parses text dumps of the tables (`hotspot/fixtures/vmstructs-jdkNN.txt`, listed by a
    /// JVMTI agent that walks every `gHotSpotVM*` entry). Lines:
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
    pub(super) fn scalar_type(&self, type_string: &str) -> Option<(u8, bool)> {
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
