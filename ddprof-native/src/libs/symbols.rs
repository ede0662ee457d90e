//! Names of native pcs (the `cstack=vmx` frames), at dump time, never in a signal.
//!
//! A pc is looked up in the executable file mappings of `/proc/self/maps`; the file's
//! ELF function symbols (`.symtab`, else `.dynsym`) name it when one covers it (demangled:
//! C++ without parameters, Rust without hash); otherwise it is `libname+0xoffset`, the
//! offset being the ELF virtual address (what `addr2line -e lib` takes). pcs outside
//! every file (the vDSO) go to `dladdr`, then to a bare address.
//! A file deleted since it was mapped (an extracted JNI library) is read through
//! `elf::open_mapped`: `/proc/self/map_files/`, else the loaded image's dynamic symbols.
//!
//! `dladdr` is not used for pcs inside files: it only sees `.dynsym` and takes the
//! nearest exported symbol below the pc, which misnames every static function of a
//! stripped library (libjvm's internals, zlib's `longest_match`).
//!
//! Symbol tables are read once per library per process (kept: 16 bytes per function
//! symbol, and half a byte for the index over them; names are read from the file on demand)
//! and shared by later dumps.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use crate::libs::elf::{Elf, Load, Mapping, LE, SHT_DYNSYM, SHT_SYMTAB};
use crate::word_map::WordMap;

/// Names of pcs over one snapshot of the mappings (a dump's). Names are not kept per pc
/// here: the dump keeps its keys by pc, and the demangled names are kept per function.
pub struct Symbolizer {
    maps: std::sync::Arc<crate::libs::mappings::Snapshot>,
    /// The symbol table of each mapping (by index), looked up once: the tables' map is keyed
    /// by an owned path behind a process-wide lock, too much to pay per pc.
    tables: Vec<OnceCell<Option<Arc<Table>>>>,
}

impl Default for Symbolizer {
    fn default() -> Self {
        Symbolizer::new()
    }
}

impl Symbolizer {
    pub fn new() -> Symbolizer {
        let _mem = crate::footprint::scope(crate::footprint::Category::NativeSymbols);
        Symbolizer::over(crate::libs::mappings::current())
    }

    /// A symbolizer over the mappings `maps`.
    pub fn over(maps: Arc<crate::libs::mappings::Snapshot>) -> Symbolizer {
        let tables = maps.mappings.iter().map(|_| OnceCell::new()).collect();
        Symbolizer { maps, tables }
    }

    /// The mappings this symbolizer names pcs over: the same snapshot (`Arc::ptr_eq`) for
    /// symbolizers made while no object was loaded or unloaded (`mappings::current`).
    pub fn snapshot(&self) -> &std::sync::Arc<crate::libs::mappings::Snapshot> {
        &self.maps
    }

    /// The file mapping holding `pc` and its table (the mappings are in address order and do
    /// not overlap).
    fn mapping_at(&self, pc: u64) -> Option<(&Mapping, Option<&Arc<Table>>)> {
        let mappings = &self.maps.mappings;
        let i = mappings.partition_point(|m| m.end <= pc);
        let m = mappings.get(i).filter(|m| m.start <= pc)?;
        let table = self.tables[i]
            .get_or_init(|| table_of(m.path.as_str(), m.deleted, || m.open()))
            .as_ref();
        Some((m, table))
    }

    /// The file mapped at `pc` and the ELF virtual address `pc` has in it (what a symbolizer of
    /// that file, given its build id, looks up), or None outside every file.
    pub fn locate(&self, pc: u64) -> Option<(&Mapping, u64)> {
        let (m, table) = self.mapping_at(pc)?;
        let vaddr = match table {
            Some(t) => t.vaddr_of(pc, m),
            None => pc - m.start + m.offset,
        };
        Some((m, vaddr))
    }

    /// The name of the function holding `pc`.
    pub fn name(&self, pc: u64) -> String {
        let _mem = crate::footprint::scope(crate::footprint::Category::NativeSymbols);
        let Some((m, table)) = self.mapping_at(pc) else {
            return dladdr_name(pc).unwrap_or_else(|| format!("0x{pc:x}"));
        };
        let vaddr = match table {
            Some(t) => {
                let vaddr = t.vaddr_of(pc, m);
                if let Some(name) = t.function_at(vaddr) {
                    return name;
                }
                vaddr
            }
            None => pc - m.start + m.offset,
        };
        let lib = m.path.rsplit('/').next().unwrap_or(&m.path);
        format!("{lib}+0x{vaddr:x}")
    }
}

/// `dladdr`'s symbol for a pc no file mapping holds (the vDSO is in the link map).
fn dladdr_name(pc: u64) -> Option<String> {
    // SAFETY: dladdr only reads the link map and fills `info`; a zeroed Dl_info is valid.
    let info = unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(pc as *const libc::c_void, &mut info) == 0 || info.dli_sname.is_null() {
            return None;
        }
        info
    };
    // SAFETY: dli_sname is a NUL-terminated string of the loaded object's string table.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_sname) }.to_string_lossy();
    Some(demangle(&name))
}

