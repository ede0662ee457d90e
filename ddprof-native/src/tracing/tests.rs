//! The bounded buffers and dictionaries of endpoints and queue times, and their chunk
//! encoding read back with the test decoder.

use super::*;
use crate::jfr::reader::Chunk;
use crate::jfr::{ChunkBuilder, ChunkStart, T_ATTRIBUTE_VALUE, T_CLASS, T_STRING, T_SYMBOL};

fn at(ticks: i64) -> Option<At> {
    Some(At { ticks, tid: 7 })
}

#[test]
fn endpoints_accept_known_names_and_new_ones_only_below_the_limit() {
    let mut e = Endpoints::default();
    assert!(e.record("a", Some("op"), 1, 2, at(10)));
    assert!(e.record("b", None, 2, 2, at(11)));
    // Full: a new endpoint is refused and writes nothing; known ones still get events.
    assert!(!e.record("c", Some("op"), 3, 2, at(12)));
    assert!(e.record("a", None, 4, 2, at(13)));
    // The limit is the caller's, per call: a larger one admits more.
    assert!(e.record("c", None, 5, 3, at(14)));
    assert_eq!(e.added(), (3, 6));
    let events = e.take();
    assert_eq!(
        events
            .iter()
            .map(|x| (x.root_span_id, &*x.endpoint))
            .collect::<Vec<_>>(),
        vec![(1, "a"), (2, "b"), (4, "a"), (5, "c")]
    );
    assert_eq!(events[0].operation.as_deref(), Some("op"));
    assert_eq!(events[1].operation, None);
    assert_eq!((events[0].ticks, events[0].tid), (10, 7));
    // Taken once: the next chunk starts empty, and so does the count of added endpoints;
    // the dictionary stays for the recording (as upstream's, whose rotation carries it over).
    assert_eq!(e.added(), (0, 0));
    assert!(e.take().is_empty());
    assert!(!e.record("d", None, 6, 3, at(15)));
    assert!(e.record("a", None, 7, 3, at(16)));
    assert_eq!((e.added(), e.known()), ((0, 0), 3));
    assert!(e.record("dd", None, 8, 4, at(17)));
    assert_eq!((e.added(), e.known()), ((1, 3), 4));
}

#[test]
fn endpoints_answer_while_idle_without_events_and_zero_limit_accepts_nothing() {
    let mut e = Endpoints::default();
    assert!(!e.record("a", None, 1, 0, at(1)));
    assert!(!e.record("a", None, 1, -5, None));
    assert!(e.record("a", None, 1, 1, None));
    assert_eq!(e.added(), (1, 2));
    assert!(e.take().is_empty());
    assert_eq!((e.added(), e.known()), ((0, 0), 1));
    e.reset();
    assert_eq!(e.known(), 0);
}

#[test]
fn endpoint_events_are_bounded_per_chunk() {
    let mut e = Endpoints::default();
    for i in 0..MAX_PENDING_ENDPOINTS + 10 {
        assert!(e.record("same", None, i as u64, 1, at(i as i64)));
    }
    assert_eq!(e.dropped, 10);
    assert_eq!(e.take().len(), MAX_PENDING_ENDPOINTS);
    assert!(e.record("same", None, 0, 1, at(0)));
    assert_eq!(e.take().len(), 1);
}

fn call(task: Option<&str>) -> QueueTimeArgs<'_> {
    QueueTimeArgs {
        start_ticks: 100,
        end_ticks: 350,
        tid: 3,
        origin_tid: 4,
        task,
        scheduler: Some("pkg.Scheduler"),
        queue_type: None,
        queue_length: 9,
        context: Context {
            span_id: 11,
            root_span_id: 12,
            trace: (0, 0),
            attrs: [0; MAX_ATTRIBUTES],
        },
    }
}

#[test]
fn queue_times_are_bounded_and_share_class_names() {
    let mut q = QueueTimes::default();
    for _ in 0..MAX_PENDING_QUEUE_TIMES {
        assert!(q.record(&call(Some("pkg.Task"))));
    }
    assert!(!q.record(&call(Some("pkg.Task"))));
    assert_eq!(q.dropped, 1);
    assert_eq!(q.class_names(), 2);
    let events = q.take();
    assert_eq!(events.len(), MAX_PENDING_QUEUE_TIMES);
    // One stored name for every event naming the class.
    assert!(std::sync::Arc::ptr_eq(
        events[0].task.as_ref().unwrap(),
        events[1].task.as_ref().unwrap()
    ));
    assert_eq!(events[0].queue_type, None);
    assert!(q.record(&call(None)));
    assert_eq!(q.take().len(), 1);
}

