//! Owned blocked runs: what the park/block hooks (`JavaProfiler.parkEnter`/`parkExit`,
//! `blockEnter`/`blockExit`, called by instrumentation around `LockSupport.park` and
//! `Thread.sleep`) tell the wall sampler. A registered thread between enter and exit is
//! known to stay blocked, so under `wallprecheck` one wall sample of it is enough for the
//! whole run: after that sample is recorded, neither the sampler thread (which finds the
//! thread's [`FilterCell`] among the filter's) nor the handler (which finds it through the
//! thread's context) records it again until the run ends (`wc_signals_suppressed_sampled_run`,
//! and `numSuppressedSampledRun` of the epoch events). Threads without a span only, as
//! upstream: a traced thread's wait is part of its request's latency.
//!
//! A cell belongs to the wall-clock thread filter (`crate::context::thread_filter` allocates them in
//! pages that are never freed); it lives here because the handler reads it.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use super::mode::state;

/// One thread's place in the wall-clock filter.
#[derive(Default)]
pub struct FilterCell {
    /// The registered thread's tid; 0 when its thread is not registered (or the cell free).
    pub tid: AtomicI32,
    /// The owned blocked run the thread is in: `generation << 8 | thread state`; 0 none.
    run: AtomicU32,
    /// The run a recorded wall sample already covers (same encoding).
    sampled: AtomicU32,
}

/// Run generations, so that an exit only ends the run its enter began.
static GENERATION: AtomicU32 = AtomicU32::new(0);

impl FilterCell {
    /// The thread enters a blocked run in `state` (a `mode::state` code); returns the run.
    /// A run still open is replaced: a thread blocks in one place at a time, so an open run
    /// here is one whose exit was lost (an exit hook that did not run), and keeping it would
    /// hide the thread from wall sampling. Called by the thread itself.
    pub fn enter(&self, state: u8) -> u32 {
        let generation = (GENERATION.fetch_add(1, Ordering::Relaxed) % 0x00FF_FFFF) + 1;
        let run = generation << 8 | u32::from(state);
        self.sampled.store(0, Ordering::Relaxed);
        self.run.store(run, Ordering::Release);
        run
    }

    /// Ends `run` if it is the open one (an exit of a run that is no longer open does
    /// nothing). Called by the thread itself.
    pub fn exit(&self, run: u32) {
        if run != 0
            && self
                .run
                .compare_exchange(run, 0, Ordering::Release, Ordering::Relaxed)
                .is_ok()
        {
            self.sampled.store(0, Ordering::Relaxed);
        }
    }

    /// Ends the open run if it is a park (`parkExit` carries no token).
    pub fn exit_park(&self) {
        let run = self.run.load(Ordering::Relaxed);
        if run & 0xFF == u32::from(state::PARKED) {
            self.exit(run);
        }
    }

    /// The open run, 0 if none. Signal-safe.
    #[inline]
    pub fn open_run(&self) -> u32 {
        self.run.load(Ordering::Acquire)
    }

    /// Whether the open run already has its sample. Signal-safe.
    #[inline]
    pub fn run_sampled(&self) -> bool {
        let run = self.open_run();
        run != 0 && self.sampled.load(Ordering::Acquire) == run
    }

    /// A wall sample of `run` was recorded. Signal-safe.
    #[inline]
    pub fn mark_sampled(&self, run: u32) {
        self.sampled.store(run, Ordering::Release);
    }

    /// The cell's thread is gone: no run survives it.
    pub fn clear(&self) {
        self.tid.store(0, Ordering::Relaxed);
        self.run.store(0, Ordering::Relaxed);
        self.sampled.store(0, Ordering::Relaxed);
    }

    /// The thread state of an open run.
    #[inline]
    pub fn state_of(run: u32) -> u8 {
        (run & 0xFF) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_sampled_once_and_ends_only_with_its_own_exit() {
        let c = FilterCell::default();
        let run = c.enter(state::SLEEPING);
        assert_ne!(run, 0);
        assert_eq!(FilterCell::state_of(run), state::SLEEPING);
        assert!(!c.run_sampled());
        c.mark_sampled(run);
        assert!(c.run_sampled());
        c.exit_park();
        assert_eq!(c.open_run(), run, "a park exit does not end a sleep");
        c.exit(run.wrapping_add(256));
        assert_eq!(c.open_run(), run, "another run's token does not end it");
        c.exit(run);
        assert_eq!(c.open_run(), 0);
        assert!(!c.run_sampled());
        let next = c.enter(state::PARKED);
        assert!(next != 0 && next != run);
        assert!(!c.run_sampled(), "a new run needs a sample of its own");
        c.exit_park();
        assert_eq!(c.open_run(), 0);
    }

    #[test]
    fn a_run_whose_exit_was_lost_is_replaced_by_the_next() {
        let c = FilterCell::default();
        let lost = c.enter(state::SLEEPING);
        c.mark_sampled(lost);
        // No blockExit: the next enter must not leave the thread looking sampled and blocked.
        let next = c.enter(state::PARKED);
        assert_eq!(c.open_run(), next);
        assert!(!c.run_sampled());
        c.exit(lost);
        assert_eq!(
            c.open_run(),
            next,
            "the lost run's late exit does not end the new one"
        );
        c.exit_park();
        assert_eq!(c.open_run(), 0);
    }
}
