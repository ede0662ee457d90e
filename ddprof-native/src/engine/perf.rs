//! `PerfEvents`: one perf_events fd per thread (software `cpu-clock`, user space only),
//! its overflow signalled as SIGPROF to that very thread. The event is a high-resolution
//! timer on the thread's own CPU time, so unlike ctimer it is not bound to the scheduler
//! tick: `cpu=1ms` gives a busy thread 1000 samples per CPU-second.
//!
//! The event runs free: enabled once, it overflows every `interval` of the thread's CPU
//! time and each overflow queues one signal. No `PERF_EVENT_IOC_REFRESH`: a refreshed event
//! disables itself at each overflow and must be re-armed by every exit of the handler, and
//! that self-disabling inside the hrtimer interrupt is what hangs Linux 6.16/6.17. A free
//! event needs nothing from the handler; the one run-time cost is that it keeps counting
//! while the handler runs (the handler's CPU time is the thread's, as under ctimer), and a
//! second overflow during it waits as a pending signal (the weight covers merged ones:
//! `crate::sample::perf`).
//!
//! fds are opened for every thread alive at start (/proc/self/task), at JVMTI ThreadStart and
//! for other new tasks about once a second (`adopt`: native threads never attached), closed at ThreadEnd, at the dump after a thread vanished without one, and at
//! stop, always with `O_CLOEXEC`. A thread whose setup fails half-way is rolled back (fd
//! closed, slot cleared). The soft `RLIMIT_NOFILE` is raised to the hard limit at start;
//! on `EMFILE` the engine stops opening fds for further threads (counted) rather than
//! starve the application of descriptors.
//!
//! Whether the kernel permits it is found by opening one event on the starting thread
//! (which also catches seccomp filters and kernels without perf_events): the refusal,
//! with errno and `perf_event_paranoid`, is what the profiler reports when it falls back to
//! ctimer. `DDPROF_TEST_PERF_OPEN_ERRNO=<errno>` (test-only) makes every open fail so.
//!
//! Intervals below [`MIN_PERIOD_NS`] are sampled at that period, each sample weighing the
//! requested intervals it stands for.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::Engine;
use crate::counters::Counter;
use crate::footprint::Category;
use crate::log;
use crate::sample::handler::{self, SignalSource};
use crate::sample::perf::{self as slots, IOC_DISABLE, IOC_ENABLE};
use crate::sample::signal::SAMPLING_SIGNAL;

/// Test-only: every perf_event_open fails with this errno (a number, or EACCES, EPERM,
/// ENOSYS, ENOENT, EMFILE).
pub const FAIL_OPEN_ENV: &str = "DDPROF_TEST_PERF_OPEN_ERRNO";
/// Test-only: `refuse` makes every ring mapping fail, as `perf_event_mlock_kb` would.
pub const REFUSE_RING_ENV: &str = "DDPROF_TEST_PERF_RING";
/// Set from [`REFUSE_RING_ENV`] at each start.
static REFUSE_RING: AtomicBool = AtomicBool::new(false);

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `perf_event_attr` flag bits (the bitfield after `read_format`).
const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const ATTR_EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
/// `PERF_SAMPLE_READ`: each overflow's record in the fd's ring holds the count at that
/// overflow, which the handler takes instead of a `read(2)` (`sample::perf::claim`).
const PERF_SAMPLE_READ: u64 = 1 << 4;
/// `PERF_SAMPLE_CALLCHAIN`: each overflow writes the (kernel) callchain to the fd's ring.
const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
const F_SETSIG: c_int = 10;
const F_SETOWN_EX: c_int = 15;
const F_OWNER_TID: c_int = 0;
/// The shortest period the events are given. The handler's own CPU time counts on the
/// thread's clock, and a handler costs a few µs (tens for deep stacks): a period near that
/// would give the thread nothing but samples (a signal pending again at every handler exit).
/// ctimer's floor is the tick; this one is 100 µs. Weights stay in units of the requested
/// interval, so that weight times interval is still the CPU time.
pub const MIN_PERIOD_NS: u64 = 100_000;

/// Whether the running session's perf_events samples carry kernel frames (false when none runs).
static KERNEL_FRAMES: AtomicBool = AtomicBool::new(false);

