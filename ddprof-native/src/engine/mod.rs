//! CPU sampling engines: they decide when SIGPROF reaches which thread. The handler
//! itself is engine-independent (`crate::sample::handler`).

pub mod ctimer;
pub mod itimer;
pub mod none;
pub mod perf;
pub mod wall;

use crate::sample::handler::SignalSource;

/// Which CPU engine a session runs: the identity the lifecycle, `status`, the dump and the
/// `cpu_engine` counter compare and report, rather than its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineId {
    /// No CPU sampling (`wall` or `memory` alone).
    None,
    CTimer,
    ITimer,
    PerfEvents,
}

impl EngineId {
    /// The name upstream reports: in status, the `cpuEngine` setting and the config event.
    pub fn name(self) -> &'static str {
        match self {
            EngineId::None => "None",
            EngineId::CTimer => "CTimer",
            EngineId::ITimer => "ITimer",
            EngineId::PerfEvents => "PerfEvents",
        }
    }

    /// The value of the `cpu_engine` counter (counters.rs).
    pub fn code(self) -> i64 {
        match self {
            EngineId::None => 0,
            EngineId::CTimer => 1,
            EngineId::ITimer => 2,
            EngineId::PerfEvents => 3,
        }
    }
}

pub trait Engine: Send + Sync {
    /// Which engine this is.
    fn id(&self) -> EngineId;
    /// Name reported in status, `cpuEngine` setting and config event.
    fn name(&self) -> &'static str {
        self.id().name()
    }
    /// Arms sampling at `interval_ns` of CPU time.
    fn start(&self, interval_ns: u64) -> Result<(), String>;
    /// Disarms sampling; signals already in flight are gated by the handler (`sample::handler::disarm`).
    fn stop(&self);
    /// A thread started (JVMTI ThreadStart, on that thread).
    fn thread_started(&self, _tid: i32) {}
    /// A thread is ending (JVMTI ThreadEnd, on that thread).
    fn thread_ended(&self, _tid: i32) {}
    /// How the handler recognises this engine's signals.
    fn signal_source(&self) -> SignalSource;
    /// At every dump: forget per-thread state of threads that are gone.
    fn prune(&self);
    /// Arms the threads that started without a ThreadStart (native threads never attached to
    /// the JVM): every task of /proc/self/task not armed yet. Called by the library watcher
    /// about once a second (`crate::profiler::libraries`).
    fn adopt(&self) {}
}

pub fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// The scheduler tick (1/CONFIG_HZ), the finest interval a per-thread CPU timer delivers:
/// the kernel checks those timers only at ticks. The resolution of the coarse clocks is
/// exactly one tick (`clock_getres(CLOCK_MONOTONIC_COARSE)`); 4 ms (CONFIG_HZ=250) where it
/// cannot be read or is implausible.
pub fn scheduler_tick_ns() -> u64 {
    const DEFAULT: u64 = 4_000_000;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres with a valid out pointer.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } != 0 {
        return DEFAULT;
    }
    let ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    // CONFIG_HZ is between 100 and 1000 on every kernel in use.
    if (1_000_000..=10_000_000).contains(&ns) {
        ns
    } else {
        DEFAULT
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tick_is_a_plausible_hz() {
        let t = super::scheduler_tick_ns();
        assert!((1_000_000..=10_000_000).contains(&t), "{t}");
    }
}
