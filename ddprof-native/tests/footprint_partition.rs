//! The categories partition the profiler's allocations: under concurrent allocation
//! from several threads, each in its own scopes, the categories add up to the
//! independently kept total, every byte comes back to the category that took it, and
//! `on_start` resets peaks to what is live. One test per process: the tallies are
//! process-wide.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use javaProfiler::footprint::{self, Category, Figures, Kind};

fn heap_categories() -> impl Iterator<Item = Category> {
    Category::ALL
        .iter()
        .copied()
        .filter(|c| c.kind() == Kind::Heap)
}

fn sum() -> Figures {
    Category::ALL.iter().fold(Figures::default(), |a, c| {
        let f = footprint::of(*c);
        Figures {
            live: a.live + f.live,
            peak: 0,
            slack: a.slack + f.slack,
            blocks: a.blocks + f.blocks,
        }
    })
}

fn assert_partition() {
    let (s, t) = (sum(), footprint::total());
    assert_eq!((s.live, s.slack, s.blocks), (t.live, t.slack, t.blocks));
}

#[test]
fn categories_partition_the_total_under_concurrency() {
    assert_partition();
    let before: Vec<Figures> = Category::ALL.iter().map(|c| footprint::of(*c)).collect();

    // A reader takes snapshots all along: each must add up while the writers run.
    static STOP: AtomicBool = AtomicBool::new(false);
    // Snapshots taken so far: the writers go on until there are enough of them, so that a
    // reader starved by a loaded host still checks its sums while the writers run.
    static SNAPSHOTS: AtomicU64 = AtomicU64::new(0);
    const MIN_SNAPSHOTS: u64 = 20;
    let reader = {
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !STOP.load(Ordering::Relaxed) {
                let (t, per) = footprint::snapshot();
                let live: i64 = per.iter().map(|f| f.live).sum();
                let blocks: i64 = per.iter().map(|f| f.blocks).sum();
                assert_eq!(
                    (live, blocks),
                    (t.live, t.blocks),
                    "snapshot {n} does not add up"
                );
                n += 1;
                SNAPSHOTS.store(n, Ordering::Relaxed);
            }
            n
        })
    };
    let threads: Vec<_> = (0..6)
        .map(|t| {
            std::thread::spawn(move || {
                let cats: Vec<Category> = heap_categories().collect();
                let mut kept: Vec<Vec<u8>> = Vec::new();
                let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ t;
                let mut i = 0u64;
                while i < 20_000 || SNAPSHOTS.load(Ordering::Relaxed) < MIN_SNAPSHOTS {
                    i += 1;
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let _s = footprint::scope(cats[(x % cats.len() as u64) as usize]);
                    let size = [8usize, 24, 96, 600, 6 << 10, 512 << 10][(x >> 8) as usize % 6];
                    let mut v = Vec::<u8>::with_capacity(size);
                    if i.is_multiple_of(3) {
                        // Grown under another scope: stays with its first category.
                        let _o = footprint::scope(cats[((x >> 16) % cats.len() as u64) as usize]);
                        v.reserve(size * 2);
                    }
                    v.push(1);
                    if kept.len() < 64 {
                        kept.push(v);
                    } else {
                        // Freed from whatever scope is current here.
                        kept[(x >> 24) as usize % 64] = v;
                    }
                }
                kept
            })
        })
        .collect();
    let kept: Vec<Vec<Vec<u8>>> = threads.into_iter().map(|h| h.join().unwrap()).collect();
    STOP.store(true, Ordering::Relaxed);
    let snapshots = reader.join().unwrap();
    assert!(snapshots >= MIN_SNAPSHOTS, "only {snapshots} snapshots");
    assert_partition();
    drop(kept);
    assert_partition();

    // Everything the threads took came back, category by category. Other allocations of
    // this test (the Vecs above) are misc and freed too.
    for (c, b) in Category::ALL.iter().zip(&before) {
        let now = footprint::of(*c);
        assert_eq!((now.live, now.blocks), (b.live, b.blocks), "{c:?}");
    }

    // Peaks: above live after the burst; back to live on start.
    let t = footprint::total();
    assert!(t.peak > t.live);
    footprint::on_start();
    let t = footprint::total();
    assert_eq!(t.peak, t.live);
    for c in Category::ALL {
        let f = footprint::of(*c);
        assert_eq!(f.peak, f.live, "{c:?}");
    }
}
