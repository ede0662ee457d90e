//! The real functions behind a set of import-slot hooks (`nativemem`, `natsock`): written once
//! at the first start, from `dlsym`, before any slot points at a hook, and never cleared, so a
//! hook always has somewhere to go (a thread may call through a stale slot after stop).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Addresses by the hooked function's index (0 until resolved).
pub struct RealFns<const N: usize>([AtomicUsize; N]);

impl<const N: usize> RealFns<N> {
    pub const fn new() -> Self {
        RealFns([const { AtomicUsize::new(0) }; N])
    }

    pub fn set(&self, i: usize, addr: usize) {
        if let Some(a) = self.0.get(i) {
            a.store(addr, Ordering::Release);
        }
    }

    pub fn get(&self, i: usize) -> usize {
        self.0.get(i).map_or(0, |a| a.load(Ordering::Acquire))
    }
}

impl<const N: usize> Default for RealFns<N> {
    fn default() -> Self {
        Self::new()
    }
}
