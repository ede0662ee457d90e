//! HotSpot's command-line flags, found through VMStructs (`JVMFlag::flags`, `numFlags`,
//! `_name`, `_addr`, `_flags`, `_type`), read and written in place.
//!
//! Two users:
//! - at load, the profiler turns on `DebugNonSafepoints` so the JIT records debug info at
//!   every pc, not only at safepoints: without it the top compiled frame of a sample loses its
//!   line and its inlined callers. async-profiler does the same; the alternative, enabling
//!   JVMTI CompiledMethodLoad, would also make HotSpot create a jmethodID for every compiled
//!   method, which the lazy mode exists to avoid;
//! - `JVMAccess.Flags` (`api/jvm_flags.rs`), which tracers use to install crash hooks
//!   (`OnError`, `OnOutOfMemoryError`): those flags are not manageable, so
//!   `HotSpotDiagnosticMXBean.setVMOption` refuses them.
//!
//! The layout, as VMStructs reports it (docs/hotspot.md 1.3: looked up by name, the shape
//! told apart by the field's type string, never by JDK version):
//! - JDK 11-15: `const char* _type` (the type's name: "bool", "ccstr", ...), `_name`,
//!   `_addr`, `_flags`; 40-byte entries;
//! - JDK 16+: `_addr`, `_name`, `int _flags`, `int _type` (`JVMFlag::FlagType`, see
//!   [`FlagType::from_index`]); 24-byte entries.
//!
//! `_flags` holds the value's origin in its low 4 bits (0 = default) and the flag's kind
//! above; `KIND_MANAGEABLE` is bit 5 in every JDK from 11 to 25 (not exported by VMStructs;
//! checked against `HotSpotDiagnosticMXBean` by the tests on every JDK of the matrix).
//!
//! Every read of the table and of a flag goes through the crash-protected loads, and every
//! write is typed: a bool flag gets one byte, a string flag one pointer, and nothing is
//! written to a flag whose type is unknown. Never called from a signal handler.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::tables::VmTables;
use crate::sample::safe_access::{load_i32, load_u32, load_u64, load_u8, load_usize};

/// Most flags a JVM has (about 1,300 on 11, 1,250 on 21): a larger count is a bad read.
const MAX_FLAGS: usize = 10_000;
/// `JVMFlag::_flags` low bits hold the origin; 0 is "default" (JVMFlagOrigin::DEFAULT).
const ORIGIN_MASK: u32 = 0xf;
/// `JVMFlag::KIND_MANAGEABLE`: HotSpot itself may set (and free) the value at run time.
const KIND_MANAGEABLE: u32 = 1 << 5;
/// Longest flag name looked up (HotSpot's longest is about 50 characters).
const MAX_NAME: usize = 256;
/// Longest string value read or written.
pub const MAX_VALUE: usize = 64 * 1024;

/// A flag's value type (`JVMFlag::FlagType` on JDK 16+, the type name before).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagType {
    Bool,
    Int,
    Uint,
    Intx,
    Uintx,
    Uint64,
    SizeT,
    Double,
    /// `ccstr`: a `const char*`.
    Ccstr,
    /// `ccstrlist`: a `const char*` too; repeated command-line settings are joined by '\n'.
    Ccstrlist,
}

impl FlagType {
    /// JDK 16+'s `JVMFlag::FlagType`: `JVM_FLAG_NON_STRING_TYPES_DO` (bool, int, uint,
    /// intx, uintx, uint64_t, size_t, double) then ccstr, ccstrlist.
    pub fn from_index(index: i32) -> Option<FlagType> {
        use FlagType::*;
        Some(match index {
            0 => Bool,
            1 => Int,
            2 => Uint,
            3 => Intx,
            4 => Uintx,
            5 => Uint64,
            6 => SizeT,
            7 => Double,
            8 => Ccstr,
            9 => Ccstrlist,
            _ => return None,
        })
    }

    /// JDK 11-15's `_type` string.
    pub fn from_name(name: &[u8]) -> Option<FlagType> {
        use FlagType::*;
        Some(match name {
            b"bool" => Bool,
            b"int" => Int,
            b"uint" => Uint,
            b"intx" => Intx,
            b"uintx" => Uintx,
            b"uint64_t" => Uint64,
            b"size_t" => SizeT,
            b"double" => Double,
            b"ccstr" => Ccstr,
            b"ccstrlist" => Ccstrlist,
            _ => return None,
        })
    }

    pub fn is_string(self) -> bool {
        matches!(self, FlagType::Ccstr | FlagType::Ccstrlist)
    }

