//! The wall-clock thread filter: the threads registered with `addThread()` and not removed
//! since. The tracer calls `addThread`/`removeThread` on every span activation, so both are
//! one relaxed store once a thread has its cell: a thread takes a cell at its first
//! registration (under a lock, from a free list or a new page of cells) and keeps it until it
//! exits (`release`, from its context's destructor), writing its tid there to register and
//! 0 to deregister. The sampler thread reads every cell handed out (`collect`). Pages of 1,024
//! cells are added as needed and never freed (the handler reaches its thread's cell through
//! the thread's context), so there is no ceiling short of 4 million threads registered at
//! once (upstream stops at 2,048, silently). A cell also carries the thread's owned blocked
//! run (`sample::block_run`).

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::counters::Counter;
use crate::footprint::{self, Category};
use crate::sample::block_run::FilterCell;
use crate::sample::context::{gettid, ThreadContext};

const PAGE: usize = 1024;
const MAX_PAGES: usize = 4096;

type Page = [FilterCell; PAGE];

static PAGES: [AtomicPtr<Page>; MAX_PAGES] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_PAGES];
/// Cells handed out so far (the sampler reads `0..USED`).
static USED: AtomicUsize = AtomicUsize::new(0);
/// Registered threads now (a gauge).
static REGISTERED: AtomicUsize = AtomicUsize::new(0);
/// Cells of exited threads, for reuse.
static FREE: Mutex<Vec<&'static FilterCell>> = Mutex::new(Vec::new());

/// A cell for a thread: a freed one, else the next, mapping its page if new.
fn allocate() -> Option<&'static FilterCell> {
    let mut free = FREE.lock();
    if let Some(c) = free.pop() {
        return Some(c);
    }
    let slot = USED.load(Ordering::Relaxed);
    let entry = PAGES.get(slot / PAGE)?;
    let mut page = entry.load(Ordering::Acquire);
    if page.is_null() {
        let _mem = footprint::scope(Category::ThreadInfo);
        let p: Box<Page> = Box::new(std::array::from_fn(|_| FilterCell::default()));
        page = Box::into_raw(p);
        entry.store(page, Ordering::Release);
        let pages = slot / PAGE + 1;
        Counter::ThreadFilterPages.set(pages as i64);
        Counter::ThreadFilterBytes.set((pages * std::mem::size_of::<Page>()) as i64);
    }
    // Published after the page: the sampler never reads a cell of an unmapped page.
    USED.store(slot + 1, Ordering::Release);
    // SAFETY: a published page is a leaked Box, never freed.
    unsafe { page.as_ref() }?.get(slot % PAGE)
}

/// The calling thread's cell (its context is `c`), taken at the first call.
pub fn cell(c: &ThreadContext) -> Option<&'static FilterCell> {
    if let Some(cell) = c.filter_cell() {
        return Some(cell);
    }
    let cell = allocate()?;
    c.filter_cell.store(
        cell as *const FilterCell as *mut FilterCell,
        Ordering::Release,
    );
    Some(cell)
}

/// Registers (`on`) or deregisters the calling thread, whose context is `c`.
pub fn set(c: &ThreadContext, on: bool) {
    let cell = if on { cell(c) } else { c.filter_cell() };
    let Some(cell) = cell else { return };
    let value = if on { gettid() } else { 0 };
    let was = cell.tid.swap(value, Ordering::Relaxed);
    match (was != 0, on) {
        (false, true) => {
            REGISTERED.fetch_add(1, Ordering::Relaxed);
        }
        (true, false) => {
            REGISTERED.fetch_sub(1, Ordering::Relaxed);
        }
        _ => {}
    }
}

/// The thread of `c` is exiting: its cell is emptied and freed for another thread.
pub fn release(c: &ThreadContext) {
    let cell = c.filter_cell.swap(std::ptr::null_mut(), Ordering::Relaxed);
    // SAFETY: as in `ThreadContext::filter_cell`.
    let Some(cell) = (unsafe { cell.as_ref() }) else {
        return;
    };
    if cell.tid.load(Ordering::Relaxed) != 0 {
        REGISTERED.fetch_sub(1, Ordering::Relaxed);
    }
    cell.clear();
    let _mem = footprint::scope(Category::ThreadInfo);
    FREE.lock().push(cell);
}

/// Appends every registered thread to `out`: its tid and its cell.
pub fn collect(out: &mut Vec<(i32, Option<&'static FilterCell>)>) {
    let used = USED.load(Ordering::Acquire);
    for page in 0..used.div_ceil(PAGE) {
        let Some(p) = PAGES.get(page) else { break };
        // SAFETY: as in `allocate`.
        let Some(p) = (unsafe { p.load(Ordering::Acquire).as_ref() }) else {
            break;
        };
        let n = (used - page * PAGE).min(PAGE);
        out.extend(p.iter().take(n).filter_map(|c| {
            let tid = c.tid.load(Ordering::Relaxed);
            (tid != 0).then_some((tid, Some(c)))
        }));
    }
    Counter::ThreadFilterThreads.set(REGISTERED.load(Ordering::Relaxed) as i64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_survives_thousands_of_threads_and_slots_are_reused() {
        // More threads than upstream's 2,048 slots, each registering once.
        for _batch in 0..6 {
            let handles: Vec<_> = (0..500)
                .map(|_| {
                    std::thread::spawn(|| {
                        let c = ThreadContext::default();
                        set(&c, true);
                        let tid = gettid();
                        let mut seen = Vec::new();
                        collect(&mut seen);
                        assert!(seen.iter().any(|&(t, _)| t == tid));
                        set(&c, false);
                        set(&c, true);
                        set(&c, false);
                        let mut seen = Vec::new();
                        collect(&mut seen);
                        assert!(!seen.iter().any(|&(t, _)| t == tid));
                        release(&c);
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        }
        // Cells of exited threads came back: far fewer handed out than threads.
        assert!(USED.load(Ordering::Relaxed) < 3000);
    }
}
