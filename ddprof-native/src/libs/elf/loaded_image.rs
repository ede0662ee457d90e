//! An ELF object read as the loader mapped it, for a library whose file was deleted once
//! loaded and that `/proc/self/map_files/` will not open (without CAP_SYS_ADMIN or
//! CAP_CHECKPOINT_RESTORE, as for any JVM in a container or run by a user).
//!
//! The loader keeps what it needs in memory: the program headers, the dynamic section and
//! through it `.dynsym` and `.dynstr` (every exported function: a JNI library's `Java_...`
//! entry points and its other non-hidden functions), the notes (the build id) and
//! `.eh_frame` (found through `.eh_frame_hdr`). `.symtab`, static functions, is not loaded.
//! [`open`] presents these as an [`Elf`] whose file is `/proc/self/mem`, each section's
//! `offset` its address: the readers of files read it unchanged. Reading through
//! `/proc/self/mem` fails cleanly (EIO) where the object was unmapped meanwhile, where a
//! plain load would fault: `object` and `gimli` parse the copies read so, never a slice over
//! the mapping itself.

use std::ffi::c_void;
use std::fs::File;

use object::elf::{Dyn64, GnuHashHeader};
use object::read::elf::Dyn;

use super::{
    read_at, u32_at, Elf, Load, Section, SectionNames, DT_GNU_HASH, DT_HASH, DT_NULL, DT_STRSZ,
    DT_STRTAB, DT_SYMENT, DT_SYMTAB, LE, PT_DYNAMIC, PT_GNU_EH_FRAME, PT_LOAD, PT_NOTE, SHT_DYNSYM,
    SHT_NOTE, SHT_PROGBITS, SHT_STRTAB,
};

/// More dynamic symbols than any library has: a larger count is a misread table.
const MAX_SYMBOLS: u64 = 1 << 22;

/// A program header, as read from the loader's copy.
#[derive(Clone, Copy)]
struct Phdr {
    kind: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
}

/// The object the loader mapped at `addr` (any address in one of its loadable segments),
/// or None (not an object the loader knows of, or its tables unreadable).
pub fn open(addr: u64) -> Option<Elf> {
    let (bias, phdrs) = object_at(addr)?;
    let mem = File::open("/proc/self/mem").ok()?;
    let image = Image { mem, bias, phdrs };
    image.elf()
}

struct Image {
    mem: File,
    /// Load address minus ELF virtual address.
    bias: u64,
    phdrs: Vec<Phdr>,
}

impl Image {
    /// The address of ELF virtual address `vaddr`.
    fn at(&self, vaddr: u64) -> u64 {
        self.bias.wrapping_add(vaddr)
    }

    /// Whether `addr` lies in one of the object's loadable segments.
    fn holds(&self, addr: u64) -> bool {
        self.phdrs.iter().any(|p| {
            p.kind == PT_LOAD && self.at(p.vaddr) <= addr && addr - self.at(p.vaddr) < p.memsz
        })
    }

    /// A pointer of the dynamic section as an address: glibc relocates them in place (when the
    /// section is writable), other loaders (musl) leave virtual addresses.
    fn pointer(&self, value: u64) -> u64 {
        if self.holds(value) {
            value
        } else {
            self.at(value)
        }
    }

    fn read(&self, addr: u64, len: u64) -> Option<Vec<u8>> {
        read_at(&self.mem, addr, len)
    }

    fn elf(self) -> Option<Elf> {
        let loads = self
            .phdrs
            .iter()
            .filter(|p| p.kind == PT_LOAD)
            .map(|p| Load {
                offset: p.offset,
                vaddr: p.vaddr,
                filesz: p.filesz,
            })
            .collect();
        let mut sections = vec![Section {
            name: 0,
            kind: 0,
            addr: 0,
            offset: 0,
            size: 0,
            link: 0,
            entsize: 0,
        }];
        let mut names = vec![""];
        if let Some((dynsym, dynstr)) = self.dynamic_symbols() {
            // .dynstr goes right after .dynsym: its `link`.
            sections.push(Section {
                link: sections.len() as u32 + 1,
                ..dynsym
            });
            sections.push(dynstr);
            names.extend([".dynsym", ".dynstr"]);
        }
        for p in self.phdrs.iter().filter(|p| p.kind == PT_NOTE) {
            sections.push(Section {
                name: 0,
                kind: SHT_NOTE,
                addr: p.vaddr,
                offset: self.at(p.vaddr),
                size: p.filesz,
                link: 0,
                entsize: 0,
            });
            names.push(".note");
        }
        if let Some(eh) = self.eh_frame() {
            sections.push(eh);
            names.push(".eh_frame");
        }
        Some(Elf {
            file: self.mem,
            loads,
            sections,
            names: SectionNames::Given(names),
        })
    }

