use super::*;
use std::ffi::{c_char, CStr};

const JDK11: &str = include_str!("fixtures/vmstructs-jdk11.txt");
const JDK17: &str = include_str!("fixtures/vmstructs-jdk17.txt");
const JDK21: &str = include_str!("fixtures/vmstructs-jdk21.txt");
const JDK25: &str = include_str!("fixtures/vmstructs-jdk25.txt");

fn resolve(dump: &str) -> FlagTable {
    FlagTable::resolve(&VmTables::from_dump(dump)).expect("flag table in the fixture")
}

#[test]
fn type_index_follows_jvmflag_flagtype() {
    use FlagType::*;
    let expected = [
        Bool, Int, Uint, Intx, Uintx, Uint64, SizeT, Double, Ccstr, Ccstrlist,
    ];
    for (i, t) in expected.iter().enumerate() {
        assert_eq!(FlagType::from_index(i as i32), Some(*t));
    }
    assert_eq!(FlagType::from_index(10), None);
    assert_eq!(FlagType::from_index(-1), None);
}

#[test]
fn type_names_of_jdk11() {
    assert_eq!(FlagType::from_name(b"ccstrlist"), Some(FlagType::Ccstrlist));
    assert_eq!(FlagType::from_name(b"ccstr"), Some(FlagType::Ccstr));
    assert_eq!(FlagType::from_name(b"size_t"), Some(FlagType::SizeT));
    assert_eq!(FlagType::from_name(b"bool"), Some(FlagType::Bool));
    assert_eq!(FlagType::from_name(b"Bool"), None);
    assert_eq!(FlagType::from_name(b""), None);
    assert!(FlagType::Ccstr.is_string() && FlagType::Ccstrlist.is_string());
    assert!(!FlagType::Bool.is_string());
    assert_eq!(FlagType::Uint.int_storage(), Some((4, false)));
    assert_eq!(FlagType::Intx.int_storage(), Some((8, true)));
    assert_eq!(FlagType::Double.int_storage(), None);
}

#[test]
fn layouts_of_every_fixture() {
    let t11 = resolve(JDK11);
    assert_eq!(t11.stride, 40);
    assert_eq!((t11.name_offset, t11.addr_offset), (8, 16));
    assert_eq!(t11.bits_offset, Some(24));
    assert_eq!(t11.type_field, Some((0, TypeEncoding::Name)));
    for dump in [JDK17, JDK21, JDK25] {
        let t = resolve(dump);
        assert_eq!(t.stride, 24);
        assert_eq!((t.name_offset, t.addr_offset), (8, 0));
        assert_eq!(t.bits_offset, Some(16));
        assert_eq!(t.type_field, Some((20, TypeEncoding::Index)));
    }
}

#[test]
fn no_table_without_its_entries() {
    let without_count: String = JDK17
        .lines()
        .filter(|l| !l.contains("JVMFlag::numFlags"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        FlagTable::resolve(&VmTables::from_dump(&without_count)),
        None
    );
    assert_eq!(FlagTable::resolve(&VmTables::default()), None);
    // A `_type` of an unknown shape: the table exists, but no flag has a type.
    let odd_type = JDK17.replace(
        "JVMFlag::_type off=20 type=int",
        "JVMFlag::_type off=20 type=?",
    );
    assert_eq!(resolve(&odd_type).type_field, None);
}

// ---- a flag array in memory, laid out as a fixture says ---------------------------

/// Storage of the flags below (each value at its own address, as HotSpot's globals).
struct Values {
    on_error: Box<usize>,
    error_file: Box<usize>,
    heap_dump_path: Box<usize>,
    debug_non_safepoints: Box<u8>,
    print_concurrent_locks: Box<u8>,
    conc_gc_threads: Box<u32>,
    max_heap_size: Box<u64>,
    compile_threshold: Box<i64>,
    max_ram_percentage: Box<f64>,
    odd: Box<u64>,
}

struct FakeFlags {
    _entries: Vec<u64>,
    _base: Box<usize>,
    _count: Box<usize>,
    values: Values,
    table: FlagTable,
}

const MANAGEABLE: u32 = 1 << 5;
const PRODUCT: u32 = 1 << 4;
const COMMAND_LINE: u32 = 1;

fn type_index(t: Option<FlagType>) -> i32 {
    use FlagType::*;
    match t {
        Some(Bool) => 0,
        Some(Uint) => 2,
        Some(Intx) => 3,
        Some(SizeT) => 6,
        Some(Double) => 7,
        Some(Ccstr) => 8,
        Some(Ccstrlist) => 9,
        Some(_) => unreachable!(),
        None => 42,
    }
}

fn type_name(t: Option<FlagType>) -> &'static CStr {
    use FlagType::*;
    match t {
        Some(Bool) => c"bool",
        Some(Uint) => c"uint",
        Some(Intx) => c"intx",
        Some(SizeT) => c"size_t",
        Some(Double) => c"double",
        Some(Ccstr) => c"ccstr",
        Some(Ccstrlist) => c"ccstrlist",
        Some(_) => unreachable!(),
        None => c"some_future_type",
    }
}

