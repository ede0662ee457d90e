//! The executable files of this process, read from disk: `/proc/self/maps` lines and
//! 64-bit little-endian ELF headers (loadable segments, section headers, notes), parsed by the
//! `object` crate into the small tables below. Used at start
//! and dump time by the DWARF rows (`eh_frame.rs`) and the native-frame namer
//! (`symbols.rs`); never in a signal handler.
//!
//! This library's own file is deleted by the Java loader right after `System.load` (an
//! extracted copy must not outlive a killed JVM), so `/proc/self/maps` shows it as
//! `(deleted)`. `keep_own_file` (from `JNI_OnLoad`/`Agent_OnLoad`, while the file still
//! exists) opens it once and keeps the descriptor for the life of the process: our own
//! mappings are kept by `executable_mappings` despite `(deleted)`, and `Elf::open` reads our
//! file through that descriptor. A second class loader loads the same copy through
//! `/proc/self/fd/<n>` (LibraryLoader).
//!
//! Other libraries deleted once loaded (Netty's and zstd-jni's extracted JNI libraries) are
//! kept too, marked [`Mapping::deleted`], and read by [`open_mapped`]: through
//! `/proc/self/map_files/<start>-<end>`, the kernel's link to the mapped file, when the process
//! may open it (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE: root outside a container), else from
//! the object as the loader mapped it (`loaded_image`: its dynamic symbols, notes and
//! `.eh_frame`, no `.symtab`).

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;

pub mod loaded_image;

/// This library's own file, kept open (see the module comment).
struct OwnFile {
    /// The path it was loaded from, as the dynamic linker knows it.
    path: String,
    file: File,
    /// Its identity as `/proc/self/maps` writes it: device major and minor, inode.
    dev: (u64, u64),
    ino: u64,
}

static OWN_FILE: OnceLock<Option<OwnFile>> = OnceLock::new();

const DELETED: &str = "(deleted)";

/// Opens this library's own file and keeps it open for the life of the process (once; later
/// calls do nothing). Must run while the file still exists: from `JNI_OnLoad`/`Agent_OnLoad`.
pub fn keep_own_file() {
    OWN_FILE.get_or_init(|| {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: dladdr only reads the loader's tables and fills `info` (plain data).
        let path = unsafe {
            let mut info: libc::Dl_info = std::mem::zeroed();
            if libc::dladdr(keep_own_file as *const c_void, &mut info) == 0
                || info.dli_fname.is_null()
            {
                return None;
            }
            CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned()
        };
        // std opens with O_CLOEXEC: the descriptor does not leak into exec'd children.
        let file = File::open(&path).ok()?;
        let meta = file.metadata().ok()?;
        let dev = meta.dev();
        Some(OwnFile {
            path,
            file,
            dev: (u64::from(libc::major(dev)), u64::from(libc::minor(dev))),
            ino: meta.ino(),
        })
    });
}

fn own_file() -> Option<&'static OwnFile> {
    OWN_FILE.get().and_then(Option::as_ref)
}

pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// One executable mapping of a file (`/...` paths; this library's own, deleted, has the path it
/// was loaded from).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    /// The path, without the ` (deleted)` the maps file adds to a deleted file's.
    pub path: String,
    /// The inode of a file deleted since it was mapped (other than this library): its path
    /// names nothing (or another file), so it is read through [`open_mapped`].
    pub deleted: Option<u64>,
}

impl Mapping {
    /// This mapping's file as ELF (see [`open_mapped`]).
    pub fn open(&self) -> Option<Elf> {
        open_mapped(&self.path, self.deleted, self.start, self.end)
    }
}

/// The ELF file of an executable mapping `[start, end)` of `path`: the file at `path` unless
/// it was deleted (`deleted`), then the mapped file through `/proc/self/map_files/`, else the
/// loaded object in memory. None when neither reads as a 64-bit little-endian ELF file.
pub fn open_mapped(path: &str, deleted: Option<u64>, start: u64, end: u64) -> Option<Elf> {
    if deleted.is_none() {
        return Elf::open(path);
    }
    // EPERM without CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE in the initial user namespace.
    std::fs::File::open(format!("/proc/self/map_files/{start:x}-{end:x}"))
        .ok()
        .and_then(Elf::of_file)
        .or_else(|| loaded_image::open(start))
}

