//! The handler's side of the perf_events engine (`crate::engine::perf`): a table indexed by
//! thread id holding each armed thread's perf fd and the counter reading its samples have
//! accounted for so far. The engine writes a slot outside any handler; the handler only
//! reads its own thread's slot and advances its reading. No lock, no allocation.
//!
//! A perf fd set up with `O_ASYNC`, `F_SETSIG` SIGPROF and `F_SETOWN_EX` (`F_OWNER_TID`)
//! makes the kernel send SIGPROF to that thread at each counter overflow, with `si_code`
//! `POLL_IN` (`POLL_HUP` when the event disabled itself on reaching its event limit) and
//! `si_fd` the fd. A signal is ours when it carries one of those codes and the fd this
//! thread's slot holds: any other SIGPROF (a timer, `kill`, someone else's fd) is not.
//!
//! Weight: the fd's count is the thread's CPU time in ns (`cpu-clock`). The kernel merges
//! overflows whose signal is still pending, and skips the overflows that fall in kernel mode
//! (`exclude_kernel`), so a sample stands for the whole periods elapsed since the previous
//! one: `(count - accounted) / period`, the remainder carried to the next.
//!
//! The count without a syscall: each fd has a ring buffer (the engine maps it; its address is
//! in the slot), and at each overflow the kernel writes a `PERF_RECORD_SAMPLE` holding the
//! count at that moment (`PERF_SAMPLE_READ`) there before it sends the signal. The handler
//! takes the newest record between `data_tail` and `data_head` and marks what it saw read, so
//! the ring never fills in practice; the count being absolute, records lost to a full ring
//! or signals merged cost no weight. A thread without a ring (the kernel refused the mapping)
//! reads the count with `read(2)`, about a microsecond. The control page's own count fields
//! (`offset`, `time_enabled`) are no substitute: for a software event the kernel refreshes
//! them when the event is scheduled in or enabled, not at each overflow (in the engine's ring
//! test `offset` lagged the count by about a millisecond, ten periods).
//!
//! Kernel frames (`kernel_frames`): where the session collects kernel callchains, each record
//! carries the overflow's callchain after the count, and the handler copies the newest one's.
//! The ring is our own mapping, unmapped only after the slot is emptied and every handler has
//! left, so its reads need no crash protection; every length in it is bounds-checked all the
//! same.