    /// (bytes, signed) of an integer flag's storage; None for the other types.
    pub fn int_storage(self) -> Option<(usize, bool)> {
        use FlagType::*;
        match self {
            Int => Some((4, true)),
            Uint => Some((4, false)),
            Intx => Some((8, true)),
            Uintx | Uint64 | SizeT => Some((8, false)),
            _ => None,
        }
    }
}

/// Why a flag could not be read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagError {
    /// No VMStructs flag table in this JVM (not HotSpot, or the entries are missing).
    Unavailable,
    /// No flag of that name.
    NotFound,
    /// The flag exists with another type (or one we cannot tell).
    WrongType,
    /// A manageable string flag: HotSpot may later replace and free its value with its own
    /// allocator, so only HotSpot's setter (`HotSpotDiagnosticMXBean`) may write it.
    Manageable,
    /// A value we refuse to write: a NUL inside, or longer than [`MAX_VALUE`].
    BadValue,
    /// The flag's storage could not be read (a bad table).
    Unreadable,
}

/// How `JVMFlag::_type` is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TypeEncoding {
    /// `const char*` naming the type (JDK 11-15).
    Name,
    /// An `int` `JVMFlag::FlagType` (JDK 16+).
    Index,
}

/// Where HotSpot's flag array is and how its entries are laid out: plain numbers from
/// VMStructs, so tests can point one at an array they built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagTable {
    /// Address of the static `JVMFlag::flags` (holding the array's address).
    pub flags_addr: usize,
    /// Address of the static `JVMFlag::numFlags` (a `size_t`).
    pub count_addr: usize,
    /// `sizeof(JVMFlag)`.
    pub stride: usize,
    pub name_offset: usize,
    pub addr_offset: usize,
    /// `_flags` (origin and kind bits), if exported.
    pub bits_offset: Option<usize>,
    type_field: Option<(usize, TypeEncoding)>,
}

/// One flag of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag {
    /// Address of the flag's value.
    pub addr: usize,
    /// None: a type this code does not know (nothing is written to it).
    pub ty: Option<FlagType>,
    /// `_flags`, if readable.
    pub bits: Option<u32>,
}

impl Flag {
    pub fn is_manageable(&self) -> bool {
        self.bits.is_some_and(|b| b & KIND_MANAGEABLE != 0)
    }

    /// Whether the value is still the built-in default (unknown: assumed so).
    pub fn is_default(&self) -> bool {
        self.bits.is_none_or(|b| b & ORIGIN_MASK == 0)
    }

    fn require(&self, ok: impl Fn(FlagType) -> bool) -> Result<FlagType, FlagError> {
        self.ty.filter(|t| ok(*t)).ok_or(FlagError::WrongType)
    }
}

impl FlagTable {
    /// The flag table's layout, if VMStructs exports every entry it needs.
    pub fn resolve(tables: &VmTables) -> Option<FlagTable> {
        let flags = tables.field("JVMFlag::flags").filter(|f| f.is_static)?;
        let count = tables.field("JVMFlag::numFlags").filter(|f| f.is_static)?;
        let name = tables.field("JVMFlag::_name")?;
        let addr = tables.field("JVMFlag::_addr")?;
        let stride = tables.type_info("JVMFlag").map(|t| t.size as usize)?;
        let type_field = tables.field("JVMFlag::_type").and_then(|f| {
            let encoding = match f.type_string.as_deref().map(str::trim) {
                Some(t) if t.ends_with('*') => TypeEncoding::Name,
                Some("int") => TypeEncoding::Index,
                _ => return None,
            };
            Some((f.offset, encoding))
        });
        if stride == 0 || flags.address == 0 || count.address == 0 {
            return None;
        }
        Some(FlagTable {
            flags_addr: flags.address,
            count_addr: count.address,
            stride,
            name_offset: name.offset,
            addr_offset: addr.offset,
            bits_offset: tables.field("JVMFlag::_flags").map(|f| f.offset),
            type_field,
        })
    }

    /// The flag named `name` (exact, case-sensitive, as HotSpot spells it).
    pub fn find(&self, name: &str) -> Result<Flag, FlagError> {
        let wanted = name.as_bytes();
        if wanted.is_empty() || wanted.len() > MAX_NAME || wanted.contains(&0) {
            return Err(FlagError::NotFound);
        }
        let base = load_usize(self.flags_addr).ok_or(FlagError::Unreadable)?;
        let count = load_usize(self.count_addr).ok_or(FlagError::Unreadable)?;
        if base == 0 {
            return Err(FlagError::Unreadable);
        }
        for i in 0..count.min(MAX_FLAGS) {
            let entry = base.wrapping_add(i.wrapping_mul(self.stride));
            let Some(name_ptr) = load_usize(entry + self.name_offset).filter(|p| *p != 0) else {
                continue;
            };
            if !c_str_equals(name_ptr, wanted) {
                continue;
            }
            let addr = load_usize(entry + self.addr_offset)
                .filter(|a| *a != 0)
                .ok_or(FlagError::Unreadable)?;
            return Ok(Flag {
                addr,
                ty: self.type_of(entry),
                bits: self.bits_offset.and_then(|o| load_u32(entry + o)),
            });
        }
        Err(FlagError::NotFound)
    }