/// The executable file mappings of a `/proc/<pid>/maps` text, in its order.
pub fn executable_mappings(maps: &str) -> Vec<Mapping> {
    let own = own_file().map(|o| (o.dev, o.ino, o.path.as_str()));
    executable_mappings_keeping(maps, own)
}

/// `executable_mappings`, keeping the deleted file `own` ((major, minor), inode, path to
/// report), this library, if it is mapped.
fn executable_mappings_keeping(maps: &str, own: Option<((u64, u64), u64, &str)>) -> Vec<Mapping> {
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let (Some(range), Some(perms), Some(offset), Some(dev), Some(ino), Some(mut path)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            continue;
        };
        if !perms.contains('x') || !path.starts_with('/') {
            continue;
        }
        let mut deleted = None;
        match (parts.next(), parts.next()) {
            (None, _) => {}
            (Some(DELETED), None) => match own {
                Some((own_dev, own_ino, own_path)) if is_file(dev, ino, own_dev, own_ino) => {
                    path = own_path;
                }
                _ => match ino.parse::<u64>() {
                    Ok(ino) => deleted = Some(ino),
                    Err(_) => continue,
                },
            },
            _ => continue,
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end), Ok(offset)) = (
            u64::from_str_radix(a, 16),
            u64::from_str_radix(b, 16),
            u64::from_str_radix(offset, 16),
        ) else {
            continue;
        };
        out.push(Mapping {
            start,
            end,
            offset,
            path: path.to_string(),
            deleted,
        });
    }
    out
}

/// An executable file as mapped: the span of its executable mappings and the first one.
#[derive(Clone, Debug)]
pub struct MappedFile {
    pub path: String,
    /// As [`Mapping::deleted`].
    pub deleted: Option<u64>,
    pub start: u64,
    pub end: u64,
    /// The first executable mapping: its address, end and file offset.
    pub exec_start: u64,
    pub exec_end: u64,
    pub exec_offset: u64,
}

impl MappedFile {
    /// This file as ELF (see [`open_mapped`]).
    pub fn open(&self) -> Option<Elf> {
        open_mapped(&self.path, self.deleted, self.exec_start, self.exec_end)
    }
}

/// The executable files of a `/proc/<pid>/maps` text, once each, in order of first mapping.
pub fn executable_files(maps: &str) -> Vec<MappedFile> {
    executable_files_of(&executable_mappings(maps))
}

/// [`executable_files`] of mappings already read.
pub fn executable_files_of(mappings: &[Mapping]) -> Vec<MappedFile> {
    let mut out: Vec<MappedFile> = Vec::new();
    // A deleted file and a later one at its path are two files.
    let mut index: HashMap<(&str, Option<u64>), usize> = HashMap::new();
    for m in mappings {
        match index.get(&(m.path.as_str(), m.deleted)) {
            Some(&i) => {
                if let Some(f) = out.get_mut(i) {
                    f.start = f.start.min(m.start);
                    f.end = f.end.max(m.end);
                }
            }
            None => {
                index.insert((m.path.as_str(), m.deleted), out.len());
                out.push(MappedFile {
                    start: m.start,
                    end: m.end,
                    exec_start: m.start,
                    exec_end: m.end,
                    exec_offset: m.offset,
                    path: m.path.clone(),
                    deleted: m.deleted,
                });
            }
        }
    }
    out
}

/// Whether the `dev` ("major:minor", hex) and `ino` fields of a maps line name this file.
fn is_file(dev: &str, ino: &str, own_dev: (u64, u64), own_ino: u64) -> bool {
    let Some((major, minor)) = dev.split_once(':') else {
        return false;
    };
    u64::from_str_radix(major, 16).ok() == Some(own_dev.0)
        && u64::from_str_radix(minor, 16).ok() == Some(own_dev.1)
        && ino.parse::<u64>().ok() == Some(own_ino)
}

