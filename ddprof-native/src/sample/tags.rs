//! Frame tags of the lazy mode: a raw `Method*` frame carries, beside the pointer, a
//! 26-bit tag made of a marker bit and the low 25 bits of its holder's JFR class trace ID
//! as it was when sampled. At dump time the tag tells whether the `Klass*` read back from
//! the (possibly stale) `Method*` is still the class that was sampled.
//!
//! The tag lives in bits a raw frame does not use (`Frame` is not widened):
//! - bits 0..16 of the tag in the top 16 bits of `method`: x86_64 user-space addresses
//!   are below 2^47, so a `Method*` has them clear;
//! - bits 16..26 of the tag (the marker is tag bit 25) in bits 16..26 of `bci`: real
//!   bcis fit in 16 bits (a method has at most 65535 bytes of code); bci -1 (method
//!   entry, native frames) is stored as 0xffff.
//!
//! An untagged raw frame (`fjmethodid=false`) has bci in 0..65535 or -1: bits 26..31 of
//! `bci` are either all clear with bit 25 clear, or all set. A frame is tagged exactly
//! when `bci >> 25 == 1`, so the marker decides, not the mode the profiler runs in now.
//!
//! All functions are signal-safe; all but [`tag_of`] are pure.

use std::sync::atomic::{AtomicBool, Ordering};

use super::frame::{kind, Frame};
use super::vm::layout::MethodGroup;
use super::vm::{method, trace_id};

/// The walker tags raw frames (a lazy session is running or was the last one).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Whether raw frames are tagged. Signal-safe.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

/// Switched by the profiler at start (lazy mode) and never from a handler.
pub fn set_active(on: bool) {
    ACTIVE.store(on, Ordering::Release);
}

/// The tag of a method's holder: `None` when the holder or its trace ID cannot be read;
/// with the method's idnum (`None` if unreadable). Signal-safe.
pub fn tag_of(m: &MethodGroup, method: usize) -> Option<(Tag, Option<u16>)> {
    let (holder, idnum) = method::holder_and_idnum(m, method)?;
    let tag = trace_id::trace_id(holder).map(Tag::of_trace_id)?;
    Some((tag, idnum))
}

/// Bits of the trace ID kept in a tag. Two live classes whose IDs agree in these bits
/// (possible only after 2^25 classes were created) cannot be told apart by the tag.
pub const ID_BITS: u32 = 25;
pub const ID_MASK: u64 = (1 << ID_BITS) - 1;
/// The marker bit of a tag.
pub const MARKER: u32 = 1 << ID_BITS;
/// Bits of `method` that hold a pointer.
const POINTER_BITS: u32 = 48;
const POINTER_MASK: u64 = (1 << POINTER_BITS) - 1;
const BCI_BITS: u32 = 16;
const BCI_MASK: u32 = (1 << BCI_BITS) - 1;
/// bci -1 as stored in 16 bits (no real bci reaches it).
const BCI_NONE: u32 = BCI_MASK;

/// A 26-bit tag: the marker bit and the low 25 bits of a trace ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tag(u32);

impl Tag {
    /// The tag of a class with trace ID `id`.
    pub const fn of_trace_id(id: u64) -> Tag {
        Tag(MARKER | (id & ID_MASK) as u32)
    }

    /// The trace-ID bits the tag keeps.
    pub const fn id_bits(self) -> u64 {
        (self.0 & ID_MASK as u32) as u64
    }

    /// Whether a class with trace ID `id` has this tag.
    pub const fn matches(self, id: u64) -> bool {
        self.id_bits() == id & ID_MASK
    }

    pub const fn bits(self) -> u32 {
        self.0
    }
}

/// A raw frame's contents with the tag taken out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Untagged {
    pub method: u64,
    pub bci: i32,
    pub tag: Option<Tag>,
    /// The method's idnum when sampled (tagged frames only, when it was read).
    pub idnum: Option<u16>,
}

/// A tagged raw frame, or `None` when `method` or `bci` do not leave room for the tag.
/// `idnum`: the method's, as read with the tag (HotSpot's unset idnum 0xffff is none).
pub fn tagged_frame(
    method: u64,
    bci: i32,
    frame_type: u8,
    tag: Tag,
    idnum: Option<u16>,
) -> Option<Frame> {
    if method & !POINTER_MASK != 0 {
        return None;
    }
    let bci_bits = match bci {
        -1 => BCI_NONE,
        b if (0..BCI_NONE as i32).contains(&b) => b as u32,
        _ => return None,
    };
    let t = tag.bits();
    let method = method | (u64::from(t & 0xffff) << POINTER_BITS);
    let bci = bci_bits | ((t >> 16) << BCI_BITS);
    let mut f = Frame::raw(method, bci as i32, frame_type);
    f.idnum = idnum.map_or(0, |n| n.wrapping_add(1));
    Some(f)
}

