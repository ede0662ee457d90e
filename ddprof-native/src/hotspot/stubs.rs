//! The names of the code HotSpot generates outside nmethods (stub routines and
//! intrinsics such as `libmSin`, adapters, the interpreter, vtable and itable stubs), as
//! the JVM reports each piece with its code range (JVMTI DynamicCodeGenerated). A code
//! blob can hold many stubs ("StubRoutines (2)" holds hundreds; "vtable chunks" holds both
//! vtable and itable stubs), so the blob's own name alone would merge them.
//! Filled from the event (on whatever thread posts it) and read at dump time; never from a
//! signal handler. Stubs are never freed, so entries are never removed; the names are
//! interned (a JVM reports thousands of stubs under a few hundred names).

use jni::sys::jint;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};

use crate::jvmti::{self, Jvmti};

/// The names HotSpot gives vtable and itable stubs.
pub const VTABLE_STUB: &str = "vtable stub";
pub const ITABLE_STUB: &str = "itable stub";

#[derive(Default)]
struct Table {
    /// Stub start -> (end, index into `names`).
    ranges: BTreeMap<usize, (usize, u32)>,
    /// The lowest start and the highest end of them: a pc outside (any pc in a library, most
    /// of what a dump asks about) is answered without a walk down the tree.
    span: Option<(usize, usize)>,
    names: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
}

static STUBS: Mutex<Option<Table>> = Mutex::new(None);

/// Starts listening for stubs, and has the JVM report those made so far. Once per process;
/// on a JVM thread in the live phase.
pub fn start(jvmti: Jvmti) {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let on = jvmti.enable_event(jvmti::EVENT_DYNAMIC_CODE_GENERATED);
        let replayed = on.and_then(|_| jvmti.generate_events(jvmti::EVENT_DYNAMIC_CODE_GENERATED));
        if let Err(e) = replayed {
            crate::log::info(&format!("stub names unavailable (JVMTI error {e})"));
        }
    });
}

/// A stub the JVM reported (DynamicCodeGenerated).
pub fn on_stub(name: &[u8], address: usize, length: jint) {
    let Ok(len) = usize::try_from(length) else {
        return;
    };
    if len == 0 || name.is_empty() {
        return;
    }
    add(&String::from_utf8_lossy(name), address, len);
}

fn add(name: &str, start: usize, len: usize) {
    let _mem = crate::footprint::scope(crate::footprint::Category::Dictionary);
    let mut guard = STUBS.lock();
    let t = guard.get_or_insert_with(Table::default);
    let i = match t.index.get(name) {
        Some(&i) => i,
        None => {
            let i = t.names.len() as u32;
            t.names.push(name.into());
            t.index.insert(name.into(), i);
            i
        }
    };
    let end = start.saturating_add(len);
    t.ranges.insert(start, (end, i));
    t.span = Some(
        t.span
            .map_or((start, end), |(lo, hi)| (lo.min(start), hi.max(end))),
    );
}

/// The name of the reported stub holding `pc`, if any.
pub fn name_of(pc: usize) -> Option<String> {
    let guard = STUBS.lock();
    let t = guard.as_ref()?;
    let (lo, hi) = t.span?;
    if pc < lo || pc >= hi {
        return None;
    }
    match t.ranges.range(..=pc).next_back() {
        Some((_, &(end, i))) if pc < end => t.names.get(i as usize).map(|n| n.to_string()),
        _ => None,
    }
}

/// The name of the code blob holding `pc` (`I2C/C2I adapters`, `StubRoutines (2)`, ...),
/// read with crash-protected loads. None for a pc outside the code cache, and for an
/// nmethod (a stub pc whose blob was freed and reused: not the code that was sampled).
pub fn blob_name(pc: usize) -> Option<String> {
    let l = crate::sample::vm::layout::get()?;
    let (cc, cb) = (l.code_cache.as_ref()?, l.code_blob.as_ref()?);
    let blob = cc.find_blob(pc)?;
    let name = super::vmstructs::flags::read_c_str(cb.name_ptr(blob)?, MAX_BLOB_NAME)?;
    let name = String::from_utf8(name).ok()?;
    let nmethod = name == "nmethod" || name == "native nmethod";
    (!name.is_empty() && !nmethod).then_some(name)
}

/// Longest blob name read (HotSpot's are literals of a few dozen bytes).
const MAX_BLOB_NAME: usize = 128;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcs_are_named_by_the_stub_that_covers_them() {
        add(VTABLE_STUB, 0x7000_1000, 0x20);
        add(ITABLE_STUB, 0x7000_1020, 0x80);
        add("libmSin", 0x7000_2000, 0x400);
        add(VTABLE_STUB, 0x7000_3000, 0x20);
        assert_eq!(name_of(0x7000_1000).as_deref(), Some(VTABLE_STUB));
        assert_eq!(name_of(0x7000_101f).as_deref(), Some(VTABLE_STUB));
        assert_eq!(name_of(0x7000_1020).as_deref(), Some(ITABLE_STUB));
        assert_eq!(name_of(0x7000_109f).as_deref(), Some(ITABLE_STUB));
        assert_eq!(name_of(0x7000_10a0), None);
        assert_eq!(name_of(0x7000_0fff), None);
        assert_eq!(name_of(0x7000_23ff).as_deref(), Some("libmSin"));
        assert_eq!(name_of(0x7000_3010).as_deref(), Some(VTABLE_STUB));
        assert_eq!(name_of(0x7000_3020), None, "past the last stub");
        // A stub reported later below every other one is found too.
        add("late", 0x6000_0000, 0x10);
        assert_eq!(name_of(0x6000_000f).as_deref(), Some("late"));
        assert_eq!(name_of(0x6000_0010), None);
        assert_eq!(name_of(0x7000_3000).as_deref(), Some(VTABLE_STUB));
        let guard = STUBS.lock();
        let t = guard.as_ref().unwrap();
        assert_eq!(t.names.iter().filter(|n| &***n == VTABLE_STUB).count(), 1);
    }
}
