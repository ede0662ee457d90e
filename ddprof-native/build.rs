//! Compiles `csrc/otel_tls.c`: the exported thread-local `otel_thread_ctx_v1` (OTEP #4947),
//! which stable Rust cannot define (docs/context.md, "The TLS symbol").

fn main() {
    println!("cargo:rerun-if-changed=csrc/otel_tls.c");
    cc::Build::new()
        .file("csrc/otel_tls.c")
        .flag_if_supported("-fvisibility=hidden")
        .compile("ddprof_otel_tls");
}
