//! Low-level JFR encodings: compressed integers, strings, patchable sizes.
//!
//! JFR 2.0 with the "compressed integers" feature stores every int/long as an
//! unsigned LEB128-style varint of the value's two's-complement bit pattern
//! (no zig-zag), capped at 9 bytes: the ninth byte carries 8 full bits, so a
//! 64-bit value never needs a tenth byte.

/// Longest string (in bytes of UTF-8) written; upstream truncates at this
/// length, and backends rely on settings of up to this size surviving whole.
pub const MAX_STRING_BYTES: usize = 8191;

/// Width of a padded varint: enough for a 35-bit size that is patched later.
pub const PADDED_VARINT_LEN: usize = 5;

/// String encoding bytes understood by JFR readers.
const STRING_NULL: u8 = 0;
const STRING_UTF8: u8 = 3;

/// Appends `v` as a JFR compressed varint (1..=9 bytes). Encoded into a local first and
/// appended at once: one capacity check instead of one per byte (a chunk's traces are mostly
/// varints, and a push per byte was a tenth of a first dump's CPU). All nine bytes are
/// appended and the unused ones cut off again: a copy of a constant length is a few moves,
/// where one of the varint's own length was a call to `memcpy` per value (a tenth of a
/// first dump at `cpu=1ms`, whose samples are a dozen varints each).
#[inline]
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v < 0x80 {
        out.push(v as u8);
        return;
    }
    let mut bytes = [0u8; 9];
    let len = out.len() + varint_into(&mut bytes, v);
    out.extend_from_slice(&bytes);
    out.truncate(len);
}

/// Writes `v` as a varint at the start of `dst` (nine bytes of room); returns its length.
#[inline]
fn varint_into(dst: &mut [u8; 9], v: u64) -> usize {
    let mut n = 0;
    let mut rest = v;
    while n < 8 && rest >= 0x80 {
        dst[n] = (rest as u8 & 0x7f) | 0x80;
        rest >>= 7;
        n += 1;
    }
    // After 56 bits, the last byte holds the remaining 8 bits verbatim.
    dst[n] = rest as u8;
    n + 1
}

/// One small event encoded in place at the end of a buffer: room for the largest is zeroed
/// first (a store of a constant length: a few vector moves), each varint written into it with
/// its nine bytes' bounds checked once, and what is left over cut off at the end. A push per
/// byte checked the capacity at each (a chunk at `cpu=1ms` holds tens of thousands of samples,
/// a dozen varints each); encoding on the stack and copying the event over read back bytes
/// just stored one at a time, which the CPU cannot forward to a wider load (a stall per event).
pub struct EventBytes<'a> {
    out: &'a mut Vec<u8>,
    /// Where the event's size goes.
    start: usize,
    /// Where its next field goes.
    at: usize,
}

/// Room of an [`EventBytes`]: a sample's ten longs and ten attribute keys, with margin.
pub const EVENT_BYTES_MAX: usize = 192;

/// Where an event's varints go: a [`Vec`] (as [`put_varint`]) or an [`EventBytes`], so that
/// an event's layout is written once for both.
pub trait VarintSink {
    fn varint(&mut self, v: u64);
    fn long(&mut self, v: i64) {
        self.varint(v as u64);
    }
}

impl VarintSink for Vec<u8> {
    fn varint(&mut self, v: u64) {
        put_varint(self, v);
    }
}

impl VarintSink for EventBytes<'_> {
    /// Appends `v` as [`put_varint`] does. Panics past [`EVENT_BYTES_MAX`]: callers size
    /// their events below it.
    #[inline]
    fn varint(&mut self, v: u64) {
        let dst: &mut [u8; 9] = (&mut self.out[self.at..self.at + 9])
            .try_into()
            .expect("nine bytes");
        self.at += varint_into(dst, v);
    }
}

