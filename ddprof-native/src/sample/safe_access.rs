//! Crash-protected loads: reading memory that may have been freed or unmapped (VM
//! structures seen from a signal handler) without crashing the process.
//!
//! # How
//! Each load is a tiny assembly function whose first instruction is the load (see
//! `safe_access_x86_64.rs`, `safe_access_aarch64.rs`; their shared Rust side is
//! `safe_access_protected.rs`). Our SIGSEGV/SIGBUS handler
//! compares the faulting pc with those instructions; on a match it moves the pc to a
//! landing pad that returns `(0, faulted = 1)` to the caller, so the Rust wrapper returns
//! `None`. Any other fault goes to the handler that was installed before ours (HotSpot's:
//! it uses SIGSEGV for implicit null checks, safepoint polls and SafeFetch), with the
//! same `(sig, info, ucontext)`, as if we were not there.
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
//! x86_64 and aarch64 have protected loads, one file each with the same items. Elsewhere
//! every load goes through `process_vm_readv` (a syscall per load; it can be refused by
//! seccomp, and then loads return `None`). A new architecture adds
//! `safe_access_<arch>.rs` with the same items (`PROTECTED_LOADS`, `load64/32/16/8`,
//! `recover`) and a `cfg` line below.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::load_census::{self as census, Site};
use super::signal::{self, Previous, SigactionFailed};

#[cfg(target_arch = "x86_64")]
#[path = "safe_access_x86_64.rs"]
mod isa;

#[cfg(target_arch = "aarch64")]
#[path = "safe_access_aarch64.rs"]
mod isa;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[path = "safe_access_protected.rs"]
mod arch;

/// The shape an architecture file provides. This one has no protected loads: every load
/// takes the `process_vm_readv` path, and the fault handler never recognises a fault.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
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
    load_usize_at(Site::Other, addr)
}

/// Loads 8 bytes at `addr` (any alignment); `None` if not readable. Signal-safe.
#[inline]
pub fn load_u64(addr: usize) -> Option<u64> {
    census::count(Site::Other);
    load_n::<8>(addr, arch::load64)
}

/// Loads 4 bytes at `addr`; `None` if not readable. Signal-safe.
#[inline]
pub fn load_u32(addr: usize) -> Option<u32> {
    load_u32_at(Site::Other, addr)
}

/// Loads 4 bytes at `addr` as a signed value; `None` if not readable. Signal-safe.
#[inline]
pub fn load_i32(addr: usize) -> Option<i32> {
    load_u32(addr).map(|v| v as i32)
}

/// Loads 2 bytes at `addr`; `None` if not readable. Signal-safe.
#[inline]
pub fn load_u16(addr: usize) -> Option<u16> {
    load_u16_at(Site::Other, addr)
}

/// Loads 1 byte at `addr`; `None` if not readable. Signal-safe.
#[inline]
pub fn load_u8(addr: usize) -> Option<u8> {
    load_u8_at(Site::Other, addr)
}

// The same loads, counted at `site` by the load census (`load_census.rs`; counting only in a
// measurement build).

/// [`load_usize`] for `site`. Signal-safe.
#[inline]
pub fn load_usize_at(site: Site, addr: usize) -> Option<usize> {
    census::count(site);
    load_n::<8>(addr, arch::load64).map(|v| v as usize)
}

/// [`load_u32`] for `site`. Signal-safe.
#[inline]
pub fn load_u32_at(site: Site, addr: usize) -> Option<u32> {
    census::count(site);
    load_n::<4>(addr, arch::load32).map(|v| v as u32)
}

/// [`load_u16`] for `site`. Signal-safe.
#[inline]
pub fn load_u16_at(site: Site, addr: usize) -> Option<u16> {
    census::count(site);
    load_n::<2>(addr, arch::load16).map(|v| v as u16)
}

/// [`load_u8`] for `site`. Signal-safe.
#[inline]
pub fn load_u8_at(site: Site, addr: usize) -> Option<u8> {
    census::count(site);
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
        census::count(Site::Other);
        let Some(value) = arch::load64(at) else {
            return false;
        };
        for (d, s) in word.iter_mut().zip(value.to_ne_bytes()) {
            *d = s;
        }
        at = at.wrapping_add(8);
    }
    for byte in words.into_remainder() {
        census::count(Site::Other);
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
#[path = "safe_access_tests.rs"]
mod tests;
