//! The signal wing (`src/sample/`) imports only itself and a few no-allocation basics, so
//! that a line of code can tell from its folder whether it may run in a signal handler.
//! This test reads every wing source file (inline and sibling test modules aside) and
//! fails on any path outside the allowed set, in `use` declarations and in code alike.

use std::path::{Path, PathBuf};

/// Paths the wing may name, as prefixes of whole segments.
const ALLOWED: &[&str] = &[
    "self",
    "super",
    "crate::sample",
    // Named counters and gauges: atomics in a static table.
    "crate::counters",
    // Memory mapped once at start, read and written in place by handlers.
    "crate::footprint::Mapped",
    "crate::footprint::Zeroable",
    "crate::footprint::Category",
    "core::sync::atomic",
    "core::ffi",
    "core::mem",
    "core::ptr",
    "core::hint",
    "core::arch",
    "core::cell",
    "std::sync::atomic",
    "std::sync::OnceLock",
    "std::sync::Once",
    "std::cell",
    "std::ffi",
    "std::mem",
    "std::ptr",
    "std::marker",
    "std::ops",
    "std::slice",
    "std::hint",
    "std::arch",
    "std::array",
    "std::iter",
    "core::iter",
    // The bounded waits of the dump side (a generation flip, a table publication): a
    // clock read and a sleep, no allocation, never reached from a handler.
    "std::time",
    "std::thread::sleep",
    "libc",
    // FFI type definitions only (jint, jmethodID, JNIEnv as an opaque pointer type).
    "jni::sys",
];

/// Crate roots whose paths are checked; anything else (a local name, a type's associated
/// item) is not a path into another module.
const ROOTS: &[&str] = &[
    "crate",
    "std",
    "core",
    "alloc",
    "libc",
    "jni",
    "parking_lot",
    "smallvec",
];

fn allowed(path: &str) -> bool {
    ALLOWED
        .iter()
        .any(|a| path == *a || path.starts_with(&format!("{a}::")))
}

/// Removes `//` comments (doc comments included) and string literals, so that prose and
/// messages that mention paths are not read as code.
fn code_only(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for line in source.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if in_str {
                if c == '"' && prev != '\\' {
                    in_str = false;
                }
                prev = if prev == '\\' && c == '\\' { ' ' } else { c };
                continue;
            }
            if c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            if c == '"' {
                in_str = true;
                prev = ' ';
                continue;
            }
            out.push(c);
        }
        out.push('\n');
    }
    out
}

