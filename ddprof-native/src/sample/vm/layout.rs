//! The typed VM layout the signal path reads: byte offsets, widths and static addresses of
//! the HotSpot structures the walker and the metadata readers follow. Plain integers,
//! resolved once by name from VMStructs (`crate::hotspot::vmstructs`, not signal-safe) and
//! published here before any handler runs; the handler only loads the published pointer.

use std::sync::OnceLock;

/// A scalar field: its byte offset and the width/signedness of its C++ type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub offset: usize,
    /// 1, 2, 4 or 8 bytes.
    pub size: u8,
    pub signed: bool,
}

/// JavaThread and its satellites (docs/hotspot.md 1.3 "Threads and anchors", 2.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadsGroup {
    /// `JavaThread::_anchor` (embedded JavaFrameAnchor).
    pub anchor: usize,
    /// `JavaThread::_thread_state` (JavaThreadState enum).
    pub thread_state: Field,
    /// `JavaThread::_vframe_array_head`: non-null while the thread deoptimizes.
    pub vframe_array_head: usize,
    /// `JavaThread::_osthread`, or `Thread::_osthread` where it moved up (25).
    pub osthread: usize,
    /// `OSThread::_thread_id`: the kernel tid.
    pub osthread_thread_id: Field,
    /// `OSThread::_state` (HotSpot's `ThreadState`, an int: runnable, monitor/condvar/object
    /// wait, sleeping, ...), read for wall-clock samples; never required.
    pub osthread_state: Option<usize>,
    /// `JavaThread::_stack_base` (highest address) and `_stack_size`.
    pub stack_base: usize,
    pub stack_size: usize,
    /// `JavaFrameAnchor::_last_Java_sp`, `_last_Java_pc`, `_last_Java_fp`.
    pub anchor_sp: usize,
    pub anchor_pc: usize,
    pub anchor_fp: usize,
    /// `JavaCallWrapper::_anchor` (embedded JavaFrameAnchor of an entry frame).
    pub call_wrapper_anchor: usize,
    /// `JavaThread::_cont_entry` where exported (virtual-thread continuations); never
    /// required.
    pub cont_entry: Option<usize>,
    pub states: ThreadStates,
}

/// `JavaThreadState` values (`_thread_*` int constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadStates {
    pub uninitialized: i32,
    pub new: i32,
    pub new_trans: i32,
    pub in_native: i32,
    pub in_native_trans: i32,
    pub in_vm: i32,
    pub in_vm_trans: i32,
    pub in_java: i32,
    pub in_java_trans: i32,
    pub blocked: i32,
    pub blocked_trans: i32,
}

/// The code cache: its heaps and segment maps, and the stubs the walker must recognise
/// (docs/hotspot.md 3.1, 3.2). Statics are stored as the address of the variable: most are set
/// after the agent loads, so they are read at use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeCacheGroup {
    /// `&CodeCache::_heaps` (a `GrowableArray<CodeHeap*>*` variable).
    pub heaps_addr: usize,
    /// `&CodeCache::_low_bound`, `&CodeCache::_high_bound` (address variables).
    pub low_bound_addr: usize,
    pub high_bound_addr: usize,
    /// `GrowableArrayBase::_len` (`GenericGrowableArray::_len` on 11).
    pub array_len: Field,
    /// `GrowableArray<int>::_data` (the element pointer; same offset for any element type).
    pub array_data: usize,
    /// `CodeHeap::_memory` and `CodeHeap::_segmap` (embedded VirtualSpaces).
    pub heap_memory: usize,
    pub heap_segmap: usize,
    /// `CodeHeap::_log2_segment_size`.
    pub heap_log2_segment_size: Field,
    /// `VirtualSpace::_low` / `_high`: the committed range.
    pub vs_low: usize,
    pub vs_high: usize,
    /// sizeof(`HeapBlock`): a blob starts this far after its block.
    pub heap_block_size: usize,
    /// `HeapBlock::Header::_length` (in segments; size_t, uint32_t on 25).
    pub block_length: Field,
    /// `HeapBlock::Header::_used` (bool).
    pub block_used: Field,
    /// `&StubRoutines::_call_stub_return_address`.
    pub call_stub_return_address_addr: usize,
    /// `&AbstractInterpreter::_code` (a `StubQueue*` variable).
    pub interpreter_code_addr: usize,
    /// `StubQueue::_stub_buffer` (address) and `StubQueue::_buffer_limit` (int).
    pub stub_queue_buffer: usize,
    pub stub_queue_buffer_limit: Field,
    /// `&ContinuationEntry::_return_pc` where exported; never required.
    pub continuation_return_pc_addr: Option<usize>,
}

