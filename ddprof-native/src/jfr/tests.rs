//! Whole-chunk tests: build a chunk with every event kind, decode it through
//! its own metadata and check header, framing, pools and values.
//!
//! `JFR_SAMPLE_DIR=/some/dir cargo test` also writes the chunks to disk for
//! checking with `jfr print` / `jfr summary` / `Check.java`:
//! - `sample.jfr`: every event kind except datadog.NativeSocketEvent
//! - `two-chunks.jfr`: that chunk twice, as `resume` appends chunks
//! - `socket.jfr`: every event kind (the socket event's `duration` is second, where JDK tools
//!   expect it, not fourth as upstream's: see metadata.rs)

use super::metadata::*;
use super::reader::Chunk;
use super::*;

const START: ChunkStart = ChunkStart {
    start_nanos: 1_700_000_000_123_456_789,
    start_ticks: 5_000_000,
    ticks_per_second: 1_000_000_000,
};
const MAIN_TID: i64 = 4242;
const WORKER_TID: i64 = 4243;
const NATIVE_TID: i64 = 4250;
const UNNAMED_TID: i64 = 4299;
const CPU_TRACE: u64 = 0xDEAD_BEEF_0000_0001;
const WALL_TRACE: u64 = 2;
const NATIVE_TRACE: u64 = 3;

/// A chunk holding every event kind the builder supports.
pub fn sample_chunk() -> Vec<u8> {
    sample_chunk_with(true)
}

