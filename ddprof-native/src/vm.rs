//! The JVM we live in: the `JavaVM*`, our JVMTI environment, and the JVMTI event
//! callbacks (class preparation, thread start/end, VM init/death). Set up once, from
//! whichever entry point runs first (`JNI_OnLoad`, `Agent_OnLoad`, `Agent_OnAttach`).

// JNI/JVMTI handles (jclass, jmethodID, JNIEnv*) are opaque tokens the JVM validates;
// wrapping every function that passes one through as `unsafe` would add no safety.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use jni::sys::{jclass, JNIEnv, JavaVM};
use parking_lot::Mutex;

use crate::jvmti::{self, jthread, Capabilities, EventCallbacks, Jvmti, JvmtiEnvPtr};
use crate::{log, profiler, threads};

static JVMTI: OnceLock<Jvmti> = OnceLock::new();
static VM: AtomicPtr<JavaVM> = AtomicPtr::new(std::ptr::null_mut());
/// Command to run at VMInit (from `-agentpath:...=<options>`).
static AGENT_COMMAND: Mutex<Option<String>> = Mutex::new(None);

pub fn jvmti() -> Option<Jvmti> {
    JVMTI.get().copied()
}

pub fn java_vm() -> *mut JavaVM {
    VM.load(Ordering::Acquire)
}

/// Gets a JVMTI env, requests capabilities and enables our events. Idempotent.
///
/// # Safety
/// `vm` must be the process's valid `JavaVM*`.
pub unsafe fn init(vm: *mut JavaVM) -> Result<Jvmti, String> {
    if let Some(j) = JVMTI.get() {
        return Ok(*j);
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
    let callbacks = EventCallbacks {
        vm_init: Some(on_vm_init),
        vm_death: Some(on_vm_death),
        thread_start: Some(on_thread_start),
        thread_end: Some(on_thread_end),
        class_file_load_hook: None,
        class_load: Some(on_class_load),
        class_prepare: Some(on_class_prepare),
    };
    jvmti
        .set_event_callbacks(&callbacks)
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
    crate::sample::context::init();
    // libjvm's VMStructs tables are filled by its static initialisers, so they are
    // readable from Agent_OnLoad on.
    crate::hotspot::vmstructs::init();
    // Before any agent can redefine a class through us or others (facts.md 8.4).
    jvmti::redefine::install(jvmti);
    let _ = JVMTI.set(jvmti);
    Ok(jvmti)
}

/// Remembers the `-agentpath` command, run once the VM is initialised.
pub fn set_agent_command(command: String) {
    *AGENT_COMMAND.lock() = Some(command);
}

/// Runs the agent command: errors go to stderr, never stop the JVM.
pub fn run_agent_command(jni: *mut JNIEnv) {
    let Some(cmd) = AGENT_COMMAND.lock().take() else {
        return;
    };
    match profiler::execute(jni, &cmd) {
        Ok(msg) => {
            if !msg.is_empty() {
                log::info(msg.trim_end());
            }
        }
        Err(e) => eprintln!("[ddprof] failed to run agent command '{cmd}': {e}"),
    }
}

/// Name and `Thread.getId()` of a thread, through JVMTI and JNI.
pub fn describe_thread(jvmti: Jvmti, jni: *mut JNIEnv, thread: jthread) -> Option<(String, i64)> {
    let name = jvmti.thread_name(jni, thread)?;
    // SAFETY: jni is the current thread's env.
    let mut env = unsafe { jni::JNIEnv::from_raw(jni) }.ok()?;
    // SAFETY: `thread` is a valid local or global ref to a java.lang.Thread.
    let obj = unsafe { jni::objects::JObject::from_raw(thread) };
    let id = env
        .call_method(&obj, "getId", "()J", &[])
        .and_then(|v| v.j())
        .unwrap_or(0);
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
    }
    Some((name, id))
}

unsafe extern "C" fn on_vm_init(_env: *mut JvmtiEnvPtr, jni: *mut JNIEnv, _thread: jthread) {
    let _ = std::panic::catch_unwind(|| run_agent_command(jni));
}

unsafe extern "C" fn on_vm_death(_env: *mut JvmtiEnvPtr, jni: *mut JNIEnv) {
    let _ = std::panic::catch_unwind(|| profiler::on_vm_death(jni));
}

unsafe extern "C" fn on_thread_start(_env: *mut JvmtiEnvPtr, jni: *mut JNIEnv, thread: jthread) {
    let _ = std::panic::catch_unwind(|| {
        let _mem = crate::memory::scope(crate::memory::Category::ThreadInfo);
        let tid = crate::sample::context::gettid();
        if let Some(jvmti) = jvmti() {
            if let Some((name, id)) = describe_thread(jvmti, jni, thread) {
                threads::register_java_thread(tid, name, id);
            }
        }
        profiler::thread_started(tid);
    });
}

unsafe extern "C" fn on_thread_end(_env: *mut JvmtiEnvPtr, _jni: *mut JNIEnv, _thread: jthread) {
    let _ = std::panic::catch_unwind(|| profiler::thread_ended(crate::sample::context::gettid()));
}

unsafe extern "C" fn on_class_load(
    _env: *mut JvmtiEnvPtr,
    _jni: *mut JNIEnv,
    _thread: jthread,
    _class: jclass,
) {
}

unsafe extern "C" fn on_class_prepare(
    _env: *mut JvmtiEnvPtr,
    jni: *mut JNIEnv,
    _thread: jthread,
    class: jclass,
) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(jvmti) = jvmti() {
            crate::methods::preload::on_class_prepare(jvmti, jni, class);
        }
    });
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
