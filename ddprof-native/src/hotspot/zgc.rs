//! Which oop encoding this JVM uses (`crate::sample::vm::oop::HeapOops`), from the VM flags
//! `UseZGC` and `ZGenerational` and ZGC's own VMStructs globals (docs/hotspot.md 5.7).
//!
//! ZGC exports its pointer masks through one static instance whose fields point at the
//! globals: `ZGlobalsForVMStructs::_instance_p` (generational ZGC on 21+, the only ZGC on
//! 11-20) and `XGlobalsForVMStructs::_instance_p` (non-generational ZGC on 21-23). The
//! addresses are taken from the tables at load ([`keep_statics`]); the values are set by
//! the heap's initialisation, so they are read at the first start ([`init`]), when the
//! VM is running.
//!
//! The layout is accepted only if the JVM's own globals agree with what the decoder
//! assumes:
//! - generational: `_ZAddressOffsetMask` is `2^n - 1` and `_ZPointerLoadShift` is the
//!   shift the load-good mask implies in one of the two zpointer layouts (`oop::ZShift`:
//!   x86_64's one Remapped bit set, or aarch64's one clear with the address at bit 16);
//! - non-generational: `_XAddressOffsetMask` (or `_ZAddressOffsetMask` before 21) is
//!   `2^n - 1`, the metadata mask is the four bits above it and Finalizable the highest.
//!
//! Otherwise the encoding is `Unknown` with the reason, and the lazy mode falls back.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use jni::sys::{jobject, JNIEnv};

use super::vmstructs::{flags, VmTables};
use crate::counters::Counter;
use crate::sample::safe_access::load_usize;
use crate::sample::vm::klass;
use crate::sample::vm::layout::MethodGroup;
use crate::sample::vm::oop::{self, HeapOops, ZShift};

/// Offsets of the fields of one `*GlobalsForVMStructs` instance (each a pointer to the
/// global), and the address of its `_instance_p`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Globals {
    instance_p: usize,
    fields: Vec<(&'static str, usize)>,
}

