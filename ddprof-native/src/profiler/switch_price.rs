//! The price of perf_events on a process that switches threads often. A per-thread perf fd is
//! scheduled out and back in with its thread at every context switch (the kernel stops and
//! restarts the `cpu-clock` event's timer each time); in a KVM guest that costs several
//! microseconds a switch, so an event-loop service making tens of thousands of switches a
//! second pays a large share of its CPU for it, whatever the sampling interval (measured:
//! docs/benchmarks.md, "cpu=1ms on a context-switch-heavy service"). ctimer's per-thread
//! timers cost nothing at a switch but deliver no finer than the scheduler tick.
//!
//! `cpu=` below the tick keeps perf_events (ctimer cannot deliver the interval asked for);
//! the library watcher measures the process's context switches per second of its CPU time
//! over windows of [`WINDOW_NANOS`] and, while perf_events is in force, warns once per session
//! when a window passes [`WARN_SWITCHES_PER_CPU_SECOND`]: in the log, in `status` (`CPU Engine
//! Price`), and through the gauge `cpu_switches_per_cpu_second` (the last window's rate, with
//! any engine). Off the signal path: one `getrusage` every five seconds.

use parking_lot::Mutex;

use crate::counters::Counter;
use crate::log;

/// A window's length: long enough that a burst of thread starts does not read as a service.
pub const WINDOW_NANOS: u64 = 5_000_000_000;
/// Context switches per second of process CPU above which perf_events costs about 5% or more
/// of the process's CPU on the benchmark's KVM guest (about 10 µs a switch; bare metal pays
/// less, so the warning errs on the side of saying it).
pub const WARN_SWITCHES_PER_CPU_SECOND: u64 = 5_000;
/// Less CPU than this in a window says nothing about a rate (an idle service).
const MIN_CPU_NANOS: u64 = 100_000_000;

/// Cumulative readings: context switches (voluntary and not) and CPU time of every thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    pub at_nanos: u64,
    pub switches: u64,
    pub cpu_nanos: u64,
}

/// Context switches per CPU-second between two readings, once a window is complete and the
/// process ran long enough in it; `None` before.
pub fn rate(from: &Reading, to: &Reading) -> Option<u64> {
    let wall = to.at_nanos.checked_sub(from.at_nanos)?;
    let cpu = to.cpu_nanos.checked_sub(from.cpu_nanos)?;
    if wall < WINDOW_NANOS || cpu < MIN_CPU_NANOS {
        return None;
    }
    let switches = to.switches.checked_sub(from.switches)?;
    Some((switches as u128 * 1_000_000_000 / cpu as u128) as u64)
}

/// The process's reading now (`getrusage(RUSAGE_SELF)` sums every thread's).
fn read() -> Option<Reading> {
    // SAFETY: an all-zero rusage is a valid value for getrusage to fill.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage with a valid out pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Some(Reading {
        at_nanos: crate::sample::handler::ticks() as u64,
        switches: u.ru_nvcsw as u64 + u.ru_nivcsw as u64,
        cpu_nanos: tv(u.ru_utime) + tv(u.ru_stime),
    })
}

/// The warning of this session, for `status`.
static NOTE: Mutex<Option<String>> = Mutex::new(None);

/// The watcher's state for one session.
pub struct Watch {
    window_start: Option<Reading>,
    warned: bool,
}

impl Watch {
    /// A new session: no window yet, no warning.
    pub fn start() -> Watch {
        *NOTE.lock() = None;
        Watch {
            window_start: None,
            warned: false,
        }
    }

    /// Called about every five seconds by the library watcher with the engine in force.
    pub fn poll(&mut self, perf_in_force: bool) {
        let Some(now) = read() else { return };
        let Some(start) = self.window_start else {
            self.window_start = Some(now);
            return;
        };
        let Some(r) = rate(&start, &now) else { return };
        self.window_start = Some(now);
        Counter::CpuSwitchesPerCpuSecond.set(r as i64);
        if perf_in_force && !self.warned && r > WARN_SWITCHES_PER_CPU_SECOND {
            self.warned = true;
            let note = format!(
                "perf_events on a process making {r} context switches per CPU-second: each switch \
                 reschedules every per-thread perf fd, which can cost more CPU than the sampling \
                 (docs/features.md, \"CPU sampling\"); event=ctimer or an interval at or above the scheduler \
                 tick avoids it"
            );
            log::warn(&note);
            *NOTE.lock() = Some(note);
        }
    }
}

/// The session's warning, if one was given.
pub fn note() -> Option<String> {
    NOTE.lock().clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: f64, switches: u64, cpu_secs: f64) -> Reading {
        Reading {
            at_nanos: (secs * 1e9) as u64,
            switches,
            cpu_nanos: (cpu_secs * 1e9) as u64,
        }
    }

    #[test]
    fn a_rate_needs_a_whole_window_and_some_cpu() {
        let s = at(10.0, 1_000, 1.0);
        assert_eq!(rate(&s, &at(12.0, 90_000, 2.0)), None, "window not over");
        assert_eq!(
            rate(&s, &at(16.0, 90_000, 1.05)),
            None,
            "idle: 50 ms of CPU"
        );
        assert_eq!(rate(&s, &at(16.0, 41_000, 3.0)), Some(20_000));
    }

    #[test]
    fn readings_going_backwards_give_no_rate() {
        let s = at(10.0, 1_000, 1.0);
        assert_eq!(rate(&s, &at(16.0, 500, 2.0)), None);
        assert_eq!(rate(&s, &at(16.0, 2_000, 0.5)), None);
    }

    #[test]
    fn this_process_reads() {
        let r = read().expect("getrusage");
        assert!(r.cpu_nanos > 0 && r.at_nanos > 0);
    }
}