fn fake(dump: &str) -> FakeFlags {
    use FlagType::*;
    // The table is read as a started profiler reads it, through the crash-protected loads:
    // before they are installed reads take the process_vm_readv fallback, which qemu-user does
    // not implement (the aarch64 unit tests run there; the fallback has its own test).
    crate::sample::safe_access::install().unwrap();
    let layout = resolve(dump);
    let values = Values {
        on_error: Box::new(c"".as_ptr() as usize),
        error_file: Box::new(0),
        heap_dump_path: Box::new(0),
        debug_non_safepoints: Box::new(0),
        print_concurrent_locks: Box::new(0),
        conc_gc_threads: Box::new(3),
        max_heap_size: Box::new(1 << 33),
        compile_threshold: Box::new(-10_000),
        max_ram_percentage: Box::new(25.0),
        odd: Box::new(7),
    };
    let flags: Vec<(&'static CStr, usize, Option<FlagType>, u32)> = vec![
        (
            c"OnError",
            &*values.on_error as *const usize as usize,
            Some(Ccstrlist),
            PRODUCT,
        ),
        (
            c"ErrorFile",
            &*values.error_file as *const usize as usize,
            Some(Ccstr),
            PRODUCT | COMMAND_LINE,
        ),
        (
            c"HeapDumpPath",
            &*values.heap_dump_path as *const usize as usize,
            Some(Ccstr),
            MANAGEABLE,
        ),
        (
            c"DebugNonSafepoints",
            &*values.debug_non_safepoints as *const u8 as usize,
            Some(Bool),
            1 << 6,
        ),
        (
            c"PrintConcurrentLocks",
            &*values.print_concurrent_locks as *const u8 as usize,
            Some(Bool),
            MANAGEABLE | COMMAND_LINE,
        ),
        (
            c"ConcGCThreads",
            &*values.conc_gc_threads as *const u32 as usize,
            Some(Uint),
            PRODUCT,
        ),
        (
            c"MaxHeapSize",
            &*values.max_heap_size as *const u64 as usize,
            Some(SizeT),
            PRODUCT,
        ),
        (
            c"CompileThreshold",
            &*values.compile_threshold as *const i64 as usize,
            Some(Intx),
            PRODUCT,
        ),
        (
            c"MaxRAMPercentage",
            &*values.max_ram_percentage as *const f64 as usize,
            Some(Double),
            PRODUCT,
        ),
        (
            c"OddFlag",
            &*values.odd as *const u64 as usize,
            None,
            PRODUCT,
        ),
    ];
    let words = layout.stride / 8;
    let mut entries = vec![0u64; words * (flags.len() + 1)];
    let (type_offset, encoding) = layout.type_field.unwrap();
    {
        let bytes: &mut [u8] = bytemuck_slice(&mut entries);
        for (i, (name, addr, ty, bits)) in flags.iter().enumerate() {
            let e = &mut bytes[i * layout.stride..(i + 1) * layout.stride];
            let put = |e: &mut [u8], at: usize, v: &[u8]| e[at..at + v.len()].copy_from_slice(v);
            put(
                e,
                layout.name_offset,
                &(name.as_ptr() as usize).to_ne_bytes(),
            );
            put(e, layout.addr_offset, &addr.to_ne_bytes());
            put(e, layout.bits_offset.unwrap(), &bits.to_ne_bytes());
            match encoding {
                TypeEncoding::Index => put(e, type_offset, &type_index(*ty).to_ne_bytes()),
                TypeEncoding::Name => put(
                    e,
                    type_offset,
                    &(type_name(*ty).as_ptr() as usize).to_ne_bytes(),
                ),
            }
        }
        // The last entry is HotSpot's terminator: a null name.
    }
    let base = Box::new(entries.as_ptr() as usize);
    let count = Box::new(flags.len() + 1);
    let table = FlagTable {
        flags_addr: &*base as *const usize as usize,
        count_addr: &*count as *const usize as usize,
        ..layout
    };
    FakeFlags {
        _entries: entries,
        _base: base,
        _count: count,
        values,
        table,
    }
}

