//! What an oop stored outside the heap looks like under this JVM's collector, and how to
//! get the object's address from it (docs/hotspot.md 5.7). Pure bit arithmetic on values
//! read elsewhere (through the crash-protected loads); the encoding is worked out once by
//! `crate::hotspot::zgc` from VM flags and ZGC's VMStructs globals, then published here.
//!
//! - Every collector but ZGC stores plain addresses.
//! - Non-generational ZGC (JDK 15-20, and JDK 21-23 with `-XX:-ZGenerational`) stores
//!   colored pointers everywhere: the offset in the low bits, one of the view bits
//!   (Marked0, Marked1, Remapped) and maybe Finalizable just above. All three views map the
//!   same memory, so the address is the offset in the Remapped view: two colors of one
//!   object then compare equal.
//! - Generational ZGC (JDK 21+) stores a zpointer in OopStorage slots (JNI global and weak
//!   global handles, `Klass::_java_mirror`) and in the heap: the address shifted left over
//!   16 metadata bits, the Remapped nibble at bits 12-15. HotSpot's CPU ports lay it out
//!   two ways ([`ZShift`]): on x86_64 the nibble has exactly one bit set and the address
//!   starts just above it (`address << (13 + index of that bit)`), so the load barrier's
//!   shift itself strips the color; on aarch64 (and the other ports) the address always
//!   starts at bit 16 and a good nibble has exactly one bit clear. A pointer whose address
//!   part is zero is a (colored) null. JNI local handles hold plain (uncolored) addresses.
//!
//! An address decoded from a pointer that is not load-good may be where the object was
//! before a relocation: callers compare two independent reads (the round trip of
//! `klass::of_class_ref`) rather than trust one.

use std::sync::OnceLock;

/// How oops are stored outside the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapOops {
    /// Plain addresses (Serial, Parallel, G1, Shenandoah, Epsilon).
    Plain,
    /// Non-generational ZGC: `offset_bits` of offset, then the 4 metadata bits.
    ZMultiMapped { offset_bits: u32 },
    /// Generational ZGC: zpointers laid out as `shift` says, whose addresses are
    /// `2^offset_bits + offset`.
    ZColored { offset_bits: u32, shift: ZShift },
    /// ZGC with a pointer layout we do not know: no oop is decoded.
    Unknown(&'static str),
}

/// Where a zpointer's Remapped nibble sits, and the metadata bits under its address.
pub const ZPOINTER_REMAPPED_SHIFT: u32 = 12;
const ZPOINTER_METADATA_BITS: u32 = 16;

/// Where a zpointer's address starts: the two layouts of HotSpot's CPU ports
/// (`ZPointer::load_shift_lookup` and `remap_bits` in their `zAddress_<cpu>` files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZShift {
    /// x86_64: the Remapped nibble has exactly one bit set, `1 << i`, and the address
    /// starts at `13 + i`.
    FromRemappedBit,
    /// aarch64, ppc64, riscv64: the address starts at bit 16; the Remapped nibble of any
    /// pointer the collector wrote has exactly one bit clear (the good color inverted).
    Fixed16,
}

impl ZShift {
    /// The layout a JVM uses, from its exported load-good mask and load shift: the mask's
    /// own shift, worked out as for any pointer, must be the one the load barrier uses.
    pub fn of_globals(load_good: usize, load_shift: usize) -> Option<ZShift> {
        [ZShift::FromRemappedBit, ZShift::Fixed16]
            .into_iter()
            .find(|s| s.of(load_good).is_some_and(|b| b as usize == load_shift))
    }

    /// The shift of `raw`'s address; `None` if its Remapped nibble is not one this layout
    /// writes (not a zpointer of this layout).
    pub fn of(self, raw: usize) -> Option<u32> {
        let nibble = (raw >> ZPOINTER_REMAPPED_SHIFT) & 0xf;
        match self {
            ZShift::FromRemappedBit => nibble
                .is_power_of_two()
                .then(|| ZPOINTER_REMAPPED_SHIFT + 1 + nibble.trailing_zeros()),
            ZShift::Fixed16 => (nibble.count_ones() == 3).then_some(ZPOINTER_METADATA_BITS),
        }
    }
}

