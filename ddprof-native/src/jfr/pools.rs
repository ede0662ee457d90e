//! Constant pools and the chunk-end checkpoint event that carries them.
//!
//! Every pool is keyed so that equal values share one id within a chunk:
//! readers resolve stack frames through these ids, and upstream guarantees one
//! Method id per distinct method, which aggregation in backends depends on.

use super::buffer::{
    patch_padded_varint, put_bool, put_int, put_long, put_opt_string, put_string, put_varint,
    PADDED_VARINT_LEN,
};
use super::metadata::{
    T_ATTRIBUTE_VALUE, T_CLASS, T_CPOOL, T_EXECUTION_MODE, T_FRAME_TYPE, T_LOG_LEVEL, T_METHOD,
    T_PACKAGE, T_STACK_TRACE, T_STRING, T_SYMBOL, T_THREAD, T_THREAD_STATE,
};
use super::FrameRef;
use crate::footprint::{self, Category};
use crate::word_map::{RecentTids, WordMap, WordSet};
use std::collections::BTreeMap;

/// Fixed pools, written in every chunk so that sample events can refer to
/// them without the caller registering anything. Keys are the indices.
pub const FRAME_TYPES: [&str; 8] = super::frame_type::NAMES;
pub const THREAD_STATES: [&str; 10] = [
    "UNKNOWN",
    "NEW",
    "RUNNABLE",
    "CONTENDED",
    "PARKED",
    "WAITING",
    "BREAKPOINT",
    "SLEEPING",
    "TERMINATED",
    "SYSCALL",
];
pub const EXECUTION_MODES: [&str; 6] = ["UNKNOWN", "JAVA", "JVM", "NATIVE", "SAFEPOINT", "SYSCALL"];
pub const LOG_LEVELS: [&str; 5] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"];

/// String → id dictionary with ids from `base + 1`, so that 0 can mean "none".
#[derive(Default, Debug)]
pub struct Interner {
    ids: WordMap<Box<str>, u32>,
    base: u32,
    /// The interned strings' bytes, in all.
    bytes: usize,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> u32 {
        let _mem = footprint::scope(Category::Dictionary);
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.base + self.ids.len() as u32 + 1;
        self.ids.insert(s.into(), id);
        self.bytes += s.len();
        id
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Entries in id order, for reproducible output.
    fn sorted(&self) -> Vec<(u32, &str)> {
        let mut v: Vec<_> = self.ids.iter().map(|(s, &id)| (id, &**s)).collect();
        v.sort_unstable_by_key(|&(id, _)| id);
        v
    }
}

#[derive(Debug)]
struct ClassEntry {
    name: u32,
    package: u32,
}

#[derive(Debug)]
struct MethodEntry {
    class: u32,
    name: u32,
    descriptor: u32,
    modifiers: i32,
    hidden: bool,
}

/// The class and descriptor of methods that differ only by name, interned in one chunk
/// ([`Pools::intern_method_shaped`]).
#[derive(Clone, Copy, Debug)]
pub struct MethodShape {
    class: u32,
    descriptor: u32,
}

#[derive(Debug)]
struct ThreadEntry {
    os_name: String,
    java_name: Option<String>,
    java_thread_id: i64,
}

/// All variable pools of one chunk.
///
/// Pool ids start after `base`: the JDK's reader keeps constants across the chunks of a
/// file, so a chunk appended to a file (`resume`) must not reuse an id of an earlier
/// chunk for something else. Stack-trace keys (trace-table ids) are shifted too.
#[derive(Default, Debug)]
pub struct Pools {
    base: u32,
    symbols: Interner,
    /// Keyed by the name's symbol id; entry `i` has pool id `i + 1`.
    class_ids: WordMap<u32, u32>,
    classes: Vec<ClassEntry>,
    package_ids: WordMap<u32, u32>,
    packages: Vec<u32>,
    method_ids: WordMap<(u32, u32, u32), u32>,
    methods: Vec<MethodEntry>,
    trace_keys: WordSet<u64>,
    traces: Vec<u8>,
    /// Written StackTrace entries by the hash of their body (truncated flag and frames as
    /// encoded): the body's range in `traces` and its pool key.
    trace_bodies: WordMap<u64, Vec<(usize, usize, u64)>>,
    /// Trace keys whose body equals an earlier one's: that entry's pool key.
    trace_aliases: WordMap<u64, u64>,
    traces_written: usize,
    /// The body being encoded by `add_stack_trace`, kept between calls.
    scratch: Vec<u8>,
    threads: BTreeMap<i64, ThreadEntry>,
    /// Tids that events refer to; any without an `add_thread` entry get a
    /// placeholder so that no sample loses its thread.
    referenced_tids: WordSet<i64>,
    /// Tids [`Self::note_thread`] saw recently: events come from a few threads.
    noted: RecentTids,
    pub attributes: Interner,
    pub strings: Interner,
}

impl Pools {
    pub fn with_base(base: u32) -> Pools {
        let interner = || Interner {
            base,
            ..Interner::default()
        };
        Pools {
            base,
            symbols: interner(),
            attributes: interner(),
            strings: interner(),
            ..Pools::default()
        }
    }

