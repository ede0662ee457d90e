//! What a frame is named with in the JFR method pool: `MethodInfo`, whichever way it was
//! found (JVMTI for jmethodIDs, VM metadata for raw frames), and the naming rules both
//! ways share.

use std::sync::Arc;

pub use crate::jvmti::BciLine;

/// HotSpot's `JVM_RECOGNIZED_METHOD_MODIFIERS`: the method flags GetMethodModifiers returns
/// (public to synthetic, without 0x0200, which no method carries).
pub const JVM_RECOGNIZED_METHOD_MODIFIERS: i32 = 0x1DFF;

#[derive(Clone, Debug)]
pub struct MethodInfo {
    /// Internal form: `java/lang/String`; "" for frames without a class. Shared by the
    /// methods of a class named in one dump (one allocation per class, not per method).
    pub class_name: Arc<str>,
    pub name: String,
    pub descriptor: String,
    pub modifiers: i32,
    /// Sorted by bci.
    pub lines: Vec<BciLine>,
    /// `run()V` of java.lang.Thread or a subclass, or a `main([Ljava/lang/String;)V`:
    /// a stack rooted here is complete.
    pub is_entry_point: bool,
}

impl MethodInfo {
    pub fn unloaded() -> MethodInfo {
        MethodInfo {
            class_name: "".into(),
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
            .partition_point(|&(start, _)| i64::from(start) <= i64::from(bci));
        i.checked_sub(1)
            .and_then(|j| self.lines.get(j))
            .map_or(0, |l| l.1)
    }
}

/// `run()V` of java.lang.Thread or a subclass, or a `main([Ljava/lang/String;)V`: a stack
/// rooted there is complete (the `truncated` rule, docs/jfr-format.md 8).
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
