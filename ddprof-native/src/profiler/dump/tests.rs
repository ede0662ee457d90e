//! `write_chunk` without a JVM: a generation holding one record of every kind, live objects,
//! and a fake frame namer; the chunk is read back through its own metadata
//! (`jfr::reader`). What a reader of the chunk relies on: every event of its kind, the common
//! fields as recorded, every stack trace, thread and class an event refers to present in the
//! pools, each frame named once and as the namer said, and the truncation and unnamed rules.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use super::*;
use crate::alloc::live::{LiveObject, Snapshot};
use crate::args::{Args, FjMethodId};
use crate::jfr::reader::{Chunk, Event};
use crate::jfr::{T_CLASS, T_STACK_TRACE, T_THREAD};
use crate::sample::record::Context;
use crate::sample::traces::Recorder;

/// The Java method the fake namer calls a thread's entry point.
const ENTRY: u64 = 1;
const START_TICKS: i64 = 1_000_000;
const TID: i32 = 7001;

/// What the dump asked of the fake namer.
#[derive(Default)]
struct Asked {
    prepared: Vec<Frame>,
    named: Vec<(Frame, i64)>,
    finished: bool,
}

/// Names a frame `fake.Frames.m<method word>` (`unknown` for an error frame, then unnamed),
/// line = bci + 100; [`ENTRY`] is an entry point.
struct FakeNamer {
    asked: Rc<RefCell<Asked>>,
    keys: HashMap<u64, u32>,
}

impl FrameNamer for FakeNamer {
    fn prepare<'f>(&mut self, _chunk: &mut ChunkBuilder, frames: impl Iterator<Item = &'f Frame>) {
        self.asked.borrow_mut().prepared.extend(frames.copied());
    }

    fn name(
        &mut self,
        chunk: &mut ChunkBuilder,
        f: &Frame,
        since: i64,
    ) -> crate::methods::namer::NamedFrame {
        self.asked.borrow_mut().named.push((*f, since));
        let named = f.kind != kind::ERROR;
        let method = *self.keys.entry(f.method).or_insert_with(|| {
            let name = if named {
                format!("m{}", f.method)
            } else {
                "unknown".to_string()
            };
            chunk.intern_method("fake/Frames", &name, "()V", 1, false)
        });
        crate::methods::namer::NamedFrame {
            frame: FrameRef {
                method,
                line: f.bci + 100,
                bci: f.bci,
                frame_type: f.frame_type,
            },
            entry_point: f.method == ENTRY,
            named,
        }
    }

    fn finish(self) {
        self.asked.borrow_mut().finished = true;
    }
}

fn session(attributes: &[&str]) -> Session {
    let args = Args {
        attributes: attributes.iter().map(|a| a.to_string()).collect(),
        // Host facts are the same for every chunk and read from /proc: not this test's.
        jfr_mask: NO_SYSTEM_INFO | NO_SYSTEM_PROPS | NO_NATIVE_LIBS | NO_CPU_LOAD,
        ..Args::default()
    };
    Session {
        args,
        // A session without CPU sampling: its engine arms nothing.
        engine: Arc::new(crate::engine::none::NoCpu),
        wall: None,
        file: PathBuf::from("/tmp/dump-test.jfr"),
        started: Instant::now(),
        started_epoch_ms: 1_700_000_000_000,
        chunk_start_nanos: 1_700_000_000_000_000_000,
        chunk_start_ticks: START_TICKS,
        walker: crate::profiler::session::Walker::Vm,
        fjmethodid: FjMethodId::True,
        warnings: vec!["a warning".to_string()],
        cpu_engine_fallback: None,
        rate_base: (0, 0),
        cpu_rate: None,
        watches_libraries: false,
        sources: crate::profiler::sources::Sources::new(),
    }
}

/// The dump's counters are process-wide: one dump at a time in these tests.
static ONE_DUMP: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

