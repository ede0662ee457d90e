//! The cdylib's global allocator: malloc underneath, every block charged to a category.
//!
//! A free must be charged back to the category that allocated the block, so each block
//! records it. Small blocks carry a 16-byte tag just below the pointer handed out.
//! Blocks of 4 KiB and more are listed instead in a fixed table of their own (address
//! and category), because a tag there would push sizes that fit a size class exactly
//! (powers of two, which Rust's collections favour) into the next one: 512 KiB + 16 B
//! costs 640 KiB under jemalloc. When that table is full, large blocks are tagged too.
//! The usable size comes from the allocator actually serving `malloc` (glibc's, or an
//! LD_PRELOADed one: we call through the PLT like everyone else).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::category::Category;
use super::scope;
use super::tally;

/// Bytes in front of a tagged block; also keeps malloc's 16-byte alignment.
pub const TAG: usize = 16;
/// Blocks from this size up are listed rather than tagged.
pub const LARGE: usize = 4096;

pub struct CountingAllocator;

#[inline]
fn usable(base: *mut u8) -> usize {
    // SAFETY: base is a live block from this process's malloc.
    unsafe { libc::malloc_usable_size(base as *mut libc::c_void) }
}

/// Charges (`sign` 1) or releases (-1) the block at `base` for `request` bytes.
#[inline]
fn charge(category: Category, base: *mut u8, request: usize, sign: i64) {
    let slack = usable(base).saturating_sub(request);
    tally::add(category, sign * request as i64, sign * slack as i64, sign);
}

/// Large blocks: malloc'd address (16-aligned, so the low 4 bits hold the category).
/// Open addressing, linear probing, backward-shift deletion; a spin lock, since the
/// allocator cannot use a lock that might allocate. 8192 slots: 64 KiB of bss.
mod listed {
    use super::*;

    const SLOTS: usize = 8192;
    const MAX_USED: usize = SLOTS * 3 / 4;
    static TABLE: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    static USED: AtomicUsize = AtomicUsize::new(0);
    static LOCK: AtomicBool = AtomicBool::new(false);

