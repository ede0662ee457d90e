//! `jdk.CPULoad` figures, one event per chunk: the JVM's user and system CPU time and the
//! machine's busy time, as fractions of all CPUs, over the time since the previous event (for
//! the first one: since the process started, and since boot for the machine). Read from
//! `/proc/self/stat` and `/proc/stat` on the dump path, never in a signal handler.

use parking_lot::Mutex;

/// Cumulative readings at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Reading {
    /// CLOCK_MONOTONIC nanoseconds.
    at_nanos: i64,
    /// Process user and system CPU time, in clock ticks.
    user: u64,
    system: u64,
    /// Machine-wide busy and total jiffies (all CPUs).
    busy: u64,
    total: u64,
}

static LAST: Mutex<Option<Reading>> = Mutex::new(None);

/// `(jvm_user, jvm_system, machine_total)` in [0, 1] since the previous call, or `None` when
/// /proc cannot be read.
pub fn sample() -> Option<(f32, f32, f32)> {
    let now_nanos = crate::sample::handler::ticks();
    let (user, system, start_ticks) =
        parse_self_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
    let (busy, total) = parse_stat(&std::fs::read_to_string("/proc/stat").ok()?)?;
    let now = Reading {
        at_nanos: now_nanos,
        user,
        system,
        busy,
        total,
    };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    // glibc reads /sys/devices/system/cpu/online for this: once per process.
    static CPUS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    // SAFETY: as above.
    let cpus =
        *CPUS.get_or_init(|| unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as f64);
    let mut last = LAST.lock();
    let previous = last.unwrap_or_else(|| {
        // No earlier event: average since the process started (machine: since boot).
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
    });
    *last = Some(now);
    Some(fractions(&previous, &now, hz, cpus))
}

fn fractions(a: &Reading, b: &Reading, hz: f64, cpus: f64) -> (f32, f32, f32) {
    let secs = (b.at_nanos - a.at_nanos) as f64 / 1e9;
    let share = |ticks: u64| -> f32 {
        if secs <= 0.0 {
            return 0.0;
        }
        ((ticks as f64 / hz) / (secs * cpus)).clamp(0.0, 1.0) as f32
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

/// utime, stime and starttime (clock ticks) from `/proc/self/stat`.
fn parse_self_stat(s: &str) -> Option<(u64, u64, u64)> {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state): utime is field 14, stime 15, starttime 22.
    Some((
        f.get(11)?.parse().ok()?,
        f.get(12)?.parse().ok()?,
        f.get(19)?.parse().ok()?,
    ))
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
        assert_eq!(parse_self_stat(s), Some((250, 75, 9000)));
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
        // 2 s on 2 CPUs at 100 Hz: 100 ticks of user time = a quarter of the capacity.
        let b = Reading {
            at_nanos: 2_000_000_000,
            user: 100,
            system: 40,
            busy: 300,
            total: 400,
        };
        let (u, s, m) = fractions(&a, &b, 100.0, 2.0);
        assert!((u - 0.25).abs() < 1e-6 && (s - 0.10).abs() < 1e-6 && (m - 0.75).abs() < 1e-6);
        // No elapsed time: zeros, never NaN or infinity.
        assert_eq!(fractions(&b, &b, 100.0, 2.0), (0.0, 0.0, 0.0));
    }

    #[test]
    fn reads_this_process() {
        let (u, s, m) = sample().expect("/proc is readable");
        for v in [u, s, m] {
            assert!((0.0..=1.0).contains(&v), "{v}");
        }
    }
}
