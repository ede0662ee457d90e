//! Zero-filled boxed slices from `alloc_zeroed`: large ones come straight from mmap, so
//! their pages are committed only when first written.

use std::alloc::{alloc_zeroed, handle_alloc_error, Layout};

/// Types for which all-zero bytes are a valid value.
///
/// # Safety
/// Implementors must be valid when every byte is zero.
pub unsafe trait Zeroable {}

/// A boxed slice of `len` zeroed values.
pub fn boxed<T: Zeroable>(len: usize) -> Box<[T]> {
    if len == 0 || std::mem::size_of::<T>() == 0 {
        return Vec::new().into_boxed_slice();
    }
    let layout = Layout::array::<T>(len).expect("slice layout");
    // SAFETY: layout has non-zero size; T is valid when zeroed (Zeroable), and the
    // pointer/len pair comes from an allocation of exactly this layout, which is what
    // Box<[T]> frees.
    unsafe {
        let p = alloc_zeroed(layout) as *mut T;
        if p.is_null() {
            handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, len))
    }
}