    /// `.dynsym` and `.dynstr`, from the dynamic section.
    fn dynamic_symbols(&self) -> Option<(Section, Section)> {
        let dynamic = self.phdrs.iter().find(|p| p.kind == PT_DYNAMIC)?;
        let data = self.read(self.at(dynamic.vaddr), dynamic.filesz)?;
        let (mut symtab, mut strtab, mut strsz, mut syment) = (None, None, None, 24);
        let (mut hash, mut gnu_hash) = (None, None);
        let entries = object::pod::slice_from_bytes::<Dyn64<LE>>(&data, data.len() / 16)
            .ok()?
            .0;
        for entry in entries {
            let (tag, value) = (entry.d_tag(LE).0, entry.d_val(LE));
            match tag {
                DT_NULL => break,
                DT_SYMTAB => symtab = Some(self.pointer(value)),
                DT_STRTAB => strtab = Some(self.pointer(value)),
                DT_STRSZ => strsz = Some(value),
                DT_SYMENT => syment = value,
                DT_HASH => hash = Some(self.pointer(value)),
                DT_GNU_HASH => gnu_hash = Some(self.pointer(value)),
                _ => {}
            }
        }
        let (symtab, strtab, strsz) = (symtab?, strtab?, strsz?);
        let count = match (hash, gnu_hash) {
            // nchain, the second word of the SysV hash table, is the number of symbols.
            (Some(h), _) => u64::from(u32_at(&self.read(h, 8)?, 4)?),
            (None, Some(h)) => self.gnu_hash_symbols(h)?,
            (None, None) => return None,
        };
        if count > MAX_SYMBOLS || syment < 24 {
            return None;
        }
        let dynsym = Section {
            name: 0,
            kind: SHT_DYNSYM,
            addr: symtab.wrapping_sub(self.bias),
            offset: symtab,
            size: count * syment,
            link: 0,
            entsize: syment,
        };
        let dynstr = Section {
            name: 0,
            kind: SHT_STRTAB,
            addr: strtab.wrapping_sub(self.bias),
            offset: strtab,
            size: strsz,
            link: 0,
            entsize: 0,
        };
        Some((dynsym, dynstr))
    }

    /// The number of dynamic symbols by the GNU hash table at `at`: one past the last symbol
    /// of the longest-indexed chain (the symbols before `symoffset` are not hashed).
    fn gnu_hash_symbols(&self, at: u64) -> Option<u64> {
        let header = self.read(at, 16)?;
        let (header, _) = object::pod::from_bytes::<GnuHashHeader<LE>>(&header).ok()?;
        let nbuckets = u64::from(header.bucket_count.get(LE));
        let symoffset = u64::from(header.symbol_base.get(LE));
        let bloom_words = u64::from(header.bloom_count.get(LE));
        if nbuckets > MAX_SYMBOLS || bloom_words > MAX_SYMBOLS {
            return None;
        }
        let buckets_at = at + 16 + bloom_words * 8;
        let buckets = self.read(buckets_at, nbuckets * 4)?;
        let last = buckets
            .chunks_exact(4)
            .filter_map(|b| u32_at(b, 0))
            .max()
            .map_or(0, u64::from);
        if last < symoffset {
            return Some(symoffset);
        }
        // The chain holding `last` ends at the entry whose low bit is set.
        let chains_at = buckets_at + nbuckets * 4;
        let mut index = last;
        while index < MAX_SYMBOLS {
            let entry = u32_at(&self.read(chains_at + (index - symoffset) * 4, 4)?, 0)?;
            if entry & 1 == 1 {
                return Some(index + 1);
            }
            index += 1;
        }
        None
    }

