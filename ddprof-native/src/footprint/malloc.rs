//! Facts about the allocator serving `malloc` in this process, measured rather than
//! assumed: who it is, the per-chunk header it adds beyond `malloc_usable_size`, and
//! (glibc only) its arena state.

use std::ffi::CStr;
use std::sync::OnceLock;

/// Who serves `malloc` here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Allocator {
    /// glibc's ptmalloc, with `mallinfo2` if it is 2.33 or newer.
    Glibc { mallinfo2: Option<usize> },
    /// Something else (an LD_PRELOADed jemalloc or tcmalloc, musl): the file that
    /// defines the `malloc` we call, when known.
    Other(String),
}

fn dlsym_default(name: &CStr) -> usize {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name has no preconditions.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}

fn file_of(addr: usize) -> String {
    // SAFETY: dladdr only reads the loader's tables; info is plain data.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if addr != 0
            && libc::dladdr(addr as *const libc::c_void, &mut info) != 0
            && !info.dli_fname.is_null()
        {
            return CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned();
        }
    }
    String::from("unknown")
}

fn detect() -> Allocator {
    let malloc = dlsym_default(c"malloc");
    // `__GLIBC__` says nothing here: a preloaded jemalloc leaves glibc loaded. What
    // matters is whether the `malloc` everyone resolves is the one inside glibc, i.e.
    // in the same object as glibc's own version query.
    let glibc_marker = dlsym_default(c"gnu_get_libc_version");
    if glibc_marker == 0 || malloc == 0 || file_of(malloc) != file_of(glibc_marker) {
        return Allocator::Other(file_of(malloc));
    }
    // Looked up, not linked: linking it would make the library fail to load on
    // glibc < 2.33. The truncating mallinfo() is never used instead.
    let mi2 = dlsym_default(c"mallinfo2");
    Allocator::Glibc {
        mallinfo2: (mi2 != 0).then_some(mi2),
    }
}

pub fn allocator() -> &'static Allocator {
    static A: OnceLock<Allocator> = OnceLock::new();
    A.get_or_init(detect)
}

/// Blocks per header probe; enough that some land next to each other.
const PROBE_BLOCKS: usize = 256;
/// A size no allocator rounds up on x86_64 glibc (24 = 32-byte chunk minus header).
const PROBE_SIZE: usize = 24;
/// Headers beyond this are not plausible for a general-purpose allocator.
const MAX_HEADER: usize = 64;

/// Bytes the allocator spends per block beyond its usable size: the smallest positive
/// address stride between same-size blocks minus their usable size (8 on glibc,
/// 0 on size-class allocators such as jemalloc). 0 when the probe is implausible, so
/// that only the rounding `malloc_usable_size` shows is reported.
pub fn probe_header(size: usize) -> usize {
    let mut blocks = [0usize; PROBE_BLOCKS];
    let mut usable = usize::MAX;
    for b in blocks.iter_mut() {
        // SAFETY: plain malloc, freed below; not through our counting allocator.
        let p = unsafe { libc::malloc(size) };
        *b = p as usize;
        if !p.is_null() {
            // SAFETY: p is live.
            usable = usable.min(unsafe { libc::malloc_usable_size(p) });
        }
    }
    let mut sorted = blocks;
    sorted.sort_unstable();
    let stride = sorted
        .windows(2)
        .filter(|w| w[0] != 0)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0)
        .min();
    for b in blocks {
        // SAFETY: from malloc above (free(NULL) is a no-op).
        unsafe { libc::free(b as *mut libc::c_void) };
    }
    match stride {
        Some(s) if usable != usize::MAX && s >= usable && s - usable <= MAX_HEADER => s - usable,
        _ => 0,
    }
}

/// The probed header, measured once per process.
pub fn header() -> usize {
    static H: OnceLock<usize> = OnceLock::new();
    *H.get_or_init(|| probe_header(PROBE_SIZE))
}

/// glibc's `struct mallinfo2` (all `size_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MallInfo2 {
    pub arena: usize,
    pub ordblks: usize,
    pub smblks: usize,
    pub hblks: usize,
    pub hblkhd: usize,
    pub usmblks: usize,
    pub fsmblks: usize,
    pub uordblks: usize,
    pub fordblks: usize,
    pub keepcost: usize,
}

/// Process-wide arena state, or None where it cannot be known (not glibc's malloc,
/// or glibc without `mallinfo2`). Takes every arena lock: dump path only.
pub fn arena() -> Option<MallInfo2> {
    match allocator() {
        Allocator::Glibc { mallinfo2: Some(f) } => {
            // SAFETY: f is glibc's mallinfo2, which takes no arguments and returns the
            // struct by value.
            let f: extern "C" fn() -> MallInfo2 = unsafe { std::mem::transmute(*f) };
            Some(f())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glibc() -> bool {
        matches!(allocator(), Allocator::Glibc { .. })
    }

    #[test]
    fn glibc_serves_malloc_in_tests_and_its_header_is_eight() {
        // The test binary runs with glibc's malloc unless someone preloads another.
        if std::env::var_os("LD_PRELOAD").is_some() {
            return;
        }
        assert!(glibc(), "{:?}", allocator());
        assert_eq!(header(), 8);
    }

    #[test]
    fn a_96_byte_request_costs_112_bytes_on_glibc() {
        if !glibc() {
            return;
        }
        // A block carved from a free chunk a little too big to split is larger (other tests
        // allocate in parallel and leave such chunks), so the cost of the request is the
        // smallest block among several held at once.
        // SAFETY: plain malloc/free of blocks held only here.
        let usable = unsafe {
            let blocks: Vec<*mut libc::c_void> = (0..64).map(|_| libc::malloc(96)).collect();
            let u = blocks
                .iter()
                .map(|&p| libc::malloc_usable_size(p))
                .min()
                .unwrap_or(0);
            blocks.into_iter().for_each(|p| libc::free(p));
            u
        };
        assert_eq!(usable, 104);
        assert_eq!(usable + header(), 112);
        // The probe agrees at that size too.
        assert_eq!(probe_header(96), 8);
    }

    #[test]
    fn mallinfo2_is_available_on_this_glibc() {
        if !glibc() {
            return;
        }
        let a = arena().expect("glibc >= 2.33 here");
        assert!(a.uordblks > 0 && a.arena > 0);
    }
}
