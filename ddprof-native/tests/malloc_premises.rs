//! The premises behind the chunk-overhead and arena gauges, measured on the allocator
//! actually serving malloc. The figures printed here (`--nocapture`) are the ones in
//! docs/footprint.md. One test per process: glibc's state is process-wide.
//!
//! Under LD_PRELOAD of Debian's libjemalloc2 the same binary checks the other side:
//! header 0, arena figures unavailable (`jemalloc_side`, run by the glibc side in a
//! child process).

use std::process::Command;

use javaProfiler::footprint::{self, Allocator, Category, LARGE};

const JEMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
const CHILD: &str = "DDPROF_MALLOC_PREMISES_CHILD";

fn rss() -> usize {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn mib(b: usize) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// Slack our tally records for one block vs what malloc_usable_size says directly.
fn check_large_block(label: &str) -> usize {
    const SIZE: usize = 512 << 10;
    let before = footprint::of(Category::JfrBuffers);
    let v: Vec<u8> = {
        let _s = footprint::scope(Category::JfrBuffers);
        Vec::with_capacity(SIZE)
    };
    let after = footprint::of(Category::JfrBuffers);
    // Large blocks are listed, not tagged: v's pointer is malloc's.
    const _: () = assert!(SIZE >= LARGE);
    // SAFETY: v's buffer is a live malloc block.
    let usable = unsafe { libc::malloc_usable_size(v.as_ptr() as *mut libc::c_void) };
    let slack = usable - SIZE;
    assert_eq!(after.live - before.live, SIZE as i64);
    assert_eq!(after.slack - before.slack, slack as i64, "{label}");
    println!("512 KiB block, {label}: usable {usable}, measured slack {slack} B");
    drop(v);
    slack
}

fn jemalloc_side() {
    assert!(
        matches!(footprint::allocator(), Allocator::Other(f) if f.contains("jemalloc")),
        "{:?}",
        footprint::allocator()
    );
    assert_eq!(footprint::header(), 0);
    assert!(footprint::arena().is_none());
    // Overhead is only the size-class rounding malloc_usable_size shows.
    check_large_block("jemalloc");
    println!("jemalloc: header 0, arena unavailable");
}

/// 26,000 blocks of 6 KiB allocated then all freed, then the same with every other
/// block kept live. Returns nothing; prints the figures and asserts the directions.
fn churn(arena_name: &str, expect_shrink: bool) {
    const N: usize = 26_000;
    const BLOCK: usize = 6 << 10;
    let a0 = footprint::arena().unwrap();
    let mut blocks: Vec<Vec<u8>> = (0..N).map(|_| vec![1u8; BLOCK]).collect();
    let a1 = footprint::arena().unwrap();
    let grown = a1.arena + a1.hblkhd - a0.arena - a0.hblkhd;
    assert!(grown >= N * BLOCK * 9 / 10, "arena grew {grown}");
    blocks.clear();
    blocks.shrink_to_fit();
    let a2 = footprint::arena().unwrap();
    let rss_before = rss();
    // SAFETY: malloc_trim has no preconditions.
    unsafe { libc::malloc_trim(0) };
    let trimmed = rss_before.saturating_sub(rss());
    println!(
        "{arena_name}, all freed: arena {:.1} -> {:.1} -> {:.1} MiB, free-held {:.1} MiB; \
         malloc_trim(0) then returned {:.1} MiB of RSS",
        mib(a0.arena),
        mib(a1.arena),
        mib(a2.arena),
        mib(a2.fordblks),
        mib(trimmed)
    );
    if expect_shrink {
        assert!(
            a2.arena < a0.arena + N * BLOCK / 4,
            "the arena did not shrink"
        );
    } else {
        // What stays is held free, and trim can return it.
        assert!(a2.fordblks + a0.arena >= a2.arena.saturating_sub(N * BLOCK / 4));
    }

    // Interleaved: every other block stays live; the freed ones are stranded between them.
    let mut blocks: Vec<Option<Vec<u8>>> = (0..N).map(|_| Some(vec![1u8; BLOCK])).collect();
    for b in blocks.iter_mut().step_by(2) {
        *b = None;
    }
    let a3 = footprint::arena().unwrap();
    let rss_before = rss();
    // SAFETY: as above.
    unsafe { libc::malloc_trim(0) };
    let reclaimed = rss_before.saturating_sub(rss());
    let a4 = footprint::arena().unwrap();
    // Free-held right after the first phase may be large (thread arenas keep it), but
    // the new blocks reuse that space first: what is free now is the holes.
    let stranded = a3.fordblks;
    println!(
        "{arena_name}, every other freed: arena {:.1} MiB, free-held {:.1} MiB; \
         malloc_trim(0) returned {:.1} MiB of RSS, free-held after {:.1} MiB",
        mib(a3.arena),
        mib(a3.fordblks),
        mib(reclaimed),
        mib(a4.fordblks)
    );
    assert!(
        stranded >= N / 2 * BLOCK * 9 / 10,
        "free-held grew {stranded}"
    );
    // Trim gives back only whole pages inside the holes: less than what is held.
    assert!(
        reclaimed < stranded,
        "trim reclaimed {reclaimed} of {stranded}"
    );
    drop(blocks);
    // SAFETY: as above.
    unsafe { libc::malloc_trim(0) };
}

fn glibc_side() {
    assert!(matches!(
        footprint::allocator(),
        Allocator::Glibc { mallinfo2: Some(_) }
    ));

    // Header: 8 on glibc, probed; 96 B costs 112 B.
    assert_eq!(footprint::header(), 8);
    assert_eq!(footprint::probe_header(96), 8);
    println!("glibc: header {} B", footprint::header());

    // Large blocks: glibc's mmap threshold moves when an mmapped block is freed, so the
    // same request is mmapped the first time and carved from the heap the next; both
    // figures are what malloc_usable_size says, never a formula.
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        let first = check_large_block("first (mmapped)");
        let second = check_large_block("second (heap, threshold raised)");
        assert_ne!(
            first, second,
            "the allocator state should change the overhead"
        );
    }

    // The main thread allocates from the brk heap (main arena); every other thread,
    // so every JVM thread the profiler runs on, from an mmapped secondary arena.
    churn("main arena", true);
    std::thread::spawn(|| churn("thread arena", false))
        .join()
        .unwrap();
}

/// Not the libtest harness (Cargo.toml: harness = false): the churn must run on the
/// main thread to see the main arena.
fn main() {
    if std::env::var_os(CHILD).is_some() {
        return jemalloc_side();
    }
    if std::env::var_os("LD_PRELOAD").is_some() {
        eprintln!("malloc_premises: LD_PRELOAD set, the glibc premises do not apply");
        return;
    }
    glibc_side();

    // The other allocator: this binary again under LD_PRELOAD of jemalloc.
    assert!(
        std::path::Path::new(JEMALLOC).exists(),
        "{JEMALLOC} missing: install Debian's libjemalloc2 (scripts/test.sh does)"
    );
    let out = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, "1")
        .env("LD_PRELOAD", JEMALLOC)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    print!("{text}");
    assert!(out.status.success(), "jemalloc side failed:\n{text}");
    assert!(text.contains("jemalloc: header 0"), "{text}");
    println!("malloc_premises: ok");
}