// ---------------------------------------------------------------------------------------
// ELF symbol tables
// ---------------------------------------------------------------------------------------

/// Function symbols of one ELF file, sorted by address; names stay in the file.
pub struct Table {
    file: File,
    strtab_offset: u64,
    strtab_size: u64,
    /// (address, size, name offset in the string table), sorted by address.
    syms: Vec<(u64, u32, u32)>,
    /// The address of every [`INDEX_STRIDE`]th symbol: a lookup searches this small array
    /// (it stays in cache) and then one block of `syms`, instead of halving the whole table
    /// (libjvm has ~50,000 functions: each step of a plain binary search was a cache and TLB
    /// miss, a tenth of a first dump that names thousands of native pcs).
    index: Vec<u64>,
    loads: Vec<Load>,
    /// Demangled names by name offset, as dumps ask for them: many pcs share a function, and
    /// reading a name from the file and demangling it was most of naming a native frame.
    demangled: parking_lot::Mutex<WordMap<u32, String>>,
}

/// By path and, for a file deleted once mapped, its inode (`Mapping::deleted`).
type Tables = HashMap<(String, Option<u64>), Option<Arc<Table>>>;

static TABLES: Mutex<Option<Tables>> = Mutex::new(None);

/// The table of the file at `path` (deleted: `deleted`), read through `open` on first use
/// (None: not a readable ELF file).
fn table_of(
    path: &str,
    deleted: Option<u64>,
    open: impl FnOnce() -> Option<Elf>,
) -> Option<Arc<Table>> {
    let mut tables = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    let tables = tables.get_or_insert_with(HashMap::new);
    let key = (path.to_string(), deleted);
    if let Some(t) = tables.get(&key) {
        return t.clone();
    }
    let t = open().and_then(Table::of_elf).map(Arc::new);
    tables.insert(key, t.clone());
    t
}

/// Reads the tables of every executable file mapped now that has not been read yet, so that
/// a dump finds them ready (on the library watcher's thread).
pub fn preload() {
    let _mem = crate::footprint::scope(crate::footprint::Category::NativeSymbols);
    for f in &crate::libs::mappings::current().files {
        table_of(&f.path, f.deleted, || f.open());
    }
}

const STT_FUNC: u8 = 2;
/// Symbols per block of [`Table`]'s index: a block is 256 bytes (four cache lines).
const INDEX_STRIDE: usize = 16;
const STT_GNU_IFUNC: u8 = 10;
/// Longest symbol name read back (C++ template names can be long).
const MAX_NAME: usize = 4096;
/// Read first; a longer name (deep C++ templates) is read again up to [`MAX_NAME`].
const SHORT_NAME: usize = 256;

impl Table {
    /// Reads a 64-bit little-endian ELF file's loadable segments and function symbols.
    pub fn read(path: &str) -> Option<Table> {
        Table::of_elf(Elf::open(path)?)
    }

    /// [`Self::read`] of a file opened (or an object read in memory: `crate::libs::elf::loaded_image`).
    pub fn of_elf(elf: Elf) -> Option<Table> {
        // .symtab when the file has one (every function), else .dynsym (exports only).
        let pick = |want: u32| elf.sections.iter().copied().find(|s| s.kind == want);
        let syms_section = pick(SHT_SYMTAB).or_else(|| pick(SHT_DYNSYM))?;
        let strings = *elf.sections.get(syms_section.link as usize)?;
        let (off, size, entsize) = (syms_section.offset, syms_section.size, syms_section.entsize);
        let (str_off, str_size) = (strings.offset, strings.size);
        if entsize < 24 {
            return None;
        }
        let data = elf.read(off, size)?;
        let mut syms: Vec<(u64, u32, u32)> = data
            .chunks_exact(entsize as usize)
            .filter_map(|e| {
                use object::read::elf::Sym;
                let (sym, _) = object::pod::from_bytes::<object::elf::Sym64<LE>>(e).ok()?;
                let (name, value, size) = (sym.st_name(LE), sym.st_value(LE), sym.st_size(LE));
                let t = sym.st_type().0;
                let func = t == STT_FUNC || t == STT_GNU_IFUNC;
                let defined = sym.st_shndx(LE).0 != 0;
                (func && defined && value != 0 && size != 0 && name != 0).then_some((
                    value,
                    size.min(u32::MAX as u64) as u32,
                    name,
                ))
            })
            .collect();
        syms.sort_unstable();
        syms.dedup_by_key(|s| s.0);
        let index = syms.iter().step_by(INDEX_STRIDE).map(|s| s.0).collect();
        Some(Table {
            loads: elf.loads,
            file: elf.file,
            strtab_offset: str_off,
            strtab_size: str_size,
            syms,
            index,
            demangled: parking_lot::Mutex::new(WordMap::default()),
        })
    }

    /// The ELF virtual address of `pc` in mapping `m` of this file: through the loadable
    /// segment that holds the mapping's file offset (bias = load address - vaddr).
    fn vaddr_of(&self, pc: u64, m: &Mapping) -> u64 {
        let file_offset = pc - m.start + m.offset;
        self.loads
            .iter()
            .find(|l| l.offset <= file_offset && file_offset < l.offset.saturating_add(l.filesz))
            .map_or(file_offset, |l| {
                l.vaddr.wrapping_add(file_offset - l.offset)
            })
    }

