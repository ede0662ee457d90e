//! The wall-clock sampler thread ("WallClock (ASGCT)" as upstream names it; the stack is
//! walked by whichever walker the session resolved). Every tick it
//! 1. collects the candidates: the registered threads (`crate::context::thread_filter`) with the
//!    filter on, else every task of `/proc/self/task`, itself excepted;
//! 2. picks `walltpt` of them by reservoir sampling (each is chosen with probability
//!    min(1, walltpt / candidates));
//! 3. for each: under `wallprecheck`, a registered thread whose owned blocked run already has
//!    its sample (`sample::block_run`) is skipped (`wc_signals_suppressed_sampled_run`); else if
//!    idle-thread skipping is on and the thread's CPU clock has not advanced
//!    since its last wall sample finished, records that sample again without a signal
//!    (`sample::wall::record_idle`); else queues SIGVTALRM with our cookie through
//!    `rt_tgsigqueueinfo` (`sample::wall` handles it), counting failures: thread gone
//!    (ESRCH), permission denied (EPERM), queue full (EAGAIN);
//! 4. writes a `datadog.WallClockSamplingEpoch` when any count changed or a second passed;
//! 5. sleeps a Normal(interval, interval/10) draw clamped to [1 ns, 2 interval - 1].
//!
//! Not a signal handler: it may allocate and lock. Epoch events wait in a bounded buffer
//! taken by each dump ([`take_epochs`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::counters::Counter;
use crate::jfr::WallClockEpoch;
use crate::sample::block_run::FilterCell;
use crate::sample::context::gettid;
use crate::sample::handler;
use crate::sample::signal::{WALL_SIGNAL, WALL_SIGNAL_COOKIE};
use crate::sample::wall;

/// CPU time a thread may have used since its last wall sample's handler finished and still
/// count as idle: the handler's own return to the interrupted system call.
const IDLE_CPU_NS: u64 = 10_000;
/// Epoch events kept for the next dump at most.
const MAX_EPOCHS: usize = 4096;

static EPOCHS: Mutex<Vec<WallClockEpoch>> = Mutex::new(Vec::new());