    /// The first id past every id this chunk used: the base for a chunk appended after it.
    pub fn next_base(&self) -> u32 {
        let local = [
            self.symbols.len(),
            self.attributes.len(),
            self.strings.len(),
            self.classes.len(),
            self.packages.len(),
            self.methods.len(),
        ]
        .into_iter()
        .max()
        .unwrap_or(0) as u64;
        let traces = self.trace_keys.iter().copied().max().unwrap_or(0);
        let next = u64::from(self.base) + local.max(traces) + 1;
        // Wrapping to 0 after 4 billion ids risks a clash only with chunks that old.
        u32::try_from(next).unwrap_or(0)
    }

    /// The pool key of trace-table id `key`; 0 (no trace) stays 0. A trace whose frames
    /// equal an earlier trace's (frames the trace table told apart, such as two pcs of one
    /// stub, that name the same methods) shares that trace's entry.
    pub fn trace_ref(&self, key: u64) -> u64 {
        if key == 0 {
            0
        } else if let Some(&k) = self.trace_aliases.get(&key) {
            k
        } else {
            key + u64::from(self.base)
        }
    }

    /// The trace keys [`Self::trace_ref`] does not shift by the base: those whose entry is an
    /// earlier trace's, with their pool key.
    pub fn trace_aliases(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.trace_aliases
            .iter()
            .map(|(&key, &pool_key)| (key, pool_key))
    }

    /// [`Self::trace_ref`] of a key that is not 0 and not among [`Self::trace_aliases`].
    pub fn own_trace_ref(&self, key: u64) -> u64 {
        key + u64::from(self.base)
    }

    pub fn intern_class(&mut self, class_name: &str) -> u32 {
        let _mem = footprint::scope(Category::Dictionary);
        let name = self.symbols.intern(class_name);
        if let Some(&id) = self.class_ids.get(&name) {
            return id;
        }
        let package = match package_of(class_name) {
            Some(p) => self.intern_package(p),
            None => 0,
        };
        self.classes.push(ClassEntry { name, package });
        let id = self.base + self.classes.len() as u32;
        self.class_ids.insert(name, id);
        id
    }

    fn intern_package(&mut self, package: &str) -> u32 {
        let name = self.symbols.intern(package);
        if let Some(&id) = self.package_ids.get(&name) {
            return id;
        }
        self.packages.push(name);
        let id = self.base + self.packages.len() as u32;
        self.package_ids.insert(name, id);
        id
    }

