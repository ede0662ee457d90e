use super::*;

#[test]
fn cpp_names_lose_their_parameters_and_rust_names_their_hash() {
    assert_eq!(
        demangle("_ZN13CompileBroker20compiler_thread_loopEv"),
        "CompileBroker::compiler_thread_loop"
    );
    assert_eq!(demangle("_ZNK6Method9bci_from_EPh"), "Method::bci_from_");
    assert_eq!(
        demangle("_ZN7CompileC2EP5ciEnvP8ciMethodi"),
        "Compile::Compile"
    );
    assert_eq!(
        demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
        "core::fmt::write"
    );
    assert_eq!(demangle("deflate_slow"), "deflate_slow");
    assert_eq!(demangle("_Zbogus"), "_Zbogus");
    assert_eq!(
        demangle(
            "_ZN19java_lang_Throwable19fill_in_stack_traceE6HandleRK12methodHandleP10JavaThread"
        ),
        "java_lang_Throwable::fill_in_stack_trace"
    );
    assert_eq!(demangle("_ZL12print_helperv"), "print_helper");
    assert_eq!(
        demangle("_ZN12MemAllocatorD2Ev"),
        "MemAllocator::~MemAllocator"
    );
    assert_eq!(
        demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
        "std::vector::push_back"
    );
    assert_eq!(
        demangle("_ZN9__gnu_cxx13new_allocatorIcE8allocateEmPKv"),
        "__gnu_cxx::new_allocator::allocate"
    );
    assert_eq!(demangle("_ZN8GrowableIiEixEi"), "Growable::operator[]");
    assert_eq!(
        demangle("_ZNSt8ios_base4InitC1Ev.cold"),
        "std::ios_base::Init::Init"
    );
    assert_eq!(
        demangle("_ZNKSt6vectorIiSaIiEE4sizeEv"),
        "std::vector::size"
    );
    assert_eq!(demangle("_ZN6Thread3runEv.part.0"), "Thread::run");
    assert_eq!(
        demangle(
            "_ZN4core3ptr46drop_in_place$LT$alloc..vec..Vec$LT$u8$GT$$GT$17h0123456789abcdefE"
        ),
        "core::ptr::drop_in_place<alloc::vec::Vec<u8>>"
    );
    assert_eq!(demangle("_ZN3FooC1ILi5EEEv"), "Foo::Foo");
}

#[test]
fn names_a_function_of_this_process_from_its_symbol_table() {
    #[inline(never)]
    extern "C" fn ddprof_symbols_probe() -> u64 {
        std::hint::black_box(42)
    }
    let pc = ddprof_symbols_probe as *const () as usize as u64;
    let s = Symbolizer::new();
    let name = s.name(pc + 1);
    assert!(name.contains("ddprof_symbols_probe"), "{name}");
}

#[test]
fn a_pc_in_no_file_is_an_address() {
    let s = Symbolizer::over(std::sync::Arc::new(crate::libs::mappings::Snapshot {
        mappings: Vec::new(),
        files: Vec::new(),
    }));
    assert_eq!(s.name(0x10), "0x10");
}

#[test]
fn table_lookup_respects_symbol_sizes() {
    let exe = std::env::current_exe().unwrap();
    let t = Table::read(exe.to_str().unwrap()).expect("test binary is ELF");
    assert!(!t.syms.is_empty());
    let (value, size, _) = t.syms[t.syms.len() / 2];
    assert!(t.symbol_at(value).is_some());
    assert!(t.symbol_at(value + u64::from(size) - 1).is_some());
    // Just below the lowest function: nothing.
    assert_eq!(t.symbol_at(t.syms[0].0 - 1), None);
}

#[test]
fn the_indexed_lookup_finds_what_a_full_search_finds() {
    let exe = std::env::current_exe().unwrap();
    let t = Table::read(exe.to_str().unwrap()).expect("test binary is ELF");
    assert!(t.syms.len() > 4 * INDEX_STRIDE, "{} symbols", t.syms.len());
    let plain = |vaddr: u64| {
        let i = t.syms.partition_point(|s| s.0 <= vaddr).checked_sub(1)?;
        let (value, size, name) = t.syms[i];
        (vaddr < value + u64::from(size)).then_some(name)
    };
    // Every symbol's first and last byte, the byte past it and the one before it: block
    // edges included, since every INDEX_STRIDE-th symbol starts a block.
    for &(value, size, _) in &t.syms {
        for vaddr in [
            value - 1,
            value,
            value + u64::from(size) - 1,
            value + u64::from(size),
        ] {
            assert_eq!(t.name_offset_at(vaddr), plain(vaddr), "at 0x{vaddr:x}");
        }
    }
    assert_eq!(t.name_offset_at(u64::MAX), plain(u64::MAX));
}

