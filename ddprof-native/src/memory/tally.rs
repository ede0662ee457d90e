//! Running byte counts per category, updated by the allocator and `Mapped` on every
//! allocation and free (plain atomics: any thread, never a lock).
//!
//! `live` is what the profiler asked for: the requested size plus the allocator's
//! 16-byte category tag for heap blocks under 4 KiB, the requested length for mapped
//! regions.
//! `slack` is what the allocator rounded on top (usable size minus request, or the
//! page rounding of a mapping); the probed per-chunk header is added at read time
//! (`blocks` x header), because it is only known once probed.

use std::sync::atomic::{AtomicI64, Ordering};

use super::category::{Category, COUNT};

#[repr(align(64))]
struct Cell {
    live: AtomicI64,
    peak: AtomicI64,
    slack: AtomicI64,
    blocks: AtomicI64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Cell = Cell {
    live: AtomicI64::new(0),
    peak: AtomicI64::new(0),
    slack: AtomicI64::new(0),
    blocks: AtomicI64::new(0),
};

static CELLS: [Cell; COUNT] = [ZERO; COUNT];
// The total is kept on its own, not summed, so that the partition can be checked and
// its peak is the real peak of the sum (not the sum of the per-category peaks).
static TOTAL: Cell = ZERO;

/// One category's figures at a point in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub live: i64,
    pub peak: i64,
    pub slack: i64,
    pub blocks: i64,
}

fn add_to(cell: &Cell, live: i64, slack: i64, blocks: i64) {
    let now = cell.live.fetch_add(live, Ordering::Relaxed) + live;
    cell.slack.fetch_add(slack, Ordering::Relaxed);
    cell.blocks.fetch_add(blocks, Ordering::Relaxed);
    if live > 0 {
        cell.peak.fetch_max(now, Ordering::Relaxed);
    }
}

/// Charges (positive) or releases (negative) bytes to a category and the total.
#[inline]
pub fn add(category: Category, live: i64, slack: i64, blocks: i64) {
    add_to(&CELLS[category as usize], live, slack, blocks);
    add_to(&TOTAL, live, slack, blocks);
}

fn read(cell: &Cell) -> Figures {
    Figures {
        live: cell.live.load(Ordering::Relaxed),
        peak: cell.peak.load(Ordering::Relaxed),
        slack: cell.slack.load(Ordering::Relaxed),
        blocks: cell.blocks.load(Ordering::Relaxed),
    }
}

pub fn of(category: Category) -> Figures {
    read(&CELLS[category as usize])
}

pub fn total() -> Figures {
    read(&TOTAL)
}

/// Peaks start again from what is live now (on `start`).
pub fn reset_peaks() {
    for cell in CELLS.iter().chain(std::iter::once(&TOTAL)) {
        cell.peak
            .store(cell.live.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}
