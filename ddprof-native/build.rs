//! Compiles `csrc/otel_tls.c`: the exported thread-local `otel_thread_ctx_v1` (OTEP #4947),
//! which stable Rust cannot define (docs/context.md, "The TLS symbol"); links the cdylib
//! with `-z nodelete` and `-z keep-text-section-prefix`; links aarch64 with rustc's bundled
//! LLD, as x86_64 already is.

fn main() {
    // DF_1_NODELETE: the dynamic linker never unmaps the library, whatever dlclose calls it
    // gets (the JDK dlcloses a JNI library when its class loader is collected), because our
    // signal handlers, JVMTI callbacks, patched JVMTI functions and threads point into it
    // for the life of the process. A flag of the file, in force from the first mapping.
    // musl never unloads anything; macOS builds are not made.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
        // The functions every sample runs through are in `.text.hot.*` sections
        // (`sample_path_section!`); LLD merges those into `.text` in input order unless told to
        // keep the prefix, and then places them together. (GNU ld groups them by default.)
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,keep-text-section-prefix");
    }
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("aarch64") {
        use_bundled_lld();
    }
    println!("cargo:rerun-if-changed=csrc/otel_tls.c");
    cc::Build::new()
        .file("csrc/otel_tls.c")
        .flag_if_supported("-fvisibility=hidden")
        .compile("ddprof_otel_tls");
}

/// GNU ld (bfd and gold) refuses the library on aarch64: rustc's `symbols.o` references every
/// exported symbol untyped, and `otel_thread_ctx_v1` is defined thread-local (its `.tdata`
/// section), which bfd calls a "TLS definition ... mismatches non-TLS reference". LLD accepts
/// it, and rustc (>= 1.90) already links x86_64-linux-gnu with its bundled LLD; for aarch64
/// that is opt-in on nightly only, so we ask the C driver for it the way rustc itself does:
/// `-B <sysroot>/lib/rustlib/<host>/bin/gcc-ld -fuse-ld=lld`. Without rustup's copy, an
/// `ld.lld` on PATH (Debian's `lld`) does; with neither, the link would fail, so stop here
/// with the remedy.
fn use_bundled_lld() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let host = std::env::var("HOST").unwrap_or_default();
    let sysroot = std::process::Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(sysroot) = sysroot {
        let gcc_ld = format!("{sysroot}/lib/rustlib/{host}/bin/gcc-ld");
        if std::path::Path::new(&gcc_ld).join("ld.lld").exists() {
            println!("cargo:rustc-link-arg=-B{gcc_ld}");
            println!("cargo:rustc-link-arg=-fuse-ld=lld");
            return;
        }
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("ld.lld").exists()))
        .unwrap_or(false);
    if on_path {
        println!("cargo:rustc-link-arg=-fuse-ld=lld");
        return;
    }
    panic!(
        "linking ddprof-native for aarch64 needs LLD (GNU ld rejects the exported TLS symbol \
         otel_thread_ctx_v1): neither rustup's gcc-ld/ld.lld nor an ld.lld on PATH was found; \
         install Debian's `lld` or use a rustup toolchain"
    );
}
