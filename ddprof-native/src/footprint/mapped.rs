//! Zero-filled slices in anonymous mappings of our own, for the signal path's big
//! tables: the kernel commits a page only when it is first written, so a mostly empty
//! table costs little RSS, and `resident()` can say exactly how much (mincore).

use std::ops::Deref;

use parking_lot::Mutex;

use super::category::{Category, COUNT};
use super::tally;

/// Types for which all-zero bytes are a valid value.
///
/// # Safety
/// Implementors must be valid when every byte is zero.
pub unsafe trait Zeroable {}

/// A zeroed `[T]` in its own mapping, unmapped on drop.
pub struct Mapped<T: Zeroable> {
    ptr: *mut T,
    len: usize,
    category: Category,
}

// SAFETY: Mapped owns its memory like a Box<[T]>; sharing follows T.
unsafe impl<T: Zeroable + Send> Send for Mapped<T> {}
// SAFETY: as above; only shared references to the elements are handed out.
unsafe impl<T: Zeroable + Sync> Sync for Mapped<T> {}

/// Live mappings (base, length, category), for the resident-page count.
static REGIONS: Mutex<Vec<(usize, usize, Category)>> = Mutex::new(Vec::new());

/// The system's page size, read once (a plain load afterwards, so signal handlers may ask).
pub fn page_size() -> usize {
    static PAGE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    match PAGE.load(std::sync::atomic::Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no preconditions.
            let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            let p = if p > 0 { p as usize } else { 4096 };
            PAGE.store(p, std::sync::atomic::Ordering::Relaxed);
            p
        }
        p => p,
    }
}

fn mapped_len(bytes: usize) -> usize {
    let page = page_size();
    bytes.div_ceil(page) * page
}

impl<T: Zeroable> Mapped<T> {
    /// `len` zeroed values charged to `category`. Panics if the mapping fails, as an
    /// allocation failure would.
    pub fn new(len: usize, category: Category) -> Mapped<T> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .expect("mapped slice size");
        assert!(std::mem::align_of::<T>() <= page_size());
        if bytes == 0 {
            return Mapped {
                ptr: std::ptr::NonNull::dangling().as_ptr(),
                len,
                category,
            };
        }
        let map_len = mapped_len(bytes);
        // SAFETY: a fresh private anonymous mapping; we own it until Drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            panic!(
                "mmap of {map_len} bytes failed: {}",
                std::io::Error::last_os_error()
            );
        }
        tally::add(category, bytes as i64, (map_len - bytes) as i64, 1);
        REGIONS.lock().push((p as usize, map_len, category));
        Mapped {
            ptr: p as *mut T,
            len,
            category,
        }
    }
}

impl<T: Zeroable> Deref for Mapped<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: ptr/len describe our mapping (or a dangling pointer with no bytes),
        // zero-filled and valid for T (Zeroable).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Zeroable> Drop for Mapped<T> {
    fn drop(&mut self) {
        let bytes = self.len * std::mem::size_of::<T>();
        if bytes == 0 {
            return;
        }
        let map_len = mapped_len(bytes);
        REGIONS
            .lock()
            .retain(|&(base, _, _)| base != self.ptr as usize);
        tally::add(
            self.category,
            -(bytes as i64),
            -((map_len - bytes) as i64),
            -1,
        );
        // SAFETY: our own mapping of map_len bytes; no reference outlives self.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, map_len) };
    }
}

/// Charges (positive) or releases (negative) `bytes` of a mapping the kernel owns and locks
/// (a perf_events ring buffer) to `category`: live bytes without a region, so the resident
/// figure leaves them out (their pages are the kernel's, not the process's anonymous memory).
pub fn charge_kernel_mapping(category: Category, bytes: i64) {
    tally::add(category, bytes, 0, bytes.signum());
}

