//! Whether the handlers of our sampling signals are still the ones in force. A library that
//! installs its own SIGPROF or SIGVTALRM handler after ours (`sigaction`/`signal`, without
//! passing our signals on) receives the signals our timers and the wall sampler send: the
//! samples are lost, silently (a user measured 61% of them taken so). Nothing stops a library
//! from doing so; we notice it within a poll of the library watcher (`libraries.rs`, every
//! 200 ms, never in a signal), say so once per intruder (a warning, the counter
//! `signal_handler_replaced`, a line of `status`), and install ours again at the next start,
//! where DataDog's profiler and async-profiler install theirs too (docs/engines.md,
//! "Foreign signal handlers").

use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::counters::Counter;
use crate::log;
use crate::sample::signal::{self, Sampling};

/// The foreign disposition last reported for SIGPROF and SIGVTALRM, 0 for none. (`SIG_DFL`
/// is 0 too: a signal reset to its default is reported as [`RESET`].)
static REPORTED: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
/// Stands for `SIG_DFL` in [`REPORTED`].
const RESET: usize = usize::MAX;

fn slot(which: Sampling) -> &'static AtomicUsize {
    &REPORTED[which as usize]
}

/// The signals a session uses: SIGPROF with a CPU engine, SIGVTALRM with the wall engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct InUse {
    pub cpu: bool,
    pub wall: bool,
}

impl InUse {
    fn each(self) -> impl Iterator<Item = Sampling> {
        [(Sampling::Cpu, self.cpu), (Sampling::Wall, self.wall)]
            .into_iter()
            .filter_map(|(s, on)| on.then_some(s))
    }
}

/// Who the disposition `action` is, for a message: a handler's address and the object it
/// lies in, or what `SIG_DFL`/`SIG_IGN` mean for a sampling signal.
fn describe(action: usize) -> String {
    match action {
        libc::SIG_DFL => "SIG_DFL: the process ends at the next signal".into(),
        libc::SIG_IGN => "SIG_IGN: the signals are dropped".into(),
        a => {
            // SAFETY: dladdr fills a zeroed Dl_info we own; dli_fname, when set, is a
            // NUL-terminated path owned by the loader, copied before we return.
            let object = unsafe {
                let mut info: libc::Dl_info = std::mem::zeroed();
                if libc::dladdr(a as *const libc::c_void, &mut info) != 0
                    && !info.dli_fname.is_null()
                {
                    Some(
                        CStr::from_ptr(info.dli_fname)
                            .to_string_lossy()
                            .into_owned(),
                    )
                } else {
                    None
                }
            };
            match object {
                Some(o) => format!("handler {a:#x} in {o}"),
                None => format!("handler {a:#x}"),
            }
        }
    }
}

fn what_is_lost(which: Sampling) -> &'static str {
    match which {
        Sampling::Cpu => "CPU samples",
        Sampling::Wall => "wall-clock samples",
    }
}

/// Looks at the signals in use (the library watcher, every poll; `status`): a disposition
/// that replaced ours and was not reported yet is logged and counted. Not signal-safe.
pub fn poll(in_use: InUse) {
    for which in in_use.each() {
        let now = match signal::displaced(which) {
            Some(libc::SIG_DFL) => RESET,
            Some(a) => a,
            None => 0,
        };
        let before = slot(which).swap(now, Ordering::AcqRel);
        if now != 0 && now != before {
            Counter::SignalHandlerReplaced.inc();
            let action = if now == RESET { libc::SIG_DFL } else { now };
            log::warn(&format!(
                "another library replaced the profiler's {} handler ({}): {} are lost unless it \
                 passes them on; the next start installs the profiler's handler again",
                which.name(),
                describe(action),
                what_is_lost(which),
            ));
        }
    }
}

/// What `status` says of the signals in use: one line per replaced handler, none while ours
/// are in force.
pub fn status(in_use: InUse) -> String {
    poll(in_use);
    let mut out = String::new();
    for which in in_use.each() {
        let now = slot(which).load(Ordering::Acquire);
        if now != 0 {
            let action = if now == RESET { libc::SIG_DFL } else { now };
            out.push_str(&format!(
                " Signal Handler   : {} replaced by another library ({}); {} lost unless it chains to ours; ours again at the next start\n",
                which.name(),
                describe(action),
                what_is_lost(which),
            ));
        }
    }
    out
}

/// At a start, before the handlers are installed (again): a warning for each signal the
/// start will take back from another library's handler. Forgets what was reported.
pub fn before_install(in_use: InUse) -> Vec<String> {
    REPORTED.iter().for_each(|r| r.store(0, Ordering::Release));
    in_use
        .each()
        .filter_map(|which| {
            signal::displaced(which).map(|action| {
                format!(
                    "another library had replaced the profiler's {} handler ({}); installed the \
                     profiler's again (that library no longer receives {} signals)",
                    which.name(),
                    describe(action),
                    which.name(),
                )
            })
        })
        .collect()
}
