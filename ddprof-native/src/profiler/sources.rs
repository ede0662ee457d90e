//! The sources a session runs, and their one lifecycle: started in order, stopped in reverse.
//!
//! `start` (start.rs) brings the profiler up source by source, one function each, and each
//! registers its stop in a [`Sources`] as soon as it is running. A start that returns early
//! with an error (or panics) drops the [`Sources`], which stops exactly the sources that
//! started, last first; a start that completes moves them into the session, and the session's
//! `stop` unwinds them the same way ([`Sources::stop`]). So a source that starts is stopped by
//! one path whatever ends it, and `stop` has no list of its own that could forget one.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::log;

/// What `start` runs after its checks, in the order it starts them ([`ORDER`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The perf map and jitdump (`perfmap`, `jitdump`).
    CodeMap,
    /// The signal handler's recording gate and the CPU engine.
    Cpu,
    /// The wall-clock sampler.
    Wall,
    /// JVMTI allocation sampling (`memory=`).
    Alloc,
    /// Native allocation hooks (`nativemem=`).
    NativeMem,
    /// Socket I/O hooks (`natsock=`); one that cannot start is a warning, not a failure.
    NatSock,
    /// The library watcher (`libraries.rs`): stopped before the hooks it re-applies are put back.
    Libraries,
    /// Endpoint and queue-time events (`crate::tracing`).
    Tracing,
}

/// The order `start` starts the sources in (and `stop` stops them in reverse).
pub const ORDER: [Source; 8] = [
    Source::CodeMap,
    Source::Cpu,
    Source::Wall,
    Source::Alloc,
    Source::NativeMem,
    Source::NatSock,
    Source::Libraries,
    Source::Tracing,
];

impl Source {
    /// The name the log and `DDPROF_TEST_START_FAIL` use.
    pub fn name(self) -> &'static str {
        match self {
            Source::CodeMap => "codemap",
            Source::Cpu => "cpu",
            Source::Wall => "wall",
            Source::Alloc => "alloc",
            Source::NativeMem => "nativemem",
            Source::NatSock => "natsock",
            Source::Libraries => "libraries",
            Source::Tracing => "tracing",
        }
    }
}

fn position(source: Source) -> usize {
    ORDER
        .iter()
        .position(|&s| s == source)
        .unwrap_or(usize::MAX)
}

/// Test-only: `DDPROF_TEST_START_FAIL=<source>` makes that source's first start in the process
/// fail before it does anything, as a source that cannot start does, so the JVM tests can reach
/// every rollback and then start again.
pub const FAIL_ENV: &str = "DDPROF_TEST_START_FAIL";

static INJECTED: AtomicBool = AtomicBool::new(false);

/// The failure `DDPROF_TEST_START_FAIL` asks of `source`'s start, if it names it and has not
/// failed it yet.
fn injected_failure(source: Source) -> Result<(), String> {
    match std::env::var(FAIL_ENV) {
        Ok(v) if v == source.name() && !INJECTED.swap(true, Ordering::Relaxed) => {
            Err(format!("{} start failed ({FAIL_ENV}={v})", source.name()))
        }
        _ => Ok(()),
    }
}

/// Stops run on whichever thread ends the session (a command's, or the JVM's at exit).
type Stop = Box<dyn FnOnce() + Send>;

/// The stops of the sources running, in the order they started. Dropped while it holds any
/// (a start that failed), it stops them last first; [`stop`](Sources::stop) does the same for
/// a session that ends.
#[must_use = "dropping it stops the sources it holds"]
pub struct Sources {
    stops: Vec<(Source, Stop)>,
}

impl Sources {
    pub fn new() -> Self {
        Sources { stops: Vec::new() }
    }

    /// Registers the stop of (a piece of) `source` that is now running. A stop must be safe to
    /// run once whatever else of its source started. Sources come in [`ORDER`].
    pub fn push(&mut self, source: Source, stop: impl FnOnce() + Send + 'static) {
        debug_assert!(
            self.stops
                .last()
                .is_none_or(|(last, _)| position(*last) <= position(source)),
            "{source:?} started after {:?}",
            self.stops.last().map(|(s, _)| s)
        );
        self.stops.push((source, Box::new(stop)));
    }

    /// Starts `source` with `start`, which either starts it or fails leaving nothing of it
    /// running, and then registers `stop`.
    pub fn start<T>(
        &mut self,
        source: Source,
        start: impl FnOnce() -> Result<T, String>,
        stop: impl FnOnce() + Send + 'static,
    ) -> Result<T, String> {
        injected_failure(source)?;
        let started = start()?;
        self.push(source, stop);
        Ok(started)
    }

    /// Whether (a piece of) `source` runs.
    #[cfg(test)]
    pub fn runs(&self, source: Source) -> bool {
        self.stops.iter().any(|(s, _)| *s == source)
    }

    /// The session ends: stops every source, last started first.
    pub fn stop(mut self) {
        self.unwind(|_| {});
    }

    fn unwind(&mut self, mut each: impl FnMut(Source)) {
        while let Some((source, stop)) = self.stops.pop() {
            each(source);
            stop();
        }
    }
}

