//! The recording half of the signal path (trace interning, sample append, counters)
//! must not allocate: the library's counting global allocator proves it for this thread.

use javaProfiler::memory::thread_allocations;
use javaProfiler::traces::{Frame, Recorder, SampleRecord};

// The library's own counting allocator (memory/) counts per thread.

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
            recorder.record(t, false, |id| SampleRecord {
                ticks: round,
                tid: i as i32,
                trace_id: id,
                ..Default::default()
            });
        }
    }
    let after = thread_allocations();
    assert_eq!(after - before, 0, "the signal path allocated");
    let old = recorder.flip();
    assert_eq!(recorder.generation(old).samples().len(), 1000);
    assert_eq!(recorder.generation(old).traces.len(), 50);
}

#[test]
fn tagging_raw_frames_allocates_nothing() {
    use javaProfiler::hotspot::trace_id;
    use javaProfiler::methods::lazy::tags::{self, Tag};
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
        )
        .expect("taggable");
        let u = tags::untag(&f);
        n += u.tag.is_some() as u64 + tags::is_tagged(&f) as u64;
    }
    let after = thread_allocations();
    assert_eq!(after - before, 0, "tagging allocated");
    assert_eq!(n, 3000);
}