use std::ffi::c_int;
use std::sync::atomic::{fence, AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::signal::{POLL_HUP, POLL_IN};
use crate::counters::Counter;
use crate::footprint::{Category, Mapped, Zeroable};

/// `PERF_EVENT_IOC_ENABLE`: `_IO('$', 0)`, the same number on every architecture.
pub const IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_EVENT_IOC_DISABLE`: `_IO('$', 1)`.
pub const IOC_DISABLE: libc::c_ulong = 0x2401;

pub struct Slot {
    /// fd + 1 (0: this thread has no perf fd).
    fd: AtomicI32,
    /// Count (ns of CPU) the thread's samples stand for so far.
    accounted: AtomicU64,
    /// CLOCK_MONOTONIC ns at the end of this thread's last sample (0: none yet).
    last_end: AtomicU64,
    /// Address of the fd's ring buffer (0: none), [`RING_PAGES`] pages of `page`.
    ring: AtomicUsize,
}

// SAFETY: atomics are valid when zeroed.
unsafe impl Zeroable for Slot {}

static TABLE: OnceLock<Mapped<Slot>> = OnceLock::new();
/// The unit of weights: the requested interval (the fd's period may be longer).
static PERIOD_NS: AtomicU64 = AtomicU64::new(1);
/// The fds' period.
static FD_PERIOD_NS: AtomicU64 = AtomicU64::new(1);

/// Makes the table once, with room for thread ids below `len` (pid_max). Not signal-safe.
pub fn init(len: usize) -> usize {
    TABLE
        .get_or_init(|| Mapped::new(len.max(1), Category::SampleBuffers))
        .len()
}

/// Ids the table has room for (0 before `init`).
pub fn capacity() -> usize {
    TABLE.get().map_or(0, |t| t.len())
}

/// `unit_ns`: the requested interval, the unit of weights; `fd_ns`: the fds' period.
pub fn set_period(unit_ns: u64, fd_ns: u64) {
    PERIOD_NS.store(unit_ns.max(1), Ordering::Relaxed);
    FD_PERIOD_NS.store(fd_ns.max(1), Ordering::Relaxed);
}

fn slot(tid: i32) -> Option<&'static Slot> {
    TABLE.get()?.get(usize::try_from(tid).ok()?)
}

/// The table has no slot for a thread id (above pid_max at the first start).
#[derive(Debug)]
pub struct NoRoom;

/// A thread's fd and the address of its ring buffer (0: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Armed {
    pub fd: c_int,
    pub ring: usize,
}

/// Gives `tid` the fd `fd` (and its ring, 0 for none), its reading starting at 0. Returns
/// what it replaces (a dead thread's whose id was reused). Err when the table has no room
/// for `tid`.
pub fn publish(tid: i32, fd: c_int, ring: usize) -> Result<Option<Armed>, NoRoom> {
    let s = slot(tid).ok_or(NoRoom)?;
    s.accounted.store(0, Ordering::Relaxed);
    s.last_end.store(0, Ordering::Relaxed);
    let old_ring = s.ring.swap(ring, Ordering::AcqRel);
    let old = s.fd.swap(fd + 1, Ordering::AcqRel);
    Ok((old > 0).then_some(Armed {
        fd: old - 1,
        ring: old_ring,
    }))
}

/// Takes `tid`'s fd out of the table: from now on its signals are not ours.
pub fn take(tid: i32) -> Option<Armed> {
    let s = slot(tid)?;
    let old = s.fd.swap(0, Ordering::AcqRel);
    let ring = s.ring.swap(0, Ordering::AcqRel);
    (old > 0).then_some(Armed { fd: old - 1, ring })
}

/// The size of every ring mapping (set by the engine before it maps one).
static RING_BYTES: AtomicUsize = AtomicUsize::new(0);
/// Whether the rings' sample records carry a callchain after the count.
static RING_CALLCHAIN: AtomicBool = AtomicBool::new(false);

/// Tells the handler how large the engine's ring mappings are and whether their records
/// carry callchains (`PERF_SAMPLE_CALLCHAIN`). Not signal-safe.
pub fn set_ring(bytes: usize, callchain: bool) {
    RING_BYTES.store(bytes, Ordering::Relaxed);
    RING_CALLCHAIN.store(callchain, Ordering::Relaxed);
}

/// Pages of a ring buffer: the control page and one data page. A record is 16 bytes (the
/// count) or, with a callchain, at most about 1 KiB, and the handler empties the ring at every
/// signal; a full ring loses records, not weight (each record holds the whole count).
pub const RING_PAGES: usize = 2;
/// `PERF_RECORD_LOST`: `{ header, id, lost }`, written when space is found again.
const RECORD_LOST: u32 = 2;
/// `PERF_RECORD_SAMPLE`, with `sample_type` `PERF_SAMPLE_READ` (and `PERF_SAMPLE_CALLCHAIN`):
/// `{ header, count, [nr, ips[nr]] }` (read_format 0: the count alone).
const RECORD_SAMPLE: u32 = 9;
const SAMPLE_COUNT_AT: u64 = 8;
const SAMPLE_NR_AT: u64 = 16;
/// Callchain entries at or above this are context markers (`PERF_CONTEXT_KERNEL`, ...).
const CONTEXT_MAX: u64 = (-4095i64) as u64;
/// Offsets in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// A thread's ring, its data area checked against the mapping.
#[derive(Clone, Copy)]
struct Ring {
    base: usize,
    offset: usize,
    size: usize,
}

impl Ring {
    /// None without a ring, or on a kernel before 4.1 (no `data_offset`): the caller reads
    /// the count with `read(2)` and takes no kernel frames rather than guess.
    fn of(base: usize) -> Option<Ring> {
        if base == 0 {
            return None;
        }
        let r = Ring {
            base,
            offset: 0,
            size: 0,
        };
        let (offset, size) = (r.word(DATA_OFFSET) as usize, r.word(DATA_SIZE) as usize);
        (size >= 8
            && size % 8 == 0
            && offset % 8 == 0
            && offset
                .checked_add(size)
                .is_some_and(|e| e <= RING_BYTES.load(Ordering::Relaxed)))
        .then_some(Ring { base, offset, size })
    }

    /// A u64 of the control page.
    fn word(&self, off: usize) -> u64 {
        // SAFETY: `base` is this thread's live mapping (unmapped only after the slot was
        // emptied and every handler left); the control page holds these aligned u64 fields.
        unsafe { std::ptr::read_volatile((self.base + off) as *const u64) }
    }

    /// A u64 at `pos` (a multiple of 8) of the data area, which wraps.
    fn at(&self, pos: u64) -> u64 {
        // SAFETY: `offset + pos % size` is inside the mapping (checked in `of`), 8-aligned.
        unsafe {
            std::ptr::read_volatile(
                (self.base + self.offset + (pos % self.size as u64) as usize) as *const u64,
            )
        }
    }

    /// What the ring holds between `data_tail` and `data_head`.
    fn scan(self) -> Seen {
        let head = self.word(DATA_HEAD);
        // The records up to `head` are complete once `head` is read (the kernel publishes
        // `data_head` after writing them).
        fence(Ordering::Acquire);
        let tail = self.word(DATA_TAIL);
        let mut seen = Seen {
            ring: Some(self),
            head,
            newest: None,
            records: false,
        };
        let size = self.size as u64;
        let mut pos = tail;
        while pos < head && head - pos <= size {
            let header = self.at(pos);
            let (kind, len) = (header as u32, header >> 48);
            if len < 8 || len % 8 != 0 || len > size {
                break; // not a record: leave the rest
            }
            seen.records = true;
            if kind == RECORD_SAMPLE && len >= 16 {
                seen.newest = Some((pos, len));
            } else if kind == RECORD_LOST && len >= 24 {
                Counter::PerfRingLost.add(self.at(pos + 16) as i64);
            }
            pos += len;
        }
        seen
    }
}

/// What `claim` found in the thread's ring, for [`kernel_frames`]: the end of the data it
/// read and the newest sample record (position, length). Nothing without a ring.
#[derive(Clone, Copy, Default)]
pub struct Seen {
    ring: Option<Ring>,
    head: u64,
    newest: Option<(u64, u64)>,
    /// Any record at all between tail and head.
    records: bool,
}

impl Seen {
    /// The count of the newest sample record (the fd's count at that overflow).
    fn count(&self) -> Option<u64> {
        let (ring, (pos, _)) = (self.ring?, self.newest?);
        Some(ring.at(pos + SAMPLE_COUNT_AT))
    }
}

/// The kernel frames of the newest sample record `claim` saw, leaf first, into `out` (as many
/// as fit), then marks what it saw read (`data_tail`), so the ring never fills. 0 without a
/// ring or callchains. Signal-safe.
pub fn kernel_frames(seen: &Seen, out: &mut [u64]) -> usize {
    let Some(ring) = seen.ring else {
        return 0;
    };
    let mut n = 0;
    if let (true, Some((pos, len))) = (RING_CALLCHAIN.load(Ordering::Relaxed), seen.newest) {
        let entries = if len >= 24 {
            ring.at(pos + SAMPLE_NR_AT).min((len - 24) / 8)
        } else {
            0
        };
        for i in 0..entries {
            let ip = ring.at(pos + 24 + 8 * i);
            if ip >= CONTEXT_MAX {
                continue;
            }
            let Some(slot) = out.get_mut(n) else {
                break;
            };
            *slot = ip;
            n += 1;
        }
    }
    fence(Ordering::Release);
    // SAFETY: as in `Ring::word`; the kernel reads data_tail to know what it may overwrite.
    // Only what `claim` saw: a record written since is the next signal's.
    unsafe { std::ptr::write_volatile((ring.base + DATA_TAIL) as *mut u64, seen.head) };
    if n > 0 {
        Counter::PerfKernelFrames.add(n as i64);
    }
    n
}

/// The weight of a signal with `code` and `fd` on thread `tid` when it is a perf signal of
/// that thread's fd, else None, with what it saw in the thread's ring (for [`kernel_frames`]).
/// Re-enables an event that disabled itself at its event limit.
///
/// The count comes from the newest `PERF_RECORD_SAMPLE` in the fd's ring (`PERF_SAMPLE_READ`:
/// the count at that overflow, no syscall); only without a usable ring, or with no sample
/// record among what is in it (lost ones alone), from `read(2)` (async-signal-safe, about a
/// microsecond; `perf_count_read`). An empty ring means the overflow this signal stands for
/// was read by an earlier handler: the signal stayed pending while the previous sample
/// consumed its record (the thread preempted right after a sample).
///
/// `Some(0)`: ours, but taken too soon after this thread's previous sample ended (`now` is
/// CLOCK_MONOTONIC ns): the overflow came from the handler's own CPU time, so no sample now,
/// and its periods go to the next one. Without that a handler slower than the period would
/// leave the thread nothing but handlers. `Some(0)` too when no whole period ran since the
/// last one accounted (`perf_samples_accounted_already`). Signal-safe.
#[link_section = sample_path_section!()]
pub fn claim(tid: i32, code: c_int, fd: c_int, now: u64) -> Option<(u64, Seen)> {
    if code != POLL_IN && code != POLL_HUP {
        return None;
    }
    let s = slot(tid)?;
    let mine = s.fd.load(Ordering::Acquire) - 1;
    if mine < 0 || mine != fd {
        return None;
    }
    if code == POLL_HUP {
        // The event limit ran out (it counts down from 0, so only after 2^32 overflows):
        // the event is disabled until enabled again.
        // SAFETY: an ioctl on our own perf fd, async-signal-safe.
        unsafe { libc::ioctl(fd, IOC_ENABLE, 0) };
        Counter::PerfReenabled.inc();
    }
    let seen = Ring::of(s.ring.load(Ordering::Acquire)).map_or_else(Seen::default, Ring::scan);
    let last_end = s.last_end.load(Ordering::Relaxed);
    if last_end != 0 && now.wrapping_sub(last_end) < FD_PERIOD_NS.load(Ordering::Relaxed) / 4 {
        Counter::PerfSamplesDeferred.inc();
        return Some((0, seen));
    }
    let period = PERIOD_NS.load(Ordering::Relaxed);
    let accounted = s.accounted.load(Ordering::Relaxed);
    let periods = match (seen.ring.is_some(), seen.count(), seen.records) {
        // The count at the overflow, which the kernel takes a little after the period's end
        // or, between its clocks, a little before: rounded to the nearest unit, so that jitter
        // neither drops a sample nor doubles the next one (the remainder is carried either way).
        (true, Some(count), _) => {
            count.saturating_sub(accounted).saturating_add(period / 2) / period
        }
        (true, None, false) => 0,
        _ => {
            Counter::PerfCountRead.inc();
            let mut count: u64 = 0;
            // SAFETY: reading 8 bytes into a local from our perf fd (read_format 0: the count).
            let n = unsafe { libc::read(fd, (&mut count as *mut u64).cast(), 8) };
            if n != 8 {
                return Some((1, seen));
            }
            // Read after the overflow: whole units, the remainder carried.
            count.saturating_sub(accounted) / period
        }
    };
    // 0: an earlier handler already accounted for this overflow (its signal stayed pending
    // while the previous sample merged its period: the thread preempted right after a sample)
    // or less than a unit ran since: no sample, and the weights add up to the CPU time counted.
    if periods == 0 {
        Counter::PerfSamplesAccountedAlready.inc();
        return Some((0, seen));
    }
    s.accounted.store(
        accounted.wrapping_add(periods.wrapping_mul(period)),
        Ordering::Relaxed,
    );
    if periods > 1 {
        Counter::PerfMergedPeriods.add((periods - 1) as i64);
    }
    Some((periods, seen))
}

/// Notes that this thread's sample ended at `now` (CLOCK_MONOTONIC ns). Signal-safe.
pub fn finish(tid: i32, now: u64) {
    if let Some(s) = slot(tid) {
        s.last_end.store(now, Ordering::Relaxed);
    }
}
