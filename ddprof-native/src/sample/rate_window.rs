//! The window of a rate controller: the events recorded since it began, and the amount they
//! stand for (bytes, nanoseconds); the first caller to find it due closes it and gets its
//! totals, and a new window begins. Lock-free and allocation-free, for hooks and callbacks on
//! any thread. The controllers (heap sampling in `crate::alloc`, `nativemem`, `natsock`) each
//! decide when a window is due and what its totals mean for their interval.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

pub struct RateWindow {
    /// When the window began (`handler::ticks`).
    start: AtomicI64,
    events: AtomicU64,
    amount: AtomicU64,
}

/// A closed window's totals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Closed {
    pub events: u64,
    /// Ticks the window lasted (at least 1).
    pub elapsed: i64,
    pub amount: u64,
}

impl Closed {
    /// Events per `per` ticks (a second's worth: events per second).
    pub fn rate(&self, per: i64) -> f64 {
        self.events as f64 * per as f64 / self.elapsed as f64
    }
}

impl RateWindow {
    pub const fn new() -> RateWindow {
        RateWindow {
            start: AtomicI64::new(0),
            events: AtomicU64::new(0),
            amount: AtomicU64::new(0),
        }
    }

    /// Begins a new window at `now` (a start).
    pub fn reset(&self, now: i64) {
        self.start.store(now, Ordering::Relaxed);
        self.events.store(0, Ordering::Relaxed);
        self.amount.store(0, Ordering::Relaxed);
    }

    /// Counts one event standing for `amount` at `now`; when `due(events, elapsed)` and this
    /// caller wins the window, closes it and returns its totals (events counted by others
    /// meanwhile may fall into either window).
    pub fn count(&self, now: i64, amount: u64, due: impl Fn(u64, i64) -> bool) -> Option<Closed> {
        let events = self.events.fetch_add(1, Ordering::Relaxed) + 1;
        let amount = self
            .amount
            .fetch_add(amount, Ordering::Relaxed)
            .saturating_add(amount);
        let start = self.start.load(Ordering::Relaxed);
        let elapsed = now.saturating_sub(start).max(1);
        if !due(events, elapsed) {
            return None;
        }
        // One caller per window closes it.
        self.start
            .compare_exchange(start, now, Ordering::AcqRel, Ordering::Relaxed)
            .ok()?;
        self.events.store(0, Ordering::Relaxed);
        self.amount.store(0, Ordering::Relaxed);
        Some(Closed {
            events,
            elapsed,
            amount,
        })
    }
}

impl Default for RateWindow {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_caller_closes_a_due_window_with_its_totals() {
        let w = RateWindow::new();
        w.reset(1_000);
        let due = |events: u64, elapsed: i64| events >= 3 || elapsed >= 100;
        assert_eq!(w.count(1_010, 5, due), None);
        assert_eq!(w.count(1_020, 5, due), None);
        let closed = w.count(1_030, 5, due).expect("due at the third event");
        assert_eq!(
            closed,
            Closed {
                events: 3,
                elapsed: 30,
                amount: 15
            }
        );
        assert!((closed.rate(30) - 3.0).abs() < 1e-9);
        // A new window began at the closing event.
        assert_eq!(w.count(1_040, 1, due), None);
        let late = w.count(1_200, 1, due).expect("due by time");
        assert_eq!((late.events, late.elapsed, late.amount), (2, 170, 2));
    }
}