/// Whether the running session's perf_events samples carry kernel frames.
pub fn kernel_frames_on() -> bool {
    KERNEL_FRAMES.load(Ordering::Relaxed)
}

/// `struct perf_event_attr` up to `config1` (`PERF_ATTR_SIZE_VER0`, 64 bytes), which
/// every kernel with perf_events accepts.
#[repr(C)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 64);

#[repr(C)]
struct FOwnerEx {
    type_: c_int,
    pid: libc::pid_t,
}

#[derive(Default)]
pub struct PerfEvents {
    interval_ns: AtomicU64,
    armed: AtomicBool,
    /// Set on the first `EMFILE`: no more fds this session.
    exhausted: AtomicBool,
    /// Simulated errno (test-only), 0 = none.
    fail_errno: AtomicI32,
    /// tid -> fd and ring, the engine's own bookkeeping (the handler reads `sample::perf`).
    fds: Mutex<HashMap<i32, slots::Armed>>,
    /// Kernel callchains asked for (not `alluser`): tried at start ([`kernel_frames_on`] says
    /// whether they were had).
    want_kernel: AtomicBool,
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn close(fd: c_int) {
    // SAFETY: closing an fd we opened and took out of the table.
    unsafe { libc::close(fd) };
}

fn ring_bytes() -> usize {
    slots::RING_PAGES * crate::footprint::page_size()
}

/// Unmaps (if any) and closes a thread's event, once nothing can read either.
fn release(a: slots::Armed) {
    if a.ring != 0 {
        // SAFETY: a ring this engine mapped for `a.fd`, out of the table, no handler in it.
        unsafe { libc::munmap(a.ring as *mut libc::c_void, ring_bytes()) };
        crate::footprint::charge_kernel_mapping(Category::SampleBuffers, -(ring_bytes() as i64));
    }
    close(a.fd);
}

/// Maps `fd`'s ring buffer (0 when the kernel refuses: beyond `perf_event_mlock_kb` and
/// `RLIMIT_MEMLOCK` for a user without CAP_IPC_LOCK, counted in `perf_ring_failed`; the thread
/// is then sampled without kernel frames, its count read with `read(2)`). Its pages are the
/// kernel's, locked, [`ring_bytes`] per thread: charged to `sample_buffers` while mapped.
fn map_ring(fd: c_int) -> usize {
    if REFUSE_RING.load(Ordering::Relaxed) {
        Counter::PerfRingFailed.inc();
        return 0;
    }
    // SAFETY: a shared read-write mapping of our own perf fd, of the size perf requires
    // (1 + 2^n pages); nothing else refers to it until it is published.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ring_bytes(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Counter::PerfRingFailed.inc();
        0
    } else {
        crate::footprint::charge_kernel_mapping(Category::SampleBuffers, ring_bytes() as i64);
        p as usize
    }
}

/// `/proc/sys/kernel/perf_event_paranoid`, None where perf_events is absent.
pub fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

fn pid_max() -> usize {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 22)
}

/// Raises the soft limit on open files to the hard one: one fd per thread adds up.
fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn parse_errno(v: &str) -> c_int {
    match v.trim() {
        "EACCES" => libc::EACCES,
        "EPERM" => libc::EPERM,
        "ENOSYS" => libc::ENOSYS,
        "ENOENT" => libc::ENOENT,
        "EMFILE" => libc::EMFILE,
        n => n.parse().unwrap_or(libc::EACCES),
    }
}

/// Opens a cpu-clock event counting `tid`'s CPU time, overflowing every `period_ns`,
/// disabled until `arm_fd`, each overflow writing a record with the count to the fd's ring
/// (once one is mapped). `kernel`: overflows in kernel mode too, each record with its kernel
/// callchain (perf_event_paranoid 1 or less, or CAP_PERFMON); else user space only, which
/// paranoid 2 (the common default) permits. The count includes kernel time either way.
fn open_event(tid: i32, period_ns: u64, fail: c_int, kernel: bool) -> Result<c_int, c_int> {
    if fail != 0 {
        return Err(fail);
    }
    let attr = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period: period_ns,
        sample_type: if kernel {
            PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN
        } else {
            PERF_SAMPLE_READ
        },
        read_format: 0,
        flags: if kernel {
            ATTR_DISABLED | ATTR_EXCLUDE_HV | ATTR_EXCLUDE_CALLCHAIN_USER
        } else {
            ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV
        },
        wakeup_events: 0,
        bp_type: 0,
        config1: 0,
    };
    // SAFETY: a valid attr of the size it says; pid = tid, any cpu, no group.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid,
            -1 as c_int,
            -1 as c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd as c_int)
    }
}

