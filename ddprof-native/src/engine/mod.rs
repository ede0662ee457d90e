//! CPU sampling engines: they decide when SIGPROF reaches which thread. The handler
//! itself is engine-independent (`crate::sampler`).

pub mod ctimer;
pub mod itimer;

/// Value carried by our own timer signals (`si_value` of SI_TIMER), to tell them from
/// anyone else's SIGPROF.
pub const TIMER_SIGNAL_MAGIC: u64 = 0x6464_7072_6f66_0001;

pub trait CpuEngine: Send + Sync {
    /// Name reported in status, `cpuEngine` setting and config event.
    fn name(&self) -> &'static str;
    /// Arms sampling at `interval_ns` of CPU time.
    fn start(&self, interval_ns: u64) -> Result<(), String>;
    /// Disarms sampling; signals already in flight are gated by the sampler.
    fn stop(&self);
    /// A thread started (JVMTI ThreadStart, on that thread).
    fn thread_started(&self, _tid: i32) {}
    /// A thread is ending (JVMTI ThreadEnd, on that thread).
    fn thread_ended(&self, _tid: i32) {}
    /// Whether `si_code`/`si_value` mark a signal this engine sent.
    fn owns_signal(&self, code: i32, value: u64) -> bool;
}

pub fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}
