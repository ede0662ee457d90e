use super::*;
use std::os::unix::fs::PermissionsExt;

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

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().mode() & 0o7777
}

#[test]
fn a_replaced_recording_keeps_its_mode() {
    let _serial = SERIAL.lock();
    let d = dir();
    for mode in [0o600, 0o640, 0o444] {
        let p = d.join(format!("rec-{mode:o}.jfr"));
        std::fs::write(&p, b"old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        write(&p, &[&b"new"[..]], false).unwrap();
        assert_eq!(mode_of(&p), mode, "after a write");
        write(&p, &[&b"more"[..]], true).unwrap();
        assert_eq!(mode_of(&p), mode, "after an append");
        create_empty(&p).unwrap();
        assert_eq!(mode_of(&p), mode, "after emptying");
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 0);
    }
}

#[test]
fn a_new_recording_is_at_most_0644_less_the_umask() {
    let _serial = SERIAL.lock();
    let d = dir();
    let p = d.join("new.jfr");
    create_empty(&p).unwrap();
    write(&p, &[&b"x"[..]], true).unwrap();
    // The umask of a test process is not ours to change (other tests create files too): the
    // mode must be within 0644 and no laxer than what the umask lets through.
    assert_eq!(mode_of(&p) & !0o644, 0, "mode {:o}", mode_of(&p));
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    if let Some(umask) = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
    {
        assert_eq!(mode_of(&p), 0o644 & !umask);
    }
}

#[test]
fn a_replaced_recording_keeps_its_owner_where_root_may_give_it() {
    // SAFETY: geteuid has no memory effects.
    if unsafe { libc::geteuid() } != 0 {
        return; // only root can give a file to someone else
    }
    let _serial = SERIAL.lock();
    let d = dir();
    let p = d.join("theirs.jfr");
    std::fs::write(&p, b"old").unwrap();
    std::os::unix::fs::chown(&p, Some(4321), Some(4322)).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    write(&p, &[&b"new"[..]], false).unwrap();
    let m = std::fs::metadata(&p).unwrap();
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o777), (4321, 4322, 0o600));
    assert_eq!(std::fs::read(&p).unwrap(), b"new");
}

#[test]
fn names_taken_in_the_directory_do_not_stop_a_write_and_are_left_alone() {
    let _serial = SERIAL.lock();
    let d = dir();
    let p = d.join("pre.jfr");
    // The names the old scheme would have used, and some of the new form.
    let pid = std::process::id();
    for n in 0..400 {
        std::fs::write(d.join(format!(".pre.jfr.{pid}.{n}.tmp")), b"theirs").unwrap();
    }
    for n in 0..16u64 {
        std::fs::write(d.join(temporary_name(b"pre.jfr", n)), b"theirs").unwrap();
    }
    for _ in 0..20 {
        create_empty(&p).unwrap();
        write(&p, &[&b"chunk"[..]], false).unwrap();
    }
    assert_eq!(std::fs::read(&p).unwrap(), b"chunk");
    let theirs = std::fs::read_dir(&d)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name() != "pre.jfr")
        .count();
    assert_eq!(theirs, 416, "a write removed or left a temporary file");
}

#[test]
fn temporary_names_are_random_hidden_and_fit_a_file_name() {
    let a = temporary_name(b"rec.jfr", random_u64());
    let b = temporary_name(b"rec.jfr", random_u64());
    assert_ne!(a, b);
    let a = a.to_string_lossy().into_owned();
    assert!(a.starts_with(".rec.jfr.") && a.ends_with(".tmp"), "{a}");
    assert_eq!(a.len(), ".rec.jfr.".len() + 16 + ".tmp".len());
    let long = vec![b'n'; 255];
    assert_eq!(temporary_name(&long, 7).len(), 255);
    // A recording whose name is 255 bytes can still be written.
    let _serial = SERIAL.lock();
    let d = dir();
    let p = d.join(std::ffi::OsStr::from_bytes(&long));
    write(&p, &[&b"x"[..]], false).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"x");
}