    struct Held;
    fn lock() -> Held {
        let mut spins = 0u32;
        while LOCK.swap(true, Ordering::Acquire) {
            spins += 1;
            if spins.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        Held
    }
    impl Drop for Held {
        fn drop(&mut self) {
            LOCK.store(false, Ordering::Release);
        }
    }

    fn home(addr: usize) -> usize {
        ((addr >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 51) % SLOTS
    }

    fn find(addr: usize) -> Option<usize> {
        let mut i = home(addr);
        loop {
            let e = TABLE[i].load(Ordering::Relaxed);
            if e == 0 {
                return None;
            }
            if e & !0xf == addr {
                return Some(i);
            }
            i = (i + 1) % SLOTS;
        }
    }

    /// The category of a listed block.
    pub fn get(addr: usize) -> Option<Category> {
        let _held = lock();
        find(addr).map(|i| Category::from_raw((TABLE[i].load(Ordering::Relaxed) & 0xf) as u8))
    }

    /// Lists again a block whose entry its owner took out for a realloc. Never refused:
    /// the entry was counted before, and the slots past `MAX_USED` leave room for every
    /// realloc in flight.
    pub fn put_back(addr: usize, category: Category) {
        let _held = lock();
        insert_locked(addr, category);
    }

    /// False when the table is full (the block must then be tagged).
    pub fn insert(addr: usize, category: Category) -> bool {
        let _held = lock();
        if USED.load(Ordering::Relaxed) >= MAX_USED {
            return false;
        }
        insert_locked(addr, category);
        true
    }

    fn insert_locked(addr: usize, category: Category) {
        debug_assert_eq!(addr & 0xf, 0);
        let mut i = home(addr);
        while TABLE[i].load(Ordering::Relaxed) != 0 {
            i = (i + 1) % SLOTS;
        }
        TABLE[i].store(addr | category as usize, Ordering::Relaxed);
        USED.fetch_add(1, Ordering::Relaxed);
    }

    /// The category of a listed block, which is no longer listed afterwards.
    pub fn remove(addr: usize) -> Option<Category> {
        let _held = lock();
        remove_locked(addr)
    }

    fn remove_locked(addr: usize) -> Option<Category> {
        let mut hole = find(addr)?;
        let category = Category::from_raw((TABLE[hole].load(Ordering::Relaxed) & 0xf) as u8);
        // Backward shift: move later entries of the cluster into the hole when their
        // home does not lie cyclically in (hole, j].
        let mut j = hole;
        loop {
            j = (j + 1) % SLOTS;
            let e = TABLE[j].load(Ordering::Relaxed);
            if e == 0 {
                break;
            }
            let h = home(e & !0xf);
            let stays = if hole <= j {
                hole < h && h <= j
            } else {
                hole < h || h <= j
            };
            if !stays {
                TABLE[hole].store(e, Ordering::Relaxed);
                hole = j;
            }
        }
        TABLE[hole].store(0, Ordering::Relaxed);
        USED.fetch_sub(1, Ordering::Relaxed);
        Some(category)
    }
}

/// Offset from the malloc'd base to the pointer handed out, for tagged blocks.
#[inline]
fn offset(layout: &Layout) -> usize {
    layout.align().max(TAG)
}

#[inline]
fn may_list(layout: &Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= TAG
}

/// malloc of `size` bytes aligned for `layout`.
fn raw_alloc(layout: &Layout, size: usize, zeroed: bool) -> *mut u8 {
    if layout.align() <= TAG {
        // SAFETY: plain libc allocation; malloc's alignment (16 on x86_64 glibc and
        // jemalloc) covers align <= TAG.
        unsafe {
            if zeroed {
                libc::calloc(1, size) as *mut u8
            } else {
                libc::malloc(size) as *mut u8
            }
        }
    } else {
        let mut base: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: align is a power of two and a multiple of pointer size (> 16).
        let rc = unsafe { libc::posix_memalign(&mut base, layout.align(), size) };
        if rc != 0 {
            return std::ptr::null_mut();
        }
        if zeroed {
            // SAFETY: base is a fresh block of `size` bytes.
            unsafe { std::ptr::write_bytes(base as *mut u8, 0, size) };
        }
        base as *mut u8
    }
}

/// Allocates charged to an explicit category.
pub fn alloc_in(layout: Layout, category: Category, zeroed: bool) -> *mut u8 {
    scope::note_allocation();
    if may_list(&layout) {
        let base = raw_alloc(&layout, layout.size(), zeroed);
        if base.is_null() {
            return base;
        }
        if listed::insert(base as usize, category) {
            charge(category, base, layout.size(), 1);
            return base;
        }
        // SAFETY: our fresh block; tagged below instead.
        unsafe { libc::free(base as *mut libc::c_void) };
    }
    let off = offset(&layout);
    let Some(request) = off.checked_add(layout.size()) else {
        return std::ptr::null_mut();
    };
    let base = raw_alloc(&layout, request, zeroed);
    if base.is_null() {
        return base;
    }
    charge(category, base, request, 1);
    // SAFETY: base has off + size bytes; the tag byte lies in the first `off`.
    unsafe {
        let p = base.add(off);
        *p.sub(TAG) = category as u8;
        p
    }
}

// SAFETY: blocks come from malloc/posix_memalign with at least the layout's size and
// alignment (after the tag offset for tagged blocks); dealloc and realloc find each
// block's base the same way it was made.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        alloc_in(layout, scope::current(), false)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        alloc_in(layout, scope::current(), true)
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let listed = if may_list(&layout) {
            listed::remove(p as usize)
        } else {
            None
        };
        let base = match listed {
            Some(c) => {
                charge(c, p, layout.size(), -1);
                p
            }
            None => {
                let base = p.sub(offset(&layout));
                let c = Category::from_raw(*p.sub(TAG));
                charge(c, base, offset(&layout) + layout.size(), -1);
                base
            }
        };
        libc::free(base as *mut libc::c_void);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let listed = if may_list(&layout) {
            listed::get(p as usize)
        } else {
            None
        };
        // In place through libc's realloc when the block keeps its kind: listed to
        // large, or tagged to small with malloc's own alignment. Otherwise move.
        let (base, category, old_request, new_request) = match listed {
            Some(c) if may_list(&new_layout) => (p, c, layout.size(), new_size),
            Some(c) => return self.moved(p, layout, new_layout, c),
            None => {
                let c = Category::from_raw(*p.sub(TAG));
                if layout.align() > TAG || may_list(&new_layout) {
                    return self.moved(p, layout, new_layout, c);
                }
                (p.sub(TAG), c, TAG + layout.size(), TAG + new_size)
            }
        };
        scope::note_allocation();
        // Released, and unlisted, before the call: once the block moves, its old address
        // is malloc's to hand out again, and must not find our entry.
        charge(category, base, old_request, -1);
        if listed.is_some() {
            listed::remove(p as usize);
        }
        let nb = libc::realloc(base as *mut libc::c_void, new_request) as *mut u8;
        let (kept, request) = if nb.is_null() {
            (base, old_request)
        } else {
            (nb, new_request)
        };
        charge(category, kept, request, 1);
        if listed.is_some() {
            listed::put_back(kept as usize, category);
        }
        if nb.is_null() || listed.is_some() {
            nb
        } else {
            nb.add(TAG)
        }
    }
}

