//! Which vtable/itable stub a pc is in, as the JVM reports its stubs (JVMTI
//! DynamicCodeGenerated: "vtable stub" and "itable stub", each with its code range). Both
//! kinds share HotSpot's "vtable chunks" blobs, so the blob alone cannot tell them apart.
//! Filled from the event (on whatever thread posts it) and read at dump time; never from a
//! signal handler. Stubs are never freed, so entries are never removed.

use jni::sys::jint;
use parking_lot::Mutex;
use std::collections::BTreeMap;

use crate::jvmti::{self, Jvmti};

/// The two stub names HotSpot gives, and what a pc of the blob the event never covered is.
pub const VTABLE_STUB: &str = "vtable stub";
pub const ITABLE_STUB: &str = "itable stub";
pub const UNKNOWN_STUB: &str = "vtable chunks";

/// Stub start -> (end, is itable).
static STUBS: Mutex<BTreeMap<usize, (usize, bool)>> = Mutex::new(BTreeMap::new());

/// Starts listening for stubs, and has the JVM report those made so far. Once per process;
/// on a JVM thread in the live phase.
pub fn start(jvmti: Jvmti) {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let on = jvmti.enable_event(jvmti::EVENT_DYNAMIC_CODE_GENERATED);
        let replayed = on.and_then(|_| jvmti.generate_events(jvmti::EVENT_DYNAMIC_CODE_GENERATED));
        if let Err(e) = replayed {
            crate::log::info(&format!("vtable stub names unavailable (JVMTI error {e})"));
        }
    });
}

/// A stub the JVM reported (DynamicCodeGenerated): the vtable and itable stubs are kept.
pub fn on_stub(name: &[u8], address: usize, length: jint) {
    let itable = match name {
        b"vtable stub" => false,
        b"itable stub" => true,
        _ => return,
    };
    if let Ok(len) = usize::try_from(length) {
        if len > 0 {
            add(address, len, itable);
        }
    }
}

fn add(start: usize, len: usize, itable: bool) {
    let _mem = crate::memory::scope(crate::memory::Category::Dictionary);
    STUBS
        .lock()
        .insert(start, (start.saturating_add(len), itable));
}

/// The name of the stub holding `pc`: "vtable stub", "itable stub", or, for a pc no
/// reported stub covers, "vtable chunks".
pub fn name_of(pc: usize) -> &'static str {
    match STUBS.lock().range(..=pc).next_back() {
        Some((_, &(end, itable))) if pc < end => {
            if itable {
                ITABLE_STUB
            } else {
                VTABLE_STUB
            }
        }
        _ => UNKNOWN_STUB,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcs_are_named_by_the_stub_that_covers_them() {
        add(0x7000_1000, 0x20, false);
        add(0x7000_1020, 0x80, true);
        assert_eq!(name_of(0x7000_1000), VTABLE_STUB);
        assert_eq!(name_of(0x7000_101f), VTABLE_STUB);
        assert_eq!(name_of(0x7000_1020), ITABLE_STUB);
        assert_eq!(name_of(0x7000_109f), ITABLE_STUB);
        assert_eq!(name_of(0x7000_10a0), UNKNOWN_STUB);
        assert_eq!(name_of(0x7000_0fff), UNKNOWN_STUB);
    }
}
