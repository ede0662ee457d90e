//! `com.datadoghq.profiler.JavaProfiler` native methods, and the test probes of
//! `com.datadoghq.profiler.internal.Diagnostics` (`getTid0`, `getClassTraceId0`, `makeMethodIds0`, ...).

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use jni::objects::{JByteArray, JClass, JIntArray, JObject, JString};
use jni::sys::{jboolean, jint, jlong, jobject, jobjectArray, jstring};
use jni::JNIEnv;

use super::{guarded, quiet};
use crate::counters::{self, Counter};
use crate::profiler::{self, Error};
use crate::sample::context::{self, MAX_ATTRIBUTES, MAX_VALUE_BYTES};
use crate::threads;

fn string_arg(env: &mut JNIEnv, s: &JString, what: &str) -> Result<String, Error> {
    if s.is_null() {
        return Err(Error::Argument(format!("{what} must not be null")));
    }
    env.get_string(s)
        .map(String::from)
        .map_err(|e| Error::Argument(format!("{what}: {e}")))
}

fn optional_string(env: &mut JNIEnv, s: &JString) -> String {
    if s.is_null() {
        return String::new();
    }
    env.get_string(s).map(String::from).unwrap_or_default()
}

fn new_string(env: &mut JNIEnv, s: &str) -> Result<jstring, Error> {
    env.new_string(s)
        .map(|j| j.into_raw())
        .map_err(|e| Error::State(e.to_string()))
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_execute0(
    mut env: JNIEnv,
    _this: JObject,
    command: JString,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let command = string_arg(env, &command, "command")?;
        let out = profiler::execute(env.get_raw(), &command)?;
        new_string(env, &out)
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_stop0(
    mut env: JNIEnv,
    _this: JObject,
) {
    guarded(&mut env, (), |env| profiler::stop(env.get_raw()))
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_dump0(
    mut env: JNIEnv,
    _this: JObject,
    path: JString,
) {
    guarded(&mut env, (), |env| {
        let path = string_arg(env, &path, "recording path")?;
        profiler::dump_to(env.get_raw(), &PathBuf::from(path))
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_exportChunk0(
    mut env: JNIEnv,
    _this: JObject,
    path: JString,
) {
    guarded(&mut env, (), |env| {
        let path = string_arg(env, &path, "export chunk path")?;
        profiler::export_chunk_to(env.get_raw(), &PathBuf::from(path))
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_recordingFile0(
    mut env: JNIEnv,
    _this: JObject,
) -> jstring {
    guarded(
        &mut env,
        std::ptr::null_mut(),
        |env| match profiler::recording_file() {
            Some(f) => new_string(env, &f.to_string_lossy()),
            None => Ok(std::ptr::null_mut()),
        },
    )
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_getStatus0(
    mut env: JNIEnv,
    _this: JObject,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        new_string(env, &profiler::status())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_getSamples0(
    _env: JNIEnv,
    _class: JClass,
) -> jlong {
    quiet(0, || Counter::Samples.get())
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_getVersion0(
    mut env: JNIEnv,
    _class: JClass,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        new_string(env, profiler::VERSION)
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_getDebugCounters0(
    mut env: JNIEnv,
    _class: JClass,
) -> jobject {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        crate::footprint::refresh(false);
        let (ptr, len) = counters::raw_buffer();
        // SAFETY: the counter slots are a static array that lives as long as the library;
        // Java only reads through the buffer.
        let buf = unsafe { env.new_direct_byte_buffer(ptr, len) }
            .map_err(|e| Error::State(e.to_string()))?;
        Ok(buf.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_describeDebugCounters0(
    mut env: JNIEnv,
    _class: JClass,
) -> jobjectArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let err = |e: jni::errors::Error| Error::State(e.to_string());
        let array = env
            .new_object_array(
                counters::names().len() as i32,
                "java/lang/String",
                JObject::null(),
            )
            .map_err(err)?;
        for (i, name) in counters::names().iter().enumerate() {
            let s = env.new_string(name).map_err(err)?;
            env.set_object_array_element(&array, i as i32, &s)
                .map_err(err)?;
            env.delete_local_ref(s).map_err(err)?;
        }
        Ok(array.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_recordSetting0(
    mut env: JNIEnv,
    _class: JClass,
    name: JString,
    value: JString,
    unit: JString,
) {
    guarded(&mut env, (), |env| {
        let name = string_arg(env, &name, "setting name")?;
        let value = optional_string(env, &value);
        let unit = optional_string(env, &unit);
        profiler::record_setting(name, value, unit);
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_filterThread0(
    _env: JNIEnv,
    _class: JClass,
    add: jboolean,
) {
    quiet((), || {
        if let Some(c) = threads::current_context() {
            crate::context::thread_filter::set(c, add != 0);
        }
    })
}

// ---- Owned blocked runs (`sample::block_run`): instrumentation around parks and sleeps of
// ---- registered threads. A thread that never registered (`addThread`) has no filter cell,
// ---- and these do nothing, as upstream's do with the filter off.

fn own_filter_cell() -> Option<&'static crate::sample::block_run::FilterCell> {
    context::current()?.filter_cell()
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_parkEnter0(
    _env: JNIEnv,
    _class: JClass,
) {
    quiet((), || {
        if let Some(cell) = own_filter_cell() {
            cell.enter(crate::sample::mode::state::PARKED);
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_parkExit0(
    _env: JNIEnv,
    _class: JClass,
    _blocker: jlong,
    _unblocking_span_id: jlong,
) {
    quiet((), || {
        if let Some(cell) = own_filter_cell() {
            cell.exit_park();
        }
    })
}

/// HotSpot's OSThread state for `Thread.sleep`, the one state `blockEnter` accepts (as
/// upstream); it is also the JFR thread state's code.
const OS_THREAD_SLEEPING: jint = 7;

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_blockEnter0(
    _env: JNIEnv,
    _class: JClass,
    state: jint,
) -> jlong {
    quiet(0, || match (state, own_filter_cell()) {
        (OS_THREAD_SLEEPING, Some(cell)) => {
            jlong::from(cell.enter(crate::sample::mode::state::SLEEPING))
        }
        _ => 0,
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_blockExit0(
    _env: JNIEnv,
    _class: JClass,
    token: jlong,
) {
    quiet((), || {
        if let (Ok(run), Some(cell)) = (u32::try_from(token), own_filter_cell()) {
            cell.exit(run);
        }
    })
}

// ---- Trace context (docs/context.md). Java checks the arguments (span 0, slot bounds,
// ---- value sizes); these calls never throw. Each is one write of the calling thread's
// ---- record and sidecar (`sample::context::ThreadContext`).

/// Copies the `dst.len()` first bytes of `array` into `dst` (the thread's record, in place) with
/// one raw `GetByteArrayRegion`: Java passes the array's own length, so the bounds hold and no
/// exception can be raised, and the `jni` crate's wrapper would add a `GetArrayLength` and an
/// `ExceptionCheck` (each a JNI call, together more than the write itself). A null array is an
/// empty value.
fn utf8_into(env: &JNIEnv, array: &JByteArray, dst: &mut [u8]) -> bool {
    if dst.is_empty() || array.is_null() {
        return dst.is_empty();
    }
    let raw = env.get_raw();
    // SAFETY: `raw` is this thread's JNIEnv for the duration of the native call; `array` is a
    // live local reference to a byte[] of at least `dst.len()` bytes (the caller's length);
    // `dst` is writable for `dst.len()` bytes.
    unsafe {
        let Some(get_region) = (**raw).GetByteArrayRegion else {
            return false;
        };
        get_region(
            raw,
            array.as_raw(),
            0,
            dst.len() as jni::sys::jsize,
            dst.as_mut_ptr() as *mut jni::sys::jbyte,
        );
    }
    true
}

/// A value's length as Java gave it (`utf8.length`), 0 for a null array, at most
/// `MAX_VALUE_BYTES` (longer values never reach here: `ContextValueCache` refuses them).
fn utf8_len(array: &JByteArray, len: jint) -> usize {
    if array.is_null() {
        0
    } else {
        (len.max(0) as usize).min(MAX_VALUE_BYTES)
    }
}

fn slot_of(slot: jint) -> Option<usize> {
    usize::try_from(slot).ok().filter(|s| *s < MAX_ATTRIBUTES)
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_maxContextSlots0(
    _env: JNIEnv,
    _class: JClass,
) -> jint {
    quiet(0, || MAX_ATTRIBUTES as jint)
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_setTraceContext0(
    env: JNIEnv,
    _class: JClass,
    root_span_id: jlong,
    span_id: jlong,
    trace_hi: jlong,
    trace_lo: jlong,
    slot0: jint,
    encoding0: jint,
    utf8_0: JByteArray,
    len0: jint,
    slot1: jint,
    encoding1: jint,
    utf8_1: JByteArray,
    len1: jint,
) {
    quiet((), || {
        let Some(c) = threads::current_context() else {
            return;
        };
        let arrays = [&utf8_0, &utf8_1];
        c.set_trace_with(
            root_span_id as u64,
            span_id as u64,
            (trace_hi as u64, trace_lo as u64),
            [
                slot_of(slot0).map(|s| (s, encoding0 as u32, utf8_len(&utf8_0, len0))),
                slot_of(slot1).map(|s| (s, encoding1 as u32, utf8_len(&utf8_1, len1))),
            ],
            |i, dst| utf8_into(&env, arrays[i], dst),
        );
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_clearTraceContext0(
    _env: JNIEnv,
    _class: JClass,
) {
    quiet((), || {
        if let Some(c) = threads::current_context() {
            c.clear();
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_setContextValue0(
    env: JNIEnv,
    _class: JClass,
    slot: jint,
    encoding: jint,
    utf8: JByteArray,
    len: jint,
) -> jboolean {
    quiet(0, || {
        let (Some(slot), Some(c)) = (slot_of(slot), threads::current_context()) else {
            return 0;
        };
        c.set_value_with(slot, encoding as u32, utf8_len(&utf8, len), |dst| {
            utf8_into(&env, &utf8, dst)
        }) as jboolean
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_clearContextValue0(
    _env: JNIEnv,
    _class: JClass,
    slot: jint,
) {
    quiet((), || {
        if let (Some(slot), Some(c)) = (slot_of(slot), threads::current_context()) {
            c.clear_value(slot);
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_copyContextTags0(
    env: JNIEnv,
    _class: JClass,
    out: JIntArray,
) {
    quiet((), || {
        copy_tags(env, out);
    })
}

fn copy_tags(env: JNIEnv, out: JIntArray) {
    if out.is_null() {
        return;
    }
    let len = env.get_array_length(&out).unwrap_or(0).max(0) as usize;
    let mut tags = [0u32; MAX_ATTRIBUTES];
    if let Some(c) = context::current() {
        c.copy_encodings(&mut tags);
    }
    let n = len.min(MAX_ATTRIBUTES);
    let tags: [jint; MAX_ATTRIBUTES] = tags.map(|t| t as jint);
    let _ = env.set_int_array_region(&out, 0, &tags[..n]);
}

/// The dictionary encoding of `value` (>= 1), or -1 when the dictionary is full or the value
/// is null.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_registerConstant0(
    mut env: JNIEnv,
    _class: JClass,
    value: JString,
) -> jint {
    quiet(0, || {
        if value.is_null() {
            return -1;
        }
        let Ok(value) = env.get_string(&value).map(String::from) else {
            return -1;
        };
        crate::context::dictionary::intern(&value).map_or(-1, |id| id as jint)
    })
}

/// The dictionary's epoch: Java drops its cached encodings when it changes.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_contextEpoch0(
    _env: JNIEnv,
    _class: JClass,
) -> jint {
    quiet(0, || crate::context::dictionary::epoch() as jint)
}

/// Legacy `setContext(spanId, rootSpanId)` (java-profiler 1.34): ids only.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_setContext0(
    _env: JNIEnv,
    _class: JClass,
    span_id: jlong,
    root_span_id: jlong,
) {
    quiet((), || {
        if let Some(c) = threads::current_context() {
            c.set_span_legacy(span_id as u64, root_span_id as u64);
        }
    })
}

/// Legacy `setContextValue(offset, encoding)`: an encoding from `registerConstant`; 0 clears.
/// An offset outside the slots, or an unknown encoding, is ignored.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_setContextEncoding0(
    _env: JNIEnv,
    _class: JClass,
    offset: jint,
    encoding: jint,
) {
    quiet((), || {
        let (Some(slot), Some(c)) = (slot_of(offset), threads::current_context()) else {
            return;
        };
        if encoding <= 0 {
            c.set_encoding_legacy(slot, 0, &[]);
            return;
        }
        // One byte more than an entry holds: a longer value keeps its encoding, but its record
        // entry is left out (`set_encoding_legacy`).
        let mut buf = [0u8; MAX_VALUE_BYTES + 1];
        let Some(n) = crate::context::dictionary::with_value(encoding as u32, |v| {
            let n = v.len().min(buf.len());
            buf[..n].copy_from_slice(&v.as_bytes()[..n]);
            n
        }) else {
            return;
        };
        c.set_encoding_legacy(slot, encoding as u32, &buf[..n]);
    })
}

// ---- Test hooks of upstream's tests (JavaProfiler) and ours (Diagnostics).

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_testGetSpanId0(
    _env: JNIEnv,
    _class: JClass,
) -> jlong {
    quiet(0, || {
        context::current().map_or(0, |c| c.record.span_id() as jlong)
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_testGetRootSpanId0(
    _env: JNIEnv,
    _class: JClass,
) -> jlong {
    quiet(0, || {
        context::current().map_or(0, |c| c.root_span_id.load(Ordering::Relaxed) as jlong)
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_testReadTraceId0(
    mut env: JNIEnv,
    _class: JClass,
) -> jstring {
    let (hi, lo) = context::current().map_or((0, 0), |c| c.record.trace_id());
    guarded(&mut env, std::ptr::null_mut(), |env| {
        new_string(env, &format!("{hi:016x}{lo:016x}"))
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_testReadContextAttribute0(
    mut env: JNIEnv,
    _class: JClass,
    slot: jint,
) -> jstring {
    let value = slot_of(slot).and_then(|s| {
        let c = context::current()?;
        Some(String::from_utf8_lossy(c.record.attr(s as u8 + 1)?).into_owned())
    });
    match value {
        None => std::ptr::null_mut(),
        Some(v) => guarded(&mut env, std::ptr::null_mut(), |env| new_string(env, &v)),
    }
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_testIsContextValid0(
    _env: JNIEnv,
    _class: JClass,
) -> jboolean {
    quiet(0, || {
        context::current().is_some_and(|c| c.record.is_valid()) as jboolean
    })
}

/// Whether the calling thread's exported TLS slot is set (its record is published).
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_testTlsPrimingAvailable(
    _env: JNIEnv,
    _class: JClass,
) -> jboolean {
    quiet(0, || {
        // The slot is primed at a thread's first context write, on that thread, outside any
        // signal handler; this build has no other priming mode, so it is always available.
        1
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_testlog(
    mut env: JNIEnv,
    _class: JClass,
    msg: JString,
) {
    quiet((), || {
        let msg = optional_string(&mut env, &msg);
        eprintln!("[TEST::INFO] {msg}");
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_dumpContext(
    _env: JNIEnv,
    _class: JClass,
) {
    quiet((), || {
        let Some(c) = context::current() else {
            eprintln!(
                "[TEST::INFO] no trace context on thread {}",
                context::gettid()
            );
            return;
        };
        let (hi, lo) = c.record.trace_id();
        let mut tags = [0u32; MAX_ATTRIBUTES];
        c.copy_encodings(&mut tags);
        eprintln!(
        "[TEST::INFO] thread {}: valid={} trace={hi:016x}{lo:016x} span={} root={} tags={tags:?}",
        context::gettid(),
        c.record.is_valid(),
        c.record.span_id(),
        c.root_span_id.load(Ordering::Relaxed),
    );
    })
}

/// The calling thread's OTel record as an outside reader finds it: `otel_thread_ctx_v1` looked
/// up by name in this library's dynamic symbol table (`dlsym`, which resolves a TLS symbol to
/// the calling thread's instance), the pointer stored there followed, 640 bytes copied. Null
/// when the symbol or the pointer is missing.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_internal_Diagnostics_readOtelRecordBySymbol0(
    mut env: JNIEnv,
    _class: JClass,
) -> jobject {
    let Some(record) = crate::context::otel_tls::lookup_by_symbol() else {
        return std::ptr::null_mut();
    };
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let bytes: &[u8] = &record;
        env.byte_array_from_slice(bytes)
            .map(|a| a.into_raw())
            .map_err(|e| Error::State(e.to_string()))
    })
}

/// Test helper (`scripts/arm64/ArmSuite.java`): one 8-byte load at `address` the way the signal
/// handler reads VM memory (`safe_access::load_u64`), so that a test can point it at an unmapped
/// page in a live JVM. `[read (1 or 0), value (0 unless read), faults recovered so far,
/// protected loads installed (1 or 0: else the load took `process_vm_readv`)]`.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_internal_Diagnostics_protectedLoad0(
    mut env: JNIEnv,
    _class: JClass,
    address: jlong,
) -> jobject {
    use crate::sample::safe_access;
    let value = safe_access::load_u64(address as usize);
    let out = [
        jlong::from(value.is_some()),
        value.unwrap_or(0) as jlong,
        safe_access::faults_recovered() as jlong,
        jlong::from(safe_access::is_installed()),
    ];
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let array = env
            .new_long_array(out.len() as i32)
            .map_err(|e| Error::State(e.to_string()))?;
        env.set_long_array_region(&array, 0, &out)
            .map_err(|e| Error::State(e.to_string()))?;
        Ok(array.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_internal_Diagnostics_getTid0(
    _env: JNIEnv,
    _class: JClass,
) -> jint {
    quiet(0, context::gettid)
}

/// Test helper: makes the jmethodIDs of every method of `class` (JVMTI GetClassMethods creates
/// any missing), as a profiler taking stacks through GetStackTrace does for sampled frames; the
/// positive control of the tests that check a mode makes none. The number of methods, or -1.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_internal_Diagnostics_makeMethodIds0(
    mut env: JNIEnv,
    _class: JClass,
    of: JClass,
) -> jint {
    guarded(&mut env, -1, |_| {
        let n = crate::jvmti::jvm::jvmti().and_then(|j| j.load_method_ids(of.as_raw()).ok());
        Ok(n.map_or(-1, |n| jint::try_from(n).unwrap_or(jint::MAX)))
    })
}

/// Test helper: the JFR class trace ID of `class` as the calibrated offset reads it, -1
/// when it cannot be read (no calibration, primitive class, unreadable Klass).
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_internal_Diagnostics_getClassTraceId0(
    mut env: JNIEnv,
    _class: JClass,
    of: JClass,
) -> jlong {
    guarded(&mut env, -1, |env| {
        crate::hotspot::zgc::init();
        let _ = crate::hotspot::trace_id::calibrate(env.get_raw());
        let id = crate::sample::vm::layout::get()
            .and_then(|l| l.method.as_ref())
            .and_then(|m| crate::hotspot::zgc::klass_of_class_ref(m, env.get_raw(), of.as_raw()))
            .and_then(crate::sample::vm::trace_id::trace_id);
        Ok(id.map_or(-1, |i| i as jlong))
    })
}

/// Test helper (`LazyJvmtiEquivalenceTest`): for every method of `of`, what the lazy mode's
/// metadata reader says about its `Method*` (`methods::raw::method_parts`, the function the
/// dump names lazily tagged frames with) next to what JVMTI says (GetMethodName,
/// GetMethodModifiers, GetLineNumberTable). Two strings per method, ours then JVMTI's,
/// each `name descriptor modifiers=N lines=[bci:line,...]`; ours is `unreadable` when the
/// reader gives nothing. JVMTI GetClassMethods makes the methods' jmethodIDs (the
/// `Method*` is the word a jmethodID points at, JDK <= 25): never call it in a JVM whose
/// lazy counters a test asserts.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_internal_Diagnostics_compareMethodMetadata0(
    mut env: JNIEnv,
    _class: JClass,
    of: JClass,
) -> jobjectArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let jvmti = crate::jvmti::jvm::jvmti()
            .ok_or_else(|| Error::State("JVMTI is not available".into()))?;
        let m = crate::sample::vm::layout::get()
            .and_then(|l| l.method.as_ref())
            .ok_or_else(|| Error::State("no VMStructs method group".into()))?;
        let encoding = crate::sample::vm::debuginfo::Encoding::for_feature_version(
            crate::jvmti::jvm::java_feature_version(),
        );
        let ids = jvmti
            .class_methods(of.as_raw())
            .map_err(|e| Error::State(format!("GetClassMethods: {e:?}")))?;
        let render = |name: &str, sig: &str, mods: i32, lines: &[crate::methods::info::BciLine]| {
            let lines: Vec<String> = lines.iter().map(|(b, l)| format!("{b}:{l}")).collect();
            format!("{name} {sig} modifiers={mods} lines=[{}]", lines.join(","))
        };
        let mut out = Vec::with_capacity(ids.len() * 2);
        for id in ids {
            let method = crate::sample::safe_access::load_usize(id as usize).unwrap_or(0);
            let ours = (method != 0)
                .then(|| crate::methods::raw::method_parts(m, method, encoding))
                .flatten()
                .map_or_else(
                    || "unreadable".to_string(),
                    |p| render(&p.name, &p.descriptor, p.modifiers, &p.lines),
                );
            let (name, sig) = jvmti
                .method_name(id)
                .map_err(|e| Error::State(format!("GetMethodName: {e:?}")))?;
            let mods = jvmti
                .method_modifiers(id)
                .map_err(|e| Error::State(format!("GetMethodModifiers: {e:?}")))?;
            out.push(ours);
            out.push(render(&name, &sig, mods, &jvmti.line_number_table(id)));
        }
        let array = env
            .new_object_array(out.len() as i32, "java/lang/String", JObject::null())
            .map_err(|e| Error::State(e.to_string()))?;
        for (i, s) in out.iter().enumerate() {
            let js = env.new_string(s).map_err(|e| Error::State(e.to_string()))?;
            env.set_object_array_element(&array, i as i32, &js)
                .map_err(|e| Error::State(e.to_string()))?;
            env.delete_local_ref(js)
                .map_err(|e| Error::State(e.to_string()))?;
        }
        Ok(array.into_raw())
    })
}
