use super::*;

/// HotSpot's writer (`UNSIGNED5::write_uint` / the pre-20 `write_int_mb`), for round trips.
pub(crate) fn encode(value: u32, encoding: Encoding, out: &mut Vec<u8>) {
    let x = encoding.excluded();
    let low = 256 - x - 64; // L: 192 (classic) or 191 (zero-free)
    let mut sum = value;
    for i in 0..5 {
        if sum < low || i == 4 {
            out.push((x + sum) as u8);
            return;
        }
        sum -= low;
        out.push((x + low + (sum % 64)) as u8);
        sum >>= 6;
    }
}

pub(crate) fn encode_sign(value: i32) -> u32 {
    ((value << 1) ^ (value >> 31)) as u32
}

fn read_all(bytes: &[u8], encoding: Encoding) -> Vec<u32> {
    let mem = Bytes {
        base: 0x1000,
        data: bytes,
    };
    let mut s = CompressedStream::new(&mem, 0x1000, 0, bytes.len(), encoding);
    let mut values = vec![];
    while s.position() < bytes.len() {
        values.push(s.read_int().expect("value"));
    }
    values
}

#[test]
fn classic_encoding_reads_hand_computed_bytes() {
    let cases: &[(u32, &[u8])] = &[
        (0, &[0x00]),
        (1, &[0x01]),
        (191, &[0xbf]),
        (192, &[0xc0, 0x00]),
        (193, &[0xc1, 0x00]),
        (255, &[0xff, 0x00]),
        (256, &[0xc0, 0x01]),
        (1252, &[0xe4, 0x10]), // HashMap.putVal's first line (626) zig-zagged, from JDK 17
        (12479, &[0xff, 0xbf]),
        (12480, &[0xc0, 0xc0, 0x00]),
        (u32::MAX, &[0xff, 0xfc, 0xfc, 0xfc, 0xfc]),
    ];
    for &(value, bytes) in cases {
        assert_eq!(read_all(bytes, Encoding::Classic), vec![value], "{value}");
        let mut written = vec![];
        encode(value, Encoding::Classic, &mut written);
        assert_eq!(written, bytes, "{value}");
    }
}

#[test]
fn zero_free_encoding_reads_hand_computed_bytes() {
    let cases: &[(u32, &[u8])] = &[
        (0, &[0x01]),
        (1, &[0x02]),
        (190, &[0xbf]),
        (191, &[0xc0, 0x01]),
        (192, &[0xc1, 0x01]),
        (255, &[0xc0, 0x02]),
        (1270, &[0xf7, 0x11]), // HashMap.putVal's first line (635) zig-zagged, from JDK 25
        (12_479, &[0xc0, 0xc1, 0x01]),
        (u32::MAX, &[0xc0, 0xfe, 0xfd, 0xfd, 0xfd]),
    ];
    for &(value, bytes) in cases {
        assert_eq!(read_all(bytes, Encoding::ZeroFree), vec![value], "{value}");
        let mut written = vec![];
        encode(value, Encoding::ZeroFree, &mut written);
        assert_eq!(written, bytes, "{value}");
    }
}

#[test]
fn both_encodings_round_trip_boundaries_and_large_values() {
    let mut values = vec![0, 1, 63, 64, 190, 191, 192, 193, 255, 256, 4095, 4096];
    values.extend([12_478, 12_479, 12_480, 12_481, 798_911, 798_912, 798_913]);
    values.extend([
        1 << 24,
        51_130_559,
        51_130_560,
        i32::MAX as u32,
        u32::MAX - 1,
    ]);
    values.push(u32::MAX);
    values.extend((0..2000).map(|i: u32| i.wrapping_mul(2_654_435_761)));
    for encoding in [Encoding::Classic, Encoding::ZeroFree] {
        let mut bytes = vec![];
        for &v in &values {
            encode(v, encoding, &mut bytes);
        }
        assert_eq!(read_all(&bytes, encoding), values, "{encoding:?}");
        if encoding == Encoding::ZeroFree {
            assert!(
                !bytes.contains(&0),
                "the JDK 20+ encoding never writes a zero byte"
            );
        }
    }
}