impl<'a> EventBytes<'a> {
    /// Starts an event at the end of `out`, as [`begin_event`] does.
    #[inline]
    pub fn begin(out: &'a mut Vec<u8>) -> EventBytes<'a> {
        let start = out.len();
        out.extend_from_slice(&[0; 1 + EVENT_BYTES_MAX]);
        EventBytes {
            out,
            start,
            at: start + 1,
        }
    }

    /// Completes the event with its size, as [`end_event`] writes it.
    #[inline]
    pub fn finish(self) {
        self.out.truncate(self.at);
        end_event(self.out, self.start);
    }
}

/// Appends a signed 64-bit value; negative numbers take the full 9 bytes.
pub fn put_long(out: &mut Vec<u8>, v: i64) {
    put_varint(out, v as u64);
}

/// Appends a Java `int`. The JDK writes ints as their 32-bit pattern, so a
/// negative int costs 5 bytes instead of 9 and still reads back as negative.
pub fn put_int(out: &mut Vec<u8>, v: i32) {
    put_varint(out, u64::from(v as u32));
}

/// Encodes `v` as exactly five varint bytes, so it can be patched in place.
pub fn padded_varint(v: u32) -> [u8; PADDED_VARINT_LEN] {
    [
        (v as u8 & 0x7f) | 0x80,
        ((v >> 7) as u8 & 0x7f) | 0x80,
        ((v >> 14) as u8 & 0x7f) | 0x80,
        ((v >> 21) as u8 & 0x7f) | 0x80,
        (v >> 28) as u8 & 0x7f,
    ]
}

/// Overwrites five bytes at `at` with a padded varint.
pub fn patch_padded_varint(out: &mut [u8], at: usize, v: u32) {
    out[at..at + PADDED_VARINT_LEN].copy_from_slice(&padded_varint(v));
}

/// Longest prefix of `s` that fits `max` bytes without splitting a character.
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Appends a UTF-8 string (encoding 3), truncated to [`MAX_STRING_BYTES`].
pub fn put_string(out: &mut Vec<u8>, s: &str) {
    let s = truncate_utf8(s, MAX_STRING_BYTES);
    out.push(STRING_UTF8);
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Appends a nullable string; `None` becomes the null encoding so readers
/// return `null` rather than an empty string.
pub fn put_opt_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => put_string(out, s),
        None => out.push(STRING_NULL),
    }
}

pub fn put_bool(out: &mut Vec<u8>, v: bool) {
    out.push(u8::from(v));
}

