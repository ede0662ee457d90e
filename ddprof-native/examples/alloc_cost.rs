//! What the counting allocator adds per allocation: alloc + free pairs through it (the
//! library's global allocator, in force here too) vs straight to malloc, interleaved rounds.
//!
//!     cargo run --release --example alloc_cost
//!
//! Results: docs/benchmarks.md ("Own-memory accounting").

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::Instant;

use javaProfiler::footprint::{self, Category};

const PAIRS: usize = 2_000_000;

fn counted(size: usize) -> f64 {
    let _s = footprint::scope(Category::Dictionary);
    let t = Instant::now();
    for _ in 0..PAIRS {
        black_box(Vec::<u8>::with_capacity(black_box(size)));
    }
    t.elapsed().as_nanos() as f64 / PAIRS as f64
}

fn plain(size: usize) -> f64 {
    let layout = Layout::from_size_align(size, 8).unwrap();
    let t = Instant::now();
    for _ in 0..PAIRS {
        // SAFETY: a non-zero layout, freed with the same layout.
        unsafe {
            let p = System.alloc(black_box(layout));
            System.dealloc(black_box(p), layout);
        }
    }
    t.elapsed().as_nanos() as f64 / PAIRS as f64
}

fn main() {
    println!("| size | malloc+free ns | counted ns | ratio |");
    println!("|---:|---:|---:|---:|");
    for size in [24usize, 96, 1000, 6 << 10, 64 << 10] {
        let (mut p, mut c) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            p.push(plain(size));
            c.push(counted(size));
        }
        p.sort_by(f64::total_cmp);
        c.sort_by(f64::total_cmp);
        println!(
            "| {size} | {:.1} | {:.1} | {:.2} |",
            p[2],
            c[2],
            c[2] / p[2]
        );
    }
}
