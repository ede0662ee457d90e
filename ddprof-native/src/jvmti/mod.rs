//! Hand-written JVMTI bindings: only the function-table slots ddprof calls.
//!
//! A `jvmtiEnv*` points at a pointer to the shared function table. Slot numbers are
//! the function numbers of the JVMTI specification (slot 1 is reserved), so the
//! table index is `number - 1`. Signatures are transcribed from `jvmti.h`.

// JNI/JVMTI handles (jclass, jmethodID, JNIEnv*) are opaque tokens the JVM validates;
// wrapping every function that passes one through as `unsafe` would add no safety.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{c_char, c_int, c_uchar, c_void, CStr};
use std::ptr;

use jni::sys::{jclass, jint, jlong, jmethodID, jobject, JNIEnv, JavaVM};

/// The JVM we live in: the `JavaVM*`, our JVMTI environment, what they tell.
pub mod jvm;
pub mod redefine;
pub mod thread_tid;

/// JVMTI's `jthread` is a `jobject` referring to a java.lang.Thread.
#[allow(non_camel_case_types)]
pub type jthread = jobject;

pub type JvmtiError = c_int;
pub const JVMTI_ERROR_NONE: JvmtiError = 0;
pub const JVMTI_VERSION_1_2: jint = 0x3001_0200;
pub const JVMTI_ENABLE: c_int = 1;
pub const JVMTI_DISABLE: c_int = 0;
/// The capability or function is not available (e.g. held by another environment).
pub const JVMTI_ERROR_NOT_AVAILABLE: JvmtiError = 98;

pub const EVENT_VM_INIT: c_int = 50;
pub const EVENT_VM_DEATH: c_int = 51;
pub const EVENT_THREAD_START: c_int = 52;
pub const EVENT_THREAD_END: c_int = 53;
pub const EVENT_CLASS_LOAD: c_int = 55;
pub const EVENT_CLASS_PREPARE: c_int = 56;
pub const EVENT_COMPILED_METHOD_LOAD: c_int = 68;
pub const EVENT_DYNAMIC_CODE_GENERATED: c_int = 70;
pub const EVENT_GARBAGE_COLLECTION_FINISH: c_int = 82;
pub const EVENT_SAMPLED_OBJECT_ALLOC: c_int = 86;

/// Bits of GetClassStatus.
pub const CLASS_STATUS_ARRAY: jint = 16;
pub const CLASS_STATUS_PRIMITIVE: jint = 32;

/// Phases reported by GetPhase.
pub const PHASE_LIVE: c_int = 4;

// Function numbers from the JVMTI specification.
const SET_EVENT_NOTIFICATION_MODE: usize = 2;
const GET_ALL_THREADS: usize = 4;
const GET_THREAD_INFO: usize = 9;
const GET_CURRENT_THREAD: usize = 18;
const DEALLOCATE: usize = 47;
const GET_CLASS_SIGNATURE: usize = 48;
const GET_CLASS_STATUS: usize = 49;
const GET_SOURCE_FILE_NAME: usize = 50;
const GET_CLASS_METHODS: usize = 52;
const GET_CLASS_LOADER: usize = 57;
const GET_METHOD_NAME: usize = 64;
const GET_METHOD_DECLARING_CLASS: usize = 65;
const GET_METHOD_MODIFIERS: usize = 66;
const GET_LINE_NUMBER_TABLE: usize = 70;
const GET_LOADED_CLASSES: usize = 78;
const SET_EVENT_CALLBACKS: usize = 122;
const GENERATE_EVENTS: usize = 123;
const GET_SYSTEM_PROPERTIES: usize = 130;
const GET_SYSTEM_PROPERTY: usize = 131;
const SET_SYSTEM_PROPERTY: usize = 132;
const GET_PHASE: usize = 133;
const ADD_CAPABILITIES: usize = 142;
const SET_HEAP_SAMPLING_INTERVAL: usize = 156;

