//! Crash-protected loads: reading memory that may have been freed or unmapped (VM
//! structures seen from a signal handler) without crashing the process.
//!
//! # How
//! Each load is a tiny assembly function whose first instruction is the load (see
//! `safe_access_x86_64.rs`). Our SIGSEGV/SIGBUS handler compares the faulting pc with
//! those instructions; on a match it moves the pc to a landing pad that returns
//! `(0, faulted = 1)` to the caller, so the Rust wrapper returns `None`. Any other fault
//! goes to the handler that was installed before ours (HotSpot's: it uses SIGSEGV for
//! implicit null checks, safepoint polls and SafeFetch), with the same
//! `(sig, info, ucontext)`, as if we were not there.
//!
//! # Rules for callers
//! - Call [`install`] after the JVM has installed its own handlers (VMInit or later; the
//!   profiler does it at start). It is never uninstalled. Before it is installed, loads
//!   fall back to `process_vm_readv` (correct, about a microsecond each).
//! - A protected load needs SIGSEGV and SIGBUS unblocked on the calling thread: a
//!   handler that may call it must not put them in its `sa_mask`. (If they are blocked
//!   when the load faults, the kernel kills the process.)
//! - Only the loads here are protected. An ordinary Rust read of VM memory that faults
//!   goes to HotSpot's handler, which reports a crash.
//!
//! # libjsig
//! With `libjsig.so` preloaded, our `sigaction` call does not replace HotSpot's handler:
//! libjsig stores ours as the "chained" one and HotSpot calls it for every fault it does
//! not recognise. Our loads' faults are not in the code cache and not SafeFetch, so they
//! still reach us and are recovered; the previous handler we chain to is then libjsig's
//! record of the pre-JVM one (usually `SIG_DFL`).
//!
//! # Other architectures
//! Only x86_64 has protected loads so far. Elsewhere every load goes through
//! `process_vm_readv` (a syscall per load; it can be refused by seccomp, and then loads
//! return `None`). An aarch64 port adds `safe_access_aarch64.rs` with the same items as
//! the x86_64 file (see its header for the instruction sequence).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::signal::{self, Previous, SigactionFailed};

#[cfg(target_arch = "x86_64")]
#[path = "safe_access_x86_64.rs"]
mod arch;

/// The shape an architecture file provides. This one has no protected loads: every load
/// takes the `process_vm_readv` path, and the fault handler never recognises a fault.
#[cfg(not(target_arch = "x86_64"))]
#[allow(dead_code)]
mod arch {
    pub const PROTECTED_LOADS: bool = false;
    pub fn load64(_addr: usize) -> Option<u64> {
        None
    }
    pub fn load32(_addr: usize) -> Option<u64> {
        None
    }
    pub fn load16(_addr: usize) -> Option<u64> {
        None
    }
    pub fn load8(_addr: usize) -> Option<u64> {
        None
    }
    /// # Safety
    /// `uc` is null or the kernel's ucontext.
    pub unsafe fn recover(_uc: *mut std::ffi::c_void) -> bool {
        false
    }
}

const _: () = assert!(usize::BITS == 64, "safe_access assumes 64-bit pointers");

/// Addresses below this are never loaded: the null page (a null `Klass*` plus a field
/// offset). Loading them would fault anyway; refusing them up front is cheaper.
const MIN_ADDR: usize = 4096;
/// Nor is the top page of the address space (`-1` plus a small offset).
const MAX_END: usize = usize::MAX - 4095;

/// glibc's `SA_RESTORER`: set by glibc itself in every `sigaction` call; not ours to copy.
const SA_RESTORER: c_int = 0x0400_0000;

static INSTALLED: AtomicBool = AtomicBool::new(false);
static FAULTS_RECOVERED: AtomicU64 = AtomicU64::new(0);

/// The disposition that was in place before ours, for one signal.
static PREVIOUS_SEGV: Previous = Previous::new();
static PREVIOUS_BUS: Previous = Previous::new();

/// Whether `[addr, addr + size)` is worth trying at all.
#[inline(always)]
fn plausible(addr: usize, size: usize) -> bool {
    addr >= MIN_ADDR && addr <= MAX_END.wrapping_sub(size)
}

/// Whether loads can use the fault-recovering instructions.
#[inline(always)]
fn protected() -> bool {
    arch::PROTECTED_LOADS && INSTALLED.load(Ordering::Acquire)
}

