//! Compiles `csrc/otel_tls.c`: the exported thread-local `otel_thread_ctx_v1` (OTEP #4947),
//! which stable Rust cannot define (docs/context.md, "The TLS symbol"); links the cdylib
//! with `-z nodelete`.

fn main() {
    // DF_1_NODELETE: the dynamic linker never unmaps the library, whatever dlclose calls it
    // gets (the JDK dlcloses a JNI library when its class loader is collected), because our
    // signal handlers, JVMTI callbacks, patched JVMTI functions and threads point into it
    // for the life of the process. A flag of the file, in force from the first mapping.
    // musl never unloads anything; macOS builds are not made.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
    println!("cargo:rerun-if-changed=csrc/otel_tls.c");
    cc::Build::new()
        .file("csrc/otel_tls.c")
        .flag_if_supported("-fvisibility=hidden")
        .compile("ddprof_otel_tls");
}