// The ELF constants the readers use (`<elf.h>`), in one place: this file's reader, the loader's
// copy of a deleted library (`elf/loaded_image.rs`) and the import slots (`imports/got.rs`).
pub const PT_LOAD: u32 = 1;
pub const PT_DYNAMIC: u32 = 2;
pub const PT_NOTE: u32 = 4;
pub const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
pub const PT_GNU_RELRO: u32 = 0x6474_e552;
pub const SHT_PROGBITS: u32 = 1;
pub const SHT_SYMTAB: u32 = 2;
pub const SHT_STRTAB: u32 = 3;
pub const SHT_NOTE: u32 = 7;
pub const SHT_DYNSYM: u32 = 11;
/// Dynamic-section tags (`Elf64_Dyn::d_tag`, a signed word).
pub const DT_NULL: i64 = 0;
pub const DT_PLTRELSZ: i64 = 2;
pub const DT_HASH: i64 = 4;
pub const DT_STRTAB: i64 = 5;
pub const DT_SYMTAB: i64 = 6;
pub const DT_RELA: i64 = 7;
pub const DT_RELASZ: i64 = 8;
pub const DT_STRSZ: i64 = 10;
pub const DT_SYMENT: i64 = 11;
pub const DT_PLTREL: i64 = 20;
pub const DT_JMPREL: i64 = 23;
pub const DT_GNU_HASH: i64 = 0x6fff_fef5;
/// Note type of the GNU build id (owner `GNU`).
const NT_GNU_BUILD_ID: u32 = 3;
/// The byte order of every ELF file read here (64-bit little-endian only).
pub(crate) type LE = object::LittleEndian;
pub(crate) const LE: LE = object::LittleEndian;

/// A loadable segment: file offset, virtual address, size in the file.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
}

/// A section header.
#[derive(Clone, Copy, Debug)]
pub struct Section {
    /// Offset of its name in the section-name string table.
    pub name: u32,
    pub kind: u32,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub entsize: u64,
}

/// An opened ELF file with its segments and sections.
pub struct Elf {
    /// The file; or, for an object read in memory (`loaded_image`), `/proc/self/mem`, its
    /// sections' `offset`s then being addresses.
    pub file: File,
    pub loads: Vec<Load>,
    pub sections: Vec<Section>,
    pub(crate) names: SectionNames,
}

/// Where the names of an [`Elf`]'s sections are.
pub(crate) enum SectionNames {
    /// In the file's section-name string table, section `shstrndx`.
    Table(usize),
    /// Given with the sections (in the same order), for an object read in memory.
    Given(Vec<&'static str>),
}

impl Elf {
    /// None unless `path` is a readable 64-bit little-endian ELF file.
    /// This library's own file is read through the descriptor `keep_own_file` kept (it is
    /// deleted once loaded, and a new file at that path would not be ours).
    pub fn open(path: &str) -> Option<Elf> {
        let file = match own_file() {
            Some(own) if own.path == path => own.file.try_clone().ok()?,
            _ => File::open(path).ok()?,
        };
        Elf::of_file(file)
    }

    /// None unless `file` is a 64-bit little-endian ELF file whose headers `object` reads
    /// (through a cache of the parts it reads: the file is not read whole).
    pub fn of_file(file: File) -> Option<Elf> {
        use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
        let cache = object::read::ReadCache::new(file);
        let (loads, sections, shstrndx) = {
            let header = object::elf::FileHeader64::<LE>::parse(&cache).ok()?;
            let endian = header.endian().ok()?;
            let loads = header
                .program_headers(endian, &cache)
                .ok()?
                .iter()
                .filter(|p| p.p_type(endian).0 == PT_LOAD)
                .map(|p| Load {
                    offset: p.p_offset(endian),
                    vaddr: p.p_vaddr(endian),
                    filesz: p.p_filesz(endian),
                })
                .collect();
            let sections = header
                .section_headers(endian, &cache)
                .ok()?
                .iter()
                .map(|s| Section {
                    name: s.sh_name(endian),
                    kind: s.sh_type(endian).0,
                    addr: s.sh_addr(endian),
                    offset: s.sh_offset(endian),
                    size: s.sh_size(endian),
                    link: s.sh_link(endian),
                    entsize: s.sh_entsize(endian),
                })
                .collect();
            let shstrndx = header.shstrndx(endian, &cache).ok()? as usize;
            (loads, sections, shstrndx)
        };
        Some(Elf {
            file: cache.into_inner(),
            loads,
            sections,
            names: SectionNames::Table(shstrndx),
        })
    }

    /// `len` bytes at `offset` of the file; sizes come from the file, so absurd ones
    /// (over 256 MiB) are refused rather than allocated.
    pub fn read(&self, offset: u64, len: u64) -> Option<Vec<u8>> {
        read_at(&self.file, offset, len)
    }

