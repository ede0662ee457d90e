//! The import slots (GOT entries) of the objects loaded in this process, read from their
//! dynamic sections in memory, and the writes that redirect them.
//!
//! A call from a shared library to `malloc` goes through a slot the dynamic linker filled
//! with malloc's address: a `JUMP_SLOT` relocation for a PLT call, a `GLOB_DAT` one for
//! `-fno-plt` calls and address-taking. Writing our hook's address into that slot redirects
//! that library's calls (and only that library's) without `LD_PRELOAD`.
//!
//! Read in memory, not from the file: the loaded image is what the calls use, and
//! `dl_iterate_phdr` holds the loader's lock while it visits an object, so the object cannot
//! be unloaded while we read or write it. glibc rewrites the dynamic section's pointers to
//! absolute addresses on x86_64 and aarch64; musl and some architectures leave them
//! relative to the load bias, hence [`absolute`].
//!
//! Never in a signal handler or a hook body: this allocates (the slot lists).

use std::ffi::{c_void, CStr};

use crate::libs::elf::{
    DT_JMPREL, DT_NULL, DT_PLTREL, DT_PLTRELSZ, DT_RELA, DT_RELASZ, DT_STRSZ, DT_STRTAB, DT_SYMTAB,
    PT_DYNAMIC, PT_GNU_RELRO, PT_LOAD,
};

/// The two relocation types that fill an import slot with a function's address.
#[cfg(target_arch = "x86_64")]
const IMPORT_TYPES: [u32; 2] = [6 /* GLOB_DAT */, 7 /* JUMP_SLOT */];
#[cfg(target_arch = "aarch64")]
const IMPORT_TYPES: [u32; 2] = [1025 /* GLOB_DAT */, 1026 /* JUMP_SLOT */];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const IMPORT_TYPES: [u32; 2] = [u32::MAX, u32::MAX];

/// Bytes of an `Elf64_Rela` and an `Elf64_Sym`.
const RELA_SIZE: u64 = 24;
const SYM_SIZE: u64 = 24;
/// Bounds on what a sane dynamic section holds (a corrupt one is not followed further).
const MAX_DYNAMIC_ENTRIES: usize = 4096;
const MAX_RELOCATIONS: u64 = 1 << 22;

/// One import slot of a loaded object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// Absolute address of the slot.
    pub slot: usize,
    /// The symbol it binds.
    pub name: String,
}

/// What the dynamic section says, with pointers made absolute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dynamic {
    pub strtab: u64,
    pub strsz: u64,
    pub symtab: u64,
    /// (address, bytes) of the `DT_RELA` and `DT_JMPREL` tables (0 when absent).
    pub rela: (u64, u64),
    pub jmprel: (u64, u64),
}

/// A pointer of the dynamic section as an absolute address: glibc has already added the
/// load bias on the architectures we build for, musl has not.
pub fn absolute(ptr: u64, bias: u64) -> u64 {
    if ptr < bias {
        ptr.wrapping_add(bias)
    } else {
        ptr
    }
}

/// Reads `(tag, value)` pairs until `DT_NULL`. In place, not through `object` (as `libs/elf/`
/// reads files): the array's length is known only by its terminator, and the loader's lock
/// keeps it mapped while we read.
///
/// # Safety
/// `dynamic` must point at a readable, `DT_NULL`-terminated `Elf64_Dyn` array.
pub unsafe fn read_dynamic(dynamic: *const [i64; 2], bias: u64) -> Option<Dynamic> {
    let mut d = Dynamic::default();
    let mut pltrel_is_rela = true;
    for i in 0..MAX_DYNAMIC_ENTRIES {
        // SAFETY: the caller's contract: entries up to DT_NULL are readable.
        let [tag, value] = unsafe { dynamic.add(i).read_unaligned() };
        let v = value as u64;
        match tag {
            DT_NULL => break,
            DT_STRTAB => d.strtab = absolute(v, bias),
            DT_STRSZ => d.strsz = v,
            DT_SYMTAB => d.symtab = absolute(v, bias),
            DT_RELA => d.rela.0 = absolute(v, bias),
            DT_RELASZ => d.rela.1 = v,
            DT_JMPREL => d.jmprel.0 = absolute(v, bias),
            DT_PLTRELSZ => d.jmprel.1 = v,
            DT_PLTREL => pltrel_is_rela = v == DT_RELA as u64,
            _ => {}
        }
    }
    if !pltrel_is_rela {
        // REL-format PLT relocations (32-bit ABIs): not ours.
        d.jmprel = (0, 0);
    }
    (d.strtab != 0 && d.symtab != 0).then_some(d)
}

