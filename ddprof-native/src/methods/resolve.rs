//! jmethodID -> class, name, descriptor, modifiers and line table, through JVMTI, once
//! per distinct method per dump. A jmethodID whose class was unloaded no longer
//! resolves (JVMTI answers INVALID_METHODID) and becomes `<unloaded>`.

use std::collections::HashMap;

use jni::sys::{jclass, JNIEnv};

use super::lazy::{self, tags};
use crate::counters::Counter;
use crate::jvmti::{self, Jvmti};
use crate::memory::{self, Category};
use crate::traces::{kind, Frame};

#[derive(Clone, Debug)]
pub struct MethodInfo {
    /// Internal form: `java/lang/String`; "" for frames without a class.
    pub class_name: String,
    pub name: String,
    pub descriptor: String,
    pub modifiers: i32,
    /// (start bci, line), sorted by bci.
    pub lines: Vec<(i64, i32)>,
    /// `run()V` of java.lang.Thread or a subclass, or a `main([Ljava/lang/String;)V`:
    /// a stack rooted here is complete.
    pub is_entry_point: bool,
}

impl MethodInfo {
    pub fn unloaded() -> MethodInfo {
        MethodInfo {
            class_name: String::new(),
            name: "<unloaded>".into(),
            descriptor: "()L;".into(),
            modifiers: 0,
            lines: Vec::new(),
            is_entry_point: false,
        }
    }

    /// A frame that could not be named.
    pub fn unknown() -> MethodInfo {
        MethodInfo {
            name: "unknown".into(),
            ..MethodInfo::unloaded()
        }
    }

    /// Line of `bci`: the entry with the greatest start at or before it (0 if none).
    pub fn line_of(&self, bci: i32) -> i32 {
        let i = self
            .lines
            .partition_point(|&(start, _)| start <= bci as i64);
        i.checked_sub(1)
            .and_then(|j| self.lines.get(j))
            .map_or(0, |l| l.1)
    }
}

/// `run()V` of java.lang.Thread or a subclass, or a `main([Ljava/lang/String;)V`: a stack
/// rooted there is complete (the `truncated` rule of the contract).
pub fn is_entry_point(
    name: &str,
    descriptor: &str,
    holder_is_thread: impl FnOnce() -> bool,
) -> bool {
    (name == "main" && descriptor == "([Ljava/lang/String;)V")
        || (name == "run" && descriptor == "()V" && holder_is_thread())
}

/// Turns a JVM class signature (`Ljava/lang/String;`, `[I`) into the internal name JFR
/// wants (`java/lang/String`, `[I`).
pub fn internal_class_name(signature: &str) -> String {
    match signature
        .strip_prefix('L')
        .and_then(|s| s.strip_suffix(';'))
    {
        Some(inner) => inner.to_string(),
        None => signature.to_string(),
    }
}

pub struct Resolver {
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    thread_class: jclass,
    cache: HashMap<u64, MethodInfo>,
    raw_cache: HashMap<u64, MethodInfo>,
    /// Tagged raw frames, by untagged `Method*` and tag: their jmethodID, or `None` when
    /// refused.
    lazy_ids: HashMap<(u64, tags::Tag), Option<u64>>,
    unknown: MethodInfo,
}

impl Resolver {
    pub fn new(jvmti: Jvmti, jni: *mut JNIEnv) -> Resolver {
        let thread_class = find_class(jni, c"java/lang/Thread");
        Resolver {
            jvmti,
            jni,
            thread_class,
            cache: HashMap::new(),
            raw_cache: HashMap::new(),
            lazy_ids: HashMap::new(),
            unknown: MethodInfo::unknown(),
        }
    }

    pub fn resolve(&mut self, method_id: u64) -> &MethodInfo {
        let _mem = memory::scope(Category::MethodMap);
        if !self.cache.contains_key(&method_id) {
            let info = self.lookup(method_id).unwrap_or_else(|| {
                Counter::JmethodidSkipped.inc();
                MethodInfo::unloaded()
            });
            self.cache.insert(method_id, info);
        }
        &self.cache[&method_id]
    }

