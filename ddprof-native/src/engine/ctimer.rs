//! `ctimer`: one POSIX timer per thread on that thread's CPU-time clock, delivering
//! SIGPROF to exactly that thread (SIGEV_THREAD_ID) each time it has used `interval`
//! of CPU. Timers are made for every thread alive at start (/proc/self/task), for each
//! thread that starts later (JVMTI ThreadStart), and for any other new task about once a
//! second (`adopt`: native threads the JVM never sees), and deleted at ThreadEnd.
//! With CONFIG_HZ=250 the kernel checks CPU timers at each tick, so a thread gets at
//! most ~250 signals/s whatever the interval.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{timespec, Engine};
use crate::counters::Counter;
use crate::sample::handler::SignalSource;
use crate::sample::signal::{SAMPLING_SIGNAL, TIMER_SIGNAL_MAGIC};

const SIGEV_THREAD_ID: i32 = 4;
const CPUCLOCK_PERTHREAD_SCHED: i32 = 6;

/// The kernel's `struct sigevent` (64 bytes on x86_64 and aarch64).
#[repr(C)]
struct KernelSigevent {
    value: u64,
    signo: i32,
    notify: i32,
    tid: i32,
    _pad: [i32; 11],
}

#[derive(Default)]
pub struct CTimer {
    interval_ns: AtomicU64,
    armed: AtomicBool,
    /// tid -> kernel timer id.
    timers: Mutex<HashMap<i32, i32>>,
}

/// The CPU clock of thread `tid` (the kernel's MAKE_THREAD_CPUCLOCK).
fn thread_cpu_clock(tid: i32) -> libc::clockid_t {
    ((!tid) << 3) | CPUCLOCK_PERTHREAD_SCHED
}

fn create_timer(tid: i32, interval_ns: u64) -> Option<i32> {
    let mut sev = KernelSigevent {
        value: TIMER_SIGNAL_MAGIC,
        signo: SAMPLING_SIGNAL,
        notify: SIGEV_THREAD_ID,
        tid,
        _pad: [0; 11],
    };
    let mut id: libc::c_int = 0;
    // SAFETY: raw timer_create: glibc's wrapper rejects clocks of other threads.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_create,
            thread_cpu_clock(tid),
            &mut sev as *mut KernelSigevent,
            &mut id as *mut libc::c_int,
        )
    };
    if rc != 0 {
        return None;
    }
    let spec = libc::itimerspec {
        it_interval: timespec(interval_ns),
        it_value: timespec(interval_ns),
    };
    // SAFETY: `id` is the timer just created; spec is a valid itimerspec.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_settime,
            id,
            0,
            &spec as *const libc::itimerspec,
            std::ptr::null_mut::<libc::itimerspec>(),
        )
    };
    if rc != 0 {
        delete_timer(id);
        return None;
    }
    Some(id)
}

fn delete_timer(id: i32) {
    // SAFETY: deleting a timer id we created; an already-gone id just fails.
    unsafe { libc::syscall(libc::SYS_timer_delete, id) };
}

impl CTimer {
    /// Gives `tid` a timer if the engine is armed. The check is made under the timers'
    /// lock, which `stop` takes to disarm: a thread starting while the engine stops either
    /// gets its timer before `stop` deletes them all, or none.
    fn arm(&self, tid: i32) {
        let interval = self.interval_ns.load(Ordering::Relaxed);
        let mut timers = self.timers.lock();
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        // A reused tid still has the dead thread's timer: replace it.
        if let Some(old) = timers.remove(&tid) {
            delete_timer(old);
        }
        match create_timer(tid, interval) {
            Some(id) => {
                timers.insert(tid, id);
                Counter::CtimerThreadsArmed.set(timers.len() as i64);
            }
            // Threads that exit while we enumerate them are expected here.
            None => Counter::CtimerTimerCreateFailed.inc(),
        }
    }
}

impl Engine for CTimer {
    fn id(&self) -> super::EngineId {
        super::EngineId::CTimer
    }

    fn start(&self, interval_ns: u64) -> Result<(), String> {
        self.interval_ns
            .store(interval_ns.max(1), Ordering::Relaxed);
        self.armed.store(true, Ordering::Release);
        let tids = crate::threads::all_tids();
        if tids.is_empty() {
            return Err("cannot list threads in /proc/self/task".into());
        }
        for tid in tids {
            self.arm(tid);
        }
        if self.timers.lock().is_empty() {
            self.stop();
            return Err(format!(
                "timer_create failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    fn stop(&self) {
        let mut timers = self.timers.lock();
        self.armed.store(false, Ordering::Release);
        for (_, id) in timers.drain() {
            delete_timer(id);
        }
        Counter::CtimerThreadsArmed.set(0);
    }

    fn thread_started(&self, tid: i32) {
        self.arm(tid);
    }

    fn thread_ended(&self, tid: i32) {
        if let Some(id) = self.timers.lock().remove(&tid) {
            delete_timer(id);
        }
    }

    fn signal_source(&self) -> SignalSource {
        SignalSource::Timer
    }

    fn adopt(&self) {
        let known: std::collections::HashSet<i32> = self.timers.lock().keys().copied().collect();
        for tid in crate::threads::all_tids() {
            if !known.contains(&tid) {
                self.arm(tid);
                Counter::ThreadsAdopted.inc();
            }
        }
    }

    /// Deletes the timers of threads that are gone without a ThreadEnd (threads that were
    /// never Java threads, or exited during a start), so that they do not pile up for the
    /// life of a long session.
    fn prune(&self) {
        let live: std::collections::HashSet<i32> = crate::threads::all_tids().into_iter().collect();
        if live.is_empty() {
            return; // /proc unreadable: keep everything rather than guess
        }
        let mut timers = self.timers.lock();
        timers.retain(|tid, id| {
            let keep = live.contains(tid);
            if !keep {
                delete_timer(*id);
                Counter::CtimerTimersPruned.inc();
            }
            keep
        });
        Counter::CtimerThreadsArmed.set(timers.len() as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_clock_matches_kernel_encoding() {
        // MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) = (~tid << 3) | 4 | 2
        assert_eq!(thread_cpu_clock(0), -8 | 6);
        assert_eq!(thread_cpu_clock(1234), ((!1234) << 3) | 6);
    }

    #[test]
    fn timer_on_own_thread_can_be_created_and_deleted() {
        let id =
            create_timer(crate::sample::context::gettid(), 1_000_000_000).expect("timer_create");
        delete_timer(id);
    }
}
