//! The natives behind Java's in-place context writer (`DirectContextWriter`): instead of one
//! JNI call per span activation, Java gets the calling thread's [`ThreadContext`] once, as a
//! direct `ByteBuffer`, and stores into it with the same protocol as the native writers
//! (`valid` cleared first, set last; docs/context.md, "Writing from Java"). The memory is
//! ours and lives as long as the thread (`crate::threads::current_context`), and the library
//! is never unloaded (`-z nodelete`), so a buffer never outlives what it points at.
//!
//! [`ThreadContext`]: crate::sample::context::ThreadContext

use jni::objects::JClass;
use jni::sys::{jint, jintArray, jobject};
use jni::JNIEnv;

use super::quiet;
use crate::sample::context;
use crate::threads;

/// The layout `DirectContextWriter` writes by (`context::java_layout`, order documented there).
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_contextLayout0(
    env: JNIEnv,
    _class: JClass,
) -> jintArray {
    quiet(std::ptr::null_mut(), || {
        let layout = context::java_layout();
        let Ok(array) = env.new_int_array(layout.len() as i32) else {
            return std::ptr::null_mut();
        };
        if env.set_int_array_region(&array, 0, &layout).is_err() {
            return std::ptr::null_mut();
        }
        array.into_raw()
    })
}

/// The calling thread's context as a direct buffer of `size_of::<ThreadContext>()` bytes,
/// created (and published as `otel_thread_ctx_v1`) on first use; null if it cannot be.
/// Java must use it on this thread only, and never from a virtual thread (its carrier's
/// context would be written, and the carrier may end first).
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_contextBuffer0(
    mut env: JNIEnv,
    _class: JClass,
) -> jobject {
    quiet(std::ptr::null_mut(), || {
        let Some(c) = threads::current_context() else {
            return std::ptr::null_mut();
        };
        let ptr = c as *const context::ThreadContext as *mut u8;
        // SAFETY: `c` is this thread's context, alive until the thread exits (after the last
        // Java code on it), in a library that stays loaded; Java writes only the fields
        // `java_layout` names, with the owner-only protocol the native writers follow.
        unsafe { env.new_direct_byte_buffer(ptr, std::mem::size_of::<context::ThreadContext>()) }
            .map_or(std::ptr::null_mut(), |b| b.into_raw())
    })
}

/// The dictionary epoch's word as a 4-byte direct buffer (Java reads it in place).
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_epochBuffer0(
    mut env: JNIEnv,
    _class: JClass,
) -> jobject {
    quiet(std::ptr::null_mut(), || {
        let ptr = context::dictionary_epoch_word() as *mut u8;
        // SAFETY: a static atomic of the never-unloaded library; Java only reads it.
        unsafe { env.new_direct_byte_buffer(ptr, 4) }.map_or(std::ptr::null_mut(), |b| b.into_raw())
    })
}

/// The UTF-8 bytes of dictionary entry `encoding` (for the legacy `setContextValue(offset,
/// encoding)` in Java), at most `MAX_VALUE_BYTES + 1` of them so that Java can tell a value
/// too long for the record; null for an unknown encoding.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JavaProfiler_contextValueBytes0(
    env: JNIEnv,
    _class: JClass,
    encoding: jint,
) -> jobject {
    quiet(std::ptr::null_mut(), || {
        if encoding <= 0 {
            return std::ptr::null_mut();
        }
        crate::context::dictionary::with_value(encoding as u32, |v| {
            let n = v.len().min(context::MAX_VALUE_BYTES + 1);
            env.byte_array_from_slice(&v.as_bytes()[..n])
                .map_or(std::ptr::null_mut(), |a| a.into_raw())
        })
        .unwrap_or(std::ptr::null_mut())
    })
}
