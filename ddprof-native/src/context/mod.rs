//! A thread's trace context off the signal path (the records the handlers copy are
//! `crate::sample::context`): the dictionary of attribute values (`dictionary`), the
//! wall-clock thread filter (`thread_filter`), the exported OTel thread-local (`otel_tls`),
//! and the process-wide OTel context (`process`). docs/context.md.

pub mod dictionary;
pub mod otel_tls;
pub mod process;
pub mod thread_filter;