/// The import slots of `wanted` symbols among the object's `GLOB_DAT`/`JUMP_SLOT`
/// relocations.
///
/// # Safety
/// The tables `d` names must be the readable tables of an object loaded at `bias`.
pub unsafe fn imports(d: &Dynamic, bias: u64, wanted: &[&str]) -> Vec<Import> {
    let mut out = Vec::new();
    for (table, bytes) in [d.jmprel, d.rela] {
        if table == 0 {
            continue;
        }
        let n = (bytes / RELA_SIZE).min(MAX_RELOCATIONS);
        for i in 0..n {
            let at = (table + i * RELA_SIZE) as *const u64;
            // SAFETY: inside the relocation table the dynamic section describes.
            let (offset, info) = unsafe { (at.read_unaligned(), at.add(1).read_unaligned()) };
            let kind = (info & 0xffff_ffff) as u32;
            let sym = info >> 32;
            if sym == 0 || !IMPORT_TYPES.contains(&kind) {
                continue;
            }
            let sym_at = (d.symtab + sym * SYM_SIZE) as *const u32;
            // SAFETY: the symbol table entry this relocation names; st_name is its first field.
            let name_off = u64::from(unsafe { sym_at.read_unaligned() });
            if d.strsz != 0 && name_off >= d.strsz {
                continue;
            }
            // SAFETY: a NUL-terminated string inside the object's string table.
            let name = unsafe { CStr::from_ptr((d.strtab + name_off) as *const libc::c_char) };
            let Ok(name) = name.to_str() else { continue };
            if wanted.contains(&name) {
                out.push(Import {
                    slot: bias.wrapping_add(offset) as usize,
                    name: name.to_string(),
                });
            }
        }
    }
    out
}

/// One loaded object as `dl_iterate_phdr` shows it.
pub struct Object<'a> {
    pub name: &'a str,
    pub bias: u64,
    /// (type, vaddr, memsz) of each program header.
    pub headers: Vec<(u32, u64, u64)>,
}

impl Object<'_> {
    /// The address of its dynamic section.
    pub fn dynamic(&self) -> Option<u64> {
        self.headers
            .iter()
            .find(|h| h.0 == PT_DYNAMIC)
            .map(|h| self.bias.wrapping_add(h.1))
    }

    /// Whether `addr` lies in one of its loadable segments.
    pub fn contains(&self, addr: usize) -> bool {
        let addr = addr as u64;
        self.headers.iter().any(|&(t, vaddr, memsz)| {
            let start = self.bias.wrapping_add(vaddr);
            t == PT_LOAD && addr >= start && addr < start + memsz
        })
    }

    /// The pages the dynamic linker made read-only after relocation (`PT_GNU_RELRO`,
    /// both ends rounded down to a page as the linker does).
    pub fn relro(&self) -> Option<(usize, usize)> {
        let page = crate::footprint::page_size();
        self.headers
            .iter()
            .find(|h| h.0 == PT_GNU_RELRO)
            .map(|&(_, vaddr, memsz)| {
                let start = self.bias.wrapping_add(vaddr) as usize;
                (start & !(page - 1), (start + memsz as usize) & !(page - 1))
            })
    }

    /// Its import slots of `wanted` symbols.
    pub fn imports(&self, wanted: &[&str]) -> Vec<Import> {
        let Some(dynamic) = self.dynamic() else {
            return Vec::new();
        };
        // SAFETY: `dl_iterate_phdr` visits loaded objects, whose dynamic section (and the
        // tables it points at) are mapped for as long as the visit lasts.
        unsafe {
            match read_dynamic(dynamic as *const [i64; 2], self.bias) {
                Some(d) => imports(&d, self.bias, wanted),
                None => Vec::new(),
            }
        }
    }
}

