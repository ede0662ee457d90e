//! The type and event table (docs/jfr-format.md 6, 7) and its metadata-event form.
//!
//! Readers take every field layout from this table, so it is the single
//! source of truth for wire order: the event writers in `chunk.rs` must emit
//! fields exactly in the order declared here.

use super::buffer::{patch_padded_varint, put_long, put_string, put_varint, PADDED_VARINT_LEN};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub const T_METADATA: i64 = 0;
pub const T_CPOOL: i64 = 1;

pub const T_BOOLEAN: i64 = 4;
pub const T_CHAR: i64 = 5;
pub const T_FLOAT: i64 = 6;
pub const T_DOUBLE: i64 = 7;
pub const T_BYTE: i64 = 8;
pub const T_SHORT: i64 = 9;
pub const T_INT: i64 = 10;
pub const T_LONG: i64 = 11;

pub const T_STRING: i64 = 20;
pub const T_CLASS: i64 = 21;
pub const T_THREAD: i64 = 22;
pub const T_CLASS_LOADER: i64 = 23;
pub const T_FRAME_TYPE: i64 = 24;
pub const T_THREAD_STATE: i64 = 25;
pub const T_STACK_TRACE: i64 = 26;
pub const T_STACK_FRAME: i64 = 27;
pub const T_METHOD: i64 = 28;
pub const T_PACKAGE: i64 = 29;
pub const T_SYMBOL: i64 = 30;
pub const T_LOG_LEVEL: i64 = 31;
pub const T_ATTRIBUTE_VALUE: i64 = 32;
pub const T_EXECUTION_MODE: i64 = 33;
pub const T_COUNTER_NAME: i64 = 34;

pub const T_EXECUTION_SAMPLE: i64 = 101;
pub const T_METHOD_SAMPLE: i64 = 102;
pub const T_OBJECT_SAMPLE: i64 = 103;
pub const T_HEAP_LIVE_OBJECT: i64 = 105;
pub const T_CPU_LOAD: i64 = 108;
pub const T_ACTIVE_RECORDING: i64 = 109;
pub const T_ACTIVE_SETTING: i64 = 110;
pub const T_OS_INFORMATION: i64 = 111;
pub const T_CPU_INFORMATION: i64 = 112;
pub const T_JVM_INFORMATION: i64 = 114;
pub const T_INITIAL_SYSTEM_PROPERTY: i64 = 115;
pub const T_NATIVE_LIBRARY: i64 = 116;
pub const T_LOG: i64 = 117;
pub const T_WALL_CLOCK_EPOCH: i64 = 118;
pub const T_ENDPOINT: i64 = 119;
pub const T_PROFILER_SETTING: i64 = 120;
pub const T_HEAP_USAGE: i64 = 121;
pub const T_PROFILER_CONFIG: i64 = 122;
pub const T_QUEUE_TIME: i64 = 123;
pub const T_CLASS_REF_CACHE: i64 = 124;
pub const T_PROFILER_COUNTER: i64 = 125;
pub const T_UNWIND_FAILURE: i64 = 126;
pub const T_NATIVE_MEMORY_ALLOCATION: i64 = 127;
pub const T_NATIVE_SOCKET_EVENT: i64 = 128;
/// Ours, not upstream's: the trace a local root span belongs to (docs/jfr-format.md).
pub const T_TRACE_LINK: i64 = 129;
/// ddprof's own: the free of a block a `datadog.NativeMemoryAllocation` sampled (`convert --leak`).
pub const T_NATIVE_MEMORY_FREE: i64 = 130;
/// Declared, never written: the JDK's `jfr view recording` reads `jdk.Shutdown.reason` and fails on a
/// recording whose metadata lacks the type (docs/jfr-format.md).
pub const T_SHUTDOWN: i64 = 131;
/// The JDK's own CPU sample, written beside `datadog.ExecutionSample` under `jdksamples`.
pub const T_JDK_EXECUTION_SAMPLE: i64 = 132;

