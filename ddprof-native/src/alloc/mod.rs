//! Allocation profiling and the live heap (`memory=BYTES[:a|l|L[:ratio]]`): JEP 331 heap
//! sampling through JVMTI (`SetHeapSamplingInterval` + `SampledObjectAlloc`, JDK 11+).
//!
//! The callback runs on the allocating thread, inside the VM, once per sampled object:
//! class name from the `Klass` (`classes.rs`), stack from our walker started at the
//! thread's frame anchor (`crate::sample::alloc`: raw or lazily tagged frames, no jmethodID
//! made), the thread's trace context, weight `1 / (1 - exp(-size / interval))`; recorded
//! through the one recording entry as `EventKind::Alloc` (written as `datadog.ObjectSample`),
//! and, for liveness, a subsample handed to the tracker (`live.rs`).
//!
//! A rate controller moves the interval so that about [`TARGET_PER_SECOND`] samples are
//! taken, never below the configured interval (`DDPROF_TEST_DISABLE_RATE_LIMIT=1` turns it
//! off, as upstream).

// JNI handles are opaque tokens the JVM validates (as in crate::jvmti::jvm).
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod classes;
pub mod live;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use jni::sys::{jclass, jlong, jobject, JNIEnv};
use parking_lot::Mutex;

use crate::args::Memory;
use crate::counters::Counter;
use crate::jvmti::{self, Capabilities, Jvmti};
use crate::sample::alloc::{self as sampler, Sampled};
use crate::sample::handler::{self, WalkerKind};
use crate::sample::rate_window::RateWindow;
use crate::sample::record::Allocation;

/// HotSpot's and upstream's floor of the sampling interval.
pub const MIN_INTERVAL: u64 = 256 * 1024;
/// Samples per second the rate controller aims at (upstream: 100 per 1 s window).
pub const TARGET_PER_SECOND: u64 = 100;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static RECORD_ALLOCATIONS: AtomicBool = AtomicBool::new(false);
/// The interval in force (bytes) and the configured floor.
static INTERVAL: AtomicU64 = AtomicU64::new(MIN_INTERVAL);
static CONFIGURED: AtomicU64 = AtomicU64::new(MIN_INTERVAL);
static RATE_LIMIT: AtomicBool = AtomicBool::new(true);
static WINDOW: RateWindow = RateWindow::new();
/// Whether our environment holds the sampling capability (taken once, never given back)
/// and GC events (for liveness ages).
static CAPABILITY: Mutex<Option<Result<bool, String>>> = Mutex::new(None);

/// The interval the sampler uses for `memory=BYTES`: at least 256 KiB.
pub fn effective_interval(requested: u64) -> u64 {
    requested.max(MIN_INTERVAL)
}

/// The weight of a sample of `size` bytes at `interval`: the objects of that size it stands
/// for (`1 / P(sampled)`).
pub fn weight(size: u64, interval: u64) -> f32 {
    let p = 1.0 - (-(size as f64) / interval.max(1) as f64).exp();
    if p <= 0.0 {
        return 1.0;
    }
    (1.0 / p) as f32
}

/// Takes the capabilities once per process: Ok(whether GC events are available).
fn acquire(jvmti: Jvmti) -> Result<bool, String> {
    let mut guard = CAPABILITY.lock();
    if let Some(r) = guard.as_ref() {
        return r.clone();
    }
    let sampling = Capabilities::default().with(Capabilities::GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS);
    let r = match jvmti.add_capabilities(&sampling) {
        Ok(()) => {
            let gc = Capabilities::default().with(Capabilities::GENERATE_GARBAGE_COLLECTION_EVENTS);
            let gc_events = jvmti.add_capabilities(&gc).is_ok()
                && jvmti
                    .enable_event(jvmti::EVENT_GARBAGE_COLLECTION_FINISH)
                    .is_ok();
            Ok(gc_events)
        }
        Err(jvmti::JVMTI_ERROR_NOT_AVAILABLE) => {
            Err("allocation sampling is unavailable: the JVMTI capability \
             can_generate_sampled_object_alloc_events is held by another agent (only one \
             JVMTI environment may sample allocations), or this JVM does not support heap \
             sampling (JDK 11+)"
                .to_string())
        }
        Err(e) => Err(format!(
            "allocation sampling is unavailable: JVMTI AddCapabilities failed ({e})"
        )),
    };
    // A refusal is not cached: the other agent may give the capability back.
    if r.is_ok() {
        *guard = Some(r.clone());
    }
    r
}