#[test]
fn encodings_differ_only_by_one_per_byte() {
    // The same value in both encodings has the same length; JDK 20+ bytes are the classic
    // digits plus one, except that its low-byte range is one smaller.
    for v in [0u32, 100, 190] {
        let (mut c, mut z) = (vec![], vec![]);
        encode(v, Encoding::Classic, &mut c);
        encode(v, Encoding::ZeroFree, &mut z);
        assert_eq!(z, c.iter().map(|b| b + 1).collect::<Vec<_>>());
    }
    // Reading JDK 17 bytes as JDK 25 bytes gives the wrong numbers: the caller must pick.
    assert_eq!(read_all(&[0x00], Encoding::ZeroFree), vec![u32::MAX]);
}

#[test]
fn signed_values_use_hotspots_zig_zag() {
    let cases = [
        (0, 0u32),
        (-1, 1),
        (1, 2),
        (-2, 3),
        (2, 4),
        (-96, 191),
        (i32::MAX, 0xffff_fffe),
        (i32::MIN, u32::MAX),
    ];
    for (signed, unsigned) in cases {
        assert_eq!(encode_sign(signed), unsigned);
        assert_eq!(decode_sign(unsigned), signed);
        for encoding in [Encoding::Classic, Encoding::ZeroFree] {
            let mut bytes = vec![];
            encode(unsigned, encoding, &mut bytes);
            let mem = Bytes {
                base: 64,
                data: &bytes,
            };
            let mut s = CompressedStream::new(&mem, 64, 0, usize::MAX, encoding);
            assert_eq!(s.read_signed_int(), Some(signed));
        }
    }
}

#[test]
fn fifth_byte_ends_a_value_even_when_high() {
    let bytes = [0xff, 0xff, 0xff, 0xff, 0xff, 0x07];
    let mem = Bytes {
        base: 0,
        data: &bytes,
    };
    let mut s = CompressedStream::new(&mem, 0, 0, usize::MAX, Encoding::Classic);
    s.read_int().unwrap();
    assert_eq!(s.position(), 5);
    assert_eq!(s.read_int(), Some(7));
}

#[test]
fn stream_stops_at_its_limit_and_at_unreadable_memory() {
    let bytes = [0xc0, 0xc0, 0x05];
    let mem = Bytes {
        base: 0,
        data: &bytes,
    };
    // A value cut by the limit is no value.
    let mut s = CompressedStream::new(&mem, 0, 0, 2, Encoding::Classic);
    assert_eq!(s.read_int(), None);
    // Running off the readable memory likewise.
    let mut s = CompressedStream::new(&mem, 0, 1, usize::MAX, Encoding::Classic);
    assert_eq!(s.read_int(), Some(192 + (5 << 6)));
    assert_eq!(s.read_int(), None);
    assert_eq!(s.read_byte(), None);
    // Addresses near the top of the address space wrap instead of panicking.
    let mut s = CompressedStream::new(&mem, usize::MAX, 5, usize::MAX, Encoding::Classic);
    assert_eq!(s.read_int(), None);
}

/// Bytes that count their reads by width (PcDesc entries are read as u32s, compressed
/// streams by the byte or the word).
struct Counting<'a> {
    mem: Bytes<'a>,
    bytes: core::cell::Cell<u32>,
    u32s: core::cell::Cell<u32>,
    words: core::cell::Cell<u32>,
}
impl<'a> Counting<'a> {
    fn new(mem: Bytes<'a>) -> Self {
        Counting {
            mem,
            bytes: Default::default(),
            u32s: Default::default(),
            words: Default::default(),
        }
    }
}
impl Memory for Counting<'_> {
    fn read_u8(&self, a: usize) -> Option<u8> {
        self.bytes.set(self.bytes.get() + 1);
        self.mem.read_u8(a)
    }
    fn read_u32(&self, a: usize) -> Option<u32> {
        self.u32s.set(self.u32s.get() + 1);
        self.mem.read_u32(a)
    }
    fn read_usize(&self, a: usize) -> Option<usize> {
        self.words.set(self.words.get() + 1);
        self.mem.read_usize(a)
    }
}

