//! Sampling a stream of amounts (bytes allocated, nanoseconds spent in socket calls) as a
//! Poisson process: a shared countdown of the amount left until the next sample, drawn from
//! an exponential distribution with mean `interval`. Memoryless, so an event of `amount`
//! is sampled with probability `1 - exp(-amount / interval)` whatever came before it, and
//! its weight is the inverse: the sum of `amount * weight` over the samples estimates the
//! sum over all events. Lock-free (a compare-and-swap loop), allocation-free, no
//! thread-locals: callable from any hook on any thread.

use std::sync::atomic::{AtomicU64, Ordering};

pub struct PoissonSampler {
    /// Mean amount between samples; 0 or 1 samples every event.
    interval: AtomicU64,
    /// Amount left until the next sample.
    countdown: AtomicU64,
    /// splitmix64's counter.
    rng: AtomicU64,
}

impl PoissonSampler {
    pub const fn new() -> PoissonSampler {
        PoissonSampler {
            interval: AtomicU64::new(0),
            countdown: AtomicU64::new(0),
            rng: AtomicU64::new(0x853c_49e6_748f_ea9b),
        }
    }

    /// Starts over at `interval` with a fresh distance.
    pub fn arm(&self, interval: u64, seed: u64) {
        self.rng.store(seed | 1, Ordering::Relaxed);
        self.set_interval(interval);
    }

    /// Changes the mean (a rate controller's adjustment) and draws a fresh distance with it:
    /// left to run out, a distance drawn with the old mean would sample at the old rate and
    /// be weighted at the new one.
    pub fn set_interval(&self, interval: u64) {
        self.interval.store(interval, Ordering::Relaxed);
        self.countdown
            .store(self.next_distance(interval), Ordering::Relaxed);
    }

    pub fn interval(&self) -> u64 {
        self.interval.load(Ordering::Relaxed)
    }

    /// Whether an event of `amount` is sampled: takes it off the countdown, and draws a new
    /// distance when it reaches it.
    pub fn take(&self, amount: u64) -> bool {
        let interval = self.interval();
        if interval <= 1 {
            return true;
        }
        let mut prev = self.countdown.load(Ordering::Relaxed);
        loop {
            let (next, sampled) = if amount < prev {
                (prev - amount, false)
            } else {
                (self.next_distance(interval), true)
            };
            match self.countdown.compare_exchange_weak(
                prev,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return sampled,
                Err(now) => prev = now,
            }
        }
    }

    /// The weight of a sampled event of `amount` at the current interval.
    pub fn weight(&self, amount: u64) -> f32 {
        weight(amount, self.interval())
    }

    fn next_random(&self) -> u64 {
        let mut z = self
            .rng
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// An exponentially distributed distance with mean `interval`.
    fn next_distance(&self, interval: u64) -> u64 {
        if interval <= 1 {
            return 0;
        }
        let u = ((self.next_random() >> 11) as f64 / (1u64 << 53) as f64).max(1e-18);
        (interval as f64 * -u.ln()) as u64
    }
}

impl Default for PoissonSampler {
    fn default() -> Self {
        Self::new()
    }
}

/// `1 / P(sampled)` for an event of `amount`, with `P = 1 - exp(-amount / interval)`; 1 when
/// every event is sampled.
pub fn weight(amount: u64, interval: u64) -> f32 {
    if interval <= 1 || amount == 0 {
        return 1.0;
    }
    let p = 1.0 - (-(amount as f64) / interval as f64).exp();
    if p <= 0.0 {
        return 1.0;
    }
    (1.0 / p) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_the_inverse_sampling_probability() {
        assert_eq!(weight(100, 0), 1.0);
        // An event much smaller than the interval stands for about interval / amount events.
        let w = weight(16, 1 << 20);
        assert!((f64::from(w) - 65_536.5).abs() < 2.0, "{w}");
        assert!((weight(100 << 20, 1 << 20) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn sampled_amounts_estimate_the_true_total() {
        let s = PoissonSampler::new();
        s.arm(4096, 7);
        let (mut truth, mut estimate) = (0f64, 0f64);
        for i in 0..200_000u64 {
            let amount = 16 + (i * 7919) % 2000;
            truth += amount as f64;
            if s.take(amount) {
                estimate += amount as f64 * f64::from(s.weight(amount));
            }
        }
        let ratio = estimate / truth;
        assert!((0.95..1.05).contains(&ratio), "estimate / truth = {ratio}");
    }

    #[test]
    fn an_interval_of_zero_samples_everything() {
        let s = PoissonSampler::new();
        s.arm(0, 1);
        assert!((0..100).all(|i| s.take(i)));
        assert_eq!(s.weight(10), 1.0);
    }
}