/// `code` without its `#[cfg(test)]` items (inline test modules, test fixtures), their
/// line breaks kept. `code` has no comments or strings left, so braces balance.
fn without_tests(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(i) = code[from..].find("#[cfg(test)]") {
        let at = from + i;
        let item = at + "#[cfg(test)]".len();
        let Some(stop) = code[item..].find(['{', ';']).map(|e| item + e) else {
            break;
        };
        let mut end = stop + 1;
        if code.as_bytes()[stop] == b'{' {
            let mut depth = 0usize;
            for (k, c) in code[stop..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = stop + k + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        let blank: String = code[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blank);
        from = end;
    }
    out
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into whole paths.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = Vec::new();
    expand_into("", &tree, &mut out);
    out
}

fn expand_into(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let join = |p: &str, s: &str| {
        if p.is_empty() {
            s.to_string()
        } else if s == "self" {
            p.to_string()
        } else {
            format!("{p}::{s}")
        }
    };
    match tree.find('{') {
        None => {
            let path = tree.split(" as ").next().unwrap_or(tree);
            let path = path.split("as").next().unwrap_or(path);
            out.push(join(prefix, path.trim_end_matches("::")));
        }
        Some(open) => {
            let head = tree[..open].trim_end_matches("::");
            let inner = &tree[open + 1..tree.len() - 1];
            let base = if head.is_empty() {
                prefix.to_string()
            } else {
                join(prefix, head)
            };
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if i > start {
                            expand_into(&base, &inner[start..i], out);
                        }
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            if inner.len() > start {
                expand_into(&base, &inner[start..], out);
            }
        }
    }
}

/// Every path of another module that `source` names, with a line number.
fn named_paths(source: &str) -> Vec<(usize, String)> {
    let code = without_tests(&code_only(source));
    let mut found = Vec::new();
    let line_of = |offset: usize| code[..offset].matches('\n').count() + 1;
    // `use` declarations, possibly over several lines.
    let mut rest = 0;
    while let Some(i) = code[rest..].find("use ") {
        let at = rest + i;
        let before = code[..at].chars().last().unwrap_or('\n');
        rest = at + 4;
        if before.is_alphanumeric() || before == '_' {
            continue;
        }
        let Some(end) = code[rest..].find(';') else {
            break;
        };
        for p in expand(&code[rest..rest + end]) {
            found.push((line_of(at), p));
        }
        rest += end;
    }
    // Paths written out in code (`crate::log::warn(...)`, `std::thread::sleep(...)`), with
    // the `use` declarations blanked out (their line breaks kept).
    let code = blank_uses(&code);
    let bytes = code.as_bytes();
    for root in ROOTS {
        let pat = format!("{root}::");
        let mut from = 0;
        while let Some(i) = code[from..].find(&pat) {
            let at = from + i;
            from = at + pat.len();
            let before = if at == 0 { b' ' } else { bytes[at - 1] };
            if before.is_ascii_alphanumeric() || before == b'_' || before == b':' {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| at + e);
            found.push((line_of(at), code[at..end].trim_end_matches(':').to_string()));
        }
    }
    found
        .into_iter()
        .filter(|(_, p)| {
            let root = p.split("::").next().unwrap_or("");
            ROOTS.contains(&root) || root == "self" || root == "super"
        })
        .collect()
}

/// `code` with every `use` declaration replaced by spaces, line breaks kept.
fn blank_uses(code: &str) -> String {
    let mut out = code.to_string();
    let mut rest = 0;
    while let Some(i) = code[rest..].find("use ") {
        let at = rest + i;
        rest = at + 4;
        let before = code[..at].chars().last().unwrap_or('\n');
        if before.is_alphanumeric() || before == '_' {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        let blank: String = code[at..at + end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..at + end, &blank);
        rest = at + end;
    }
    out
}

fn violations(source: &str) -> Vec<String> {
    let mut found = named_paths(source);
    found.sort();
    found.dedup();
    found
        .into_iter()
        .filter(|(_, p)| !allowed(p))
        .map(|(line, p)| format!("line {line}: {p}"))
        .collect()
}

fn wing_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the wing folder is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            wing_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name != "tests.rs" && !name.ends_with("_tests.rs") {
                out.push(path);
            }
        }
    }
}

#[test]
fn the_signal_wing_imports_only_itself_and_the_basics() {
    let wing = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sample");
    let mut files = Vec::new();
    wing_files(&wing, &mut files);
    assert!(files.len() > 10, "the wing has its files: {files:?}");
    let mut bad = Vec::new();
    for f in &files {
        let source = std::fs::read_to_string(f).unwrap();
        for v in violations(&source) {
            bad.push(format!("{}: {v}", f.strip_prefix(&wing).unwrap().display()));
        }
    }
    assert!(
        bad.is_empty(),
        "the signal wing (src/sample) names paths outside itself and the no-allocation \
         basics:\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn a_planted_bad_import_is_found() {
    let planted = "use std::sync::atomic::{AtomicBool, Ordering};\n\
                   use crate::footprint::{Category, Mapped};\n\
                   use parking_lot::Mutex;\n\
                   use crate::{counters::Counter, log};\n\
                   fn f() { crate::jvmti::find_class(); let _ = std::collections::HashMap::<u8, u8>::new(); }\n\
                   /// crate::profiler in a comment is prose\n\
                   fn g() { let _ = \"crate::dump in a string\"; }\n\
                   #[cfg(test)]\n\
                   pub(crate) mod fixture { use std::collections::HashMap; }\n\
                   fn h() { crate::profiler::start(); }\n";
    assert_eq!(
        violations(planted),
        vec![
            "line 3: parking_lot::Mutex".to_string(),
            "line 4: crate::log".to_string(),
            "line 5: crate::jvmti::find_class".to_string(),
            "line 5: std::collections::HashMap".to_string(),
            "line 10: crate::profiler::start".to_string(),
        ]
    );
}

#[test]
fn inline_test_modules_are_not_checked() {
    let source = "use super::frame::Frame;\n#[cfg(test)]\nmod tests {\n    use crate::hotspot::vmstructs::VmTables;\n}\n";
    assert!(violations(source).is_empty());
}
