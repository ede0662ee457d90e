//! Noticing a library `dlopen` added (or `dlclose` removed) while the profiler runs, within
//! [`PERIOD`] rather than at the next dump: the DWARF rules the native unwinder reads, and
//! the import-slot hooks of `nativemem` and `natsock`, then cover it from its first samples.
//! The same thread has the CPU engine adopt new threads the JVM never told us about (native
//! threads never attached) and drop the timers of threads gone without a ThreadEnd, and
//! measures our mappings' resident pages, every [`ADOPT_EVERY`] polls: work the dump did
//! before, off its path (`dump::prepare` is the same for what the first dump would read).
//!
//! A thread (`ddprof-libraries`) polls glibc's count of objects added and removed
//! (`dlpi_adds`/`dlpi_subs` of `dl_iterate_phdr`, read from the first object: one call that
//! takes the loader's lock for an instant) and refreshes when it moved. We chose polling over
//! hooking `dlopen`: glibc resolves a relative name against the RUNPATH of the object that
//! called `dlopen`, which a hook in between would make this library.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::counters::Counter;

/// How often the loader's counts are read.
pub const PERIOD: Duration = Duration::from_millis(200);
/// Polls between two looks for threads to adopt (about a second: listing /proc/self/task
/// costs more than reading the loader's counts).
pub const ADOPT_EVERY: u32 = 5;
/// Polls between two of the slow measures (about five seconds): our mappings' resident pages
/// and the process's context-switch rate (`super::switch_price`, whose window is five seconds
/// anyway). Done every second they were most of this thread's CPU: the page-table walk over
/// ~100 MB of reserved buffers, and `getrusage`, which sums over every thread (`perf record`
/// with the tracer's options and with 1,000 wall-sampled threads, docs/benchmarks.md).
pub const MEASURE_EVERY: u32 = 25;

/// What the watcher keeps current.
#[derive(Clone)]
pub struct Refresh {
    /// The native unwinder's DWARF rules (`crate::libs::eh_frame`): with the VM walker.
    pub unwind_rules: bool,
    /// The symbol tables native frames are named from (`crate::libs::symbols`), read here rather
    /// than by the first dump that meets a library's frame: libjvm's takes milliseconds. (The
    /// build ids and host facts every dump writes are read here in any mode: `dump::prepare`.)
    pub symbols: bool,
    /// The native pcs of live traces named as they come (`super::ahead`): where native
    /// frames are recorded and the dump names them itself (not under `remotesym`, which
    /// leaves most of them to the backend).
    pub names_ahead: bool,
    /// The metadata of live traces' new jmethodIDs read as they come (`crate::methods::ahead_ids`):
    /// where it can be vouched for, decided on the starting JVM thread.
    pub java_ids_ahead: crate::methods::ahead_ids::Plan,
    /// `/proc/kallsyms`, for the kernel frames of perf_events samples (`crate::libs::kallsyms`).
    pub kernel_symbols: bool,
    /// The CPU engine, whose `adopt` arms threads started without a ThreadStart.
    pub engine: Option<Arc<dyn crate::engine::Engine>>,
    /// The sampling signals whose handlers are checked at every poll (`super::handlers`).
    pub signals: super::handlers::InUse,
}

struct Control {
    running: Mutex<bool>,
    wake: Condvar,
}

pub struct Watcher {
    control: Arc<Control>,
    thread: Option<JoinHandle<()>>,
}

fn refresh(what: &Refresh) {
    Counter::LibraryRefreshes.inc();
    if what.unwind_rules {
        let bytes = crate::libs::eh_frame::refresh();
        Counter::NativeUnwindTableBytes.set(bytes as i64);
    }
    crate::nativemem::rescan();
    crate::natsock::rescan();
    super::dump::prepare(what.symbols, what.kernel_symbols);
}

impl Watcher {
    /// Starts the thread; None (logged) where the loader gives no counts or no thread can be made,
    /// and the dumps alone refresh (and threads never attached are not sampled).
    pub fn start(what: Refresh) -> Option<Watcher> {
        let mut seen = crate::libs::mappings::loader_changes()?;
        let control = Arc::new(Control {
            running: Mutex::new(true),
            wake: Condvar::new(),
        });
        let c = control.clone();
        let mut polls = 0u32;
        let mut ahead = super::ahead::Ahead::default();
        let mut switches = super::switch_price::Watch::start();
        let spawned = crate::threads::spawn_own("ddprof-libraries", move || loop {
            let running = c.running.lock().unwrap_or_else(|e| e.into_inner());
            let (running, _) = c
                .wake
                .wait_timeout(running, PERIOD)
                .unwrap_or_else(|e| e.into_inner());
            if !*running {
                return;
            }
            drop(running);
            if let Some(now) = crate::libs::mappings::loader_changes() {
                if now != seen {
                    seen = now;
                    refresh(&what);
                }
            }
            super::handlers::poll(what.signals);
            ahead.poll(what.names_ahead, what.java_ids_ahead);
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(ADOPT_EVERY) {
                if let Some(e) = &what.engine {
                    e.adopt();
                    e.prune();
                }
            }
            if polls.is_multiple_of(MEASURE_EVERY) {
                switches.poll(
                    what.engine
                        .as_ref()
                        .is_some_and(|e| e.id() == crate::engine::EngineId::PerfEvents),
                );
                crate::footprint::measure_resident();
            }
        });
        match spawned {
            Ok(h) => Some(Watcher {
                control,
                thread: Some(h),
            }),
            Err(e) => {
                crate::log::warn(&format!("cannot create the library watcher thread: {e}"));
                None
            }
        }
    }
}

impl Drop for Watcher {
    /// Stops the thread and waits for it: nothing is refreshed after this returns.
    fn drop(&mut self) {
        *self
            .control
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = false;
        self.control.wake.notify_all();
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}