    /// The section called `name` (looked up in the section-name string table).
    pub fn section_named(&self, name: &str) -> Option<Section> {
        let shstrndx = match &self.names {
            SectionNames::Table(i) => *i,
            SectionNames::Given(names) => {
                let i = names.iter().position(|n| *n == name)?;
                return self.sections.get(i).copied();
            }
        };
        let names = self.sections.get(shstrndx)?;
        let strtab = self.read(names.offset, names.size)?;
        self.sections.iter().copied().find(|s| {
            strtab
                .get(s.name as usize..)
                .and_then(|t| t.split(|b| *b == 0).next())
                == Some(name.as_bytes())
        })
    }

    /// The GNU build id (the `NT_GNU_BUILD_ID` note, usually `.note.gnu.build-id`) as lowercase
    /// hex, the form `readelf -n`, debuginfod and symbol servers use; None without one.
    pub fn build_id(&self) -> Option<String> {
        self.sections
            .iter()
            .filter(|s| s.kind == SHT_NOTE)
            .filter_map(|s| self.read(s.offset, s.size))
            .find_map(|notes| {
                build_id_note(&notes).map(|id| id.iter().map(|b| format!("{b:02x}")).collect())
            })
    }

    /// The segment that a mapping at (page-aligned) file offset `offset` maps.
    pub fn load_of_mapping(&self, offset: u64) -> Option<Load> {
        segment_of_mapping(&self.loads, offset, crate::footprint::page_size() as u64)
    }
}

/// The segment a mapping at page-aligned file offset `offset` maps: the one that starts in
/// that page, else the one holding the offset. A segment is mapped from the page holding its
/// first byte, which may also hold the end of the segment before it (linkers such as lld do
/// not page-align segments in the file): the one holding `offset` is then the previous
/// segment, and addresses computed through it are off by the difference of the two.
pub fn segment_of_mapping(loads: &[Load], offset: u64, page: u64) -> Option<Load> {
    let holds = |l: &&Load, at: u64| l.offset <= at && at < l.offset.saturating_add(l.filesz);
    loads
        .iter()
        .find(|l| l.offset >= offset && l.offset - offset < page)
        .or_else(|| loads.iter().find(|l| holds(l, offset)))
        .copied()
}

/// The descriptor of the GNU build-id note among `notes` (a note section's bytes), read as
/// 4-byte aligned notes: the build id's is, and the 8-aligned ones beside it
/// (`.note.gnu.property`) have sizes that read alike.
fn build_id_note(notes: &[u8]) -> Option<&[u8]> {
    let mut iter =
        object::read::elf::NoteIterator::<object::elf::FileHeader64<LE>>::new(LE, 4, notes).ok()?;
    while let Ok(Some(note)) = iter.next() {
        if note.n_type(LE).0 == NT_GNU_BUILD_ID && note.name() == b"GNU" && !note.desc().is_empty()
        {
            return Some(note.desc());
        }
    }
    None
}

pub(crate) fn read_at(file: &File, offset: u64, len: u64) -> Option<Vec<u8>> {
    if len > 256 << 20 {
        return None;
    }
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, offset).ok()?;
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_keep_executable_files_only() {
        let text = "\
7f0000000000-7f0000001000 r--p 00000000 08:01 11 /usr/lib/libz.so.1
7f0000001000-7f0000005000 r-xp 00001000 08:01 11 /usr/lib/libz.so.1
7f0000006000-7f0000007000 r-xp 00000000 00:00 0 [vdso]
7f0000008000-7f0000009000 rwxp 00000000 00:00 0
7f000000a000-7f000000b000 r-xp 00000000 08:01 12 /tmp/gone.so (deleted)
";
        let m = executable_mappings(text);
        assert_eq!(
            m,
            [
                Mapping {
                    start: 0x7f0000001000,
                    end: 0x7f0000005000,
                    offset: 0x1000,
                    path: "/usr/lib/libz.so.1".into(),
                    deleted: None,
                },
                Mapping {
                    start: 0x7f000000a000,
                    end: 0x7f000000b000,
                    offset: 0,
                    path: "/tmp/gone.so".into(),
                    deleted: Some(12),
                }
            ]
        );
    }

