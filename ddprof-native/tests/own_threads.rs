//! Every thread the profiler starts goes through `threads::spawn_own`, which marks it as the
//! profiler's own so that native memory sampling never records its allocations. This test
//! reads every source file (test modules and test files aside) and fails on a thread started
//! any other way.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name != "tests.rs" && !name.ends_with("_tests.rs") {
                out.push(path);
            }
        }
    }
}

/// Lines (1-based) before the file's first `#[cfg(test)]` that start a thread.
fn thread_starts(source: &str) -> Vec<usize> {
    source
        .lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .enumerate()
        .filter(|(_, l)| {
            let code = l.split("//").next().unwrap_or("");
            code.contains("thread::spawn")
                || code.contains("thread::Builder")
                || code.contains("pthread_create")
                || code.contains("thread::scope")
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn every_profiler_thread_starts_through_spawn_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 50, "the crate has its files: {}", files.len());
    let mut bad = Vec::new();
    let mut helper = 0;
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap().display().to_string();
        let starts = thread_starts(&std::fs::read_to_string(f).unwrap());
        if rel == "threads.rs" {
            helper = starts.len();
            continue;
        }
        bad.extend(starts.iter().map(|l| format!("{rel}:{l}")));
    }
    assert_eq!(
        helper, 1,
        "threads.rs starts its threads in spawn_own alone"
    );
    assert!(
        bad.is_empty(),
        "threads started without threads::spawn_own:\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn a_planted_thread_start_is_found() {
    let planted =
        "fn a() {}\n// std::thread::spawn in a comment\nfn b() { std::thread::spawn(|| ()); }\n\
                   #[cfg(test)]\nmod tests { fn c() { std::thread::spawn(|| ()); } }\n";
    assert_eq!(thread_starts(planted), vec![3]);
}