impl HeapOops {
    /// The object's address behind `raw`, an oop read from a slot of the given kind:
    /// `Some(0)` for null, `None` for a value that is not an oop of this encoding.
    /// `colored_slot` says whether the slot is one the collector colors (an OopStorage
    /// slot: a global or weak global handle, an OopHandle) rather than a JNI local handle.
    pub fn decode(self, raw: usize, colored_slot: bool) -> Option<usize> {
        let address = match self {
            HeapOops::Plain => raw,
            HeapOops::Unknown(_) => return None,
            HeapOops::ZMultiMapped { offset_bits } => {
                if raw == 0 {
                    return Some(0);
                }
                let offset_mask = (1usize << offset_bits) - 1;
                let metadata = raw >> offset_bits;
                // Only the four metadata bits above the offset, and one of the three views.
                if metadata > 0xf || metadata & 0b111 == 0 {
                    return None;
                }
                (raw & offset_mask) | (0b100 << offset_bits)
            }
            HeapOops::ZColored { offset_bits, shift } => {
                let address = if colored_slot {
                    if raw >> ZPOINTER_METADATA_BITS == 0 {
                        return Some(0);
                    }
                    raw >> shift.of(raw)?
                } else {
                    raw
                };
                if address == 0 {
                    return Some(0);
                }
                // Inside the heap's range: the base bit alone above the offset.
                if address >> offset_bits != 1 {
                    return None;
                }
                address
            }
        };
        address.is_multiple_of(8).then_some(address)
    }
}

static ENCODING: OnceLock<HeapOops> = OnceLock::new();

/// Publishes the encoding; the first call wins. Not signal-safe (called at a start).
pub fn publish(encoding: HeapOops) -> HeapOops {
    *ENCODING.get_or_init(|| encoding)
}

/// The published encoding, or `None` before `crate::hotspot::zgc::init` settled it.
pub fn published() -> Option<HeapOops> {
    ENCODING.get().copied()
}