pub const T_LABEL: i64 = 201;
pub const T_CATEGORY: i64 = 202;
pub const T_TIMESTAMP: i64 = 203;
pub const T_TIMESPAN: i64 = 204;
pub const T_DATA_AMOUNT: i64 = 205;
pub const T_MEMORY_ADDRESS: i64 = 206;
pub const T_UNSIGNED: i64 = 207;
pub const T_PERCENTAGE: i64 = 208;

/// Ids above these thresholds get the matching `superType` (docs/jfr-format.md 4).
const FIRST_EVENT_ID: i64 = 100;
const FIRST_ANNOTATION_ID: i64 = 200;

/// Unit annotations (docs/jfr-format.md 6, units).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Unit {
    None,
    /// `Timestamp("TICKS")`
    Ticks,
    /// `Timespan("TICKS")`
    SpanTicks,
    /// `Timespan("MILLISECONDS")`
    SpanMillis,
    /// `Timestamp("MILLISECONDS_SINCE_EPOCH")`
    EpochMillis,
    /// `Unsigned` + `DataAmount("BYTES")`
    Bytes,
    /// `Unsigned` + `MemoryAddress`
    Address,
    Unsigned,
    Percentage,
}

#[derive(Clone, Copy, Debug)]
pub struct FieldDef {
    pub name: &'static str,
    pub ty: i64,
    pub cpool: bool,
    pub array: bool,
    pub unit: Unit,
    /// Declared only when the target JVM is JDK 14+ (jdk.ActiveRecording).
    pub jdk14_only: bool,
}

const fn field(name: &'static str, ty: i64) -> FieldDef {
    FieldDef {
        name,
        ty,
        cpool: false,
        array: false,
        unit: Unit::None,
        jdk14_only: false,
    }
}

impl FieldDef {
    const fn cp(mut self) -> Self {
        self.cpool = true;
        self
    }
    const fn array(mut self) -> Self {
        self.array = true;
        self
    }
    const fn unit(mut self, unit: Unit) -> Self {
        self.unit = unit;
        self
    }
    const fn jdk14(mut self) -> Self {
        self.jdk14_only = true;
        self
    }
}

#[derive(Debug)]
pub struct TypeDef {
    pub name: &'static str,
    pub id: i64,
    pub label: Option<&'static str>,
    pub simple: bool,
    pub category: &'static [&'static str],
    pub fields: &'static [FieldDef],
    /// Gets one trailing AttributeValue cp field per context attribute.
    pub context_attributes: bool,
}

const fn ty(name: &'static str, id: i64, fields: &'static [FieldDef]) -> TypeDef {
    TypeDef {
        name,
        id,
        label: None,
        simple: false,
        category: &[],
        fields,
        context_attributes: false,
    }
}

