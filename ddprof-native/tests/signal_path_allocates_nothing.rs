//! The recording half of the signal path (trace interning, sample append, counters)
//! must not allocate: the library's counting global allocator proves it for this thread.

use javaProfiler::footprint::thread_allocations;
use javaProfiler::sample::frame::Frame;
use javaProfiler::sample::record::{record, Context, Event, EventKind};
use javaProfiler::sample::traces::Recorder;

// The library's own counting allocator (footprint/) counts per thread.

#[test]
fn recording_samples_and_traces_allocates_nothing() {
    let recorder = Recorder::new(1 << 10, 1 << 14, 1 << 12);
    let traces: Vec<Vec<Frame>> = (0..50u64)
        .map(|t| {
            (0..(1 + t % 30))
                .map(|d| Frame::java(t * 100 + d, d as i32, 1))
                .collect()
        })
        .collect();
    let before = thread_allocations();
    for round in 0..20 {
        for (i, t) in traces.iter().enumerate() {
            record(
                &recorder,
                &Event {
                    kind: EventKind::Cpu,
                    weight: 1,
                    ticks: round,
                    tid: i as i32,
                    context: Context::of_current_thread(),
                    frames: t,
                    truncated: false,
                    mode: 1,
                    state: 2,
                },
            );
        }
    }
    let after = thread_allocations();
    assert_eq!(after - before, 0, "the signal path allocated");
    let old = recorder.flip().unwrap();
    assert_eq!(recorder.generation(old).sample_count(), 1000);
    assert_eq!(recorder.generation(old).traces.len(), 50);
}

#[test]
fn tagging_raw_frames_allocates_nothing() {
    use javaProfiler::sample::tags::{self, Tag};
    use javaProfiler::sample::vm::trace_id;
    let klass = Box::new([0u64; 64]);
    let before = thread_allocations();
    let mut n = 0;
    for i in 0..1000u64 {
        // Uncalibrated: no ID, so the walker would store an untaggable-frame marker.
        n += trace_id::trace_id(klass.as_ptr() as usize).is_none() as u64;
        let f = tags::tagged_frame(
            0x7f00_0000_1000 + i * 8,
            (i % 300) as i32,
            1,
            Tag::of_trace_id(i),
            Some(i as u16),
        )
        .expect("taggable");
        let u = tags::untag(&f);
        n += u.tag.is_some() as u64 + tags::is_tagged(&f) as u64;
    }
    let after = thread_allocations();
    assert_eq!(after - before, 0, "tagging allocated");
    assert_eq!(n, 3000);
}

/// Native unwinding as the handler runs it (`to_java` with the crash-protected memory
/// reader, recording on), over a stack of frame pointers built in this process.
#[cfg(target_arch = "x86_64")]
#[test]
fn native_unwinding_allocates_nothing() {
    use javaProfiler::sample::walk::native::{self, Bounds, Cursor, End};
    // "Code": call sites (E8 rel32) whose return addresses the frames hold.
    let mut code = vec![0x90u8; 256];
    for end in [0x20usize, 0x40, 0x60] {
        code[end - 5] = 0xe8;
    }
    let code_at = code.as_ptr() as usize;
    let java_ret = code_at + 0x60;
    // The stack: three native frames at words 64, 128, 192; the last returns into "Java".
    let mut s = vec![0usize; 512];
    let base = s.as_ptr() as usize;
    let slot = |i: usize| base + i * 8;
    s[64] = slot(128);
    s[65] = code_at + 0x20;
    s[128] = slot(192);
    s[129] = code_at + 0x40;
    s[192] = 0x1234;
    s[193] = java_ret;
    let bounds = Bounds {
        low: base,
        high: base + 512 * 8,
    };
    let start = Cursor {
        pc: code_at + 0x80,
        sp: slot(16),
        fp: slot(64),
    };
    let in_code = move |pc: usize| pc == java_ret;
    let mut frames = vec![Frame::default(); 16];
    native::set_record(native::Record::Mixed);
    // Rules of the libraries mapped now: the lookups run (heap "code" has none).
    assert!(javaProfiler::libs::eh_frame::refresh() > 0);
    let before = thread_allocations();
    let mut ends = 0;
    for _ in 0..1000 {
        let mut n = 0;
        let end = native::to_java(start, 0, bounds, 0, false, &in_code, &mut frames, &mut n);
        ends +=
            (end == End::Java(Cursor {
                pc: java_ret,
                sp: slot(194),
                fp: 0x1234,
            }) && n == 3) as usize;
    }
    let after = thread_allocations();
    native::set_record(native::Record::None);
    assert_eq!(after - before, 0, "native unwinding allocated");
    assert_eq!(ends, 1000);
}

#[test]
fn reusing_a_wall_trace_allocates_nothing_and_stops_at_the_next_dump() {
    use javaProfiler::sample::record::{record_reused, record_traced};
    let recorder = Recorder::new(1 << 10, 1 << 14, 1 << 12);
    let frames: Vec<Frame> = (0..20)
        .map(|d| Frame::java(7_000 + d, d as i32, 1))
        .collect();
    let event = |frames| Event {
        kind: EventKind::Wall,
        weight: 1,
        ticks: 1,
        tid: 42,
        context: Context::default(),
        frames,
        truncated: false,
        mode: 4,
        state: 4,
    };
    let before = thread_allocations();
    let (epoch, trace) = record_traced(&recorder, &event(&frames)).unwrap();
    for _ in 0..100 {
        assert_eq!(
            record_reused(&recorder, &event(&[]), epoch, trace),
            Some(true)
        );
    }
    assert_eq!(
        thread_allocations() - before,
        0,
        "the signal path allocated"
    );
    let old = recorder.flip().unwrap();
    let gen = recorder.generation(old);
    assert_eq!(gen.sample_count(), 101);
    assert!(gen.samples().all(|s| s.trace_id == trace));
    assert_eq!(gen.traces.len(), 1);
    // The generation that interned the trace is retired: the id means nothing in the new one.
    assert_eq!(record_reused(&recorder, &event(&[]), epoch, trace), None);
    recorder.clear(old);
    let _ = recorder.flip().unwrap();
    // Active again, but cleared since: a new epoch.
    assert_eq!(record_reused(&recorder, &event(&[]), epoch, trace), None);
}
