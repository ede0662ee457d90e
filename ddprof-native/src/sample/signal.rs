//! Installing the sampling signal handler, remembering what was there before so that
//! signals that are not ours reach it.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

pub type Handler = extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void);

pub const SAMPLING_SIGNAL: c_int = libc::SIGPROF;

/// The wall-clock engine's signal: the sampler thread queues it to each chosen thread with
/// `rt_tgsigqueueinfo` (`SI_QUEUE`, carrying [`WALL_SIGNAL_COOKIE`]).
pub const WALL_SIGNAL: c_int = libc::SIGVTALRM;

/// Value carried by our wall-clock signals (`si_value` of SI_QUEUE).
pub const WALL_SIGNAL_COOKIE: u64 = 0x6464_7072_6f66_0002;

/// `si_code` of an fd's signal (SIGIO-style, `F_SETSIG`): data to read, and the fd hung up
/// (a perf event that disabled itself). The kernel's values; libc does not export them.
pub const POLL_IN: c_int = 1;
pub const POLL_HUP: c_int = 6;

/// Value carried by our own timer signals (`si_value` of SI_TIMER), to tell them from
/// anyone else's SIGPROF.
pub const TIMER_SIGNAL_MAGIC: u64 = 0x6464_7072_6f66_0001;

/// A `sigaction` call that failed: which signal, which step, and errno. Plain data, so
/// that the wing never formats; the caller turns it into a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SigactionFailed {
    pub signal: &'static str,
    /// "query" or "install".
    pub step: &'static str,
    pub errno: c_int,
}

impl SigactionFailed {
    fn now(sig: c_int, step: &'static str) -> SigactionFailed {
        SigactionFailed {
            signal: match sig {
                libc::SIGSEGV => "SIGSEGV",
                libc::SIGBUS => "SIGBUS",
                libc::SIGPROF => "SIGPROF",
                libc::SIGVTALRM => "SIGVTALRM",
                _ => "signal",
            },
            step,
            // SAFETY: __errno_location returns this thread's errno slot.
            errno: unsafe { *libc::__errno_location() },
        }
    }
}

/// The disposition a signal had before ours: the one place that remembers it and calls
/// it, for the sampling signal and the fault signals alike.
pub struct Previous {
    /// `sa_sigaction` / `sa_handler` (the same field), or `SIG_DFL` / `SIG_IGN`.
    action: AtomicUsize,
    flags: AtomicI32,
}

impl Previous {
    pub const fn new() -> Previous {
        Previous {
            action: AtomicUsize::new(libc::SIG_DFL),
            flags: AtomicI32::new(0),
        }
    }

    /// Remembers `old` as the disposition to chain to.
    pub fn record(&self, old: &libc::sigaction) {
        self.action.store(old.sa_sigaction, Ordering::Release);
        self.flags.store(old.sa_flags, Ordering::Release);
    }

    /// `SIG_DFL`, `SIG_IGN` or a handler's address. Signal-safe.
    pub fn action(&self) -> usize {
        self.action.load(Ordering::Acquire)
    }

    /// Calls the previous handler with the kernel's own arguments, as the kernel would
    /// have (a one-shot `SA_RESETHAND` handler is forgotten first). Does nothing for
    /// `SIG_DFL`/`SIG_IGN`: what those mean depends on the signal, so the caller decides.
    /// Signal-safe.
    pub fn call(&self, sig: c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
        let action = self.action();
        if action == libc::SIG_DFL || action == libc::SIG_IGN {
            return;
        }
        let flags = self.flags.load(Ordering::Acquire);
        if flags & libc::SA_RESETHAND != 0 {
            self.action.store(libc::SIG_DFL, Ordering::Release);
            self.flags.store(0, Ordering::Release);
        }
        // SAFETY: `action` is the handler someone else installed for this signal, of the
        // kind its SA_SIGINFO flag says; we pass the kernel's own arguments through.
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
}

impl Default for Previous {
    fn default() -> Self {
        Self::new()
    }
}

/// The sampling signal's disposition before ours.
static PREVIOUS: Previous = Previous::new();
/// Our SIGPROF handler's address once installed, else 0.
static OURS: AtomicUsize = AtomicUsize::new(0);
/// The wall-clock signal's disposition before ours.
static PREVIOUS_WALL: Previous = Previous::new();
static OURS_WALL: AtomicUsize = AtomicUsize::new(0);

/// Installs `handler` for the sampling signal (callers are serialised by the profiler lock).
/// Nothing happens while it is the handler in force; where another library's handler has
/// replaced it since, ours is installed again (see [`install_once`]).
pub fn install(handler: Handler) -> Result<(), SigactionFailed> {
    install_once(SAMPLING_SIGNAL, handler, &PREVIOUS, &OURS)
}

/// Installs `handler` for the wall-clock signal, as [`install`] does for SIGPROF.
pub fn install_wall(handler: Handler) -> Result<(), SigactionFailed> {
    install_once(WALL_SIGNAL, handler, &PREVIOUS_WALL, &OURS_WALL)
}

/// One of our two sampling signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    Cpu,
    Wall,
}

