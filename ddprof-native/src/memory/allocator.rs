//! The cdylib's global allocator: malloc underneath, every block charged to a category.
//!
//! Each block carries a 16-byte tag just below the pointer handed out, holding its
//! category, so a free is charged back to the category that allocated it. The usable
//! size is asked from the allocator actually serving `malloc` (glibc's, or an
//! LD_PRELOADed one, since we call through the PLT like everyone else).

use std::alloc::{GlobalAlloc, Layout};

use super::category::{self, Category};
use super::tally;

/// Bytes in front of every block; also keeps malloc's 16-byte alignment.
pub const TAG: usize = 16;

pub struct CountingAllocator;

/// Offset from the malloc'd base to the pointer handed out.
#[inline]
fn offset(layout: &Layout) -> usize {
    layout.align().max(TAG)
}

#[inline]
fn usable(base: *mut u8) -> usize {
    // SAFETY: base is a live block from this process's malloc.
    unsafe { libc::malloc_usable_size(base as *mut libc::c_void) }
}

/// Charges a fresh block at `base` (malloc'd for `request` bytes) and returns the
/// pointer to hand out.
///
/// # Safety
/// `base` must be a live malloc block of at least `offset(layout) + layout.size()` bytes.
#[inline]
unsafe fn tag(base: *mut u8, layout: &Layout, category: Category) -> *mut u8 {
    let off = offset(layout);
    let request = off + layout.size();
    let slack = usable(base).saturating_sub(request);
    tally::add(category, request as i64, slack as i64, 1);
    let p = base.add(off);
    *p.sub(TAG) = category as u8;
    p
}

/// The block's base and its category.
///
/// # Safety
/// `p` must have come from `tag` with the same layout.
#[inline]
unsafe fn untag(p: *mut u8, layout: &Layout) -> (*mut u8, Category) {
    let raw = *p.sub(TAG);
    let category = Category::ALL
        .get(raw as usize)
        .copied()
        .unwrap_or(Category::Misc);
    (p.sub(offset(layout)), category)
}

#[inline]
fn release(base: *mut u8, layout: &Layout, category: Category) {
    let request = offset(layout) + layout.size();
    let slack = usable(base).saturating_sub(request);
    tally::add(category, -(request as i64), -(slack as i64), -1);
}

/// malloc for a layout with room for the tag in front.
fn raw_alloc(layout: &Layout, zeroed: bool) -> *mut u8 {
    let size = match offset(layout).checked_add(layout.size()) {
        Some(s) => s,
        None => return std::ptr::null_mut(),
    };
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
    category::note_allocation();
    let base = raw_alloc(&layout, zeroed);
    if base.is_null() {
        return base;
    }
    // SAFETY: base is a fresh block of offset + size bytes.
    unsafe { tag(base, &layout, category) }
}

// SAFETY: blocks come from malloc/posix_memalign with at least the layout's size and
// alignment after the tag offset; dealloc and realloc undo exactly that offset.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        alloc_in(layout, category::current(), false)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        alloc_in(layout, category::current(), true)
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let (base, category) = untag(p, &layout);
        release(base, &layout, category);
        libc::free(base as *mut libc::c_void);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (base, category) = untag(p, &layout);
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        if layout.align() > TAG {
            // posix_memalign has no realloc: move, keeping the block's category.
            let q = alloc_in(new_layout, category, false);
            if !q.is_null() {
                std::ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                self.dealloc(p, layout);
            }
            return q;
        }
        let Some(size) = TAG.checked_add(new_size) else {
            return std::ptr::null_mut();
        };
        category::note_allocation();
        // Released before the call: after it the old block may be gone. On failure
        // the old block stays and is charged again.
        release(base, &layout, category);
        let nb = libc::realloc(base as *mut libc::c_void, size) as *mut u8;
        if nb.is_null() {
            tag(base, &layout, category);
            return nb;
        }
        tag(nb, &new_layout, category)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::category::scope;

    // The test binary runs under this allocator too (lib.rs sets it for every build),
    // so these go through the real path. Tallies are process-wide and other tests run
    // in parallel, so these check the tags; tests/memory_accounting.rs checks tallies.

    fn category_of<T>(p: *const T) -> u8 {
        // Through an opaque integer: to the compiler the tag lies outside the Vec's
        // allocation, and a read it can see through would be undefined behaviour.
        let addr = std::hint::black_box(p as usize);
        // SAFETY: addr is a live block from the global allocator with align <= TAG,
        // whose malloc'd base is TAG bytes below.
        unsafe { *((addr - TAG) as *const u8) }
    }

    #[test]
    fn a_block_carries_the_category_of_its_scope() {
        let v: Vec<u8> = {
            let _s = scope(Category::LineTables);
            Vec::with_capacity(1000)
        };
        assert_eq!(category_of(v.as_ptr()), Category::LineTables as u8);
        let w: Vec<u8> = Vec::with_capacity(1000);
        assert_eq!(category_of(w.as_ptr()), Category::Misc as u8);
    }

    #[test]
    fn realloc_keeps_the_category_and_has_room_for_the_tag() {
        let mut v: Vec<u64> = {
            let _s = scope(Category::ClassRegistry);
            Vec::with_capacity(3)
        };
        {
            let _other = scope(Category::JfrBuffers);
            v.reserve_exact(5000);
        }
        assert_eq!(category_of(v.as_ptr()), Category::ClassRegistry as u8);
        let base = std::hint::black_box(v.as_ptr() as usize) - TAG;
        let u = usable(base as *mut u8);
        assert!(u >= v.capacity() * 8 + TAG);
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