/// Reads `N` bytes at `addr`, whichever way is available. Signal-safe.
#[inline(always)]
fn load_n<const N: usize>(addr: usize, fast: fn(usize) -> Option<u64>) -> Option<u64> {
    if !plausible(addr, N) {
        return None;
    }
    if protected() {
        return fast(addr);
    }
    // The N bytes land at the front of an 8-byte buffer, in memory order.
    let mut bytes = [0u8; 8];
    let head = bytes.get_mut(..N)?;
    if !slow_read(head, addr) {
        return None;
    }
    Some(if cfg!(target_endian = "little") {
        u64::from_le_bytes(bytes)
    } else {
        u64::from_be_bytes(bytes) >> (8 * (8 - N))
    })
}

/// Loads a pointer-sized word at `addr`; `None` if it is not readable. Signal-safe.
#[inline]
pub fn load_usize(addr: usize) -> Option<usize> {
    load_u64(addr).map(|v| v as usize)
}

/// Loads 8 bytes at `addr` (any alignment); `None` if not readable. Signal-safe.
#[inline]
pub fn load_u64(addr: usize) -> Option<u64> {
    load_n::<8>(addr, arch::load64)
}

/// Loads 4 bytes at `addr`; `None` if not readable. Signal-safe.
#[inline]
pub fn load_u32(addr: usize) -> Option<u32> {
    load_n::<4>(addr, arch::load32).map(|v| v as u32)
}

/// Loads 4 bytes at `addr` as a signed value; `None` if not readable. Signal-safe.
#[inline]
pub fn load_i32(addr: usize) -> Option<i32> {
    load_u32(addr).map(|v| v as i32)
}

/// Loads 2 bytes at `addr`; `None` if not readable. Signal-safe.
#[inline]
pub fn load_u16(addr: usize) -> Option<u16> {
    load_n::<2>(addr, arch::load16).map(|v| v as u16)
}

/// Loads 1 byte at `addr`; `None` if not readable. Signal-safe.
#[inline]
pub fn load_u8(addr: usize) -> Option<u8> {
    load_n::<1>(addr, arch::load8).map(|v| v as u8)
}

/// Copies `dst.len()` bytes from `src` into `dst`, 8 bytes per protected load and the
/// tail byte by byte. Returns false if any byte was unreadable; `dst` may then hold a
/// partial copy. Signal-safe.
pub fn copy(dst: &mut [u8], src: usize) -> bool {
    if dst.is_empty() {
        return true;
    }
    match src.checked_add(dst.len()) {
        Some(end) if src >= MIN_ADDR && end <= MAX_END => {}
        _ => return false,
    }
    if !protected() {
        return slow_read(dst, src);
    }
    let mut at = src;
    let mut words = dst.chunks_exact_mut(8);
    for word in &mut words {
        let Some(value) = arch::load64(at) else {
            return false;
        };
        for (d, s) in word.iter_mut().zip(value.to_ne_bytes()) {
            *d = s;
        }
        at = at.wrapping_add(8);
    }
    for byte in words.into_remainder() {
        let Some(value) = arch::load8(at) else {
            return false;
        };
        *byte = value as u8;
        at = at.wrapping_add(1);
    }
    true
}

/// Reads `dst.len()` bytes at `src` with `process_vm_readv` on our own process: the
/// kernel reports an unreadable range as an error instead of a fault. Keeps errno.
/// Signal-safe (one system call).
fn slow_read(dst: &mut [u8], src: usize) -> bool {
    let saved = errno();
    let local = libc::iovec {
        iov_base: dst.as_mut_ptr().cast(),
        iov_len: dst.len(),
    };
    let remote = libc::iovec {
        iov_base: src as *mut c_void,
        iov_len: dst.len(),
    };
    // SAFETY: `local` describes `dst`, which we borrow mutably; the kernel checks
    // `remote` and fails with EFAULT instead of faulting.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    set_errno(saved);
    n >= 0 && n as usize == dst.len()
}

/// How many faults of protected loads the handler has turned into `None` so far.
pub fn faults_recovered() -> u64 {
    FAULTS_RECOVERED.load(Ordering::Relaxed)
}

/// Whether our SIGSEGV and SIGBUS handlers are both installed.
pub fn is_installed() -> bool {
    INSTALLED.load(Ordering::Acquire)
}