/// The epoch events written since the previous call (each dump takes them).
pub fn take_epochs() -> Vec<WallClockEpoch> {
    std::mem::take(&mut *EPOCHS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// What a wall session asks for.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub interval_ns: u64,
    pub threads_per_tick: u32,
    /// Only registered threads (`addThread`).
    pub filter: bool,
    /// Record idle threads' last sample again instead of signalling them.
    pub skip_idle: bool,
    /// `wallprecheck`: no signal for a thread whose owned blocked run has its sample.
    pub precheck: bool,
}

struct Control {
    running: Mutex<bool>,
    wake: Condvar,
}

pub struct WallClock {
    config: Config,
    control: Arc<Control>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl WallClock {
    pub fn new(config: Config) -> WallClock {
        WallClock {
            config,
            control: Arc::new(Control {
                running: Mutex::new(false),
                wake: Condvar::new(),
            }),
            thread: Mutex::new(None),
        }
    }

    pub fn name(&self) -> &'static str {
        "WallClock (ASGCT)"
    }

    /// Starts the sampler thread.
    pub fn start(&self) -> Result<(), String> {
        *self
            .control
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = true;
        let control = self.control.clone();
        let config = self.config;
        let handle = crate::threads::spawn_own("ddprof-wall", move || run(config, &control))
            .map_err(|e| format!("cannot create the wall-clock thread: {e}"))?;
        *self.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        Ok(())
    }

    /// Stops the sampler thread and waits for it: no signal is sent after this returns.
    pub fn stop(&self) {
        *self
            .control
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = false;
        self.control.wake.notify_all();
        if let Some(h) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
    }
}

impl Drop for WallClock {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A small PRNG (xorshift64*) for the reservoir and the jitter.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let t = handler::ticks() as u64 ^ (u64::from(std::process::id()) << 32);
        Rng(t | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [0, n).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Keeps `k` uniformly chosen elements of `v` (in its first `k` places) and truncates the
/// rest: a partial Fisher-Yates shuffle, which picks each with probability k/len.
fn reservoir<T>(v: &mut Vec<T>, k: usize, rng: &mut Rng) {
    if v.len() <= k {
        return;
    }
    for i in 0..k {
        let j = i + rng.below(v.len() - i);
        v.swap(i, j);
    }
    v.truncate(k);
}

/// The sleep before the next tick: Normal(interval, interval/10), clamped to
/// [1 ns, 2 interval - 1].
fn jittered(interval_ns: u64, rng: &mut Rng) -> Duration {
    let i = interval_ns as f64;
    let ns = (i + rng.normal() * i / 10.0).round();
    let max = (2 * interval_ns).saturating_sub(1).max(1) as f64;
    Duration::from_nanos(ns.clamp(1.0, max) as u64)
}

/// The CPU time of thread `tid` of this process, in ns.
fn thread_cpu_ns(tid: i32) -> Option<u64> {
    // The kernel's per-thread CPU clock id: (~tid << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED.
    let clock = ((!tid) << 3) | 6;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out pointer; an invalid clock id returns an error.
    if unsafe { libc::clock_gettime(clock as libc::clockid_t, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

enum Sent {
    Ok,
    Exited,
    Denied,
    Failed,
}

/// Queues the wall signal to `tid` with our cookie.
fn signal(pid: i32, uid: u32, tid: i32) -> Sent {
    // SAFETY: a zeroed siginfo is valid; the fields are written at their kernel offsets
    // (si_signo 0, si_errno 4, si_code 8, si_pid 16, si_uid 20, si_value 24).
    let rc = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let base = &mut info as *mut libc::siginfo_t as *mut u8;
        base.cast::<i32>().write(WALL_SIGNAL);
        base.add(8).cast::<i32>().write(libc::SI_QUEUE);
        base.add(16).cast::<i32>().write(pid);
        base.add(20).cast::<u32>().write(uid);
        base.add(24)
            .cast::<u64>()
            .write_unaligned(WALL_SIGNAL_COOKIE);
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            pid,
            tid,
            WALL_SIGNAL,
            &info as *const libc::siginfo_t,
        )
    };
    if rc == 0 {
        Counter::WallclockSignalsSent.inc();
        return Sent::Ok;
    }
    Counter::WallclockSignalsFailed.inc();
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ESRCH) => Sent::Exited,
        Some(libc::EPERM) => Sent::Denied,
        Some(libc::EAGAIN) => {
            Counter::WcSignalsQueueFull.inc();
            Sent::Failed
        }
        _ => Sent::Failed,
    }
}

#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    pool: i32,
    ok: i32,
    failed: i32,
    exited: i32,
    denied: i32,
    suppressed: i32,
}

fn push_epoch(start_ticks: i64, duration_ms: i64, c: Counts) {
    let mut epochs = EPOCHS.lock().unwrap_or_else(|e| e.into_inner());
    if epochs.len() >= MAX_EPOCHS {
        return;
    }
    let _mem = crate::footprint::scope(crate::footprint::Category::JfrBuffers);
    epochs.push(WallClockEpoch {
        ticks: start_ticks,
        duration_ms,
        sample_pool_size: c.pool,
        num_successful_samples: c.ok,
        num_failed_samples: c.failed,
        num_exited_threads: c.exited,
        num_permission_denied: c.denied,
        num_suppressed_sampled_run: i64::from(c.suppressed),
    });
}

fn run(config: Config, control: &Control) {
    let me = gettid();
    let pid = std::process::id() as i32;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let mut rng = Rng::seeded();
    let tpt = config.threads_per_tick.max(1) as usize;
    // Each candidate's tid, and its filter cell when it is a registered thread.
    let mut threads: Vec<(i32, Option<&FilterCell>)> = Vec::new();
    let mut epoch_start = Instant::now();
    let mut epoch_ticks = handler::ticks();
    let mut last: Option<Counts> = None;
    loop {
        threads.clear();
        if config.filter {
            crate::context::thread_filter::collect(&mut threads);
        } else {
            threads.extend(crate::threads::all_tids().into_iter().map(|t| (t, None)));
        }
        threads.retain(|&(t, _)| t != me);
        let mut counts = Counts {
            pool: threads.len() as i32,
            ..Counts::default()
        };
        reservoir(&mut threads, tpt, &mut rng);
        Counter::WallclockTicks.inc();
        for &(tid, cell) in &threads {
            // wallprecheck: a registered thread in an owned blocked run (park/block hooks); the
            // cell still this thread's (a cell is reused once its thread exits).
            let owned = cell.filter(|c| {
                config.precheck && c.open_run() != 0 && c.tid.load(Ordering::Relaxed) == tid
            });
            // Blocked since its sample, by its own account and by its CPU clock (which also
            // keeps a run whose exit hook was lost from hiding a thread that runs again):
            // nothing new to see.
            if owned.is_some_and(FilterCell::run_sampled) && is_idle(tid) {
                Counter::WcSignalsSuppressedSampledRun.inc();
                counts.suppressed += 1;
                continue;
            }
            // A run's one sample comes from the handler, which marks it taken: no idle repeat.
            if owned.is_none() && config.skip_idle && is_idle(tid) && wall::record_idle(tid) {
                Counter::WallclockIdleSamples.inc();
                counts.ok += 1;
                continue;
            }
            match signal(pid, uid, tid) {
                Sent::Ok => counts.ok += 1,
                Sent::Exited => counts.exited += 1,
                Sent::Denied => counts.denied += 1,
                Sent::Failed => counts.failed += 1,
            }
        }
        let elapsed = epoch_start.elapsed();
        if last != Some(counts) || elapsed >= Duration::from_secs(1) {
            push_epoch(epoch_ticks, elapsed.as_millis() as i64, counts);
            epoch_start = Instant::now();
            epoch_ticks = handler::ticks();
            last = Some(counts);
        }
        let sleep = jittered(config.interval_ns, &mut rng);
        let guard = control.running.lock().unwrap_or_else(|e| e.into_inner());
        if !*guard {
            break;
        }
        let (guard, _) = control
            .wake
            .wait_timeout_while(guard, sleep, |running| *running)
            .unwrap_or_else(|e| e.into_inner());
        if !*guard {
            break;
        }
    }
}

/// Whether `tid` used no CPU (beyond a handler's return) since its last wall sample.
fn is_idle(tid: i32) -> bool {
    let Some(last) = wall::last_sample_cpu_ns(tid) else {
        return false;
    };
    // A clock behind the slot's is another thread that got the tid since: not idle.
    thread_cpu_ns(tid).is_some_and(|now| now >= last && now - last <= IDLE_CPU_NS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservoir_picks_each_thread_about_equally() {
        let mut rng = Rng(0x1234_5678);
        let mut hits = [0u32; 64];
        for _ in 0..20_000 {
            let mut v: Vec<i32> = (0..64).collect();
            reservoir(&mut v, 16, &mut rng);
            assert_eq!(v.len(), 16);
            let mut s = v.clone();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), 16, "no thread twice");
            for t in v {
                hits[t as usize] += 1;
            }
        }
        // Expected 5,000 each (20,000 ticks x 16/64).
        for h in hits {
            assert!((4_500..5_500).contains(&h), "{h}");
        }
    }

    #[test]
    fn jitter_stays_within_bounds_and_averages_the_interval() {
        let mut rng = Rng(99);
        let n = 10_000;
        let mut sum = 0u128;
        for _ in 0..n {
            let d = jittered(1_000_000, &mut rng).as_nanos();
            assert!((1..2_000_000).contains(&d));
            sum += d;
        }
        let mean = (sum / n) as i64;
        assert!((mean - 1_000_000).abs() < 10_000, "{mean}");
    }

    #[test]
    fn own_cpu_clock_reads_through_the_tid_clock() {
        let before = thread_cpu_ns(gettid()).unwrap();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns(gettid()).unwrap() > before);
    }
}
