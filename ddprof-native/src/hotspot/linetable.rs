//! HotSpot's compressed line number table (docs/hotspot.md 5.2), read from a `ConstMethod` to turn a
//! bci into a source line at dump time.
//!
//! The table follows the bytecodes: it starts at `const_method + sizeof(ConstMethod) +
//! code_size` and exists only when the `ConstMethod` flags have the `_has_linenumber_table`
//! bit (VMStructs `ConstMethod::_has_linenumber_table` / `ConstMethodFlags::_misc_has_linenumber_table`);
//! the caller checks the flag and computes the address. Starting from bci 0, line 0, each entry
//! is one byte `bci_delta << 3 | line_delta` (deltas below 32 and 8), or the escape byte 0xFF
//! followed by two signed compressed values (bci delta, line delta; see
//! [`CompressedStream::read_signed_int`]). A zero byte ends the table.

use crate::sample::vm::debuginfo::{CompressedStream, Encoding, Memory};

/// One `(start bci, line)` pair, as JVMTI `GetLineNumberTable` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineEntry {
    pub bci: i32,
    pub line: i32,
}

/// Most entries read from one table; a guard against a table whose terminator is missing.
/// (A class file's line number tables hold at most 65535 entries per attribute.)
pub const MAX_LINE_ENTRIES: usize = 1 << 18;

const ESCAPE: u8 = 0xFF;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Reading,
    Ended,
    Failed,
}

/// Iterates the `(bci, line)` pairs of a compressed line number table. Signal-safe (no
/// allocation; at most [`MAX_LINE_ENTRIES`] entries).
pub struct LineNumbers<'m, M: Memory> {
    stream: CompressedStream<'m, M>,
    bci: i32,
    line: i32,
    entries: usize,
    state: State,
}

impl<'m, M: Memory> LineNumbers<'m, M> {
    /// A reader of the table at `table_addr`, written in `encoding` (that of the VM's JDK
    /// version: [`Encoding::for_feature_version`]). Signal-safe.
    pub fn new(mem: &'m M, table_addr: usize, encoding: Encoding) -> Self {
        LineNumbers {
            stream: CompressedStream::new(mem, table_addr, 0, usize::MAX, encoding),
            bci: 0,
            line: 0,
            entries: 0,
            state: State::Reading,
        }
    }

    /// True once the iterator has reached the table's terminating zero byte; false while it has
    /// not, or when it stopped on unreadable memory or at [`MAX_LINE_ENTRIES`]. Signal-safe.
    pub fn ended_cleanly(&self) -> bool {
        self.state == State::Ended
    }

    fn read_entry(&mut self) -> Option<Option<LineEntry>> {
        let byte = self.stream.read_byte()?;
        if byte == 0 {
            return Some(None);
        }
        if byte == ESCAPE {
            let bci_delta = self.stream.read_signed_int()?;
            let line_delta = self.stream.read_signed_int()?;
            self.bci = self.bci.wrapping_add(bci_delta);
            self.line = self.line.wrapping_add(line_delta);
        } else {
            self.bci = self.bci.wrapping_add(i32::from(byte >> 3));
            self.line = self.line.wrapping_add(i32::from(byte & 7));
        }
        Some(Some(LineEntry {
            bci: self.bci,
            line: self.line,
        }))
    }
}

impl<M: Memory> Iterator for LineNumbers<'_, M> {
    type Item = LineEntry;

    /// Signal-safe.
    fn next(&mut self) -> Option<LineEntry> {
        if self.state != State::Reading {
            return None;
        }
        if self.entries >= MAX_LINE_ENTRIES {
            self.state = State::Failed;
            return None;
        }
        match self.read_entry() {
            Some(Some(entry)) => {
                self.entries = self.entries.wrapping_add(1);
                Some(entry)
            }
            Some(None) => {
                self.state = State::Ended;
                None
            }
            None => {
                self.state = State::Failed;
                None
            }
        }
    }
}

