//! HotSpot knowledge used off the signal path: reading VMStructs into the typed layout
//! (`vmstructs`, which also turns on the VM flags we need), line tables for the dump, the
//! trace-ID calibration, which oop encoding (ZGC's colored pointers) this JVM uses, how
//! object headers hold their class (`receiver`) and what the code HotSpot generates
//! outside nmethods is called (`stubs`). The readers the signal handler uses live in the signal wing,
//! `crate::sample::vm`.

pub mod linetable;
pub mod receiver;
pub mod stubs;
pub mod trace_id;
pub mod vmstructs;
pub mod zgc;

/// Reads libjvm's VMStructs into the typed layout, once; ZGC's globals are kept from the same
/// tables. Not signal-safe.
pub fn init() {
    vmstructs::init(zgc::keep_statics);
}
