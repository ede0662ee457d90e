//! Everything that knows HotSpot's internals: the VMStructs layout, the code cache,
//! debug info and line tables, Method*/Klass* readers, the current JavaThread, and the
//! calibrated JFR class trace ID.

pub mod codecache;
pub mod current_thread;
pub mod debuginfo;
pub mod klass;
pub mod linetable;
pub mod method;
pub mod trace_id;
pub mod vmstructs;
