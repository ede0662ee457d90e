//! The one error type of the parser: which option, which value, and why. Handlers only produce
//! the reason (a `&'static str`); the parse loop adds the option and the value, so every message
//! has the same `Invalid value for option 'KEY': 'VALUE' (REASON)` shape.

use std::fmt;

/// Reason of the error `validate_for_start` returns when nothing would be sampled. Upstream raises
/// it from `Profiler::start`, i.e. as an `IllegalStateException`; see [`ArgError::is_state_error`].
pub const REASON_NO_EVENTS: &str = "No profiling events specified";
/// Reason of the error `validate_for_start` returns when `file=` is missing.
pub const REASON_FILE_REQUIRED: &str = "required for start";

/// A rejected command: which option, which value, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgError {
    /// The option key, lower-cased.
    pub option: String,
    /// The value as given; empty for a bare key.
    pub value: String,
    pub reason: String,
}

impl ArgError {
    pub(super) fn new(option: &str, value: &str, reason: &str) -> ArgError {
        ArgError {
            option: option.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        }
    }

    /// True for the two start-time checks (no events, no file). Upstream detects these in
    /// `Profiler::start`, after "Profiler already started", and raises `IllegalStateException`;
    /// every other `ArgError` is a parse error (`IllegalArgumentException`).
    #[must_use]
    pub fn is_state_error(&self) -> bool {
        (self.option == "event" && self.reason == REASON_NO_EVENTS)
            || (self.option == "file" && self.reason == REASON_FILE_REQUIRED)
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Invalid value for option '{}': '{}' ({})",
            self.option, self.value, self.reason
        )
    }
}

impl std::error::Error for ArgError {}