    /// First registration wins for modifiers/hidden: they are properties of
    /// the method, so later calls for the same key cannot disagree.
    pub fn intern_method(
        &mut self,
        class_name: &str,
        name: &str,
        descriptor: &str,
        modifiers: i32,
        hidden: bool,
    ) -> u32 {
        self.intern_method_shaped(&mut None, class_name, name, descriptor, modifiers, hidden)
    }

    /// [`Self::intern_method`] of methods that share a class and descriptor (native frames):
    /// those are interned at the first call, in the same order, and kept in `shape` for the
    /// next calls, which intern only the name.
    pub fn intern_method_shaped(
        &mut self,
        shape: &mut Option<MethodShape>,
        class_name: &str,
        name: &str,
        descriptor: &str,
        modifiers: i32,
        hidden: bool,
    ) -> u32 {
        let _mem = footprint::scope(Category::Dictionary);
        let (class, name, descriptor) = match *shape {
            Some(MethodShape { class, descriptor }) => {
                (class, self.symbols.intern(name), descriptor)
            }
            None => {
                let class = self.intern_class(class_name);
                let name = self.symbols.intern(name);
                let descriptor = self.symbols.intern(descriptor);
                *shape = Some(MethodShape { class, descriptor });
                (class, name, descriptor)
            }
        };
        self.method_of(class, name, descriptor, modifiers, hidden)
    }

    /// The Method pool key of interned parts.
    fn method_of(
        &mut self,
        class: u32,
        name: u32,
        descriptor: u32,
        modifiers: i32,
        hidden: bool,
    ) -> u32 {
        let key = (class, name, descriptor);
        if let Some(&id) = self.method_ids.get(&key) {
            return id;
        }
        self.methods.push(MethodEntry {
            class,
            name,
            descriptor,
            modifiers,
            hidden,
        });
        let id = self.base + self.methods.len() as u32;
        self.method_ids.insert(key, id);
        id
    }

    /// Returns false (and writes nothing) if the key is already present.
    pub fn add_stack_trace(&mut self, key: u64, truncated: bool, frames: &[FrameRef]) -> bool {
        let _mem = footprint::scope(Category::Dictionary);
        if !self.trace_keys.insert(key) {
            return false;
        }
        let mut body = std::mem::take(&mut self.scratch);
        body.clear();
        put_bool(&mut body, truncated);
        put_varint(&mut body, frames.len() as u64);
        for f in frames {
            put_varint(&mut body, u64::from(f.method));
            put_int(&mut body, f.line);
            put_int(&mut body, f.bci);
            put_varint(&mut body, u64::from(f.frame_type));
        }
        let hash = {
            use std::hash::{Hash, Hasher};
            let mut h = crate::word_map::WordHasher::default();
            body.hash(&mut h);
            h.finish()
        };
        let same = self.trace_bodies.get(&hash).and_then(|c| {
            c.iter()
                .find(|&&(start, end, _)| self.traces.get(start..end) == Some(&body[..]))
                .map(|&(_, _, pool_key)| pool_key)
        });
        if let Some(pool_key) = same {
            self.trace_aliases.insert(key, pool_key);
            self.scratch = body;
            return false;
        }
        let pool_key = self.trace_ref(key);
        put_varint(&mut self.traces, pool_key);
        let start = self.traces.len();
        self.traces.extend_from_slice(&body);
        let end = self.traces.len();
        self.scratch = body;
        self.trace_bodies
            .entry(hash)
            .or_default()
            .push((start, end, pool_key));
        self.traces_written += 1;
        true
    }

    pub fn add_thread(
        &mut self,
        tid: i64,
        os_name: &str,
        java_name: Option<&str>,
        java_thread_id: i64,
    ) {
        let _mem = footprint::scope(Category::Dictionary);
        let entry = ThreadEntry {
            os_name: os_name.to_owned(),
            java_name: java_name.map(str::to_owned),
            java_thread_id: if java_name.is_some() {
                java_thread_id
            } else {
                0
            },
        };
        self.threads.insert(tid, entry);
    }

