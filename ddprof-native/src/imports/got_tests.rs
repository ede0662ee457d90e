use super::*;

/// A hand-made dynamic section, symbol table, string table and relocation tables, laid
/// out in one buffer as the linker would, with absolute pointers (as glibc leaves them).
#[test]
fn imports_are_read_from_a_dynamic_section() {
    // Strings: "", "malloc", "free", "puts".
    let strtab = b"\0malloc\0free\0puts\0".to_vec();
    let mut symtab = [0u8; 4 * 24];
    for (i, name_off) in [(1usize, 1u32), (2, 8), (3, 13)] {
        symtab[i * 24..i * 24 + 4].copy_from_slice(&name_off.to_le_bytes());
    }
    let rela = |offset: u64, sym: u64, kind: u32| {
        let mut r = Vec::new();
        r.extend_from_slice(&offset.to_le_bytes());
        r.extend_from_slice(&((sym << 32) | u64::from(kind)).to_le_bytes());
        r.extend_from_slice(&0i64.to_le_bytes());
        r
    };
    let [glob_dat, jump_slot] = IMPORT_TYPES;
    // PLT: malloc and puts; other relocations: free (GLOB_DAT) and a RELATIVE one (type 8 on
    // x86_64, 1027 on aarch64; neither is an import).
    let jmprel = [rela(0x100, 1, jump_slot), rela(0x108, 3, jump_slot)].concat();
    let relas = [rela(0x200, 2, glob_dat), rela(0x208, 0, 8)].concat();
    let bias = 0x7f00_0000_0000u64;
    let dynamic: Vec<[i64; 2]> = vec![
        [DT_STRTAB, strtab.as_ptr() as i64],
        [DT_STRSZ, strtab.len() as i64],
        [DT_SYMTAB, symtab.as_ptr() as i64],
        [DT_JMPREL, jmprel.as_ptr() as i64],
        [DT_PLTRELSZ, jmprel.len() as i64],
        [DT_PLTREL, DT_RELA],
        [DT_RELA, relas.as_ptr() as i64],
        [DT_RELASZ, relas.len() as i64],
        [DT_NULL, 0],
    ];
    // SAFETY: every table above is alive and as long as the section says.
    let d = unsafe { read_dynamic(dynamic.as_ptr(), 0) }.unwrap();
    assert_eq!(d.jmprel, (jmprel.as_ptr() as u64, 48));
    // SAFETY: as above.
    let found = unsafe { imports(&d, bias, &["malloc", "free"]) };
    assert_eq!(
        found,
        vec![
            Import {
                slot: (bias + 0x100) as usize,
                name: "malloc".into()
            },
            Import {
                slot: (bias + 0x200) as usize,
                name: "free".into()
            },
        ]
    );
    // SAFETY: as above.
    assert!(unsafe { imports(&d, bias, &["calloc"]) }.is_empty());
}

#[test]
fn relative_pointers_get_the_load_bias() {
    assert_eq!(absolute(0x3000, 0x7f00_0000_0000), 0x7f00_0000_3000);
    assert_eq!(
        absolute(0x7f00_0000_3000, 0x7f00_0000_0000),
        0x7f00_0000_3000
    );
    assert_eq!(absolute(0x3000, 0), 0x3000);
}

fn real(name: &str) -> usize {
    let c = std::ffi::CString::new(name).unwrap();
    // SAFETY: dlsym reads the loader's tables.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) as usize }
}

/// In this very process: some loaded object binds malloc through a slot that holds
/// malloc's address, and this test executable is among the objects, with its code inside
/// its own loadable segments.
#[test]
fn the_slots_of_this_process_hold_the_functions_they_import() {
    let malloc = real("malloc");
    assert_ne!(malloc, 0);
    let mut bound = Vec::new();
    let mut own = false;
    let here = real as fn(&str) -> usize as *const () as usize;
    for_each_object(|o| {
        own |= o.contains(here);
        for i in o.imports(&["malloc"]) {
            // SAFETY: a slot of a loaded object, read while the loader keeps it loaded.
            let value = unsafe { *(i.slot as *const usize) };
            if value == malloc {
                bound.push(o.name.to_string());
            }
        }
    });
    assert!(own, "this executable is not among the loaded objects");
    assert!(!bound.is_empty(), "no object binds malloc to {malloc:#x}");
}

extern "C" fn fake_getppid() -> libc::pid_t {
    4242
}

/// Redirecting an import and putting it back, through a read-only-after-relocation page
/// when the executable was linked so (Rust links with full RELRO by default).
#[test]
fn a_slot_is_redirected_and_restored() {
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    assert_ne!(parent, 4242);
    let here = real as fn(&str) -> usize as *const () as usize;
    let mut patched = 0;
    for_each_object(|o| {
        if !o.contains(here) {
            return;
        }
        let relro = o.relro();
        for i in o.imports(&["getppid"]) {
            // SAFETY: our own executable's slot, under the loader's lock.
            let old =
                unsafe { write_slot(i.slot, fake_getppid as *const () as usize, relro) }.unwrap();
            // SAFETY: getppid through the redirected slot.
            let redirected = unsafe { std::hint::black_box(libc::getppid)() };
            // SAFETY: as above.
            unsafe { write_slot(i.slot, old, relro) }.unwrap();
            assert_eq!(redirected, 4242);
            patched += 1;
        }
    });
    assert!(patched > 0, "getppid is not imported through a slot");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::getppid() }, parent);
}
