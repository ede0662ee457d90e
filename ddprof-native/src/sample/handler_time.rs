//! How long handlers took, as a histogram, so a chunk can report the median and the 99th
//! percentile beside the mean. The mean (`unwinding_ns_avg`) is wall time: a few samples
//! preempted inside the handler on a busy host (milliseconds each) move it by microseconds,
//! while the median stays what one walk and record cost.
//!
//! Buckets are log-linear: 8 per power of two, so a quantile is known within 1/16 of its
//! value. Signal-safe: `record` is one relaxed atomic add into a static array.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::counters::HOT_STRIPES;

/// Sub-buckets per power of two, as a shift.
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
/// Values below `1 << MIN_POW` ns share the first bucket; above `1 << MAX_POW` the last.
const MIN_POW: u32 = 6;
const MAX_POW: u32 = 32;
const BUCKETS: usize = (MAX_POW - MIN_POW + 1) as usize * SUB;

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
/// A histogram per stripe of threads (`tid % HOT_STRIPES`, as the striped counters of
/// `crate::counters`): handlers on different CPUs then rarely write one cache line.
static COUNTS: [[AtomicU64; BUCKETS]; HOT_STRIPES] = [const { [ZERO; BUCKETS] }; HOT_STRIPES];

fn bucket_of(ns: u64) -> usize {
    if ns < 1 << MIN_POW {
        return 0;
    }
    let pow = 63 - ns.leading_zeros();
    if pow > MAX_POW {
        return BUCKETS - 1;
    }
    let sub = ((ns >> (pow - SUB_BITS)) as usize) & (SUB - 1);
    ((pow - MIN_POW) as usize * SUB + sub).min(BUCKETS - 1)
}

/// The middle of bucket `b`, in ns.
fn middle_of(b: usize) -> u64 {
    let pow = MIN_POW + (b / SUB) as u32;
    let sub = (b % SUB) as u64;
    let width = 1u64 << (pow - SUB_BITS);
    (1u64 << pow) + sub * width + width / 2
}

/// Counts one handler of thread `tid` that took `ns`.
#[inline]
pub fn record(tid: i32, ns: u64) {
    let stripe = &COUNTS[tid as u32 as usize % HOT_STRIPES];
    // `get`: no panic path in a signal handler, though `bucket_of` stays in range.
    if let Some(c) = stripe.get(bucket_of(ns)) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// The `q`-quantile (0 < q <= 1) of the handlers counted since the last [`reset`], in ns;
/// 0 when none was counted.
pub fn quantile(q: f64) -> u64 {
    let mut counts = [0u64; BUCKETS];
    for stripe in COUNTS.iter() {
        for (n, c) in counts.iter_mut().zip(stripe.iter()) {
            *n += c.load(Ordering::Relaxed);
        }
    }
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return 0;
    }
    let rank = ((total as f64 * q).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    for (b, n) in counts.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return middle_of(b);
        }
    }
    middle_of(BUCKETS - 1)
}

/// Starts the next chunk's histogram (a handler counted meanwhile may be lost: a figure, not
/// an account).
pub fn reset() {
    for c in COUNTS.iter().flatten() {
        c.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_holds_its_value_within_a_sixteenth() {
        for ns in [
            64u64,
            100,
            1_000,
            1_234,
            2_600,
            10_000,
            999_999,
            4_000_000_000,
        ] {
            let m = middle_of(bucket_of(ns));
            let err = (m as f64 - ns as f64).abs() / ns as f64;
            assert!(err <= 1.0 / 16.0, "{ns} -> {m}");
        }
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn preempted_outliers_move_the_mean_not_the_median() {
        // The one test touching the shared histogram.
        reset();
        // Over several stripes: the quantiles are of all of them.
        for i in 0..990 {
            record(i, 2_500);
        }
        for i in 0..10 {
            record(i * 7, 4_000_000);
        }
        let median = quantile(0.5);
        assert!((2_400..=2_650).contains(&median), "{median}");
        assert!(quantile(0.999) > 3_000_000);
        reset();
        assert_eq!(quantile(0.5), 0);
    }
}
