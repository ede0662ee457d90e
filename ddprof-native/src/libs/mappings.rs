//! The process's executable file mappings, read from `/proc/self/maps` once per change of the
//! loader's list of objects (glibc's `dlpi_adds + dlpi_subs`, [`loader_changes`], which the library
//! watcher of `profiler::libraries` polls). A JVM's
//! maps file has thousands of lines (thread stacks, heap regions, the code cache) and reading
//! it costs the kernel about a millisecond; the unwind rules, the `jdk.NativeLibrary` events and
//! the symbolizer each read it at every dump before.
//!
//! Where the loader gives no counts (another libc), every call reads the file again.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use crate::libs::elf::{executable_files_of, executable_mappings, MappedFile, Mapping};

/// One reading of the maps file.
pub struct Snapshot {
    /// Every executable file mapping, in address order.
    pub mappings: Vec<Mapping>,
    /// The same, one entry per file.
    pub files: Vec<MappedFile>,
}

/// The last reading and the loader count it was taken at.
static CURRENT: Mutex<Option<(u64, Arc<Snapshot>)>> = Mutex::new(None);

/// The executable mappings as of the loader's current list of objects.
pub fn current() -> Arc<Snapshot> {
    // Read before the file: an object added in between makes the next call read it again.
    let generation = loader_changes();
    let mut slot = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    if let (Some(g), Some((at, snapshot))) = (generation, slot.as_ref()) {
        if g == *at {
            return snapshot.clone();
        }
    }
    let _mem = crate::footprint::scope(crate::footprint::Category::NativeSymbols);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mappings = executable_mappings(&maps);
    let files = executable_files_of(&mappings);
    let snapshot = Arc::new(Snapshot { mappings, files });
    *slot = generation.map(|g| (g, snapshot.clone()));
    snapshot
}

/// The executable mappings of this library, `[lo, hi)` (the first to the last of them), or
/// None when it is not among the file mappings.
pub fn own_code() -> Option<(usize, usize)> {
    let here = own_code as *const () as usize as u64;
    let snapshot = current();
    let path = &snapshot
        .mappings
        .iter()
        .find(|m| m.start <= here && here < m.end)?
        .path;
    let mine = snapshot.mappings.iter().filter(|m| &m.path == path);
    let lo = mine.clone().map(|m| m.start).min()?;
    let hi = mine.map(|m| m.end).max()?;
    Some((usize::try_from(lo).ok()?, usize::try_from(hi).ok()?))
}

/// `dlpi_adds + dlpi_subs` as glibc reports them, or None where the loader does not (an old
/// or other libc passing a shorter `dl_phdr_info`).
pub fn loader_changes() -> Option<u64> {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        size: usize,
        data: *mut c_void,
    ) -> i32 {
        let wanted =
            std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs) + std::mem::size_of::<u64>();
        if size >= wanted {
            // SAFETY: `info` is the loader's for this call and, per `size`, holds both counts;
            // `data` is the `Option<u64>` below.
            unsafe {
                let i = &*info;
                *data.cast::<Option<u64>>() = Some(i.dlpi_adds.wrapping_add(i.dlpi_subs));
            }
        }
        1
    }
    let mut out: Option<u64> = None;
    // SAFETY: the callback only reads the entry it is given and writes `out`.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut out as *mut Option<u64>).cast()) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loading_a_library_moves_the_loaders_count() {
        let Some(before) = loader_changes() else {
            return; // not glibc
        };
        // SAFETY: loading and unloading a system library with no constructors of interest.
        let h =
            unsafe { libc::dlopen(c"libutil.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            return;
        }
        let after = loader_changes().unwrap_or(before);
        // SAFETY: the handle dlopen gave.
        unsafe { libc::dlclose(h) };
        assert_ne!(before, after);
    }
}