impl CountingAllocator {
    /// realloc by copy into a new block of the same category.
    ///
    /// # Safety
    /// As `GlobalAlloc::realloc`.
    unsafe fn moved(&self, p: *mut u8, old: Layout, new: Layout, category: Category) -> *mut u8 {
        let q = alloc_in(new, category, false);
        if !q.is_null() {
            std::ptr::copy_nonoverlapping(p, q, old.size().min(new.size()));
            self.dealloc(p, old);
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footprint::scope::scope;

    // The test binary runs under this allocator too (lib.rs sets it for every build),
    // so these go through the real path. Tallies are process-wide and other tests run
    // in parallel, so these check each block's record; tests/footprint_partition.rs
    // checks the tallies.

    /// The category a live block (align <= 16) is recorded under.
    fn category_of<T>(p: *const T, bytes: usize) -> Category {
        // Through an opaque integer: to the compiler a tag lies outside the Vec's
        // allocation, and a read it can see through would be undefined behaviour.
        let addr = std::hint::black_box(p as usize);
        if bytes >= LARGE {
            if let Some(c) = listed::get(addr) {
                return c;
            }
        }
        // SAFETY: addr is a live tagged block whose tag byte is TAG bytes below.
        Category::from_raw(unsafe { *((addr - TAG) as *const u8) })
    }

    #[test]
    fn small_and_large_blocks_carry_the_category_of_their_scope() {
        let (small, large): (Vec<u8>, Vec<u8>) = {
            let _s = scope(Category::LineTables);
            (Vec::with_capacity(1000), Vec::with_capacity(1 << 20))
        };
        assert_eq!(category_of(small.as_ptr(), 1000), Category::LineTables);
        assert_eq!(category_of(large.as_ptr(), 1 << 20), Category::LineTables);
        assert!(
            listed::get(large.as_ptr() as usize).is_some(),
            "large blocks are listed"
        );
        let w: Vec<u8> = Vec::with_capacity(1000);
        assert_eq!(category_of(w.as_ptr(), 1000), Category::Misc);
    }

    #[test]
    fn realloc_keeps_the_category_across_kinds() {
        let mut v: Vec<u64> = {
            let _s = scope(Category::ClassRegistry);
            Vec::with_capacity(3)
        };
        v.extend(0..3);
        let _other = scope(Category::JfrBuffers);
        for cap in [100usize, 5000, 200_000, 50] {
            if cap > v.capacity() {
                v.reserve_exact(cap - v.len());
            } else {
                v.shrink_to(cap);
            }
            let bytes = v.capacity() * 8;
            assert_eq!(
                category_of(v.as_ptr(), bytes),
                Category::ClassRegistry,
                "cap {cap}"
            );
            assert_eq!(&v[..3], &[0, 1, 2]);
            let listed = listed::get(v.as_ptr() as usize).is_some();
            assert!(!listed || bytes >= LARGE);
            if listed {
                assert!(usable(v.as_ptr() as *mut u8) >= bytes);
            } else {
                let base = std::hint::black_box(v.as_ptr() as usize) - TAG;
                assert!(usable(base as *mut u8) >= bytes + TAG);
            }
        }
    }

    #[test]
    fn the_large_block_table_finds_every_entry_after_removals() {
        // Addresses below 4 KiB are never malloc results, so they cannot clash with
        // the live blocks other tests list meanwhile.
        let addrs: Vec<usize> = (1..200).map(|i| i * 16).collect();
        for (i, a) in addrs.iter().enumerate() {
            assert!(listed::insert(*a, Category::ALL[i % Category::ALL.len()]));
        }
        for a in addrs.iter().step_by(3) {
            assert!(listed::remove(*a).is_some());
        }
        for (i, a) in addrs.iter().enumerate() {
            let want = (i % 3 != 0).then(|| Category::ALL[i % Category::ALL.len()]);
            assert_eq!(listed::get(*a), want, "addr {a:#x}");
        }
        // A realloc that moves a listed block: out at the old address, back at the new.
        assert!(listed::remove(addrs[1]).is_some());
        listed::put_back(4000, Category::Dictionary);
        assert_eq!(listed::get(addrs[1]), None);
        assert_eq!(listed::get(4000), Some(Category::Dictionary));
        assert_eq!(listed::remove(4000), Some(Category::Dictionary));
        for (i, a) in addrs.iter().enumerate().skip(2) {
            if i % 3 != 0 {
                assert!(listed::remove(*a).is_some());
            }
        }
    }

    #[test]
    fn over_aligned_blocks_round_trip() {
        #[repr(align(4096))]
        struct Page([u8; 4096]);
        let _s = scope(Category::ThreadInfo);
        let b = Box::new(Page([7; 4096]));
        assert_eq!(&*b as *const Page as usize % 4096, 0);
        let mut v: Vec<Page> = Vec::with_capacity(1);
        v.push(Page([1; 4096]));
        // Grows through realloc's move path (no aligned realloc in libc).
        v.extend(std::iter::once(Page([2; 4096])));
        assert_eq!(v[1].0[0], 2);
        assert_eq!(v.as_ptr() as usize % 4096, 0);
        assert_eq!(b.0[4095], 7);
    }
}