#[test]
fn stream_reads_a_word_at_a_time_at_any_alignment() {
    let values = [0u32, 1, 191, 192, 300, 12_345, 1 << 20, u32::MAX, 7, 64];
    for encoding in [Encoding::Classic, Encoding::ZeroFree] {
        let mut bytes = vec![];
        for &v in &values {
            encode(v, encoding, &mut bytes);
        }
        for shift in 0..8 {
            // The stream's bytes start `shift` bytes into an aligned region that holds them whole.
            let mut region = vec![0xeeu8; shift];
            region.extend_from_slice(&bytes);
            region.resize(region.len().next_multiple_of(8), 0xee);
            let mem = Counting::new(Bytes {
                base: 0x1000,
                data: &region,
            });
            let mut s = CompressedStream::new(&mem, 0x1000 + shift, 0, bytes.len(), encoding);
            let read: Vec<u32> = values
                .iter()
                .map(|_| s.read_int().expect("value"))
                .collect();
            assert_eq!(read, values, "{encoding:?} at +{shift}");
            assert_eq!(s.read_int(), None, "past the limit");
            let (single, words) = (mem.bytes.get(), mem.words.get());
            assert_eq!(single, 0, "every byte came from a word");
            assert!(words as usize <= region.len() / 8, "{words} word loads");
        }
        // Where the word around a byte is not all readable, the byte is still read alone.
        assert_eq!(
            read_all(&bytes, encoding),
            values,
            "{encoding:?} unaligned end"
        );
    }
}

const LAYOUT: PcDescLayout = PcDescLayout {
    size: 16,
    pc_offset: 0,
    scope_decode_offset: 4,
};

/// A PcDesc table laid out as HotSpot does: sentinel at -1, entries, sentinel past the code.
fn pcs(entries: &[(i32, i32)]) -> Vec<u8> {
    let mut v = vec![];
    for &(pc, scope) in entries {
        for word in [pc, scope, 0, 0] {
            v.extend(word.to_le_bytes());
        }
    }
    v
}

fn find(bytes: &[u8], pc_offset: usize) -> Option<(i32, i32)> {
    let mem = Bytes {
        base: 0x4000,
        data: bytes,
    };
    find_pc_desc(&mem, &LAYOUT, 0x4000, 0x4000 + bytes.len(), pc_offset)
        .map(|pd| (pd.pc_offset, pd.scope_decode_offset))
}

const TABLE: [(i32, i32); 6] = [(-1, 0), (12, 1), (18, 19), (27, 31), (40, 37), (249, 0)];

#[test]
fn pc_desc_exact_hit_is_that_entry() {
    let bytes = pcs(&TABLE);
    assert_eq!(find(&bytes, 12), Some((12, 1)));
    assert_eq!(find(&bytes, 18), Some((18, 19)));
    assert_eq!(find(&bytes, 40), Some((40, 37)));
    let mem = Bytes {
        base: 0x4000,
        data: &bytes,
    };
    let pd = find_pc_desc(&mem, &LAYOUT, 0x4000, 0x4000 + bytes.len(), 27).unwrap();
    assert_eq!(pd.addr, 0x4000 + 3 * 16);
}

#[test]
fn pc_desc_between_entries_is_the_next_entry() {
    let bytes = pcs(&TABLE);
    assert_eq!(find(&bytes, 13), Some((18, 19)));
    assert_eq!(find(&bytes, 26), Some((27, 31)));
    // AsyncGetCallTrace's rule for the top frame: ask for pc + 1.
    assert_eq!(find(&bytes, 18 + 1), Some((27, 31)));
}

#[test]
fn pc_desc_before_first_entry_skips_the_leading_sentinel() {
    let bytes = pcs(&TABLE);
    assert_eq!(find(&bytes, 0), Some((12, 1)));
    assert_eq!(find(&bytes, 11), Some((12, 1)));
    // A pc below code begin wraps to a huge offset: nothing, as in HotSpot.
    assert_eq!(find(&bytes, 5usize.wrapping_sub(9)), None);
    assert_eq!(find(&bytes, i32::MAX as usize + 1), None);
}

#[test]
fn pc_desc_after_last_entry_is_the_final_sentinel_or_nothing() {
    let bytes = pcs(&TABLE);
    // Between the last real entry and the end of the code: the sentinel, without scope.
    assert_eq!(find(&bytes, 41), Some((249, 0)));
    assert_eq!(find(&bytes, 249), Some((249, 0)));
    assert_eq!(find(&bytes, 250), None);
    // A table without a final sentinel has nothing past its last entry.
    let bytes = pcs(&TABLE[..5]);
    assert_eq!(find(&bytes, 41), None);
}

