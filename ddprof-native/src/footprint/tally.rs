//! Running byte counts per category, updated by the allocator and `Mapped` on every
//! allocation and free.
//!
//! `live` is what the profiler asked for: the requested size plus the allocator's
//! 16-byte category tag for heap blocks under 4 KiB, the requested length for mapped
//! regions. `slack` is what the allocator rounded on top (usable size minus request, or
//! the page rounding of a mapping); the probed per-chunk header is added at read time
//! (`blocks` x header), because it is only known once probed.
//!
//! Each thread gathers its changes and publishes them to the shared atomics every 64
//! changes or 64 KiB, when its outermost `scope` ends, before it reads the figures, and
//! when it exits: an atomic read-modify-write costs ~10 ns here, and publishing every
//! change took an allocation from 13 ns to 180 ns. The shared figures therefore lag each
//! thread by less than that batch, and peaks are seen at batch granularity.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

use super::category::{Category, COUNT};

#[repr(align(64))]
struct Shared {
    live: AtomicI64,
    peak: AtomicI64,
    slack: AtomicI64,
    blocks: AtomicI64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Shared = Shared {
    live: AtomicI64::new(0),
    peak: AtomicI64::new(0),
    slack: AtomicI64::new(0),
    blocks: AtomicI64::new(0),
};

static CELLS: [Shared; COUNT] = [ZERO; COUNT];
// The total is kept on its own, not summed, so that the partition can be checked and
// its peak is the real peak of the sum (not the sum of the per-category peaks).
static TOTAL: Shared = ZERO;

// Publications in progress and completed, so that a reader can take a snapshot in which
// the categories and the total agree (a category is updated before the total).
static IN_FLIGHT: AtomicI64 = AtomicI64::new(0);
static PUBLISHED: AtomicI64 = AtomicI64::new(0);

/// Runs one publication (categories, then the total) where `consistent` can see it.
fn publication(f: impl FnOnce()) {
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    f();
    PUBLISHED.fetch_add(1, Ordering::SeqCst);
    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
}

/// Runs `read` until no publication overlapped it. Publications are short and come at
/// most every 64 changes per thread, so this ends quickly, unless a publishing thread is
/// descheduled mid-way on a loaded host: after a second it returns the last read (a
/// bound, so that a dump never waits longer; 200 ms was seen to pass on a 2-CPU host at
/// load 10).
pub fn consistent<T>(mut read: impl FnMut() -> T) -> T {
    flush();
    let mut value = read();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(1000);
    for attempt in 0u32.. {
        if attempt % 64 == 63 && std::time::Instant::now() > deadline {
            break;
        }
        let before = PUBLISHED.load(Ordering::SeqCst);
        if IN_FLIGHT.load(Ordering::SeqCst) != 0 {
            if attempt % 64 == 63 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        value = read();
        // The cell reads are relaxed: keep them before the re-check (weakly ordered CPUs).
        std::sync::atomic::fence(Ordering::Acquire);
        if IN_FLIGHT.load(Ordering::SeqCst) == 0 && PUBLISHED.load(Ordering::SeqCst) == before {
            break;
        }
    }
    value
}

/// One category's figures at a point in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub live: i64,
    pub peak: i64,
    pub slack: i64,
    pub blocks: i64,
}

fn publish(cell: &Shared, live: i64, slack: i64, blocks: i64) {
    let now = cell.live.fetch_add(live, Ordering::Relaxed) + live;
    if slack != 0 {
        cell.slack.fetch_add(slack, Ordering::Relaxed);
    }
    if blocks != 0 {
        cell.blocks.fetch_add(blocks, Ordering::Relaxed);
    }
    // A plain load first: the peak rarely moves, and a fetch_max is a CAS loop.
    if live > 0 && now > cell.peak.load(Ordering::Relaxed) {
        cell.peak.fetch_max(now, Ordering::Relaxed);
    }
}

const BATCH_CHANGES: u32 = 64;
const BATCH_BYTES: i64 = 64 << 10;

/// A thread's unpublished changes: (live, slack, blocks) per category.
struct Pending {
    deltas: [[Cell<i64>; 3]; COUNT],
    changes: Cell<u32>,
}

impl Pending {
    const fn new() -> Pending {
        Pending {
            deltas: [const { [const { Cell::new(0) }; 3] }; COUNT],
            changes: Cell::new(0),
        }
    }

    fn add(&self, category: Category, live: i64, slack: i64, blocks: i64) {
        let d = &self.deltas[category as usize];
        let pending_live = d[0].get() + live;
        d[0].set(pending_live);
        d[1].set(d[1].get() + slack);
        d[2].set(d[2].get() + blocks);
        let changes = self.changes.get() + 1;
        self.changes.set(changes);
        if changes >= BATCH_CHANGES || pending_live.abs() >= BATCH_BYTES {
            self.flush();
        }
    }

    fn flush(&self) {
        if self.changes.replace(0) == 0 {
            return;
        }
        publication(|| {
            let (mut live, mut slack, mut blocks) = (0, 0, 0);
            for (cell, d) in CELLS.iter().zip(&self.deltas) {
                let (l, s, b) = (d[0].replace(0), d[1].replace(0), d[2].replace(0));
                if (l, s, b) != (0, 0, 0) {
                    publish(cell, l, s, b);
                    live += l;
                    slack += s;
                    blocks += b;
                }
            }
            publish(&TOTAL, live, slack, blocks);
        });
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.flush();
    }
}

thread_local! {
    // Const-initialised; its destructor publishes what the thread still holds.
    static PENDING: Pending = const { Pending::new() };
}

/// Charges (positive) or releases (negative) bytes to a category and the total.
#[inline]
pub fn add(category: Category, live: i64, slack: i64, blocks: i64) {
    // While the thread's own state is being destroyed, publish directly.
    if PENDING
        .try_with(|p| p.add(category, live, slack, blocks))
        .is_err()
    {
        publication(|| {
            publish(&CELLS[category as usize], live, slack, blocks);
            publish(&TOTAL, live, slack, blocks);
        });
    }
}

/// Publishes the calling thread's pending changes.
pub fn flush() {
    let _ = PENDING.try_with(Pending::flush);
}

fn read(cell: &Shared) -> Figures {
    Figures {
        live: cell.live.load(Ordering::Relaxed),
        peak: cell.peak.load(Ordering::Relaxed),
        slack: cell.slack.load(Ordering::Relaxed),
        blocks: cell.blocks.load(Ordering::Relaxed),
    }
}

/// A category's published figures, after publishing the caller's own changes.
pub fn of(category: Category) -> Figures {
    flush();
    read(&CELLS[category as usize])
}

/// The total's published figures, after publishing the caller's own changes.
pub fn total() -> Figures {
    flush();
    read(&TOTAL)
}

/// The total and every category from one consistent point.
pub fn snapshot() -> (Figures, [Figures; COUNT]) {
    consistent(|| {
        let mut per = [Figures::default(); COUNT];
        for (f, cell) in per.iter_mut().zip(CELLS.iter()) {
            *f = read(cell);
        }
        (read(&TOTAL), per)
    })
}

/// Peaks start again from what is live now (on `start`).
pub fn reset_peaks() {
    flush();
    for cell in CELLS.iter().chain(std::iter::once(&TOTAL)) {
        cell.peak
            .store(cell.live.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}