/// A disabled user-space `cpu-clock` fd of `tid` routed to it as SIGPROF, set up exactly as
/// the engine's (for `examples/perf_signal_floor.rs`, which measures what such a signal
/// costs with nothing in its handler). The caller enables and closes it.
pub fn open_routed(tid: i32, period_ns: u64) -> Result<c_int, c_int> {
    let fd = open_event(tid, period_ns, 0, false)?;
    route_to_thread(fd, tid).inspect_err(|_| close(fd))?;
    Ok(fd)
}

/// Routes `fd`'s overflows to thread `tid` as SIGPROF. Err(errno) on the first failure.
fn route_to_thread(fd: c_int, tid: i32) -> Result<(), c_int> {
    let owner = FOwnerEx {
        type_: F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: fcntls on our own fd with valid arguments.
    unsafe {
        if libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) != 0
            || libc::fcntl(fd, F_SETSIG, SAMPLING_SIGNAL) != 0
            || libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) != 0
        {
            return Err(errno());
        }
    }
    Ok(())
}

impl PerfEvents {
    /// Whether the kernel lets this thread open the event, tried once on the calling thread.
    /// Err: the reason, for the log, `status` and the recording.
    pub fn probe(&self, interval_ns: u64) -> Result<(), String> {
        let fail = self.fail_errno.load(Ordering::Relaxed);
        let tid = crate::sample::context::gettid();
        match open_event(tid, interval_ns.max(MIN_PERIOD_NS), fail, false) {
            Ok(fd) => {
                close(fd);
                Ok(())
            }
            Err(e) => Err(format!(
                "perf_event_open refused: {}{} (perf_event_paranoid={})",
                std::io::Error::from_raw_os_error(e),
                if fail != 0 { ", simulated" } else { "" },
                paranoid().map_or("absent".to_string(), |p| p.to_string()),
            )),
        }
    }

    /// Asks for kernel frames (the session's `alluser` is off); takes effect at `start`.
    pub fn want_kernel_frames(&self, want: bool) {
        self.want_kernel.store(want, Ordering::Relaxed);
    }

    /// Whether kernel callchains can be had here: the kernel lets this thread open such an
    /// event and map its ring, and `/proc/kallsyms` shows addresses to name them by. Err: why
    /// not, for the log and `status`.
    pub fn kernel_permitted(&self, period_ns: u64) -> Result<(), String> {
        let tid = crate::sample::context::gettid();
        let fd = open_event(tid, period_ns, 0, true).map_err(|e| {
            format!(
                "perf_event_open with kernel callchains refused: {} (perf_event_paranoid={})",
                std::io::Error::from_raw_os_error(e),
                paranoid().map_or("absent".to_string(), |p| p.to_string())
            )
        })?;
        let ring = map_ring(fd);
        release(slots::Armed { fd, ring });
        if ring == 0 {
            return Err("the kernel refused the ring buffer (perf_event_mlock_kb)".into());
        }
        if !crate::libs::kallsyms::readable() {
            return Err("/proc/kallsyms shows no addresses (kptr_restrict)".into());
        }
        Ok(())
    }

