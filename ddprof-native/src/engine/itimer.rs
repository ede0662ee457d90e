//! `itimer`: one process-wide `setitimer(ITIMER_PROF)`; the kernel sends SIGPROF to
//! whichever thread is running when the process has used `interval` of CPU.

use super::{timespec, Engine};
use crate::sample::handler::SignalSource;

#[derive(Default)]
pub struct ITimer;

fn set(interval_ns: u64) -> Result<(), String> {
    let ts = timespec(interval_ns);
    let tv = libc::timeval {
        tv_sec: ts.tv_sec,
        tv_usec: (ts.tv_nsec / 1000).max(if interval_ns > 0 { 1 } else { 0 }) as libc::suseconds_t,
    };
    let it = libc::itimerval {
        it_interval: tv,
        it_value: tv,
    };
    // SAFETY: valid itimerval, null old value.
    let rc = unsafe { libc::setitimer(libc::ITIMER_PROF, &it, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "setitimer failed: {}",
            std::io::Error::last_os_error()
        ))
    }
}

impl Engine for ITimer {
    fn id(&self) -> super::EngineId {
        super::EngineId::ITimer
    }

    fn start(&self, interval_ns: u64) -> Result<(), String> {
        set(interval_ns.max(1000))
    }

    fn stop(&self) {
        let _ = set(0);
    }

    fn signal_source(&self) -> SignalSource {
        SignalSource::Kernel
    }

    /// One process-wide timer: nothing per thread to forget.
    fn prune(&self) {}
}
