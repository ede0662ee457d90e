//! `com.datadoghq.profiler.OTelContext` natives: the OTel process context
//! (`context/process.rs`, docs/context.md "The process context").
//!
//! Names are upstream's. `setProcessCtx0` exists in two shapes: six strings (java-profiler
//! 1.34, whose `OTelContext` released tracers ship) and six strings plus the attribute keys
//! (upstream's current class, and ours). Both are exported under their JNI long names only,
//! so whichever class is loaded binds to the matching one. `readProcessCtx0` builds either
//! class's `ProcessContext` (nine fields, or 1.34's eight). Nothing here throws: a problem is
//! logged and the previous context stays published.

use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::objects::{JClass, JObject, JObjectArray, JString, JValue};
use jni::sys::jobject;
use jni::JNIEnv;

use crate::context::process::{self, ProcessContext, MAX_ATTRIBUTE_KEYS};
use crate::log;

const PROCESS_CONTEXT_CLASS: &str = "com/datadoghq/profiler/OTelContext$ProcessContext";
const CTOR_CURRENT: &str = "(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;[Ljava/lang/String;)V";
const CTOR_1_34: &str = "(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V";

/// A Java string as UTF-8; null (which upstream does not allow) reads as "".
fn text(env: &mut JNIEnv, s: &JString) -> String {
    if s.is_null() {
        return String::new();
    }
    env.get_string(s).map(String::from).unwrap_or_default()
}

/// The first [`MAX_ATTRIBUTE_KEYS`] keys, or None (publish skipped) for a null element.
fn keys(env: &mut JNIEnv, array: &JObjectArray) -> Option<Vec<String>> {
    if array.is_null() {
        return Some(Vec::new());
    }
    let len = env.get_array_length(array).ok()?.max(0) as usize;
    if len > MAX_ATTRIBUTE_KEYS {
        log::warn(&format!(
            "setProcessContext: {len} attribute keys requested but capacity is {MAX_ATTRIBUTE_KEYS}; extra keys will be ignored"
        ));
    }
    let mut out = Vec::with_capacity(len.min(MAX_ATTRIBUTE_KEYS));
    for i in 0..len.min(MAX_ATTRIBUTE_KEYS) {
        let element = env.get_object_array_element(array, i as i32).ok()?;
        if element.is_null() {
            log::warn(&format!(
                "setProcessContext: null attribute key at index {i}; skipping publish"
            ));
            return None;
        }
        let key = JString::from(element);
        out.push(text(env, &key));
        let _ = env.delete_local_ref(key);
    }
    Some(out)
}

#[allow(clippy::too_many_arguments)]
fn set(
    env: &mut JNIEnv,
    deployment_env: &JString,
    host_name: &JString,
    runtime_id: &JString,
    service: &JString,
    version: &JString,
    tracer_version: &JString,
    attribute_keys: Option<&JObjectArray>,
) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let keys = match attribute_keys {
            Some(array) => match keys(env, array) {
                Some(k) => k,
                None => return,
            },
            None => Vec::new(),
        };
        let ctx = ProcessContext::for_tracer(
            text(env, deployment_env),
            text(env, host_name),
            text(env, runtime_id),
            text(env, service),
            text(env, version),
            text(env, tracer_version),
            keys,
        );
        process::publish_or_warn(&ctx);
    }));
    if outcome.is_err() {
        log::warn("setProcessContext: internal error (panic); the process context is unchanged");
    }
    // A JNI error above (e.g. an OutOfMemoryError) must not reach the tracer's premain.
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
    }
}

/// java-profiler 1.34's `setProcessCtx0(String env, String hostname, String runtimeId,
/// String service, String version, String tracerVersion)`.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_OTelContext_setProcessCtx0__Ljava_lang_String_2Ljava_lang_String_2Ljava_lang_String_2Ljava_lang_String_2Ljava_lang_String_2Ljava_lang_String_2(
    mut env: JNIEnv,
    _class: JClass,
    deployment_env: JString,
    host_name: JString,
    runtime_id: JString,
    service: JString,
    version: JString,
    tracer_version: JString,
) {
    set(
        &mut env,
        &deployment_env,
        &host_name,
        &runtime_id,
        &service,
        &version,
        &tracer_version,
        None,
    );
}

/// Upstream's current `setProcessCtx0(..., String[] attributeKeys)`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_com_datadoghq_profiler_OTelContext_setProcessCtx0__Ljava_lang_String_2Ljava_lang_String_2Ljava_lang_String_2Ljava_lang_String_2Ljava_lang_String_2Ljava_lang_String_2_3Ljava_lang_String_2(
    mut env: JNIEnv,
    _class: JClass,
    deployment_env: JString,
    host_name: JString,
    runtime_id: JString,
    service: JString,
    version: JString,
    tracer_version: JString,
    attribute_keys: JObjectArray,
) {
    set(
        &mut env,
        &deployment_env,
        &host_name,
        &runtime_id,
        &service,
        &version,
        &tracer_version,
        Some(&attribute_keys),
    );
}

fn new_process_context<'a>(
    env: &mut JNIEnv<'a>,
    ctx: &ProcessContext,
) -> jni::errors::Result<JObject<'a>> {
    let class = env.find_class(PROCESS_CONTEXT_CLASS)?;
    let fields = [
        &ctx.deployment_environment_name,
        &ctx.host_name,
        &ctx.service_instance_id,
        &ctx.service_name,
        &ctx.service_version,
        &ctx.telemetry_sdk_language,
        &ctx.telemetry_sdk_version,
        &ctx.telemetry_sdk_name,
    ];
    let mut strings = Vec::with_capacity(fields.len());
    for f in fields {
        strings.push(JObject::from(env.new_string(f)?));
    }
    let key_map = match &ctx.attribute_key_map {
        Some(keys) => {
            let array =
                env.new_object_array(keys.len() as i32, "java/lang/String", JObject::null())?;
            for (i, k) in keys.iter().enumerate() {
                let s = env.new_string(k)?;
                env.set_object_array_element(&array, i as i32, &s)?;
                env.delete_local_ref(s)?;
            }
            JObject::from(array)
        }
        None => JObject::null(),
    };
    let mut args: Vec<JValue> = strings.iter().map(JValue::Object).collect();
    if env.get_method_id(&class, "<init>", CTOR_CURRENT).is_ok() {
        args.push(JValue::Object(&key_map));
        return env.new_object(&class, CTOR_CURRENT, &args);
    }
    // java-profiler 1.34's ProcessContext: eight strings, no key map.
    env.exception_clear()?;
    env.new_object(&class, CTOR_1_34, &args)
}

/// The published context read back through its mapping, or null if there is none.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_OTelContext_readProcessCtx0(
    mut env: JNIEnv,
    _class: JClass,
) -> jobject {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let ctx = process::read()?;
        new_process_context(&mut env, &ctx)
            .ok()
            .map(JObject::into_raw)
    }));
    match outcome {
        Ok(Some(obj)) => obj,
        _ => {
            if env.exception_check().unwrap_or(false) {
                let _ = env.exception_clear();
            }
            std::ptr::null_mut()
        }
    }
}
