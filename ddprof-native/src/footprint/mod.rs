//! Accounting of the profiler's own native memory, measured: every byte the core
//! allocates is charged to one category (heap blocks through the counting global
//! allocator, big signal-path tables through `Mapped`), the allocator's own cost is
//! read from `malloc_usable_size` plus a probed per-chunk header, and glibc's arena
//! state comes from `mallinfo2`. docs/footprint.md explains the figures and how they
//! reconcile with the process RSS.

mod allocator;
mod category;
mod malloc;
mod mapped;
mod scope;
mod tally;

use std::sync::atomic::{AtomicI64, Ordering};

pub use allocator::{CountingAllocator, LARGE, TAG};
pub use category::{Category, Kind};
pub use malloc::{allocator, arena, header, probe_header, Allocator, MallInfo2};
pub use mapped::{charge_kernel_mapping, measure_resident, page_size, resident, Mapped, Zeroable};
pub use scope::{current, scope, thread_allocations, Scope};
pub use tally::{flush, of, snapshot, total, Figures};

use crate::counters::{self, Counter};

/// Gauge families with a total and one gauge per category (upstream's names).
const FAMILIES: [&str; 4] = [
    "native_mem_live_bytes",
    "native_mem_max_bytes",
    "native_mem_avg_bytes",
    "native_mem_chunk_overhead_bytes",
];
const RESIDENT: &str = "native_mem_resident_bytes";
/// Oldest resident-page figures a chunk reports (see `refresh`).
const RESIDENT_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(6);

const fn mapped_categories() -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < Category::ALL.len() {
        if matches!(Category::ALL[i].kind(), Kind::Mapped) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// Slots the memory gauges take after the counter table.
pub const GAUGES: usize = FAMILIES.len() * (1 + category::COUNT) + mapped_categories();
const _: () = assert!(
    GAUGES <= counters::GAUGE_SLOTS,
    "raise counters::GAUGE_SLOTS"
);

/// Names of the memory gauges, in slot order: each family's total then its categories,
/// then the resident bytes of each mapped category.
pub fn gauge_names() -> Vec<String> {
    let mut names = Vec::with_capacity(GAUGES);
    for family in FAMILIES {
        names.push(family.to_string());
        for c in Category::ALL {
            names.push(format!("{family}.{}", c.name()));
        }
    }
    for c in Category::ALL.iter().filter(|c| c.kind() == Kind::Mapped) {
        names.push(format!("{RESIDENT}.{}", c.name()));
    }
    names
}

/// Live totals sampled at each chunk since `start`, for the averages.
static AVG_SUM: [AtomicI64; 1 + category::COUNT] =
    [const { AtomicI64::new(0) }; 1 + category::COUNT];
static AVG_SAMPLES: AtomicI64 = AtomicI64::new(0);

/// Peaks and averages start again from now (on `start`); live bytes are memory that
/// exists and carry on.
pub fn on_start() {
    tally::reset_peaks();
    for s in AVG_SUM.iter() {
        s.store(0, Ordering::Relaxed);
    }
    AVG_SAMPLES.store(0, Ordering::Relaxed);
}

/// Bytes the allocator adds on top of what was asked: measured rounding plus the
/// probed header per block (none for mappings: their rounding is all there is).
fn overhead(category: Option<Category>, f: &Figures, all: &[(Option<Category>, Figures)]) -> i64 {
    let header = header() as i64;
    let heap_blocks = match category {
        Some(c) if c.kind() == Kind::Mapped => 0,
        Some(_) => f.blocks,
        None => {
            f.blocks
                - all
                    .iter()
                    .filter(|(c, _)| c.is_some_and(|c| c.kind() == Kind::Mapped))
                    .map(|(_, f)| f.blocks)
                    .sum::<i64>()
        }
    };
    f.slack + header * heap_blocks
}

/// Total then every category, from one consistent point (tally::snapshot).
fn consistent_figures() -> [(Option<Category>, Figures); 1 + category::COUNT] {
    let (total, per) = tally::snapshot();
    let mut out = [(None, total); 1 + category::COUNT];
    for ((slot, c), f) in out[1..].iter_mut().zip(Category::ALL).zip(per) {
        *slot = (Some(*c), f);
    }
    out
}

/// Writes every memory gauge and the `malloc_*` gauges into the counter table. With
/// `sample`, this point also counts towards the averages (once per chunk). Dump path
/// and getDebugCounters only: mallinfo2 takes every arena lock.
pub fn refresh(sample: bool) {
    let per = consistent_figures();
    let samples = if sample {
        for (i, (_, f)) in per.iter().enumerate() {
            AVG_SUM[i].fetch_add(f.live, Ordering::Relaxed);
        }
        AVG_SAMPLES.fetch_add(1, Ordering::Relaxed) + 1
    } else {
        AVG_SAMPLES.load(Ordering::Relaxed)
    };
    let n = per.len();
    for (i, (cat, f)) in per.iter().enumerate() {
        let avg = if samples > 0 {
            AVG_SUM[i].load(Ordering::Relaxed) / samples
        } else {
            f.live
        };
        counters::set_gauge(i, f.live);
        counters::set_gauge(n + i, f.peak.max(f.live));
        counters::set_gauge(2 * n + i, avg);
        counters::set_gauge(3 * n + i, overhead(*cat, f, &per));
    }
    // A chunk's figures may be a few seconds old (the library watcher measures about every
    // five seconds, `MEASURE_EVERY`); a caller of getDebugCounters gets them measured now.
    let resident = if sample {
        mapped::resident_recent(RESIDENT_MAX_AGE)
    } else {
        measure_resident()
    };
    for (j, c) in Category::ALL
        .iter()
        .filter(|c| c.kind() == Kind::Mapped)
        .enumerate()
    {
        counters::set_gauge(4 * n + j, resident[*c as usize]);
    }

    Counter::MallocHeaderBytes.set(header() as i64);
    Counter::MallocIsGlibc.set(matches!(allocator(), Allocator::Glibc { .. }) as i64);
    // -1: unknown for this allocator (documented), never glibc's idle numbers.
    let a = arena();
    let field = |f: fn(&MallInfo2) -> usize| a.as_ref().map_or(-1, |a| f(a) as i64);
    Counter::MallocArenaBytes.set(field(|a| a.arena));
    Counter::MallocInUseBytes.set(field(|a| a.uordblks));
    Counter::MallocFreeHeldBytes.set(field(|a| a.fordblks));
    Counter::MallocTrimmableBytes.set(field(|a| a.keepcost));
    Counter::MallocMmapBytes.set(field(|a| a.hblkhd));
}