    /// Opens and arms `tid`'s fd if the engine is armed; under the fds' lock, which `stop`
    /// takes to disarm (as ctimer). Err(errno) when the open or set-up failed.
    fn arm(&self, tid: i32) -> Result<(), c_int> {
        let mut fds = self.fds.lock();
        if !self.armed.load(Ordering::Acquire) || self.exhausted.load(Ordering::Relaxed) {
            return Ok(());
        }
        let period = self.interval_ns.load(Ordering::Relaxed);
        let kernel = kernel_frames_on();
        let fd = match open_event(tid, period, self.fail_errno.load(Ordering::Relaxed), kernel) {
            Ok(fd) => fd,
            Err(e) => {
                if e == libc::EMFILE || e == libc::ENFILE {
                    Counter::PerfOpenEmfile.inc();
                    if !self.exhausted.swap(true, Ordering::Relaxed) {
                        log::warn(&format!(
                            "perf_events: out of file descriptors at {} threads; threads started from now on are not CPU-sampled",
                            fds.len()
                        ));
                    }
                } else {
                    // Threads that exit while we enumerate them are expected here (ESRCH).
                    Counter::PerfOpenFailed.inc();
                }
                return Err(e);
            }
        };
        let armed = slots::Armed {
            fd,
            ring: map_ring(fd),
        };
        if let Err(e) = route_to_thread(fd, tid) {
            release(armed);
            Counter::PerfOpenFailed.inc();
            return Err(e);
        }
        match slots::publish(tid, armed.fd, armed.ring) {
            Ok(old) => {
                // A reused tid still had the dead thread's fd: that thread cannot be in a
                // handler, and this thread is not in one here.
                if let Some(old) = old {
                    fds.remove(&tid);
                    release(old);
                }
            }
            Err(slots::NoRoom) => {
                release(armed);
                Counter::PerfOpenFailed.inc();
                return Err(libc::ERANGE);
            }
        }
        // SAFETY: enabling our own perf fd.
        if unsafe { libc::ioctl(fd, IOC_ENABLE, 0) } != 0 {
            let e = errno();
            slots::take(tid);
            release(armed);
            Counter::PerfOpenFailed.inc();
            return Err(e);
        }
        fds.insert(tid, armed);
        Counter::PerfThreadsArmed.set(fds.len() as i64);
        Ok(())
    }

    /// Takes `victims` out of the table and closes them once no handler can be reading one.
    fn close_all(&self, victims: Vec<(i32, slots::Armed)>) {
        if victims.is_empty() {
            return;
        }
        for &(tid, a) in &victims {
            slots::take(tid);
            // SAFETY: disabling our own perf fd; no more overflows from it.
            unsafe { libc::ioctl(a.fd, IOC_DISABLE, 0) };
        }
        if handler::wait_for_handlers() {
            for (_, a) in victims {
                release(a);
            }
        } else {
            // A handler stuck past the drain bound might still read one: leaking an fd is
            // better than letting it read a file that took its number.
            Counter::PerfFdsLeaked.add(victims.len() as i64);
        }
    }
}

impl Engine for PerfEvents {
    fn id(&self) -> super::EngineId {
        super::EngineId::PerfEvents
    }

    fn start(&self, interval_ns: u64) -> Result<(), String> {
        let period = interval_ns.max(MIN_PERIOD_NS);
        let unit = interval_ns.max(1);
        self.fail_errno.store(
            std::env::var(FAIL_OPEN_ENV).map_or(0, |v| parse_errno(&v)),
            Ordering::Relaxed,
        );
        REFUSE_RING.store(
            std::env::var(REFUSE_RING_ENV).is_ok_and(|v| v == "refuse"),
            Ordering::Relaxed,
        );
        self.probe(period)?;
        let kernel = self.want_kernel.load(Ordering::Relaxed)
            && match self.kernel_permitted(period) {
                Ok(()) => true,
                Err(why) => {
                    log::info(&format!(
                        "perf_events: samples without kernel frames: {why}"
                    ));
                    false
                }
            };
        KERNEL_FRAMES.store(kernel, Ordering::Relaxed);
        slots::set_ring(ring_bytes(), kernel);
        raise_nofile();
        let room = slots::init(pid_max());
        if room < pid_max() {
            log::warn(&format!(
                "perf_events: pid_max grew to {} since the first start; threads with ids from {room} on are not CPU-sampled",
                pid_max()
            ));
        }
        slots::set_period(unit, period);
        self.interval_ns.store(period, Ordering::Relaxed);
        self.exhausted.store(false, Ordering::Relaxed);
        self.armed.store(true, Ordering::Release);
        let tids = crate::threads::all_tids();
        if tids.is_empty() {
            self.stop();
            return Err("cannot list threads in /proc/self/task".into());
        }
        let mut last_error = 0;
        for tid in tids {
            if let Err(e) = self.arm(tid) {
                last_error = e;
            }
        }
        if self.fds.lock().is_empty() {
            self.stop();
            return Err(format!(
                "perf_event_open failed for every thread: {}",
                std::io::Error::from_raw_os_error(last_error)
            ));
        }
        Ok(())
    }

