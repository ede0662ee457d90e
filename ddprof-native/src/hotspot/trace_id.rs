//! Calibration of JFR's class trace ID offset (`Klass::_trace_id`), which VMStructs does
//! not export: found at run time (docs/hotspot.md 5.6) and never hard-coded. The signal path reads
//! the ID through `crate::sample::vm::trace_id`, where the offset is published.
//!
//! Calibration: six array classes of `java.lang.Void` (`[Ljava/lang/Void;` up to six
//! dimensions) are created back to back through JNI `FindClass`, so HotSpot gives them
//! consecutive or nearly consecutive trace IDs. Of every 8-byte word in `Klass`, exactly
//! one must hold, in all six, a non-zero `counter << 16` value whose counters strictly
//! increase by small steps (other classes may be created in between). No match, or more
//! than one, is a failure: the lazy method-ID mode is then unavailable.

use std::sync::OnceLock;

use jni::sys::{jclass, JNIEnv};

use crate::sample::safe_access::load_u64;
use crate::sample::vm::layout;
use crate::sample::vm::layout::MethodGroup;
use crate::sample::vm::trace_id::ID_SHIFT;

/// Array classes created for calibration.
pub const CALIBRATION_CLASSES: usize = 6;
/// Largest step between the counters of two classes created back to back.
pub const MAX_STEP: u64 = 64;
/// A counter of classes cannot reach 2^30 (a billion classes); a larger `value >> 16` is
/// a pointer (user-space mmap addresses near 2^47 give about 2^31) or other data.
const MAX_ID: u64 = 1 << 30;

static CALIBRATION: OnceLock<Result<usize, String>> = OnceLock::new();

/// Why calibration failed (the pure part).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CalibrationError {
    /// Fewer snapshots than needed, or of different sizes.
    BadInput,
    NoMatch,
    /// More than one offset fits: offsets listed.
    Ambiguous(Vec<usize>),
}

impl std::fmt::Display for CalibrationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CalibrationError::BadInput => f.write_str("not enough calibration classes"),
            CalibrationError::NoMatch => f.write_str("no Klass field holds trace IDs"),
            CalibrationError::Ambiguous(o) => write!(f, "several Klass fields fit: {o:?}"),
        }
    }
}

/// Finds the trace-ID offset from word snapshots of klasses created in order:
/// `klasses[k][i]` is the 8-byte word at byte offset `i * 8` of the k-th klass. Word 0
/// (the vtable pointer) is skipped. Pure.
pub fn find_offset(klasses: &[Vec<u64>]) -> Result<usize, CalibrationError> {
    let Some(first) = klasses.first() else {
        return Err(CalibrationError::BadInput);
    };
    if klasses.len() < 3 || klasses.iter().any(|k| k.len() != first.len()) {
        return Err(CalibrationError::BadInput);
    }
    let matches: Vec<usize> = (1..first.len())
        .filter(|&i| {
            let ids: Option<Vec<u64>> = klasses
                .iter()
                .map(|k| k.get(i).copied().filter(|v| *v != 0).map(|v| v >> ID_SHIFT))
                .collect();
            ids.is_some_and(|ids| {
                ids.iter().all(|id| *id > 0 && *id < MAX_ID)
                    && ids
                        .windows(2)
                        .all(|w| w[1] > w[0] && w[1] - w[0] <= MAX_STEP)
            })
        })
        .map(|i| i * 8)
        .collect();
    match matches.as_slice() {
        [] => Err(CalibrationError::NoMatch),
        [one] => Ok(*one),
        many => Err(CalibrationError::Ambiguous(many.to_vec())),
    }
}

/// The calibrated offset, or why there is none. Runs the calibration the first time
/// (on a JVM thread, `jni` its env); later calls return the first answer.
pub fn calibrate(jni: *mut JNIEnv) -> Result<usize, String> {
    CALIBRATION
        .get_or_init(|| {
            let result = run_calibration(jni);
            match &result {
                Ok(offset) => {
                    crate::sample::vm::trace_id::publish_offset(*offset);
                    crate::log::info(&format!("JFR trace ID at Klass+{offset}"));
                }
                Err(e) => crate::log::info(&format!("trace ID calibration failed: {e}")),
            }
            result
        })
        .clone()
}

fn run_calibration(jni: *mut JNIEnv) -> Result<usize, String> {
    // The Klass* reads decode the mirror oops: settle how this JVM stores them first.
    super::zgc::init();
    let m = layout::get()
        .and_then(|l| l.method.as_ref())
        .ok_or("the VMStructs method group is unavailable")?;
    if jni.is_null() {
        return Err("no JNI environment".into());
    }
    let mut refs: Vec<jclass> = Vec::with_capacity(CALIBRATION_CLASSES);
    let mut name = String::from("Ljava/lang/Void;");
    for _ in 0..CALIBRATION_CLASSES {
        name.insert(0, '[');
        let c = std::ffi::CString::new(name.as_str()).expect("no NUL in a class name");
        refs.push(crate::jvmti::find_class(jni, &c));
    }
    let result =
        snapshot_all(m, jni, &refs).and_then(|s| find_offset(&s).map_err(|e| e.to_string()));
    for r in refs {
        crate::jvmti::delete_local_ref(jni, r);
    }
    result
}

