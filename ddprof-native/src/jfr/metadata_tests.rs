use super::*;
use std::collections::HashSet;

#[test]
fn ids_and_names_are_unique() {
    let ids: HashSet<_> = TYPES.iter().map(|t| t.id).collect();
    let names: HashSet<_> = TYPES.iter().map(|t| t.name).collect();
    assert_eq!(ids.len(), TYPES.len());
    assert_eq!(names.len(), TYPES.len());
}

#[test]
fn every_referenced_type_is_declared() {
    for t in TYPES {
        for f in t.fields {
            assert!(
                type_def(f.ty).is_some(),
                "{}.{} -> {}",
                t.name,
                f.name,
                f.ty
            );
        }
    }
}

#[test]
fn contract_event_ids_are_declared_and_header_only_ids_are_not() {
    for id in [
        101, 102, 103, 105, 108, 109, 110, 111, 112, 114, 115, 116, 117, 118, 119, 120, 121, 122,
        123, 124, 125, 126, 127, 128,
    ] {
        let t = type_def(id).unwrap_or_else(|| panic!("event {id} missing"));
        assert_eq!(t.fields[0].name, "startTime", "{}", t.name);
        assert_eq!(t.fields[0].unit, Unit::Ticks);
    }
    for id in [106, 107, 113] {
        assert!(type_def(id).is_none());
    }
}

#[test]
fn unit_annotations_match_contract() {
    let unit = |id: i64, name: &str| {
        type_def(id)
            .unwrap()
            .fields
            .iter()
            .find(|f| f.name == name)
            .unwrap()
            .unit
    };
    for id in [
        T_ACTIVE_SETTING,
        T_ACTIVE_RECORDING,
        T_ENDPOINT,
        T_QUEUE_TIME,
        T_NATIVE_SOCKET_EVENT,
        T_PROFILER_SETTING,
        T_PROFILER_CONFIG,
    ] {
        assert_eq!(unit(id, "duration"), Unit::SpanTicks);
    }
    assert_eq!(unit(T_PROFILER_CONFIG, "cpuInterval"), Unit::SpanMillis);
    assert_eq!(unit(T_PROFILER_CONFIG, "wallInterval"), Unit::SpanMillis);
    assert_eq!(unit(T_WALL_CLOCK_EPOCH, "duration"), Unit::SpanMillis);
    assert_eq!(unit(T_ACTIVE_RECORDING, "maxAge"), Unit::SpanMillis);
    assert_eq!(unit(T_ACTIVE_RECORDING, "flushInterval"), Unit::SpanMillis);
    assert_eq!(
        unit(T_ACTIVE_RECORDING, "recordingDuration"),
        Unit::SpanMillis
    );
    assert_eq!(
        unit(T_ACTIVE_RECORDING, "recordingStart"),
        Unit::EpochMillis
    );
    assert_eq!(unit(T_JVM_INFORMATION, "jvmStartTime"), Unit::EpochMillis);
    for (id, f) in [
        (T_OBJECT_SAMPLE, "size"),
        (T_HEAP_LIVE_OBJECT, "size"),
        (T_NATIVE_MEMORY_ALLOCATION, "size"),
        (T_PROFILER_CONFIG, "allocInterval"),
        (T_PROFILER_CONFIG, "memleakInterval"),
        (T_NATIVE_SOCKET_EVENT, "bytesTransferred"),
        (T_ACTIVE_RECORDING, "maxSize"),
        (T_HEAP_USAGE, "size"),
    ] {
        assert_eq!(unit(id, f), Unit::Bytes, "{f}");
    }
    for (id, f) in [
        (T_NATIVE_MEMORY_ALLOCATION, "address"),
        (T_NATIVE_LIBRARY, "baseAddress"),
        (T_NATIVE_LIBRARY, "topAddress"),
        (T_NATIVE_LIBRARY, "loadBias"),
    ] {
        assert_eq!(unit(id, f), Unit::Address, "{f}");
    }
    for f in ["jvmUser", "jvmSystem", "machineTotal"] {
        assert_eq!(unit(T_CPU_LOAD, f), Unit::Percentage);
    }
}

#[test]
fn metadata_event_is_self_consistent() {
    let attrs = vec!["route".to_owned(), "tenant".to_owned()];
    let mut out = Vec::new();
    write_metadata_event(
        &mut out,
        42,
        &Layout {
            attributes: &attrs,
            flush_interval: true,
        },
    );
    let meta = crate::jfr::reader::Metadata::parse(&out);
    assert_eq!(meta.start_ticks, 42);
    let sample = meta.class("datadog.ExecutionSample");
    let names: Vec<_> = sample.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "startTime",
            "eventThread",
            "stackTrace",
            "state",
            "mode",
            "weight",
            "correlationId",
            "spanId",
            "localRootSpanId",
            "route",
            "tenant"
        ]
    );
    assert!(sample.fields[9].cpool && sample.fields[9].class == T_ATTRIBUTE_VALUE);
    assert_eq!(sample.super_type.as_deref(), Some("jdk.jfr.Event"));
    assert_eq!(
        meta.class("jdk.jfr.Label").super_type.as_deref(),
        Some("java.lang.annotation.Annotation")
    );
    assert!(meta.class("jdk.types.Symbol").simple);
    let field = |class: &str, name: &str| {
        meta.class(class)
            .fields
            .iter()
            .find(|f| f.name == name)
            .unwrap()
            .annotations
            .clone()
    };
    assert_eq!(
        field("datadog.ExecutionSample", "startTime"),
        [(T_TIMESTAMP, Some("TICKS".to_owned()))]
    );
    assert_eq!(
        field("datadog.ObjectSample", "size"),
        [
            (T_UNSIGNED, None),
            (T_DATA_AMOUNT, Some("BYTES".to_owned()))
        ]
    );
    assert_eq!(
        field("jdk.NativeLibrary", "loadBias"),
        [(T_UNSIGNED, None), (T_MEMORY_ADDRESS, None)]
    );
    assert_eq!(
        field("datadog.DatadogProfilerConfig", "cpuInterval"),
        [(T_TIMESPAN, Some("MILLISECONDS".to_owned()))]
    );
    assert!(meta
        .class("jdk.ActiveRecording")
        .fields
        .iter()
        .any(|f| f.name == "flushInterval"));
    // Non-sample events do not take attributes.
    assert_eq!(meta.class("jdk.ActiveSetting").fields.len(), 7);

    let mut out = Vec::new();
    write_metadata_event(
        &mut out,
        0,
        &Layout {
            attributes: &[],
            flush_interval: false,
        },
    );
    let meta = crate::jfr::reader::Metadata::parse(&out);
    assert!(!meta
        .class("jdk.ActiveRecording")
        .fields
        .iter()
        .any(|f| f.name == "flushInterval"));
    assert_eq!(meta.class("datadog.MethodSample").fields.len(), 9);
}