    fn stop(&self) {
        let victims: Vec<(i32, slots::Armed)> = {
            let mut fds = self.fds.lock();
            self.armed.store(false, Ordering::Release);
            fds.drain().collect()
        };
        KERNEL_FRAMES.store(false, Ordering::Relaxed);
        self.close_all(victims);
        Counter::PerfThreadsArmed.set(0);
    }

    fn thread_started(&self, tid: i32) {
        let _ = self.arm(tid);
    }

    fn adopt(&self) {
        let known: std::collections::HashSet<i32> = self.fds.lock().keys().copied().collect();
        for tid in crate::threads::all_tids() {
            if !known.contains(&tid) && self.arm(tid).is_ok() {
                Counter::ThreadsAdopted.inc();
            }
        }
    }

    /// On the ending thread itself: no handler of it can be running.
    fn thread_ended(&self, tid: i32) {
        let mut fds = self.fds.lock();
        if let Some(a) = fds.remove(&tid) {
            slots::take(tid);
            release(a);
            Counter::PerfThreadsArmed.set(fds.len() as i64);
        }
    }

    fn signal_source(&self) -> SignalSource {
        SignalSource::Perf
    }

    /// Closes the fds of threads that are gone without a ThreadEnd (threads that were never
    /// Java threads, or exited during a start).
    fn prune(&self) {
        let live: std::collections::HashSet<i32> = crate::threads::all_tids().into_iter().collect();
        if live.is_empty() {
            return;
        }
        let victims: Vec<(i32, slots::Armed)> = {
            let mut fds = self.fds.lock();
            let gone: Vec<i32> = fds.keys().copied().filter(|t| !live.contains(t)).collect();
            let v = gone
                .into_iter()
                .filter_map(|t| fds.remove(&t).map(|fd| (t, fd)))
                .collect::<Vec<_>>();
            Counter::PerfThreadsArmed.set(fds.len() as i64);
            v
        };
        Counter::PerfFdsPruned.add(victims.len() as i64);
        self.close_all(victims);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_parse() {
        assert_eq!(parse_errno("EACCES"), libc::EACCES);
        assert_eq!(parse_errno("EMFILE"), libc::EMFILE);
        assert_eq!(parse_errno("1"), 1);
    }

    #[test]
    fn simulated_failure_is_reported_with_paranoid() {
        let e = PerfEvents::default();
        e.fail_errno.store(libc::EACCES, Ordering::Relaxed);
        let msg = e.probe(1_000_000).unwrap_err();
        assert!(msg.contains("perf_event_open refused"), "{msg}");
        assert!(msg.contains("simulated"), "{msg}");
        assert!(msg.contains("perf_event_paranoid="), "{msg}");
    }

    /// The claim tests set the handler's period and ring size, which are process-wide.
    static CLAIMS: Mutex<()> = Mutex::new(());

    /// The handler's claim: only POLL_IN/POLL_HUP with this thread's own fd, weighing the
    /// whole periods of CPU the fd counted since the previous claim.
    #[test]
    fn claim_accepts_only_this_threads_fd_and_weighs_the_periods() {
        let _one = CLAIMS.lock();
        let tid = crate::sample::context::gettid();
        let period = 1_000_000;
        let fd = match open_event(tid, period, 0, false) {
            Ok(fd) => fd,
            Err(e) => {
                eprintln!("perf_event_open not permitted here (errno {e}); skipped");
                return;
            }
        };
        slots::init(pid_max());
        slots::set_period(period, period);
        assert!(slots::publish(tid, fd, 0).is_ok());
        // SAFETY: enabling our own perf fd (not routed: no signal is sent).
        assert_eq!(unsafe { libc::ioctl(fd, IOC_ENABLE, 0) }, 0);
        // 30 periods of this thread's CPU as the fd counts them, however long a busy host
        // makes that take (a wall-clock window gave a descheduled thread less than one).
        let mut x = 1u64;
        while read_count(fd) < 30 * period {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(
            slots::claim(tid, 2, fd, 0).is_none(),
            "POLL_OUT is not a perf overflow"
        );
        assert!(slots::claim(tid, 1, fd + 1, 0).is_none(), "another fd");
        let counted = read_count(fd) / period;
        let w = weight(slots::claim(tid, 1, fd, 0));
        // Every period counted before the claim (a period ended between the two reads at most).
        assert!(
            w >= 1 && w + 1 >= counted,
            "weight {w} for {counted} periods counted"
        );
        // Right after: no period elapsed, unless the few microseconds between the two reads
        // crossed a period's end (the first claim kept the remainder): then that one period.
        let again = weight(slots::claim(tid, 1, fd, 0));
        assert!(
            again <= 1,
            "nothing elapsed, yet weight {again}: accounted twice"
        );
        // What was weighed never exceeds what the fd counted.
        assert!(
            w + again <= read_count(fd) / period + 1,
            "weights {w} + {again} for {} ns counted",
            read_count(fd)
        );
        slots::finish(tid, 1_000_000_000);
        assert_eq!(
            weight(slots::claim(tid, 1, fd, 1_000_000_000 + period / 8)),
            0,
            "right after the previous sample ended: deferred"
        );
        // Two more periods of CPU (counted by the fd, whatever the host's load).
        let spin_until = read_count(fd) + 2 * period;
        while read_count(fd) < spin_until {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let w = weight(slots::claim(tid, 1, fd, 1_000_000_000 + period));
        assert!(
            (1..=3).contains(&w),
            "weight {w} for two periods and the remainder"
        );
        assert_eq!(slots::take(tid), Some(slots::Armed { fd, ring: 0 }));
        assert!(slots::claim(tid, 1, fd, 0).is_none(), "taken out");
        close(fd);
    }

    /// The weight of an accepted claim (the ring emptied as the handler would).
    fn weight(c: Option<(u64, slots::Seen)>) -> u64 {
        let (w, seen) = c.expect("own fd");
        slots::kernel_frames(&seen, &mut [0u64; 8]);
        w
    }

    /// How many periods the newest ring record may lag `counted`: 1 ms and a tenth of the
    /// count, for the overflows a busy host puts in the kernel (no record written).
    fn lag_allowed(counted: u64) -> u64 {
        10 + counted / 10
    }

    /// Spins until the fd counted `ns` more of this thread's CPU, in user mode but for a
    /// `read` every ~100 µs (an overflow in kernel mode writes no record).
    fn spin_counted(fd: c_int, ns: u64) {
        let until = read_count(fd) + ns;
        let mut x = 1u64;
        while read_count(fd) < until {
            for _ in 0..100_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
    }

    /// With a ring, the weight comes from the overflows' records, not from `read(2)`: a claim
    /// right after one that emptied the ring finds nothing new (exactly 0, where a read could
    /// find a period's end crossed), and a ring left to fill (records lost) still weighs every
    /// period: each record holds the whole count.
    #[test]
    fn claim_weighs_from_the_ring_and_survives_a_full_one() {
        let _one = CLAIMS.lock();
        let tid = crate::sample::context::gettid();
        let period = MIN_PERIOD_NS;
        let fd = match open_event(tid, period, 0, false) {
            Ok(fd) => fd,
            Err(e) => {
                eprintln!("perf_event_open not permitted here (errno {e}); skipped");
                return;
            }
        };
        let ring = map_ring(fd);
        if ring == 0 {
            eprintln!("ring buffer refused here; skipped");
            close(fd);
            return;
        }
        slots::init(pid_max());
        slots::set_period(period, period);
        slots::set_ring(ring_bytes(), false);
        assert!(slots::publish(tid, fd, ring).is_ok());
        let reads = Counter::PerfCountRead.get();
        let lost = Counter::PerfRingLost.get();
        // SAFETY: enabling our own perf fd (not routed: the records are written, no signal).
        assert_eq!(unsafe { libc::ioctl(fd, IOC_ENABLE, 0) }, 0);
        spin_counted(fd, 20 * period);
        let mut total = weight(slots::claim(tid, 1, fd, 0));
        // Judged against what the fd counted: the spin stops up to one inner loop past 20
        // periods, and on a busy host the newest record lags the count (an overflow that fires
        // while the thread is in the kernel, preempted or reading, writes none; seen: 8 of 21).
        let counted = read_count(fd) / period;
        assert!(
            total <= counted + 1 && total + lag_allowed(counted) >= counted,
            "weight {total} for {counted} periods counted (at least 20 spun)"
        );
        assert_eq!(
            weight(slots::claim(tid, 1, fd, 0)),
            0,
            "nothing overflowed since: the empty ring says so"
        );
        // One data page holds 4096 / 16 = 256 records: 600 periods overflow it.
        spin_counted(fd, 600 * period);
        total += weight(slots::claim(tid, 1, fd, 0));
        spin_counted(fd, 3 * period);
        total += weight(slots::claim(tid, 1, fd, 0));
        // SAFETY: stopping our own perf fd before its last reading.
        unsafe { libc::ioctl(fd, IOC_DISABLE, 0) };
        // The newest record is behind the count by the overflows since the last one in user
        // mode (a few periods; more on a busy host), never ahead of it.
        let counted = read_count(fd) / period;
        assert!(
            total + lag_allowed(counted) >= counted && total <= counted + 1,
            "weights {total} for {counted} periods counted"
        );
        if crate::footprint::page_size() == 4096 {
            assert!(
                Counter::PerfRingLost.get() > lost,
                "a full ring loses records"
            );
        }
        assert_eq!(
            Counter::PerfCountRead.get(),
            reads,
            "no read(2) with a ring"
        );
        let taken = slots::take(tid).expect("published");
        release(taken);
    }

    /// The fd's count (ns of task clock).
    fn read_count(fd: c_int) -> u64 {
        let mut count: u64 = 0;
        // SAFETY: reading 8 bytes into a local from our own perf fd.
        let n = unsafe { libc::read(fd, (&mut count as *mut u64).cast(), 8) };
        assert_eq!(n, 8);
        count
    }

    /// What the handler's claim costs per signal with the count from the ring and from
    /// `read(2)`, on this thread's live fd (1 ms period, not routed: records are written, no
    /// signal), 200,000 claims each. Run by hand
    /// (`cargo test --release --lib claim_costs -- --ignored --nocapture`); prints, asserts
    /// nothing. Indicative only on a shared host.
    #[test]
    #[ignore]
    fn claim_costs() {
        let _one = CLAIMS.lock();
        let tid = crate::sample::context::gettid();
        let period = 1_000_000;
        let Ok(fd) = open_event(tid, period, 0, false) else {
            eprintln!("perf_event_open not permitted here");
            return;
        };
        let ring = map_ring(fd);
        slots::init(pid_max());
        slots::set_period(period, period);
        slots::set_ring(ring_bytes(), false);
        // SAFETY: enabling our own perf fd.
        assert_eq!(unsafe { libc::ioctl(fd, IOC_ENABLE, 0) }, 0);
        const N: u32 = 200_000;
        for (name, r) in [
            ("read(2)", 0),
            ("ring", ring),
            ("read(2)", 0),
            ("ring", ring),
        ] {
            assert!(slots::publish(tid, fd, r).is_ok());
            let start = std::time::Instant::now();
            for _ in 0..N {
                let (_, seen) = slots::claim(tid, 1, fd, 0).expect("own fd");
                slots::kernel_frames(&seen, &mut [0u64; 8]);
            }
            let per = start.elapsed().as_nanos() / u128::from(N);
            eprintln!("claim with the count from {name}: {per} ns per signal");
            slots::take(tid);
        }
        release(slots::Armed { fd, ring });
    }

    /// Where the kernel permits it: an event on this thread opens, routes and enables.
    #[test]
    fn own_thread_event_opens_when_permitted() {
        let tid = crate::sample::context::gettid();
        match open_event(tid, 1_000_000, 0, false) {
            Ok(fd) => {
                route_to_thread(fd, tid).expect("fcntl");
                close(fd);
            }
            Err(e) => eprintln!("perf_event_open not permitted here (errno {e}); skipped"),
        }
    }
}
