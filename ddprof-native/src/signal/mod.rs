//! Installing the sampling signal handler, remembering what was there before so that
//! signals that are not ours reach it.

pub mod safe_access;

use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

pub type Handler = extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void);

/// The previous SIGPROF disposition's `sa_sigaction` and flags, for chaining.
static PREVIOUS_ACTION: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
static PREVIOUS_FLAGS: AtomicUsize = AtomicUsize::new(0);

pub const SAMPLING_SIGNAL: c_int = libc::SIGPROF;

/// Installs `handler` for the sampling signal once (idempotent).
pub fn install(handler: Handler) -> Result<(), String> {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    let mut result = Ok(());
    INSTALLED.call_once(|| {
        // SAFETY: sigaction with zeroed structs filled before use.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(SAMPLING_SIGNAL, &sa, &mut old) != 0 {
                result = Err(format!(
                    "sigaction(SIGPROF) failed: {}",
                    std::io::Error::last_os_error()
                ));
                return;
            }
            if old.sa_sigaction != handler as usize {
                PREVIOUS_ACTION.store(old.sa_sigaction, Ordering::Relaxed);
                PREVIOUS_FLAGS.store(old.sa_flags as usize, Ordering::Relaxed);
            }
        }
    });
    result
}

/// Passes a signal that is not ours to the handler installed before ours, if any.
/// Signal-safe.
pub fn chain(sig: c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let action = PREVIOUS_ACTION.load(Ordering::Relaxed);
    if action == libc::SIG_DFL || action == libc::SIG_IGN {
        return;
    }
    let flags = PREVIOUS_FLAGS.load(Ordering::Relaxed) as c_int;
    // SAFETY: `action` was a handler installed by someone else for this signal, of the
    // kind its flags say.
    unsafe {
        if flags & libc::SA_SIGINFO != 0 {
            let f: Handler = std::mem::transmute(action);
            f(sig, info, uc);
        } else {
            let f: extern "C" fn(c_int) = std::mem::transmute(action);
            f(sig);
        }
    }
}

/// Reads `si_code` and, for POSIX timer signals, `si_value` from a siginfo.
/// Signal-safe.
///
/// # Safety
/// `info` is null or the siginfo the kernel passed to an SA_SIGINFO handler.
pub unsafe fn code_and_value(info: *const libc::siginfo_t) -> (c_int, u64) {
    if info.is_null() {
        return (0, 0);
    }
    // SAFETY: the kernel's siginfo is 128 bytes; si_code sits at offset 8 and, for
    // SI_TIMER, si_value (sigval) at offset 24 (after si_tid and si_overrun).
    unsafe {
        let code = (*info).si_code;
        let value = if code == libc::SI_TIMER {
            (info as *const u8).add(24).cast::<u64>().read_unaligned()
        } else {
            0
        };
        (code, value)
    }
}

/// Saves errno on creation and restores it on drop, so a handler never changes the
/// errno the interrupted code sees. Signal-safe.
pub struct ErrnoGuard(c_int);

impl ErrnoGuard {
    pub fn new() -> ErrnoGuard {
        // SAFETY: __errno_location returns this thread's errno slot.
        ErrnoGuard(unsafe { *libc::__errno_location() })
    }
}

impl Default for ErrnoGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ErrnoGuard {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = self.0 };
    }
}
