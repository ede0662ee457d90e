//! The socket hooks of `natsock`: the functions whose addresses `crate::natsock` writes into
//! other libraries' import slots for `send`, `recv`, `write`, `read`, `writev`, `readv` (and
//! `close`, which only forgets what we knew of the descriptor). Each calls the real
//! function; while sampling is on and the descriptor is a TCP socket, it times the call,
//! and a call that moved bytes is sampled by its duration (`super::poisson`, one sampler
//! per direction), walked from the thread's frame anchor and recorded as
//! `EventKind::NativeSocket` with its bytes, peer and weight.
//!
//! Rules, as the malloc hooks' (`super::nativemem`), because these run inside any library's
//! I/O on any thread, possibly inside another library's signal handler:
//! - allocation-free, lock-free and without thread-locals: atomics, tables mapped once at
//!   start, the syscalls `getsockopt`, `getsockname`, `getpeername` (all async-signal-safe);
//! - `errno` is what the real function left: our syscalls' `errno` is put back;
//! - inert when off: one relaxed load before the real call.
//!
//! Which descriptors: `SO_TYPE` is `SOCK_STREAM` and the socket's family is `AF_INET` or
//! `AF_INET6` (TCP; UDP and Unix-domain sockets are not). The verdict is cached per
//! descriptor below [`FD_SLOTS`] under a generation bumped at every start, and forgotten
//! by `close`; a sampled call re-reads the peer, so a descriptor reused for something
//! else is never recorded under a stale verdict.

use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8};
use std::sync::OnceLock;

use super::alloc::{self as sampler, Sampled};
use super::handler;
use super::poisson::PoissonSampler;
use super::rate_window::RateWindow;
use super::real_fns::RealFns;
use super::record::{EventKind, Socket};
use crate::counters::Counter;
use crate::footprint::{Category, Mapped, Zeroable};

/// The functions we hook, in [`NAMES`] order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Func {
    Send,
    Recv,
    Write,
    Read,
    Writev,
    Readv,
    Close,
}

pub const FUNCS: [Func; 7] = [
    Func::Send,
    Func::Recv,
    Func::Write,
    Func::Read,
    Func::Writev,
    Func::Readv,
    Func::Close,
];

/// Import names of [`Func`], same order.
pub const NAMES: [&str; 7] = ["send", "recv", "write", "read", "writev", "readv", "close"];

/// `datadog.NativeSocketEvent.operation`, indexed by [`Socket::operation`]: what the caller
/// called (`writev` counts as WRITE, `readv` as READ).
pub const OPERATIONS: [&str; 4] = ["SEND", "RECV", "WRITE", "READ"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Op {
    Send = 0,
    Recv = 1,
    Write = 2,
    Read = 3,
}

/// Default mean of call time between samples (bare `natsock`, or `natsock=0`), as upstream.
pub const DEFAULT_INTERVAL_NS: u64 = 1_000_000;
/// Events per second the rate controller aims at (about 5,000 a minute, as upstream).
pub const TARGET_PER_SECOND: u64 = 83;
/// Events that tell a burst from chance.
const BURST_EVENTS: u64 = 16;
/// The highest interval the controller goes to (about 18 minutes of call time).
const MAX_INTERVAL_NS: u64 = 1 << 40;

/// The real functions, by [`Func`].
static REAL: RealFns<7> = RealFns::new();

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Outbound (SEND, WRITE) and inbound (RECV, READ) call time.
static OUT: PoissonSampler = PoissonSampler::new();
static IN: PoissonSampler = PoissonSampler::new();
/// The interval asked for: the controller never samples more densely.
static BASE_NS: AtomicU64 = AtomicU64::new(DEFAULT_INTERVAL_NS);
static WINDOW: RateWindow = RateWindow::new();

pub fn set_real(f: Func, addr: usize) {
    REAL.set(f as usize, addr);
}

pub fn real(f: Func) -> usize {
    REAL.get(f as usize)
}

/// Our hook for `f`.
pub fn hook(f: Func) -> usize {
    match f {
        Func::Send => send_hook as *const () as usize,
        Func::Recv => recv_hook as *const () as usize,
        Func::Write => write_hook as *const () as usize,
        Func::Read => read_hook as *const () as usize,
        Func::Writev => writev_hook as *const () as usize,
        Func::Readv => readv_hook as *const () as usize,
        Func::Close => close_hook as *const () as usize,
    }
}

/// Turns sampling on at `interval_ns` of call time (0: the default), with the descriptor and
/// peer tables mapped and every cached verdict of an earlier session forgotten.
pub fn arm(interval_ns: u64, seed: u64) {
    FDS.get_or_init(|| Mapped::new(FD_SLOTS, Category::SampleBuffers));
    PEERS.get_or_init(|| Mapped::new(PEER_SLOTS, Category::SampleBuffers));
    let g = GENERATION.load(Ordering::Relaxed) % 15 + 1;
    GENERATION.store(g, Ordering::Relaxed);
    let interval = match interval_ns {
        0 => DEFAULT_INTERVAL_NS,
        n => n,
    };
    BASE_NS.store(interval, Ordering::Relaxed);
    OUT.arm(interval, seed);
    IN.arm(interval, seed.rotate_left(17));
    WINDOW.reset(handler::ticks());
    Counter::NatsockIntervalNanos.set(interval as i64);
    ACTIVE.store(true, Ordering::Release);
}

/// Turns sampling off; the hooks keep calling the real functions.
pub fn disarm() {
    ACTIVE.store(false, Ordering::Release);
}

pub fn interval_ns() -> u64 {
    OUT.interval()
}

// ---- errno ----

fn errno() -> c_int {
    // SAFETY: the calling thread's errno slot, always valid.
    unsafe { *libc::__errno_location() }
}

fn set_errno(e: c_int) {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = e }
}