impl Sampling {
    pub fn signal(self) -> c_int {
        match self {
            Sampling::Cpu => SAMPLING_SIGNAL,
            Sampling::Wall => WALL_SIGNAL,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Sampling::Cpu => "SIGPROF",
            Sampling::Wall => "SIGVTALRM",
        }
    }
}

/// The disposition in force for `which` where it is no longer the handler we installed
/// (`SIG_DFL`, `SIG_IGN` or another handler's address): someone called `sigaction` or
/// `signal` after us. None before our first install, while ours is in force, or if the
/// query failed. Not for a signal handler (the caller formats and logs).
pub fn displaced(which: Sampling) -> Option<usize> {
    let ours = match which {
        Sampling::Cpu => &OURS,
        Sampling::Wall => &OURS_WALL,
    }
    .load(Ordering::Acquire);
    if ours == 0 {
        return None;
    }
    let now = query(which.signal()).ok()?.sa_sigaction;
    (now != ours).then_some(now)
}

/// Installs `handler` for `sig` unless it is in force already. The first install remembers
/// the disposition it replaced in `previous`, the chain target of signals that are not ours.
/// A later one (another handler took the signal since) keeps that target, as DataDog's
/// profiler does: recording the intruder instead would loop forever between the two handlers
/// if it chains back to ours, and call into freed code if its library is unloaded later.
fn install_once(
    sig: c_int,
    handler: Handler,
    previous: &Previous,
    ours: &AtomicUsize,
) -> Result<(), SigactionFailed> {
    let first = ours.load(Ordering::Acquire) == 0;
    if !first && query(sig)?.sa_sigaction == handler as usize {
        return Ok(());
    }
    // SAFETY: sigaction with zeroed structs filled before use.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        sa.sa_mask = sampling_signals();
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, &sa, &mut old) != 0 {
            return Err(SigactionFailed::now(sig, "install"));
        }
        if first && old.sa_sigaction != handler as usize {
            previous.record(&old);
        }
    }
    ours.store(handler as usize, Ordering::Release);
    Ok(())
}

/// The set of our sampling signals (SIGPROF and SIGVTALRM): each of our handlers blocks all of
/// them while it runs (its `sa_mask`; its own signal is blocked anyway, no `SA_NODEFER`). A
/// thread that resumes with both pending (the CPU tick came as it was descheduled, the wall
/// signal while it waited) gets the lower-numbered SIGVTALRM first; without the mask the CPU
/// handler ran nested inside the wall handler, took our handler for the interrupted code and
/// could not walk past its signal frame (issue 32: a quarter of the CPU samples under a CPU
/// quota). Blocked, the second signal is delivered as the first handler returns, with the
/// interrupted code's context. The fault signals stay unblocked: `safe_access` needs them.
pub fn sampling_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset fill a local sigset_t; both signal numbers are valid.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, SAMPLING_SIGNAL);
        libc::sigaddset(&mut set, WALL_SIGNAL);
        set
    }
}

/// Whether a CPU sampling signal (SIGPROF) is pending for the calling thread (or its
/// process), that is, blocked by one of our handlers until it returns. False if unknown.
/// Signal-safe (`sigpending` is async-signal-safe).
pub fn cpu_signal_pending() -> bool {
    // SAFETY: sigpending fills a local sigset_t; sigismember reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut set) == 0 && libc::sigismember(&set, SAMPLING_SIGNAL) == 1
    }
}