    /// The method-pool key of a frame: a tagged raw frame (lazy mode) that the checks of
    /// `lazy::resolve` accept becomes its jmethodID, so that it shares a pool entry with
    /// the frames sampled with that ID; every other frame keeps its own kind and value.
    /// The frame's marker bit decides, not the mode running now.
    pub fn key_of(&mut self, frame: &Frame) -> (u8, u64) {
        let _mem = memory::scope(Category::MethodMap);
        let u = tags::untag(frame);
        let Some(tag) = u.tag else {
            return (frame.kind, frame.method);
        };
        let key = (u.method, tag);
        let id = match self.lazy_ids.get(&key) {
            Some(id) => {
                Counter::RawFrameResolveCacheHits.inc();
                *id
            }
            None => {
                let id = lazy::resolve::method_id(self.jvmti, self.jni, u.method as usize, tag)
                    .ok()
                    .map(|id| id as u64);
                self.lazy_ids.insert(key, id);
                id
            }
        };
        match id {
            Some(id) => (kind::JAVA_METHOD_ID, id),
            None => (frame.kind, frame.method),
        }
    }

    /// Names a raw `Method*` frame that [`Self::key_of`] left raw: a refused tagged frame
    /// is `unknown`; an untagged one (`fjmethodid=false`, classes that never unload) is
    /// named from VM metadata. Cached apart from jmethodIDs (the key spaces could collide).
    pub fn resolve_raw(&mut self, frame: &Frame) -> &MethodInfo {
        let _mem = memory::scope(Category::MethodMap);
        if tags::is_tagged(frame) {
            return &self.unknown;
        }
        let method = frame.method;
        if self.raw_cache.contains_key(&method) {
            Counter::RawFrameResolveCacheHits.inc();
        }
        self.raw_cache.entry(method).or_insert_with(|| {
            let encoding = crate::walker::vm::VmWalker::get().map(|w| w.encoding());
            encoding
                .and_then(|e| super::raw::resolve(method as usize, e))
                .unwrap_or_else(|| {
                    Counter::RawFrameUnresolved.inc();
                    MethodInfo::unknown()
                })
        })
    }

    fn lookup(&self, method_id: u64) -> Option<MethodInfo> {
        if method_id == 0 {
            return None;
        }
        let m = method_id as jni::sys::jmethodID;
        let class = self.jvmti.method_declaring_class(m).ok()?;
        let info = (|| {
            let class_name = internal_class_name(&self.jvmti.class_signature(class).ok()?);
            let (name, descriptor) = self.jvmti.method_name(m).ok()?;
            let modifiers = self.jvmti.method_modifiers(m).unwrap_or(0);
            let lines = {
                let _mem = memory::scope(Category::LineTables);
                self.jvmti.line_number_table(m)
            };
            if !lines.is_empty() {
                Counter::LineNumberTables.inc();
            }
            let is_entry_point = is_entry_point(&name, &descriptor, || self.is_thread_class(class));
            Some(MethodInfo {
                class_name,
                name,
                descriptor,
                modifiers,
                lines,
                is_entry_point,
            })
        })();
        jvmti::delete_local_ref(self.jni, class);
        info
    }

    fn is_thread_class(&self, class: jclass) -> bool {
        if self.thread_class.is_null() {
            return false;
        }
        // SAFETY: both are live local refs on this thread's env.
        unsafe {
            ((**self.jni).IsAssignableFrom.expect("JNI table"))(self.jni, class, self.thread_class)
                != 0
        }
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        jvmti::delete_local_ref(self.jni, self.thread_class);
    }
}

fn find_class(jni: *mut JNIEnv, name: &std::ffi::CStr) -> jclass {
    // SAFETY: valid env of the current thread; a failed lookup leaves an exception we clear.
    unsafe {
        let class = ((**jni).FindClass.expect("JNI table"))(jni, name.as_ptr());
        if ((**jni).ExceptionCheck.expect("JNI table"))(jni) != 0 {
            ((**jni).ExceptionClear.expect("JNI table"))(jni);
        }
        class
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_signatures_become_internal_names() {
        assert_eq!(
            internal_class_name("Ljava/lang/String;"),
            "java/lang/String"
        );
        assert_eq!(internal_class_name("[I"), "[I");
        assert_eq!(
            internal_class_name("[Ljava/lang/Integer;"),
            "[Ljava/lang/Integer;"
        );
    }

    #[test]
    fn line_of_picks_the_entry_covering_the_bci() {
        let m = MethodInfo {
            lines: vec![(0, 10), (5, 11), (9, 14)],
            ..MethodInfo::unloaded()
        };
        assert_eq!(m.line_of(0), 10);
        assert_eq!(m.line_of(4), 10);
        assert_eq!(m.line_of(5), 11);
        assert_eq!(m.line_of(100), 14);
        assert_eq!(MethodInfo::unloaded().line_of(3), 0);
    }
}
