//! The frame format every walker writes and the dump reads: what a slot holds (`kind`),
//! the JFR frame type (`frame_type`), and the 16-byte `Frame` itself.

/// JFR frame types: the keys of the FrameType constant pool, and their names.
pub mod frame_type {
    pub const INTERPRETED: u8 = 0;
    pub const JIT_COMPILED: u8 = 1;
    pub const INLINED: u8 = 2;
    pub const NATIVE: u8 = 3;
    pub const CPP: u8 = 4;
    pub const KERNEL: u8 = 5;
    pub const C1_COMPILED: u8 = 6;
    /// A native frame left for the backend to symbolize (`remotesym`): class = the library's
    /// build id, name `<remote>`, descriptor = the pc's ELF address in it. Upstream writes
    /// the type without a pool entry; ours has one, so that JDK readers name it.
    pub const NATIVE_REMOTE: u8 = 7;
    /// Names as JFR readers expect them, indexed by type.
    pub const NAMES: [&str; 8] = [
        "Interpreted",
        "JIT compiled",
        "Inlined",
        "Native",
        "C++",
        "Kernel",
        "C1 compiled",
        "Native (remote symbolication)",
    ];
}

/// What a frame slot holds (`Frame::kind`). A plain byte rather than an enum so that every
/// bit pattern is a valid `Frame`: walkers may fill the buffer through foreign calls.
pub mod kind {
    /// `method` is a jmethodID, `bci` its bytecode index.
    pub const JAVA_METHOD_ID: u8 = 0;
    /// The walk failed here; `bci` holds the walker's reason code.
    pub const ERROR: u8 = 1;
    /// `method` is a raw `Method*` (no jmethodID existed when sampled), named at dump.
    pub const RAW_METHOD: u8 = 2;
    /// `method` is the pc of a native frame (`cstack=vmx`), named by symbol at dump time.
    /// A kind of its own, so lazy-mode tags (raw frames only) never apply to it.
    pub const NATIVE_PC: u8 = 3;
    /// The receiver class of a vtable/itable stub (`sample::vm::receiver`): `method` is
    /// its `Klass*` (0: unreadable), `bci` the low 31 bits of its JFR trace ID then, so
    /// one class gives one frame and a `Klass*` reused by another class another one.
    /// Named at dump time, after the trace ID is found there again.
    pub const VTABLE_RECEIVER: u8 = 4;
    /// Code the VM generated outside nmethods (a stub routine or intrinsic, an adapter, a
    /// vtable/itable stub): `method` is the pc, named at dump time from the stubs the JVM
    /// reported (JVMTI DynamicCodeGenerated), else from the code blob holding it.
    pub const STUB: u8 = 5;
}

/// One frame as recorded by a walker, leaf first in a trace. Plain data, 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct Frame {
    pub method: u64,
    pub bci: i32,
    pub kind: u8,
    /// JFR frame type, one of [`frame_type`].
    pub frame_type: u8,
    /// A tagged raw frame's method idnum as sampled, plus one (`sample::tags`); 0 otherwise
    /// or when it could not be read. It names the method across its class's redefinitions.
    pub idnum: u16,
}

impl Frame {
    pub const fn java(method: u64, bci: i32, frame_type: u8) -> Frame {
        Frame {
            method,
            bci,
            kind: kind::JAVA_METHOD_ID,
            frame_type,
            idnum: 0,
        }
    }
    pub const fn raw(method: u64, bci: i32, frame_type: u8) -> Frame {
        Frame {
            method,
            bci,
            kind: kind::RAW_METHOD,
            frame_type,
            idnum: 0,
        }
    }
    /// A native frame at `pc`: JFR frame type Native, no bci.
    pub const fn native(pc: u64) -> Frame {
        Frame {
            method: pc,
            bci: 0,
            kind: kind::NATIVE_PC,
            frame_type: frame_type::NATIVE,
            idnum: 0,
        }
    }
    /// A kernel frame at `pc` (a perf_events sample's callchain): a native pc typed Kernel,
    /// named from `/proc/kallsyms` at dump time.
    pub const fn kernel(pc: u64) -> Frame {
        Frame {
            method: pc,
            bci: 0,
            kind: kind::NATIVE_PC,
            frame_type: frame_type::KERNEL,
            idnum: 0,
        }
    }
    /// The receiver class above a vtable/itable stub frame; `klass` 0 when it could not
    /// be read. Typed Native, as upstream writes it.
    pub const fn vtable_receiver(klass: u64, trace_id: u64) -> Frame {
        Frame {
            method: klass,
            bci: (trace_id & 0x7fff_ffff) as i32,
            kind: kind::VTABLE_RECEIVER,
            frame_type: frame_type::NATIVE,
            idnum: 0,
        }
    }
    /// The stub at `pc` (a code-cache pc outside nmethods and the interpreter).
    pub const fn stub(pc: u64) -> Frame {
        Frame {
            method: pc,
            bci: 0,
            kind: kind::STUB,
            frame_type: frame_type::NATIVE,
            idnum: 0,
        }
    }
    /// Where a walk stopped: typed Native, since the code there could not be named as
    /// Java (typing it JIT compiled claimed compiled code even under `-Xint`).
    pub const fn error(reason: i32) -> Frame {
        Frame {
            method: 0,
            bci: reason,
            kind: kind::ERROR,
            frame_type: frame_type::NATIVE,
            idnum: 0,
        }
    }
}