/// Passes a signal that is not ours to the handler installed before ours, if any.
/// Signal-safe.
pub fn chain(sig: c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    PREVIOUS.call(sig, info, uc);
}

/// [`chain`] for the wall-clock signal. Signal-safe.
pub fn chain_wall(sig: c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    PREVIOUS_WALL.call(sig, info, uc);
}

/// Queries `sig`'s disposition, for installers that build on it. `Err` carries errno.
pub fn query(sig: c_int) -> Result<libc::sigaction, SigactionFailed> {
    // SAFETY: sigaction fills a zeroed struct we own; a null new action only queries.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
            return Err(SigactionFailed::now(sig, "query"));
        }
        Ok(old)
    }
}

/// Sets `sig`'s disposition to `new`, returning the one it replaced.
pub fn replace(sig: c_int, new: &libc::sigaction) -> Result<libc::sigaction, SigactionFailed> {
    // SAFETY: as in `query`, with a valid new action.
    unsafe {
        let mut replaced: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, new, &mut replaced) != 0 {
            return Err(SigactionFailed::now(sig, "install"));
        }
        Ok(replaced)
    }
}

/// What a handler needs of a siginfo: `si_code`, for POSIX timer signals (`SI_TIMER`)
/// `si_value` and `si_overrun`, the expirations the kernel merged into this one signal, and
/// for queued signals (`SI_QUEUE`) `si_value`, for an fd's signals (`POLL_*`) `si_fd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SigInfo {
    pub code: c_int,
    pub value: u64,
    pub overrun: u32,
    /// `si_fd` of an fd's signal (`POLL_IN` .. `POLL_HUP`: perf_events), else -1.
    pub fd: c_int,
}

impl Default for SigInfo {
    fn default() -> Self {
        SigInfo {
            code: 0,
            value: 0,
            overrun: 0,
            fd: -1,
        }
    }
}