/// `jvmtiCapabilities`: 128 bits of flags, bit n = the n-th field of the C struct.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct Capabilities {
    bits: [u32; 4],
}

impl Capabilities {
    pub const GET_BYTECODES: u32 = 3;
    pub const GET_SOURCE_FILE_NAME: u32 = 11;
    pub const GET_LINE_NUMBERS: u32 = 12;
    pub const GENERATE_ALL_CLASS_HOOK_EVENTS: u32 = 26;
    pub const GENERATE_COMPILED_METHOD_LOAD_EVENTS: u32 = 27;
    pub const GENERATE_GARBAGE_COLLECTION_EVENTS: u32 = 31;
    /// JEP 331 heap sampling (JDK 11+). HotSpot lets one environment hold it at a time.
    pub const GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS: u32 = 43;

    pub fn with(mut self, bit: u32) -> Self {
        self.bits[(bit / 32) as usize] |= 1 << (bit % 32);
        self
    }
}

/// `jvmtiThreadInfo` as JVMTI fills it.
#[repr(C)]
struct ThreadInfo {
    name: *mut c_char,
    priority: jint,
    is_daemon: c_uchar,
    thread_group: jobject,
    context_class_loader: jobject,
}

#[repr(C)]
struct LineNumberEntry {
    start_location: jlong,
    line_number: jint,
}

pub type VmInitFn = unsafe extern "C" fn(*mut JvmtiEnvPtr, *mut JNIEnv, jthread);
pub type VmDeathFn = unsafe extern "C" fn(*mut JvmtiEnvPtr, *mut JNIEnv);
pub type ThreadFn = unsafe extern "C" fn(*mut JvmtiEnvPtr, *mut JNIEnv, jthread);
pub type ClassFn = unsafe extern "C" fn(*mut JvmtiEnvPtr, *mut JNIEnv, jthread, jclass);
/// CompiledMethodLoad(env, method, code_size, code_addr, map_length, map, compile_info).
pub type CompiledMethodLoadFn = unsafe extern "C" fn(
    *mut JvmtiEnvPtr,
    jmethodID,
    jint,
    *const c_void,
    jint,
    *const c_void,
    *const c_void,
);
/// DynamicCodeGenerated(env, name, address, length): code the VM generated (stubs).
pub type DynamicCodeFn = unsafe extern "C" fn(*mut JvmtiEnvPtr, *const c_char, *const c_void, jint);
/// GarbageCollectionFinish: runs inside the GC; only raw monitors and atomics are allowed.
pub type GcFn = unsafe extern "C" fn(*mut JvmtiEnvPtr);
/// SampledObjectAlloc(env, jni, thread, object, object_klass, size), on the allocating thread.
pub type SampledAllocFn =
    unsafe extern "C" fn(*mut JvmtiEnvPtr, *mut JNIEnv, jthread, jobject, jclass, jlong);
type Unused = Option<unsafe extern "C" fn()>;

/// The entries of `jvmtiEventCallbacks` for events 50..86: one slot per event number,
/// reserved numbers included. JVMTI copies only `size_of` bytes, so a prefix of the struct
/// is a valid argument.
#[repr(C)]
#[derive(Default)]
pub struct EventCallbacks {
    pub vm_init: Option<VmInitFn>,
    pub vm_death: Option<VmDeathFn>,
    pub thread_start: Option<ThreadFn>,
    pub thread_end: Option<ThreadFn>,
    pub class_file_load_hook: Option<unsafe extern "C" fn()>,
    pub class_load: Option<ClassFn>,
    pub class_prepare: Option<ClassFn>,
    /// Events 57..=67 (VMStart .. NativeMethodBind): not used.
    pub unused_57_67: [Unused; 11],
    /// Event 68.
    pub compiled_method_load: Option<CompiledMethodLoadFn>,
    /// Event 69 (CompiledMethodUnload): not used.
    pub unused_69: Unused,
    /// Event 70.
    pub dynamic_code_generated: Option<DynamicCodeFn>,
    /// Events 71..=81 (DataDumpRequest .. GarbageCollectionStart): not used.
    pub unused_71_81: [Unused; 11],
    /// Event 82.
    pub garbage_collection_finish: Option<GcFn>,
    /// Events 83..=85 (ObjectFree, VMObjectAlloc, reserved).
    pub unused_83_85: [Unused; 3],
    /// Event 86.
    pub sampled_object_alloc: Option<SampledAllocFn>,
}