impl Drop for Sources {
    fn drop(&mut self) {
        self.unwind(|s| log::info(&format!("start failed: stopping {}", s.name())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Event {
        Started(Source),
        Stopped(Source),
    }

    /// What the fake sources did, in order.
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<Event>>>);

    impl Log {
        fn record(&self, e: Event) {
            self.0.lock().unwrap().push(e);
        }
        fn events(&self) -> Vec<Event> {
            self.0.lock().unwrap().clone()
        }
        /// The sources started and not stopped since, checking that each stop is of the
        /// source started last among those still running.
        fn running(&self) -> Vec<Source> {
            let mut running = Vec::new();
            for e in self.events() {
                match e {
                    Event::Started(s) => running.push(s),
                    Event::Stopped(s) => {
                        assert_eq!(running.pop(), Some(s), "stopped out of order: {e:?}")
                    }
                }
            }
            running
        }
    }

    /// A fake of `start.rs`'s shape over [`ORDER`], recording instead of running
    /// engines: the CPU gate is opened (a piece) before the engine starts, the wall sampler
    /// is armed before its thread starts, a natsock failure is a warning, the watcher and
    /// tracing cannot fail. `failing` names the source whose start fails.
    fn fake_start(log: &Log, failing: Option<Source>) -> Result<Sources, String> {
        let mut sources = Sources::new();
        for source in ORDER {
            let on = log.clone();
            let off = log.clone();
            let start = || {
                if failing == Some(source) {
                    return Err(format!("{} refused", source.name()));
                }
                on.record(Event::Started(source));
                Ok(())
            };
            let stop = move || off.record(Event::Stopped(source));
            match source {
                Source::Cpu | Source::Wall => {
                    log.record(Event::Started(source));
                    let gate = log.clone();
                    sources.push(source, move || gate.record(Event::Stopped(source)));
                    sources.start(source, start, stop)?;
                }
                Source::NatSock => {
                    let _warning = sources.start(source, start, stop);
                }
                Source::Libraries | Source::Tracing => {
                    start()?;
                    sources.push(source, stop);
                }
                _ => sources.start(source, start, stop)?,
            }
        }
        Ok(sources)
    }

    #[test]
    fn a_failure_at_any_source_stops_every_source_started_before_it() {
        for failing in [
            Source::CodeMap,
            Source::Cpu,
            Source::Wall,
            Source::Alloc,
            Source::NativeMem,
        ] {
            let log = Log::default();
            let result = fake_start(&log, Some(failing));
            let name = failing.name();
            assert_eq!(result.err(), Some(format!("{name} refused")));
            assert!(
                log.running().is_empty(),
                "{name} failing left {:?}",
                log.running()
            );
            // The failing source's own start left nothing (its gate, for cpu and wall, is
            // closed by the unwinding), and nothing after it started.
            let started: Vec<Source> = log
                .events()
                .into_iter()
                .filter_map(|e| match e {
                    Event::Started(s) => Some(s),
                    Event::Stopped(_) => None,
                })
                .collect();
            let upto = ORDER.iter().position(|&s| s == failing).unwrap();
            assert!(
                started.iter().all(|s| ORDER[..=upto].contains(s)),
                "{started:?}"
            );
        }
    }

    #[test]
    fn a_session_stop_stops_every_source_last_first() {
        let log = Log::default();
        let sources = fake_start(&log, None).expect("a start without failures");
        // Every source of ORDER runs, CPU and wall as two pieces (gate, then engine or sampler).
        let pieces: Vec<Source> = ORDER
            .into_iter()
            .flat_map(|s| match s {
                Source::Cpu | Source::Wall => vec![s, s],
                _ => vec![s],
            })
            .collect();
        assert_eq!(log.running(), pieces);
        for s in ORDER {
            assert!(sources.runs(s), "{s:?}");
        }
        let running = log.running();
        let before = log.events().len();
        sources.stop();
        assert!(log.running().is_empty(), "left {:?}", log.running());
        let stopped: Vec<Event> = log.events()[before..].to_vec();
        // Every piece, exactly once, last started first.
        let expected: Vec<Event> = running.into_iter().rev().map(Event::Stopped).collect();
        assert_eq!(stopped, expected);
    }

    #[test]
    fn natsock_that_cannot_start_leaves_the_others_running_and_stopped_at_stop() {
        let log = Log::default();
        let sources = fake_start(&log, Some(Source::NatSock)).expect("natsock is a warning");
        assert!(!sources.runs(Source::NatSock));
        assert!(!log.running().contains(&Source::NatSock));
        assert!(log.running().contains(&Source::NativeMem));
        sources.stop();
        assert!(log.running().is_empty(), "left {:?}", log.running());
    }

    #[test]
    #[should_panic(expected = "started after")]
    #[cfg(debug_assertions)]
    fn a_source_out_of_order_is_a_bug() {
        let mut sources = Sources::new();
        sources.push(Source::Alloc, || {});
        sources.push(Source::Cpu, || {});
    }

    #[test]
    fn a_panic_during_a_start_stops_what_started() {
        let log = Log::default();
        let l = log.clone();
        let panicked = std::panic::catch_unwind(move || {
            let mut sources = Sources::new();
            for source in [Source::CodeMap, Source::Cpu] {
                let on = l.clone();
                let off = l.clone();
                let _ = sources.start(
                    source,
                    || {
                        on.record(Event::Started(source));
                        Ok(())
                    },
                    move || off.record(Event::Stopped(source)),
                );
            }
            panic!("a bug in the middle of a start");
        });
        assert!(panicked.is_err());
        assert!(log.running().is_empty(), "left {:?}", log.running());
        assert_eq!(log.events().len(), 4);
    }
}