fn bytemuck_slice(words: &mut [u64]) -> &mut [u8] {
    // SAFETY: u64 has no invalid bit patterns and u8 no alignment; same memory, 8x length.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut u8, words.len() * 8) }
}

fn c_string(ptr: usize) -> String {
    // SAFETY: test strings are NUL-terminated.
    unsafe { CStr::from_ptr(ptr as *const c_char) }
        .to_string_lossy()
        .into_owned()
}

fn every_layout() -> Vec<FakeFlags> {
    [JDK11, JDK17, JDK21, JDK25].into_iter().map(fake).collect()
}

#[test]
fn finds_flags_by_exact_name() {
    for f in every_layout() {
        let t = &f.table;
        let on_error = t.find("OnError").unwrap();
        assert_eq!(on_error.ty, Some(FlagType::Ccstrlist));
        assert!(!on_error.is_manageable() && on_error.is_default());
        assert!(t.find("HeapDumpPath").unwrap().is_manageable());
        assert!(!t.find("ErrorFile").unwrap().is_default());
        assert_eq!(t.find("OddFlag").unwrap().ty, None);
        for missing in ["onerror", "OnErro", "OnErrorX", "", "On\0Error", "test"] {
            assert_eq!(t.find(missing), Err(FlagError::NotFound), "{missing:?}");
        }
        assert_eq!(t.find(&"x".repeat(MAX_NAME + 1)), Err(FlagError::NotFound));
    }
}

#[test]
fn strings_read_and_write() {
    for f in every_layout() {
        let t = &f.table;
        assert_eq!(t.get_string("OnError"), Ok(Some(Vec::new())));
        assert_eq!(t.get_string("ErrorFile"), Ok(None));
        t.set_string("OnError", b"/tmp/crash.sh %p").unwrap();
        assert_eq!(c_string(*f.values.on_error), "/tmp/crash.sh %p");
        assert_eq!(
            t.get_string("OnError"),
            Ok(Some(b"/tmp/crash.sh %p".to_vec()))
        );
        // Written again: a new copy, the old one stays valid (leaked).
        let first = *f.values.on_error;
        t.set_string("OnError", b"other").unwrap();
        assert_ne!(*f.values.on_error, first);
        assert_eq!(c_string(first), "/tmp/crash.sh %p");
        t.set_string("ErrorFile", b"").unwrap();
        assert_eq!(t.get_string("ErrorFile"), Ok(Some(Vec::new())));
        // Longer than a word, across word boundaries.
        let long = "x".repeat(1000);
        t.set_string("ErrorFile", long.as_bytes()).unwrap();
        assert_eq!(t.get_string("ErrorFile"), Ok(Some(long.into_bytes())));
    }
}