fn dump(session: &Session, gen: &Generation, live: Snapshot, namer: Option<FakeNamer>) -> Chunk {
    let _one = ONE_DUMP.lock();
    let end = ChunkEnd {
        ticks: START_TICKS + 50_000,
        nanos: session.chunk_start_nanos + 1_000_000_000,
        id_base: 0,
    };
    let inputs = Inputs {
        session,
        gen,
        live,
        live_started: Instant::now(),
        settings: &[],
        traced: &crate::tracing::Pending::default(),
        end: &end,
    };
    let (bytes, _) = write_chunk(std::ptr::null_mut(), inputs, namer);
    Chunk::parse(&bytes.into_vec())
}

fn record(ticks: i64, event: EventKind, trace_id: u32) -> SampleRecord {
    SampleRecord {
        ticks,
        tid: TID,
        trace_id,
        event: event as u8,
        span_id: 11,
        root_span_id: 22,
        ..Default::default()
    }
}

fn with_trace(mut r: SampleRecord, trace_id: u32) -> SampleRecord {
    r.trace_id = trace_id;
    r
}

fn counter(c: &Chunk, name: &str) -> i64 {
    c.events_named("datadog.ProfilerCounter")
        .find(|e| e.get("name").str() == Some(name))
        .unwrap_or_else(|| panic!("counter {name}"))
        .get("count")
        .long()
}

/// The frames of the stack trace an event refers to, as `Chunk::frames` prints them.
fn stack_of(c: &Chunk, e: &Event) -> (bool, Vec<String>) {
    let key = e.get("stackTrace").reference();
    assert!(
        c.pool(T_STACK_TRACE).contains_key(&key),
        "{}: trace {key} not in the pool",
        e.name
    );
    c.frames(key)
}