#[test]
fn pc_desc_in_empty_or_malformed_tables_is_none() {
    assert_eq!(find(&[], 0), None);
    let bytes = pcs(&TABLE);
    let mem = Bytes {
        base: 0x4000,
        data: &bytes,
    };
    // end before begin
    assert_eq!(find_pc_desc(&mem, &LAYOUT, 0x4010, 0x4000, 12), None);
    // implausible layouts
    for layout in [
        PcDescLayout { size: 0, ..LAYOUT },
        PcDescLayout {
            scope_decode_offset: 14,
            ..LAYOUT
        },
    ] {
        assert_eq!(
            find_pc_desc(&mem, &layout, 0x4000, 0x4000 + bytes.len(), 12),
            None
        );
    }
    // a huge table is corrupt, not searched
    assert_eq!(find_pc_desc(&mem, &LAYOUT, 0, usize::MAX, 12), None);
    // unreadable entries
    assert_eq!(
        find_pc_desc(&mem, &LAYOUT, 0x4000, 0x4000 + 2 * bytes.len(), 300),
        None
    );
    // a trailing partial entry (here the cut final sentinel) is ignored
    let cut = 0x4000 + bytes.len() - 4;
    assert_eq!(
        find_pc_desc(&mem, &LAYOUT, 0x4000, cut, 40),
        Some(PcDesc {
            addr: 0x4000 + 4 * 16,
            pc_offset: 40,
            scope_decode_offset: 37
        })
    );
    assert_eq!(find_pc_desc(&mem, &LAYOUT, 0x4000, cut, 41), None);
}

#[test]
fn pc_desc_field_offsets_come_from_the_layout() {
    // A 12-byte entry with the scope offset first and the pc second.
    let layout = PcDescLayout {
        size: 12,
        pc_offset: 4,
        scope_decode_offset: 0,
    };
    let mut bytes = vec![];
    for (pc, scope) in [(-1i32, 0i32), (8, 3), (20, 9)] {
        bytes.extend(scope.to_le_bytes());
        bytes.extend(pc.to_le_bytes());
        bytes.extend(0i32.to_le_bytes());
    }
    let mem = Bytes {
        base: 0,
        data: &bytes,
    };
    let pd = find_pc_desc(&mem, &layout, 0, bytes.len(), 9).unwrap();
    assert_eq!((pd.pc_offset, pd.scope_decode_offset, pd.addr), (20, 9, 24));
}

#[test]
fn pc_desc_search_is_logarithmic_over_large_tables() {
    let entries: Vec<(i32, i32)> = (0..100_000).map(|i| (i * 4, i + 1)).collect();
    let bytes = pcs(&entries);
    let mem = Counting::new(Bytes {
        base: 0,
        data: &bytes,
    });
    for target in [0usize, 1, 4, 123_457, 399_996] {
        mem.u32s.set(0);
        let pd = find_pc_desc(&mem, &LAYOUT, 0, bytes.len(), target).unwrap();
        assert_eq!(pd.pc_offset as usize, target.div_ceil(4) * 4);
        assert!(mem.u32s.get() <= 20, "{} reads", mem.u32s.get());
    }
}

#[test]
fn a_checked_pc_desc_is_the_one_the_search_finds() {
    let bytes = pcs(&TABLE);
    let base = 0x4000;
    let mem = Bytes { base, data: &bytes };
    let end = base + bytes.len();
    for target in 0..260usize {
        let found = find_pc_desc(&mem, &LAYOUT, base, end, target);
        for i in 0..TABLE.len() + 1 {
            let addr = base + i * LAYOUT.size;
            let checked = check_pc_desc(&mem, &LAYOUT, base, end, target, addr);
            if found.is_some_and(|f| f.addr == addr) {
                assert_eq!(checked, found, "target {target}");
            } else {
                assert_eq!(checked, None, "target {target}, entry {i}");
            }
        }
        // Misaligned, outside and below-the-table addresses are refused.
        for addr in [base + 3, base - LAYOUT.size, end, 0] {
            assert_eq!(check_pc_desc(&mem, &LAYOUT, base, end, target, addr), None);
        }
    }
}