impl TypeDef {
    const fn simple(mut self) -> Self {
        self.simple = true;
        self
    }
    const fn label(mut self, label: &'static str) -> Self {
        self.label = Some(label);
        self
    }
    const fn event(mut self, label: &'static str, category: &'static [&'static str]) -> Self {
        self.label = Some(label);
        self.category = category;
        self
    }
    const fn with_attributes(mut self) -> Self {
        self.context_attributes = true;
        self
    }
}

const START_TIME: FieldDef = field("startTime", T_LONG).unit(Unit::Ticks);
const DURATION: FieldDef = field("duration", T_LONG).unit(Unit::SpanTicks);
const EVENT_THREAD: FieldDef = field("eventThread", T_THREAD).cp();
const STACK_TRACE: FieldDef = field("stackTrace", T_STACK_TRACE).cp();
const SPAN_ID: FieldDef = field("spanId", T_LONG);
const LOCAL_ROOT_SPAN_ID: FieldDef = field("localRootSpanId", T_LONG);
const STRING_VALUE: [FieldDef; 1] = [field("value", T_STRING)];

const SAMPLE_FIELDS: &[FieldDef] = &[
    START_TIME,
    EVENT_THREAD,
    STACK_TRACE,
    field("state", T_THREAD_STATE).cp(),
    field("mode", T_EXECUTION_MODE).cp(),
    field("weight", T_LONG),
    field("correlationId", T_LONG),
    SPAN_ID,
    LOCAL_ROOT_SPAN_ID,
];

const PROFILING: &[&str] = &["Datadog", "Profiling"];
const DATADOG: &[&str] = &["Datadog"];
const RECORDER: &[&str] = &["Flight Recorder"];
const JVM: &[&str] = &["Java Virtual Machine"];
const PROCESSOR: &[&str] = &["Operating System", "Processor"];

/// Every type the chunk declares, in declaration order.
pub static TYPES: &[TypeDef] = &[
    ty("boolean", T_BOOLEAN, &[]),
    ty("char", T_CHAR, &[]),
    ty("float", T_FLOAT, &[]),
    ty("double", T_DOUBLE, &[]),
    ty("byte", T_BYTE, &[]),
    ty("short", T_SHORT, &[]),
    ty("int", T_INT, &[]),
    ty("long", T_LONG, &[]),
    ty("java.lang.String", T_STRING, &[]),
    ty(
        "java.lang.Class",
        T_CLASS,
        &[
            field("classLoader", T_CLASS_LOADER).cp(),
            field("name", T_SYMBOL).cp(),
            field("package", T_PACKAGE).cp(),
            field("modifiers", T_INT),
        ],
    )
    .label("Java Class"),
    ty(
        "java.lang.Thread",
        T_THREAD,
        &[
            field("osName", T_STRING),
            field("osThreadId", T_LONG),
            field("javaName", T_STRING),
            field("javaThreadId", T_LONG),
        ],
    )
    .label("Thread"),
    ty(
        "jdk.types.ClassLoader",
        T_CLASS_LOADER,
        &[field("type", T_CLASS).cp(), field("name", T_SYMBOL).cp()],
    )
    .label("Java Class Loader"),
    ty(
        "jdk.types.FrameType",
        T_FRAME_TYPE,
        &[field("description", T_STRING)],
    )
    .simple()
    .label("Frame Type"),
    ty(
        "jdk.types.ThreadState",
        T_THREAD_STATE,
        &[field("name", T_STRING)],
    )
    .simple()
    .label("Java Thread State"),
    ty(
        "jdk.types.StackTrace",
        T_STACK_TRACE,
        &[
            field("truncated", T_BOOLEAN),
            field("frames", T_STACK_FRAME).array(),
        ],
    )
    .label("Stack Trace"),
    ty(
        "jdk.types.StackFrame",
        T_STACK_FRAME,
        &[
            field("method", T_METHOD).cp(),
            field("lineNumber", T_INT),
            field("bytecodeIndex", T_INT),
            field("type", T_FRAME_TYPE).cp(),
        ],
    )
    .label("Stack Frame"),
    ty(
        "jdk.types.Method",
        T_METHOD,
        &[
            field("type", T_CLASS).cp(),
            field("name", T_SYMBOL).cp(),
            field("descriptor", T_SYMBOL).cp(),
            field("modifiers", T_INT),
            field("hidden", T_BOOLEAN),
        ],
    )
    .label("Java Method"),
    ty(
        "jdk.types.Package",
        T_PACKAGE,
        &[field("name", T_SYMBOL).cp()],
    )
    .label("Package"),
    ty("jdk.types.Symbol", T_SYMBOL, &[field("string", T_STRING)])
        .simple()
        .label("Symbol"),
    ty(
        "profiler.types.LogLevel",
        T_LOG_LEVEL,
        &[field("name", T_STRING)],
    )
    .simple()
    .label("Log Level"),
    ty(
        "profiler.types.AttributeValue",
        T_ATTRIBUTE_VALUE,
        &STRING_VALUE,
    )
    .simple()
    .label("Context Value"),
    ty(
        "datadog.types.ExecutionMode",
        T_EXECUTION_MODE,
        &[field("name", T_STRING)],
    )
    .simple()
    .label("Execution Mode"),
    ty("profiler.types.CounterName", T_COUNTER_NAME, &STRING_VALUE)
        .simple()
        .label("Counter Name"),
    // Events (docs/jfr-format.md 7).
    ty("datadog.ExecutionSample", T_EXECUTION_SAMPLE, SAMPLE_FIELDS)
        .event("CPU Profiling Sample", PROFILING)
        .with_attributes(),
    // The JDK's layout (sampledThread, not eventThread), so that `jfr view hot-methods` and
    // JMC's Method Profiling page and rules, which know only this event, find the CPU samples.
    ty(
        "jdk.ExecutionSample",
        T_JDK_EXECUTION_SAMPLE,
        &[
            START_TIME,
            field("sampledThread", T_THREAD).cp(),
            STACK_TRACE,
            field("state", T_THREAD_STATE).cp(),
        ],
    )
    .event("Method Profiling Sample", &["Java Application"]),
    ty("datadog.MethodSample", T_METHOD_SAMPLE, SAMPLE_FIELDS)
        .event("Wall-Clock Profiling Sample", PROFILING)
        .with_attributes(),
    ty(
        "datadog.WallClockSamplingEpoch",
        T_WALL_CLOCK_EPOCH,
        &[
            START_TIME,
            field("duration", T_LONG).unit(Unit::SpanMillis),
            field("samplePoolSize", T_INT),
            field("numSuccessfulSamples", T_INT),
            field("numFailedSamples", T_INT),
            field("numExitedThreads", T_INT),
            field("numPermissionDenied", T_INT),
            field("numSuppressedSampledRun", T_LONG),
        ],
    )
    .event("Wall-Clock Sampling Epoch", PROFILING),
    ty(
        "datadog.ObjectSample",
        T_OBJECT_SAMPLE,
        &[
            START_TIME,
            EVENT_THREAD,
            STACK_TRACE,
            field("objectClass", T_CLASS).cp(),
            field("size", T_LONG).unit(Unit::Bytes),
            field("weight", T_FLOAT),
            SPAN_ID,
            LOCAL_ROOT_SPAN_ID,
        ],
    )
    .event("Allocation Sample", PROFILING)
    .with_attributes(),
    ty(
        "datadog.HeapLiveObject",
        T_HEAP_LIVE_OBJECT,
        &[
            START_TIME,
            EVENT_THREAD,
            STACK_TRACE,
            field("objectClass", T_CLASS).cp(),
            field("age", T_LONG).unit(Unit::Unsigned),
            field("size", T_LONG).unit(Unit::Bytes),
            field("weight", T_FLOAT),
            SPAN_ID,
            LOCAL_ROOT_SPAN_ID,
        ],
    )
    .event("Live Heap Object", PROFILING)
    .with_attributes(),
    ty(
        "datadog.Endpoint",
        T_ENDPOINT,
        &[
            START_TIME,
            DURATION,
            EVENT_THREAD,
            STACK_TRACE,
            field("endpoint", T_STRING).cp(),
            field("operation", T_ATTRIBUTE_VALUE).cp(),
            LOCAL_ROOT_SPAN_ID,
        ],
    )
    .event("Endpoint", DATADOG),
    ty(
        "datadog.TraceLink",
        T_TRACE_LINK,
        &[
            START_TIME,
            LOCAL_ROOT_SPAN_ID,
            field("traceIdHigh", T_LONG),
            field("traceIdLow", T_LONG),
        ],
    )
    .event("Trace Link", DATADOG),
    ty(
        "datadog.QueueTime",
        T_QUEUE_TIME,
        &[
            START_TIME,
            DURATION,
            EVENT_THREAD,
            field("origin", T_THREAD).cp(),
            field("task", T_CLASS).cp(),
            field("scheduler", T_CLASS).cp(),
            field("queueType", T_CLASS).cp(),
            field("queueLength", T_INT),
            SPAN_ID,
            LOCAL_ROOT_SPAN_ID,
        ],
    )
    .event("Queue Time", DATADOG)
    .with_attributes(),
    ty(
        "datadog.HeapUsage",
        T_HEAP_USAGE,
        &[
            START_TIME,
            field("size", T_LONG).unit(Unit::Bytes),
            field("isLive", T_BOOLEAN),
        ],
    )
    .event("Heap Usage", DATADOG),
    ty(
        "jdk.CPULoad",
        T_CPU_LOAD,
        &[
            START_TIME,
            field("jvmUser", T_FLOAT).unit(Unit::Percentage),
            field("jvmSystem", T_FLOAT).unit(Unit::Percentage),
            field("machineTotal", T_FLOAT).unit(Unit::Percentage),
        ],
    )
    .event("CPU Load", PROCESSOR),
    ty(
        "jdk.ActiveRecording",
        T_ACTIVE_RECORDING,
        &[
            START_TIME,
            DURATION,
            EVENT_THREAD,
            STACK_TRACE,
            field("id", T_LONG),
            field("name", T_STRING),
            field("destination", T_STRING),
            field("maxAge", T_LONG).unit(Unit::SpanMillis),
            field("flushInterval", T_LONG)
                .unit(Unit::SpanMillis)
                .jdk14(),
            field("maxSize", T_LONG).unit(Unit::Bytes),
            field("recordingStart", T_LONG).unit(Unit::EpochMillis),
            field("recordingDuration", T_LONG).unit(Unit::SpanMillis),
        ],
    )
    .event("Profiler Recording", RECORDER),
    ty(
        "jdk.ActiveSetting",
        T_ACTIVE_SETTING,
        &[
            START_TIME,
            DURATION,
            EVENT_THREAD,
            STACK_TRACE,
            field("id", T_LONG),
            field("name", T_STRING),
            field("value", T_STRING),
        ],
    )
    .event("Profiler Setting", RECORDER),
    ty(
        "datadog.ProfilerSetting",
        T_PROFILER_SETTING,
        &[
            START_TIME,
            DURATION,
            EVENT_THREAD,
            STACK_TRACE,
            field("name", T_STRING),
            field("value", T_STRING),
            field("unit", T_STRING),
        ],
    )
    .event("Profiler Configuration Setting", DATADOG),
    ty(
        "datadog.DatadogProfilerConfig",
        T_PROFILER_CONFIG,
        &[
            START_TIME,
            DURATION,
            EVENT_THREAD,
            field("cpuInterval", T_LONG).unit(Unit::SpanMillis),
            field("wallInterval", T_LONG).unit(Unit::SpanMillis),
            field("allocInterval", T_LONG).unit(Unit::Bytes),
            field("memleakInterval", T_LONG).unit(Unit::Bytes),
            field("memleakCapacity", T_LONG),
            field("memleakTrackPercent", T_LONG),
            field("gcGenerations", T_BOOLEAN),
            field("modeMask", T_INT),
            field("version", T_STRING),
            field("cpuEngine", T_STRING),
        ],
    )
    .event("Profiler Configuration", DATADOG),
    ty(
        "datadog.DatadogProfilerClassRefCache",
        T_CLASS_REF_CACHE,
        &[START_TIME, field("size", T_LONG).unit(Unit::Bytes)],
    )
    .event("Class Reference Cache", DATADOG),
    // `name` is an inline CounterName struct, whose only field is a string,
    // so on the wire it is just that string.
    ty(
        "datadog.ProfilerCounter",
        T_PROFILER_COUNTER,
        &[
            START_TIME,
            field("name", T_COUNTER_NAME),
            field("count", T_LONG),
        ],
    )
    .event("Profiler Counter", DATADOG),
    ty(
        "datadog.UnwindFailure",
        T_UNWIND_FAILURE,
        &[
            START_TIME,
            field("kind", T_STRING),
            field("name", T_STRING),
            field("count", T_LONG),
        ],
    )
    .event("Unwind Failure", DATADOG),
    ty(
        "datadog.NativeMemoryAllocation",
        T_NATIVE_MEMORY_ALLOCATION,
        &[
            START_TIME,
            EVENT_THREAD,
            STACK_TRACE,
            field("address", T_LONG).unit(Unit::Address),
            field("size", T_LONG).unit(Unit::Bytes),
            field("weight", T_FLOAT),
            SPAN_ID,
            LOCAL_ROOT_SPAN_ID,
        ],
    )
    .event("Native Memory Allocation", PROFILING)
    .with_attributes(),
    ty(
        "datadog.NativeMemoryFree",
        T_NATIVE_MEMORY_FREE,
        &[
            START_TIME,
            EVENT_THREAD,
            field("address", T_LONG).unit(Unit::Address),
        ],
    )
    .event("Native Memory Free", PROFILING),
    // Upstream places `duration` fourth here. The JDK's parser takes the
    // second field of any event with a `duration` for it (JDK 11 then fails
    // on the whole file, later ones misread the event), so ours is second:
    // the same fields by name, which is all metadata-driven readers (JMC,
    // the Datadog backend) go by.
    ty(
        "datadog.NativeSocketEvent",
        T_NATIVE_SOCKET_EVENT,
        &[
            START_TIME,
            DURATION,
            EVENT_THREAD,
            STACK_TRACE,
            field("operation", T_STRING),
            field("remoteAddress", T_STRING),
            field("bytesTransferred", T_LONG).unit(Unit::Bytes),
            field("weight", T_FLOAT),
            SPAN_ID,
            LOCAL_ROOT_SPAN_ID,
        ],
    )
    .event("Native Socket I/O", PROFILING)
    .with_attributes(),
    ty(
        "jdk.OSInformation",
        T_OS_INFORMATION,
        &[START_TIME, field("osVersion", T_STRING)],
    )
    .event("OS Information", &["Operating System"]),
    ty(
        "jdk.CPUInformation",
        T_CPU_INFORMATION,
        &[
            START_TIME,
            field("cpu", T_STRING),
            field("description", T_STRING),
            field("sockets", T_INT).unit(Unit::Unsigned),
            field("cores", T_INT).unit(Unit::Unsigned),
            field("hwThreads", T_INT).unit(Unit::Unsigned),
        ],
    )
    .event("CPU Information", PROCESSOR),
    ty(
        "jdk.JVMInformation",
        T_JVM_INFORMATION,
        &[
            START_TIME,
            field("jvmName", T_STRING),
            field("jvmVersion", T_STRING),
            field("jvmArguments", T_STRING),
            field("jvmFlags", T_STRING),
            field("javaArguments", T_STRING),
            field("jvmStartTime", T_LONG).unit(Unit::EpochMillis),
            field("pid", T_LONG),
        ],
    )
    .event("JVM Information", JVM),
    ty(
        "jdk.InitialSystemProperty",
        T_INITIAL_SYSTEM_PROPERTY,
        &[START_TIME, field("key", T_STRING), field("value", T_STRING)],
    )
    .event("Initial System Property", JVM),
    ty(
        "jdk.NativeLibrary",
        T_NATIVE_LIBRARY,
        &[
            START_TIME,
            field("name", T_STRING),
            field("baseAddress", T_LONG).unit(Unit::Address),
            field("topAddress", T_LONG).unit(Unit::Address),
            field("buildId", T_STRING),
            field("loadBias", T_LONG).unit(Unit::Address),
        ],
    )
    .event("Native Library", &["Java Virtual Machine", "Runtime"]),
    ty(
        "jdk.Shutdown",
        T_SHUTDOWN,
        &[START_TIME, field("reason", T_STRING)],
    )
    .event("JVM Shutdown", JVM),
    ty(
        "profiler.Log",
        T_LOG,
        &[
            START_TIME,
            field("level", T_LOG_LEVEL).cp(),
            field("message", T_STRING),
        ],
    )
    .event("Profiler Log Message", &["Profiler"]),
    // Annotations.
    ty("jdk.jfr.Label", T_LABEL, &STRING_VALUE),
    ty(
        "jdk.jfr.Category",
        T_CATEGORY,
        &[field("value", T_STRING).array()],
    ),
    ty("jdk.jfr.Timestamp", T_TIMESTAMP, &STRING_VALUE),
    ty("jdk.jfr.Timespan", T_TIMESPAN, &STRING_VALUE),
    ty("jdk.jfr.DataAmount", T_DATA_AMOUNT, &STRING_VALUE),
    ty("jdk.jfr.MemoryAddress", T_MEMORY_ADDRESS, &[]),
    ty("jdk.jfr.Unsigned", T_UNSIGNED, &[]),
    ty("jdk.jfr.Percentage", T_PERCENTAGE, &[]),
];

/// Per-chunk choices that change the declared layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout<'a> {
    /// Context attribute names, appended to the event types that take them.
    pub attributes: &'a [String],
    /// Whether jdk.ActiveRecording declares `flushInterval`.
    pub flush_interval: bool,
}