/// Calls `visit` for every loaded object, under the loader's lock (so none is unloaded
/// meanwhile). `visit` must not call `dlopen`/`dlclose`.
pub fn for_each_object(mut visit: impl FnMut(&Object)) {
    unsafe extern "C" fn callback(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `&mut dyn FnMut` passed below, alive for the whole call.
        let visit = unsafe { &mut *(data as *mut &mut dyn FnMut(&Object)) };
        // SAFETY: dl_iterate_phdr passes a valid info and header array for this call.
        let info = unsafe { &*info };
        let name = if info.dlpi_name.is_null() {
            ""
        } else {
            // SAFETY: a NUL-terminated name owned by the loader.
            unsafe { CStr::from_ptr(info.dlpi_name) }
                .to_str()
                .unwrap_or("")
        };
        let headers = (0..usize::from(info.dlpi_phnum))
            .map(|i| {
                // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`.
                let h = unsafe { &*info.dlpi_phdr.add(i) };
                (h.p_type, h.p_vaddr, h.p_memsz)
            })
            .collect();
        visit(&Object {
            name,
            bias: info.dlpi_addr,
            headers,
        });
        0
    }
    let mut visit: &mut dyn FnMut(&Object) = &mut visit;
    // SAFETY: the callback only casts `data` back to what we pass here.
    unsafe {
        libc::dl_iterate_phdr(Some(callback), &mut visit as *mut _ as *mut c_void);
    }
}

/// Why a slot could not be written.
#[derive(Debug, PartialEq, Eq)]
pub enum WriteError {
    Misaligned,
    Protect(i32),
}

/// Writes `value` into the 8-byte slot at `slot` with one atomic store (a thread calling
/// through it sees the old or the new function, never half of each), making its page
/// writable first when it lies in the object's read-only-after-relocation range and
/// read-only again after. Returns the value replaced.
///
/// # Safety
/// `slot` must be an import slot of a loaded object whose RELRO range is `relro`, and the
/// object must stay loaded for the call (we run under `dl_iterate_phdr`).
pub unsafe fn write_slot(
    slot: usize,
    value: usize,
    relro: Option<(usize, usize)>,
) -> Result<usize, WriteError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    if !slot.is_multiple_of(std::mem::align_of::<usize>()) {
        return Err(WriteError::Misaligned);
    }
    let page = crate::footprint::page_size();
    let page_start = slot & !(page - 1);
    let protected = relro.is_some_and(|(s, e)| page_start >= s && page_start < e);
    let protect = |prot| {
        // SAFETY: the page holds the slot, part of a mapping of the loaded object.
        let rc = unsafe { libc::mprotect(page_start as *mut c_void, page, prot) };
        if rc == 0 {
            Ok(())
        } else {
            Err(WriteError::Protect(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ))
        }
    };
    if protected {
        protect(libc::PROT_READ | libc::PROT_WRITE)?;
    }
    // SAFETY: an aligned, writable word of the object; other threads only load it.
    let old = unsafe { (*(slot as *const AtomicUsize)).swap(value, Ordering::AcqRel) };
    if protected {
        protect(libc::PROT_READ)?;
    }
    Ok(old)
}

#[cfg(test)]
#[path = "got_tests.rs"]
mod tests;