/// Where an address-valued CodeBlob quantity lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeAddr {
    /// The field holds the address itself (JDK <= 22, e.g. `CodeBlob::_code_begin`).
    Pointer(usize),
    /// The field holds an offset from the blob start (23+, e.g. `CodeBlob::_code_offset`).
    BlobOffset(Field),
}

/// How to tell an nmethod from other blobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobKind {
    /// `CodeBlob::_kind` equals `CodeBlobKind::Nmethod` (JDK 25).
    Field { kind: Field, nmethod: i64 },
    /// No kind field: the blob's name is "nmethod" or "native nmethod", the two names
    /// HotSpot gives compiled Java methods and native wrappers. Chosen over comparing
    /// vtable pointers, which would need libjvm's internal `_ZTV7nmethod` symbol.
    Name,
}

/// CodeBlob: what every blob has (docs/hotspot.md 3.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeBlobGroup {
    /// `CodeBlob::_name` (`const char*`).
    pub name: usize,
    /// `CodeBlob::_size`: whole blob in bytes, header included.
    pub size: Field,
    /// `CodeBlob::_frame_size`, in words.
    pub frame_size: Field,
    /// `CodeBlob::_frame_complete_offset` (int; int16_t on 25), from code begin.
    pub frame_complete_offset: Field,
    /// `CodeBlob::_code_begin` or `CodeBlob::_code_offset`.
    pub code_begin: CodeAddr,
    /// `CodeBlob::_code_end`, or `CodeBlob::_data_offset` (code ends where data begins).
    pub code_end: CodeAddr,
    pub kind: BlobKind,
}

/// Where an nmethod keeps its debug information (docs/hotspot.md 3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebugInfo {
    /// JDK <= 22: everything inside the nmethod.
    /// PcDescs: `[nm + _scopes_pcs_offset, nm + _dependencies_offset)`;
    /// scopes: `*(nm + _scopes_data_begin)`;
    /// metadata: `[nm + _metadata_offset, scopes data begin)`.
    InBlob {
        scopes_pcs_offset: Field,
        dependencies_offset: Field,
        scopes_data_begin: usize,
        metadata_offset: Field,
    },
    /// JDK 25: PcDescs and scopes in the immutable data, metadata after the relocations
    /// in the mutable data.
    /// PcDescs: `[imm + _scopes_pcs_offset, imm + _scopes_data_offset)`,
    /// scopes: `imm + _scopes_data_offset`, with `imm = *(nm + _immutable_data)`;
    /// metadata: `[mut + _relocation_size, mut + _mutable_data_size)` with
    /// `mut = *(nm + CodeBlob::_mutable_data)`. (On JVMCI-compiled nmethods the end also
    /// covers JVMCI data, whose size is not exported.)
    Split {
        immutable_data: usize,
        scopes_pcs_offset: Field,
        scopes_data_offset: Field,
        mutable_data: usize,
        relocation_size: Field,
        mutable_data_size: Field,
    },
}

/// Where an nmethod's verified entry point lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryAddr {
    /// `nmethod::_verified_entry_point` holds the address (JDK <= 22).
    Pointer(usize),
    /// `nmethod::_verified_entry_offset` is an offset from code begin (23+).
    CodeOffset(Field),
}

