use super::*;

/// Every test that stores or reads encodings, or bumps the dictionary epoch, holds this.
pub(crate) static EPOCH_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    EPOCH_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn parse(record: &[u8; RECORD_SIZE]) -> Vec<(u8, Vec<u8>)> {
    let size = u16::from_ne_bytes([record[26], record[27]]) as usize;
    let data = &record[RECORD_HEADER..RECORD_HEADER + size];
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let len = data[at + 1] as usize;
        out.push((data[at], data[at + 2..at + 2 + len].to_vec()));
        at += 2 + len;
    }
    out
}

#[test]
fn record_layout_is_otep_4947() {
    let _g = lock();
    let c = ThreadContext::default();
    c.set_trace(
        0x0102_0304_0506_0708,
        0x1112_1314_1516_1718,
        (0x2122_2324_2526_2728, 0x3132_3334_3536_3738),
        Some((2, 7, b"GET /x")),
        None,
    );
    let b = c.record.bytes();
    assert_eq!(
        &b[0..16],
        &[
            0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36,
            0x37, 0x38
        ]
    );
    assert_eq!(
        &b[16..24],
        &[0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]
    );
    assert_eq!(b[24], 1, "valid");
    assert_eq!(b[25], 0, "reserved");
    assert_eq!(
        parse(b),
        vec![(0, b"0102030405060708".to_vec()), (3, b"GET /x".to_vec())]
    );
    assert_eq!(c.snapshot().0, 0x1112_1314_1516_1718);
    assert_eq!(c.snapshot().1, 0x0102_0304_0506_0708);
    assert_eq!(c.snapshot().2[2], 7);
}

#[test]
fn activation_resets_every_slot() {
    let _g = lock();
    let c = ThreadContext::default();
    c.set_trace(1, 1, (0, 1), None, None);
    assert!(c.set_value(4, 9, b"tenant"));
    c.set_trace(2, 2, (0, 2), Some((0, 3, b"op")), None);
    let (_, _, attrs) = c.snapshot();
    assert_eq!(attrs[4], 0);
    assert_eq!(attrs[0], 3);
    assert_eq!(c.record.attr(5), None);
    assert_eq!(c.record.attr(1), Some(&b"op"[..]));
}

#[test]
fn a_value_that_does_not_fit_clears_the_slot() {
    let _g = lock();
    let c = ThreadContext::default();
    c.set_trace(2, 1, (0, 1), None, None);
    let long = [b'x'; 255];
    assert!(c.set_value(0, 1, &long));
    assert!(c.set_value(1, 2, &long));
    assert!(
        !c.set_value(2, 3, &long),
        "612 - 18 - 2 * 257 leaves 80 bytes"
    );
    assert_eq!(c.encoding(2), 0);
    assert!(c.set_value(3, 4, b"short"));
    // Replacing an entry frees its room first.
    assert!(c.set_value(0, 5, b"small"));
    assert!(c.set_value(2, 3, &long));
}

#[test]
fn clear_leaves_the_record_invalid_and_clear_value_keeps_it_so() {
    let _g = lock();
    let c = ThreadContext::default();
    c.set_trace(2, 1, (0, 1), Some((0, 3, b"op")), None);
    c.clear();
    assert!(!c.record.is_valid());
    assert_eq!(c.snapshot(), (0, 0, [0; MAX_ATTRIBUTES]));
    c.clear_value(0);
    assert!(!c.record.is_valid());
    assert!(c.set_value(0, 3, b"late"));
    assert!(
        c.record.is_valid(),
        "an attribute alone publishes the record"
    );
    assert_eq!(c.snapshot().0, 0);
}

#[test]
fn legacy_span_write_keeps_attributes() {
    let _g = lock();
    let c = ThreadContext::default();
    assert!(c.set_value(1, 6, b"v"));
    c.set_span_legacy(10, 20);
    assert_eq!(c.snapshot().0, 10);
    assert_eq!(c.snapshot().1, 20);
    assert_eq!(c.snapshot().2[1], 6);
    c.set_span_legacy(0, 0);
    assert!(c.record.is_valid(), "attribute still set");
    c.clear_value(1);
    c.set_span_legacy(0, 0);
    assert!(!c.record.is_valid());
}

#[test]
fn encodings_of_an_earlier_dictionary_epoch_read_as_unset() {
    let _g = lock();
    let c = ThreadContext::default();
    assert!(c.set_value(0, 6, b"v"));
    let mut out = [0u32; 3];
    c.copy_encodings(&mut out);
    assert_eq!(out[0], 6);
    next_dictionary_epoch();
    c.copy_encodings(&mut out);
    assert_eq!(out[0], 0);
}

#[test]
fn hex16_is_lowercase_hex_most_significant_first() {
    for v in [
        0u64,
        1,
        9,
        10,
        15,
        0x1234_5678_9abc_def0,
        0xffff_ffff_ffff_ffff,
        0x0a0b_0c0d_0e0f_1009,
        0x8000_0000_0000_0000,
        u64::MAX - 1,
    ] {
        assert_eq!(&super::hex16(v), format!("{v:016x}").as_bytes(), "{v:#x}");
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..10_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        assert_eq!(&super::hex16(x), format!("{x:016x}").as_bytes(), "{x:#x}");
    }
}

/// The in-place Java writer trusts its mirror of the record only while this count is what it saw
/// after its own last write: every native writer must move it.
#[test]
fn every_native_write_moves_the_native_write_count() {
    let _g = lock();
    let c = ThreadContext::default();
    let count = |c: &ThreadContext| c.native_writes.load(Ordering::Relaxed);
    let writes: [&dyn Fn(&ThreadContext); 6] = [
        &|c| c.set_trace(1, 2, (0, 3), Some((0, 7, b"v")), None),
        &|c| c.clear(),
        &|c| {
            c.set_value(1, 7, b"v");
        },
        &|c| c.clear_value(1),
        &|c| c.set_span_legacy(4, 5),
        &|c| c.set_encoding_legacy(2, 7, b"v"),
    ];
    for (i, write) in writes.iter().enumerate() {
        let before = count(&c);
        write(&c);
        assert_ne!(count(&c), before, "writer {i}");
    }
    // Not part of the OTel record: its bytes are the same whatever the count.
    let layout = java_layout();
    assert!(layout[12] as usize >= RECORD_SIZE);
}