#[test]
fn every_kind_of_record_is_its_event_with_the_common_fields_and_pooled_references() {
    let recorder = Recorder::new(64, 1024, 16);
    // Java-rooted, ends in the entry point: whole, although the walk said truncated.
    let whole = [Frame::java(5, 3, 1), Frame::java(ENTRY, 0, 0)];
    // Java-rooted, not in an entry point: truncated, although the walk said whole.
    let cut = [Frame::java(6, 1, 1)];
    // Native-rooted: the walk's word holds.
    let native = [Frame::java(5, 3, 1), Frame::native(0x1000)];
    // An error frame: its samples are unnamed.
    let broken = [Frame::java(5, 3, 1), Frame::error(-1)];
    let t = |i: i64| START_TICKS + i * 10;
    let rec = |frames: &[Frame], truncated: bool, r: SampleRecord| {
        recorder
            .record_traced(frames, truncated, |id| with_trace(r, id))
            .unwrap();
    };
    rec(&whole, true, record(t(1), EventKind::Cpu, 0));
    rec(
        &cut,
        false,
        SampleRecord {
            weight: 3,
            trace_high: 0xAB,
            trace_low: 0xCD,
            ..record(t(2), EventKind::Wall, 0)
        },
    );
    rec(
        &whole,
        true,
        SampleRecord {
            size: 48,
            class_id: 0,
            alloc_weight: 2.5f32.to_bits(),
            ..record(t(3), EventKind::Alloc, 0)
        },
    );
    rec(
        &native,
        true,
        SampleRecord {
            size: 4096,
            address: 0xbeef,
            alloc_weight: 1.0f32.to_bits(),
            ..record(t(4), EventKind::NativeAlloc, 0)
        },
    );
    rec(
        &[],
        false,
        SampleRecord {
            address: 0xbeef,
            ..record(t(5), EventKind::NativeFree, 0)
        },
    );
    rec(
        &broken,
        false,
        SampleRecord {
            weight: 900,
            size: 10,
            class_id: 1, // RECV
            alloc_weight: 4.0f32.to_bits(),
            ..record(t(6), EventKind::NativeSocket, 0)
        },
    );
    let gen = recorder.generation(recorder.flip().unwrap());
    let live_frames: Arc<[Frame]> = Arc::new([Frame::java(9, 0, 0), Frame::java(ENTRY, 0, 0)]);
    let live = Snapshot {
        objects: vec![LiveObject {
            trace: 1,
            tid: TID + 1,
            ticks: t(0),
            size: 64,
            weight: 1.5,
            age: 2,
            context: Context {
                span_id: 33,
                root_span_id: 44,
                trace: (1, 2),
                attrs: Default::default(),
            },
            class_id: 0,
        }],
        traces: vec![(1, live_frames, false)],
    };
    let s = session(&["route"]);
    let asked = Rc::new(RefCell::new(Asked::default()));
    let namer = FakeNamer {
        asked: asked.clone(),
        keys: HashMap::new(),
    };
    let c = dump(&s, gen, live, Some(namer));

    // The namer: every frame of every trace shown once before naming, each named once (a
    // trace's frames in order, with when the trace was first sampled), then finished.
    let asked = asked.borrow();
    assert!(asked.finished);
    let distinct_traces = [
        &whole[..],
        &cut,
        &native,
        &broken,
        &[Frame::java(9, 0, 0), Frame::java(ENTRY, 0, 0)],
    ];
    let all: usize = distinct_traces.iter().map(|t| t.len()).sum();
    assert_eq!(asked.prepared.len(), all);
    assert_eq!(asked.named.len(), all);
    let pooled: usize = c
        .pool(T_STACK_TRACE)
        .keys()
        .map(|&k| c.frames(k).1.len())
        .sum();
    assert_eq!(pooled, all, "one trace per distinct stack");
    assert!(asked.named.contains(&(cut[0], t(2))), "{:?}", asked.named);
    assert!(asked.named.contains(&(Frame::java(9, 0, 0), t(0))));

    let one = |name: &'static str| -> &Event {
        let mut e = c.events_named(name);
        let first = e.next().unwrap_or_else(|| panic!("no {name}"));
        assert!(e.next().is_none(), "more than one {name}");
        first
    };
    let threads = c.pool(T_THREAD);
    let common = |e: &Event, ticks: i64| {
        assert_eq!(e.get("startTime").long(), ticks, "{}", e.name);
        let tid = e.get("eventThread").reference();
        assert!(threads.contains_key(&tid), "{}: thread {tid}", e.name);
        assert_eq!(e.get("spanId").long(), 11, "{}", e.name);
        assert_eq!(e.get("localRootSpanId").long(), 22, "{}", e.name);
    };
    let whole_names = vec![
        "fake.Frames.m5()V 103 3 JIT compiled".to_string(),
        "fake.Frames.m1()V 100 0 Interpreted".to_string(),
    ];

    let cpu = one("datadog.ExecutionSample");
    common(cpu, t(1));
    assert_eq!(stack_of(&c, cpu), (false, whole_names.clone()));

    let wall = one("datadog.MethodSample");
    common(wall, t(2));
    assert_eq!(wall.get("weight").long(), 3);
    assert!(stack_of(&c, wall).0, "a Java root that is no entry point");

    let alloc = one("datadog.ObjectSample");
    common(alloc, t(3));
    assert_eq!(alloc.get("size").long(), 48);
    assert_eq!(alloc.get("weight").float(), 2.5);
    assert!(c
        .pool(T_CLASS)
        .contains_key(&alloc.get("objectClass").reference()));
    assert_eq!(stack_of(&c, alloc), (false, whole_names.clone()));

    let malloc = one("datadog.NativeMemoryAllocation");
    common(malloc, t(4));
    assert_eq!(malloc.get("address").long(), 0xbeef);
    assert_eq!(malloc.get("size").long(), 4096);
    assert!(
        stack_of(&c, malloc).0,
        "a native root keeps the walk's word"
    );

    let free = one("datadog.NativeMemoryFree");
    assert_eq!(free.get("startTime").long(), t(5));
    assert_eq!(free.get("address").long(), 0xbeef);
    assert!(threads.contains_key(&free.get("eventThread").reference()));

    let socket = one("datadog.NativeSocketEvent");
    common(socket, t(6));
    assert_eq!(socket.get("duration").long(), 900);
    assert_eq!(socket.get("operation").str(), Some("RECV"));
    assert_eq!(socket.get("bytesTransferred").long(), 10);
    assert_eq!(
        stack_of(&c, socket).1.last().map(String::as_str),
        Some("fake.Frames.unknown()V 99 -1 Native")
    );

    let heap = one("datadog.HeapLiveObject");
    assert_eq!(heap.get("startTime").long(), t(0));
    assert_eq!(heap.get("age").long(), 2);
    assert_eq!(heap.get("spanId").long(), 33);
    assert!(threads.contains_key(&heap.get("eventThread").reference()));
    assert!(c
        .pool(T_CLASS)
        .contains_key(&heap.get("objectClass").reference()));
    assert_eq!(
        stack_of(&c, heap).1[0],
        "fake.Frames.m9()V 100 0 Interpreted"
    );

    // One link per local root span with a trace id, first sighting first.
    let links: Vec<(i64, i64, i64)> = c
        .events_named("datadog.TraceLink")
        .map(|e| {
            (
                e.get("localRootSpanId").long(),
                e.get("traceIdHigh").long(),
                e.get("traceIdLow").long(),
            )
        })
        .collect();
    assert_eq!(links, vec![(22, 0xAB, 0xCD), (44, 1, 2)]);
    assert_eq!(counter(&c, "chunk_samples"), 6);
    assert_eq!(
        counter(&c, "chunk_samples_unwalked_or_unnamed"),
        1,
        "the socket's broken trace"
    );
    let logs: Vec<_> = c
        .events_named("profiler.Log")
        .map(|e| e.get("message").str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(logs, vec!["a warning"], "the session's warnings");
}