    pub fn note_thread(&mut self, tid: i64) {
        if self.noted.seen(tid) {
            return;
        }
        let _mem = footprint::scope(Category::Dictionary);
        // Key 0 is the conventional "no value" reference; never invent it.
        if tid != 0 && !self.threads.contains_key(&tid) {
            self.referenced_tids.insert(tid);
        }
    }

    /// StackTrace entries written (traces equal to an earlier one are not).
    /// Room for `traces` stack traces of `frames` frames in all, so that the encoded
    /// traces are not copied at each doubling (fresh pages are much of a first dump's cost).
    pub fn reserve_traces(&mut self, traces: usize, frames: usize) {
        let _mem = footprint::scope(Category::Dictionary);
        // About 7 bytes a frame (method key, line, bci, type as varints), 4 a trace.
        self.traces.reserve(frames * 7 + traces * 4);
        self.trace_keys.reserve(traces);
        // One body per trace but the few equal to an earlier one's.
        self.trace_bodies.reserve(traces);
    }

    /// Room for `methods` distinct methods. Only tables whose size is known: a hash table
    /// sized past its use is faulted in whole all the same, its entries spread over it.
    pub fn reserve_methods(&mut self, methods: usize) {
        let _mem = footprint::scope(Category::Dictionary);
        self.method_ids.reserve(methods);
        self.methods.reserve(methods);
        // A Java method's class, package, name and descriptor come to about two new symbols
        // (a first dump at `cpu=1ms`: 556 for 289 methods); grown from empty, the interner
        // hashed every string again at each doubling.
        self.symbols.ids.reserve(2 * methods);
    }

    /// At least the bytes the pools take in the checkpoint (for reserving its buffer: one
    /// doubling at the end copies the whole chunk into fresh pages).
    pub fn size_hint(&self) -> usize {
        // Varints: at most 10 bytes each; a method entry has 7 fields, a class 5, a
        // package 2, a string its bytes and a length and encoding byte.
        let strings = |i: &Interner| i.bytes + i.len() * 21;
        let threads: usize = self
            .threads
            .values()
            .map(|t| 64 + t.os_name.len() + t.java_name.as_ref().map_or(0, |n| n.len()))
            .sum();
        4096 + self.traces.len()
            + self.methods.len() * 70
            + self.classes.len() * 50
            + self.packages.len() * 20
            + threads
            + self.referenced_tids.len() * 64
            + strings(&self.symbols)
            + strings(&self.attributes)
            + strings(&self.strings)
    }

    #[cfg(test)]
    pub fn stack_trace_count(&self) -> usize {
        self.traces_written
    }

    #[cfg(test)]
    pub fn method_count(&self) -> usize {
        self.methods.len()
    }

    /// Fills in placeholder entries, the way upstream names threads it has no
    /// information about.
    fn complete_threads(&mut self) {
        for tid in std::mem::take(&mut self.referenced_tids) {
            self.threads.entry(tid).or_insert_with(|| ThreadEntry {
                os_name: format!("[tid={tid}]"),
                java_name: None,
                java_thread_id: 0,
            });
        }
    }

    /// Appends the checkpoint event (type 1) holding every non-empty pool.
    /// Returns the number of pools written.
    #[cfg(test)]
    pub fn write_checkpoint(&mut self, out: &mut Vec<u8>, ticks: i64) -> usize {
        let mut tail = Vec::new();
        let pools = self.write_checkpoint_around_traces(out, &mut tail, ticks);
        out.extend_from_slice(&self.traces);
        out.extend_from_slice(&tail);
        pools
    }