/// Opaque `jvmtiEnv` (a pointer to the function table).
pub type JvmtiEnvPtr = *const *const c_void;

/// One entry of a method's line table: (start bci, line). A bci is below 65,536 (the JVM's
/// limit on a method's code): 8 bytes an entry, not JVMTI's 16 (a first dump holds the tables
/// of thousands of methods, and the per-frame search reads them).
pub type BciLine = (u32, i32);

/// A JVMTI environment. Usable from any thread attached to the JVM; never from a signal handler.
#[derive(Clone, Copy)]
pub struct Jvmti(*mut JvmtiEnvPtr);

// SAFETY: a jvmtiEnv may be used from any attached thread; JVMTI synchronises internally.
unsafe impl Send for Jvmti {}
// SAFETY: as above.
unsafe impl Sync for Jvmti {}

macro_rules! call {
    ($self:ident, $slot:expr, fn($($t:ty),*) $(, $arg:expr)*) => {{
        // SAFETY: the env pointer came from GetEnv and the slot index and signature match jvmti.h.
        unsafe {
            let table = *$self.0;
            let f: unsafe extern "C" fn(*mut JvmtiEnvPtr $(, $t)*) -> JvmtiError =
                std::mem::transmute(*table.add($slot - 1));
            f($self.0 $(, $arg)*)
        }
    }};
}

fn check(err: JvmtiError) -> Result<(), JvmtiError> {
    if err == JVMTI_ERROR_NONE {
        Ok(())
    } else {
        Err(err)
    }
}

impl Jvmti {
    /// Gets a JVMTI environment from the VM.
    ///
    /// # Safety
    /// `vm` must be a valid `JavaVM*`.
    pub unsafe fn from_vm(vm: *mut JavaVM) -> Option<Jvmti> {
        let mut env: *mut c_void = ptr::null_mut();
        // SAFETY: caller guarantees `vm`; GetEnv is the JNI invocation API entry.
        let rc = unsafe { ((**vm).GetEnv?)(vm, &mut env, JVMTI_VERSION_1_2) };
        (rc == 0 && !env.is_null()).then_some(Jvmti(env as *mut JvmtiEnvPtr))
    }

    pub fn raw(&self) -> *mut JvmtiEnvPtr {
        self.0
    }

    pub fn add_capabilities(&self, caps: &Capabilities) -> Result<(), JvmtiError> {
        check(call!(self, ADD_CAPABILITIES, fn(*const Capabilities), caps))
    }

    pub fn set_event_callbacks(&self, cb: &EventCallbacks) -> Result<(), JvmtiError> {
        let size = std::mem::size_of::<EventCallbacks>() as jint;
        check(call!(
            self,
            SET_EVENT_CALLBACKS,
            fn(*const EventCallbacks, jint),
            cb,
            size
        ))
    }

    pub fn enable_event(&self, event: c_int) -> Result<(), JvmtiError> {
        check(call!(
            self,
            SET_EVENT_NOTIFICATION_MODE,
            fn(c_int, c_int, jthread),
            JVMTI_ENABLE,
            event,
            ptr::null_mut()
        ))
    }

    /// Replays `event` for what already exists (DynamicCodeGenerated: every stub so far).
    pub fn generate_events(&self, event: c_int) -> Result<(), JvmtiError> {
        check(call!(self, GENERATE_EVENTS, fn(c_int), event))
    }