#[test]
fn the_pc_desc_cache_is_a_validated_hint() {
    let entries: Vec<(i32, i32)> = (0..1000).map(|i| (i * 4, i + 1)).collect();
    let (a, b) = (pcs(&entries), pcs(&entries[..500]));
    let info = |bytes: &[u8]| NmethodDebugInfo {
        pcs_begin: 0x10000,
        pcs_end: 0x10000 + bytes.len(),
        scopes: NmethodScopes {
            data: 0,
            data_len: 0,
            metadata: 0,
            metadata_len: 0,
        },
    };
    let cache = PcDescCache::new();
    let code = 0x7000_0000;
    let mem = Counting::new(Bytes {
        base: 0x10000,
        data: &a,
    });
    let first = cache.find(&mem, &LAYOUT, &info(&a), code, 2001).unwrap();
    assert_eq!(first.pc_offset, 2004);
    let searched = mem.u32s.replace(0);
    let again = cache.find(&mem, &LAYOUT, &info(&a), code, 2001).unwrap();
    assert_eq!(again, first);
    assert!(
        mem.u32s.get() <= 3 && searched > 3,
        "{searched} then {}",
        mem.u32s.get()
    );
    // Another nmethod at the same code address (the old one was freed): its shorter
    // table does not hold the remembered entry, and a fresh search answers.
    let mem = Bytes {
        base: 0x10000,
        data: &b,
    };
    let fresh = find_pc_desc(&mem, &LAYOUT, 0x10000, 0x10000 + b.len(), 2001);
    assert_eq!(fresh, None);
    assert_eq!(cache.find(&mem, &LAYOUT, &info(&b), code, 2001), fresh);
    assert_eq!(
        cache.find(&mem, &LAYOUT, &info(&b), code, 1001),
        find_pc_desc(&mem, &LAYOUT, 0x10000, 0x10000 + b.len(), 1001)
    );
    // Same table, other pc offsets at the same entry address: refused, searched.
    let shifted: Vec<(i32, i32)> = entries.iter().map(|&(pc, s)| (pc + 2, s)).collect();
    let c = pcs(&shifted);
    let mem = Bytes {
        base: 0x10000,
        data: &c,
    };
    let got = cache.find(&mem, &LAYOUT, &info(&c), code, 2001).unwrap();
    assert_eq!((got.pc_offset, got.addr), (2002, first.addr - LAYOUT.size));
    let got = cache.find(&mem, &LAYOUT, &info(&c), code, 2003).unwrap();
    assert_eq!(got.pc_offset, 2006);
}

const FORMAT_17: ScopeFormat = ScopeFormat {
    encoding: Encoding::Classic,
    invocation_entry_bci: -1,
};

/// Serializes scopes as HotSpot's DebugInformationRecorder does: a reserved first byte (so
/// no scope sits at offset 0), then each scope after its caller. `chain` is outermost
/// first: (method index, bci). Returns the bytes and each scope's decode offset.
fn serialize(chain: &[(u32, i32)], encoding: Encoding) -> (Vec<u8>, Vec<u32>) {
    let mut bytes = vec![0xff];
    let mut offsets = vec![];
    let mut sender = 0;
    for &(method, bci) in chain {
        let offset = bytes.len() as u32;
        // sender, method, bci + 1, locals, expressions, monitors
        for v in [sender, method, (bci + 1) as u32, 0, 0, 0] {
            encode(v, encoding, &mut bytes);
        }
        offsets.push(offset);
        sender = offset;
    }
    (bytes, offsets)
}

const METHODS: [usize; 4] = [0x7000_0100, 0x7000_0200, 0x7000_0300, 0x7000_0400];

fn with_scopes<R>(scopes: &[u8], f: impl FnOnce(&Bytes, &NmethodScopes) -> R) -> R {
    // scopes at 0x1000, metadata right after, in one buffer
    let mut mem_bytes = scopes.to_vec();
    mem_bytes.resize(256, 0);
    for m in METHODS {
        mem_bytes.extend(m.to_le_bytes());
    }
    let mem = Bytes {
        base: 0x1000,
        data: &mem_bytes,
    };
    let info = NmethodScopes {
        data: 0x1000,
        data_len: scopes.len(),
        metadata: 0x1000 + 256,
        metadata_len: METHODS.len(),
    };
    f(&mem, &info)
}

#[test]
fn three_level_inline_chain_decodes_callee_first() {
    // outer@7 inlines middle@1 which inlines inner@6; large bcis take several bytes.
    for encoding in [Encoding::Classic, Encoding::ZeroFree] {
        for chain in [[(1, 7), (2, 1), (3, 6)], [(1, 300), (2, 20_000), (3, -1)]] {
            let (bytes, offsets) = serialize(&chain, encoding);
            let format = ScopeFormat {
                encoding,
                invocation_entry_bci: -1,
            };
            with_scopes(&bytes, |mem, info| {
                let mut out = [ScopeFrame::default(); 8];
                let r = decode_scopes(mem, &format, info, offsets[2] as i32, &mut out);
                assert_eq!(
                    r,
                    ScopeChain {
                        count: 3,
                        end: ChainEnd::Complete
                    }
                );
                let expect: Vec<ScopeFrame> = chain
                    .iter()
                    .rev()
                    .map(|&(m, bci)| ScopeFrame {
                        method: METHODS[m as usize - 1],
                        bci,
                    })
                    .collect();
                assert_eq!(&out[..3], &expect[..]);
                // starting at the middle scope gives its two-frame chain
                let r = decode_scopes(mem, &format, info, offsets[1] as i32, &mut out);
                assert_eq!((r.count, r.end), (2, ChainEnd::Complete));
                assert_eq!(out[0].method, METHODS[1]);
            });
        }
    }
}

