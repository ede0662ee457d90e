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

    // x86_64: a non-canonical address, a general-protection fault, also SIGSEGV.
    // aarch64 ignores the top byte of user addresses: the null page.
    assert_eq!(load_u64(0x8000_0000_0000_0000), None);
    // Kernel space (x86_64), beyond the 48-bit user range (aarch64).
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
    if process_vm_readv_missing() {
        // qemu-user (7.2) does not implement it: nothing to test under emulation.
        eprintln!("process_vm_readv: ENOSYS here; fallback not tested");
        return;
    }
    assert!(slow_read(&mut dst, &value as *const u64 as usize));
    assert_eq!(u64::from_ne_bytes(dst), value);
    let none = map(1, libc::PROT_NONE);
    set_errno(1234);
    assert!(!slow_read(&mut dst, none));
    assert_eq!(errno(), 1234, "errno is kept");
    unmap(none, 1);
}

/// Whether this kernel (or emulator) lacks `process_vm_readv`.
fn process_vm_readv_missing() -> bool {
    let value = 0u8;
    let mut dst = 0u8;
    let local = libc::iovec {
        iov_base: (&mut dst as *mut u8).cast(),
        iov_len: 1,
    };
    let remote = libc::iovec {
        iov_base: (&value as *const u8).cast_mut().cast(),
        iov_len: 1,
    };
    // SAFETY: both iovecs describe one byte we own.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    n < 0 && errno() == libc::ENOSYS
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

/// The command that runs a test binary of this target: cargo's runner for the target when
/// one is set (qemu-user for aarch64 on an x86_64 host, which cannot exec an aarch64
/// binary by itself), else the binary alone.
fn child_command() -> Command {
    let exe = std::env::current_exe().unwrap();
    let runner = if cfg!(target_arch = "aarch64") {
        std::env::var("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER").unwrap_or_default()
    } else {
        String::new()
    };
    let mut words = runner.split_whitespace();
    let Some(program) = words.next() else {
        return Command::new(exe);
    };
    let mut command = Command::new(program);
    command.args(words).arg(exe);
    command
}

/// Runs this test binary again, only `child_process_entry`, in `mode`.
fn run_child(mode: &str) -> std::process::Output {
    child_command()
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
            let path = std::env::temp_dir().join(format!("ddprof-sa-bus-{}", std::process::id()));
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