/// One node of the metadata element tree.
struct Element {
    name: &'static str,
    attrs: Vec<(&'static str, String)>,
    children: Vec<Element>,
}

impl Element {
    fn new(name: &'static str) -> Self {
        Element {
            name,
            attrs: Vec::new(),
            children: Vec::new(),
        }
    }
    fn attr(mut self, key: &'static str, value: impl Into<String>) -> Self {
        self.attrs.push((key, value.into()));
        self
    }
    fn child(mut self, child: Element) -> Self {
        self.children.push(child);
        self
    }
}

fn annotation(class: i64) -> Element {
    Element::new("annotation").attr("class", class.to_string())
}

fn unit_annotations(unit: Unit) -> Vec<Element> {
    let value = |class: i64, v: &str| annotation(class).attr("value", v);
    match unit {
        Unit::None => vec![],
        Unit::Ticks => vec![value(T_TIMESTAMP, "TICKS")],
        Unit::SpanTicks => vec![value(T_TIMESPAN, "TICKS")],
        Unit::SpanMillis => vec![value(T_TIMESPAN, "MILLISECONDS")],
        Unit::EpochMillis => vec![value(T_TIMESTAMP, "MILLISECONDS_SINCE_EPOCH")],
        Unit::Bytes => vec![annotation(T_UNSIGNED), value(T_DATA_AMOUNT, "BYTES")],
        Unit::Address => vec![annotation(T_UNSIGNED), annotation(T_MEMORY_ADDRESS)],
        Unit::Unsigned => vec![annotation(T_UNSIGNED)],
        Unit::Percentage => vec![annotation(T_PERCENTAGE)],
    }
}

fn field_element(f: &FieldDef) -> Element {
    let mut e = Element::new("field")
        .attr("name", f.name)
        .attr("class", f.ty.to_string());
    if f.cpool {
        e = e.attr("constantPool", "true");
    }
    if f.array {
        e = e.attr("dimension", "1");
    }
    e.children = unit_annotations(f.unit);
    e
}

fn class_element(t: &TypeDef, layout: &Layout) -> Element {
    let mut e = Element::new("class")
        .attr("name", t.name)
        .attr("id", t.id.to_string());
    if t.simple {
        e = e.attr("simpleType", "true");
    } else if t.id > FIRST_ANNOTATION_ID {
        e = e.attr("superType", "java.lang.annotation.Annotation");
    } else if t.id > FIRST_EVENT_ID {
        e = e.attr("superType", "jdk.jfr.Event");
    }
    if let Some(label) = t.label {
        e = e.child(annotation(T_LABEL).attr("value", label));
    }
    if !t.category.is_empty() {
        let mut cat = annotation(T_CATEGORY);
        for (i, v) in t.category.iter().enumerate() {
            // Array-valued annotation attributes are spelled value-0, value-1...
            cat.attrs
                .push((["value-0", "value-1", "value-2"][i], (*v).to_owned()));
        }
        e = e.child(cat);
    }
    for f in t.fields {
        if f.jdk14_only && !layout.flush_interval {
            continue;
        }
        e = e.child(field_element(f));
    }
    if t.context_attributes {
        for name in layout.attributes {
            e = e.child(
                Element::new("field")
                    .attr("name", name.as_str())
                    .attr("class", T_ATTRIBUTE_VALUE.to_string())
                    .attr("constantPool", "true"),
            );
        }
    }
    e
}

fn tree(layout: &Layout) -> Element {
    let metadata = TYPES.iter().fold(Element::new("metadata"), |m, t| {
        m.child(class_element(t, layout))
    });
    let region = Element::new("region")
        .attr("locale", "en_US")
        .attr("gmtOffset", "0");
    Element::new("root").child(metadata).child(region)
}

/// The metadata string table: every element name, attribute key and value,
/// referenced by index from the tree.
#[derive(Default)]
struct StringTable {
    index: HashMap<String, u64>,
    strings: Vec<String>,
}

impl StringTable {
    fn id(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len() as u64;
        self.strings.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

fn write_element(out: &mut Vec<u8>, strings: &mut StringTable, e: &Element) {
    put_varint(out, strings.id(e.name));
    put_varint(out, e.attrs.len() as u64);
    for (k, v) in &e.attrs {
        put_varint(out, strings.id(k));
        put_varint(out, strings.id(v));
    }
    put_varint(out, e.children.len() as u64);
    for c in &e.children {
        write_element(out, strings, c);
    }
}

/// Appends the metadata event (type 0) describing `layout`.
pub fn write_metadata_event(out: &mut Vec<u8>, start_ticks: i64, layout: &Layout) {
    let start = out.len();
    out.extend_from_slice(&[0; PADDED_VARINT_LEN]);
    put_long(out, T_METADATA);
    put_long(out, start_ticks);
    put_long(out, 0); // duration
    put_long(out, 1); // metadata id
    out.extend_from_slice(&metadata_body(layout));
    let size = u32::try_from(out.len() - start).expect("metadata larger than 4 GiB");
    patch_padded_varint(out, start, size);
}

/// The metadata event after its header (string table and element tree), which depends on the
/// layout only: built once per layout and kept (building the tree was a sixth of a small
/// dump's time). [`warm`] builds a session's layouts at its start.
fn metadata_body(layout: &Layout) -> Arc<Vec<u8>> {
    type Built = (Vec<String>, bool, Arc<Vec<u8>>);
    /// Layouts kept: a session has two (with and without `flushInterval`).
    const KEPT: usize = 4;
    static BUILT: Mutex<Vec<Built>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, body)) = built
        .iter()
        .find(|(a, f, _)| a.as_slice() == layout.attributes && *f == layout.flush_interval)
    {
        return body.clone();
    }
    let mut strings = StringTable::default();
    let mut tree_bytes = Vec::with_capacity(16 * 1024);
    write_element(&mut tree_bytes, &mut strings, &tree(layout));
    let mut body = Vec::with_capacity(tree_bytes.len() + 8 * 1024);
    put_varint(&mut body, strings.strings.len() as u64);
    for s in &strings.strings {
        put_string(&mut body, s);
    }
    body.extend_from_slice(&tree_bytes);
    let body = Arc::new(body);
    if built.len() == KEPT {
        built.remove(0);
    }
    built.push((
        layout.attributes.to_vec(),
        layout.flush_interval,
        body.clone(),
    ));
    body
}

/// Builds the metadata of a session with these context attributes now, so that its first
/// dump finds it built.
pub fn warm(attributes: &[String]) {
    for flush_interval in [true, false] {
        metadata_body(&Layout {
            attributes,
            flush_interval,
        });
    }
}

/// Looks a type up by id.
#[cfg(test)]
pub fn type_def(id: i64) -> Option<&'static TypeDef> {
    TYPES.iter().find(|t| t.id == id)
}

#[cfg(test)]
#[path = "metadata_tests.rs"]
mod tests;