#[test]
fn scope_header_holds_sender_method_index_and_adjusted_bci() {
    let (bytes, offsets) = serialize(&[(4, -1), (2, 35)], Encoding::Classic);
    with_scopes(&bytes, |mem, info| {
        let inner = read_scope(mem, &FORMAT_17, info, offsets[1]).unwrap();
        assert_eq!(
            inner,
            ScopeHeader {
                sender_decode_offset: offsets[0],
                method_index: 2,
                bci: 35
            }
        );
        let outer = read_scope(mem, &FORMAT_17, info, offsets[0]).unwrap();
        assert_eq!((outer.sender_decode_offset, outer.bci), (0, -1));
    });
}

#[test]
fn serialized_null_scope_offset_means_no_scope() {
    with_scopes(&[0xff], |mem, info| {
        let mut out = [ScopeFrame::default(); 4];
        let r = decode_scopes(mem, &FORMAT_17, info, 0, &mut out);
        assert_eq!(
            r,
            ScopeChain {
                count: 0,
                end: ChainEnd::NoScope
            }
        );
    });
}

#[test]
fn small_output_keeps_the_innermost_frames() {
    let (bytes, offsets) = serialize(&[(1, 1), (2, 2), (3, 3)], Encoding::Classic);
    with_scopes(&bytes, |mem, info| {
        let mut out = [ScopeFrame::default(); 2];
        let r = decode_scopes(mem, &FORMAT_17, info, offsets[2] as i32, &mut out);
        assert_eq!(
            r,
            ScopeChain {
                count: 2,
                end: ChainEnd::Truncated
            }
        );
        assert_eq!(
            out[0],
            ScopeFrame {
                method: METHODS[2],
                bci: 3
            }
        );
        assert_eq!(
            out[1],
            ScopeFrame {
                method: METHODS[1],
                bci: 2
            }
        );
        let r = decode_scopes(mem, &FORMAT_17, info, offsets[2] as i32, &mut []);
        assert_eq!(
            r,
            ScopeChain {
                count: 0,
                end: ChainEnd::Truncated
            }
        );
    });
}

#[test]
fn cyclic_or_forward_sender_offsets_are_invalid() {
    // Scope at 1 names itself as sender; scope at 5 names a later scope.
    let mut bytes = vec![0xff];
    for v in [1, 1, 1, 0, 0, 0] {
        encode(v, Encoding::Classic, &mut bytes);
    }
    let forward = bytes.len();
    for v in [20, 2, 1, 0, 0, 0] {
        encode(v, Encoding::Classic, &mut bytes);
    }
    with_scopes(&bytes, |mem, info| {
        let mut out = [ScopeFrame::default(); 300];
        let r = decode_scopes(mem, &FORMAT_17, info, 1, &mut out);
        assert_eq!(
            r,
            ScopeChain {
                count: 1,
                end: ChainEnd::Invalid
            }
        );
        let r = decode_scopes(mem, &FORMAT_17, info, forward as i32, &mut out);
        assert_eq!(
            r,
            ScopeChain {
                count: 1,
                end: ChainEnd::Invalid
            }
        );
    });
}