    pub fn disable_event(&self, event: c_int) -> Result<(), JvmtiError> {
        check(call!(
            self,
            SET_EVENT_NOTIFICATION_MODE,
            fn(c_int, c_int, jthread),
            JVMTI_DISABLE,
            event,
            ptr::null_mut()
        ))
    }

    /// SetHeapSamplingInterval (JDK 11+): the mean bytes between SampledObjectAlloc events.
    pub fn set_heap_sampling_interval(&self, bytes: jint) -> Result<(), JvmtiError> {
        check(call!(self, SET_HEAP_SAMPLING_INTERVAL, fn(jint), bytes))
    }

    pub fn phase(&self) -> c_int {
        let mut phase: c_int = 0;
        call!(self, GET_PHASE, fn(*mut c_int), &mut phase);
        phase
    }

    fn deallocate<T>(&self, p: *mut T) {
        if !p.is_null() {
            call!(self, DEALLOCATE, fn(*mut c_uchar), p as *mut c_uchar);
        }
    }

    /// Takes ownership of a JVMTI-allocated string.
    fn take_string(&self, p: *mut c_char) -> Option<String> {
        if p.is_null() {
            return None;
        }
        // SAFETY: JVMTI returns NUL-terminated modified UTF-8; we copy before freeing.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        self.deallocate(p);
        Some(s)
    }

    /// Every live platform thread (GetAllThreads) as local refs of `jni`'s current frame;
    /// the caller deletes them (or pops the frame).
    pub fn all_threads(&self, jni: *mut JNIEnv) -> Vec<jthread> {
        let mut count: jint = 0;
        let mut threads: *mut jthread = ptr::null_mut();
        if check(call!(
            self,
            GET_ALL_THREADS,
            fn(*mut jint, *mut *mut jthread),
            &mut count,
            &mut threads
        ))
        .is_err()
            || threads.is_null()
        {
            return Vec::new();
        }
        // SAFETY: JVMTI returned an array of `count` jthread values.
        let v = unsafe { std::slice::from_raw_parts(threads, count.max(0) as usize) }.to_vec();
        self.deallocate(threads);
        // As in `loaded_classes`: checked JNI counts the references against the frame.
        ensure_local_capacity(jni, count.saturating_add(32));
        v
    }

    /// The calling thread's java.lang.Thread as a local ref (GetCurrentThread); null if
    /// the thread is not a Java thread.
    pub fn current_thread(&self) -> jthread {
        let mut thread: jthread = ptr::null_mut();
        if check(call!(
            self,
            GET_CURRENT_THREAD,
            fn(*mut jthread),
            &mut thread
        ))
        .is_err()
        {
            return ptr::null_mut();
        }
        thread
    }

    /// Name of a thread (JVMTI GetThreadInfo). Deletes the local refs the call makes.
    pub fn thread_name(&self, jni: *mut JNIEnv, thread: jthread) -> Option<String> {
        let mut info = ThreadInfo {
            name: ptr::null_mut(),
            priority: 0,
            is_daemon: 0,
            thread_group: ptr::null_mut(),
            context_class_loader: ptr::null_mut(),
        };
        check(call!(
            self,
            GET_THREAD_INFO,
            fn(jthread, *mut ThreadInfo),
            thread,
            &mut info
        ))
        .ok()?;
        delete_local_ref(jni, info.thread_group);
        delete_local_ref(jni, info.context_class_loader);
        self.take_string(info.name)
    }

    /// Creates the jmethodIDs of every method of `class` (GetClassMethods allocates them).
    pub fn load_method_ids(&self, class: jclass) -> Result<usize, JvmtiError> {
        self.class_methods(class).map(|ids| ids.len())
    }

    /// GetClassStatus says ARRAY or PRIMITIVE: a class with no methods of its own.
    pub fn is_array_or_primitive(&self, class: jclass) -> bool {
        self.class_status(class)
            .is_ok_and(|s| s & (CLASS_STATUS_ARRAY | CLASS_STATUS_PRIMITIVE) != 0)
    }

