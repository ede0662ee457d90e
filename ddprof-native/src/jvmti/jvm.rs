//! The JVM we live in: the `JavaVM*`, our JVMTI environment, and what they tell (thread
//! names, the JDK version). Set up once, from whichever entry point runs first
//! (`JNI_OnLoad`, `Agent_OnLoad`, `Agent_OnAttach`), with the event callbacks of
//! `crate::api::events`. What else needs the VM first is started by the entry points
//! (`crate::api::agent::attach`), not here: this module calls nothing above the JVMTI bindings.

// JNI/JVMTI handles (jclass, jmethodID, JNIEnv*) are opaque tokens the JVM validates;
// wrapping every function that passes one through as `unsafe` would add no safety.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use jni::sys::{JNIEnv, JavaVM};

use crate::jvmti::{self, jthread, Capabilities, EventCallbacks, Jvmti};
use crate::log;

static JVMTI: OnceLock<Jvmti> = OnceLock::new();
static VM: AtomicPtr<JavaVM> = AtomicPtr::new(std::ptr::null_mut());

pub fn jvmti() -> Option<Jvmti> {
    JVMTI.get().copied()
}

pub fn java_vm() -> *mut JavaVM {
    VM.load(Ordering::Acquire)
}

/// Gets a JVMTI env, requests capabilities and enables our events, delivered to
/// `callbacks`. Idempotent: the second `bool` says whether this call set the VM up.
///
/// # Safety
/// `vm` must be the process's valid `JavaVM*`.
pub unsafe fn init(vm: *mut JavaVM, callbacks: &EventCallbacks) -> Result<(Jvmti, bool), String> {
    if let Some(j) = JVMTI.get() {
        return Ok((*j, false));
    }
    VM.store(vm, Ordering::Release);
    // SAFETY: caller guarantees `vm`.
    let jvmti = unsafe { Jvmti::from_vm(vm) }.ok_or("JVMTI is not available")?;
    let caps = Capabilities::default()
        .with(Capabilities::GET_LINE_NUMBERS)
        .with(Capabilities::GET_SOURCE_FILE_NAME)
        .with(Capabilities::GET_BYTECODES);
    if let Err(e) = jvmti.add_capabilities(&caps) {
        log::warn(&format!(
            "JVMTI AddCapabilities failed ({e}); line numbers may be missing"
        ));
    }
    jvmti
        .set_event_callbacks(callbacks)
        .map_err(|e| format!("JVMTI SetEventCallbacks failed: {e}"))?;
    // AsyncGetCallTrace answers -1 (ticks_no_class_load) for every sample unless
    // ClassLoad events are enabled, even with an empty callback.
    for event in [
        jvmti::EVENT_VM_INIT,
        jvmti::EVENT_VM_DEATH,
        jvmti::EVENT_THREAD_START,
        jvmti::EVENT_THREAD_END,
        jvmti::EVENT_CLASS_LOAD,
        jvmti::EVENT_CLASS_PREPARE,
    ] {
        jvmti
            .enable_event(event)
            .map_err(|e| format!("JVMTI SetEventNotificationMode({event}) failed: {e}"))?;
    }
    Ok((*JVMTI.get_or_init(|| jvmti), true))
}

/// Name and Java id (`Thread.getId()`) of `thread`, or of the calling thread when it is
/// null, through JVMTI and JNI. The id is read from the `tid` field, as upstream does: no
/// Java code runs (a subclass may override `getId`, and a dump must not call into one).
pub fn describe_thread(jvmti: Jvmti, jni: *mut JNIEnv, thread: jthread) -> Option<(String, i64)> {
    if jni.is_null() {
        return None;
    }
    let own = thread.is_null().then(|| jvmti.current_thread());
    let thread = own.unwrap_or(thread);
    if thread.is_null() {
        return None;
    }
    let described = jvmti
        .thread_name(jni, thread)
        .map(|name| (name, java_thread_id(jni, thread)));
    if let Some(t) = own {
        jvmti::delete_local_ref(jni, t);
    }
    described
}

/// `java.lang.Thread.tid` (a `long` in JDK 8 to 25), looked up once: `Thread` is never
/// unloaded. None where the field is missing.
static THREAD_ID_FIELD: OnceLock<Option<usize>> = OnceLock::new();

/// `thread`'s Java id, 0 where it cannot be read.
fn java_thread_id(jni: *mut JNIEnv, thread: jthread) -> i64 {
    // SAFETY: jni is the current thread's env.
    let Ok(mut env) = (unsafe { jni::JNIEnv::from_raw(jni) }) else {
        return 0;
    };
    let field = *THREAD_ID_FIELD.get_or_init(|| {
        let id = env.get_field_id("java/lang/Thread", "tid", "J");
        if env.exception_check().unwrap_or(false) {
            let _ = env.exception_clear();
        }
        id.ok().map(|f| f.into_raw() as usize)
    });
    let Some(field) = field else { return 0 };
    // SAFETY: the id was looked up on java.lang.Thread, and `thread` is a live reference
    // to a java.lang.Thread.
    let (field, obj) = unsafe {
        (
            jni::objects::JFieldID::from_raw(field as jni::sys::jfieldID),
            jni::objects::JObject::from_raw(thread),
        )
    };
    let id = env
        .get_field_unchecked(
            &obj,
            field,
            jni::signature::ReturnType::Primitive(jni::signature::Primitive::Long),
        )
        .and_then(|v| v.j())
        .unwrap_or(0);
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
    }
    id
}

/// The running JDK's feature version (11, 17, 21, 25), 0 if unknown.
pub fn java_feature_version() -> u32 {
    // JVMTI sees the VM's own properties only: java.specification.version is set later
    // by the class library, java.vm.specification.version is there from the start.
    let v = jvmti()
        .and_then(|j| {
            j.system_property("java.vm.specification.version")
                .or_else(|| j.system_property("java.specification.version"))
        })
        .unwrap_or_default();
    let v = v.strip_prefix("1.").unwrap_or(&v);
    v.split('.')
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0)
}