    fn type_of(&self, entry: usize) -> Option<FlagType> {
        let (offset, encoding) = self.type_field?;
        match encoding {
            TypeEncoding::Index => load_i32(entry + offset).and_then(FlagType::from_index),
            TypeEncoding::Name => {
                let ptr = load_usize(entry + offset).filter(|p| *p != 0)?;
                let name = read_c_str(ptr, 16)?;
                FlagType::from_name(&name)
            }
        }
    }

    pub fn get_bool(&self, name: &str) -> Result<bool, FlagError> {
        let flag = self.find(name)?;
        flag.require(|t| t == FlagType::Bool)?;
        load_u8(flag.addr)
            .map(|v| v != 0)
            .ok_or(FlagError::Unreadable)
    }

    /// Writes a bool flag (one byte, HotSpot's `bool`). Any kind of flag: a bool owns no
    /// memory, so HotSpot's own later writes cannot be confused by ours.
    pub fn set_bool(&self, name: &str, value: bool) -> Result<(), FlagError> {
        let flag = self.find(name)?;
        flag.require(|t| t == FlagType::Bool)?;
        load_u8(flag.addr).ok_or(FlagError::Unreadable)?;
        // SAFETY: `flag.addr` is the storage of a bool flag (a global in libjvm's data
        // segment, readable as just checked); a byte store cannot tear.
        unsafe { (flag.addr as *mut u8).write_volatile(u8::from(value)) };
        Ok(())
    }

    /// An integer flag of any width, as a Java `long` (unsigned 64-bit values wrap).
    pub fn get_int(&self, name: &str) -> Result<i64, FlagError> {
        let flag = self.find(name)?;
        let (width, signed) = flag
            .require(|t| t.int_storage().is_some())?
            .int_storage()
            .ok_or(FlagError::WrongType)?;
        let value = match (width, signed) {
            (4, true) => load_i32(flag.addr).map(i64::from),
            (4, false) => load_u32(flag.addr).map(i64::from),
            _ => load_u64(flag.addr).map(|v| v as i64),
        };
        value.ok_or(FlagError::Unreadable)
    }

    pub fn get_double(&self, name: &str) -> Result<f64, FlagError> {
        let flag = self.find(name)?;
        flag.require(|t| t == FlagType::Double)?;
        load_u64(flag.addr)
            .map(f64::from_bits)
            .ok_or(FlagError::Unreadable)
    }

    /// A string flag's value; `Ok(None)` when it is a null pointer. Bytes as HotSpot keeps
    /// them (the platform encoding; in practice UTF-8 or ASCII).
    pub fn get_string(&self, name: &str) -> Result<Option<Vec<u8>>, FlagError> {
        let flag = self.find(name)?;
        flag.require(FlagType::is_string)?;
        let ptr = load_usize(flag.addr).ok_or(FlagError::Unreadable)?;
        if ptr == 0 {
            return Ok(None);
        }
        read_c_str(ptr, MAX_VALUE)
            .map(Some)
            .ok_or(FlagError::Unreadable)
    }

    /// Points a string flag (`ccstr`/`ccstrlist`, not manageable) at a copy of `value`.
    ///
    /// The copy is allocated with libc `malloc` and deliberately never freed: HotSpot may
    /// read the flag at any moment from any thread (`OnError` is read while the VM reports
    /// a crash), so no earlier value can be known unused. The previous value is left
    /// alone too (it is HotSpot's: a static default or its own copy of a command-line
    /// value). A few bytes per call; callers set these flags once.
    ///
    /// Manageable flags are refused ([`FlagError::Manageable`]): HotSpot's own setter
    /// frees the previous value with its allocator (`os::free`, which with Native Memory
    /// Tracking expects its own header), so a pointer of ours there could crash it later.
    pub fn set_string(&self, name: &str, value: &[u8]) -> Result<(), FlagError> {
        if value.contains(&0) || value.len() > MAX_VALUE {
            return Err(FlagError::BadValue);
        }
        let flag = self.find(name)?;
        flag.require(FlagType::is_string)?;
        if flag.is_manageable() {
            return Err(FlagError::Manageable);
        }
        if flag.addr % std::mem::align_of::<usize>() != 0 {
            return Err(FlagError::Unreadable);
        }
        load_usize(flag.addr).ok_or(FlagError::Unreadable)?;
        let copy = leaked_c_string(value).ok_or(FlagError::Unreadable)?;
        // SAFETY: `flag.addr` is the aligned, readable storage of a `const char*` flag (a
        // global in libjvm's data segment); the Release store publishes the finished copy
        // to any thread that reads the flag.
        unsafe { (*(flag.addr as *const AtomicUsize)).store(copy, Ordering::Release) };
        Ok(())
    }

