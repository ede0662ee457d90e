//! Works out, once per process, how this JVM's object headers name their class, for the
//! receiver frames of vtable/itable stubs (`crate::sample::vm::receiver`,
//! docs/hotspot.md 5.3): from VMStructs (offsets, `markWord::klass_shift`, the compressed
//! class space's base and shift) and VM flags (`UseCompressedClassPointers`,
//! `UseCompactObjectHeaders`, `UseObjectMonitorTable`, `LockingMode`). Not signal-safe.

use super::vmstructs::flags;
use crate::sample::safe_access::{load_i32, load_usize};
use crate::sample::vm::layout;
use crate::sample::vm::receiver::{self, KlassIn, ReceiverLayout};

/// `LockingMode`'s legacy stack locking (`LM_LEGACY`), whose locked marks point into a stack.
const LM_LEGACY: i64 = 1;

/// Publishes the receiver layout (once; later calls return the first answer) or says why
/// this JVM has none.
pub fn init() -> Result<ReceiverLayout, String> {
    static RESULT: std::sync::OnceLock<Result<ReceiverLayout, String>> = std::sync::OnceLock::new();
    RESULT
        .get_or_init(|| resolve().map(receiver::publish))
        .clone()
}

fn resolve() -> Result<ReceiverLayout, String> {
    let m = layout::get()
        .and_then(|l| l.method.as_ref())
        .ok_or("the VMStructs method group is missing")?;
    let table = flags::table().map_err(|e| format!("VM flags unreadable: {e:?}"))?;
    let flag = |name: &str| table.get_bool(name).ok();
    let mirror_klass_offset = load_i32(m.java_lang_class_klass_offset_addr)
        .and_then(|v| usize::try_from(v).ok())
        .filter(|&v| v != 0)
        .ok_or("java_lang_Class::_klass_offset unreadable")?;
    let base =
        || load_usize(m.compressed_klass_base_addr).ok_or("compressed klass base unreadable");
    let shift = || {
        load_i32(m.compressed_klass_shift_addr)
            .and_then(|v| u32::try_from(v).ok())
            .filter(|&v| v < 32)
            .ok_or("compressed klass shift unreadable")
    };
    let h = m.header;
    let klass = if flag("UseCompactObjectHeaders") == Some(true) {
        let legacy = table.get_int("LockingMode").ok() == Some(LM_LEGACY);
        let monitor_header = if flag("UseObjectMonitorTable") == Some(true) {
            None
        } else {
            Some(
                h.monitor_header
                    .ok_or("ObjectMonitor::_header is not exported")?,
            )
        };
        KlassIn::Mark {
            mark_shift: h
                .mark_klass_shift
                .ok_or("markWord::klass_shift is not exported")?,
            base: base()?,
            shift: shift()?,
            monitor_header,
            fast_locked_keeps_klass: !legacy,
        }
    } else if flag("UseCompressedClassPointers").unwrap_or(true) {
        KlassIn::Narrow {
            offset: h
                .compressed_klass
                .ok_or("oopDesc::_metadata._compressed_klass is not exported")?,
            base: base()?,
            shift: shift()?,
        }
    } else {
        KlassIn::Wide {
            offset: h.klass.ok_or("oopDesc::_metadata._klass is not exported")?,
        }
    };
    Ok(ReceiverLayout {
        klass,
        java_mirror: m.klass.java_mirror,
        mirror_klass_offset,
    })
}
