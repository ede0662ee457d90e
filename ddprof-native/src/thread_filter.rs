//! The wall-clock thread filter: the threads registered with `addThread()` and not removed
//! since. The tracer calls `addThread`/`removeThread` on every span activation, so both are
//! one relaxed store once a thread has its slot: a thread takes a slot at its first
//! registration (under a lock, from a free list or a new page of slots) and keeps it until it
//! exits (`release`, from its context's destructor), writing its tid there to register and
//! 0 to deregister. The sampler thread reads every slot handed out (`collect`). Pages of 1,024
//! slots are added as needed and never freed, so there is no ceiling short of 4 million
//! threads registered at once (upstream stops at 2,048, silently).

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::counters::Counter;
use crate::memory::{self, Category};
use crate::sample::context::{gettid, ThreadContext};

const PAGE: usize = 1024;
const MAX_PAGES: usize = 4096;

type Page = [AtomicI32; PAGE];

static PAGES: [AtomicPtr<Page>; MAX_PAGES] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_PAGES];
/// Slots handed out so far (the sampler reads `0..USED`).
static USED: AtomicUsize = AtomicUsize::new(0);
/// Registered threads now (a gauge).
static REGISTERED: AtomicUsize = AtomicUsize::new(0);
/// Slots of exited threads, for reuse.
static FREE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn cell(slot: usize) -> Option<&'static AtomicI32> {
    let page = PAGES.get(slot / PAGE)?.load(Ordering::Acquire);
    // SAFETY: a published page is a leaked Box, never freed.
    unsafe { page.as_ref() }?.get(slot % PAGE)
}

/// A slot for a thread: a freed one, else the next, mapping its page if new.
fn allocate() -> Option<usize> {
    let mut free = FREE.lock();
    if let Some(s) = free.pop() {
        return Some(s as usize);
    }
    let slot = USED.load(Ordering::Relaxed);
    let page = slot / PAGE;
    let entry = PAGES.get(page)?;
    if entry.load(Ordering::Acquire).is_null() {
        let _mem = memory::scope(Category::ThreadInfo);
        let p: Box<Page> = Box::new([const { AtomicI32::new(0) }; PAGE]);
        entry.store(Box::into_raw(p), Ordering::Release);
        Counter::ThreadFilterPages.set(page as i64 + 1);
        Counter::ThreadFilterBytes.set(((page + 1) * std::mem::size_of::<Page>()) as i64);
    }
    // Published after the page: the sampler never reads a slot of an unmapped page.
    USED.store(slot + 1, Ordering::Release);
    Some(slot)
}

/// Registers (`on`) or deregisters the calling thread, whose context is `c`.
pub fn set(c: &ThreadContext, on: bool) {
    let mut slot = c.filter_slot.load(Ordering::Relaxed);
    if slot == 0 {
        if !on {
            return;
        }
        let Some(s) = allocate() else { return };
        slot = s as u32 + 1;
        c.filter_slot.store(slot, Ordering::Relaxed);
    }
    let Some(cell) = cell(slot as usize - 1) else {
        return;
    };
    let value = if on { gettid() } else { 0 };
    let was = cell.swap(value, Ordering::Relaxed);
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

/// The thread of `c` is exiting: its slot is emptied and freed for another thread.
pub fn release(c: &ThreadContext) {
    let slot = c.filter_slot.swap(0, Ordering::Relaxed);
    if slot == 0 {
        return;
    }
    if let Some(cell) = cell(slot as usize - 1) {
        if cell.swap(0, Ordering::Relaxed) != 0 {
            REGISTERED.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let _mem = memory::scope(Category::ThreadInfo);
    FREE.lock().push(slot - 1);
}

/// Appends every registered tid to `out`.
pub fn collect(out: &mut Vec<i32>) {
    let used = USED.load(Ordering::Acquire);
    for page in 0..used.div_ceil(PAGE) {
        let Some(p) = PAGES.get(page) else { break };
        // SAFETY: as in `cell`.
        let Some(p) = (unsafe { p.load(Ordering::Acquire).as_ref() }) else {
            break;
        };
        let n = (used - page * PAGE).min(PAGE);
        out.extend(
            p.iter()
                .take(n)
                .map(|c| c.load(Ordering::Relaxed))
                .filter(|&t| t != 0),
        );
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
                        assert!(seen.contains(&tid));
                        set(&c, false);
                        set(&c, true);
                        set(&c, false);
                        let mut seen = Vec::new();
                        collect(&mut seen);
                        assert!(!seen.contains(&tid));
                        release(&c);
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        }
        // Slots of exited threads came back: far fewer handed out than threads.
        assert!(USED.load(Ordering::Relaxed) < 3000);
    }
}