    /// The jmethodIDs of every method of `class` (GetClassMethods creates any missing).
    pub fn class_methods(&self, class: jclass) -> Result<Vec<jmethodID>, JvmtiError> {
        let mut count: jint = 0;
        let mut methods: *mut jmethodID = ptr::null_mut();
        check(call!(
            self,
            GET_CLASS_METHODS,
            fn(jclass, *mut jint, *mut *mut jmethodID),
            class,
            &mut count,
            &mut methods
        ))?;
        if methods.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: JVMTI returned an array of `count` jmethodIDs.
        let v = unsafe { std::slice::from_raw_parts(methods, count.max(0) as usize) }.to_vec();
        self.deallocate(methods);
        Ok(v)
    }

    /// JVMTI GetClassStatus bits.
    pub fn class_status(&self, class: jclass) -> Result<jint, JvmtiError> {
        let mut status: jint = 0;
        check(call!(
            self,
            GET_CLASS_STATUS,
            fn(jclass, *mut jint),
            class,
            &mut status
        ))?;
        Ok(status)
    }

    /// All loaded classes as local refs of `jni`'s current frame; the caller deletes them.
    pub fn loaded_classes(&self, jni: *mut JNIEnv) -> Vec<jclass> {
        let mut count: jint = 0;
        let mut classes: *mut jclass = ptr::null_mut();
        if check(call!(
            self,
            GET_LOADED_CLASSES,
            fn(*mut jint, *mut *mut jclass),
            &mut count,
            &mut classes
        ))
        .is_err()
            || classes.is_null()
        {
            return Vec::new();
        }
        // SAFETY: JVMTI returned an array of `count` jclass values.
        let v = unsafe { std::slice::from_raw_parts(classes, count.max(0) as usize) }.to_vec();
        self.deallocate(classes);
        // Checked JNI (-Xcheck:jni) warns at the next JNI call that the frame holds more
        // references than asked for: ask for them all now (plain JNI only checks the number).
        ensure_local_capacity(jni, count.saturating_add(32));
        v
    }

    /// The class's defining loader as a local ref; null for the boot loader.
    pub fn class_loader(&self, class: jclass) -> Result<jobject, JvmtiError> {
        let mut loader: jobject = ptr::null_mut();
        check(call!(
            self,
            GET_CLASS_LOADER,
            fn(jclass, *mut jobject),
            class,
            &mut loader
        ))?;
        Ok(loader)
    }

    pub fn class_signature(&self, class: jclass) -> Result<String, JvmtiError> {
        let mut sig: *mut c_char = ptr::null_mut();
        let mut generic: *mut c_char = ptr::null_mut();
        check(call!(
            self,
            GET_CLASS_SIGNATURE,
            fn(jclass, *mut *mut c_char, *mut *mut c_char),
            class,
            &mut sig,
            &mut generic
        ))?;
        self.deallocate(generic);
        self.take_string(sig).ok_or(-1)
    }

    /// The class's `SourceFile` attribute (`Foo.java`); needs `can_get_source_file_name`.
    pub fn source_file_name(&self, class: jclass) -> Result<String, JvmtiError> {
        let mut name: *mut c_char = ptr::null_mut();
        check(call!(
            self,
            GET_SOURCE_FILE_NAME,
            fn(jclass, *mut *mut c_char),
            class,
            &mut name
        ))?;
        self.take_string(name).ok_or(-1)
    }

    /// (name, descriptor) of a method.
    pub fn method_name(&self, m: jmethodID) -> Result<(String, String), JvmtiError> {
        let mut name: *mut c_char = ptr::null_mut();
        let mut sig: *mut c_char = ptr::null_mut();
        let mut generic: *mut c_char = ptr::null_mut();
        check(call!(
            self,
            GET_METHOD_NAME,
            fn(jmethodID, *mut *mut c_char, *mut *mut c_char, *mut *mut c_char),
            m,
            &mut name,
            &mut sig,
            &mut generic
        ))?;
        self.deallocate(generic);
        let name = self.take_string(name);
        let sig = self.take_string(sig);
        Ok((name.unwrap_or_default(), sig.unwrap_or_default()))
    }