    /// The checkpoint of [`Self::write_checkpoint`] in three parts, for a chunk written as
    /// parts: `head` (appended to) up to the stack-trace pool's entries, the entries
    /// themselves (taken out of the pools, not copied: they are the largest part of a
    /// chunk, and a copy is that many fresh pages), and the `tail` after them. Returns the
    /// trace entries and the number of pools written.
    pub fn take_checkpoint(
        &mut self,
        head: &mut Vec<u8>,
        tail: &mut Vec<u8>,
        ticks: i64,
    ) -> (Vec<u8>, usize) {
        let pools = self.write_checkpoint_around_traces(head, tail, ticks);
        (std::mem::take(&mut self.traces), pools)
    }

    /// Writes the checkpoint into `head` up to the stack-trace pool's count and the rest into
    /// `tail`, its size counting the trace entries that go between them.
    fn write_checkpoint_around_traces(
        &mut self,
        head: &mut Vec<u8>,
        tail: &mut Vec<u8>,
        ticks: i64,
    ) -> usize {
        self.complete_threads();
        let out = head;

        let start = out.len();
        out.extend_from_slice(&[0; PADDED_VARINT_LEN]);
        put_long(out, T_CPOOL);
        put_long(out, ticks);
        put_long(out, 0); // duration
        put_long(out, 0); // delta to the previous checkpoint: none
        out.push(1); // flush / type mask

        // Pool count is at most 12, so one byte is a valid varint; patched
        // below because empty pools are only discovered while writing.
        let count_at = out.len();
        out.push(0);

        let mut pools = 0;
        let mut section =
            |out: &mut Vec<u8>, type_id: i64, count: usize, write: &mut dyn FnMut(&mut Vec<u8>)| {
                // The JDK reader rejects a pool that declares zero entries.
                if count == 0 {
                    return;
                }
                put_long(out, type_id);
                put_varint(out, count as u64);
                write(out);
                pools += 1;
            };

        for (type_id, names) in [
            (T_FRAME_TYPE, &FRAME_TYPES[..]),
            (T_THREAD_STATE, &THREAD_STATES[..]),
            (T_EXECUTION_MODE, &EXECUTION_MODES[..]),
            (T_LOG_LEVEL, &LOG_LEVELS[..]),
        ] {
            section(out, type_id, names.len(), &mut |out| {
                for (key, name) in names.iter().enumerate() {
                    put_varint(out, key as u64);
                    put_string(out, name);
                }
            });
        }

        section(out, T_THREAD, self.threads.len(), &mut |out| {
            for (&tid, t) in &self.threads {
                put_long(out, tid);
                put_string(out, &t.os_name);
                put_long(out, tid);
                put_opt_string(out, t.java_name.as_deref());
                put_long(out, t.java_thread_id);
            }
        });

        // The entries go between `head` and `tail`: see the callers.
        // Empty unless entries were written (`add_stack_trace` writes both).
        let traces = self.traces.len();
        section(out, T_STACK_TRACE, self.traces_written, &mut |_| {});
        let head = out;
        let head_len = head.len();
        let out = tail;
        let tail_start = out.len();

        section(out, T_METHOD, self.methods.len(), &mut |out| {
            for (i, m) in self.methods.iter().enumerate() {
                put_varint(out, u64::from(self.base) + i as u64 + 1);
                put_varint(out, u64::from(m.class));
                put_varint(out, u64::from(m.name));
                put_varint(out, u64::from(m.descriptor));
                put_int(out, m.modifiers);
                put_bool(out, m.hidden);
            }
        });

        section(out, T_CLASS, self.classes.len(), &mut |out| {
            for (i, c) in self.classes.iter().enumerate() {
                put_varint(out, u64::from(self.base) + i as u64 + 1);
                put_varint(out, 0); // class loader: not tracked
                put_varint(out, u64::from(c.name));
                put_varint(out, u64::from(c.package));
                put_int(out, 0); // modifiers: not tracked
            }
        });

        section(out, T_PACKAGE, self.packages.len(), &mut |out| {
            for (i, &name) in self.packages.iter().enumerate() {
                put_varint(out, u64::from(self.base) + i as u64 + 1);
                put_varint(out, u64::from(name));
            }
        });

        for (type_id, interner) in [
            (T_SYMBOL, &self.symbols),
            (T_STRING, &self.strings),
            (T_ATTRIBUTE_VALUE, &self.attributes),
        ] {
            section(out, type_id, interner.len(), &mut |out| {
                for (id, s) in interner.sorted() {
                    put_varint(out, u64::from(id));
                    put_string(out, s);
                }
            });
        }

        head[count_at] = pools as u8;
        let size = u32::try_from(head_len - start + traces + out.len() - tail_start)
            .expect("checkpoint larger than 4 GiB");
        patch_padded_varint(head, start, size);
        pools
    }
}

/// Package of a class in internal form: the part before the last `/`, with
/// array prefixes (`[[L`) dropped and a hidden class's `/0x…` suffix not
/// counted as a package level. `None` for classes in the unnamed package.
pub fn package_of(class_name: &str) -> Option<&str> {
    let name = match class_name.find('L') {
        Some(l) if class_name.starts_with('[') => &class_name[l + 1..],
        _ => class_name,
    };
    let mut end = name.rfind('/')?;
    // Hidden classes look like `pkg/Foo$$Lambda/0x000000080010a000`.
    if name[end + 1..].starts_with(|c: char| c.is_ascii_digit()) {
        end = name[..end].rfind('/')?;
    }
    Some(&name[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interner_dedups_and_starts_at_one() {
        let mut i = Interner::default();
        assert_eq!(i.len(), 0);
        assert_eq!(i.intern("a"), 1);
        assert_eq!(i.intern("b"), 2);
        assert_eq!(i.intern("a"), 1);
        assert_eq!(i.len(), 2);
        assert_eq!(i.sorted(), [(1, "a"), (2, "b")]);
    }

    #[test]
    fn packages() {
        assert_eq!(package_of("java/lang/String"), Some("java/lang"));
        assert_eq!(package_of("Foo"), None);
        assert_eq!(package_of(""), None);
        assert_eq!(package_of("[I"), None);
        assert_eq!(package_of("[Ljava/lang/Integer;"), Some("java/lang"));
        assert_eq!(package_of("[[Lcom/x/Y;"), Some("com/x"));
        assert_eq!(
            package_of("com/example/Foo$$Lambda/0x0000000800c0a000"),
            Some("com/example")
        );
        assert_eq!(package_of("Foo$$Lambda/0x1"), None);
        assert_eq!(
            package_of("java/lang/invoke/LambdaForm$MH"),
            Some("java/lang/invoke")
        );
    }

    #[test]
    fn method_dedup_shares_classes_and_symbols() {
        let mut p = Pools::default();
        let a = p.intern_method("java/lang/String", "length", "()I", 1, false);
        let b = p.intern_method("java/lang/String", "charAt", "(I)C", 1, false);
        let a2 = p.intern_method("java/lang/String", "length", "()I", 9, true);
        let c = p.intern_method("java/lang/StringBuilder", "length", "()I", 1, false);
        let d = p.intern_method("java/lang/String", "length", "()J", 1, false);
        assert_eq!((a, b, a2, c, d), (1, 2, 1, 3, 4));
        assert_eq!(p.method_count(), 4);
        assert_eq!(p.classes.len(), 2);
        assert_eq!(p.packages.len(), 1);
        // Symbols: String, java/lang, length, ()I, charAt, (I)C, StringBuilder, ()J
        assert_eq!(p.symbols.len(), 8);
        assert_eq!(p.methods[0].modifiers, 1);
        assert_eq!(p.intern_class("java/lang/String"), 1);
    }

    #[test]
    fn class_with_same_name_as_symbol_reuses_symbol() {
        let mut p = Pools::default();
        let m = p.intern_method("", "unknown", "()L;", 0x100, false);
        assert_eq!(m, 1);
        assert_eq!(p.classes[0].package, 0);
        assert_eq!(p.intern_method("", "unknown", "()L;", 0x100, false), 1);
    }

    #[test]
    fn traces_with_equal_frames_share_one_entry() {
        let mut p = Pools::with_base(100);
        let f = |bci| {
            [FrameRef {
                method: 3,
                line: 0,
                bci,
                frame_type: 3,
            }]
        };
        assert!(p.add_stack_trace(7, false, &f(-21)));
        // Another trace-table id (say, another pc of the same stub) naming the same frames.
        assert!(!p.add_stack_trace(9, false, &f(-21)));
        assert_eq!(p.trace_ref(9), p.trace_ref(7));
        assert_eq!(p.trace_ref(7), 107);
        // A different bci, or truncation, is another trace.
        assert!(p.add_stack_trace(11, false, &f(0)));
        assert!(p.add_stack_trace(12, true, &f(-21)));
        assert_eq!(p.trace_ref(12), 112);
        assert_eq!(p.stack_trace_count(), 3);
        // The next chunk's ids start past every trace id, aliased ones included.
        assert!(p.next_base() > 112);
    }

    #[test]
    fn stack_trace_dedup_by_key() {
        let mut p = Pools::default();
        let f = [FrameRef {
            method: 1,
            line: 10,
            bci: 3,
            frame_type: 1,
        }];
        assert!(p.add_stack_trace(7, false, &f));
        let len = p.traces.len();
        assert!(!p.add_stack_trace(7, true, &[]));
        assert_eq!(p.traces.len(), len);
        assert!(p.add_stack_trace(8, true, &[]));
        assert_eq!(p.stack_trace_count(), 2);
    }

    #[test]
    fn empty_pools_are_skipped() {
        let mut p = Pools::default();
        let mut out = Vec::new();
        assert_eq!(p.write_checkpoint(&mut out, 0), 4);
        p.add_thread(1, "main", Some("main"), 1);
        out.clear();
        assert_eq!(p.write_checkpoint(&mut out, 0), 5);
        p.intern_method("a/B", "c", "()V", 0, false);
        p.attributes.intern("x");
        out.clear();
        // + Method, Class, Package, Symbol, AttributeValue
        assert_eq!(p.write_checkpoint(&mut out, 0), 10);
    }

    #[test]
    fn unknown_threads_get_placeholders() {
        let mut p = Pools::default();
        p.add_thread(5, "worker", None, 99);
        p.note_thread(5);
        p.note_thread(6);
        p.note_thread(0);
        let mut out = Vec::new();
        p.write_checkpoint(&mut out, 0);
        assert_eq!(p.threads.len(), 2);
        assert_eq!(p.threads[&6].os_name, "[tid=6]");
        // Non-Java threads never carry a Java thread id.
        assert_eq!(p.threads[&5].java_thread_id, 0);
    }

    #[test]
    fn a_based_chunk_uses_only_ids_past_its_base() {
        let mut p = Pools::with_base(1000);
        let m = p.intern_method("a/b/C", "run", "()V", 1, false);
        let c = p.intern_class("a/b/D");
        let a = p.attributes.intern("x");
        let s = p.strings.intern("y");
        assert!([m, c, a, s].iter().all(|id| *id > 1000), "{m} {c} {a} {s}");
        assert_eq!(p.trace_ref(7), 1007);
        assert_eq!(p.trace_ref(0), 0, "no trace stays no trace");
        p.add_stack_trace(
            7,
            false,
            &[FrameRef {
                method: m,
                line: 1,
                bci: 0,
                frame_type: 0,
            }],
        );
        // Everything above sits below the next chunk's base.
        let next = p.next_base();
        assert!(
            next > 1007 && [m, c, a, s].iter().all(|id| *id < next),
            "{next}"
        );
        assert_eq!(Pools::default().next_base(), 1);
    }
}