// ---- Which descriptors are TCP sockets ----

/// Descriptors whose verdict is cached (one byte each); larger ones are asked every time.
pub const FD_SLOTS: usize = 1 << 16;
const TCP: u8 = 1;
const OTHER: u8 = 2;

/// One descriptor's verdict: the generation it was found in (high nibble) and TCP or
/// OTHER (low nibble); 0 = not known.
#[repr(transparent)]
pub struct FdSlot(AtomicU8);
// SAFETY: an AtomicU8 is valid when zeroed (not known).
unsafe impl Zeroable for FdSlot {}

static FDS: OnceLock<Mapped<FdSlot>> = OnceLock::new();
/// 1..=15, bumped at every start: verdicts of an earlier session are not trusted.
static GENERATION: AtomicU8 = AtomicU8::new(0);

fn slot(fd: c_int) -> Option<&'static FdSlot> {
    usize::try_from(fd).ok().and_then(|i| FDS.get()?.get(i))
}

fn remember(fd: c_int, verdict: u8) {
    if let Some(s) = slot(fd) {
        let g = GENERATION.load(Ordering::Relaxed);
        s.0.store(g << 4 | verdict, Ordering::Relaxed);
    }
}

/// Whether `fd` is a TCP socket; `errno` unchanged.
fn is_tcp(fd: c_int) -> bool {
    if fd < 0 {
        return false;
    }
    if let Some(s) = slot(fd) {
        let v = s.0.load(Ordering::Relaxed);
        if v >> 4 == GENERATION.load(Ordering::Relaxed) && v & 0xf != 0 {
            return v & 0xf == TCP;
        }
    }
    let saved = errno();
    let verdict = classify(fd);
    set_errno(saved);
    match verdict {
        Some(v) => {
            remember(fd, v);
            v == TCP
        }
        None => false,
    }
}

/// TCP or OTHER; None when the descriptor could not be asked (closed: the call fails anyway,
/// so nothing is cached).
fn classify(fd: c_int) -> Option<u8> {
    let mut ty: c_int = 0;
    let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
    // SAFETY: `ty` and `len` are ours and sized as `len` says.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&mut ty as *mut c_int).cast::<c_void>(),
            &mut len,
        )
    };
    if rc != 0 {
        return (errno() == libc::ENOTSOCK).then_some(OTHER);
    }
    if ty != libc::SOCK_STREAM {
        return Some(OTHER);
    }
    let ss = address_of(fd, libc::getsockname)?;
    match c_int::from(ss.ss_family) {
        libc::AF_INET | libc::AF_INET6 => Some(TCP),
        _ => Some(OTHER),
    }
}

// ---- Peers ----

/// A peer as a record keeps it (`Socket::peer`): `kind << 48 | port << 32 | address`, where
/// kind 4 holds an IPv4 address (IPv4-mapped IPv6 ones too) and kind 6 the id of an IPv6
/// address in the peer table (0: the table was full).
pub mod peer {
    pub const V4: u64 = 4;
    pub const V6: u64 = 6;

