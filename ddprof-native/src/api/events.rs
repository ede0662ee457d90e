//! The JVMTI event callbacks (VM init and death, thread start and end, class load and
//! preparation, sampled allocations and GC ends) and the `-agentpath` command they run at VMInit. Each catches panics, so
//! none crosses into the JVM, and hands the event to the profiler.

// JNI/JVMTI handles are opaque tokens the JVM validates.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use jni::sys::{jclass, jlong, jobject, JNIEnv};
use parking_lot::Mutex;

use crate::jvmti::jvm::{describe_thread, jvmti};
use crate::jvmti::{jthread, EventCallbacks, JvmtiEnvPtr};
use crate::{log, profiler, threads};

/// Command to run at VMInit (from `-agentpath:...=<options>`).
static AGENT_COMMAND: Mutex<Option<String>> = Mutex::new(None);

/// The callbacks `crate::jvmti::jvm::init` registers (through `super::agent::attach`).
pub fn callbacks() -> EventCallbacks {
    EventCallbacks {
        vm_init: Some(on_vm_init),
        vm_death: Some(on_vm_death),
        thread_start: Some(on_thread_start),
        thread_end: Some(on_thread_end),
        class_file_load_hook: None,
        class_load: Some(on_class_load),
        class_prepare: Some(on_class_prepare),
        compiled_method_load: Some(crate::profiler::codemap::on_compiled_method_load),
        dynamic_code_generated: Some(on_dynamic_code),
        garbage_collection_finish: Some(on_gc_finish),
        sampled_object_alloc: Some(on_sampled_object_alloc),
        ..EventCallbacks::default()
    }
}

/// Remembers the `-agentpath` command, run once the VM is initialised.
pub fn set_agent_command(command: String) {
    *AGENT_COMMAND.lock() = Some(command);
}

/// Runs the agent command: errors go to stderr, never stop the JVM.
pub fn run_agent_command(jni: *mut JNIEnv) -> Result<(), String> {
    let Some(cmd) = AGENT_COMMAND.lock().take() else {
        return Ok(());
    };
    match profiler::execute(jni, &cmd) {
        Ok(msg) => {
            if !msg.is_empty() {
                log::info(msg.trim_end());
            }
            Ok(())
        }
        Err(e) => {
            let e = format!("failed to run agent command '{cmd}': {e}");
            eprintln!("[ddprof] {e}");
            Err(e)
        }
    }
}

unsafe extern "C" fn on_vm_init(_env: *mut JvmtiEnvPtr, jni: *mut JNIEnv, _thread: jthread) {
    // At startup the error is on stderr; the JVM starts anyway, as upstream's agent lets it.
    let _ = std::panic::catch_unwind(|| run_agent_command(jni));
}

unsafe extern "C" fn on_vm_death(_env: *mut JvmtiEnvPtr, jni: *mut JNIEnv) {
    let _ = std::panic::catch_unwind(|| profiler::on_vm_death(jni));
}

unsafe extern "C" fn on_thread_start(_env: *mut JvmtiEnvPtr, jni: *mut JNIEnv, thread: jthread) {
    let _ = std::panic::catch_unwind(|| {
        let _mem = crate::footprint::scope(crate::footprint::Category::ThreadInfo);
        let tid = crate::sample::context::gettid();
        if let Some(jvmti) = jvmti() {
            if let Some((name, id)) = describe_thread(jvmti, jni, thread) {
                threads::register_java_thread(tid, name, id);
            }
        }
        profiler::thread_started(tid);
    });
}

unsafe extern "C" fn on_thread_end(_env: *mut JvmtiEnvPtr, jni: *mut JNIEnv, thread: jthread) {
    let _ = std::panic::catch_unwind(|| {
        let _mem = crate::footprint::scope(crate::footprint::Category::ThreadInfo);
        // Its name as it ends (renamed since, or never seen: it existed before we loaded).
        let named = jvmti().and_then(|j| describe_thread(j, jni, thread));
        profiler::thread_ended(crate::sample::context::gettid(), named);
    });
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

/// Inside the GC: nothing but an atomic (no JNI, no JVMTI, no allocation).
unsafe extern "C" fn on_gc_finish(_env: *mut JvmtiEnvPtr) {
    crate::alloc::live::on_gc_finish();
}

/// On the allocating thread, inside the VM (JEP 331 heap sampling).
unsafe extern "C" fn on_sampled_object_alloc(
    _env: *mut JvmtiEnvPtr,
    jni: *mut JNIEnv,
    _thread: jthread,
    object: jobject,
    class: jclass,
    size: jlong,
) {
    let _ = std::panic::catch_unwind(|| crate::alloc::on_sampled_alloc(jni, object, class, size));
}

/// DynamicCodeGenerated: a stub the VM made, for stub frame names and the code maps.
unsafe extern "C" fn on_dynamic_code(
    _env: *mut JvmtiEnvPtr,
    name: *const std::ffi::c_char,
    address: *const std::ffi::c_void,
    length: jni::sys::jint,
) {
    let _ = std::panic::catch_unwind(|| {
        if name.is_null() {
            return;
        }
        // SAFETY: JVMTI passes a NUL-terminated name valid for the callback.
        let bytes = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
        crate::hotspot::stubs::on_stub(bytes, address as usize, length);
        // SAFETY: as above.
        unsafe { crate::profiler::codemap::on_dynamic_code(name, address, length) };
    });
}
