//! The kernel tid of a `java.lang.Thread` (a queued task's origin, a thread matched at a
//! dump), as upstream's `VMThread::nativeThreadId`: the thread's `eetop` field holds its
//! JavaThread*, whose OSThread holds the tid (docs/hotspot.md 2.3). VM memory is read with
//! crash-protected loads: the thread may be exiting while we read it.

use std::sync::OnceLock;

use jni::objects::{JFieldID, JObject};
use jni::signature::{Primitive, ReturnType};
use jni::JNIEnv;

use crate::sample::safe_access;
use crate::sample::vm::{codecache, layout};

/// `java.lang.Thread.eetop` (a `long`), looked up once: `Thread` is never unloaded.
static EETOP: OnceLock<Option<usize>> = OnceLock::new();

/// The tid of `thread`; `None` for null, a thread not started or ended (no JavaThread),
/// a virtual thread, or a VM whose thread layout is unknown.
pub fn tid_of(env: &mut JNIEnv, thread: &JObject) -> Option<i32> {
    if thread.is_null() {
        return None;
    }
    let field = *EETOP.get_or_init(|| {
        let id = env.get_field_id("java/lang/Thread", "eetop", "J");
        if env.exception_check().unwrap_or(false) {
            let _ = env.exception_clear();
        }
        id.ok().map(|f| f.into_raw() as usize)
    });
    // SAFETY: the id was looked up on java.lang.Thread and `thread` is a Thread.
    let field = unsafe { JFieldID::from_raw(field? as jni::sys::jfieldID) };
    let eetop = env
        .get_field_unchecked(thread, field, ReturnType::Primitive(Primitive::Long))
        .and_then(|v| v.j())
        .ok()?;
    if eetop == 0 {
        return None;
    }
    let threads = layout::get()?.threads.as_ref()?;
    let osthread = safe_access::load_usize(eetop as usize + threads.osthread)?;
    if osthread == 0 {
        return None;
    }
    let tid = codecache::load_field(osthread, threads.osthread_thread_id)?;
    i32::try_from(tid).ok().filter(|t| *t > 0)
}
