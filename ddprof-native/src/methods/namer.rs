//! One dump's frame namer: what the dump asks once per frame of its StackTrace pool. The dump
//! (`profiler::dump`) owns the traces and the chunk; a [`FrameNamer`] owns everything that names
//! a frame (the JVMTI resolver, the symbolizer, the receiver and stub names) and their caches,
//! and answers each frame with the pool references the StackTrace entry holds. The trait lets
//! the dump be tested without a JVM (a fake namer, `profiler::dump::tests`).

use jni::sys::JNIEnv;

use super::java_names::JavaNames;
use super::native_names::NativeNames;
use super::receivers::{self, ReceiverNames};
use super::resolve::Resolver;
use super::stub_names::StubNames;
use crate::counters::Counter;
use crate::jfr::{ChunkBuilder, FrameRef};
use crate::sample::frame::{frame_type, kind, Frame};
use crate::sample::tags;

/// One frame as the StackTrace pool holds it, and what the dump needs to know of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedFrame {
    /// Method pool key (of the chunk the namer was given), line, bci and frame type.
    pub frame: FrameRef,
    /// A Java method a thread starts in: a Java-rooted trace ending in one is whole.
    pub entry_point: bool,
    /// False for a frame that could not be walked or named (`unknown`, `<unloaded>`): the
    /// samples of its trace count in `chunk_samples_unwalked_or_unnamed`.
    pub named: bool,
}

/// Names the frames of one dump, each distinct frame's pool entries made once.
pub trait FrameNamer {
    /// Called once, before the first [`Self::name`], with every frame of the dump (sizes the
    /// caches and the chunk's Method pool, warms what the lazy checks read).
    fn prepare<'f>(&mut self, chunk: &mut ChunkBuilder, frames: impl Iterator<Item = &'f Frame>);
    /// One frame of a trace whose earliest sample was taken at `since` (ticks; a lazily
    /// tagged frame of a redefined class is named only in traces sampled after the redefinition).
    fn name(&mut self, chunk: &mut ChunkBuilder, frame: &Frame, since: i64) -> NamedFrame;
    /// After the dump's last frame.
    fn finish(self);
}

/// The bytecode index upstream gives a frame left for remote symbolication.
const REMOTE_BCI: i32 = -19;

/// The namer of a dump in a JVM.
pub struct DumpNamer {
    java: JavaNames,
    natives: NativeNames,
    receivers: ReceiverNames,
    stubs: StubNames,
}

impl DumpNamer {
    /// `None` without JVMTI (no JVM to name Java frames with). `remotesym`: native frames in a
    /// library with a build id are left to the backend.
    pub fn new(jni: *mut JNIEnv, remotesym: bool) -> Option<DumpNamer> {
        let jvmti = crate::jvmti::jvm::jvmti()?;
        Some(DumpNamer {
            java: JavaNames::new(Resolver::new(jvmti, jni)),
            natives: NativeNames::new(remotesym),
            receivers: ReceiverNames::default(),
            stubs: StubNames::default(),
        })
    }
}

impl FrameNamer for DumpNamer {
    fn prepare<'f>(&mut self, chunk: &mut ChunkBuilder, frames: impl Iterator<Item = &'f Frame>) {
        let methods = self.java.prepare(frames);
        chunk.reserve_methods(methods);
    }

    fn name(&mut self, chunk: &mut ChunkBuilder, f: &Frame, since: i64) -> NamedFrame {
        let mut frame_type = f.frame_type;
        let (method, line, entry_point, named) = match f.kind {
            kind::NATIVE_PC if f.frame_type == frame_type::KERNEL => {
                (self.natives.kernel_key(chunk, f.method), 0, false, true)
            }
            kind::NATIVE_PC => {
                let (key, t) = self.natives.frame(chunk, f.method);
                frame_type = t;
                (key, 0, false, true)
            }
            kind::VTABLE_RECEIVER => {
                let key = self.receivers.receiver(chunk, f.method, f.bci);
                (key, 0, false, true)
            }
            kind::STUB => (self.stubs.key(chunk, f.method), 0, false, true),
            _ => self.java.name(chunk, f, since),
        };
        // Non-Java frames of upstream's that carry a bci of their own keep it raw.
        let bci = match f.kind {
            kind::VTABLE_RECEIVER => receivers::RECEIVER_BCI,
            kind::STUB => 0,
            _ if frame_type == frame_type::NATIVE_REMOTE => REMOTE_BCI,
            _ => tags::bci(f).max(0),
        };
        NamedFrame {
            frame: FrameRef {
                method,
                line,
                bci,
                frame_type,
            },
            entry_point,
            named,
        }
    }

    fn finish(self) {
        Counter::RawFrameResolveCacheHits.add(self.java.cache_hits());
        // Receivers of classes gone by now were all named above (or in an earlier dump).
        receivers::forget_unloaded();
    }
}