/// Reads a [`SigInfo`]. Signal-safe.
///
/// # Safety
/// `info` is null or the siginfo the kernel passed to an SA_SIGINFO handler.
pub unsafe fn read_info(info: *const libc::siginfo_t) -> SigInfo {
    if info.is_null() {
        return SigInfo::default();
    }
    // SAFETY: the kernel's siginfo is 128 bytes; si_code sits at offset 8 and, for
    // SI_TIMER, the union at 16 holds si_tid (16), si_overrun (20) and si_value (24); for
    // SI_QUEUE si_pid (16), si_uid (20) and si_value (24); for the POLL_* codes of an fd's
    // signal si_band (16, a long) and si_fd (24).
    unsafe {
        let code = (*info).si_code;
        if (POLL_IN..=POLL_HUP).contains(&code) {
            let base = info as *const u8;
            return SigInfo {
                code,
                fd: base.add(24).cast::<c_int>().read_unaligned(),
                ..SigInfo::default()
            };
        }
        if code == libc::SI_QUEUE {
            let base = info as *const u8;
            return SigInfo {
                code,
                value: base.add(24).cast::<u64>().read_unaligned(),
                overrun: 0,
                fd: -1,
            };
        }
        if code != libc::SI_TIMER {
            return SigInfo {
                code,
                ..SigInfo::default()
            };
        }
        let base = info as *const u8;
        SigInfo {
            code,
            value: base.add(24).cast::<u64>().read_unaligned(),
            overrun: base.add(20).cast::<i32>().read_unaligned().max(0) as u32,
            fd: -1,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU32};

    static OUTER_RUNNING: AtomicBool = AtomicBool::new(false);
    static NESTED: AtomicU32 = AtomicU32::new(0);
    static INNER_RAN: AtomicU32 = AtomicU32::new(0);
    static OTHER: AtomicI32 = AtomicI32::new(0);

    /// Raises the other sampling signal at itself, then works a little: without our mask its
    /// handler would run right away, nested in this one.
    extern "C" fn outer(_: c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
        OUTER_RUNNING.store(true, Ordering::SeqCst);
        // SAFETY: a signal to the calling thread.
        unsafe { libc::pthread_kill(libc::pthread_self(), OTHER.load(Ordering::SeqCst)) };
        for _ in 0..10_000 {
            std::hint::spin_loop();
        }
        OUTER_RUNNING.store(false, Ordering::SeqCst);
    }

    extern "C" fn inner(_: c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
        if OUTER_RUNNING.load(Ordering::SeqCst) {
            NESTED.fetch_add(1, Ordering::SeqCst);
        }
        INNER_RAN.fetch_add(1, Ordering::SeqCst);
    }

    /// What issue 32 was about: a CPU signal that arrives while the wall handler runs (or the
    /// other way round) waits until that handler returned, so it never samples our handler.
    #[test]
    fn our_sampling_handlers_never_nest() {
        let saved = [query(SAMPLING_SIGNAL).unwrap(), query(WALL_SIGNAL).unwrap()];
        for (first, second) in [
            (WALL_SIGNAL, SAMPLING_SIGNAL),
            (SAMPLING_SIGNAL, WALL_SIGNAL),
        ] {
            let (p1, p2) = (Previous::new(), Previous::new());
            let (i1, i2) = (AtomicUsize::new(0), AtomicUsize::new(0));
            install_once(first, outer, &p1, &i1).unwrap();
            install_once(second, inner, &p2, &i2).unwrap();
            OTHER.store(second, Ordering::SeqCst);
            NESTED.store(0, Ordering::SeqCst);
            INNER_RAN.store(0, Ordering::SeqCst);
            // On a thread of its own: both signals go to that thread only.
            std::thread::spawn(move || {
                // SAFETY: a signal to the calling thread, whose handler is `outer`.
                unsafe { libc::pthread_kill(libc::pthread_self(), first) };
            })
            .join()
            .unwrap();
            assert_eq!(
                INNER_RAN.load(Ordering::SeqCst),
                1,
                "signal {second} after {first}"
            );
            assert_eq!(
                NESTED.load(Ordering::SeqCst),
                0,
                "signal {second} ran inside {first}'s handler"
            );
            let mask = query(first).unwrap().sa_mask;
            // SAFETY: sigismember reads a sigset_t we own.
            assert_eq!(unsafe { libc::sigismember(&mask, second) }, 1);
        }
        replace(SAMPLING_SIGNAL, &saved[0]).unwrap();
        replace(WALL_SIGNAL, &saved[1]).unwrap();
    }

    extern "C" fn original(_: c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {}
    extern "C" fn intruder(_: c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {}

    /// A library that takes the signal after us is seen, and the next install puts ours back
    /// while the chain target stays the handler that was there before our first install.
    #[test]
    fn a_replaced_handler_is_seen_and_installed_again() {
        // SIGUSR2 is no test harness's: the three handlers here never run.
        let sig = libc::SIGUSR2;
        let saved = query(sig).unwrap();
        // SAFETY: a zeroed sigaction is valid (empty mask, no flags).
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = original as Handler as usize;
        sa.sa_flags = libc::SA_SIGINFO;
        replace(sig, &sa).unwrap();
        let (previous, ours) = (Previous::new(), AtomicUsize::new(0));
        install_once(sig, outer, &previous, &ours).unwrap();
        assert_eq!(previous.action(), original as Handler as usize);
        assert_eq!(query(sig).unwrap().sa_sigaction, outer as Handler as usize);

        sa.sa_sigaction = intruder as Handler as usize;
        assert_eq!(
            replace(sig, &sa).unwrap().sa_sigaction,
            outer as Handler as usize
        );
        assert_ne!(
            query(sig).unwrap().sa_sigaction,
            ours.load(Ordering::Acquire)
        );

        install_once(sig, outer, &previous, &ours).unwrap();
        assert_eq!(
            query(sig).unwrap().sa_sigaction,
            outer as Handler as usize,
            "ours again"
        );
        assert_eq!(
            previous.action(),
            original as Handler as usize,
            "chain target kept"
        );
        replace(sig, &saved).unwrap();
    }

    #[test]
    fn nothing_is_displaced_before_our_first_install() {
        if OURS.load(Ordering::Acquire) == 0 {
            assert_eq!(displaced(Sampling::Cpu), None);
        }
        assert_eq!(Sampling::Wall.signal(), libc::SIGVTALRM);
        assert_eq!(Sampling::Cpu.name(), "SIGPROF");
    }
}