    pub fn pack(kind: u64, port: u16, address: u32) -> u64 {
        kind << 48 | u64::from(port) << 32 | u64::from(address)
    }

    /// (kind, port, address or id).
    pub fn unpack(p: u64) -> (u64, u16, u32) {
        (p >> 48, (p >> 32) as u16, p as u32)
    }
}

/// Distinct IPv6 peer addresses kept for the process's lifetime (ports are in the record).
pub const PEER_SLOTS: usize = 1024;
const PEER_PROBES: usize = 16;
const PEER_EMPTY: u32 = 0;
const PEER_WRITING: u32 = 1;
const PEER_READY: u32 = 2;

/// One IPv6 address of the peer table.
pub struct PeerSlot {
    state: AtomicU32,
    high: AtomicU64,
    low: AtomicU64,
}
// SAFETY: atomics are valid when zeroed (empty).
unsafe impl Zeroable for PeerSlot {}

static PEERS: OnceLock<Mapped<PeerSlot>> = OnceLock::new();

/// The id (1-based) of `address` in the peer table, adding it; 0 when there is no room.
fn intern_v6(address: [u8; 16]) -> u32 {
    let Some(t) = PEERS.get() else { return 0 };
    let high = u64::from_be_bytes(address[..8].try_into().unwrap_or_default());
    let low = u64::from_be_bytes(address[8..].try_into().unwrap_or_default());
    let home = ((high ^ low.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize;
    for i in 0..PEER_PROBES {
        let index = (home + i) % t.len();
        let Some(s) = t.get(index) else { break };
        let mut state = s.state.load(Ordering::Acquire);
        if state == PEER_EMPTY {
            match s.state.compare_exchange(
                PEER_EMPTY,
                PEER_WRITING,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    s.high.store(high, Ordering::Relaxed);
                    s.low.store(low, Ordering::Relaxed);
                    s.state.store(PEER_READY, Ordering::Release);
                    return index as u32 + 1;
                }
                Err(now) => state = now,
            }
        }
        // A slot being written by another thread is passed over: at worst one address
        // takes two slots.
        if state == PEER_READY
            && s.high.load(Ordering::Relaxed) == high
            && s.low.load(Ordering::Relaxed) == low
        {
            return index as u32 + 1;
        }
    }
    Counter::NatsockPeersTableFull.inc();
    0
}

/// The IPv6 address of peer id `id` (for the dump).
pub fn v6_address(id: u32) -> Option<[u8; 16]> {
    let t = PEERS.get()?;
    let s = t.get((id as usize).checked_sub(1)?)?;
    if s.state.load(Ordering::Acquire) != PEER_READY {
        return None;
    }
    let mut a = [0u8; 16];
    a[..8].copy_from_slice(&s.high.load(Ordering::Relaxed).to_be_bytes());
    a[8..].copy_from_slice(&s.low.load(Ordering::Relaxed).to_be_bytes());
    Some(a)
}

type GetName = unsafe extern "C" fn(c_int, *mut libc::sockaddr, *mut libc::socklen_t) -> c_int;

/// The socket's own (`getsockname`) or its peer's (`getpeername`) address.
fn address_of(fd: c_int, get: GetName) -> Option<libc::sockaddr_storage> {
    // SAFETY: zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `ss` is ours and `len` bytes long, as `get` (a libc address call) requires.
    let rc = unsafe {
        get(
            fd,
            (&mut ss as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(ss)
}

/// The packed peer of a connected TCP socket, or None when `fd` has no IP peer (any more).
fn peer_of(fd: c_int) -> Option<u64> {
    let ss = address_of(fd, libc::getpeername)?;
    match c_int::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin =
                unsafe { &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(peer::pack(
                peer::V4,
                u16::from_be(sin.sin_port),
                u32::from_be(sin.sin_addr.s_addr),
            ))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6 =
                unsafe { &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let a = sin6.sin6_addr.s6_addr;
            let port = u16::from_be(sin6.sin6_port);
            // ::ffff:a.b.c.d, what a dual-stack Java socket reports for an IPv4 peer.
            if a[..10].iter().all(|&b| b == 0) && a[10] == 0xff && a[11] == 0xff {
                let v4 = u32::from_be_bytes([a[12], a[13], a[14], a[15]]);
                return Some(peer::pack(peer::V4, port, v4));
            }
            Some(peer::pack(peer::V6, port, intern_v6(a)))
        }
        _ => None,
    }
}

// ---- Sampling ----

/// After a TCP call of `op` that began at `start` and moved `bytes`.
fn on_transfer(fd: c_int, op: Op, start: i64, bytes: u64) {
    let end = handler::ticks();
    let duration = end.saturating_sub(start).max(0) as u64;
    let sampler = match op {
        Op::Send | Op::Write => &OUT,
        Op::Recv | Op::Read => &IN,
    };
    if !sampler.take(duration) {
        return;
    }
    let Some(peer) = peer_of(fd) else {
        remember(fd, OTHER);
        Counter::NatsockNotTcp.inc();
        return;
    };
    // As the chunk's buffer fills, fewer calls are recorded and each weighs more.
    let Some(thinned) = super::alloc::thin() else {
        return;
    };
    let socket = Socket {
        bytes,
        weight: sampler.weight(duration) * thinned,
        operation: op as u8,
        peer,
    };
    let sampled = Sampled {
        kind: EventKind::NativeSocket,
        alloc: socket.payload(),
        record: true,
        ticks: Some(start),
        weight: duration,
    };
    if sampler::sample(&sampled, |_, _, _, _| {}).is_some() {
        control_rate(end);
    }
}

/// The rate controller: after each recorded event, once a second, scales both intervals by
/// the rate seen over the target (at most 4x down, never below the interval asked for). A
/// burst is answered sooner: after [`BURST_EVENTS`] events coming in at more than four times
/// the target, or twice the target's events in any part of a second, with up to 1024x up, so
/// that even `natsock=1` settles within a few dozen events.
fn control_rate(now: i64) {
    let target = TARGET_PER_SECOND as f64;
    let due = |events: u64, elapsed: i64| {
        let rate = events as f64 * handler::TICKS_PER_SECOND as f64 / elapsed as f64;
        elapsed >= handler::TICKS_PER_SECOND
            || events >= 2 * TARGET_PER_SECOND
            || (events >= BURST_EVENTS && rate > 4.0 * target)
    };
    let Some(window) = WINDOW.count(now, 0, due) else {
        return;
    };
    let rate = window.rate(handler::TICKS_PER_SECOND);
    let factor = (rate / target).clamp(0.25, 1024.0);
    let base = BASE_NS.load(Ordering::Relaxed);
    let next = ((OUT.interval() as f64 * factor) as u64).clamp(base, MAX_INTERVAL_NS.max(base));
    OUT.set_interval(next);
    IN.set_interval(next);
    Counter::NatsockIntervalNanos.set(next as i64);
}

/// Runs the real call, timing it and sampling it when `fd` is a TCP socket and sampling is on.
#[inline]
fn transfer(fd: c_int, op: Op, call: impl FnOnce() -> isize) -> isize {
    if !ACTIVE.load(Ordering::Relaxed) || !is_tcp(fd) {
        return call();
    }
    let start = handler::ticks();
    let n = call();
    if n > 0 {
        let saved = errno();
        on_transfer(fd, op, start, n as u64);
        set_errno(saved);
    }
    n
}

/// The real function as a typed pointer; used only inside an `unsafe` block whose caller is a
/// hook, which a slot points at only once its REAL entry is the non-zero address `dlsym`
/// gave for this very function, whose C signature `$ty` is.
macro_rules! real {
    ($f:expr, $ty:ty) => {
        std::mem::transmute::<usize, $ty>(real($f))
    };
}

type SendFn = unsafe extern "C" fn(c_int, *const c_void, usize, c_int) -> isize;
type RecvFn = unsafe extern "C" fn(c_int, *mut c_void, usize, c_int) -> isize;
type WriteFn = unsafe extern "C" fn(c_int, *const c_void, usize) -> isize;
type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize;
type WritevFn = unsafe extern "C" fn(c_int, *const libc::iovec, c_int) -> isize;
type ReadvFn = unsafe extern "C" fn(c_int, *const libc::iovec, c_int) -> isize;
type CloseFn = unsafe extern "C" fn(c_int) -> c_int;

/// # Safety
/// Called as `send` by a library whose slot we redirected (the real one is resolved).
pub unsafe extern "C" fn send_hook(fd: c_int, buf: *const c_void, n: usize, flags: c_int) -> isize {
    // SAFETY: the real send (see `real!`), called with the caller's arguments.
    transfer(fd, Op::Send, || unsafe {
        real!(Func::Send, SendFn)(fd, buf, n, flags)
    })
}

/// # Safety
/// As [`send_hook`], for `recv`.
pub unsafe extern "C" fn recv_hook(fd: c_int, buf: *mut c_void, n: usize, flags: c_int) -> isize {
    // SAFETY: the real recv (see `real!`), called with the caller's arguments.
    transfer(fd, Op::Recv, || unsafe {
        real!(Func::Recv, RecvFn)(fd, buf, n, flags)
    })
}

/// # Safety
/// As [`send_hook`], for `write`.
pub unsafe extern "C" fn write_hook(fd: c_int, buf: *const c_void, n: usize) -> isize {
    // SAFETY: the real write (see `real!`), called with the caller's arguments.
    transfer(fd, Op::Write, || unsafe {
        real!(Func::Write, WriteFn)(fd, buf, n)
    })
}

/// # Safety
/// As [`send_hook`], for `read`.
pub unsafe extern "C" fn read_hook(fd: c_int, buf: *mut c_void, n: usize) -> isize {
    // SAFETY: the real read (see `real!`), called with the caller's arguments.
    transfer(fd, Op::Read, || unsafe {
        real!(Func::Read, ReadFn)(fd, buf, n)
    })
}

/// # Safety
/// As [`send_hook`], for `writev`.
pub unsafe extern "C" fn writev_hook(fd: c_int, iov: *const libc::iovec, n: c_int) -> isize {
    // SAFETY: the real writev (see `real!`), called with the caller's arguments.
    transfer(fd, Op::Write, || unsafe {
        real!(Func::Writev, WritevFn)(fd, iov, n)
    })
}

/// # Safety
/// As [`send_hook`], for `readv`.
pub unsafe extern "C" fn readv_hook(fd: c_int, iov: *const libc::iovec, n: c_int) -> isize {
    // SAFETY: the real readv (see `real!`), called with the caller's arguments.
    transfer(fd, Op::Read, || unsafe {
        real!(Func::Readv, ReadvFn)(fd, iov, n)
    })
}

/// # Safety
/// As [`send_hook`], for `close`: the descriptor's verdict is forgotten first, so a number
/// reused by the next `socket` or `open` is asked again.
pub unsafe extern "C" fn close_hook(fd: c_int) -> c_int {
    if let Some(s) = slot(fd) {
        s.0.store(0, Ordering::Relaxed);
    }
    // SAFETY: the real close (see `real!`), called with the caller's arguments.
    unsafe { real!(Func::Close, CloseFn)(fd) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_pack_and_unpack() {
        let p = peer::pack(peer::V4, 8080, 0x7f00_0001);
        assert_eq!(peer::unpack(p), (peer::V4, 8080, 0x7f00_0001));
    }

    #[test]
    fn descriptors_are_told_apart() {
        FDS.get_or_init(|| Mapped::new(FD_SLOTS, Category::SampleBuffers));
        GENERATION.store(1, Ordering::Relaxed);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let file = std::fs::File::open("/proc/self/status").unwrap();
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        use std::os::fd::AsRawFd;
        assert!(is_tcp(listener.as_raw_fd()));
        assert!(!is_tcp(udp.as_raw_fd()));
        assert!(!is_tcp(file.as_raw_fd()));
        assert!(!is_tcp(a.as_raw_fd()));
        assert!(!is_tcp(-1));
        // Cached: asked again, the same verdicts.
        assert!(is_tcp(listener.as_raw_fd()));
        assert!(!is_tcp(file.as_raw_fd()));
        drop((a, b));
    }

    #[test]
    fn a_connected_socket_reports_its_peer() {
        PEERS.get_or_init(|| Mapped::new(PEER_SLOTS, Category::SampleBuffers));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        use std::os::fd::AsRawFd;
        let p = peer_of(client.as_raw_fd()).unwrap();
        assert_eq!(peer::unpack(p), (peer::V4, port, 0x7f00_0001));
        assert_eq!(peer_of(listener.as_raw_fd()), None);
    }

    #[test]
    fn ipv6_peers_are_interned_once() {
        PEERS.get_or_init(|| Mapped::new(PEER_SLOTS, Category::SampleBuffers));
        let mut a = [0u8; 16];
        a[0] = 0x20;
        a[1] = 0x01;
        a[15] = 7;
        let id = intern_v6(a);
        assert_ne!(id, 0);
        assert_eq!(intern_v6(a), id);
        assert_eq!(v6_address(id), Some(a));
        a[15] = 8;
        assert_ne!(intern_v6(a), id);
    }
}