/// nmethod: compiled Java methods and native wrappers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NMethodGroup {
    /// `nmethod::_method` (`CompiledMethod::_method` up to 22): the Method*.
    pub method: usize,
    /// `nmethod::_comp_level` (int; CompLevel, one signed byte, on 21+).
    pub comp_level: Field,
    /// `nmethod::_compile_id`: unique per compilation for the life of the process (a
    /// counter, never reused), so an nmethod's address and compile id together name one
    /// nmethod even after its memory was freed and reused for another.
    pub compile_id: Field,
    pub verified_entry: EntryAddr,
    pub debug: DebugInfo,
}

/// PcDesc: one entry of an nmethod's pc -> scope table (docs/hotspot.md 3.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcDescGroup {
    /// sizeof(`PcDesc`).
    pub size: usize,
    /// `PcDesc::_pc_offset`, from code begin.
    pub pc_offset: Field,
    /// `PcDesc::_scope_decode_offset` into the scopes data (0: no scope).
    pub scope_decode_offset: Field,
    pub obj_decode_offset: Field,
    pub flags: Field,
}

/// Method metadata for resolving a Method* to class, name, signature and line
/// (docs/hotspot.md 1.3 "Method metadata", 5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodGroup {
    pub method: MethodFields,
    pub const_method: ConstMethodFields,
    pub constant_pool: ConstantPoolFields,
    pub symbol: SymbolFields,
    pub klass: KlassFields,
    pub instance_klass: InstanceKlassFields,
    pub array: ArrayFields,
    pub class_loader_data: ClassLoaderDataFields,
    /// `&java_lang_Class::_klass_offset` (an int variable: Klass* offset in a mirror).
    pub java_lang_class_klass_offset_addr: usize,
    /// `&CompressedKlassPointers::_base`/`_shift` (17/21: `_narrow_klass._base/_shift`,
    /// 11: `Universe::_narrow_klass._base/_shift`).
    pub compressed_klass_base_addr: usize,
    pub compressed_klass_shift_addr: usize,
    /// Where an object's header keeps its class (vtable receivers); never required.
    pub header: ObjectHeaderFields,
}

