//! The `AsyncGetCallTrace` walker: HotSpot's own async-safe stack walk, exported from
//! libjvm.so. It fills jmethodIDs only for methods that already have one, so it is
//! paired with preloading (`fjmethodid=true`). Failures come back as negative frame
//! counts (docs/hotspot.md 7), recorded as one error frame and a counter.

use std::ffi::c_void;
use std::sync::OnceLock;

use jni::sys::{jint, jmethodID, JNIEnv};

use super::{SignalContext, StackWalker, Walk};
use crate::counters::Counter;
use crate::sample::frame::{frame_type, Frame};
use crate::sample::vm::current_thread;

#[repr(C)]
struct CallFrame {
    /// bci for Java frames, -3 for native methods.
    lineno: jint,
    method_id: jmethodID,
}

#[repr(C)]
struct CallTrace {
    env_id: *mut JNIEnv,
    num_frames: jint,
    frames: *mut CallFrame,
}

type AsyncGetCallTraceFn = unsafe extern "C" fn(*mut CallTrace, jint, *mut c_void);

/// The bci AsyncGetCallTrace gives the frame of a native Java method.
const BCI_NATIVE: jint = -3;
/// AGCT's own code for "not a live Java thread" (ticks_thread_exit).
const NOT_JAVA_THREAD: jint = -8;

pub struct Agct {
    function: AsyncGetCallTraceFn,
}

static AGCT: OnceLock<Option<Agct>> = OnceLock::new();

impl Agct {
    /// Finds `AsyncGetCallTrace` in the process (libjvm.so is already loaded).
    /// Not signal-safe (dlsym): call once before arming.
    pub fn find() -> Option<&'static Agct> {
        AGCT.get_or_init(|| {
            // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
            let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"AsyncGetCallTrace".as_ptr()) };
            if sym.is_null() {
                return None;
            }
            // SAFETY: the exported symbol has this C signature (forte.cpp).
            Some(Agct {
                function: unsafe { std::mem::transmute::<*mut c_void, AsyncGetCallTraceFn>(sym) },
            })
        })
        .as_ref()
    }

    /// The walker if `find` already succeeded. Signal-safe.
    pub fn loaded() -> Option<&'static Agct> {
        AGCT.get()?.as_ref()
    }
}

fn count_failure(code: jint) {
    let c = match code {
        0 => Counter::AgctNoJavaFrame,
        -1 => Counter::AgctNoClassLoad,
        -2 => Counter::AgctGcActive,
        -3 => Counter::AgctUnknownNotJava,
        -4 => Counter::AgctNotWalkableNotJava,
        -5 => Counter::AgctUnknownJava,
        -6 => Counter::AgctNotWalkableJava,
        -7 => Counter::AgctUnknownState,
        -8 => Counter::AgctThreadExit,
        -9 => Counter::AgctDeopt,
        -10 => Counter::AgctSafepoint,
        _ => Counter::AgctOther,
    };
    c.inc();
}

impl StackWalker for Agct {
    fn name(&self) -> &'static str {
        "asgct"
    }

    /// Signal-safe.
    fn walk(&self, ucontext: SignalContext, out: &mut [Frame]) -> Walk {
        if out.is_empty() {
            return Walk {
                frames: 0,
                truncated: true,
            };
        }
        // CallFrame and Frame are both 16 bytes, 8-aligned, plain integers: AGCT fills
        // the buffer in its layout and each entry is then rewritten in place in ours.
        const _: () = assert!(std::mem::size_of::<CallFrame>() == std::mem::size_of::<Frame>());
        const _: () = assert!(std::mem::align_of::<CallFrame>() == std::mem::align_of::<Frame>());
        let raw = out.as_mut_ptr() as *mut CallFrame;
        // Not a JavaThread (GC, compiler, native): AGCT has nothing to walk, and on
        // JDK 11 it would read a JavaThread out of whatever env_id we pass.
        let Some(env) = current_thread::jni_env() else {
            count_failure(NOT_JAVA_THREAD);
            if let Some(first) = out.first_mut() {
                *first = Frame::error(NOT_JAVA_THREAD);
            }
            return Walk {
                frames: 1,
                truncated: false,
            };
        };
        let capacity = out.len();
        let mut trace = CallTrace {
            env_id: env,
            num_frames: 0,
            frames: raw,
        };
        let depth = capacity.min(jint::MAX as usize) as jint;
        // SAFETY: AGCT is async-signal-safe by design and runs on the interrupted thread;
        // `raw` has room for `depth` frames.
        unsafe { (self.function)(&mut trace, depth, ucontext.0) };
        let n = trace.num_frames;
        if n <= 0 {
            count_failure(n);
            if let Some(first) = out.first_mut() {
                *first = Frame::error(n);
            }
            return Walk {
                frames: 1,
                truncated: false,
            };
        }
        let n = (n as usize).min(capacity);
        for i in 0..n {
            // SAFETY: i < n <= capacity; the slot holds a CallFrame written by AGCT, read
            // whole before the same 16 bytes are overwritten as a Frame.
            unsafe {
                let cf = raw.add(i).read();
                let native = cf.lineno == BCI_NATIVE;
                // AsyncGetCallTrace gives no frame type; upstream reports "JIT compiled".
                let frame_type = if native {
                    frame_type::NATIVE
                } else {
                    frame_type::JIT_COMPILED
                };
                let bci = if native { -1 } else { cf.lineno };
                (raw.add(i) as *mut Frame).write(Frame::java(cf.method_id as u64, bci, frame_type));
            }
        }
        Walk {
            frames: n,
            truncated: n == capacity,
        }
    }
}