    /// The raw (mangled) name of the function whose `[value, value + size)` holds `vaddr`.
    pub fn symbol_at(&self, vaddr: u64) -> Option<String> {
        self.name_at(self.name_offset_at(vaddr)?)
    }

    /// [`Self::symbol_at`], demangled; kept for the next pc of the same function.
    pub fn function_at(&self, vaddr: u64) -> Option<String> {
        let offset = self.name_offset_at(vaddr)?;
        if let Some(name) = self.demangled.lock().get(&offset) {
            return Some(name.clone());
        }
        let name = demangle(&self.name_at(offset)?);
        self.demangled.lock().insert(offset, name.clone());
        Some(name)
    }

    fn name_offset_at(&self, vaddr: u64) -> Option<u32> {
        let block = self.index.partition_point(|&a| a <= vaddr).checked_sub(1)?;
        let start = block * INDEX_STRIDE;
        let end = self.syms.len().min(start + INDEX_STRIDE);
        let within = self.syms.get(start..end)?;
        let i = start + within.partition_point(|s| s.0 <= vaddr).checked_sub(1)?;
        let (value, size, name) = *self.syms.get(i)?;
        (vaddr < value.saturating_add(u64::from(size))).then_some(name)
    }

    fn name_at(&self, offset: u32) -> Option<String> {
        let offset = u64::from(offset);
        if offset >= self.strtab_size {
            return None;
        }
        let left = self.strtab_size - offset;
        // Most names fit the stack buffer: one short read and no 4 KiB heap buffer per
        // name (a first dump names thousands, and fresh heap pages are its largest cost).
        let mut short = [0u8; SHORT_NAME];
        let want = left.min(SHORT_NAME as u64) as usize;
        let n = self
            .file
            .read_at(&mut short[..want], self.strtab_offset + offset)
            .ok()?;
        let bytes = short.get(..n)?;
        let name = if bytes.contains(&0) || n as u64 >= left {
            up_to_nul(bytes)
        } else {
            let mut buf = vec![0u8; left.min(MAX_NAME as u64) as usize];
            let n = self
                .file
                .read_at(&mut buf, self.strtab_offset + offset)
                .ok()?;
            up_to_nul(buf.get(..n)?)
        };
        (!name.is_empty()).then_some(name)
    }
}

/// The string `bytes` hold before their first NUL (all of them without one).
fn up_to_nul(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

// ---------------------------------------------------------------------------------------
// Demangling
// ---------------------------------------------------------------------------------------

/// The function name of a mangled symbol, as upstream names native frames: C++ (Itanium ABI,
/// `cpp_demangle`) without parameters, return type or template arguments; Rust (legacy `_ZN..17h<hash>E`
/// and v0 `_R`, `rustc-demangle`) without its hash, generics kept; a clone suffix (`.cold`,
/// `.part.0`, `.isra.0`) dropped; anything else, or anything the demanglers refuse, as it is.
pub fn demangle(raw: &str) -> String {
    // A demangler bug must not fail a dump: a panic keeps the raw name.
    std::panic::catch_unwind(|| rust(raw).or_else(|| cpp(raw)))
        .ok()
        .flatten()
        .unwrap_or_else(|| raw.to_string())
}

/// A Rust symbol's path without the hash (`{:#}`), `None` for anything else.
fn rust(raw: &str) -> Option<String> {
    if !raw.starts_with("_R") && !raw.starts_with("_ZN") {
        return None;
    }
    // rustc-demangle takes a legacy `_ZN...E` only when every part parses and nothing but a
    // clone or LLVM suffix follows the `E`: a C++ function's parameters (`Ev`, `EPh`) refuse it.
    let d = rustc_demangle::try_demangle(raw).ok()?;
    Some(format!("{d:#}"))
}

/// A C++ symbol's qualified name without parameters, return type or template arguments.
fn cpp(raw: &str) -> Option<String> {
    if !raw.starts_with("_Z") {
        return None;
    }
    let sym = cpp_demangle::Symbol::new(raw.as_bytes()).ok()?;
    let options = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    let full = sym.demangle_with_options(&options).ok()?;
    // cpp_demangle writes a clone as `name [clone .cold]`.
    let full = full.split(" [clone").next().unwrap_or(&full);
    let name = without_template_args(full);
    (!name.is_empty()).then_some(name)
}

/// `a::b<c<d>>::f<e>` as `a::b::f`, keeping the angle brackets of operator names
/// (`operator<<`, `operator<=`, `operator->`).
fn without_template_args(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    let mut chars = s.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if depth == 0 && (c == '<' || c == '>') && out.ends_with("operator") {
            out.push(c);
            while let Some(&(_, n)) = chars.peek() {
                if !matches!(n, '<' | '>' | '=') {
                    break;
                }
                out.push(n);
                chars.next();
            }
            continue;
        }
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "symbols_tests.rs"]
mod tests;