/// Whether a raw frame carries a tag (see the module comment).
pub const fn is_tagged(f: &Frame) -> bool {
    f.kind == kind::RAW_METHOD && (f.bci as u32) >> ID_BITS == 1
}

/// The `Method*`, real bci and tag of a raw frame (tagged or not). Other frames come
/// back unchanged with no tag.
pub fn untag(f: &Frame) -> Untagged {
    if !is_tagged(f) {
        return Untagged {
            method: f.method,
            bci: f.bci,
            tag: None,
            idnum: None,
        };
    }
    let b = f.bci as u32;
    let tag = ((b >> BCI_BITS) << 16) | (f.method >> POINTER_BITS) as u32;
    let bci = match b & BCI_MASK {
        BCI_NONE => -1,
        x => x as i32,
    };
    Untagged {
        method: f.method & POINTER_MASK,
        bci,
        tag: Some(Tag(tag)),
        idnum: f.idnum.checked_sub(1),
    }
}

/// The bci a frame stands for (tag bits removed).
pub fn bci(f: &Frame) -> i32 {
    untag(f).bci
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_unpack_round_trip() {
        for &(m, bci, id) in &[
            (0x7f12_3456_7890u64, 0, 1u64),
            (0x0000_7fff_ffff_fff8, 65534, ID_MASK),
            (0x0000_0008_0004_1000, 17, 0x1ab_cdef),
            (0x1000, -1, 709),
            (0x7f00_0000_0000, 12, (1 << 40) + 5), // ID beyond the tag range keeps its low bits
        ] {
            let tag = Tag::of_trace_id(id);
            let idnum = Some((id % 65535) as u16);
            let f = tagged_frame(m, bci, 1, tag, idnum).expect("taggable");
            assert!(is_tagged(&f));
            let u = untag(&f);
            assert_eq!(
                (u.method, u.bci, u.tag, u.idnum),
                (m, bci, Some(tag), idnum),
                "{m:#x} {bci} {id}"
            );
            let without = tagged_frame(m, bci, 1, tag, None).expect("taggable");
            assert_eq!(untag(&without).idnum, None);
            assert!(u.tag.unwrap().matches(id));
            assert_eq!(f.frame_type, 1);
            assert_eq!(f.kind, kind::RAW_METHOD);
        }
    }

    #[test]
    fn the_tag_keeps_the_low_25_bits_of_the_trace_id() {
        let t = Tag::of_trace_id((7 << 25) | 42);
        assert_eq!(t.id_bits(), 42);
        assert!(t.matches(42));
        assert!(t.matches((1 << 25) | 42)); // the collision the docs describe
        assert!(!t.matches(43));
        assert_eq!(t.bits() & MARKER, MARKER);
    }

    #[test]
    fn untaggable_frames_are_refused() {
        let tag = Tag::of_trace_id(5);
        // A pointer with high bits set (not a user-space address on x86_64).
        assert!(tagged_frame(0xffff_8000_0000_0000, 0, 0, tag, None).is_none());
        assert!(tagged_frame(0x0001_0000_0000_0000, 0, 0, tag, None).is_none());
        // bcis that do not fit in 16 bits, other negative values.
        assert!(tagged_frame(0x1000, 65535, 0, tag, None).is_none());
        assert!(tagged_frame(0x1000, 70000, 0, tag, None).is_none());
        assert!(tagged_frame(0x1000, -2, 0, tag, None).is_none());
    }

    #[test]
    fn untagged_raw_frames_are_never_taken_for_tagged_ones() {
        for bci in [-1, 0, 1, 100, 65534] {
            let f = Frame::raw(0x7f00_1234_5678, bci, 3);
            assert!(!is_tagged(&f), "bci {bci}");
            let u = untag(&f);
            assert_eq!((u.method, u.bci, u.tag), (0x7f00_1234_5678, bci, None));
        }
        // jmethodID and error frames never are, whatever their bits.
        let mut j = Frame::java(0xdead_beef, 1 << 25, 0);
        assert!(!is_tagged(&j));
        j.kind = kind::ERROR;
        assert!(!is_tagged(&j));
    }

    #[test]
    fn frames_of_one_method_with_different_tags_differ() {
        let a = tagged_frame(0x1000, 3, 0, Tag::of_trace_id(1), None).unwrap();
        let b = tagged_frame(0x1000, 3, 0, Tag::of_trace_id(2), None).unwrap();
        assert_ne!(a, b);
        assert_eq!(untag(&a).method, untag(&b).method);
        assert_eq!(bci(&a), 3);
    }
}