    /// The declaring class as a local ref (caller deletes it).
    pub fn method_declaring_class(&self, m: jmethodID) -> Result<jclass, JvmtiError> {
        let mut class: jclass = ptr::null_mut();
        check(call!(
            self,
            GET_METHOD_DECLARING_CLASS,
            fn(jmethodID, *mut jclass),
            m,
            &mut class
        ))?;
        Ok(class)
    }

    pub fn method_modifiers(&self, m: jmethodID) -> Result<jint, JvmtiError> {
        let mut mods: jint = 0;
        check(call!(
            self,
            GET_METHOD_MODIFIERS,
            fn(jmethodID, *mut jint),
            m,
            &mut mods
        ))?;
        Ok(mods)
    }

    /// Sorted by bci; empty when the method has none (native, abstract).
    pub fn line_number_table(&self, m: jmethodID) -> Vec<BciLine> {
        let mut count: jint = 0;
        let mut table: *mut LineNumberEntry = ptr::null_mut();
        if check(call!(
            self,
            GET_LINE_NUMBER_TABLE,
            fn(jmethodID, *mut jint, *mut *mut LineNumberEntry),
            m,
            &mut count,
            &mut table
        ))
        .is_err()
            || table.is_null()
        {
            return Vec::new();
        }
        // SAFETY: JVMTI returned `count` entries.
        let entries = unsafe { std::slice::from_raw_parts(table, count.max(0) as usize) };
        // A bytecode method's locations are its bcis (below 65,536); anything else is dropped.
        let mut v: Vec<BciLine> = entries
            .iter()
            .filter_map(|e| Some((u32::try_from(e.start_location).ok()?, e.line_number)))
            .collect();
        self.deallocate(table);
        v.sort_unstable();
        v
    }

    pub fn system_property(&self, key: &str) -> Option<String> {
        let key = std::ffi::CString::new(key).ok()?;
        let mut value: *mut c_char = ptr::null_mut();
        check(call!(
            self,
            GET_SYSTEM_PROPERTY,
            fn(*const c_char, *mut *mut c_char),
            key.as_ptr(),
            &mut value
        ))
        .ok()?;
        self.take_string(value)
    }

    /// Sets a system property; JVMTI allows it only in the OnLoad phase.
    pub fn set_system_property(&self, key: &str, value: &str) -> Result<(), JvmtiError> {
        let key = std::ffi::CString::new(key).map_err(|_| -1)?;
        let value = std::ffi::CString::new(value).map_err(|_| -1)?;
        check(call!(
            self,
            SET_SYSTEM_PROPERTY,
            fn(*const c_char, *const c_char),
            key.as_ptr(),
            value.as_ptr()
        ))
    }

    /// Names of all system properties.
    pub fn system_property_names(&self) -> Vec<String> {
        let mut count: jint = 0;
        let mut names: *mut *mut c_char = ptr::null_mut();
        if check(call!(
            self,
            GET_SYSTEM_PROPERTIES,
            fn(*mut jint, *mut *mut *mut c_char),
            &mut count,
            &mut names
        ))
        .is_err()
            || names.is_null()
        {
            return Vec::new();
        }
        // SAFETY: JVMTI returned `count` strings, each allocated separately.
        let raw = unsafe { std::slice::from_raw_parts(names, count.max(0) as usize) };
        let v = raw.iter().filter_map(|&p| self.take_string(p)).collect();
        self.deallocate(names);
        v
    }
}

/// JNI PushLocalFrame: a new frame of local references with room for `capacity`; every
/// reference made after it is deleted by [`pop_local_frame`]. False when it failed (out of
/// memory; the pending exception is cleared).
pub fn push_local_frame(jni: *mut JNIEnv, capacity: jint) -> bool {
    // SAFETY: `jni` is the current thread's JNIEnv (checked non-null by `jni_succeeds`).
    jni_succeeds(jni, |t| unsafe {
        t.PushLocalFrame.map(|f| f(jni, capacity))
    })
}