impl Globals {
    fn from_tables(tables: &VmTables, ty: &str, names: &[&'static str]) -> Option<Globals> {
        let instance = tables.field(&format!("{ty}::_instance_p"))?;
        if !instance.is_static || instance.address == 0 {
            return None;
        }
        let fields = names
            .iter()
            .filter_map(|n| {
                let e = tables.field(&format!("{ty}::{n}"))?;
                (!e.is_static).then_some((*n, e.offset))
            })
            .collect();
        Some(Globals {
            instance_p: instance.address,
            fields,
        })
    }

    fn has(&self, name: &str) -> bool {
        self.fields.iter().any(|(n, _)| *n == name)
    }

    /// The value of the global `name` points at (all are word-sized: `uintptr_t`,
    /// `size_t`); `None` if not exported or unreadable.
    fn read(&self, name: &str) -> Option<usize> {
        let (_, offset) = self.fields.iter().find(|(n, _)| *n == name)?;
        let instance = load_usize(self.instance_p)?;
        if instance == 0 {
            return None;
        }
        let global = load_usize(instance.checked_add(*offset)?)?;
        if global == 0 {
            return None;
        }
        load_usize(global)
    }
}

const Z_FIELDS: &[&str] = &[
    "_ZAddressOffsetMask",
    "_ZPointerLoadGoodMask",
    "_ZPointerLoadShift",
    "_ZAddressMetadataMask",
    "_ZAddressMetadataFinalizable",
];
const X_FIELDS: &[&str] = &[
    "_XAddressOffsetMask",
    "_XAddressMetadataMask",
    "_XAddressMetadataFinalizable",
];

#[derive(Debug, Default)]
struct Statics {
    z: Option<Globals>,
    x: Option<Globals>,
}

static STATICS: OnceLock<Statics> = OnceLock::new();

/// Keeps the addresses of ZGC's exported globals. Called once by `crate::hotspot::init`.
pub fn keep_statics(tables: &VmTables) {
    STATICS.get_or_init(|| Statics {
        z: Globals::from_tables(tables, "ZGlobalsForVMStructs", Z_FIELDS),
        x: Globals::from_tables(tables, "XGlobalsForVMStructs", X_FIELDS),
    });
}

/// Settles and publishes the oop encoding (first call with a running heap wins); returns
/// it. On a JVM thread, at a start.
pub fn init() -> HeapOops {
    if let Some(e) = oop::published() {
        return e;
    }
    let Ok(table) = flags::table() else {
        // No flags: nothing tells ZGC apart; reads stay plain and their round trips
        // refuse what they cannot confirm.
        return HeapOops::Plain;
    };
    if !table.get_bool("UseZGC").unwrap_or(false) {
        return oop::publish(HeapOops::Plain);
    }
    let statics = STATICS.get_or_init(Statics::default);
    let generational = match table.get_bool("ZGenerational") {
        Ok(g) => g,
        // 11-20 (only the old ZGC) or 24+ (only the generational one): the exported
        // globals say which.
        Err(_) => statics
            .z
            .as_ref()
            .is_some_and(|z| z.has("_ZPointerLoadShift")),
    };
    match settle(statics, generational) {
        Settled::Known(e) => oop::publish(e),
        // The heap's globals are not set yet (a start this early is not expected):
        // nothing is published, so a later start looks again.
        Settled::NotYet => HeapOops::Unknown("ZGC's pointer masks are not initialised yet"),
    }
}

/// The load-good mask at the last refresh ([`klass_of_class_ref`]); 0 before any.
static REFRESHED_AT: AtomicUsize = AtomicUsize::new(0);

/// `klass::of_class_ref`, with more chances under ZGC, whose relocation leaves pointers to an
/// object's old address in two kinds of places until something loads them through the barrier:
/// - the caller's own handle (under non-generational ZGC every JNI handle holds a colored
///   pointer; a relocation while the caller sits in native code leaves it stale): the read is
///   tried again through a fresh local reference, which JNI makes by a barrier load;
/// - OopStorage slots, `Klass::_java_mirror` among them, which keep the old color and address
///   until loaded through the barrier (which heals the slot) or the next marking remaps them: a
///   class whose mirror moved since then fails the round trip, possibly for a whole GC cycle.
///   JVMTI GetLoadedClasses loads every class's mirror through the barrier; it is called at
///   most once per relocation ([`refresh_due`]), counted in `zgc_mirror_refreshes`, and the read
///   is tried again.
///
/// On a JVM thread (`jni` is its env).
pub fn klass_of_class_ref(m: &MethodGroup, jni: *mut JNIEnv, class: jobject) -> Option<usize> {
    if let Some(k) = klass::of_class_ref(m, class) {
        return Some(k);
    }
    let encoding = oop::encoding();
    if !matches!(
        encoding,
        HeapOops::ZColored { .. } | HeapOops::ZMultiMapped { .. }
    ) || jni.is_null()
    {
        return None;
    }
    if let Some(k) = through_fresh_ref(m, jni, class) {
        return Some(k);
    }
    if !refresh_due(encoding) {
        // Already refreshed since the last relocation: the slot is not stale, the class is
        // primitive, or the object moved meanwhile; "cannot tell" stands.
        return None;
    }
    let jvmti = crate::jvmti::jvm::jvmti()?;
    for c in jvmti.loaded_classes(jni) {
        crate::jvmti::delete_local_ref(jni, c);
    }
    Counter::ZgcMirrorRefreshes.inc();
    through_fresh_ref(m, jni, class)
}

/// Whether a mirror refresh may run now, noting it: once per good-mask value under generational
/// ZGC (a relocation flips it, so it is an epoch); under non-generational ZGC, whose exported
/// masks give no such epoch here, at most once per [`MULTI_MAPPED_REFRESH_NS`]. Published
/// before the refresh: a thread failing meanwhile takes the answer "cannot tell" rather than
/// refresh again.
fn refresh_due(encoding: HeapOops) -> bool {
    match encoding {
        HeapOops::ZColored { .. } => {
            let Some(good) = STATICS
                .get()
                .and_then(|s| s.z.as_ref())
                .and_then(|z| z.read("_ZPointerLoadGoodMask"))
            else {
                return false;
            };
            REFRESHED_AT.swap(good, Ordering::AcqRel) != good
        }
        HeapOops::ZMultiMapped { .. } => {
            let now = since_load_nanos();
            let last = LAST_MULTI_MAPPED_REFRESH.load(Ordering::Acquire);
            (last == 0 || now.saturating_sub(last) >= MULTI_MAPPED_REFRESH_NS)
                && LAST_MULTI_MAPPED_REFRESH
                    .compare_exchange(last, now.max(1), Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
        }
        _ => false,
    }
}

/// Nanoseconds since the first call (a monotonic clock for [`refresh_due`]).
fn since_load_nanos() -> u64 {
    static BASE: OnceLock<std::time::Instant> = OnceLock::new();
    u64::try_from(
        BASE.get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos(),
    )
    .unwrap_or(u64::MAX)
}

/// The shortest time between two mirror refreshes under non-generational ZGC (a GetLoadedClasses
/// costs a local reference per class; reads that fail are rare, during a relocation).
const MULTI_MAPPED_REFRESH_NS: u64 = 10_000_000;
static LAST_MULTI_MAPPED_REFRESH: AtomicU64 = AtomicU64::new(0);

/// `klass::of_class_ref` through a new local reference to `class` (deleted after).
fn through_fresh_ref(m: &MethodGroup, jni: *mut JNIEnv, class: jobject) -> Option<usize> {
    let fresh = crate::jvmti::new_local_ref(jni, class);
    if fresh.is_null() {
        return None;
    }
    let k = klass::of_class_ref(m, fresh);
    crate::jvmti::delete_local_ref(jni, fresh);
    k
}

enum Settled {
    Known(HeapOops),
    NotYet,
}

fn settle(statics: &Statics, generational: bool) -> Settled {
    if generational {
        let Some(z) = statics.z.as_ref().filter(|z| z.has("_ZPointerLoadShift")) else {
            return Settled::Known(HeapOops::Unknown(
                "generational ZGC without the exported ZPointer masks",
            ));
        };
        let (Some(offset_mask), Some(good), Some(shift)) = (
            z.read("_ZAddressOffsetMask"),
            z.read("_ZPointerLoadGoodMask"),
            z.read("_ZPointerLoadShift"),
        ) else {
            return Settled::Known(HeapOops::Unknown("ZGC's pointer masks are unreadable"));
        };
        if offset_mask == 0 || good == 0 {
            return Settled::NotYet;
        }
        Settled::Known(generational_layout(offset_mask, good, shift))
    } else {
        let (g, prefix) = match (statics.x.as_ref(), statics.z.as_ref()) {
            (Some(x), _) => (x, "_X"),
            (None, Some(z)) if z.has("_ZAddressMetadataMask") => (z, "_Z"),
            _ => {
                return Settled::Known(HeapOops::Unknown(
                    "this JDK's non-generational ZGC does not export its address masks",
                ))
            }
        };
        let (Some(offset_mask), Some(metadata), Some(finalizable)) = (
            g.read(&format!("{prefix}AddressOffsetMask")),
            g.read(&format!("{prefix}AddressMetadataMask")),
            g.read(&format!("{prefix}AddressMetadataFinalizable")),
        ) else {
            return Settled::Known(HeapOops::Unknown("ZGC's address masks are unreadable"));
        };
        if offset_mask == 0 {
            return Settled::NotYet;
        }
        Settled::Known(multi_mapped_layout(offset_mask, metadata, finalizable))
    }
}

/// Offset bits of an offset mask `2^n - 1` with a plausible `n` (ZGC uses 42 to 44).
fn offset_bits(mask: usize) -> Option<u32> {
    let n = mask.trailing_ones();
    (mask.count_ones() == n && (32..=47).contains(&n)).then_some(n)
}

fn generational_layout(offset_mask: usize, load_good: usize, load_shift: usize) -> HeapOops {
    let Some(bits) = offset_bits(offset_mask) else {
        return HeapOops::Unknown("ZGC's address offset mask is not 2^n - 1");
    };
    match ZShift::of_globals(load_good, load_shift) {
        Some(shift) => HeapOops::ZColored {
            offset_bits: bits,
            shift,
        },
        None => HeapOops::Unknown("ZGC's load shift does not match its load-good mask"),
    }
}

fn multi_mapped_layout(offset_mask: usize, metadata: usize, finalizable: usize) -> HeapOops {
    let Some(bits) = offset_bits(offset_mask) else {
        return HeapOops::Unknown("ZGC's address offset mask is not 2^n - 1");
    };
    if metadata != 0xf << bits || finalizable != 0b1000 << bits {
        return HeapOops::Unknown("ZGC's metadata bits are not the four above the offset");
    }
    HeapOops::ZMultiMapped { offset_bits: bits }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generational_layouts_are_checked_against_the_vm_shift() {
        let mask = (1usize << 42) - 1;
        // x86_64: Remapped bit 2 (bit 14) and some mark bits: shift 15.
        let good = (1 << 14) | 0x0500;
        assert_eq!(
            generational_layout(mask, good, 15),
            HeapOops::ZColored {
                offset_bits: 42,
                shift: ZShift::FromRemappedBit
            }
        );
        // aarch64: one Remapped bit clear, the fixed shift 16.
        assert_eq!(
            generational_layout(mask, (0xe << 12) | 0x0500, 16),
            HeapOops::ZColored {
                offset_bits: 42,
                shift: ZShift::Fixed16
            }
        );
        assert!(matches!(
            generational_layout(mask, good, 16),
            HeapOops::Unknown(_)
        ));
        assert!(matches!(
            generational_layout(mask, (1 << 14) | (1 << 13), 15),
            HeapOops::Unknown(_)
        ));
        assert!(matches!(
            generational_layout(mask ^ 0x10, good, 15),
            HeapOops::Unknown(_)
        ));
    }

    #[test]
    fn multi_mapped_layouts_need_the_four_metadata_bits() {
        let mask = (1usize << 44) - 1;
        assert_eq!(
            multi_mapped_layout(mask, 0xf << 44, 8 << 44),
            HeapOops::ZMultiMapped { offset_bits: 44 }
        );
        assert!(matches!(
            multi_mapped_layout(mask, 0x7 << 44, 8 << 44),
            HeapOops::Unknown(_)
        ));
        assert!(matches!(
            multi_mapped_layout(mask, 0xf << 44, 4 << 44),
            HeapOops::Unknown(_)
        ));
    }

    #[test]
    fn offset_masks() {
        assert_eq!(offset_bits((1 << 42) - 1), Some(42));
        assert_eq!(offset_bits((1 << 44) - 1), Some(44));
        assert_eq!(offset_bits(0), None);
        assert_eq!(offset_bits(0xffff), None);
        assert_eq!(offset_bits(((1 << 42) - 1) & !0x100), None);
    }
}
