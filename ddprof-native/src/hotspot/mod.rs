//! Everything that knows HotSpot's internals. Today: finding the current JavaThread and
//! its JNIEnv from a signal handler. The VMStructs reader and walker will live here.

pub mod codecache;
pub mod current_thread;
pub mod debuginfo;
pub mod linetable;
pub mod method;
pub mod vmstructs;
