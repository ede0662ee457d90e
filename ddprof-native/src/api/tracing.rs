//! `JavaProfiler` natives of the tracer's events: `recordTrace0` (`datadog.Endpoint`),
//! `recordQueueEnd0` (`datadog.QueueTime`) and `currentTicks0` (the event clock). State and
//! buffering are `crate::tracing`'s. None of them throws into the caller's thread: a bad
//! argument means no event.

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jint, jlong, JNI_FALSE, JNI_TRUE};
use jni::JNIEnv;

use super::guarded;
use crate::sample::handler;
use crate::tracing;

fn string_or_none(env: &mut JNIEnv, s: &JString) -> Option<String> {
    if s.is_null() {
        return None;
    }
    let v = env.get_string(s).map(String::from).ok();
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
    }
    v
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_recordTrace0(
    mut env: JNIEnv,
    _class: JClass,
    root_span_id: jlong,
    endpoint: JString,
    operation: JString,
    size_limit: jint,
) -> jboolean {
    guarded(&mut env, JNI_FALSE, |env| {
        let Some(endpoint) = string_or_none(env, &endpoint) else {
            return Ok(JNI_FALSE);
        };
        let operation = string_or_none(env, &operation);
        let accepted = tracing::record_trace_root(
            &endpoint,
            operation.as_deref(),
            root_span_id as u64,
            size_limit,
        );
        Ok(if accepted { JNI_TRUE } else { JNI_FALSE })
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_recordQueueEnd0(
    mut env: JNIEnv,
    _class: JClass,
    start_ticks: jlong,
    end_ticks: jlong,
    task: JString,
    scheduler: JString,
    origin: JObject,
    queue_type: JString,
    queue_length: jint,
) {
    guarded(&mut env, (), |env| {
        if !tracing::is_active() {
            return Ok(());
        }
        // As upstream: without the origin's tid there is no event.
        let Some(origin_tid) = crate::jvmti::thread_tid::tid_of(env, &origin) else {
            tracing::note_dropped();
            return Ok(());
        };
        let task = string_or_none(env, &task);
        let scheduler = string_or_none(env, &scheduler);
        let queue_type = string_or_none(env, &queue_type);
        tracing::record_queue_time(&tracing::QueueTimeCall {
            start_ticks,
            end_ticks,
            origin_tid,
            task: task.as_deref(),
            scheduler: scheduler.as_deref(),
            queue_type: queue_type.as_deref(),
            queue_length,
        });
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_currentTicks0(
    _env: JNIEnv,
    _class: JClass,
) -> jlong {
    super::quiet(0, handler::ticks)
}
