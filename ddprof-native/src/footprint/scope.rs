//! Which category this thread's allocations are charged to (`scope`), and how many it
//! made: thread-local state read by the counting allocator. Leaving a subsystem's
//! outermost scope publishes its batched figures (`tally::flush`).

use std::cell::Cell;

use super::category::Category;

thread_local! {
    // Const-initialised and without a destructor: readable from the allocator at any
    // point of a thread's life without allocating.
    static CURRENT: Cell<u8> = const { Cell::new(Category::Misc as u8) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Counts an allocation made on this thread.
#[inline]
pub(super) fn note_allocation() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

/// Allocations (and reallocations) this thread has made: the no-allocation tests of
/// the signal path read it.
pub fn thread_allocations() -> u64 {
    ALLOCATIONS.try_with(|c| c.get()).unwrap_or(0)
}

/// The category new allocations on this thread are charged to.
#[inline]
pub fn current() -> Category {
    let raw = CURRENT.try_with(|c| c.get()).unwrap_or(0);
    Category::from_raw(raw)
}

/// Charges this thread's allocations to `category` until the guard drops.
#[must_use = "the category applies only while the guard lives"]
pub fn scope(category: Category) -> Scope {
    let previous = CURRENT.try_with(|c| c.replace(category as u8)).unwrap_or(0);
    Scope { previous }
}

pub struct Scope {
    previous: u8,
}

impl Drop for Scope {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.set(self.previous));
        // Leaving a subsystem's outermost scope: publish what it did (tally.rs batches).
        if self.previous == Category::Misc as u8 {
            super::tally::flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        assert_eq!(current(), Category::Misc);
        {
            let _a = scope(Category::Dictionary);
            assert_eq!(current(), Category::Dictionary);
            {
                let _b = scope(Category::LineTables);
                assert_eq!(current(), Category::LineTables);
            }
            assert_eq!(current(), Category::Dictionary);
        }
        assert_eq!(current(), Category::Misc);
    }
}