/// Installs our SIGSEGV and SIGBUS handler in front of the current ones, which it chains
/// to. Idempotent; never undone. Call it after the JVM has installed its handlers.
pub fn install() -> Result<(), SigactionFailed> {
    if INSTALLED.load(Ordering::Acquire) {
        return Ok(());
    }
    install_one(libc::SIGSEGV, &PREVIOUS_SEGV)?;
    install_one(libc::SIGBUS, &PREVIOUS_BUS)?;
    INSTALLED.store(true, Ordering::Release);
    Ok(())
}

fn install_one(sig: c_int, previous: &Previous) -> Result<(), SigactionFailed> {
    let ours = on_fault as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
    let old = signal::query(sig)?;
    if old.sa_sigaction == ours {
        // Ours already (an earlier install that failed on the other signal).
        return Ok(());
    }
    // Record the previous disposition before ours can run.
    previous.record(&old);
    // SAFETY: a zeroed sigaction is a valid value to fill.
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = ours;
    // Block what the previous handler blocked, so it runs under the mask it asked for
    // (HotSpot's: everything except the synchronous error signals). Keep its flags
    // (SA_RESTART, SA_ONSTACK if it had it); we need SA_SIGINFO for the ucontext, and
    // SA_NODEFER so a protected load still recovers if it runs while this signal is
    // being handled. SA_RESETHAND is emulated by `Previous::call`.
    new.sa_mask = old.sa_mask;
    new.sa_flags =
        (old.sa_flags & !(libc::SA_RESETHAND | SA_RESTORER)) | libc::SA_SIGINFO | libc::SA_NODEFER;
    let replaced = signal::replace(sig, &new)?;
    // Someone changed the disposition between our two calls: chain to theirs.
    if replaced.sa_sigaction != old.sa_sigaction && replaced.sa_sigaction != ours {
        previous.record(&replaced);
    }
    Ok(())
}

/// Our SIGSEGV/SIGBUS handler. Signal-safe.
///
/// No value with a destructor is alive in this frame: HotSpot's handler may `longjmp`
/// out of it (JFR's thread crash protection), which is only sound over plain frames.
extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, uc: *mut c_void) {
    let saved = errno();
    // SAFETY: `uc` is the kernel's ucontext for this signal (SA_SIGINFO).
    if unsafe { arch::recover(uc) } {
        FAULTS_RECOVERED.fetch_add(1, Ordering::Relaxed);
        set_errno(saved);
        return;
    }
    forward(sig, info, uc);
    set_errno(saved);
}

/// Hands a fault that is not ours to the previous disposition, as the kernel would have.
/// Signal-safe.
fn forward(sig: c_int, info: *mut libc::siginfo_t, uc: *mut c_void) {
    let previous = if sig == libc::SIGBUS {
        &PREVIOUS_BUS
    } else {
        &PREVIOUS_SEGV
    };
    let action = previous.action();
    // si_code > 0: raised by the kernel for a faulting instruction, which re-executes
    // when we return. <= 0: sent by kill/tgkill/sigqueue, which happens only once.
    let from_kernel = if info.is_null() {
        true
    } else {
        // SAFETY: a non-null `info` is the kernel's siginfo.
        unsafe { (*info).si_code > 0 }
    };

    if action == libc::SIG_IGN && !from_kernel {
        return;
    }
    if action == libc::SIG_DFL || action == libc::SIG_IGN {
        // Default action (for SIGSEGV/SIGBUS: terminate with a core dump). The kernel
        // does not let a fault be ignored either: it applies the default. Restore
        // SIG_DFL; a faulting instruction faults again on return, a sent signal is
        // sent again.
        // SAFETY: sigaction and raise are async-signal-safe; the struct is ours.
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
            if !from_kernel {
                libc::raise(sig);
            }
        }
        return;
    }
    previous.call(sig, info, uc);
}

