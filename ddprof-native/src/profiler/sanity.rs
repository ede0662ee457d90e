//! The host check of the first `start` (upstream's "sanity check"): is there a CPU to spare and
//! room in memory for what the JVM may grow to plus the profiler? It is advisory, as upstream:
//! a failure never stops the start; it is logged once and recorded in every recording's
//! settings (`sanityCheckFailed`, `sanityCheckDetail`: docs/jfr-format.md). It runs at most once
//! per process (the host does not change under a running service), and `nosanity` on that first
//! start skips it for good.

use std::sync::OnceLock;

use crate::hotspot::vmstructs::flags;

/// What the check found; `None` in [`RESULT`] when it was skipped.
pub struct Outcome {
    pub failed: bool,
    /// `[sanity] key=value,...` in upstream's keys, for telemetry to parse.
    pub detail: String,
}

static RESULT: OnceLock<Option<Outcome>> = OnceLock::new();

const MIB: u64 = 1 << 20;
/// What the profiler itself is allowed for (upstream's figure).
const PROFILER_OVERHEAD: u64 = 64 * MIB;
/// Kept free for the kernel and everything else on the host.
const HOST_RESERVE: u64 = 128 * MIB;

/// Runs the check if no `start` ran it yet (`skip` = `nosanity` on that start); the outcome of
/// the one run, if any.
pub fn check_once(skip: bool) -> Option<&'static Outcome> {
    RESULT
        .get_or_init(|| (!skip).then(|| run(&Host::read())))
        .as_ref()
}

/// The outcome of the process's check, if it ran.
pub fn outcome() -> Option<&'static Outcome> {
    RESULT.get().and_then(Option::as_ref)
}

/// What the check reads of the host and the JVM.
#[derive(Clone, Debug, Default)]
pub(crate) struct Host {
    pub logical_cpus: u64,
    /// The cgroup's CPU quota in thousandths of a CPU, if limited.
    pub cgroup_millicores: Option<u64>,
    pub ram: u64,
    pub container_limit: Option<u64>,
    pub heap_max: u64,
    pub metaspace_max: u64,
    pub code_cache: u64,
    pub threads: u64,
    pub stack_size: u64,
}

impl Host {
    fn read() -> Host {
        let flag = |name: &str, default: u64| {
            flags::table()
                .and_then(|t| t.get_int(name))
                .ok()
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(default)
        };
        // SAFETY: sysconf has no memory arguments.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        Host {
            logical_cpus: u64::try_from(cpus).unwrap_or(1),
            cgroup_millicores: cgroup_millicores(),
            ram: meminfo_total().unwrap_or(0),
            container_limit: container_memory_limit(),
            heap_max: flag("MaxHeapSize", 0),
            // MaxMetaspaceSize is "unlimited" (about 2^64) by default: upstream's default then.
            metaspace_max: match flag("MaxMetaspaceSize", 256 * MIB) {
                v if v > (1 << 48) => 256 * MIB,
                v => v,
            },
            code_cache: flag("ReservedCodeCacheSize", 240 * MIB),
            threads: process_threads().unwrap_or(200),
            // ThreadStackSize is in KiB.
            stack_size: flag("ThreadStackSize", 512) * 1024,
        }
    }
}

