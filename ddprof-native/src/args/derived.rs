//! What a parsed [`Args`] implies: the start-time checks, the `EM_*` mode mask, the options the
//! core accepts but cannot sample yet, and the config intervals in milliseconds. Pure reads of
//! `Args`; nothing here changes it.

use super::cpu::EventKind;
use super::error::{ArgError, REASON_FILE_REQUIRED, REASON_NO_EVENTS};
use super::{Args, EM_ALLOC, EM_CPU, EM_NATIVEMEM, EM_NATIVESOCKET, EM_WALL};

impl Args {
    /// Start-time checks, in upstream's order: something must be sampled, then `file=` must be set.
    /// Both errors are state errors ([`ArgError::is_state_error`]).
    ///
    /// # Errors
    /// `event` / [`REASON_NO_EVENTS`] when [`Args::mode_mask`] is 0, else `file` /
    /// [`REASON_FILE_REQUIRED`] when no output file is set.
    pub fn validate_for_start(&self) -> Result<(), ArgError> {
        if self.mode_mask() == 0 {
            let event = self.event.as_deref().unwrap_or("");
            return Err(ArgError::new("event", event, REASON_NO_EVENTS));
        }
        if self.file.as_deref().is_none_or(str::is_empty) {
            return Err(ArgError::new("file", "", REASON_FILE_REQUIRED));
        }
        Ok(())
    }

    /// The `event=` name when it is none of the built-in engines, i.e. a perf event.
    #[must_use]
    pub fn perf_event(&self) -> Option<&str> {
        self.event
            .as_deref()
            .filter(|e| EventKind::of(e) == EventKind::Perf)
    }

    /// `datadog.DatadogProfilerConfig.modeMask`: `EM_*` bits of what will be sampled.
    /// Zero means a start fails with "No profiling events specified".
    #[must_use]
    pub fn mode_mask(&self) -> u32 {
        let mut mask = 0;
        if self.cpu_interval_ns.is_some() || self.perf_event().is_some() {
            mask |= EM_CPU;
        }
        // `generations=true` always has a memory interval and liveness (`parse`).
        if self
            .memory
            .as_ref()
            .is_some_and(|m| m.allocations || m.liveness)
        {
            mask |= EM_ALLOC;
        }
        if self.wall_interval_ns.is_some() {
            mask |= EM_WALL;
        }
        if self.nativemem.is_some() {
            mask |= EM_NATIVEMEM;
        }
        if self.natsock_ns.is_some() {
            mask |= EM_NATIVESOCKET;
        }
        mask
    }

    /// Options that were requested but that the core cannot sample or honour yet, by option name,
    /// for the "accepted but not yet sampled" warning.
    #[must_use]
    pub fn not_yet_sampled(&self) -> Vec<&'static str> {
        [
            ("jvmtistacks", self.jvmtistacks),
            ("lightweight", self.lightweight),
            ("event", self.perf_event().is_some()),
        ]
        .into_iter()
        .filter_map(|(name, requested)| requested.then_some(name))
        .collect()
    }

    /// `datadog.DatadogProfilerConfig.cpuInterval`: whole milliseconds (truncated, so 100 µs reads
    /// 0), and 0 when CPU sampling is off (upstream's no-op engine reports interval 0).
    #[must_use]
    pub fn cpu_interval_ms(&self) -> i64 {
        ns_to_ms(self.cpu_interval_ns)
    }

    /// `datadog.DatadogProfilerConfig.wallInterval`, with the same rules as `cpu_interval_ms`.
    #[must_use]
    pub fn wall_interval_ms(&self) -> i64 {
        ns_to_ms(self.wall_interval_ns)
    }
}

fn ns_to_ms(ns: Option<u64>) -> i64 {
    ns.map_or(0, |ns| i64::try_from(ns / 1_000_000).unwrap_or(i64::MAX))
}