/// The object header as far as finding an object's `Klass*` goes (docs/hotspot.md 5.3).
/// Every entry is optional: without them no receiver class is read, nothing else changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectHeaderFields {
    /// `oopDesc::_metadata._compressed_klass` (the narrow klass after the mark word).
    pub compressed_klass: Option<usize>,
    /// `oopDesc::_metadata._klass` (a full `Klass*`, without compressed class pointers).
    pub klass: Option<usize>,
    /// `markWord::klass_shift`: where the narrow klass sits in the mark word under compact
    /// object headers (24+).
    pub mark_klass_shift: Option<u32>,
    /// `ObjectMonitor::_header` (`_metadata` on 25): the displaced mark of an inflated lock.
    pub monitor_header: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodFields {
    /// sizeof(`Method`).
    pub size: usize,
    pub const_method: usize,
    pub access_flags: Field,
    /// `Method::_code`: the nmethod, or null.
    pub code: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstMethodFields {
    /// sizeof(`ConstMethod`): the bytecodes start right after it.
    pub size: usize,
    pub constants: usize,
    /// `ConstMethod::_flags` (u2) or `ConstMethod::_flags._flags` (u4, 21+).
    pub flags: Field,
    /// The flags bit meaning "has a compressed line number table"
    /// (`ConstMethod::_has_linenumber_table` or `ConstMethodFlags::_misc_has_linenumber_table`).
    pub has_linenumber_table: i64,
    pub code_size: Field,
    pub name_index: Field,
    pub signature_index: Field,
    pub method_idnum: Field,
}

/// Where the source file name index of a class lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFileIndex {
    /// `ConstantPool::_source_file_name_index` (14+).
    ConstantPool(Field),
    /// `InstanceKlass::_source_file_name_index` (11).
    InstanceKlass(Field),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstantPoolFields {
    /// sizeof(`ConstantPool`): the slot array (Symbol* for Utf8 entries) follows it.
    pub size: usize,
    pub pool_holder: usize,
    pub length: Field,
    pub source_file_name_index: SourceFileIndex,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymbolFields {
    /// `Symbol::_length` (u2), or `Symbol::_length_and_refcount` (u4, length in the
    /// high half) on some JDK 11 builds: length = `value >> length_shift`, masked to 16 bits.
    pub length: Field,
    pub length_shift: u32,
    /// `Symbol::_body`: the UTF-8 bytes.
    pub body: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KlassFields {
    /// sizeof(`Klass`).
    pub size: usize,
    pub layout_helper: Field,
    pub name: usize,
    /// `Klass::_java_mirror` (OopHandle: a pointer to the oop slot).
    pub java_mirror: usize,
    pub super_klass: usize,
    pub class_loader_data: usize,
    pub access_flags: Field,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceKlassFields {
    /// sizeof(`InstanceKlass`).
    pub size: usize,
    pub constants: usize,
    /// `InstanceKlass::_methods` (`Array<Method*>*`).
    pub methods: usize,
    pub default_methods: usize,
    /// `InstanceKlass::_methods_jmethod_ids` (`jmethodID*` cache; slot 0 is the length).
    pub methods_jmethod_ids: usize,
    pub idnum_allocated_count: Field,
    pub init_state: Field,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayFields {
    /// `Array<int>::_length` (the same for every element type).
    pub length: Field,
    /// `Array<Method*>::_data`: first element of a pointer array.
    pub method_data: usize,
    /// `Array<u2>::_data`: first element of a u2 array.
    pub u2_data: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassLoaderDataFields {
    /// `ClassLoaderData::_class_loader` (OopHandle).
    pub class_loader: usize,
    pub klasses: usize,
    pub next: usize,
    /// `ClassLoaderData::_has_class_mirror_holder` (`_is_anonymous` on 11).
    pub has_class_mirror_holder: Field,
}

/// Frame constants (docs/hotspot.md 1.3 int constants, 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameGroup {
    /// `frame::entry_frame_call_wrapper_offset`, in words from fp.
    pub entry_frame_call_wrapper_offset: i64,
    /// `frame::interpreter_frame_sender_sp_offset`, in words from fp.
    pub interpreter_frame_sender_sp_offset: i64,
    /// `frame::interpreter_frame_last_sp_offset`, in words from fp.
    pub interpreter_frame_last_sp_offset: i64,
    /// `InvocationEntryBci` (-1).
    pub invocation_entry_bci: i64,
}

/// Everything the walker and the method resolver know about this JVM's layout.
/// Built once; each group is None when one of its entries is missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmLayout {
    pub threads: Option<ThreadsGroup>,
    pub code_cache: Option<CodeCacheGroup>,
    pub code_blob: Option<CodeBlobGroup>,
    pub nmethod: Option<NMethodGroup>,
    pub pc_desc: Option<PcDescGroup>,
    pub method: Option<MethodGroup>,
    pub frame: Option<FrameGroup>,
    /// "group: entry" for every entry that disabled a group.
    pub(crate) missing: Vec<String>,
}

impl VmLayout {
    /// "group: entry" for every missing entry (alternative spellings joined by " | ").
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// Whether every group resolved.
    pub fn complete(&self) -> bool {
        self.missing.is_empty()
    }
}

static LAYOUT: OnceLock<VmLayout> = OnceLock::new();

/// Publishes the resolved layout; the first call wins. Not signal-safe (called at load).
pub fn publish(layout: VmLayout) -> &'static VmLayout {
    LAYOUT.get_or_init(|| layout)
}

/// The layout, once VMStructs were read. Signal-safe (an atomic load).
pub fn get() -> Option<&'static VmLayout> {
    LAYOUT.get()
}
