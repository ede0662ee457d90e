use super::*;

/// The unwritten chunks are process-wide: tests that write take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "ddprof-output-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_symlink_is_refused_and_its_target_untouched() {
    let _serial = SERIAL.lock();
    let d = dir();
    let target = d.join("target");
    std::fs::write(&target, b"precious").unwrap();
    let link = d.join("rec.jfr");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(write(&link, &[&b"chunk"[..]], false).is_err());
    assert!(create_empty(&link).is_err());
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    // A dangling link does not create its target.
    let dangling = d.join("dangling.jfr");
    std::os::unix::fs::symlink(d.join("nowhere"), &dangling).unwrap();
    assert!(create_empty(&dangling).is_err());
    assert!(!d.join("nowhere").exists());
    UNWRITTEN.lock().clear();
}

#[test]
fn directories_and_devices_are_refused() {
    let d = dir();
    assert!(check_target(&d).is_err());
    assert!(check_target(Path::new("/dev/full")).is_err());
    assert!(check_target(Path::new("/dev/null")).is_err());
    assert!(check_target(&d.join("new.jfr")).is_ok());
}

#[test]
fn appends_whole_and_leaves_no_temporary_file() {
    let _serial = SERIAL.lock();
    let d = dir();
    let p = d.join("rec.jfr");
    create_empty(&p).unwrap();
    write(&p, &[&b"one"[..]], true).unwrap();
    write(&p, &[&b"t"[..], &b""[..], &b"wo"[..]], true).unwrap(); // parts, in order
    assert_eq!(std::fs::read(&p).unwrap(), b"onetwo");
    write(&p, &[&b"three"[..]], false).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"three");
    let names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn a_failed_chunk_is_kept_for_the_next_successful_write() {
    let _serial = SERIAL.lock();
    let d = dir();
    let gone = d.join("gone");
    // A directory that does not exist: the write fails, the chunk is kept.
    assert!(write(&gone.join("rec.jfr"), &[&b"lo"[..], &b"st?"[..]], false).is_err());
    assert!(has_unwritten());
    let p = d.join("rec.jfr");
    write(&p, &[&b"next"[..]], false).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"lost?next");
    assert!(!has_unwritten());
}
