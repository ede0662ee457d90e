//! HotSpot knowledge used off the signal path: reading VMStructs into the typed layout
//! (`vmstructs`, which also turns on the VM flags we need), line tables for the dump, and
//! the trace-ID calibration, and which oop encoding (ZGC's colored pointers) this JVM uses. The readers the signal handler uses live in the signal wing,
//! `crate::sample::vm`.

pub mod linetable;
pub mod trace_id;
pub mod vmstructs;
pub mod zgc;