#[test]
fn names_longer_than_the_first_read_come_back_whole() {
    // 300 characters: past SHORT_NAME, so read again at full length.
    #[inline(never)]
    #[export_name = "ddprof_long_probe_0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789_end"]
    extern "C" fn long_probe() -> u64 {
        std::hint::black_box(7)
    }
    // Called through an opaque pointer, so the function and its symbol stay.
    let probe: extern "C" fn() -> u64 = std::hint::black_box(long_probe);
    assert_eq!(probe(), 7);
    let exe = std::env::current_exe().unwrap();
    let t = Table::read(exe.to_str().unwrap()).expect("test binary is ELF");
    let long = t
        .syms
        .iter()
        .filter_map(|&(value, _, _)| t.symbol_at(value))
        .find(|n| n.starts_with("ddprof_long_probe_"))
        .expect("the long symbol is in the table");
    assert!(long.len() > SHORT_NAME, "{}", long.len());
    assert!(long.ends_with("_end"), "{long}");
}

/// A library copied to a temporary file, loaded and deleted (as Netty and zstd-jni extract
/// theirs): its functions are named, from the mapped file (`/proc/self/map_files/`, when this
/// process may open it) or from the loaded object, and its build id is read.
#[test]
fn a_library_deleted_once_loaded_is_named() {
    // SAFETY: loading libm (no constructors of interest) to find its file.
    let h = unsafe { libc::dlopen(c"libm.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return; // not glibc
    }
    // SAFETY: dlsym and dladdr read the link map; `info` is plain data.
    let original = unsafe {
        let cbrt = libc::dlsym(h, c"cbrt".as_ptr());
        let mut info: libc::Dl_info = std::mem::zeroed();
        assert!(libc::dladdr(cbrt, &mut info) != 0);
        std::ffi::CStr::from_ptr(info.dli_fname)
            .to_string_lossy()
            .into_owned()
    };
    let copy = std::env::temp_dir().join(format!("ddprof-deleted-{}.so", std::process::id()));
    std::fs::copy(&original, &copy).unwrap();
    let path = std::ffi::CString::new(copy.to_str().unwrap()).unwrap();
    // SAFETY: as above, a second copy of libm under another name.
    let copied = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!copied.is_null());
    std::fs::remove_file(&copy).unwrap();
    // SAFETY: dlsym reads the link map of the handle dlopen gave.
    let cbrt = unsafe { libc::dlsym(copied, c"cbrt".as_ptr()) } as u64;

    let symbols = Symbolizer::new();
    let (mapping, _) = symbols
        .locate(cbrt)
        .expect("the deleted copy is among the mappings");
    assert_eq!(mapping.path, copy.to_str().unwrap());
    assert!(mapping.deleted.is_some());
    assert!(
        symbols.name(cbrt).contains("cbrt"),
        "{}",
        symbols.name(cbrt)
    );
    let build_id = Elf::open(&original).and_then(|e| e.build_id());
    assert!(build_id.is_some());
    assert_eq!(mapping.open().and_then(|e| e.build_id()), build_id);

    // The loaded object alone (what a process without CAP_SYS_ADMIN reads) names it too.
    let image = crate::libs::elf::loaded_image::open(cbrt).expect("the copy in memory");
    let table = Table::of_elf(image).expect("its dynamic symbols");
    assert!(table
        .symbol_at(table.vaddr_of(cbrt, mapping))
        .is_some_and(|n| n.contains("cbrt")));
}

#[test]
fn template_heavy_cpp_names_and_operators_demangle() {
    // HotSpot's GC barriers: template arguments holding literals of enum type (issue 37 saw this
    // one left mangled in recordings).
    assert_eq!(
        demangle("_ZN14AccessInternal19PostRuntimeDispatchIN12G1BarrierSet13AccessBarrierILm548964ES1_EELNS_11BarrierTypeE2ELm548964EE18oop_access_barrierEPv"),
        "AccessInternal::PostRuntimeDispatch::oop_access_barrier"
    );
    assert_eq!(demangle("_ZlsRSoRK3Foo"), "operator<<");
    assert_eq!(
        demangle("_ZN12_GLOBAL__N_13fooEv"),
        "(anonymous namespace)::foo"
    );
}

#[test]
fn rust_v0_names_lose_their_hash() {
    assert_eq!(demangle("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
}

#[test]
fn a_pc_is_located_in_the_mapping_a_full_search_finds() {
    let s = Symbolizer::new();
    let mappings = &s.snapshot().mappings;
    assert!(!mappings.is_empty());
    let linear = |pc: u64| mappings.iter().find(|m| m.start <= pc && pc < m.end);
    for m in mappings {
        for pc in [
            m.start - 1,
            m.start,
            m.start + (m.end - m.start) / 2,
            m.end - 1,
            m.end,
        ] {
            let found = s.locate(pc).map(|(m, _)| m as *const Mapping);
            assert_eq!(found, linear(pc).map(|m| m as *const Mapping), "{pc:#x}");
        }
    }
    assert!(s.locate(0).is_none());
    assert!(s.locate(u64::MAX).is_none());
}
