//! The state the option handlers build while a command is parsed, and the handlers' type.

use super::values::Reason;
use super::{Args, DEFAULT_LIVE_SAMPLES_RATIO};

/// What the handlers build: the `Args` plus the raw values that are only resolved once every
/// token is seen (upstream resolves them lazily too, so the order of `cpu`, `interval` and
/// `event` does not matter). `'a` is the command string, which `file=` borrows until expansion.
pub(super) struct Draft<'a> {
    pub(super) args: Args,
    /// `cpu=` as read; 0 means "the default or `interval`".
    pub(super) cpu: Option<u64>,
    /// `wall=` as read, without the `~`; 0 as for `cpu`.
    pub(super) wall: Option<u64>,
    /// Set by `memory=`, `event=alloc` (0) and `generations=true`.
    pub(super) memory_interval: Option<u64>,
    pub(super) record_allocations: bool,
    pub(super) record_liveness: bool,
    pub(super) record_heap_usage: bool,
    pub(super) live_ratio: f64,
    /// `file=` before `%` expansion.
    pub(super) file: Option<&'a str>,
}

impl Draft<'_> {
    pub(super) fn new() -> Self {
        Draft {
            args: Args::default(),
            cpu: None,
            wall: None,
            memory_interval: None,
            record_allocations: false,
            record_liveness: false,
            record_heap_usage: false,
            live_ratio: DEFAULT_LIVE_SAMPLES_RATIO,
            file: None,
        }
    }
}

/// Applies one token's value (`None` for a bare key, `Some("")` for `key=`) to the draft, or
/// says why the value is rejected.
pub(super) type Handler = for<'a> fn(&mut Draft<'a>, Option<&'a str>) -> Result<(), Reason>;