#[test]
fn without_a_namer_samples_are_written_without_stack_traces() {
    let recorder = Recorder::new(64, 1024, 16);
    recorder
        .record_traced(&[Frame::java(5, 0, 0)], false, |id| {
            with_trace(record(START_TICKS + 1, EventKind::Cpu, 0), id)
        })
        .unwrap();
    let gen = recorder.generation(recorder.flip().unwrap());
    let c = dump(&session(&[]), gen, Snapshot::default(), None);
    assert_eq!(c.events_named("datadog.ExecutionSample").count(), 1);
    assert!(!c.has_pool(T_STACK_TRACE));
}

/// Traces the trace table tells apart but whose frames are named alike share one StackTrace
/// entry: their samples refer to it, and count as unnamed when its frames are.
#[test]
fn samples_of_traces_named_alike_refer_to_one_entry() {
    let recorder = Recorder::new(64, 1024, 16);
    // The fake namer does not look at idnum: these differ only for the trace table.
    let with_idnum = |mut f: Frame, idnum: u16| {
        f.idnum = idnum;
        f
    };
    let whole = [Frame::java(5, 3, 1), Frame::java(ENTRY, 0, 0)];
    let whole_too = [with_idnum(whole[0], 1), whole[1]];
    let broken = [Frame::java(6, 3, 1), Frame::error(-1)];
    let broken_too = [with_idnum(broken[0], 2), broken[1]];
    let t = |i: i64| START_TICKS + i * 10;
    let traces = [&whole, &whole_too, &broken, &broken_too, &whole_too, &whole];
    for (i, frames) in traces.into_iter().enumerate() {
        recorder
            .record_traced(frames, false, |id| {
                with_trace(record(t(i as i64), EventKind::Cpu, 0), id)
            })
            .unwrap();
    }
    let gen = recorder.generation(recorder.flip().unwrap());
    let namer = FakeNamer {
        asked: Rc::new(RefCell::new(Asked::default())),
        keys: HashMap::new(),
    };
    let c = dump(&session(&[]), gen, Snapshot::default(), Some(namer));
    let keys: Vec<u64> = c
        .events_named("datadog.ExecutionSample")
        .map(|e| e.get("stackTrace").reference())
        .collect();
    assert_eq!(keys.len(), 6);
    assert_eq!(keys[0], keys[1]);
    assert_eq!(keys[2], keys[3]);
    assert_eq!((keys[4], keys[5]), (keys[0], keys[0]));
    assert_ne!(keys[0], keys[2]);
    assert_eq!(c.pool(T_STACK_TRACE).len(), 2);
    for e in c.events_named("datadog.ExecutionSample") {
        stack_of(&c, e);
    }
    assert_eq!(counter(&c, "chunk_samples_unwalked_or_unnamed"), 2);
}
