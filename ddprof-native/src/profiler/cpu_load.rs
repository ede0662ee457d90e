//! `jdk.CPULoad` figures, one event per chunk: the JVM's user and system CPU time and the
//! machine's busy time, as fractions of all CPUs, over the time since the previous event (for
//! the first one: since the process started, and since boot for the machine). The process's
//! times from `getrusage`, the machine's from the first line of `/proc/stat`, on the dump path,
//! never in a signal handler. One system call and one short read each: reading the two
//! `/proc` files whole, 32 bytes and then twice as many a read, was a tenth of a first dump in
//! a perf profile.

use parking_lot::Mutex;

/// Cumulative readings at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Reading {
    /// CLOCK_MONOTONIC nanoseconds.
    at_nanos: i64,
    /// Process user and system CPU time, in nanoseconds.
    user: u64,
    system: u64,
    /// Machine-wide busy and total jiffies (all CPUs).
    busy: u64,
    total: u64,
}

static LAST: Mutex<Option<Reading>> = Mutex::new(None);

/// `(jvm_user, jvm_system, machine_total)` in [0, 1] since the previous call, or `None` when
/// the figures cannot be read.
pub fn sample() -> Option<(f32, f32, f32)> {
    let now_nanos = crate::sample::handler::ticks();
    let (user, system) = process_times()?;
    let mut head = [0u8; 512];
    let (busy, total) = parse_stat(read_head("/proc/stat", &mut head)?)?;
    let now = Reading {
        at_nanos: now_nanos,
        user,
        system,
        busy,
        total,
    };
    let cpus = cpus();
    let mut last = LAST.lock();
    let previous = last.unwrap_or_else(origin);
    *last = Some(now);
    Some(fractions(&previous, &now, cpus))
}

/// The reading the first event counts from: the process's start, with no CPU time yet (the
/// machine's: boot). Read once per process; [`prepare`] reads it ahead, off the dump.
fn origin() -> Reading {
    static ORIGIN: std::sync::OnceLock<Reading> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(|| {
        let now_nanos = crate::sample::handler::ticks();
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let start_ticks = start_ticks().unwrap_or(0);
        let uptime = std::fs::read_to_string("/proc/uptime")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
            .unwrap_or(0.0);
        let alive_secs = (uptime - start_ticks as f64 / hz).max(0.0);
        Reading {
            at_nanos: now_nanos - (alive_secs * 1e9) as i64,
            user: 0,
            system: 0,
            busy: 0,
            total: 0,
        }
    })
}

/// The online CPUs; glibc reads /sys/devices/system/cpu/online for it: once per process.
fn cpus() -> f64 {
    static CPUS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *CPUS.get_or_init(|| unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as f64)
}

/// Reads what the first event needs besides the readings of its moment, so that the first
/// dump does not (`dump::prepare`).
pub fn prepare() {
    origin();
    cpus();
}

/// The process's user and system CPU time so far, in nanoseconds.
fn process_times() -> Option<(u64, u64)> {
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is valid.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut u) != 0 {
            return None;
        }
        u
    };
    let ns = |t: libc::timeval| -> Option<u64> {
        Some(u64::try_from(t.tv_sec).ok()? * 1_000_000_000 + u64::try_from(t.tv_usec).ok()? * 1_000)
    };
    Some((ns(usage.ru_utime)?, ns(usage.ru_stime)?))
}

/// The start of `path` that fits `buf`, in one read, up to its last complete line.
fn read_head<'a>(path: &str, buf: &'a mut [u8]) -> Option<&'a str> {
    use std::io::Read;
    let n = std::fs::File::open(path).ok()?.read(buf).ok()?;
    let text = std::str::from_utf8(buf.get(..n)?).ok()?;
    Some(&text[..text.rfind('\n')? + 1])
}

fn fractions(a: &Reading, b: &Reading, cpus: f64) -> (f32, f32, f32) {
    let secs = (b.at_nanos - a.at_nanos) as f64 / 1e9;
    let share = |nanos: u64| -> f32 {
        if secs <= 0.0 {
            return 0.0;
        }
        ((nanos as f64 / 1e9) / (secs * cpus)).clamp(0.0, 1.0) as f32
    };
    let total = b.total.saturating_sub(a.total);
    let machine = if total == 0 {
        0.0
    } else {
        (b.busy.saturating_sub(a.busy) as f64 / total as f64).clamp(0.0, 1.0) as f32
    };
    (
        share(b.user.saturating_sub(a.user)),
        share(b.system.saturating_sub(a.system)),
        machine,
    )
}

/// When the process started, in clock ticks after boot (`/proc/self/stat` field 22).
pub(super) fn start_ticks() -> Option<u64> {
    parse_start_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// starttime (clock ticks after boot) from `/proc/self/stat`'s text.
fn parse_start_ticks(s: &str) -> Option<u64> {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    // The first field after it is field 3 (state); starttime is field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Busy and total jiffies from the `cpu` line of `/proc/stat` (idle and iowait are not busy).
fn parse_stat(s: &str) -> Option<(u64, u64)> {
    let line = s.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8) // user nice system idle iowait irq softirq steal (guest time is inside user)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    if v.len() < 4 {
        return None;
    }
    let total: u64 = v.iter().sum();
    let idle = v[3] + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_self_stat_with_a_tricky_name() {
        let s =
            "1234 (a b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 30 0 9000 1000 200";
        assert_eq!(parse_start_ticks(s), Some(9000));
    }

    #[test]
    fn parses_proc_stat() {
        let s = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 100 0 50 800 50 0 0 0 0 0\n";
        assert_eq!(parse_stat(s), Some((150, 1000)));
    }

    #[test]
    fn fractions_of_all_cpus_over_the_interval() {
        let a = Reading {
            at_nanos: 0,
            user: 0,
            system: 0,
            busy: 0,
            total: 0,
        };
        // 2 s on 2 CPUs: 1 s of user time = a quarter of the capacity.
        let b = Reading {
            at_nanos: 2_000_000_000,
            user: 1_000_000_000,
            system: 400_000_000,
            busy: 300,
            total: 400,
        };
        let (u, s, m) = fractions(&a, &b, 2.0);
        assert!((u - 0.25).abs() < 1e-6 && (s - 0.10).abs() < 1e-6 && (m - 0.75).abs() < 1e-6);
        // No elapsed time: zeros, never NaN or infinity.
        assert_eq!(fractions(&b, &b, 2.0), (0.0, 0.0, 0.0));
    }

    #[test]
    fn the_first_line_of_proc_stat_is_read_whole() {
        let mut buf = [0u8; 512];
        let head = read_head("/proc/stat", &mut buf).expect("/proc/stat is readable");
        assert!(head.starts_with("cpu ") && head.ends_with('\n'), "{head}");
        assert!(parse_stat(head).is_some_and(|(busy, total)| busy <= total && total > 0));
    }

    #[test]
    fn reads_this_process() {
        let (u, s, m) = sample().expect("/proc is readable");
        for v in [u, s, m] {
            assert!((0.0..=1.0).contains(&v), "{v}");
        }
    }
}