/// Floats are the one numeric type JFR keeps raw (big-endian IEEE 754).
pub fn put_float(out: &mut Vec<u8>, v: f32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Starts an event whose size is not yet known: reserves one size byte.
pub fn begin_event(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.push(0);
    start
}

/// Completes an event begun with [`begin_event`]. Small events keep their
/// one-byte size; larger ones get the byte widened to a padded varint, which
/// shifts only this event's own bytes since it is the last thing written.
pub fn end_event(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start;
    if len < 0x80 {
        out[start] = len as u8;
    } else {
        let size = len - 1 + PADDED_VARINT_LEN;
        let size = u32::try_from(size).expect("JFR event larger than 4 GiB");
        out.splice(start..start + 1, padded_varint(size));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_bytes_write_what_begin_put_and_end_write() {
        for fields in [3usize, 20] {
            let values: Vec<u64> = (0..fields as u64).map(|i| i * 0x1234_5678_9abc).collect();
            let mut by_vec = Vec::new();
            let start = begin_event(&mut by_vec);
            for v in &values {
                put_varint(&mut by_vec, *v);
            }
            end_event(&mut by_vec, start);
            let mut in_place = Vec::new();
            let mut e = EventBytes::begin(&mut in_place);
            for v in &values {
                VarintSink::varint(&mut e, *v);
            }
            e.finish();
            assert_eq!(in_place, by_vec, "{fields} fields");
        }
    }

    /// Varints whose encoding is `len` bytes in all (1..=EVENT_BYTES_MAX), none of them zero
    /// bytes, so that a stale or missing byte shows: one-byte varints, then a nine-byte one.
    fn values_of_length(len: usize, seed: u64) -> Vec<u64> {
        let one = |i: usize| 1 + (seed + i as u64) % 0x7f;
        if len < 9 {
            // `len` bytes of varint: seven bits each, the top one set.
            let v = (1u64 << (7 * (len as u32 - 1))) | one(0);
            assert_eq!(varint(v).len(), len);
            return vec![v];
        }
        let mut vs: Vec<u64> = (0..len - 9).map(one).collect();
        vs.push(u64::MAX - seed);
        vs
    }

    #[test]
    fn event_bytes_write_events_of_every_length_as_per_field_encoding() {
        // Long events first, then short ones, one after the other in one buffer: what an
        // event's room held before (a longer event's bytes) must not show.
        let (mut by_field, mut by_event) = (vec![0xEE], vec![0xEE]);
        for (seed, len) in (1..=EVENT_BYTES_MAX)
            .rev()
            .chain(1..=EVENT_BYTES_MAX)
            .enumerate()
        {
            let values = values_of_length(len, seed as u64);
            let start = begin_event(&mut by_field);
            for v in &values {
                put_varint(&mut by_field, *v);
            }
            end_event(&mut by_field, start);
            let before = by_event.len();
            let mut e = EventBytes::begin(&mut by_event);
            for v in &values {
                VarintSink::varint(&mut e, *v);
            }
            assert_eq!(e.at - e.start - 1, len);
            e.finish();
            assert!(by_event.len() > before + len);
            assert_eq!(by_event, by_field, "event of {len} bytes");
        }
    }

    use crate::jfr::reader::Reader;

    fn varint(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out
    }

    fn read_varint(b: &[u8]) -> (u64, usize) {
        let mut r = Reader::new(b);
        let v = r.varint();
        (v, r.pos)
    }

    #[test]
    fn varint_small_values() {
        assert_eq!(varint(0), [0]);
        assert_eq!(varint(1), [1]);
        assert_eq!(varint(127), [0x7f]);
        assert_eq!(varint(128), [0x80, 0x01]);
        assert_eq!(varint(300), [0xac, 0x02]);
        assert_eq!(varint(16383), [0xff, 0x7f]);
        assert_eq!(varint(16384), [0x80, 0x80, 0x01]);
    }

    #[test]
    fn varint_lengths_at_boundaries() {
        for n in 1..=8u32 {
            let below = (1u64 << (7 * n)) - 1;
            assert_eq!(varint(below).len(), n as usize, "{below:#x}");
            assert_eq!(varint(below + 1).len(), n as usize + 1);
        }
        // Anything with bit 56 or above set needs the 9-byte form.
        assert_eq!(varint(1 << 56).len(), 9);
        assert_eq!(varint(u64::MAX).len(), 9);
    }

    #[test]
    fn varint_nine_byte_case_keeps_eight_bits() {
        assert_eq!(
            varint(u64::MAX),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        let v = (0xA5u64 << 56) | 0x0012_3456_789A_BCDE;
        let enc = varint(v);
        assert_eq!(enc.len(), 9);
        assert_eq!(enc[8], 0xA5);
        assert_eq!(read_varint(&enc), (v, 9));
        let max = i64::MAX as u64;
        assert_eq!(read_varint(&varint(max)), (max, 9));
    }

    #[test]
    fn varint_round_trips() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x >> (x % 64);
            let enc = varint(v);
            assert_eq!(read_varint(&enc), (v, enc.len()));
        }
    }

    #[test]
    fn negative_longs_use_twos_complement() {
        let mut out = Vec::new();
        put_long(&mut out, -1);
        assert_eq!(out, [0xff; 9]);
        out.clear();
        put_long(&mut out, i64::MIN);
        assert_eq!(out.len(), 9);
        assert_eq!(read_varint(&out).0 as i64, i64::MIN);
        out.clear();
        put_long(&mut out, -2);
        assert_eq!(read_varint(&out).0 as i64, -2);
    }

    #[test]
    fn negative_ints_use_32_bit_pattern() {
        let mut out = Vec::new();
        put_int(&mut out, -1);
        assert_eq!(out, [0xff, 0xff, 0xff, 0xff, 0x0f]);
        // Readers narrow with a cast, which recovers the sign.
        assert_eq!(read_varint(&out).0 as i32, -1);
        out.clear();
        put_int(&mut out, i32::MAX);
        assert_eq!(read_varint(&out).0 as i32, i32::MAX);
    }

    #[test]
    fn padded_varint_decodes_like_a_varint() {
        for v in [0u32, 1, 127, 128, 68, 1 << 20, (1 << 28) + 5, u32::MAX] {
            let enc = padded_varint(v);
            assert_eq!(read_varint(&enc), (u64::from(v), 5), "{v}");
        }
        assert_eq!(padded_varint(5), [0x85, 0x80, 0x80, 0x80, 0x00]);
        let mut buf = vec![0u8; 8];
        patch_padded_varint(&mut buf, 2, 300);
        assert_eq!(&buf[2..7], &[0xac, 0x82, 0x80, 0x80, 0x00]);
    }

    #[test]
    fn strings_are_utf8_with_byte_length() {
        let mut out = Vec::new();
        put_string(&mut out, "");
        assert_eq!(out, [3, 0]);
        out.clear();
        put_string(&mut out, "héllo");
        assert_eq!(out[0], 3);
        assert_eq!(out[1], 6);
        assert_eq!(&out[2..], "héllo".as_bytes());
        out.clear();
        put_opt_string(&mut out, None);
        assert_eq!(out, [0]);
    }

    #[test]
    fn long_strings_are_truncated_on_a_char_boundary() {
        let exact = "a".repeat(MAX_STRING_BYTES);
        let mut out = Vec::new();
        put_string(&mut out, &exact);
        assert_eq!(read_varint(&out[1..]).0 as usize, MAX_STRING_BYTES);
        assert_eq!(out.len(), 1 + 2 + MAX_STRING_BYTES);

        out.clear();
        put_string(&mut out, &"b".repeat(MAX_STRING_BYTES + 100));
        assert_eq!(read_varint(&out[1..]).0 as usize, MAX_STRING_BYTES);

        // 8190 ASCII bytes, then a 3-byte char straddling the limit.
        let s = format!("{}€tail", "x".repeat(MAX_STRING_BYTES - 1));
        let t = truncate_utf8(&s, MAX_STRING_BYTES);
        assert_eq!(t.len(), MAX_STRING_BYTES - 1);
        assert!(t.chars().all(|c| c == 'x'));
        assert_eq!(truncate_utf8("ab€", 4), "ab");
        assert_eq!(truncate_utf8("ab€", 5), "ab€");
    }

    #[test]
    fn event_sizes_small_and_padded() {
        let mut out = vec![0xEE];
        let start = begin_event(&mut out);
        out.extend_from_slice(&[1, 2, 3]);
        end_event(&mut out, start);
        assert_eq!(out, [0xEE, 4, 1, 2, 3]);

        // 126 payload bytes + 1 size byte = 127: still fits one byte.
        let mut out = Vec::new();
        let start = begin_event(&mut out);
        out.resize(127, 7);
        end_event(&mut out, start);
        assert_eq!(out[0], 127);
        assert_eq!(out.len(), 127);

        // One more byte and the size must be padded to five bytes.
        let mut out = vec![9];
        let start = begin_event(&mut out);
        out.resize(1 + 128, 7);
        end_event(&mut out, start);
        assert_eq!(out.len(), 1 + 127 + 5);
        assert_eq!(read_varint(&out[1..]), (132, 5));
        assert!(out[6..].iter().all(|&b| b == 7));
    }

    #[test]
    fn floats_are_big_endian() {
        let mut out = Vec::new();
        put_float(&mut out, 1.5);
        assert_eq!(out, [0x3f, 0xc0, 0, 0]);
    }
}