    /// Sets the boolean flag `name` to true if it is still at its default value. Returns
    /// whether the flag is now true.
    pub fn enable_if_default(&self, name: &str) -> bool {
        let Ok(flag) = self.find(name) else {
            return false;
        };
        // Before JDK 16 an unreadable `_type` does not stop this one switch: the flag is
        // known to be a bool by name.
        if flag.ty.is_some_and(|t| t != FlagType::Bool) {
            return false;
        }
        match load_u8(flag.addr) {
            Some(1) => return true,
            Some(_) => {}
            None => return false,
        }
        if !flag.is_default() {
            return false;
        }
        // SAFETY: `flag.addr` is the storage of a bool flag (readable, checked above).
        unsafe { (flag.addr as *mut u8).write_volatile(1) };
        true
    }
}

/// `value` plus a NUL in fresh `malloc` memory, never freed (see `set_string`).
fn leaked_c_string(value: &[u8]) -> Option<usize> {
    // SAFETY: malloc of len + 1 bytes; the copy and the terminator stay inside them.
    unsafe {
        let p = libc::malloc(value.len() + 1) as *mut u8;
        if p.is_null() {
            return None;
        }
        std::ptr::copy_nonoverlapping(value.as_ptr(), p, value.len());
        *p.add(value.len()) = 0;
        Some(p as usize)
    }
}

/// Loads the aligned 8-byte word holding `addr`: an aligned load never crosses a page,
/// so a string's bytes can be read up to its NUL without touching the next page.
fn byte_at(addr: usize, word: &mut (usize, [u8; 8])) -> Option<u8> {
    let aligned = addr & !7;
    if word.0 != aligned {
        word.1 = load_u64(aligned)?.to_ne_bytes();
        word.0 = aligned;
    }
    Some(word.1[addr - aligned])
}

/// Whether the C string at `ptr` is exactly `wanted` (crash-protected reads).
fn c_str_equals(ptr: usize, wanted: &[u8]) -> bool {
    let mut word = (usize::MAX, [0u8; 8]);
    for (i, &b) in wanted.iter().chain(std::iter::once(&0)).enumerate() {
        match byte_at(ptr.wrapping_add(i), &mut word) {
            Some(c) if c == b => {}
            _ => return false,
        }
    }
    true
}

/// The C string at `ptr`, without its NUL; None if unreadable or longer than `max`.
pub(crate) fn read_c_str(ptr: usize, max: usize) -> Option<Vec<u8>> {
    let mut word = (usize::MAX, [0u8; 8]);
    let mut out = Vec::new();
    for i in 0..=max {
        match byte_at(ptr.wrapping_add(i), &mut word)? {
            0 => return Some(out),
            c => out.push(c),
        }
    }
    None
}

static TABLE: OnceLock<Option<FlagTable>> = OnceLock::new();

/// Keeps the flag table's layout for [`table`]. Called once by `vmstructs::init`.
pub fn init(tables: &VmTables) -> Option<&'static FlagTable> {
    TABLE.get_or_init(|| FlagTable::resolve(tables)).as_ref()
}

/// The flag table, once `vmstructs::init` found it.
pub fn table() -> Result<&'static FlagTable, FlagError> {
    TABLE
        .get()
        .and_then(Option::as_ref)
        .ok_or(FlagError::Unavailable)
}

#[cfg(test)]
#[path = "vmstructs_flags_tests.rs"]
mod tests;

/// Bytes at the low end of a Java thread's stack that may be inaccessible: HotSpot's red,
/// yellow and reserved zones (`StackRedPages`, `StackYellowPages`, `StackReservedPages`)
/// and one more page for a libc guard page; `None` if a flag cannot be read. The walker reads
/// the stack above them with plain loads (`sample/walk/own_stack.rs`).
pub fn stack_guard_bytes() -> Option<usize> {
    let table = table().ok()?;
    let mut pages: i64 = 1;
    for flag in ["StackRedPages", "StackYellowPages", "StackReservedPages"] {
        match table.get_int(flag) {
            Ok(n) if (0..=1024).contains(&n) => pages += n,
            _ => return None,
        }
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if page <= 0 {
        return None;
    }
    usize::try_from(pages.checked_mul(page as i64)?).ok()
}