    #[test]
    fn own_deleted_library_keeps_its_path_and_others_are_marked_deleted() {
        let text = "\
7f0000001000-7f0000005000 r-xp 00001000 fd:1a 11 /tmp/libjavaProfiler-1.so (deleted)
7f000000a000-7f000000b000 r-xp 00000000 fd:1a 12 /tmp/gone.so (deleted)
7f000000c000-7f000000d000 r-xp 00000000 fd:1a 11 /tmp/libjavaProfiler-1.so (deleted) x
7f000000e000-7f000000f000 r-xp 00000000 fd:1b 11 /tmp/other-device.so (deleted)
";
        let own = Some(((0xfd, 0x1a), 11, "/tmp/libjavaProfiler-1.so"));
        let m = executable_mappings_keeping(text, own);
        let at = |m: &[Mapping]| m.iter().map(|m| (m.start, m.deleted)).collect::<Vec<_>>();
        assert_eq!(m[0].path, "/tmp/libjavaProfiler-1.so");
        // Read through the descriptor kept, not as a deleted file; a line with more after
        // `(deleted)` is not a file's.
        assert_eq!(
            at(&m),
            [
                (0x7f0000001000, None),
                (0x7f000000a000, Some(12)),
                (0x7f000000e000, Some(11))
            ]
        );
        let unknown = executable_mappings_keeping(text, None);
        assert_eq!(unknown[0].deleted, Some(11));
        assert_eq!(unknown[0].path, "/tmp/libjavaProfiler-1.so");
        assert_eq!(executable_files_of(&unknown).len(), 3);
    }

    #[test]
    fn a_mapping_maps_the_segment_that_starts_in_its_page() {
        // lld's layout: the executable segment starts mid-page, after the read-only one.
        let ro = Load {
            offset: 0,
            vaddr: 0,
            filesz: 0x53ac4,
        };
        let rx = Load {
            offset: 0x53ac4,
            vaddr: 0x54ac4,
            filesz: 0x130a8c,
        };
        let loads = [ro, rx];
        let page = 0x1000;
        assert_eq!(
            segment_of_mapping(&loads, 0x53000, page).map(|l| l.vaddr),
            Some(0x54ac4)
        );
        assert_eq!(
            segment_of_mapping(&loads, 0, page).map(|l| l.vaddr),
            Some(0)
        );
        // A later page of a segment split into several mappings: the segment holding it.
        assert_eq!(
            segment_of_mapping(&loads, 0x60000, page).map(|l| l.vaddr),
            Some(0x54ac4)
        );
        assert!(segment_of_mapping(&loads, 0x400000, page).is_none());
    }

    #[test]
    fn reads_libc_segments_and_sections() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let libc = executable_mappings(&maps)
            .into_iter()
            .find(|m| m.path.contains("libc.so"))
            .expect("libc mapped");
        let elf = Elf::open(&libc.path).expect("libc is ELF");
        assert!(elf.load_of_mapping(libc.offset).is_some());
        let eh = elf.section_named(".eh_frame").expect(".eh_frame");
        assert!(eh.size > 0 && eh.addr > 0);
        assert!(elf.section_named(".no_such_section").is_none());
        assert!(Elf::open("/proc/self/status").is_none());
    }

    #[test]
    fn build_id_note_is_found_after_other_notes() {
        let mut notes = Vec::new();
        // An ABI tag note first (type 1, name "GNU", 16-byte descriptor), then the build id.
        for (kind, desc) in [(1u32, vec![0u8; 16]), (3, vec![0xab, 0x01, 0xff])] {
            notes.extend_from_slice(&4u32.to_le_bytes());
            notes.extend_from_slice(&(desc.len() as u32).to_le_bytes());
            notes.extend_from_slice(&kind.to_le_bytes());
            notes.extend_from_slice(b"GNU\0");
            notes.extend_from_slice(&desc);
            notes.resize(notes.len().next_multiple_of(4), 0);
        }
        assert_eq!(build_id_note(&notes), Some(&[0xab, 0x01, 0xff][..]));
        assert_eq!(build_id_note(&notes[..20]), None, "truncated");
        assert_eq!(build_id_note(&[]), None);
    }

    #[test]
    fn libc_build_id_is_what_readelf_prints() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let libc = executable_mappings(&maps)
            .into_iter()
            .find(|m| m.path.contains("libc.so"))
            .expect("libc mapped");
        let id = Elf::open(&libc.path)
            .and_then(|e| e.build_id())
            .expect("libc has a build id");
        let Ok(out) = std::process::Command::new("readelf")
            .args(["-n", &libc.path])
            .output()
        else {
            return; // no binutils: the note parse above still ran
        };
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("Build ID: {id}")),
            "{id} not in {text}"
        );
    }
}
