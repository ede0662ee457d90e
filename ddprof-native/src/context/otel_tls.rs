//! The exported thread-local `otel_thread_ctx_v1` (OTEP #4947), defined in
//! `csrc/otel_tls.c` because stable Rust cannot export a thread-local. It holds, per
//! thread, the address of that thread's context record (`sample::context::OtelRecord`), for
//! out-of-process readers. Touched only here, on the owning thread, never in a signal
//! handler (docs/context.md).

use core::ffi::c_void;

extern "C" {
    fn ddprof_otel_tls_set(record: *mut c_void);
    fn ddprof_otel_tls_get() -> *mut c_void;
}

/// Points the calling thread's `otel_thread_ctx_v1` at `record` (null clears it). Not
/// signal-safe, and not for a handler: the first access of a dlopen'ed library's TLS on a
/// thread may allocate (glibc) or take a lock that a signal arriving meanwhile could need
/// (musl), so signals are blocked around it.
pub fn publish(record: *const c_void) {
    // SAFETY: sigset manipulation on local storage; pthread_sigmask with valid pointers.
    unsafe {
        let mut all: libc::sigset_t = core::mem::zeroed();
        let mut old: libc::sigset_t = core::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        // SAFETY: the C accessor stores a pointer into the caller's own TLS slot.
        ddprof_otel_tls_set(record as *mut c_void);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, core::ptr::null_mut());
    }
}

/// The calling thread's `otel_thread_ctx_v1` (null until its first context write). Not for
/// a signal handler (see [`publish`]).
pub fn current() -> *const c_void {
    // SAFETY: reads the caller's own TLS slot.
    unsafe { ddprof_otel_tls_get() }
}

/// The exported symbol itself. Defined in Rust so that rustc lists it in the library's
/// export list (its version script hides every symbol it did not define), and placed in
/// `.tdata` so that the linker makes it a thread-local (STT_TLS) symbol. Rust code must
/// never read it: a plain static access would not go through TLS addressing. Only the C
/// accessors, which declare it `extern __thread`, touch it.
#[no_mangle]
#[used]
#[link_section = ".tdata.otel_thread_ctx_v1"]
#[allow(non_upper_case_globals)]
pub static mut otel_thread_ctx_v1: usize = 0;

/// The calling thread's record as an outside reader finds it: the symbol looked up by name in
/// this library's dynamic symbol table (`dlsym` resolves a TLS symbol to the calling
/// thread's instance), the pointer there followed, its 640 bytes copied. For tests.
pub fn lookup_by_symbol() -> Option<[u8; crate::sample::context::RECORD_SIZE]> {
    // SAFETY: dladdr/dlopen/dlsym with valid C strings and out pointers; RTLD_NOLOAD only
    // returns a handle to this already-loaded library, closed again below. The record pointer
    // is this thread's own (published by `publish`), alive while the thread runs.
    unsafe {
        let mut info: libc::Dl_info = core::mem::zeroed();
        if libc::dladdr(lookup_by_symbol as *const c_void, &mut info) == 0
            || info.dli_fname.is_null()
        {
            return None;
        }
        let handle = libc::dlopen(info.dli_fname, libc::RTLD_NOW | libc::RTLD_NOLOAD);
        if handle.is_null() {
            return None;
        }
        let slot = libc::dlsym(handle, c"otel_thread_ctx_v1".as_ptr()) as *const *const u8;
        libc::dlclose(handle);
        if slot.is_null() || (*slot).is_null() {
            return None;
        }
        let mut out = [0u8; crate::sample::context::RECORD_SIZE];
        core::ptr::copy_nonoverlapping(*slot, out.as_mut_ptr(), out.len());
        Some(out)
    }
}