/// JNI EnsureLocalCapacity: room for `capacity` more local references in the current
/// frame. False when it failed (the pending exception is cleared).
pub fn ensure_local_capacity(jni: *mut JNIEnv, capacity: jint) -> bool {
    // SAFETY: as above.
    jni_succeeds(jni, |t| unsafe {
        t.EnsureLocalCapacity.map(|f| f(jni, capacity))
    })
}

/// Runs a JNI call that returns 0 on success; a failure's pending exception is cleared.
fn jni_succeeds(
    jni: *mut JNIEnv,
    call: impl FnOnce(&jni::sys::JNINativeInterface_) -> Option<jint>,
) -> bool {
    if jni.is_null() {
        return false;
    }
    // SAFETY: a non-null JNIEnv of the current thread points at its function table.
    let ok = call(unsafe { &**jni }) == Some(0);
    if !ok {
        clear_exception(jni);
    }
    ok
}

/// JNI PopLocalFrame for a frame pushed by [`push_local_frame`]: deletes its references.
pub fn pop_local_frame(jni: *mut JNIEnv) {
    if jni.is_null() {
        return;
    }
    // SAFETY: `jni` is the current thread's JNIEnv and the caller pushed a frame on it.
    unsafe {
        if let Some(f) = (**jni).PopLocalFrame {
            f(jni, ptr::null_mut());
        }
    }
}

/// Clears the current thread's pending exception, if any.
pub fn clear_exception(jni: *mut JNIEnv) {
    // SAFETY: `jni` is the current thread's JNIEnv.
    unsafe {
        if let (Some(check), Some(clear)) = ((**jni).ExceptionCheck, (**jni).ExceptionClear) {
            if check(jni) != 0 {
                clear(jni);
            }
        }
    }
}

/// JNI FindClass; null (and no pending exception) when the class is not found.
pub fn find_class(jni: *mut JNIEnv, name: &std::ffi::CStr) -> jclass {
    if jni.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `jni` is the current thread's JNIEnv; `name` is NUL-terminated.
    let class = unsafe {
        match (**jni).FindClass {
            Some(f) => f(jni, name.as_ptr()),
            None => ptr::null_mut(),
        }
    };
    clear_exception(jni);
    class
}

/// JNI IsSameObject: whether `a` and `b` refer to the same object (false if either is null).
pub fn is_same_object(jni: *mut JNIEnv, a: jobject, b: jobject) -> bool {
    if jni.is_null() || a.is_null() || b.is_null() {
        return false;
    }
    // SAFETY: `jni` is the current thread's JNIEnv; `a` and `b` are live references on it.
    unsafe { (**jni).IsSameObject.is_some_and(|f| f(jni, a, b) != 0) }
}

/// JNI NewLocalRef: a new local reference to what `obj` refers to, read through the
/// collector's load barrier (so under ZGC it holds the object's current address); null when
/// `obj` is null or no reference could be made.
pub fn new_local_ref(jni: *mut JNIEnv, obj: jobject) -> jobject {
    if jni.is_null() || obj.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `jni` is the current thread's JNIEnv and `obj` a live reference on it.
    unsafe {
        (**jni)
            .NewLocalRef
            .map_or(std::ptr::null_mut(), |f| f(jni, obj))
    }
}

/// Deletes a JNI local ref (null-safe).
pub fn delete_local_ref(jni: *mut JNIEnv, obj: jobject) {
    if jni.is_null() || obj.is_null() {
        return;
    }
    // SAFETY: `jni` is the current thread's JNIEnv and `obj` a local ref it owns.
    unsafe {
        if let Some(f) = (**jni).DeleteLocalRef {
            f(jni, obj);
        }
    }
}