/// Starts allocation sampling for a session. Returns warnings for the caller.
pub fn start(
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    m: &Memory,
    walker: WalkerKind,
    depth: usize,
    new_recording: bool,
) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    if new_recording {
        // Context attribute ids are per recording: older entries lose theirs.
        live::new_recording();
    }
    let gc_events = acquire(jvmti)?;
    let interval = effective_interval(m.interval);
    sampler::arm(walker, depth);
    CONFIGURED.store(interval, Ordering::Relaxed);
    INTERVAL.store(interval, Ordering::Relaxed);
    SESSION.fetch_add(1, Ordering::Relaxed);
    Counter::AllocIntervalBytes.set(interval as i64);
    RATE_LIMIT.store(
        std::env::var("DDPROF_TEST_DISABLE_RATE_LIMIT").as_deref() != Ok("1"),
        Ordering::Relaxed,
    );
    WINDOW.reset(handler::ticks());
    RECORD_ALLOCATIONS.store(m.allocations, Ordering::Relaxed);
    if m.liveness {
        if !gc_events {
            warnings.push(
                "JVMTI GarbageCollectionFinish events are unavailable: live objects' ages stay 0"
                    .to_string(),
            );
        }
        live::enable(m.ratio, max_heap(jni), interval);
    } else {
        live::disable();
    }
    let jint_interval = i32::try_from(interval).unwrap_or(i32::MAX);
    jvmti
        .set_heap_sampling_interval(jint_interval)
        .map_err(|e| format!("JVMTI SetHeapSamplingInterval failed ({e})"))?;
    ACTIVE.store(true, Ordering::Release);
    jvmti
        .enable_event(jvmti::EVENT_SAMPLED_OBJECT_ALLOC)
        .map_err(|e| {
            ACTIVE.store(false, Ordering::Release);
            format!("JVMTI SampledObjectAlloc events could not be enabled ({e})")
        })?;
    Ok(warnings)
}

/// Stops sampling (the live table stays for the next recording).
pub fn stop(jvmti: Jvmti) {
    if !ACTIVE.swap(false, Ordering::AcqRel) {
        return;
    }
    let _ = jvmti.disable_event(jvmti::EVENT_SAMPLED_OBJECT_ALLOC);
    live::disable();
}

/// The interval in force (for the recording's settings).
pub fn interval() -> u64 {
    INTERVAL.load(Ordering::Relaxed)
}

/// `Runtime.getRuntime().maxMemory()`, or 0 if JNI fails (then the table's maximum is upstream's).
fn max_heap(jni: *mut JNIEnv) -> u64 {
    runtime_long(jni, "maxMemory")
        .filter(|&v| v > 0 && v != i64::MAX)
        .map_or(u64::MAX, |v| v as u64)
}

/// A `long` method of `Runtime.getRuntime()` (`maxMemory`, `totalMemory`, `freeMemory`).
pub fn runtime_long(jni: *mut JNIEnv, method: &str) -> Option<i64> {
    // SAFETY: `jni` is the current thread's JNIEnv.
    let mut env = unsafe { jni::JNIEnv::from_raw(jni) }.ok()?;
    let value = env
        .call_static_method(
            "java/lang/Runtime",
            "getRuntime",
            "()Ljava/lang/Runtime;",
            &[],
        )
        .and_then(|r| r.l())
        .and_then(|rt| {
            let v = env.call_method(&rt, method, "()J", &[]).and_then(|v| v.j());
            let _ = env.delete_local_ref(rt);
            v
        });
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
    }
    value.ok()
}

/// The SampledObjectAlloc callback's work (`crate::api::events`).
pub fn on_sampled_alloc(jni: *mut JNIEnv, object: jobject, class: jclass, size: jlong) {
    if !ACTIVE.load(Ordering::Acquire) {
        return;
    }
    let size = u64::try_from(size).unwrap_or(0);
    let w = weight(size, drawn_with(INTERVAL.load(Ordering::Relaxed)));
    let track = live::enabled();
    // As the chunk's buffer fills, fewer samples are recorded and each weighs more (the
    // liveness tracker sees every one, with its own weight).
    let thinned = match RECORD_ALLOCATIONS.load(Ordering::Relaxed) {
        true => sampler::thin(),
        false => None,
    };
    let record = thinned.is_some();
    if !record && !track {
        rate_tick();
        return;
    }
    let alloc = Allocation {
        size,
        class_id: classes::id_of(class),
        weight: w * thinned.unwrap_or(1.0),
        address: 0,
    };
    let sampled = Sampled {
        kind: crate::sample::record::EventKind::Alloc,
        alloc,
        record,

        ticks: None,
        weight: 1,
    };
    let _ = sampler::sample(&sampled, |frames, truncated, context, ticks| {
        if !track {
            return;
        }
        let bytes = (f64::from(w) * size as f64) as u64;
        let seed = (ticks as u64) ^ (crate::sample::context::gettid() as u64).rotate_left(32);
        if let Some(skipped) = live::keep(bytes, seed) {
            live::add(
                jni,
                object,
                &live::Sample {
                    frames,
                    truncated,
                    context: *context,
                    ticks,
                    tid: crate::sample::context::gettid(),
                    size,
                    weight: w,
                    skipped,
                    class_id: alloc.class_id,
                },
            );
        }
    });
    rate_tick();
}

