//! `com.datadoghq.profiler.JVMAccess` natives: JVM flags read and written in place through
//! VMStructs (`hotspot/vmstructs_flags.rs`).
//!
//! Names and signatures are upstream's (`findStringJVMFlag0`, `setStringJVMFlag0`, ...), so
//! its `JVMAccess` class works with this library too, plus `flagInfo0`, which ours uses to
//! route manageable flags to HotSpot's own setter. As upstream: a missing flag, a flag of
//! another type or a null name gives null/false/0 and no exception; a write that cannot be
//! done is skipped. Nothing here throws, except a panic turned into `IllegalStateException`.

use jni::objects::{JObject, JString};
use jni::sys::{jboolean, jdouble, jint, jlong, jstring, JNI_FALSE, JNI_TRUE};
use jni::JNIEnv;

use super::guarded;
use crate::hotspot::vmstructs::flags::{self, FlagError, FlagTable};

/// `flagInfo0` when there is no flag table (not HotSpot, or VMStructs lack it).
const INFO_UNAVAILABLE: jint = -2;
/// `flagInfo0` for a name no flag has.
const INFO_NOT_FOUND: jint = -1;
/// `flagInfo0` bit: the flag is manageable.
const INFO_MANAGEABLE: jint = 0x100;
/// `flagInfo0` low byte for a type this library does not know.
const INFO_UNKNOWN_TYPE: jint = 0xff;

/// The flag name, or None for null or an unreadable string.
fn flag_name(env: &mut JNIEnv, name: &JString) -> Option<String> {
    if name.is_null() {
        return None;
    }
    env.get_string(name).ok().map(String::from)
}

/// Runs `f` on the flag table with the flag's name; `default` without a table or a name.
fn with_flag<T>(
    env: &mut JNIEnv,
    name: &JString,
    default: T,
    f: impl FnOnce(&mut JNIEnv, &'static FlagTable, &str) -> T,
) -> T {
    let Some(name) = flag_name(env, name) else {
        return default;
    };
    match flags::table() {
        Ok(table) => f(env, table, &name),
        Err(_) => default,
    }
}

/// Whether the library is loaded (it is, if this runs) and the flag table was found.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JVMAccess_healthCheck0(
    mut env: JNIEnv,
    _this: JObject,
) -> jboolean {
    guarded(&mut env, JNI_FALSE, |_| {
        Ok(if flags::table().is_ok() {
            JNI_TRUE
        } else {
            JNI_FALSE
        })
    })
}

/// -2: no flag table; -1: no such flag; else the type (`JVMFlag::FlagType` numbering,
/// 0xff unknown) ORed with 0x100 when the flag is manageable.
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JVMAccess_flagInfo0(
    mut env: JNIEnv,
    _this: JObject,
    name: JString,
) -> jint {
    guarded(&mut env, INFO_UNAVAILABLE, |env| {
        let Some(name) = flag_name(env, &name) else {
            return Ok(INFO_NOT_FOUND);
        };
        let table = match flags::table() {
            Ok(t) => t,
            Err(_) => return Ok(INFO_UNAVAILABLE),
        };
        Ok(match table.find(&name) {
            Ok(flag) => {
                let ty = flag.ty.map_or(INFO_UNKNOWN_TYPE, type_index);
                ty | if flag.is_manageable() {
                    INFO_MANAGEABLE
                } else {
                    0
                }
            }
            Err(FlagError::Unavailable) => INFO_UNAVAILABLE,
            Err(_) => INFO_NOT_FOUND,
        })
    })
}

fn type_index(t: flags::FlagType) -> jint {
    use flags::FlagType::*;
    match t {
        Bool => 0,
        Int => 1,
        Uint => 2,
        Intx => 3,
        Uintx => 4,
        Uint64 => 5,
        SizeT => 6,
        Double => 7,
        Ccstr => 8,
        Ccstrlist => 9,
    }
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JVMAccess_findStringJVMFlag0(
    mut env: JNIEnv,
    _this: JObject,
    name: JString,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        Ok(with_flag(
            env,
            &name,
            std::ptr::null_mut(),
            |env, table, name| match table.get_string(name) {
                Ok(Some(bytes)) => env
                    .new_string(String::from_utf8_lossy(&bytes))
                    .map_or(std::ptr::null_mut(), |s| s.into_raw()),
                _ => std::ptr::null_mut(),
            },
        ))
    })
}

/// Skipped, as upstream, for a missing or non-string flag and a null value; also for a
/// manageable flag (see `FlagTable::set_string`; `JVMAccess` sets those through
/// `HotSpotDiagnosticMXBean`).
#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JVMAccess_setStringJVMFlag0(
    mut env: JNIEnv,
    _this: JObject,
    name: JString,
    value: JString,
) {
    guarded(&mut env, (), |env| {
        let Some(value) = flag_name(env, &value) else {
            return Ok(());
        };
        with_flag(env, &name, (), |_, table, name| {
            if let Err(e) = table.set_string(name, value.as_bytes()) {
                crate::log::log(
                    crate::log::Level::Debug,
                    &format!("JVM flag {name} not set: {e:?}"),
                );
            }
        });
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JVMAccess_findBooleanJVMFlag0(
    mut env: JNIEnv,
    _this: JObject,
    name: JString,
) -> jboolean {
    guarded(&mut env, JNI_FALSE, |env| {
        Ok(with_flag(
            env,
            &name,
            JNI_FALSE,
            |_, table, name| match table.get_bool(name) {
                Ok(true) => JNI_TRUE,
                _ => JNI_FALSE,
            },
        ))
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JVMAccess_setBooleanJVMFlag0(
    mut env: JNIEnv,
    _this: JObject,
    name: JString,
    value: jboolean,
) {
    guarded(&mut env, (), |env| {
        with_flag(env, &name, (), |_, table, name| {
            if let Err(e) = table.set_bool(name, value != JNI_FALSE) {
                crate::log::log(
                    crate::log::Level::Debug,
                    &format!("JVM flag {name} not set: {e:?}"),
                );
            }
        });
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JVMAccess_findIntJVMFlag0(
    mut env: JNIEnv,
    _this: JObject,
    name: JString,
) -> jlong {
    guarded(&mut env, 0, |env| {
        Ok(with_flag(env, &name, 0, |_, table, name| {
            table.get_int(name).unwrap_or(0)
        }))
    })
}

#[no_mangle]
pub extern "system" fn Java_com_datadoghq_profiler_JVMAccess_findFloatJVMFlag0(
    mut env: JNIEnv,
    _this: JObject,
    name: JString,
) -> jdouble {
    guarded(&mut env, 0.0, |env| {
        Ok(with_flag(env, &name, 0.0, |_, table, name| {
            table.get_double(name).unwrap_or(0.0)
        }))
    })
}