/// Pages of `[base, base + len)` backed by memory of our own, from /proc/self/pagemap:
/// present and mapped only here. A page that was only read maps the kernel's shared zero
/// page, which mincore would call resident but costs no RSS (and is never exclusive).
/// None when pagemap cannot be read.
fn own_pages(
    pagemap: &std::fs::File,
    base: usize,
    len: usize,
    buf: &mut Vec<u64>,
) -> Option<usize> {
    use std::os::unix::fs::FileExt;
    const PRESENT: u64 = 1 << 63;
    const EXCLUSIVE: u64 = 1 << 56;
    let page = page_size();
    buf.clear();
    buf.resize(len / page, 0);
    // SAFETY: viewing the u64 buffer as bytes for the read.
    let bytes =
        unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut u8, buf.len() * 8) };
    pagemap
        .read_exact_at(bytes, (base / page * 8) as u64)
        .ok()?;
    Some(
        buf.iter()
            .filter(|e| **e & PRESENT != 0 && **e & EXCLUSIVE != 0)
            .count(),
    )
}

/// Pages of `[base, base + len)` that are resident per mincore (zero-page mappings
/// included): the fallback when pagemap is unreadable.
fn mincore_pages(base: usize, len: usize) -> Option<usize> {
    let mut vec = vec![0u8; len / page_size()];
    // SAFETY: [base, base+len) is one of our live mappings (page-aligned); vec has one
    // byte per page.
    let rc = unsafe { libc::mincore(base as *mut libc::c_void, len, vec.as_mut_ptr()) };
    (rc == 0).then(|| vec.iter().filter(|b| **b & 1 != 0).count())
}

/// Resident bytes of the live mappings, per category (index = discriminant).
/// The last [`resident`] figures and when they were taken.
static LAST_RESIDENT: parking_lot::Mutex<Option<(std::time::Instant, [i64; COUNT])>> =
    parking_lot::Mutex::new(None);

/// [`resident`], measured now and kept for [`resident_recent`] (the library watcher's thread
/// calls this about every five seconds).
pub fn measure_resident() -> [i64; COUNT] {
    let r = resident();
    *LAST_RESIDENT.lock() = Some((std::time::Instant::now(), r));
    r
}

/// [`resident`] as measured at most `max_age` ago, else now: for the dump, where walking the
/// page tables of our mappings was a fifth of a small dump's time.
pub fn resident_recent(max_age: std::time::Duration) -> [i64; COUNT] {
    if let Some((at, r)) = *LAST_RESIDENT.lock() {
        if at.elapsed() <= max_age {
            return r;
        }
    }
    measure_resident()
}

pub fn resident() -> [i64; COUNT] {
    let page = page_size();
    let mut out = [0i64; COUNT];
    let regions = REGIONS.lock().clone();
    let pagemap = std::fs::File::open("/proc/self/pagemap").ok();
    let mut buf = Vec::new();
    for (base, len, category) in regions {
        let pages = pagemap
            .as_ref()
            .and_then(|f| own_pages(f, base, len, &mut buf))
            .or_else(|| mincore_pages(base, len));
        out[category as usize] += (pages.unwrap_or(0) * page) as i64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // SAFETY: integers are valid when zeroed.
    unsafe impl Zeroable for u64 {}

    #[test]
    fn only_written_pages_count_as_resident() {
        let m: Mapped<u64> = Mapped::new(1 << 20, Category::CallTrace); // 8 MiB
        let base = m.as_ptr() as usize;
        // Reading every page maps the shared zero page: mincore calls them resident.
        assert!(m.iter().step_by(512).all(|v| *v == 0));
        assert_eq!(mincore_pages(base, 8 << 20), Some(2048));
        let p = m.as_ptr() as *mut u64;
        for i in [0usize, 512 * 100, 512 * 1000] {
            // SAFETY: in bounds; no other reference reads these elements concurrently.
            unsafe { p.add(i).write(1) };
        }
        let pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
        let own = own_pages(&pagemap, base, 8 << 20, &mut Vec::new());
        assert_eq!(own, Some(3));
        assert!(resident()[Category::CallTrace as usize] >= 3 * 4096);
    }
}