/// The source line of `bci`, as HotSpot's `Method::line_number_from_bci` computes it (the
/// answer JFR and stack traces give): the line of the first entry starting exactly at `bci`,
/// otherwise of the entry with the largest start bci below it (the later one of equals).
/// `bci == -1` (`SynchronizationEntryBCI`, method entry) counts as bci 0. `None` when no entry
/// starts at or below `bci`, for other negative bcis, and when the table is unreadable or
/// unterminated. HotSpot also answers `None` for `bci >= code_size`; callers that know the code
/// size check that themselves. Signal-safe.
pub fn line_for_bci<M: Memory>(
    mem: &M,
    table_addr: usize,
    encoding: Encoding,
    bci: i32,
) -> Option<i32> {
    let bci = if bci == -1 { 0 } else { bci };
    if bci < 0 {
        return None;
    }
    let mut best: Option<LineEntry> = None;
    let mut entries = LineNumbers::new(mem, table_addr, encoding);
    for entry in entries.by_ref() {
        if entry.bci == bci {
            return Some(entry.line);
        }
        if entry.bci < bci && best.is_none_or(|b| entry.bci >= b.bci) {
            best = Some(entry);
        }
    }
    if !entries.ended_cleanly() {
        return None;
    }
    best.map(|b| b.line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::vm::debuginfo::{fixture, Bytes};

    fn decode(bytes: &[u8], encoding: Encoding) -> (Vec<(i32, i32)>, bool) {
        let mem = Bytes {
            base: 0x2000,
            data: bytes,
        };
        let mut it = LineNumbers::new(&mem, 0x2000, encoding);
        let entries = it.by_ref().map(|e| (e.bci, e.line)).collect();
        (entries, it.ended_cleanly())
    }

    fn line(bytes: &[u8], encoding: Encoding, bci: i32) -> Option<i32> {
        let mem = Bytes {
            base: 0x2000,
            data: bytes,
        };
        line_for_bci(&mem, 0x2000, encoding, bci)
    }

    #[test]
    fn compact_entries_add_five_bit_bci_and_three_bit_line_deltas() {
        // 0x0b = bci +1, line +3; 0x10 = bci +2, line +0; 0xfe = bci +31, line +6.
        for encoding in [Encoding::Classic, Encoding::ZeroFree] {
            let (entries, clean) = decode(&[0x0b, 0x10, 0xfe, 0x00], encoding);
            assert_eq!(entries, vec![(1, 3), (3, 3), (34, 9)]);
            assert!(clean);
        }
    }

    /// DbgRec.lines(I)I as javac compiled it (line 24 first, a gap of nine lines, 47 bytes of
    /// bytecode on line 34, a loop increment back on line 35), in both encodings.
    const LINES_17: [u8; 16] = [
        0xff, 0x00, 0x30, // escape: bci +0, line +24 (zig-zag 48)
        0x11, // bci +2, line +1
        0xff, 0x08, 0x12, // escape: bci +4, line +9
        0xff, 0x5e, 0x02, // escape: bci +47, line +1
        0x39, // bci +7, line +1
        0xff, 0x08, 0x01, // escape: bci +4, line -1
        0x33, // bci +6, line +3
        0x00,
    ];
    const LINES_25: [u8; 16] = [
        0xff, 0x01, 0x31, 0x11, 0xff, 0x09, 0x13, 0xff, 0x5f, 0x03, 0x39, 0xff, 0x09, 0x02, 0x33,
        0x00,
    ];
    const LINES: [(i32, i32); 7] = [
        (0, 24),
        (2, 25),
        (6, 34),
        (53, 35),
        (60, 36),
        (64, 35),
        (70, 38),
    ];

    #[test]
    fn escaped_entries_carry_large_and_negative_deltas() {
        assert_eq!(decode(&LINES_17, Encoding::Classic), (LINES.to_vec(), true));
        assert_eq!(
            decode(&LINES_25, Encoding::ZeroFree),
            (LINES.to_vec(), true)
        );
        // A two-byte value: line 626 is zig-zag 1252 (0xe4 0x10 classic, 0xe5 0x11 zero-free).
        assert_eq!(
            decode(&[0xff, 0x00, 0xe4, 0x10, 0x00], Encoding::Classic).0,
            vec![(0, 626)]
        );
        assert_eq!(
            decode(&[0xff, 0x01, 0xe5, 0x11, 0x00], Encoding::ZeroFree).0,
            vec![(0, 626)]
        );
    }

    #[test]
    fn table_ends_at_the_terminator() {
        let mut bytes = LINES_17.to_vec();
        bytes.extend([0x11, 0x22, 0xff]);
        assert_eq!(decode(&bytes, Encoding::Classic), (LINES.to_vec(), true));
        assert_eq!(decode(&[0x00, 0x11], Encoding::Classic), (vec![], true));
    }

    #[test]
    fn unterminated_or_unreadable_tables_fail() {
        // Runs off the readable bytes without a terminator, also inside an escape.
        assert_eq!(
            decode(&[0x11, 0x11], Encoding::Classic),
            (vec![(2, 1), (4, 2)], false)
        );
        assert_eq!(
            decode(&[0x11, 0xff, 0x02], Encoding::Classic),
            (vec![(2, 1)], false)
        );
        assert_eq!(line(&[0x11, 0x11], Encoding::Classic, 3), None);
        // Exact hits before the damage still answer, as in HotSpot.
        assert_eq!(line(&[0x11, 0x11], Encoding::Classic, 2), Some(1));
    }

    #[test]
    fn endless_tables_stop_at_the_entry_limit() {
        struct Endless;
        impl Memory for Endless {
            fn read_u8(&self, _: usize) -> Option<u8> {
                Some(0x08)
            }
            fn read_u32(&self, _: usize) -> Option<u32> {
                None
            }
            fn read_usize(&self, _: usize) -> Option<usize> {
                None
            }
        }
        let mut it = LineNumbers::new(&Endless, 0, Encoding::Classic);
        assert_eq!(it.by_ref().count(), MAX_LINE_ENTRIES);
        assert!(!it.ended_cleanly());
        assert_eq!(line_for_bci(&Endless, 0, Encoding::Classic, -5), None);
        assert_eq!(line_for_bci(&Endless, 0, Encoding::Classic, i32::MAX), None);
    }

    #[test]
    fn line_for_bci_prefers_exact_then_the_nearest_lower_start() {
        for bci in 0..80 {
            let want = LINES.iter().rev().find(|(b, _)| *b <= bci).map(|(_, l)| *l);
            assert_eq!(line(&LINES_17, Encoding::Classic, bci), want, "bci {bci}");
            assert_eq!(line(&LINES_25, Encoding::ZeroFree, bci), want, "bci {bci}");
        }
        // Method entry (-1) is bci 0; other negative bcis have no line.
        assert_eq!(line(&LINES_17, Encoding::Classic, -1), Some(24));
        assert_eq!(line(&LINES_17, Encoding::Classic, -3), None);
    }

    #[test]
    fn line_for_bci_follows_hotspot_with_duplicate_and_unsorted_entries() {
        // (2,3) (5,5) (5,6) (4,7): a duplicate start and one out of order (bci -1 escaped).
        let bytes = [0x13, 0x1a, 0x01, 0xff, 0x01, 0x02, 0x00];
        assert_eq!(
            decode(&bytes, Encoding::Classic).0,
            vec![(2, 3), (5, 5), (5, 6), (4, 7)]
        );
        let at = |bci| line(&bytes, Encoding::Classic, bci);
        assert_eq!(at(5), Some(5)); // the first exact entry
        assert_eq!(at(7), Some(6)); // the last of the largest starts below
        assert_eq!(at(4), Some(7)); // exact, though out of order
        assert_eq!(at(3), Some(3));
        assert_eq!(at(1), None); // before the first start
        assert_eq!(at(-1), None); // method entry is bci 0, which no entry covers
    }

    #[test]
    fn recorded_line_tables_match_jvmti() {
        let mut tables = 0;
        let mut escapes = 0;
        for r in fixture::all() {
            let encoding = Encoding::for_feature_version(r.feature_version);
            for t in &r.line_tables {
                // The fixture holds 8 bytes past the terminator; the decoder must not need them.
                let end = t.table.bytes.len() - 8;
                let mem = Bytes {
                    base: t.table.addr,
                    data: &t.table.bytes[..end],
                };
                let mut it = LineNumbers::new(&mem, t.table.addr, encoding);
                let got: Vec<(i32, i32)> = it.by_ref().map(|e| (e.bci, e.line)).collect();
                assert_eq!(got, t.jvmti, "{} {}", r.name, t.method);
                assert!(it.ended_cleanly(), "{} {}", r.name, t.method);
                escapes += t.table.bytes[..end].iter().filter(|&&b| b == 0xff).count();
                for bci in -1..t.code_size {
                    let want = t
                        .jvmti
                        .iter()
                        .rev()
                        .find(|(b, _)| *b <= bci.max(0))
                        .map(|(_, l)| *l);
                    let got = line_for_bci(&mem, t.table.addr, encoding, bci);
                    assert_eq!(got, want, "{} {} bci {bci}", r.name, t.method);
                }
                tables += 1;
            }
        }
        // DbgRec.lines on 11, 17, 21, 25; HashMap.putVal on 17 and 25 (the 11 and 21 runtimes
        // were built without JDK debug info).
        assert_eq!(tables, 6);
        assert!(escapes >= 20, "{escapes}");
    }
}
