//! `Klass*` of a Java class and the few Klass/InstanceKlass fields the lazy method-ID
//! mode reads (docs/hotspot.md 5.3). Every read goes through the crash-protected loads.
//!
//! A JNI class reference leads to the class's mirror oop, and the mirror holds the
//! `Klass*` at `java_lang_Class::_klass_offset`. Reading an oop through a handle races
//! with a moving GC (the dump and ClassPrepare threads are in native state), so every
//! answer is checked: the Klass's own `_java_mirror` must lead back to the same oop, and
//! the handle must still hold it afterwards. A mismatch is retried a few times, then
//! reported as `None`; callers treat that as "cannot tell" (never as a wrong class).
//! Under ZGC both oops are decoded from their colored form first (`super::oop`); under
//! generational ZGC a mirror's OopHandle can keep an old address for a GC cycle, which
//! `crate::hotspot::zgc::klass_of_class_ref` works around on JVM threads.

use jni::sys::jobject;

use super::codecache::load_field;
use super::layout::MethodGroup;
use super::oop;
use crate::sample::safe_access::{load_i32, load_usize};

/// JNI global and weak global handles carry a type tag in their low bits on recent JDKs
/// (weak 1, global 2 on 21+; weak 1 on 11-20); a local handle has none.
const HANDLE_TAG_MASK: usize = 0b11;
/// Attempts before giving up on a Klass* read that keeps changing under a moving GC.
const ATTEMPTS: usize = 4;
/// Methods of one class (idnums are u2).
const MAX_METHODS: usize = 1 << 16;

/// The address of the object a JNI handle (local, global or weak global) refers to, 0 for
/// a cleared one; `None` for a null handle, an unreadable slot, or a value that is not an
/// oop of this JVM's encoding (`oop::HeapOops`: ZGC's colored pointers are decoded). A raw
/// read: no GC barrier, so only "0" is a firm answer (a cleared weak slot is never set
/// again), and an address may be where the object was before it moved.
pub fn oop_of(handle: jobject) -> Option<usize> {
    let tag = (handle as usize) & HANDLE_TAG_MASK;
    let slot = (handle as usize) & !HANDLE_TAG_MASK;
    if slot == 0 {
        return None;
    }
    // Global and weak global handles live in OopStorage, which ZGC colors; locals do not
    // (JDK 21+, the only JDKs with generational ZGC, tag every global handle).
    oop::encoding().decode(load_usize(slot)?, tag != 0)
}

/// The address of the mirror behind `Klass::_java_mirror` (an OopHandle: an OopStorage
/// slot, colored under ZGC); `None` if unreadable or not an oop.
fn mirror_of(m: &MethodGroup, klass: usize) -> Option<usize> {
    let slot = load_usize(klass.checked_add(m.klass.java_mirror)?)?;
    if slot == 0 {
        return None;
    }
    oop::encoding().decode(load_usize(slot)?, true)
}

/// The `Klass*` of the class a JNI handle refers to; `None` for primitive classes, a
/// non-class object, or when the reads cannot be confirmed (see the module comment).
/// Not signal-safe in spirit (it is meant for JVM threads) but allocates nothing.
pub fn of_class_ref(m: &MethodGroup, class: jobject) -> Option<usize> {
    let klass_offset = usize::try_from(load_i32(m.java_lang_class_klass_offset_addr)?).ok()?;
    if klass_offset == 0 {
        return None;
    }
    for _ in 0..ATTEMPTS {
        let oop = oop_of(class)?;
        if oop == 0 {
            return None;
        }
        let Some(klass) = oop.checked_add(klass_offset).and_then(load_usize) else {
            continue;
        };
        if klass == 0 {
            // A primitive class (int.class) has no Klass; or a moving GC got in the way.
            if oop_of(class) == Some(oop) {
                return None;
            }
            continue;
        }
        if !klass.is_multiple_of(8) {
            continue;
        }
        // Both sides decoded: under ZGC the handle and the OopHandle may carry different
        // colors for the same object, and only the addresses must agree.
        if mirror_of(m, klass) == Some(oop) && oop_of(class) == Some(oop) {
            return Some(klass);
        }
    }
    None
}

/// Whether `klass` is an instance class (not an array class): Klass::_layout_helper is
/// positive for instance classes, negative for arrays. Signal-safe.
pub fn is_instance_klass(m: &MethodGroup, klass: usize) -> bool {
    load_field(klass, m.klass.layout_helper).is_some_and(|lh| lh > 0)
}