/// `socket = false` leaves out the one event JDK readers cannot read.
pub fn sample_chunk_with(socket: bool) -> Vec<u8> {
    let attributes = vec!["route".to_owned(), "tenant".to_owned()];
    let mut b = ChunkBuilder::new(START, &attributes);
    let t = START.start_ticks;

    // Chunk start: settings and system information.
    b.active_setting(t, MAIN_TID, T_ACTIVE_RECORDING, "asyncprofiler", "true");
    b.active_setting(t, MAIN_TID, T_ACTIVE_RECORDING, "cstack", "vm");
    b.active_setting(t, MAIN_TID, T_EXECUTION_SAMPLE, "enabled", "true");
    b.active_setting(t, MAIN_TID, T_EXECUTION_SAMPLE, "interval", "10000000");
    b.active_setting(t, MAIN_TID, T_METHOD_SAMPLE, "interval", "50000000");
    b.os_information(t, "uname: Linux 6.1.0 #1 SMP x86_64");
    b.cpu_information(t, "x86_64", "Test CPU @ 3.0GHz", 8, 16);
    b.jvm_information(
        t,
        "OpenJDK 64-Bit Server VM",
        "17.0.15+6",
        "-Xmx1g -XX:+UseG1GC",
        "",
        "com.example.Main arg",
        1_700_000_000_000,
        31337,
    );
    b.initial_system_property(t, "java.vm.vendor", "Eclipse Adoptium");
    b.initial_system_property(t, "user.name", "ünïcødé");
    b.native_library(
        t,
        "/usr/lib/libc.so.6",
        0x7f00_0000_0000,
        0x7f00_0020_0000,
        "0123456789abcdef",
        0x7f00_0000_0000,
    );

    // Pools referenced by samples.
    b.add_thread(MAIN_TID, "main", Some("main"), 1);
    b.add_thread(WORKER_TID, "worker-1", Some("worker-1"), 17);
    b.add_thread(NATIVE_TID, "gc-thread", None, 0);
    let run = b.intern_method("com/example/Worker", "run", "()V", 1, false);
    let compute = b.intern_method(
        "com/example/Worker",
        "compute",
        "(I[Ljava/lang/String;)J",
        2,
        false,
    );
    let hash = b.intern_method("java/lang/String", "hashCode", "()I", 1, false);
    let accessor = b.intern_method(
        "jdk/internal/reflect/GeneratedMethodAccessor42",
        "invoke",
        "(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;",
        1,
        false,
    );
    let accessor2 = b.intern_method(
        "jdk/internal/reflect/GeneratedMethodAccessor7",
        "invoke",
        "(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;",
        1,
        false,
    );
    assert_eq!(accessor, accessor2, "normalised accessors share one method");
    let lambda = b.intern_method(
        "java/lang/invoke/LambdaForm$MH/0x0000000800c0d000",
        "invoke",
        "(Ljava/lang/Object;)V",
        8,
        true,
    );
    let memcpy = b.intern_method("", "__memcpy_avx_unaligned", "()L;", 0x100, false);
    let clone = b.intern_method("", "clone3", "(Lk;)L;", 0x100, false);
    let main = b.intern_method(
        "com/example/Main",
        "main",
        "([Ljava/lang/String;)V",
        9,
        false,
    );

    b.add_stack_trace(
        CPU_TRACE,
        false,
        &[
            FrameRef {
                method: hash,
                line: 2301,
                bci: 17,
                frame_type: frame_type::INLINED,
            },
            FrameRef {
                method: compute,
                line: 42,
                bci: 5,
                frame_type: frame_type::JIT_COMPILED,
            },
            FrameRef {
                method: accessor,
                line: 0,
                bci: 3,
                frame_type: frame_type::JIT_COMPILED,
            },
            FrameRef {
                method: lambda,
                line: 0,
                bci: 0,
                frame_type: frame_type::C1_COMPILED,
            },
            FrameRef {
                method: run,
                line: 10,
                bci: 0,
                frame_type: frame_type::INTERPRETED,
            },
        ],
    );
    b.add_stack_trace(
        WALL_TRACE,
        false,
        &[FrameRef {
            method: main,
            line: 7,
            bci: 12,
            frame_type: frame_type::INTERPRETED,
        }],
    );
    b.add_stack_trace(
        NATIVE_TRACE,
        true,
        &[
            FrameRef {
                method: memcpy,
                line: 0,
                bci: 0,
                frame_type: frame_type::NATIVE,
            },
            FrameRef {
                method: clone,
                line: 0,
                bci: 0,
                frame_type: frame_type::KERNEL,
            },
        ],
    );
    let get = b.intern_attribute_value("GET /users");
    let acme = b.intern_attribute_value("acme");
    assert_eq!(
        (get, acme, b.intern_attribute_value("GET /users")),
        (1, 2, 1)
    );
    let string_class = b.intern_class("java/lang/String");
    let array_class = b.intern_class("[Ljava/lang/Integer;");
    let executor = b.intern_class("java/util/concurrent/ThreadPoolExecutor");
    let queue = b.intern_class("java/util/concurrent/LinkedBlockingQueue");
    let endpoint = b.intern_string("GET /users/{id}");

    // Samples.
    b.execution_sample(&Sample {
        ticks: t + 1_000,
        tid: WORKER_TID,
        trace_key: CPU_TRACE,
        state: STATE_RUNNABLE,
        mode: MODE_JAVA,
        weight: 1,
        correlation_id: 0,
        span_id: 1234567890123,
        local_root_span_id: 987654321,
        attrs: &[get, acme],
    });
    b.execution_sample(&Sample {
        ticks: t + 2_000,
        tid: NATIVE_TID,
        trace_key: NATIVE_TRACE,
        state: STATE_RUNNABLE,
        mode: MODE_NATIVE,
        weight: 1,
        correlation_id: 0,
        span_id: 0,
        local_root_span_id: 0,
        attrs: &[],
    });
    b.method_sample(&Sample {
        ticks: t + 3_000,
        tid: MAIN_TID,
        trace_key: WALL_TRACE,
        state: STATE_SLEEPING,
        mode: MODE_JAVA,
        weight: 3,
        correlation_id: 77,
        span_id: -5,
        local_root_span_id: i64::MAX,
        attrs: &[0, acme, 99],
    });
    // A tid never registered: gets a "[tid=N]" placeholder.
    b.method_sample(&Sample {
        ticks: t + 3_500,
        tid: UNNAMED_TID,
        trace_key: WALL_TRACE,
        state: STATE_PARKED,
        mode: MODE_UNKNOWN,
        weight: 1,
        correlation_id: 0,
        span_id: 0,
        local_root_span_id: 0,
        attrs: &[],
    });
    b.wall_clock_epoch(&WallClockEpoch {
        ticks: t + 3_600,
        duration_ms: 50,
        sample_pool_size: 16,
        num_successful_samples: 14,
        num_failed_samples: 1,
        num_exited_threads: 1,
        num_permission_denied: 0,
        num_suppressed_sampled_run: 3,
    });
    b.object_sample(&ObjectSample {
        ticks: t + 4_000,
        tid: WORKER_TID,
        trace_key: CPU_TRACE,
        object_class: string_class,
        size: 1 << 20,
        weight: 2.5,
        span_id: 11,
        local_root_span_id: 12,
        attrs: &[get, acme],
    });
    b.heap_live_object(&HeapLiveObject {
        ticks: t + 5_000,
        tid: WORKER_TID,
        trace_key: CPU_TRACE,
        object_class: array_class,
        age: 3,
        size: 4096,
        weight: 10.0,
        span_id: 0,
        local_root_span_id: 0,
        attrs: &[],
    });
    b.native_memory_allocation(&NativeAllocation {
        ticks: t + 6_000,
        tid: NATIVE_TID,
        trace_key: NATIVE_TRACE,
        address: 0xffff_8000_1234_5678,
        size: 256,
        weight: 1.0,
        span_id: 0,
        local_root_span_id: 0,
        attrs: &[],
    });
    if socket {
        b.native_socket_event(&NativeSocketSample {
            ticks: t + 7_000,
            tid: WORKER_TID,
            trace_key: CPU_TRACE,
            duration_ticks: 1_500,
            operation: "SEND",
            remote_address: "127.0.0.1:8080",
            bytes_transferred: 4096,
            weight: 1.25,
            span_id: 21,
            local_root_span_id: 22,
            attrs: &[get],
        });
    }
    b.queue_time(&QueueTime {
        ticks: t + 8_000,
        duration_ticks: 2_000,
        tid: WORKER_TID,
        origin_tid: MAIN_TID,
        task: string_class,
        scheduler: executor,
        queue_type: queue,
        queue_length: 5,
        span_id: 31,
        local_root_span_id: 32,
        attrs: &[get, acme],
    });
    b.endpoint(&Endpoint {
        ticks: t + 9_000,
        duration_ticks: 10_000,
        tid: WORKER_TID,
        trace_key: 0,
        endpoint,
        operation: get,
        local_root_span_id: 32,
    });
    b.cpu_load(t + 10_000, 0.25, 0.05, 0.75);
    b.heap_usage(t + 11_000, 123_456_789, true);
    b.log(t + 12_000, LOG_WARN, "something odd happened");

    // Chunk end.
    let long_value = "v".repeat(9000);
    b.profiler_setting(t + 20_000, MAIN_TID, "big.setting", &long_value, "");
    b.profiler_setting(t + 20_000, MAIN_TID, "upload.period", "60", "seconds");
    b.active_setting(t + 20_000, MAIN_TID, T_OBJECT_SAMPLE, "interval", "262144");
    b.profiler_config(&ProfilerConfig {
        ticks: t + 20_000,
        tid: MAIN_TID,
        cpu_interval_ms: 10,
        wall_interval_ms: 50,
        alloc_interval: 262144,
        memleak_interval: 524288,
        memleak_capacity: 2048,
        memleak_track_percent: 10,
        gc_generations: true,
        mode_mask: 1 | 2 | 8,
        version: "1.2.3",
        cpu_engine: "CTimer",
    });
    b.active_recording(&ActiveRecording {
        ticks: t,
        duration_ticks: 20_000,
        tid: MAIN_TID,
        id: 1,
        name: "java-profiler 1.2.3",
        destination: "/tmp/profile.jfr",
        max_age_ms: i64::MAX,
        flush_interval_ms: Some(0),
        max_size: 0,
        recording_start_ms: 1_700_000_000_123,
        recording_duration_ms: 20,
    });
    b.profiler_counter(t + 20_000, "calltrace_storage_traces", 3);
    b.profiler_counter(t + 20_000, "native_mem_live_bytes.calltrace", 1 << 40);
    b.class_ref_cache(t + 20_000, 8192);
    b.unwind_failure(t + 20_000, "stub", "vtable stub", 2);
    b.finish(t + 30_000, 30_000)
}