/// The check itself, on what [`Host::read`] found.
pub(crate) fn run(h: &Host) -> Outcome {
    let effective_cores = match h.cgroup_millicores {
        Some(m) => h.logical_cpus.min(m / 1000),
        None => h.logical_cpus,
    };
    let cpu_fail = effective_cores < 1;
    let mut upper = h.ram.saturating_sub(HOST_RESERVE);
    if let Some(limit) = h.container_limit.filter(|&l| l < upper) {
        upper = limit;
    }
    let gc_overhead = h.heap_max / 100 * 30;
    let lower = h
        .heap_max
        .saturating_add(h.metaspace_max)
        .saturating_add(h.code_cache)
        .saturating_add(gc_overhead)
        .saturating_add(h.threads.saturating_mul(h.stack_size))
        .saturating_add(PROFILER_OVERHEAD);
    let mem_fail = upper > 0 && lower > upper;
    let verdict = |fail: bool| if fail { "fail" } else { "ok" };
    let mb = |v: u64| v / MIB;
    let detail = format!(
        "[sanity] cpu={},memory={},logical_cores={},cgroup_millicores={},effective_cores={},\
         ram_mb={},container_limit_mb={},upper_mb={},lower_mb={},heap_mb={},metaspace_mb={},\
         codecache_mb={},gc_overhead_mb={},threads={},stack_kb={},profiler_mb={},containerized={}",
        verdict(cpu_fail),
        verdict(mem_fail),
        h.logical_cpus,
        h.cgroup_millicores.map_or(-1, |m| m as i64),
        effective_cores,
        mb(h.ram),
        h.container_limit.map_or(-1, |l| mb(l) as i64),
        mb(upper),
        mb(lower),
        mb(h.heap_max),
        mb(h.metaspace_max),
        mb(h.code_cache),
        mb(gc_overhead),
        h.threads,
        h.stack_size / 1024,
        mb(PROFILER_OVERHEAD),
        h.cgroup_millicores.is_some() || h.container_limit.is_some(),
    );
    Outcome {
        failed: cpu_fail || mem_fail,
        detail,
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// cgroup v2 `cpu.max` ("QUOTA PERIOD" or "max PERIOD"), else v1's CFS quota and period.
fn cgroup_millicores() -> Option<u64> {
    if let Some(v2) = read_trimmed("/sys/fs/cgroup/cpu.max") {
        let mut it = v2.split_whitespace();
        let quota = it.next()?.parse::<u64>().ok()?;
        let period = it
            .next()
            .and_then(|p| p.parse::<u64>().ok())
            .unwrap_or(100_000);
        return (period > 0).then(|| quota * 1000 / period);
    }
    let quota = read_trimmed("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")?
        .parse::<i64>()
        .ok()
        .filter(|&q| q > 0)? as u64;
    let period = read_trimmed("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
        .and_then(|p| p.parse::<u64>().ok())
        .filter(|&p| p > 0)
        .unwrap_or(100_000);
    Some(quota * 1000 / period)
}

/// cgroup v2 `memory.max`, else v1's `memory.limit_in_bytes` (its "unlimited" is a huge value).
fn container_memory_limit() -> Option<u64> {
    if let Some(v2) = read_trimmed("/sys/fs/cgroup/memory.max") {
        return v2.parse::<u64>().ok();
    }
    read_trimmed("/sys/fs/cgroup/memory/memory.limit_in_bytes")?
        .parse::<u64>()
        .ok()
        .filter(|&l| l < 0x7fff_ffff_ffff_f000)
}

/// `MemTotal` of /proc/meminfo, in bytes.
fn meminfo_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib = line.split_whitespace().nth(1)?.parse::<u64>().ok()?;
    Some(kib * 1024)
}

/// `Threads` of /proc/self/status.
fn process_threads() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("Threads:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            logical_cpus: 2,
            cgroup_millicores: None,
            ram: 24 << 30,
            container_limit: None,
            heap_max: 4 << 30,
            metaspace_max: 256 * MIB,
            code_cache: 240 * MIB,
            threads: 40,
            stack_size: MIB,
        }
    }

    #[test]
    fn a_host_with_room_passes() {
        let o = run(&host());
        assert!(!o.failed, "{}", o.detail);
        assert!(
            o.detail.starts_with("[sanity] cpu=ok,memory=ok,"),
            "{}",
            o.detail
        );
        assert!(o.detail.contains("containerized=false"), "{}", o.detail);
    }

    #[test]
    fn a_heap_beyond_the_host_fails_memory() {
        let o = run(&Host {
            heap_max: 900 << 30,
            ..host()
        });
        assert!(o.failed);
        assert!(
            o.detail.starts_with("[sanity] cpu=ok,memory=fail,"),
            "{}",
            o.detail
        );
    }

    #[test]
    fn the_container_limit_caps_memory_and_the_quota_caps_cpus() {
        let o = run(&Host {
            container_limit: Some(2 << 30),
            cgroup_millicores: Some(500),
            ..host()
        });
        assert!(o.failed);
        assert!(
            o.detail.starts_with("[sanity] cpu=fail,memory=fail,"),
            "{}",
            o.detail
        );
        assert!(o.detail.contains("effective_cores=0"), "{}", o.detail);
        assert!(o.detail.contains("containerized=true"), "{}", o.detail);
    }

    #[test]
    fn unknown_ram_disables_the_memory_check() {
        let o = run(&Host {
            ram: 0,
            heap_max: 900 << 30,
            ..host()
        });
        assert!(!o.failed, "{}", o.detail);
    }
}