#[test]
fn queue_time_class_dictionary_is_bounded() {
    let mut q = QueueTimes::default();
    let names: Vec<String> = (0..MAX_CLASS_NAMES).map(|i| format!("C{i}")).collect();
    for (i, n) in names[..MAX_CLASS_NAMES as usize - 1].iter().enumerate() {
        let mut a = call(None);
        a.scheduler = Some(n);
        assert!(q.record(&a), "{i}");
        if i % 1024 == 0 {
            q.take(); // the chunk buffer is smaller than the dictionary
        }
    }
    assert_eq!(q.class_names(), MAX_CLASS_NAMES as usize - 1);
    // One name left: the new task takes it, the new scheduler then does not fit.
    let mut a = call(Some("new.Task"));
    a.scheduler = Some("pkg.Scheduler");
    assert!(!q.record(&a));
    assert_eq!(q.dropped, 1);
    let mut a = call(Some(&names[0]));
    a.scheduler = Some(&names[1]);
    assert!(q.record(&a), "known names are always found");
    q.reset();
    assert_eq!(q.class_names(), 0);
    assert!(q.take().is_empty());
}

#[test]
fn events_are_written_with_upstreams_fields() {
    let mut e = Endpoints::default();
    e.record(
        "GET /a",
        Some("servlet.request"),
        42,
        8,
        Some(At {
            ticks: 1_500,
            tid: 7,
        }),
    );
    e.record(
        "GET /b",
        None,
        43,
        8,
        Some(At {
            ticks: 1_600,
            tid: 7,
        }),
    );
    let mut q = QueueTimes::default();
    let mut a = call(Some("pkg.Task"));
    a.queue_type = Some("java.util.concurrent.ArrayBlockingQueue");
    a.context.attrs[0] = 5;
    q.record(&a);
    let pending = Pending {
        endpoints: e.take(),
        queue_times: q.take(),
    };
    let mut chunk = ChunkBuilder::new(
        ChunkStart {
            start_nanos: 1_000_000,
            start_ticks: 1_000,
            ticks_per_second: 1_000_000_000,
        },
        &["tag".to_string()],
    );
    let tids = write_events(&mut chunk, &pending, |chunk, id| {
        assert_eq!(id, 5);
        chunk.intern_attribute_value("five")
    });
    assert_eq!(tids, vec![7, 7, 3, 4]);
    let bytes = chunk.finish(2_000, 1_000);
    let c = Chunk::parse(&bytes);
    let string = |key: u64| c.pool(T_STRING)[&key].str().map(str::to_owned);
    let attribute = |key: u64| c.pool(T_ATTRIBUTE_VALUE)[&key].str().map(str::to_owned);
    let class = |key: u64| {
        let name = c.pool(T_CLASS)[&key].fields()[1].reference();
        c.pool(T_SYMBOL)[&name].str().map(str::to_owned)
    };
    let eps: Vec<_> = c.events_named("datadog.Endpoint").collect();
    assert_eq!(eps.len(), 2);
    assert_eq!(
        string(eps[0].get("endpoint").reference()).as_deref(),
        Some("GET /a")
    );
    assert_eq!(
        attribute(eps[0].get("operation").reference()).as_deref(),
        Some("servlet.request")
    );
    assert_eq!(eps[0].get("localRootSpanId").long(), 42);
    assert_eq!(eps[0].get("startTime").long(), 1_500);
    assert_eq!(eps[0].get("duration").long(), 0);
    assert_eq!(eps[0].get("eventThread").reference(), 7);
    assert_eq!(eps[0].get("stackTrace").reference(), 0);
    assert_eq!(eps[1].get("operation").reference(), 0);
    let qt = c.events_named("datadog.QueueTime").next().unwrap();
    assert_eq!(qt.get("startTime").long(), 100);
    assert_eq!(qt.get("duration").long(), 250);
    assert_eq!(qt.get("eventThread").reference(), 3);
    assert_eq!(qt.get("origin").reference(), 4);
    assert_eq!(qt.get("spanId").long(), 11);
    assert_eq!(qt.get("localRootSpanId").long(), 12);
    assert_eq!(qt.get("queueLength").long(), 9);
    // As upstream: the names `Class.getName()` gives, dots and all.
    assert_eq!(
        class(qt.get("task").reference()).as_deref(),
        Some("pkg.Task")
    );
    assert_eq!(
        class(qt.get("queueType").reference()).as_deref(),
        Some("java.util.concurrent.ArrayBlockingQueue")
    );
    assert_eq!(
        attribute(qt.get("tag").reference()).as_deref(),
        Some("five")
    );
}
