//! The entry points and the token loop: split the command on `,`, split each token at its first
//! `=`, look the lower-cased key up in the option table, call its handler, collect unknown keys;
//! then resolve what depends on several options (default event, intervals, memory, file).

use super::cpu::EventKind;
use super::draft::Draft;
use super::error::ArgError;
use super::options;
use super::output::expand_file_pattern;
use super::{Action, Args, CpuEngine, Memory, DEFAULT_CPU_INTERVAL_NS, DEFAULT_WALL_INTERVAL_NS};

/// Parses `command`; for `start` / `resume` also checks that something would be sampled and that
/// `file=` is given (see [`Args::validate_for_start`]).
///
/// `env` looks up environment variables for `%{ENV}`, `pid` replaces `%p`, `now_epoch_secs`
/// replaces `%t` (formatted `yyyyMMdd-HHmmss`, in UTC).
///
/// # Errors
/// An [`ArgError`] naming the first option whose value is rejected, or, for `start` / `resume`,
/// the start-time check that failed.
pub fn parse(
    command: &str,
    env: &dyn Fn(&str) -> Option<String>,
    pid: u32,
    now_epoch_secs: i64,
) -> Result<Args, ArgError> {
    let args = parse_unchecked(command, env, pid, now_epoch_secs)?;
    if matches!(args.action, Action::Start | Action::Resume) {
        args.validate_for_start()?;
    }
    Ok(args)
}

/// Like [`parse`] without the start-time checks, for a caller that wants upstream's order of
/// errors ("Profiler already started" first, then [`Args::validate_for_start`]).
///
/// # Errors
/// An [`ArgError`] naming the first option whose value is rejected.
pub fn parse_unchecked(
    command: &str,
    env: &dyn Fn(&str) -> Option<String>,
    pid: u32,
    now_epoch_secs: i64,
) -> Result<Args, ArgError> {
    let mut draft = Draft::new();
    for token in command.split(',').filter(|t| !t.is_empty()) {
        let (key, value) = match token.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (token, None),
        };
        let option = key.to_ascii_lowercase();
        match options::handler(&option) {
            // The error names the key lower-cased and the value as given ("" when bare).
            Some(handle) => handle(&mut draft, value)
                .map_err(|reason| ArgError::new(&option, value.unwrap_or(""), reason))?,
            // Unknown keys are not errors: the caller warns with the key as written.
            None => draft.args.unknown.push(key.to_string()),
        }
    }
    resolve(draft, env, pid, now_epoch_secs)
}

/// Applies the rules that look at several options at once, in upstream's order.
fn resolve(
    draft: Draft,
    env: &dyn Fn(&str) -> Option<String>,
    pid: u32,
    now_epoch_secs: i64,
) -> Result<Args, ArgError> {
    let Draft {
        mut args,
        cpu,
        wall,
        memory_interval,
        record_allocations,
        record_liveness,
        record_heap_usage,
        live_ratio,
        file,
    } = draft;

    // Nothing asked for: CPU sampling (`natsock` is not part of upstream's rule).
    let explicit_event = args.event.is_some();
    if !explicit_event
        && cpu.is_none()
        && wall.is_none()
        && memory_interval.is_none()
        && args.nativemem.is_none()
    {
        args.event = Some("cpu".to_string());
    }
    let event_kind = args.event.as_deref().map(EventKind::of);

    args.cpu_engine = match event_kind {
        Some(EventKind::ITimer) => CpuEngine::ITimer,
        Some(EventKind::CTimer) => CpuEngine::CTimer,
        // Named by the user (not the default-event rule): perf_events, as async-profiler.
        Some(EventKind::Cpu) if explicit_event => CpuEngine::Perf,
        _ => CpuEngine::Auto,
    };
    let cpu_event = matches!(
        event_kind,
        Some(EventKind::Cpu | EventKind::CTimer | EventKind::ITimer)
    );
    if cpu.is_some() || cpu_event {
        args.cpu_interval_ns = Some(match cpu {
            Some(v) if v > 0 => v,
            _ => args.interval.unwrap_or(DEFAULT_CPU_INTERVAL_NS),
        });
    }
    if wall.is_some() || event_kind == Some(EventKind::Wall) {
        args.wall_interval_ns = Some(match wall {
            Some(v) if v > 0 => v,
            // Upstream's wall engine takes `interval` whenever an event was named.
            _ if explicit_event => args.interval.unwrap_or(DEFAULT_WALL_INTERVAL_NS),
            _ => DEFAULT_WALL_INTERVAL_NS,
        });
    }
    // `generations=true` tracks live objects and their ages whatever the memory flags say
    // (`memory=256k:a,generations=true` writes HeapLiveObject too), as upstream.
    let liveness = record_liveness || args.generations;
    args.memory = memory_interval.map(|interval| Memory {
        interval,
        allocations: record_allocations,
        liveness,
        heap_usage: record_heap_usage,
        ratio: live_ratio,
    });
    args.file = file
        .map(|f| {
            expand_file_pattern(f, env, pid, now_epoch_secs).map_err(|reason| ArgError {
                option: "file".to_string(),
                value: f.to_string(),
                reason,
            })
        })
        .transpose()?;
    Ok(args)
}
