//! Entry points the JVM calls: `JNI_OnLoad`, `Agent_OnLoad`/`Agent_OnAttach`, the
//! `JavaProfiler` natives, the `JVMAccess` natives (`jvm_flags.rs`) and the `OTelContext` natives (`otel.rs`). Each catches panics so none crosses into the JVM, and turns
//! errors into the Java exceptions the API documents.

mod agent;
mod context_buffer;
pub mod events;
mod jvm_flags;
mod natives;
mod otel;
mod tracing;

use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::JNIEnv;

use crate::profiler::Error;

/// Runs `f`, turning a panic into `default` (counted as `native_panics`): for the natives
/// that throw nothing by contract, many on hot paths (a context write per span
/// activation), where a panic must still never cross into the JVM. `catch_unwind` costs
/// nothing until something panics.
pub(crate) fn quiet<T>(default: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        crate::counters::Counter::NativePanics.inc();
        default
    })
}

/// Runs `f`, turning an error or a panic into a pending Java exception and `default`.
pub(crate) fn guarded<T>(
    env: &mut JNIEnv,
    default: T,
    f: impl FnOnce(&mut JNIEnv) -> Result<T, Error>,
) -> T {
    let result = catch_unwind(AssertUnwindSafe(|| f(env)));
    let (class, msg) = match result {
        Ok(Ok(v)) => return v,
        Ok(Err(Error::Argument(m))) => ("java/lang/IllegalArgumentException", m),
        Ok(Err(Error::State(m))) => ("java/lang/IllegalStateException", m),
        Ok(Err(Error::Io(m))) => ("java/io/IOException", m),
        Err(_) => (
            "java/lang/IllegalStateException",
            "internal error in the ddprof native core (panic)".to_string(),
        ),
    };
    if !env.exception_check().unwrap_or(false) {
        let _ = env.throw_new(class, msg);
    }
    default
}
