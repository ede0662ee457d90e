//! `natsock[=INTERVAL]`: TCP socket I/O (`send`, `recv`, `write`, `read`, `writev`, `readv`)
//! timed and sampled by call time, hooked without `LD_PRELOAD` through the import slots of
//! the loaded libraries (`crate::imports`: which objects, when, and what stop puts back) to
//! the hooks of `crate::sample::natsock`. Written as `datadog.NativeSocketEvent`.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::counters::Counter;
use crate::imports::{self, HookSet, Target};
use crate::sample::handler::WalkerKind;
use crate::sample::natsock::{self as hooks, peer, FUNCS, NAMES, OPERATIONS};
use crate::sample::record::Socket;

static SLOTS: HookSet = HookSet::new("natsock");
static RUNNING: AtomicBool = AtomicBool::new(false);
/// The last start succeeded: its recording has socket events (stays set through the stop's
/// final chunk).
static STARTED: AtomicBool = AtomicBool::new(false);

/// The real functions, as a call from this library binds them. All of them, or natsock does
/// not start: a hook whose real function is unknown could not be written into any slot.
fn resolve() -> Result<(), String> {
    imports::resolve_reals(
        &NAMES,
        |i| hooks::real(FUNCS[i]),
        |i, a| hooks::set_real(FUNCS[i], a),
        |_| true,
    )
    .map_err(|name| format!("natsock: cannot resolve {name}; socket I/O sampling unavailable"))
}

fn targets() -> Vec<Target> {
    imports::targets(&NAMES, |i| hooks::hook(FUNCS[i]), |i| hooks::real(FUNCS[i]))
}

fn patch_all() -> usize {
    let p = SLOTS.patch_all(&targets());
    Counter::NatsockHookedSlots.add(p.slots as i64);
    Counter::NatsockHookedLibraries.add(p.libraries as i64);
    Counter::NatsockHookFailures.add(p.failures as i64);
    p.libraries
}

/// Starts socket sampling at a mean of `interval_ns` of call time between samples (0: the
/// default, 1 ms), moved up by the rate controller when calls come faster.
pub fn start(interval_ns: u64, walker: WalkerKind, depth: usize) -> Result<(), String> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return Err("natsock is not supported on this architecture".into());
    }
    STARTED.store(false, Ordering::Release);
    resolve()?;
    imports::arm_sampler(walker, depth);
    hooks::arm(interval_ns, crate::sample::handler::ticks() as u64);
    RUNNING.store(true, Ordering::Release);
    STARTED.store(true, Ordering::Release);
    let n = patch_all();
    crate::log::info(&format!("natsock: hooked {n} libraries"));
    Ok(())
}

/// At a dump: hooks the libraries loaded since the last scan.
pub fn rescan() {
    if RUNNING.load(Ordering::Acquire) {
        patch_all();
    }
}

/// Stops sampling and puts the slots back.
pub fn stop() {
    if !RUNNING.swap(false, Ordering::AcqRel) {
        return;
    }
    hooks::disarm();
    let failures = SLOTS.restore_all(&targets());
    Counter::NatsockHookFailures.add(failures as i64);
    Counter::NatsockHookedLibraries.set(0);
    Counter::NatsockHookedSlots.set(0);
}

/// Whether the current (or just stopped) recording samples socket calls.
pub fn started() -> bool {
    STARTED.load(Ordering::Acquire)
}

/// `datadog.NativeSocketEvent.operation` of a sample.
pub fn operation(s: &Socket) -> &'static str {
    OPERATIONS
        .get(usize::from(s.operation))
        .copied()
        .unwrap_or("")
}

/// `datadog.NativeSocketEvent.remoteAddress` of a sample: `a.b.c.d:port` (IPv4-mapped IPv6
/// peers too, as the caller connected to an IPv4 address) or `[v6]:port`; empty when unknown.
pub fn remote_address(s: &Socket) -> String {
    let (kind, port, address) = peer::unpack(s.peer);
    match kind {
        peer::V4 => format!("{}:{port}", Ipv4Addr::from(address)),
        peer::V6 => hooks::v6_address(address)
            .map(|a| format!("[{}]:{port}", Ipv6Addr::from(a)))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_written_as_upstream_does() {
        let s = |peer| Socket {
            peer,
            ..Socket::default()
        };
        assert_eq!(
            remote_address(&s(peer::pack(peer::V4, 443, 0x0a00_0102))),
            "10.0.1.2:443"
        );
        assert_eq!(remote_address(&s(peer::pack(peer::V6, 443, 0))), "");
        assert_eq!(remote_address(&s(0)), "");
        assert_eq!(
            operation(&Socket {
                operation: 2,
                ..Socket::default()
            }),
            "WRITE"
        );
    }
}