#[test]
fn bad_offsets_and_method_indexes_are_invalid() {
    let (bytes, offsets) = serialize(&[(1, 0), (9, 4)], Encoding::Classic);
    with_scopes(&bytes, |mem, info| {
        let mut out = [ScopeFrame::default(); 4];
        // method index 9 > 4 metadata entries
        let r = decode_scopes(mem, &FORMAT_17, info, offsets[1] as i32, &mut out);
        assert_eq!(
            r,
            ScopeChain {
                count: 0,
                end: ChainEnd::Invalid
            }
        );
        // offsets outside the scopes data, or negative
        for offset in [bytes.len() as i32, 10_000, -3] {
            let r = decode_scopes(mem, &FORMAT_17, info, offset, &mut out);
            assert_eq!(
                r,
                ScopeChain {
                    count: 0,
                    end: ChainEnd::Invalid
                }
            );
        }
        // unreadable metadata
        let far = NmethodScopes {
            metadata: 0x10_0000,
            ..*info
        };
        let r = decode_scopes(mem, &FORMAT_17, &far, offsets[0] as i32, &mut out);
        assert_eq!(
            r,
            ScopeChain {
                count: 0,
                end: ChainEnd::Invalid
            }
        );
    });
}

#[test]
fn method_index_zero_is_a_null_method() {
    let (bytes, offsets) = serialize(&[(0, 5)], Encoding::ZeroFree);
    with_scopes(&bytes, |mem, info| {
        let format = ScopeFormat {
            encoding: Encoding::ZeroFree,
            invocation_entry_bci: -1,
        };
        let mut out = [ScopeFrame::default(); 4];
        let r = decode_scopes(mem, &format, info, offsets[0] as i32, &mut out);
        assert_eq!(
            r,
            ScopeChain {
                count: 1,
                end: ChainEnd::Complete
            }
        );
        assert_eq!(out[0], ScopeFrame { method: 0, bci: 5 });
    });
}

#[test]
fn deep_chains_stop_at_the_depth_guard() {
    let chain: Vec<(u32, i32)> = (0..300).map(|i| (1 + i % 4, i as i32)).collect();
    let (bytes, offsets) = serialize(&chain, Encoding::Classic);
    let mut mem_bytes = bytes.clone();
    let metadata = mem_bytes.len();
    for m in METHODS {
        mem_bytes.extend(m.to_le_bytes());
    }
    let mem = Bytes {
        base: 0,
        data: &mem_bytes,
    };
    let info = NmethodScopes {
        data: 0,
        data_len: bytes.len(),
        metadata,
        metadata_len: 4,
    };
    let mut out = vec![ScopeFrame::default(); 400];
    let r = decode_scopes(
        &mem,
        &FORMAT_17,
        &info,
        *offsets.last().unwrap() as i32,
        &mut out,
    );
    assert_eq!(
        r,
        ScopeChain {
            count: MAX_INLINE_DEPTH,
            end: ChainEnd::Truncated
        }
    );
    assert_eq!(out[0].bci, 299);
}

// ---- recorded real bytes (fixtures/debuginfo, see its README) ----

use super::fixture::{self, Recording};

struct Recorded<'a> {
    r: &'a Recording,
    pcs: Bytes<'a>,
    scopes: Bytes<'a>,
    metadata: Bytes<'a>,
}

impl Memory for Recorded<'_> {
    fn read_u8(&self, a: usize) -> Option<u8> {
        self.pcs.read_u8(a).or_else(|| self.scopes.read_u8(a))
    }
    fn read_u32(&self, a: usize) -> Option<u32> {
        self.pcs.read_u32(a).or_else(|| self.scopes.read_u32(a))
    }
    fn read_usize(&self, a: usize) -> Option<usize> {
        self.metadata.read_usize(a)
    }
}

impl Recorded<'_> {
    fn layout(&self) -> PcDescLayout {
        PcDescLayout {
            size: self.r.pc_desc_size,
            pc_offset: self.r.pc_offset_field,
            scope_decode_offset: self.r.scope_field,
        }
    }
    fn format(&self) -> ScopeFormat {
        ScopeFormat {
            encoding: Encoding::for_feature_version(self.r.feature_version),
            invocation_entry_bci: self.r.invocation_entry_bci,
        }
    }
    fn nmethod(&self) -> NmethodDebugInfo {
        NmethodDebugInfo {
            pcs_begin: self.r.pcs.addr,
            pcs_end: self.r.pcs.addr + self.r.pcs.bytes.len(),
            scopes: NmethodScopes {
                data: self.r.scopes.addr,
                data_len: self.r.scopes.bytes.len(),
                metadata: self.r.metadata_addr,
                metadata_len: self.r.metadata.len(),
            },
        }
    }
    fn frames(&self, pc_offset: usize) -> (Vec<ScopeFrame>, ChainEnd) {
        let mut out = [ScopeFrame::default(); 16];
        let r = decode_at_pc(
            self,
            &self.layout(),
            &self.format(),
            &self.nmethod(),
            pc_offset,
            &mut out,
        );
        (out[..r.count].to_vec(), r.end)
    }
}