#[inline(always)]
fn errno() -> c_int {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

#[inline(always)]
fn set_errno(value: c_int) {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = value }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;
    use std::sync::atomic::AtomicI32;

    const PAGE: usize = 4096;

    /// An anonymous mapping of `pages` pages with `prot`.
    fn map(pages: usize, prot: c_int) -> usize {
        // SAFETY: a fresh private anonymous mapping; the caller owns it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * PAGE,
                prot,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        p as usize
    }

    fn unmap(addr: usize, pages: usize) {
        // SAFETY: `addr` came from `map` with this many pages.
        unsafe { libc::munmap(addr as *mut c_void, pages * PAGE) };
    }

    #[test]
    fn loads_of_valid_memory_return_the_value() {
        install().unwrap();
        assert!(is_installed());
        let buf: [u8; 24] = std::array::from_fn(|i| (i as u8).wrapping_mul(17).wrapping_add(3));
        let base = buf.as_ptr() as usize;
        for off in 0..16 {
            let at = base + off;
            let b = &buf[off..];
            assert_eq!(load_u8(at), Some(b[0]));
            assert_eq!(load_u16(at), Some(u16::from_ne_bytes([b[0], b[1]])));
            let w = [b[0], b[1], b[2], b[3]];
            assert_eq!(load_u32(at), Some(u32::from_ne_bytes(w)));
            assert_eq!(load_i32(at), Some(i32::from_ne_bytes(w)));
            let q: [u8; 8] = b[..8].try_into().unwrap();
            assert_eq!(load_u64(at), Some(u64::from_ne_bytes(q)));
            assert_eq!(load_usize(at), Some(usize::from_ne_bytes(q)));
        }
        let negative: i32 = -123_456;
        assert_eq!(load_i32(&negative as *const i32 as usize), Some(-123_456));
    }

    #[test]
    fn obviously_bad_addresses_are_refused_without_a_fault() {
        install().unwrap();
        for addr in [0, 8, 4095, usize::MAX - 3, usize::MAX - 4000] {
            assert_eq!(load_u64(addr), None);
            assert_eq!(load_u8(addr), None);
        }
        let mut dst = [0u8; 16];
        assert!(!copy(&mut dst, 16));
        assert!(!copy(&mut dst, usize::MAX - 8));
        assert!(copy(&mut [], 0));
    }

    #[test]
    fn faults_on_unmapped_and_protected_pages_return_none() {
        install().unwrap();
        let before = faults_recovered();

        let none = map(1, libc::PROT_NONE);
        assert_eq!(load_u64(none), None);
        assert_eq!(load_u32(none + 100), None);
        assert_eq!(load_u16(none + 2), None);
        assert_eq!(load_u8(none + PAGE - 1), None);
        unmap(none, 1);

        // A page that was mapped and is not any more (stale pointer). Another test
        // thread could map something there meanwhile; PROT_NONE above is the firm case.
        let gone = map(1, libc::PROT_READ);
        unmap(gone, 1);
        assert_eq!(load_u64(gone + 8), None);

        // A non-canonical address: a general-protection fault, also SIGSEGV.
        assert_eq!(load_u64(0x8000_0000_0000_0000), None);
        // Kernel space: a page fault with the supervisor bit.
        assert_eq!(load_u64(0xffff_8000_0000_0000), None);

        assert!(faults_recovered() >= before + 6, "{}", faults_recovered());
    }

    #[test]
    fn sigbus_on_a_truncated_file_mapping_returns_none() {
        install().unwrap();
        let before = faults_recovered();
        let path = std::env::temp_dir().join(format!("ddprof-safe-access-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(2 * PAGE as u64).unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: a shared read-only mapping of our own temporary file.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * PAGE,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let p = p as usize;
        assert_eq!(load_u64(p), Some(0));
        file.set_len(0).unwrap();
        assert_eq!(load_u64(p), None);
        assert_eq!(load_u8(p + PAGE + 1), None);
        let mut dst = [0u8; 20];
        assert!(!copy(&mut dst, p));
        unmap(p, 2);
        drop(file);
        std::fs::remove_file(&path).unwrap();
        assert!(faults_recovered() >= before + 3);
    }

    #[test]
    fn copy_reads_exactly_the_range() {
        install().unwrap();
        // Two pages; the second is made unreadable.
        let base = map(2, libc::PROT_READ | libc::PROT_WRITE);
        for i in 0..PAGE {
            // SAFETY: inside the first page of our read-write mapping.
            unsafe { *((base + i) as *mut u8) = (i % 251) as u8 };
        }
        // SAFETY: the second page of our own mapping.
        unsafe { libc::mprotect((base + PAGE) as *mut c_void, PAGE, libc::PROT_NONE) };
        let expected = |from: usize, len: usize| -> Vec<u8> {
            (from..from + len).map(|i| (i % 251) as u8).collect()
        };
        for len in [1, 7, 8, 9, 27, 64, 100] {
            // Ends exactly at the unreadable page: every byte is readable.
            let from = PAGE - len;
            let mut dst = vec![0u8; len];
            assert!(copy(&mut dst, base + from), "len {len}");
            assert_eq!(dst, expected(from, len));
            // One byte further: the last byte is on the unreadable page.
            assert!(!copy(&mut dst, base + from + 1), "len {len}");
        }
        unmap(base, 2);
    }

    #[test]
    fn the_process_vm_readv_fallback_reads_and_refuses() {
        let value: u64 = 0x0123_4567_89ab_cdef;
        let mut dst = [0u8; 8];
        assert!(slow_read(&mut dst, &value as *const u64 as usize));
        assert_eq!(u64::from_ne_bytes(dst), value);
        let none = map(1, libc::PROT_NONE);
        set_errno(1234);
        assert!(!slow_read(&mut dst, none));
        assert_eq!(errno(), 1234, "errno is kept");
        unmap(none, 1);
    }

    #[test]
    fn errno_survives_a_recovered_fault() {
        install().unwrap();
        let none = map(1, libc::PROT_NONE);
        set_errno(4321);
        assert_eq!(load_u64(none), None);
        assert_eq!(errno(), 4321);
        unmap(none, 1);
    }

    #[test]
    fn loads_recover_on_many_threads_at_once() {
        install().unwrap();
        let none = map(1, libc::PROT_NONE);
        let value = 77u64;
        let good = &value as *const u64 as usize;
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..2000 {
                        assert_eq!(load_u64(none + (i % 512) * 8), None);
                        assert_eq!(load_u64(good), Some(77));
                    }
                });
            }
        });
        unmap(none, 1);
    }

    // ---- faults that are not ours, checked in child processes ----

    const CHILD_ENV: &str = "DDPROF_SAFE_ACCESS_CHILD";
    /// Where the child is: 1 while doing protected loads, 2 at the plain fault.
    static PHASE: AtomicI32 = AtomicI32::new(0);
    const FAULT_ADDR: usize = 0x10;

    /// Runs this test binary again, only `child_process_entry`, in `mode`.
    fn run_child(mode: &str) -> std::process::Output {
        Command::new(std::env::current_exe().unwrap())
            .args([
                "sample::safe_access::tests::child_process_entry",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, mode)
            .output()
            .unwrap()
    }

    fn say(text: &str) {
        // SAFETY: write(2) on stderr; async-signal-safe.
        unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
    }

    extern "C" fn test_siginfo_handler(sig: c_int, info: *mut libc::siginfo_t, uc: *mut c_void) {
        // SAFETY: the kernel's siginfo, forwarded unchanged.
        let addr = unsafe { (*info).si_addr() } as usize;
        let phase = PHASE.load(Ordering::SeqCst);
        let right = sig == libc::SIGSEGV && addr == FAULT_ADDR && !uc.is_null();
        say(if right {
            "test handler: SIGSEGV at 0x10\n"
        } else {
            "test handler: wrong\n"
        });
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(if right && phase == 2 { 42 } else { 40 + phase }) };
    }

    extern "C" fn test_bus_handler(sig: c_int, info: *mut libc::siginfo_t, _uc: *mut c_void) {
        // SAFETY: the kernel's siginfo, forwarded unchanged.
        let code = unsafe { (*info).si_code };
        let phase = PHASE.load(Ordering::SeqCst);
        let right = sig == libc::SIGBUS && code == libc::BUS_ADRERR;
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(if right && phase == 2 { 42 } else { 40 + phase }) };
    }

    extern "C" fn test_plain_handler(sig: c_int) {
        let phase = PHASE.load(Ordering::SeqCst);
        // SAFETY: _exit is async-signal-safe.
        unsafe {
            libc::_exit(if sig == libc::SIGSEGV && phase == 2 {
                44
            } else {
                40 + phase
            })
        };
    }

    fn set_disposition(sig: c_int, action: usize, flags: c_int) {
        // SAFETY: a plain sigaction call with a struct we own.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = action;
            sa.sa_flags = flags;
            libc::sigemptyset(&mut sa.sa_mask);
            assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
        }
    }

    /// Protected loads in the child: they must not reach the test's handler.
    fn protected_loads_still_work() {
        PHASE.store(1, Ordering::SeqCst);
        install().unwrap();
        let none = map(1, libc::PROT_NONE);
        assert_eq!(load_u64(none), None);
        assert_eq!(load_u8(none + 5), None);
        assert!(faults_recovered() >= 2);
        PHASE.store(2, Ordering::SeqCst);
    }

    fn plain_null_write() {
        // SAFETY: deliberately not safe: a write into the null page, like a field store
        // through a null reference. The test expects the process to die or exit here.
        unsafe { std::ptr::write_volatile(FAULT_ADDR as *mut u8, 1) };
    }

    #[test]
    fn child_process_entry() {
        let Ok(mode) = std::env::var(CHILD_ENV) else {
            return; // the ordinary test run: nothing to do
        };
        // No core files from the children that are meant to die.
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit with a struct we own; alarm kills a child that hangs (a
        // fault that is neither recovered nor forwarded would repeat forever).
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::alarm(20);
        }
        match mode.as_str() {
            "chain-siginfo" => {
                set_disposition(
                    libc::SIGSEGV,
                    test_siginfo_handler as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void)
                        as usize,
                    libc::SA_SIGINFO,
                );
                protected_loads_still_work();
                plain_null_write();
            }
            "chain-plain" => {
                set_disposition(
                    libc::SIGSEGV,
                    test_plain_handler as extern "C" fn(c_int) as usize,
                    0,
                );
                protected_loads_still_work();
                plain_null_write();
            }
            "chain-bus" => {
                set_disposition(
                    libc::SIGBUS,
                    test_bus_handler as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void)
                        as usize,
                    libc::SA_SIGINFO,
                );
                protected_loads_still_work();
                let path =
                    std::env::temp_dir().join(format!("ddprof-sa-bus-{}", std::process::id()));
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&path)
                    .unwrap();
                std::fs::remove_file(&path).unwrap();
                file.set_len(PAGE as u64).unwrap();
                use std::os::fd::AsRawFd;
                // SAFETY: a shared mapping of our own file.
                let p = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        PAGE,
                        libc::PROT_READ,
                        libc::MAP_SHARED,
                        file.as_raw_fd(),
                        0,
                    )
                };
                assert_ne!(p, libc::MAP_FAILED);
                file.set_len(0).unwrap();
                assert_eq!(load_u32(p as usize), None);
                // SAFETY: deliberately faults (SIGBUS): the file behind the page is gone.
                unsafe { std::ptr::read_volatile(p as *const u8) };
            }
            "default" => {
                set_disposition(libc::SIGSEGV, libc::SIG_DFL, 0);
                protected_loads_still_work();
                plain_null_write();
            }
            "ignored" => {
                set_disposition(libc::SIGSEGV, libc::SIG_IGN, 0);
                protected_loads_still_work();
                // A sent SIGSEGV is ignored, as it would be without us...
                // SAFETY: raise is a plain libc call.
                unsafe { libc::raise(libc::SIGSEGV) };
                say("survived raise\n");
                // ...but a real fault cannot be ignored: the kernel kills the process.
                plain_null_write();
            }
            other => panic!("unknown child mode {other}"),
        }
        // SAFETY: _exit; the modes above must not get here.
        unsafe { libc::_exit(1) };
    }

    fn describe(out: &std::process::Output) -> String {
        format!(
            "{:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    #[test]
    fn other_faults_reach_the_previous_siginfo_handler_unchanged() {
        let out = run_child("chain-siginfo");
        assert_eq!(out.status.code(), Some(42), "{}", describe(&out));
    }

    #[test]
    fn other_faults_reach_a_previous_plain_handler() {
        let out = run_child("chain-plain");
        assert_eq!(out.status.code(), Some(44), "{}", describe(&out));
    }

    #[test]
    fn other_sigbus_faults_reach_the_previous_handler() {
        let out = run_child("chain-bus");
        assert_eq!(out.status.code(), Some(42), "{}", describe(&out));
    }

    #[test]
    fn other_faults_with_a_default_disposition_kill_with_sigsegv() {
        let out = run_child("default");
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGSEGV),
            "{}",
            describe(&out)
        );
    }

    #[test]
    fn an_ignored_sigsegv_is_ignored_when_sent_and_fatal_when_a_fault() {
        let out = run_child("ignored");
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGSEGV),
            "{}",
            describe(&out)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("survived raise"));
    }
}