    /// `.eh_frame`, through `.eh_frame_hdr` (PT_GNU_EH_FRAME, read by gimli: any pointer
    /// encoding); it runs to the end of its segment at most (the reader stops at its
    /// terminator).
    fn eh_frame(&self) -> Option<Section> {
        let hdr = self.phdrs.iter().find(|p| p.kind == PT_GNU_EH_FRAME)?;
        let data = self.read(self.at(hdr.vaddr), hdr.filesz)?;
        let bases = gimli::BaseAddresses::default().set_eh_frame_hdr(hdr.vaddr);
        let parsed = gimli::EhFrameHdr::new(&data, gimli::LittleEndian)
            .parse(&bases, 8)
            .ok()?;
        let gimli::Pointer::Direct(vaddr) = parsed.eh_frame_ptr() else {
            return None;
        };
        let end = self
            .phdrs
            .iter()
            .find(|p| p.kind == PT_LOAD && p.vaddr <= vaddr && vaddr < p.vaddr + p.filesz)
            .map(|p| p.vaddr + p.filesz)?;
        Some(Section {
            name: 0,
            kind: SHT_PROGBITS,
            addr: vaddr,
            offset: self.at(vaddr),
            size: end - vaddr,
            link: 0,
            entsize: 0,
        })
    }
}

/// The load bias and program headers of the object with a loadable segment holding `addr`,
/// from the loader's list.
fn object_at(addr: u64) -> Option<(u64, Vec<Phdr>)> {
    struct Search {
        addr: u64,
        found: Option<(u64, Vec<Phdr>)>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> i32 {
        // SAFETY: the loader passes a valid entry for the duration of the call, its
        // `dlpi_phdr` pointing at `dlpi_phnum` headers of the mapped object; `data` is the
        // `Search` below.
        unsafe {
            let info = &*info;
            let search = &mut *data.cast::<Search>();
            if info.dlpi_phdr.is_null() {
                return 0;
            }
            let headers = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
            let bias = info.dlpi_addr;
            let holds = headers.iter().any(|p| {
                let start = bias.wrapping_add(p.p_vaddr);
                p.p_type == PT_LOAD && start <= search.addr && search.addr - start < p.p_memsz
            });
            if !holds {
                return 0;
            }
            let phdrs = headers
                .iter()
                .map(|p| Phdr {
                    kind: p.p_type,
                    offset: p.p_offset,
                    vaddr: p.p_vaddr,
                    filesz: p.p_filesz,
                    memsz: p.p_memsz,
                })
                .collect();
            search.found = Some((bias, phdrs));
            1
        }
    }
    let mut search = Search { addr, found: None };
    // SAFETY: the callback reads the entries it is given and writes `search`.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut search as *mut Search).cast()) };
    search.found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libs::elf::executable_mappings;

    /// libc read in memory names its exported functions as libc read from its file does, and
    /// has the same build id and `.eh_frame`.
    #[test]
    fn libc_in_memory_reads_as_its_file() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let libc = executable_mappings(&maps)
            .into_iter()
            .find(|m| m.path.contains("libc.so"))
            .expect("libc mapped");
        let image = open(libc.start).expect("libc in memory");
        let file = Elf::open(&libc.path).expect("libc's file");
        assert_eq!(image.build_id(), file.build_id());
        assert!(image.build_id().is_some());
        let eh = image
            .section_named(".eh_frame")
            .expect(".eh_frame in memory");
        let eh_file = file
            .section_named(".eh_frame")
            .expect(".eh_frame in the file");
        assert_eq!(eh.addr, eh_file.addr);
        assert!(eh.size >= eh_file.size);
        let bytes = image.read(eh.offset, eh_file.size).unwrap();
        assert_eq!(bytes, file.read(eh_file.offset, eh_file.size).unwrap());
        assert!(image.load_of_mapping(libc.offset).is_some());

        // `malloc` (exported) is named alike by both.
        // SAFETY: dlsym only reads the link map; the name is NUL-terminated.
        let malloc = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"malloc".as_ptr()) } as u64;
        let vaddr = |elf: &Elf| {
            let load = elf.load_of_mapping(libc.offset).unwrap();
            malloc - libc.start + libc.offset - load.offset + load.vaddr
        };
        let from_memory = crate::libs::symbols::Table::of_elf(image).unwrap();
        let file = Elf::open(&libc.path).unwrap();
        let at = vaddr(&file);
        let from_file = crate::libs::symbols::Table::of_elf(file).unwrap();
        // (Aliases of one address may differ between .symtab and .dynsym.)
        assert!(from_file.symbol_at(at).is_some_and(|n| n.contains("alloc")));
        assert!(from_memory
            .symbol_at(at)
            .is_some_and(|n| n.contains("alloc")));
    }

    #[test]
    fn no_object_outside_the_loaders_list() {
        let heap = Box::new(0u64);
        assert!(open(&*heap as *const u64 as u64).is_none());
    }
}
