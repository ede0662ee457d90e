//! CPU sampling engines: they decide when SIGPROF reaches which thread. The handler
//! itself is engine-independent (`crate::sample::handler`).

pub mod ctimer;
pub mod itimer;
pub mod none;
pub mod wall;

use crate::sample::handler::SignalSource;

pub trait Engine: Send + Sync {
    /// Name reported in status, `cpuEngine` setting and config event.
    fn name(&self) -> &'static str;
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
}

pub fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}