/// The encoding oop reads use: the published one, else plain addresses (under a ZGC not
/// yet looked at, the reads' round trips then fail, as they should).
pub fn encoding() -> HeapOops {
    published().unwrap_or(HeapOops::Plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BITS: u32 = 42;
    const BASE: usize = 1 << BITS;

    const X86: HeapOops = HeapOops::ZColored {
        offset_bits: BITS,
        shift: ZShift::FromRemappedBit,
    };
    const ARM: HeapOops = HeapOops::ZColored {
        offset_bits: BITS,
        shift: ZShift::Fixed16,
    };

    /// A zpointer as x86_64's generational ZGC makes one: the address over 16 metadata
    /// bits, Remapped bit `i` set, plus some marked/remembered bits.
    fn color(address: usize, i: u32, low: usize) -> usize {
        (address << (13 + i)) | (1 << (ZPOINTER_REMAPPED_SHIFT + i)) | low
    }

    /// The same on aarch64: the address at 16, Remapped bit `i` the one clear.
    fn color_arm(address: usize, i: u32, low: usize) -> usize {
        (address << 16) | ((0xf ^ (1 << i)) << ZPOINTER_REMAPPED_SHIFT) | low
    }

    #[test]
    fn each_remapped_bit_gives_its_own_shift() {
        let a = (BASE + 0x1234_5678) & !7;
        for i in 0..4 {
            // The low bits under the Remapped nibble never change the answer.
            for low in [0, 0x30, 0x5f0, 0xff0] {
                assert_eq!(
                    X86.decode(color(a, i, low), true),
                    Some(a),
                    "bit {i} low {low:#x}"
                );
                assert_eq!(
                    ARM.decode(color_arm(a, i, low), true),
                    Some(a),
                    "bit {i} low {low:#x}"
                );
            }
        }
    }

    #[test]
    fn aarch64_zpointers_seen_on_a_jvm_decode() {
        // One object read raw across a GC (aarch64 JDK 21, docs/aarch64.md).
        for raw in [0x0400_004c_ccc8_e930usize, 0x0400_004c_ccc8_b530] {
            assert_eq!(ARM.decode(raw, true), Some(0x400_004c_ccc8));
            // The x86_64 layout refuses them rather than misread them.
            assert_eq!(X86.decode(raw, true), None);
        }
    }

    #[test]
    fn nibbles_the_layout_never_writes_are_not_a_pointer() {
        let a = BASE + 0x1000;
        let two = color(a, 1, 0) | (1 << ZPOINTER_REMAPPED_SHIFT);
        assert_eq!(X86.decode(two, true), None);
        // A stray word whose nibble happens to hold one bit still lands outside the heap.
        assert_eq!(X86.decode(0xffff_0000_0000 | 0x0000_1000, true), None);
        for nibble in [0x0, 0x1, 0x3, 0xf] {
            let raw = (a << 16) | (nibble << ZPOINTER_REMAPPED_SHIFT);
            assert_eq!(ARM.decode(raw, true), None, "nibble {nibble:#x}");
        }
    }

    #[test]
    fn layouts_are_told_by_the_vm_globals() {
        // x86_64: good mask with Remapped bit 2 (bit 14) and mark bits; the VM's shift 15.
        let good = (1 << 14) | 0x0500;
        assert_eq!(ZShift::of_globals(good, 15), Some(ZShift::FromRemappedBit));
        assert_eq!(ZShift::of_globals(good, 16), None);
        // aarch64: the good nibble with one bit clear, the fixed shift.
        let good = (0xb << 12) | 0x0500;
        assert_eq!(ZShift::of_globals(good, 16), Some(ZShift::Fixed16));
        assert_eq!(ZShift::of_globals(good, 15), None);
        // Two bits set: neither layout.
        assert_eq!(ZShift::of_globals((1 << 14) | (1 << 13), 15), None);
        assert_eq!(ZShift::of_globals((1 << 14) | (1 << 13), 16), None);
    }

    #[test]
    fn colored_and_raw_nulls_are_null() {
        for z in [X86, ARM] {
            assert_eq!(z.decode(0, true), Some(0));
            assert_eq!(z.decode(0x5ff0, true), Some(0));
            assert_eq!(z.decode(0xeff0, true), Some(0));
            assert_eq!(z.decode(0, false), Some(0));
        }
    }

    #[test]
    fn addresses_outside_the_heap_range_are_refused() {
        // Decoded with the wrong shift (an uncolored value in a colored slot) or a stray
        // word: the base bit is missing or another bit is above it.
        assert_eq!(X86.decode(color(0x1000, 0, 0), true), None);
        assert_eq!(X86.decode(color(BASE * 2 + 0x1000, 0, 0), true), None);
        assert_eq!(ARM.decode(color_arm(0x1000, 0, 0), true), None);
        for z in [X86, ARM] {
            // A local handle's plain address is checked the same way.
            assert_eq!(z.decode(BASE + 0x2000, false), Some(BASE + 0x2000));
            assert_eq!(z.decode(0x7f00_0000_1000, false), None);
        }
        // Unaligned.
        assert_eq!(X86.decode(color(BASE + 0x1004, 2, 0), true), None);
        assert_eq!(ARM.decode(color_arm(BASE + 0x1004, 2, 0), true), None);
    }

    #[test]
    fn multi_mapped_views_compare_equal() {
        let z = HeapOops::ZMultiMapped { offset_bits: BITS };
        let offset = 0x3_2000;
        let marked0 = offset | (1 << BITS);
        let marked1 = offset | (2 << BITS);
        let remapped = offset | (4 << BITS);
        let finalizable = marked0 | (8 << BITS);
        for v in [marked0, marked1, remapped, finalizable] {
            assert_eq!(z.decode(v, false), Some(remapped), "{v:#x}");
        }
        assert_eq!(z.decode(0, true), Some(0));
        assert_eq!(z.decode(offset, true), None, "no view bit");
        assert_eq!(
            z.decode(offset | (16 << BITS), true),
            None,
            "above the metadata"
        );
    }

    #[test]
    fn plain_and_unknown() {
        assert_eq!(
            HeapOops::Plain.decode(0x7f00_0000_1000, true),
            Some(0x7f00_0000_1000)
        );
        assert_eq!(HeapOops::Plain.decode(0x7f00_0000_1001, true), None);
        assert_eq!(HeapOops::Unknown("x").decode(0x7f00_0000_1000, true), None);
    }
}