#[test]
fn full_chunk_header_and_framing() {
    let bytes = sample_chunk();
    if let Some(dir) = std::env::var_os("JFR_SAMPLE_DIR") {
        let dir = std::path::PathBuf::from(dir);
        let jdk_readable = sample_chunk_with(false);
        std::fs::write(dir.join("sample.jfr"), &jdk_readable).expect("write sample");
        std::fs::write(
            dir.join("two-chunks.jfr"),
            [&jdk_readable[..], &jdk_readable[..]].concat(),
        )
        .expect("write sample");
        std::fs::write(dir.join("socket.jfr"), &bytes).expect("write sample");
    }
    assert_eq!(&bytes[..4], b"FLR\0");
    let c = Chunk::parse(&bytes);
    assert_eq!((c.major, c.minor), (2, 0));
    assert_eq!(c.size as usize, bytes.len());
    assert_eq!(c.metadata_offset, 68);
    assert!(c.cpool_offset > 68 && (c.cpool_offset as usize) < bytes.len());
    assert_eq!(c.start_nanos, START.start_nanos);
    assert_eq!(c.duration_nanos, 30_000);
    assert_eq!(c.start_ticks, START.start_ticks);
    assert_eq!(c.ticks_per_second, START.ticks_per_second);
    assert_eq!(c.features, 1);
    assert_eq!(c.checkpoint_ticks, START.start_ticks + 30_000);
    // Raw header bytes, independently of the test reader.
    let be = |at: usize| i64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
    assert_eq!(u16::from_be_bytes([bytes[4], bytes[5]]), 2);
    assert_eq!(be(8), bytes.len() as i64);
    assert_eq!(be(24), 68);
    assert_eq!(&bytes[64..68], &[0, 0, 0, 1]);
    assert_eq!(c.metadata.region["locale"], "en_US");
    assert_eq!(c.metadata.start_ticks, START.start_ticks);
}

