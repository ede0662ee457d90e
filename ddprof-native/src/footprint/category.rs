//! What a byte of the profiler's memory is for. Every allocation is charged to the
//! category in effect on its thread when it was made (`scope`), and stays charged to it
//! until freed, whichever thread or scope frees it.

macro_rules! categories {
    ($($variant:ident => $name:literal, $kind:ident;)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Category { $($variant,)* }

        impl Category {
            pub const ALL: &'static [Category] = &[$(Category::$variant,)*];

            /// The category of a stored discriminant; misc for anything out of range.
            pub fn from_raw(raw: u8) -> Category {
                Category::ALL.get(raw as usize).copied().unwrap_or(Category::Misc)
            }

            /// The suffix of the `native_mem_*` gauges (upstream's names where it has one).
            pub const fn name(self) -> &'static str {
                match self { $(Category::$variant => $name,)* }
            }

            pub const fn kind(self) -> Kind {
                match self { $(Category::$variant => Kind::$kind,)* }
            }
        }
    };
}

/// Where a category's bytes come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Through the counting global allocator (malloc).
    Heap,
    /// Anonymous mappings of our own (`Mapped`): committed page by page when first written.
    Mapped,
}

categories! {
    // Default: whatever no subsystem claimed (std, the jni crate, start-up, logging).
    Misc => "misc", Heap;
    // JFR constant pools built at dump: symbols, classes, methods, packages, stack traces.
    Dictionary => "dictionary", Heap;
    // recordTraceRoot's endpoint dictionary (`dictionary_endpoints_bytes` reads it).
    Endpoints => "endpoints", Heap;
    // Method resolution: names and signatures per method, preloaded-ID bookkeeping.
    MethodMap => "method_map", Heap;
    LineTables => "line_tables", Heap;
    // The lazy mode's Klass* -> weak mirror table.
    ClassRegistry => "class_registry", Heap;
    // Thread names, ids and per-thread contexts.
    ThreadInfo => "thread_info", Heap;
    // Native unwinding and naming: DWARF rows (eh_frame.rs), ELF symbol tables (symbols.rs).
    NativeSymbols => "native_symbols", Heap;
    // The live-heap tracker: its entries (weak refs, weights, contexts) and the stacks they keep.
    LiveHeap => "live_heap", Heap;
    // Chunk bytes being built and written.
    JfrBuffers => "jfr_buffers", Heap;
    // Signal-path storage, mapped once: the trace table (slots and frame arena) ...
    CallTrace => "calltrace", Mapped;
    // ... and the sample records and the handler's frame stripes.
    SampleBuffers => "sample_buffers", Mapped;
}

pub const COUNT: usize = Category::ALL.len();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_discriminants_index_all() {
        let mut names: Vec<_> = Category::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), COUNT);
        for (i, c) in Category::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i);
        }
    }
}