/// `InstanceKlass::_methods` as (address of the first element, length). Signal-safe.
pub fn methods(m: &MethodGroup, klass: usize) -> Option<(usize, usize)> {
    let array = load_usize(klass.checked_add(m.instance_klass.methods)?)?;
    if array == 0 {
        return None;
    }
    let len = load_field(array, m.array.length)?;
    let len = usize::try_from(len).ok().filter(|l| *l <= MAX_METHODS)?;
    Some((array.checked_add(m.array.method_data)?, len))
}

/// Whether `method` is one of the methods in `(data, len)` (from [`methods`]): first the
/// slot its idnum names (idnum == index for a class never redefined), then, only for
/// classes of at most `scan_cap` methods, every slot. `read` loads one element.
pub fn methods_contain(
    data: usize,
    len: usize,
    method: usize,
    idnum: usize,
    scan_cap: usize,
    read: impl Fn(usize) -> Option<usize>,
) -> Contains {
    let at = |i: usize| {
        i.checked_mul(8)
            .and_then(|o| data.checked_add(o))
            .and_then(&read)
    };
    if idnum < len && at(idnum) == Some(method) {
        return Contains::Yes;
    }
    if len > scan_cap {
        return Contains::Unknown;
    }
    if (0..len).any(|i| at(i) == Some(method)) {
        Contains::Yes
    } else {
        Contains::No
    }
}

/// The method of `(data, len)` (from [`methods`]) whose idnum is `idnum`: first the slot
/// `idnum`, then every slot, as HotSpot's `InstanceKlass::method_with_idnum` looks. A
/// method keeps its idnum across its class's redefinitions, so this is the current
/// version of a method sampled in an older one. `idnum_of` reads one method's idnum.
pub fn method_with_idnum(
    data: usize,
    len: usize,
    idnum: usize,
    read: impl Fn(usize) -> Option<usize>,
    idnum_of: impl Fn(usize) -> Option<usize>,
) -> Option<usize> {
    let at = |i: usize| {
        i.checked_mul(8)
            .and_then(|o| data.checked_add(o))
            .and_then(&read)
            .filter(|&m| m != 0)
    };
    let has = |m: usize| idnum_of(m) == Some(idnum);
    if let Some(m) = (idnum < len)
        .then(|| at(idnum))
        .flatten()
        .filter(|&m| has(m))
    {
        return Some(m);
    }
    (0..len).filter_map(at).find(|&m| has(m))
}

/// Answer of [`methods_contain`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contains {
    Yes,
    No,
    /// Not at its idnum's slot, and the class has too many methods to scan.
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(words: &[usize], base: usize) -> impl Fn(usize) -> Option<usize> + '_ {
        move |addr| {
            addr.checked_sub(base)
                .filter(|o| o % 8 == 0)
                .and_then(|o| words.get(o / 8).copied())
        }
    }

    #[test]
    fn method_at_its_idnum_is_found_without_a_scan() {
        let words: Vec<usize> = (0..1000).map(|i| 0x1000 + i * 0x40).collect();
        let read = reader(&words, 0x8000);
        assert_eq!(
            methods_contain(0x8000, 1000, 0x1000 + 700 * 0x40, 700, 256, read),
            Contains::Yes
        );
    }

    #[test]
    fn small_classes_are_scanned_when_the_idnum_slot_differs() {
        // After a redefinition the order may differ from the idnums.
        let words = [0x100usize, 0x200, 0x300, 0x400];
        assert_eq!(
            methods_contain(0x8000, 4, 0x300, 0, 256, reader(&words, 0x8000)),
            Contains::Yes
        );
        assert_eq!(
            methods_contain(0x8000, 4, 0x500, 1, 256, reader(&words, 0x8000)),
            Contains::No
        );
        // idnum beyond the array: still scanned.
        assert_eq!(
            methods_contain(0x8000, 4, 0x400, 9, 256, reader(&words, 0x8000)),
            Contains::Yes
        );
    }

    #[test]
    fn large_classes_are_not_scanned() {
        let words: Vec<usize> = (0..257).map(|i| 0x1000 + i * 0x40).collect();
        // Present, but not at its idnum, and the class is over the cap.
        let m = 0x1000 + 3 * 0x40;
        assert_eq!(
            methods_contain(0x8000, 257, m, 5, 256, reader(&words, 0x8000)),
            Contains::Unknown
        );
        // Exactly at the cap: scanned.
        assert_eq!(
            methods_contain(0x8000, 256, m, 5, 256, reader(&words, 0x8000)),
            Contains::Yes
        );
    }

    #[test]
    fn unreadable_slots_never_match() {
        let words = [0x100usize, 0x200];
        assert_eq!(
            methods_contain(0x8000, 8, 0x0, 5, 256, reader(&words, 0x8000)),
            Contains::No
        );
    }
}