#[test]
fn full_chunk_pools() {
    let c = Chunk::parse(&sample_chunk());
    let order: Vec<i64> = c.pools.iter().map(|(t, _)| *t).collect();
    assert_eq!(
        order,
        [
            T_FRAME_TYPE,
            T_THREAD_STATE,
            T_EXECUTION_MODE,
            T_LOG_LEVEL,
            T_THREAD,
            T_STACK_TRACE,
            T_METHOD,
            T_CLASS,
            T_PACKAGE,
            T_SYMBOL,
            T_STRING,
            T_ATTRIBUTE_VALUE
        ]
    );
    assert_eq!(c.pool(T_FRAME_TYPE)[&1].str(), Some("JIT compiled"));
    assert_eq!(c.pool(T_FRAME_TYPE)[&6].str(), Some("C1 compiled"));
    assert_eq!(c.pool(T_THREAD_STATE)[&2].str(), Some("RUNNABLE"));
    assert_eq!(c.pool(T_THREAD_STATE).len(), 10);
    assert_eq!(c.pool(T_EXECUTION_MODE)[&5].str(), Some("SYSCALL"));
    assert_eq!(c.pool(T_LOG_LEVEL)[&3].str(), Some("WARN"));

    let threads = c.pool(T_THREAD);
    assert_eq!(threads.len(), 4);
    let main = threads[&(MAIN_TID as u64)].fields();
    assert_eq!(main[0].str(), Some("main"));
    assert_eq!(main[1].long(), MAIN_TID);
    assert_eq!(main[2].str(), Some("main"));
    assert_eq!(main[3].long(), 1);
    let gc = threads[&(NATIVE_TID as u64)].fields();
    assert_eq!(
        (gc[0].str(), gc[2].str(), gc[3].long()),
        (Some("gc-thread"), None, 0)
    );
    let unnamed = threads[&(UNNAMED_TID as u64)].fields();
    assert_eq!(unnamed[0].str(), Some("[tid=4299]"));

    let (truncated, frames) = c.frames(CPU_TRACE);
    assert!(!truncated);
    assert_eq!(
        frames,
        [
            "java.lang.String.hashCode()I 2301 17 Inlined",
            "com.example.Worker.compute(I[Ljava/lang/String;)J 42 5 JIT compiled",
            "jdk.internal.reflect.GeneratedMethodAccessor.Object jdk.internal.reflect.GeneratedMethodAccessor.invoke(Object, Object[])(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object; 0 3 JIT compiled",
            "java.lang.invoke.LambdaForm$MH.invoke(Ljava/lang/Object;)V 0 0 C1 compiled",
            "com.example.Worker.run()V 10 0 Interpreted",
        ]
    );
    let (truncated, frames) = c.frames(NATIVE_TRACE);
    assert!(truncated);
    assert_eq!(
        frames,
        [
            ".__memcpy_avx_unaligned()L; 0 0 Native",
            ".clone3(Lk;)L; 0 0 Kernel"
        ]
    );

    // Methods are unique per (class, name, descriptor); keys start at 1.
    let methods = c.pool(T_METHOD);
    assert_eq!(methods.len(), 8);
    assert!((1..=8).all(|k| methods.contains_key(&k)));
    let lambda = methods
        .values()
        .find(|m| m.fields()[4].bool())
        .expect("hidden method");
    assert_eq!(lambda.fields()[3].long(), 8);

    // Packages: java/lang, com/example, jdk/internal/reflect, java/lang/invoke,
    // java/util/concurrent; the native "" class has none.
    let packages: std::collections::HashSet<_> = c
        .pool(T_PACKAGE)
        .values()
        .map(|p| {
            c.pool(T_SYMBOL)[&p.fields()[0].reference()]
                .str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let want = [
        "java/lang",
        "com/example",
        "jdk/internal/reflect",
        "java/lang/invoke",
        "java/util/concurrent",
    ];
    assert_eq!(packages, want.iter().map(|s| s.to_string()).collect());
    let empty_class = c
        .pool(T_CLASS)
        .values()
        .find(|cl| c.pool(T_SYMBOL)[&cl.fields()[1].reference()].str() == Some(""))
        .unwrap();
    assert_eq!(empty_class.fields()[2].reference(), 0);

    assert_eq!(c.pool(T_ATTRIBUTE_VALUE)[&1].str(), Some("GET /users"));
    assert_eq!(c.pool(T_STRING)[&1].str(), Some("GET /users/{id}"));
}

#[test]
fn full_chunk_event_values() {
    let c = Chunk::parse(&sample_chunk());
    let count = |n: &str| c.events_named(n).count();
    for (name, n) in [
        ("jdk.ActiveSetting", 6),
        ("jdk.OSInformation", 1),
        ("jdk.CPUInformation", 1),
        ("jdk.JVMInformation", 1),
        ("jdk.InitialSystemProperty", 2),
        ("jdk.NativeLibrary", 1),
        ("datadog.ExecutionSample", 2),
        ("datadog.MethodSample", 2),
        ("datadog.WallClockSamplingEpoch", 1),
        ("datadog.ObjectSample", 1),
        ("datadog.HeapLiveObject", 1),
        ("datadog.NativeMemoryAllocation", 1),
        ("datadog.NativeSocketEvent", 1),
        ("datadog.QueueTime", 1),
        ("datadog.Endpoint", 1),
        ("jdk.CPULoad", 1),
        ("datadog.HeapUsage", 1),
        ("profiler.Log", 1),
        ("datadog.ProfilerSetting", 2),
        ("datadog.DatadogProfilerConfig", 1),
        ("jdk.ActiveRecording", 1),
        ("datadog.ProfilerCounter", 2),
        ("datadog.DatadogProfilerClassRefCache", 1),
        ("datadog.UnwindFailure", 1),
    ] {
        assert_eq!(count(name), n, "{name}");
    }

    let cpu = c.events_named("datadog.ExecutionSample").next().unwrap();
    assert_eq!(cpu.get("startTime").long(), START.start_ticks + 1_000);
    assert_eq!(cpu.get("eventThread").reference(), WORKER_TID as u64);
    assert_eq!(cpu.get("stackTrace").reference(), CPU_TRACE);
    assert_eq!(cpu.get("state").reference(), 2);
    assert_eq!(cpu.get("mode").reference(), 1);
    assert_eq!(cpu.get("spanId").long(), 1234567890123);
    assert_eq!(cpu.get("localRootSpanId").long(), 987654321);
    assert_eq!(
        (cpu.get("route").reference(), cpu.get("tenant").reference()),
        (1, 2)
    );

    // Short attribute lists are padded with "unset", long ones cut.
    let native = c.events_named("datadog.ExecutionSample").nth(1).unwrap();
    assert_eq!(
        (
            native.get("route").reference(),
            native.get("tenant").reference()
        ),
        (0, 0)
    );
    let wall = c.events_named("datadog.MethodSample").next().unwrap();
    assert_eq!(
        (
            wall.get("route").reference(),
            wall.get("tenant").reference()
        ),
        (0, 2)
    );
    assert_eq!(wall.get("spanId").long(), -5);
    assert_eq!(wall.get("localRootSpanId").long(), i64::MAX);
    assert_eq!(wall.get("weight").long(), 3);
    assert_eq!(wall.get("correlationId").long(), 77);

    let setting = c.events_named("datadog.ProfilerSetting").next().unwrap();
    assert_eq!(setting.get("value").str().unwrap().len(), MAX_STRING_BYTES);
    assert_eq!(setting.get("unit").str(), Some(""));
    assert_eq!(setting.get("stackTrace").reference(), 0);

    let cfg = c
        .events_named("datadog.DatadogProfilerConfig")
        .next()
        .unwrap();
    assert_eq!(cfg.get("cpuInterval").long(), 10);
    assert_eq!(cfg.get("wallInterval").long(), 50);
    assert!(cfg.get("gcGenerations").bool());
    assert_eq!(cfg.get("modeMask").long(), 11);
    assert_eq!(cfg.get("cpuEngine").str(), Some("CTimer"));

    let rec = c.events_named("jdk.ActiveRecording").next().unwrap();
    assert_eq!(rec.get("maxAge").long(), i64::MAX);
    assert_eq!(rec.get("flushInterval").long(), 0);
    assert_eq!(rec.get("recordingDuration").long(), 20);

    let counter = c.events_named("datadog.ProfilerCounter").nth(1).unwrap();
    assert_eq!(
        counter.get("name").str(),
        Some("native_mem_live_bytes.calltrace")
    );
    assert_eq!(counter.get("count").long(), 1 << 40);

    let lib = c.events_named("jdk.NativeLibrary").next().unwrap();
    assert_eq!(lib.get("topAddress").long(), 0x7f00_0020_0000);
    let alloc = c
        .events_named("datadog.NativeMemoryAllocation")
        .next()
        .unwrap();
    assert_eq!(alloc.get("address").long() as u64, 0xffff_8000_1234_5678);
    let obj = c.events_named("datadog.ObjectSample").next().unwrap();
    assert_eq!(obj.get("weight").float(), 2.5);
    let sock = c.events_named("datadog.NativeSocketEvent").next().unwrap();
    assert_eq!(sock.get("duration").long(), 1_500);
    assert_eq!(sock.get("remoteAddress").str(), Some("127.0.0.1:8080"));
    let q = c.events_named("datadog.QueueTime").next().unwrap();
    assert_eq!(q.get("origin").reference(), MAIN_TID as u64);
    assert_eq!(q.get("queueLength").long(), 5);
    let log = c.events_named("profiler.Log").next().unwrap();
    assert_eq!(log.get("level").reference(), u64::from(LOG_WARN));
    let props: Vec<_> = c
        .events_named("jdk.InitialSystemProperty")
        .map(|e| e.get("value").str().unwrap().to_owned())
        .collect();
    assert_eq!(props, ["Eclipse Adoptium", "ünïcødé"]);
    let settings: Vec<_> = c
        .events_named("jdk.ActiveSetting")
        .map(|e| {
            (
                e.get("id").long(),
                e.get("name").str().unwrap().to_owned(),
                e.get("value").str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(settings.contains(&(T_ACTIVE_RECORDING, "cstack".into(), "vm".into())));
    assert!(settings.contains(&(T_EXECUTION_SAMPLE, "interval".into(), "10000000".into())));
}

#[test]
fn events_follow_metadata_order_and_are_ordered_as_written() {
    let c = Chunk::parse(&sample_chunk());
    for e in &c.events {
        assert_eq!(c.metadata.by_id(e.type_id).name, e.name);
    }
    let offsets: Vec<_> = c.events.iter().map(|e| e.offset).collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(c.events.first().unwrap().name, "jdk.ActiveSetting");
    assert_eq!(c.events.last().unwrap().name, "datadog.UnwindFailure");
    // The 9000-byte setting needed a padded size; everything else is tiny.
    assert!(c.events.iter().any(|e| e.name == "datadog.ProfilerSetting"));
}

#[test]
fn minimal_chunk_without_threads_skips_empty_pools() {
    let b = ChunkBuilder::new(START, &[]);
    let bytes = b.finish(START.start_ticks, 0);
    let c = Chunk::parse(&bytes);
    assert!(c.events.is_empty());
    assert_eq!(c.pools.len(), 4);
    assert!(!c.has_pool(T_THREAD));
    assert!(c
        .metadata
        .class("jdk.ActiveRecording")
        .fields
        .iter()
        .any(|f| f.name == "flushInterval"));
}

#[test]
fn pre_jdk14_recording_omits_flush_interval() {
    let mut b = ChunkBuilder::new(START, &[]);
    b.add_thread(1, "main", Some("main"), 1);
    let rec = ActiveRecording {
        ticks: 1,
        duration_ticks: 2,
        tid: 1,
        id: 1,
        name: "java-profiler 1.0",
        destination: "x.jfr",
        max_age_ms: 0,
        flush_interval_ms: None,
        max_size: 0,
        recording_start_ms: 3,
        recording_duration_ms: 4,
    };
    b.active_recording(&rec);
    // A later Some cannot change the already-chosen layout.
    b.active_recording(&ActiveRecording {
        flush_interval_ms: Some(5),
        ..rec
    });
    let c = Chunk::parse(&b.finish(10, 10));
    assert!(!c
        .metadata
        .class("jdk.ActiveRecording")
        .fields
        .iter()
        .any(|f| f.name == "flushInterval"));
    let recs: Vec<_> = c.events_named("jdk.ActiveRecording").collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[1].get("recordingDuration").long(), 4);
}

#[test]
fn many_stack_traces_and_methods() {
    let mut b = ChunkBuilder::new(START, &[]);
    b.add_thread(1, "t", Some("t"), 1);
    for i in 0..2000u64 {
        let m = b.intern_method(
            &format!("p{}/C{}", i % 7, i % 70),
            &format!("m{}", i % 300),
            "()V",
            1,
            false,
        );
        b.add_stack_trace(
            i + 1,
            false,
            &[FrameRef {
                method: m,
                line: i as i32,
                bci: -1,
                frame_type: frame_type::JIT_COMPILED,
            }],
        );
        b.execution_sample(&Sample {
            ticks: i as i64,
            tid: 1,
            trace_key: i + 1,
            state: STATE_RUNNABLE,
            mode: MODE_JAVA,
            weight: 1,
            correlation_id: 0,
            span_id: 0,
            local_root_span_id: 0,
            attrs: &[],
        });
    }
    let c = Chunk::parse(&b.finish(0, 0));
    assert_eq!(c.pool(T_STACK_TRACE).len(), 2000);
    assert_eq!(c.pool(T_CLASS).len(), 70);
    assert_eq!(c.pool(T_PACKAGE).len(), 7);
    // Negative ints (bci -1) survive the round trip.
    let (_, frames) = c.frames(17);
    assert!(frames[0].ends_with(" 16 -1 JIT compiled"), "{}", frames[0]);
    assert_eq!(c.events.len(), 2000);
}

/// Native frames interned with their class and descriptor kept (`intern_native_method`) make
/// the chunk `intern_method` makes, byte for byte, mixed with Java and kernel methods.
#[test]
fn native_methods_interned_with_a_kept_shape_write_the_same_chunk() {
    let build = |shaped: bool| {
        let mut b = ChunkBuilder::new(START, &[]);
        let mut shape = None;
        let mut keys = Vec::new();
        for i in 0..50 {
            if i % 7 == 3 {
                keys.push(b.intern_method("java/lang/Thread", &format!("m{i}"), "()V", 1, false));
            }
            if i % 11 == 5 {
                keys.push(b.intern_method("", &format!("k{i}"), "(Lk;)L;", 0x100, false));
            }
            // Names met again, and the same name as a Java frame's "unknown".
            let name = if i % 5 == 4 {
                "unknown".to_owned()
            } else {
                format!("n{}", i % 30)
            };
            keys.push(if shaped {
                b.intern_native_method(&mut shape, &name)
            } else {
                b.intern_method("", &name, "()L;", 0x100, false)
            });
        }
        let frames: Vec<FrameRef> = keys
            .iter()
            .map(|&method| FrameRef {
                method,
                line: 0,
                bci: 0,
                frame_type: frame_type::NATIVE,
            })
            .collect();
        b.add_stack_trace(1, false, &frames);
        (keys, b.finish(0, 0))
    };
    let (plain_keys, plain) = build(false);
    let (shaped_keys, shaped) = build(true);
    assert_eq!(shaped_keys, plain_keys);
    assert_eq!(shaped, plain);
}
