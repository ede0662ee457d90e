use std::collections::HashMap;

use super::*;

/// Sparse memory: 8-byte words by address (u32 reads take the low half of their word).
#[derive(Default)]
struct Words(HashMap<usize, usize>);

impl Words {
    fn set(&mut self, addr: usize, v: usize) -> &mut Self {
        self.0.insert(addr, v);
        self
    }
}

impl Loads for Words {
    fn usize_at(&self, addr: usize) -> Option<usize> {
        self.0.get(&addr).copied()
    }
    fn u32_at(&self, addr: usize) -> Option<u32> {
        self.0.get(&addr).map(|&v| v as u32)
    }
}

const BASE: usize = 0x8_0000_0000;
const SHIFT: u32 = 3;
const KLASS: usize = BASE + (0x4_0210 << SHIFT);
const OBJ: usize = 0x7f00_1000;
const MIRROR: usize = 0x7f00_9000;
const HANDLE: usize = 0x7e00_0040;

fn layout(klass: KlassIn) -> ReceiverLayout {
    ReceiverLayout {
        klass,
        java_mirror: 112,
        mirror_klass_offset: 16,
    }
}

/// A class whose mirror leads back to it.
fn with_class(mem: &mut Words) {
    mem.set(KLASS + 112, HANDLE)
        .set(HANDLE, MIRROR)
        .set(MIRROR + 16, KLASS);
}

fn compact(monitor_header: Option<usize>, fast: bool) -> KlassIn {
    KlassIn::Mark {
        mark_shift: 42,
        base: BASE,
        shift: SHIFT,
        monitor_header,
        fast_locked_keeps_klass: fast,
    }
}

#[test]
fn compressed_class_pointer_is_decoded_and_proved() {
    let mut mem = Words::default();
    with_class(&mut mem);
    mem.set(OBJ, 0x1).set(OBJ + 8, 0x4_0210);
    let l = layout(KlassIn::Narrow {
        offset: 8,
        base: BASE,
        shift: SHIFT,
    });
    let r = read_receiver(&l, OBJ, &mem).unwrap();
    assert_eq!(r.klass, KLASS);
    // A stray narrow value decodes to something that is not a class.
    mem.set(OBJ + 8, 0x4_0218);
    assert_eq!(read_receiver(&l, OBJ, &mem), None);
    // Null, unaligned and low receivers are not read.
    assert_eq!(read_receiver(&l, 0, &mem), None);
    assert_eq!(read_receiver(&l, OBJ + 4, &mem), None);
    assert_eq!(read_receiver(&l, 8, &mem), None);
}

#[test]
fn wide_klass_pointer() {
    let mut mem = Words::default();
    with_class(&mut mem);
    mem.set(OBJ + 8, KLASS);
    let l = layout(KlassIn::Wide { offset: 8 });
    assert_eq!(read_receiver(&l, OBJ, &mem).map(|r| r.klass), Some(KLASS));
}

#[test]
fn compact_header_takes_the_klass_from_the_mark() {
    let mut mem = Words::default();
    with_class(&mut mem);
    let mark = (0x4_0210usize << 42) | (0x1234 << 8) | UNLOCKED;
    mem.set(OBJ, mark);
    let l = layout(compact(Some(0), true));
    assert_eq!(read_receiver(&l, OBJ, &mem).map(|r| r.klass), Some(KLASS));
    // Fast-locked (lightweight): the klass bits stay.
    mem.set(OBJ, mark & !LOCK_MASK);
    assert_eq!(read_receiver(&l, OBJ, &mem).map(|r| r.klass), Some(KLASS));
    // Under legacy stack locking the mark points into a stack: refused.
    let legacy = layout(compact(Some(0), false));
    assert_eq!(read_receiver(&legacy, OBJ, &mem), None);
    // Marked by the GC (forwarding): refused.
    mem.set(OBJ, mark | 0b11);
    assert_eq!(read_receiver(&l, OBJ, &mem), None);
}

#[test]
fn compact_header_follows_an_inflated_monitor() {
    let mut mem = Words::default();
    with_class(&mut mem);
    let displaced = (0x4_0210usize << 42) | UNLOCKED;
    let monitor = 0x7d00_0100;
    mem.set(OBJ, monitor | MONITOR).set(monitor, displaced);
    let l = layout(compact(Some(0), true));
    assert_eq!(read_receiver(&l, OBJ, &mem).map(|r| r.klass), Some(KLASS));
    // A monitor whose saved mark is not neutral (being deflated, reused): refused.
    mem.set(monitor, displaced & !1);
    assert_eq!(read_receiver(&l, OBJ, &mem), None);
    // A freed monitor: unreadable.
    mem.0.remove(&monitor);
    assert_eq!(read_receiver(&l, OBJ, &mem), None);
    // With a monitor table, an inflated mark keeps its klass bits.
    mem.set(OBJ, displaced & !LOCK_MASK | MONITOR);
    let table = layout(compact(None, true));
    assert_eq!(
        read_receiver(&table, OBJ, &mem).map(|r| r.klass),
        Some(KLASS)
    );
}
