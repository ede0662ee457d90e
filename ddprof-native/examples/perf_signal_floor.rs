//! What a perf_events `cpu-clock` sample costs the sampled thread before any profiler code
//! runs: the timer interrupt, the overflow and the signal's delivery and return, with a
//! handler that only counts (and, with `read`, also reads the fd's count and asks for the tid,
//! as ddprof's handler does before it walks). Work per CPU-second of one busy thread with
//! the fd against without it, alternating rounds; the fd is set up by the engine's own code
//! (`engine::perf::open_routed`). `nosignal` keeps the fd but routes no signal: the timer alone.
//!
//!     cargo run --release --example perf_signal_floor -- [ROUNDS] [SECONDS] [PERIOD_NS]
//!
//! Results: docs/benchmarks.md ("The floor of a 1 ms perf_events sample").

use std::ffi::c_int;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use javaProfiler::engine::perf::open_routed;
use javaProfiler::sample::perf::{IOC_DISABLE, IOC_ENABLE};
use javaProfiler::sample::signal::read_info;

static SIGNALS: AtomicU64 = AtomicU64::new(0);
static READ_COUNT: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_prof(_sig: c_int, info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    SIGNALS.fetch_add(1, Ordering::Relaxed);
    if READ_COUNT.load(Ordering::Relaxed) != 0 {
        let mut count = 0u64;
        // SAFETY: `info` is the kernel's siginfo of this SA_SIGINFO handler (the engine's own
        // reader takes `si_fd` from it); read and gettid are async-signal-safe.
        unsafe {
            let fd = read_info(info).fd;
            libc::read(fd, (&mut count as *mut u64).cast(), 8);
            libc::syscall(libc::SYS_gettid);
        }
    }
}

fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// Ops of a fixed floating-point loop done in `secs` of this thread's CPU time.
fn work(secs: f64) -> u64 {
    let end = cpu_seconds() + secs;
    let (mut ops, mut x) = (0u64, 1.0f64);
    while cpu_seconds() < end {
        for _ in 0..20_000 {
            x = black_box(x * 1.000_000_1 + 0.000_001);
        }
        ops += 1;
    }
    black_box(x);
    ops
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let arg = |i: usize, d: f64| {
        std::env::args()
            .nth(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let (rounds, secs, period) = (arg(1, 6.0) as usize, arg(2, 3.0), arg(3, 1e6) as u64);
    // SAFETY: installing a handler that only touches atomics and async-signal-safe calls.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_prof as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigaction(libc::SIGPROF, &sa, std::ptr::null_mut());
    }
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    println!("period {period} ns, {rounds} rounds of {secs} s CPU per run, one thread");
    println!("| handler | work/CPU-s vs no fd, median [min-max] | signals/CPU-s | extra CPU µs per signal, median |");
    println!("|---|---|---|---|");
    for (label, read, signal) in [
        ("none (fd, no signal)", false, false),
        ("empty", false, true),
        ("read + gettid", true, true),
    ] {
        READ_COUNT.store(read as u64, Ordering::Relaxed);
        let (mut ratios, mut costs, mut rates) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let base = work(secs);
            let fd = match open_routed(tid, period) {
                Ok(fd) => fd,
                Err(e) => {
                    eprintln!("perf_event_open refused (errno {e}): see perf_event_paranoid");
                    std::process::exit(1);
                }
            };
            // SAFETY: our own fd; F_SETFL 0 drops O_ASYNC (no signal) for the timer-only run.
            unsafe {
                if !signal {
                    libc::fcntl(fd, libc::F_SETFL, 0);
                }
                libc::ioctl(fd, IOC_ENABLE, 0);
            }
            let before = SIGNALS.load(Ordering::Relaxed);
            let ops = work(secs);
            // SAFETY: our own fd.
            unsafe {
                libc::ioctl(fd, IOC_DISABLE, 0);
                libc::close(fd);
            }
            let n = if signal {
                (SIGNALS.load(Ordering::Relaxed) - before) as f64
            } else {
                secs * 1e9 / period as f64
            };
            let ratio = ops as f64 / base as f64;
            // Extra CPU per op, times ops, per signal.
            let extra = (secs / ops as f64 - secs / base as f64) * ops as f64 / n * 1e6;
            ratios.push(ratio);
            costs.push(extra);
            rates.push(n / secs);
        }
        let lo = ratios.iter().copied().fold(f64::MAX, f64::min);
        let hi = ratios.iter().copied().fold(f64::MIN, f64::max);
        println!(
            "| {label} | {:.3} [{lo:.3}-{hi:.3}] | {:.0} | {:.1} |",
            median(ratios),
            median(rates),
            median(costs)
        );
    }
}
