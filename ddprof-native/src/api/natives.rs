//! `com.datadoghq.profiler.JavaProfiler` native methods, and the test probes of
//! `com.datadoghq.profiler.internal.Diagnostics` (`getTid0`, `getClassTraceId0`).

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jint, jlong, jobject, jobjectArray, jstring};
use jni::JNIEnv;

use super::guarded;
use crate::counters::{self, Counter};
use crate::profiler::{self, Error};
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
    Counter::Samples.get()
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
        crate::memory::refresh(false);
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
    threads::current_context()
        .filtered_in
        .store(add != 0, Ordering::Relaxed);
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_setContext0(
    _env: JNIEnv,
    _class: JClass,
    span_id: jlong,
    root_span_id: jlong,
) {
    // A new span starts with no attributes: the previous span's values must not leak into it.
    let ctx = threads::current_context();
    ctx.attrs.iter().for_each(|a| a.store(0, Ordering::Relaxed));
    ctx.span_id.store(span_id as u64, Ordering::Relaxed);
    ctx.root_span_id
        .store(root_span_id as u64, Ordering::Relaxed);
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_setContextValue0(
    mut env: JNIEnv,
    _class: JClass,
    slot: jint,
    value: JString,
) {
    guarded(&mut env, (), |env| {
        let slot = usize::try_from(slot)
            .ok()
            .filter(|s| *s < crate::sample::context::MAX_ATTRIBUTES)
            .ok_or_else(|| {
                Error::Argument(format!(
                    "context slot {slot} is out of range 0..{}",
                    crate::sample::context::MAX_ATTRIBUTES
                ))
            })?;
        let value = optional_string(env, &value);
        let id = if value.is_empty() {
            0
        } else {
            crate::context::intern(&value)
        };
        threads::current_context().attrs[slot].store(id, Ordering::Relaxed);
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_internal_Diagnostics_getTid0(
    _env: JNIEnv,
    _class: JClass,
) -> jint {
    crate::sample::context::gettid()
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
        let _ = crate::hotspot::trace_id::calibrate(env.get_raw());
        let id = crate::sample::vm::layout::get()
            .and_then(|l| l.method.as_ref())
            .and_then(|m| crate::sample::vm::klass::of_class_ref(m, of.as_raw()))
            .and_then(crate::hotspot::trace_id::trace_id);
        Ok(id.map_or(-1, |i| i as jlong))
    })
}