#[test]
fn string_writes_refused() {
    for f in every_layout() {
        let t = &f.table;
        let before = *f.values.heap_dump_path;
        assert_eq!(
            t.set_string("HeapDumpPath", b"/tmp"),
            Err(FlagError::Manageable)
        );
        assert_eq!(*f.values.heap_dump_path, before);
        assert_eq!(
            t.set_string("DebugNonSafepoints", b"true"),
            Err(FlagError::WrongType)
        );
        assert_eq!(*f.values.debug_non_safepoints, 0);
        assert_eq!(t.set_string("MaxHeapSize", b"1"), Err(FlagError::WrongType));
        assert_eq!(*f.values.max_heap_size, 1 << 33);
        assert_eq!(t.set_string("OddFlag", b"1"), Err(FlagError::WrongType));
        assert_eq!(*f.values.odd, 7);
        assert_eq!(t.set_string("NoSuchFlag", b"1"), Err(FlagError::NotFound));
        assert_eq!(t.set_string("OnError", b"a\0b"), Err(FlagError::BadValue));
        let too_long = vec![b'a'; MAX_VALUE + 1];
        assert_eq!(t.set_string("OnError", &too_long), Err(FlagError::BadValue));
        assert_eq!(t.get_string("OnError"), Ok(Some(Vec::new())));
    }
}

#[test]
fn typed_reads() {
    for f in every_layout() {
        let t = &f.table;
        assert_eq!(t.get_int("ConcGCThreads"), Ok(3));
        assert_eq!(t.get_int("MaxHeapSize"), Ok(1 << 33));
        assert_eq!(t.get_int("CompileThreshold"), Ok(-10_000));
        assert_eq!(t.get_double("MaxRAMPercentage"), Ok(25.0));
        assert_eq!(t.get_bool("DebugNonSafepoints"), Ok(false));
        // Mismatches read nothing.
        assert_eq!(t.get_int("MaxRAMPercentage"), Err(FlagError::WrongType));
        assert_eq!(t.get_double("MaxHeapSize"), Err(FlagError::WrongType));
        assert_eq!(t.get_bool("ErrorFile"), Err(FlagError::WrongType));
        assert_eq!(
            t.get_string("PrintConcurrentLocks"),
            Err(FlagError::WrongType)
        );
        assert_eq!(t.get_int("OddFlag"), Err(FlagError::WrongType));
        assert_eq!(t.get_bool("nope"), Err(FlagError::NotFound));
    }
}

#[test]
fn bools_write_one_byte() {
    for f in every_layout() {
        let t = &f.table;
        t.set_bool("PrintConcurrentLocks", true).unwrap();
        assert_eq!(*f.values.print_concurrent_locks, 1);
        assert_eq!(t.get_bool("PrintConcurrentLocks"), Ok(true));
        t.set_bool("PrintConcurrentLocks", false).unwrap();
        assert_eq!(*f.values.print_concurrent_locks, 0);
        assert_eq!(t.set_bool("ErrorFile", true), Err(FlagError::WrongType));
        assert_eq!(*f.values.error_file, 0);
        assert_eq!(t.set_bool("ConcGCThreads", true), Err(FlagError::WrongType));
        assert_eq!(*f.values.conc_gc_threads, 3);
    }
}

#[test]
fn enable_if_default_only_at_default() {
    for f in every_layout() {
        let t = &f.table;
        assert!(t.enable_if_default("DebugNonSafepoints"));
        assert_eq!(*f.values.debug_non_safepoints, 1);
        assert!(t.enable_if_default("DebugNonSafepoints"));
        // Set on the command line to false: left alone.
        assert!(!t.enable_if_default("PrintConcurrentLocks"));
        assert_eq!(*f.values.print_concurrent_locks, 0);
        // Not a bool.
        assert!(!t.enable_if_default("ConcGCThreads"));
        assert_eq!(*f.values.conc_gc_threads, 3);
        assert!(!t.enable_if_default("Missing"));
    }
}

#[test]
fn unreadable_table_is_an_error_not_a_crash() {
    let mut f = fake(JDK17);
    let zero = Box::new(0usize);
    f.table.flags_addr = &*zero as *const usize as usize;
    assert_eq!(f.table.find("OnError"), Err(FlagError::Unreadable));
    f.table.flags_addr = 8; // the null page
    assert_eq!(f.table.find("OnError"), Err(FlagError::Unreadable));
}