fn for_each_recording(f: impl Fn(&Recorded)) {
    for r in fixture::all() {
        let md = fixture::metadata_bytes(&r);
        let rec = Recorded {
            r: &r,
            pcs: Bytes {
                base: r.pcs.addr,
                data: &r.pcs.bytes,
            },
            scopes: Bytes {
                base: r.scopes.addr,
                data: &r.scopes.bytes,
            },
            metadata: Bytes {
                base: r.metadata_addr,
                data: &md,
            },
        };
        f(&rec);
    }
}

#[test]
fn recorded_nmethods_decode_to_hotspots_own_inline_records() {
    for_each_recording(|rec| {
        assert!(rec.r.truth.len() >= 10, "{}", rec.r.name);
        let mut deepest = 0;
        for truth in &rec.r.truth {
            let (frames, end) = rec.frames(truth.pc_offset);
            assert_eq!(
                end,
                ChainEnd::Complete,
                "{} pc {}",
                rec.r.name,
                truth.pc_offset
            );
            let got: Vec<(usize, i32)> = frames.iter().map(|f| (f.method, f.bci)).collect();
            let want: Vec<(usize, i32)> = truth.frames.iter().map(|(m, b, _)| (*m, *b)).collect();
            assert_eq!(got, want, "{} pc {}", rec.r.name, truth.pc_offset);
            // The Method*s we found are named, through the Method* chain, as JVMTI names them.
            for (frame, (_, _, jvmti_name)) in frames.iter().zip(&truth.frames) {
                let md_name = rec.r.metadata.iter().find(|(m, _)| *m == frame.method);
                assert_eq!(md_name.map(|(_, n)| n), Some(jvmti_name), "{}", rec.r.name);
            }
            deepest = deepest.max(frames.len());
        }
        // leaf <- inner <- middle <- outer
        assert_eq!(deepest, 4, "{}", rec.r.name);
    });
}

#[test]
fn recorded_pcs_between_records_map_to_the_next_record() {
    for_each_recording(|rec| {
        let truth = &rec.r.truth;
        let first = truth.first().unwrap();
        for pc in 0..first.pc_offset {
            let (frames, _) = rec.frames(pc);
            assert_eq!(
                frames[0].method, first.frames[0].0,
                "{} pc {pc}",
                rec.r.name
            );
        }
        for pair in truth.windows(2) {
            for pc in pair[0].pc_offset + 1..pair[1].pc_offset {
                let (frames, end) = rec.frames(pc);
                assert_eq!(end, ChainEnd::Complete);
                let got: Vec<(usize, i32)> = frames.iter().map(|f| (f.method, f.bci)).collect();
                let want: Vec<(usize, i32)> =
                    pair[1].frames.iter().map(|(m, b, _)| (*m, *b)).collect();
                assert_eq!(got, want, "{} pc {pc}", rec.r.name);
            }
        }
    });
}

#[test]
fn recorded_pcs_past_the_last_record_have_no_scope() {
    for_each_recording(|rec| {
        let pcs = &rec.r.pcs;
        let last_entry = pcs.addr + pcs.bytes.len() - rec.r.pc_desc_size;
        let sentinel = rec.read_u32(last_entry + rec.r.pc_offset_field).unwrap() as usize;
        assert!(
            sentinel > rec.r.code_size,
            "{}: final sentinel past the code",
            rec.r.name
        );
        // Up to the final sentinel: a PcDesc without scope; past it, none.
        let last = rec.r.truth.last().unwrap().pc_offset;
        for pc in [last + 1, rec.r.code_size, sentinel] {
            assert_eq!(
                rec.frames(pc).1,
                ChainEnd::NoScope,
                "{} pc {pc}",
                rec.r.name
            );
        }
        assert_eq!(
            rec.frames(sentinel + 1).1,
            ChainEnd::NoPcDesc,
            "{}",
            rec.r.name
        );
        // The leading sentinel is at -1 and never found.
        let first = find_pc_desc(rec, &rec.layout(), pcs.addr, pcs.addr + pcs.bytes.len(), 0);
        assert_eq!(first.unwrap().pc_offset as usize, rec.r.truth[0].pc_offset);
        let lead = rec.read_u32(pcs.addr + rec.r.pc_offset_field).unwrap() as i32;
        assert_eq!(lead, -1, "{}", rec.r.name);
    });
}