thread_local! {
    /// (session, interval in force at this thread's previous sample).
    static DRAWN: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}
/// Bumped by every start: an interval remembered from an earlier session is not used.
static SESSION: AtomicU64 = AtomicU64::new(0);

/// The interval this sample's distance was drawn with. HotSpot draws a thread's next sampling
/// point when it takes a sample, with the interval in force then; so after the rate controller
/// moved the interval, each thread's next sample still stands for the old one. Weighting it with
/// the new one would overweight it by the ratio (up to 16x) once per thread and change.
fn drawn_with(current: u64) -> u64 {
    let session = SESSION.load(Ordering::Relaxed);
    DRAWN.with(|c| {
        let (s, previous) = c.replace((session, current));
        if s == session && previous != 0 {
            previous
        } else {
            current
        }
    })
}

/// Counts a sample; once a second, or as soon as a window has twice its target (a burst
/// would otherwise run a whole second at the old interval), moves the interval towards
/// [`TARGET_PER_SECOND`].
fn rate_tick() {
    if !RATE_LIMIT.load(Ordering::Relaxed) {
        return;
    }
    let due =
        |n: u64, elapsed: i64| elapsed >= handler::TICKS_PER_SECOND || n >= 2 * TARGET_PER_SECOND;
    let Some(window) = WINDOW.count(handler::ticks(), 0, due) else {
        return;
    };
    let rate = window.rate(handler::TICKS_PER_SECOND);
    let current = INTERVAL.load(Ordering::Relaxed);
    let next = retarget(current, rate, CONFIGURED.load(Ordering::Relaxed));
    if next != current {
        if let Some(j) = crate::jvmti::jvm::jvmti() {
            if j.set_heap_sampling_interval(i32::try_from(next).unwrap_or(i32::MAX))
                .is_ok()
            {
                INTERVAL.store(next, Ordering::Relaxed);
                Counter::AllocIntervalBytes.set(next as i64);
            }
        }
    }
}

/// The interval that would have given [`TARGET_PER_SECOND`] at the observed `rate`, raised
/// at most 16x and lowered at most 4x per window, between the configured floor and
/// `i32::MAX`; unchanged within 25%.
fn retarget(current: u64, rate: f64, floor: u64) -> u64 {
    let ratio = rate / TARGET_PER_SECOND as f64;
    if (0.8..=1.25).contains(&ratio) {
        return current;
    }
    let next = current as f64 * ratio.clamp(0.25, 16.0);
    (next as u64).clamp(floor, i32::MAX as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_is_the_inverse_sampling_probability() {
        // Small objects stand for about interval / size of their kind.
        let w = weight(16, 512 * 1024);
        assert!((f64::from(w) - 32_768.5).abs() < 1.0, "{w}");
        // An object many intervals large is always sampled.
        assert!((weight(100 << 20, 512 * 1024) - 1.0).abs() < 1e-6);
        assert_eq!(effective_interval(1), MIN_INTERVAL);
        assert_eq!(effective_interval(1 << 20), 1 << 20);
    }

    #[test]
    fn the_rate_controller_moves_towards_the_target_within_bounds() {
        let floor = 512 * 1024;
        assert_eq!(retarget(floor, 100.0, floor), floor);
        assert_eq!(retarget(floor, 200.0, floor), 2 * floor);
        assert_eq!(retarget(floor, 10_000.0, floor), 16 * floor);
        assert_eq!(retarget(4 * floor, 50.0, floor), 2 * floor);
        assert_eq!(
            retarget(floor, 1.0, floor),
            floor,
            "never below the configured interval"
        );
        assert_eq!(retarget(i32::MAX as u64, 1e9, floor), i32::MAX as u64);
    }
}