fn snapshot_all(
    m: &MethodGroup,
    jni: *mut JNIEnv,
    refs: &[jclass],
) -> Result<Vec<Vec<u64>>, String> {
    let words = m.klass.size / 8;
    if words < 2 {
        return Err("sizeof(Klass) is unknown".into());
    }
    refs.iter()
        .map(|&r| {
            if r.is_null() {
                return Err("FindClass of a java.lang.Void array class failed".to_string());
            }
            let k = super::zgc::klass_of_class_ref(m, jni, r)
                .ok_or("cannot read the Klass of a mirror")?;
            (0..words)
                .map(|i| load_u64(k + i * 8))
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| "a Klass is unreadable".to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORDS: usize = 30;
    const TRACE_AT: usize = 21;

    /// Six klasses laid out like HotSpot's: a vtable pointer, pointers that differ per
    /// klass, small ints, a word that looks like an unlocked mark word, and at TRACE_AT
    /// the trace ID with `ids` and tag bits `low`.
    fn klasses(ids: &[u64], low: u64) -> Vec<Vec<u64>> {
        ids.iter()
            .enumerate()
            .map(|(k, id)| {
                let k = k as u64;
                let mut w = vec![0u64; WORDS];
                w[0] = 0x7f31_2a40_1e58; // vtable: the same for all
                w[1] = 0x0000_0008_0004_1000 + k * 0x200; // compressed-class-space Klass* neighbours
                w[2] = 0x7f31_2000_0000 + k * 0x1_0000 * 3; // heap-ish pointer, 3 x 64 KiB apart
                w[3] = 0xffff_fffe_u64; // layout helper, negative as u32
                w[4] = 12 + k; // small ints, increasing
                w[5] = 0x0000_0045_6789_ab01 ^ (k << 12); // mark-word look-alike (hash bits)
                w[6] = 0x0000_0001_0000_0000 * (k + 1); // counter in the high half: too big
                w[7] = 5; // constant
                w[TRACE_AT] = (id << ID_SHIFT) | low;
                w
            })
            .collect()
    }

    #[test]
    fn finds_the_trace_id_word_among_decoys() {
        let s = klasses(&[709, 710, 714, 718, 722, 726], 0);
        assert_eq!(find_offset(&s), Ok(TRACE_AT * 8));
        // JDK 25 style tag bits in the low half.
        let s = klasses(&[752, 753, 757, 761, 765, 769], 0x0300);
        assert_eq!(find_offset(&s), Ok(TRACE_AT * 8));
    }

    #[test]
    fn ids_too_far_apart_or_not_increasing_do_not_match() {
        let s = klasses(&[709, 710, 900, 901, 902, 903], 0);
        assert_eq!(find_offset(&s), Err(CalibrationError::NoMatch));
        let s = klasses(&[709, 710, 710, 711, 712, 713], 0);
        assert_eq!(find_offset(&s), Err(CalibrationError::NoMatch));
        let s = klasses(&[720, 719, 721, 722, 723, 724], 0);
        assert_eq!(find_offset(&s), Err(CalibrationError::NoMatch));
    }

    #[test]
    fn a_zero_value_in_any_klass_does_not_match() {
        let mut s = klasses(&[709, 710, 711, 712, 713, 714], 0);
        s[3][TRACE_AT] = 0;
        assert_eq!(find_offset(&s), Err(CalibrationError::NoMatch));
    }

    #[test]
    fn two_fitting_words_are_a_failure_not_a_guess() {
        let mut s = klasses(&[709, 710, 711, 712, 713, 714], 0);
        for (k, w) in s.iter_mut().enumerate() {
            w[9] = (1000 + k as u64) << ID_SHIFT;
        }
        assert_eq!(
            find_offset(&s),
            Err(CalibrationError::Ambiguous(vec![9 * 8, TRACE_AT * 8]))
        );
    }

    #[test]
    fn pointers_spaced_like_ids_are_rejected_by_their_size() {
        // A pointer field whose values are 64 KiB apart looks like an increasing counter
        // in its high bits; it is too large to be a class counter.
        let mut s = klasses(&[709, 710, 711, 712, 713, 714], 0);
        for (k, w) in s.iter_mut().enumerate() {
            w[10] = 0x7f31_2000_0000 + (k as u64) * 0x1_0000;
        }
        assert_eq!(find_offset(&s), Ok(TRACE_AT * 8));
    }

    #[test]
    fn bad_input_is_reported() {
        assert_eq!(find_offset(&[]), Err(CalibrationError::BadInput));
        let mut s = klasses(&[709, 710, 711, 712, 713, 714], 0);
        s[2].pop();
        assert_eq!(find_offset(&s), Err(CalibrationError::BadInput));
    }
}
