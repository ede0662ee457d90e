//! The OpenTelemetry process context (OTEP #4719): who this process is (service, environment,
//! instance id, SDK, host, the thread-context attribute keys), published for out-of-process
//! readers (the OpenTelemetry eBPF profiler and the like) in a mapping they find by name in
//! `/proc/<pid>/maps` and read through `/proc/<pid>/mem`. Layout and update protocol are
//! upstream's (java-profiler's `otel_process_ctx.cpp`, version 2 of the header), see
//! docs/context.md "The process context". Never used from a signal handler.
//!
//! The mapping (one page, read-write, never executable) holds only the 32-byte [`Header`];
//! the header points at the payload, a protobuf `ProcessContext` message kept in our heap:
//!
//! ```text
//! ProcessContext { 1: opentelemetry.proto.resource.v1.Resource { 1: repeated KeyValue attributes },
//!                  2: repeated opentelemetry.proto.common.v1.KeyValue extra_attributes }
//! ```
//!
//! An update writes `published_at_ns = 0`, the new size and pointer, then a new non-zero
//! `published_at_ns`: a reader that sees the same non-zero value before and after copying the
//! payload has a consistent copy (a seqlock whose sequence is the publication time).

use std::ptr;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::log;

/// First 8 bytes of the mapping; also the mapping's name (memfd and `[anon:...]`).
pub const SIGNATURE: [u8; 8] = *b"OTEL_CTX";
/// The header layout's version (upstream's current one).
pub const VERSION: u32 = 2;
/// Longest key or value, in UTF-8 bytes (upstream's `KEY_VALUE_LIMIT`).
pub const KEY_VALUE_LIMIT: usize = 4096;
/// Longest encoded resource message and attribute-key-map entry (upstream's `UINT14_MAX`): so
/// every length fits a 2-byte varint, which upstream's own reader requires.
pub const MESSAGE_LIMIT: usize = 16383;
/// Custom attribute keys published after the reserved one (the thread record's 10 slots).
pub const MAX_ATTRIBUTE_KEYS: usize = 10;
/// Slot 0 of the thread record's attributes: the local root span id (docs/context.md).
pub const LOCAL_ROOT_SPAN_ID_KEY: &str = "datadog.local_root_span_id";
/// `threadlocal.schema_version` as upstream publishes it.
pub const THREAD_CTX_SCHEMA_VERSION: &str = "tlsdesc_v1_dev";

const ENV_KEY: &str = "deployment.environment.name";
const INSTANCE_KEY: &str = "service.instance.id";
const SERVICE_KEY: &str = "service.name";
const VERSION_KEY: &str = "service.version";
const SDK_LANGUAGE_KEY: &str = "telemetry.sdk.language";
const SDK_VERSION_KEY: &str = "telemetry.sdk.version";
const SDK_NAME_KEY: &str = "telemetry.sdk.name";
const HOST_KEY: &str = "host.name";
const SCHEMA_KEY: &str = "threadlocal.schema_version";
const KEY_MAP_KEY: &str = "threadlocal.attribute_key_map";

/// What is published. `attribute_key_map` is written only with a `schema_version`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessContext {
    pub deployment_environment_name: String,
    pub host_name: String,
    pub service_instance_id: String,
    pub service_name: String,
    pub service_version: String,
    pub telemetry_sdk_language: String,
    pub telemetry_sdk_version: String,
    pub telemetry_sdk_name: String,
    /// Further resource attributes (after the eight above; `host.name` is one of these on the wire).
    pub resource_attributes: Vec<(String, String)>,
    pub schema_version: Option<String>,
    pub attribute_key_map: Option<Vec<String>>,
}

impl ProcessContext {
    /// What `OTelContext.initializeAllContext` publishes: the tracer's values, the SDK as
    /// dd-trace-java, and the attribute keys after the reserved local-root-span-id key
    /// (at most [`MAX_ATTRIBUTE_KEYS`] of them; the rest are dropped, as upstream).
    pub fn for_tracer(
        env: String,
        host_name: String,
        runtime_id: String,
        service: String,
        version: String,
        tracer_version: String,
        attribute_keys: Vec<String>,
    ) -> ProcessContext {
        let mut keys = Vec::with_capacity(attribute_keys.len().min(MAX_ATTRIBUTE_KEYS) + 1);
        keys.push(LOCAL_ROOT_SPAN_ID_KEY.to_string());
        keys.extend(attribute_keys.into_iter().take(MAX_ATTRIBUTE_KEYS));
        ProcessContext {
            deployment_environment_name: env,
            host_name,
            service_instance_id: runtime_id,
            service_name: service,
            service_version: version,
            telemetry_sdk_language: "java".to_string(),
            telemetry_sdk_version: tracer_version,
            telemetry_sdk_name: "dd-trace-java".to_string(),
            resource_attributes: Vec::new(),
            schema_version: Some(THREAD_CTX_SCHEMA_VERSION.to_string()),
            attribute_key_map: Some(keys),
        }
    }
}

// ---- protobuf encoding (wire type 2, LEN, only) ----

fn varint_len(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Tag + length + body of a LEN field whose body is `len` bytes.
fn record_len(len: usize) -> usize {
    1 + varint_len(len) + len
}

fn put_varint(out: &mut Vec<u8>, mut v: usize) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_tag(out: &mut Vec<u8>, field: u8) {
    out.push((field << 3) | 2);
}

fn put_bytes(out: &mut Vec<u8>, field: u8, bytes: &[u8]) {
    put_tag(out, field);
    put_varint(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// Body of `KeyValue { 1: key, 2: AnyValue { 1: string_value } }`.
fn key_value_string_len(key: &str, value: &str) -> usize {
    record_len(key.len()) + record_len(record_len(value.len()))
}

/// `KeyValue` with a string value, as field `field` of the enclosing message.
fn put_key_value(out: &mut Vec<u8>, field: u8, key: &str, value: &str) {
    put_tag(out, field);
    put_varint(out, key_value_string_len(key, value));
    put_bytes(out, 1, key.as_bytes());
    put_tag(out, 2);
    put_varint(out, record_len(value.len()));
    put_bytes(out, 1, value.as_bytes());
}

/// `ArrayValue` body: `1: repeated AnyValue { 1: string_value }`.
fn array_len(items: &[String]) -> usize {
    items.iter().map(|s| record_len(record_len(s.len()))).sum()
}

/// `KeyValue { 1: key, 2: AnyValue { 5: ArrayValue { 1: AnyValue{1: s}... } } }` body length.
fn key_value_array_len(key: &str, items: &[String]) -> usize {
    record_len(key.len()) + record_len(record_len(array_len(items)))
}

fn put_key_value_array(out: &mut Vec<u8>, field: u8, key: &str, items: &[String]) {
    let array = array_len(items);
    put_tag(out, field);
    put_varint(out, key_value_array_len(key, items));
    put_bytes(out, 1, key.as_bytes());
    put_tag(out, 2);
    put_varint(out, record_len(array));
    put_tag(out, 5);
    put_varint(out, array);
    for item in items {
        put_tag(out, 1);
        put_varint(out, record_len(item.len()));
        put_bytes(out, 1, item.as_bytes());
    }
}

fn check_len(s: &str, what: &'static str) -> Result<(), &'static str> {
    if s.len() > KEY_VALUE_LIMIT {
        Err(what)
    } else {
        Ok(())
    }
}

/// The resource attributes in wire order: the seven named fields, then `host.name`, then the rest.
fn resource_pairs(ctx: &ProcessContext) -> Vec<(&str, &str)> {
    let mut pairs = vec![
        (ENV_KEY, ctx.deployment_environment_name.as_str()),
        (INSTANCE_KEY, ctx.service_instance_id.as_str()),
        (SERVICE_KEY, ctx.service_name.as_str()),
        (VERSION_KEY, ctx.service_version.as_str()),
        (SDK_LANGUAGE_KEY, ctx.telemetry_sdk_language.as_str()),
        (SDK_VERSION_KEY, ctx.telemetry_sdk_version.as_str()),
        (SDK_NAME_KEY, ctx.telemetry_sdk_name.as_str()),
        (HOST_KEY, ctx.host_name.as_str()),
    ];
    pairs.extend(
        ctx.resource_attributes
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    pairs
}

/// The payload bytes, or why the context cannot be published (upstream's limits: every key and
/// value at most 4096 bytes, the resource message and the key map at most 16383 bytes).
pub fn encode(ctx: &ProcessContext) -> Result<Vec<u8>, &'static str> {
    let pairs = resource_pairs(ctx);
    for (k, v) in &pairs {
        check_len(k, "a resource attribute key is longer than 4096 bytes")?;
        check_len(v, "a process context value is longer than 4096 bytes")?;
    }
    let resource: usize = pairs
        .iter()
        .map(|(k, v)| record_len(key_value_string_len(k, v)))
        .sum();
    if resource > MESSAGE_LIMIT {
        return Err("the encoded resource attributes exceed 16383 bytes");
    }
    if ctx.attribute_key_map.is_some() && ctx.schema_version.is_none() {
        return Err("attribute_key_map requires schema_version to be set");
    }
    let mut extra = 0;
    if let Some(schema) = &ctx.schema_version {
        check_len(
            schema,
            "the thread-context schema version is longer than 4096 bytes",
        )?;
        extra += record_len(key_value_string_len(SCHEMA_KEY, schema));
    }
    if let Some(keys) = &ctx.attribute_key_map {
        for k in keys {
            check_len(k, "an attribute key is longer than 4096 bytes")?;
        }
        let kv = key_value_array_len(KEY_MAP_KEY, keys);
        if kv > MESSAGE_LIMIT {
            return Err("the encoded attribute_key_map exceeds 16383 bytes");
        }
        extra += record_len(kv);
    }
    let mut out = Vec::with_capacity(record_len(resource) + extra);
    put_tag(&mut out, 1);
    put_varint(&mut out, resource);
    for (k, v) in &pairs {
        put_key_value(&mut out, 1, k, v);
    }
    if let Some(schema) = &ctx.schema_version {
        put_key_value(&mut out, 2, SCHEMA_KEY, schema);
    }
    if let Some(keys) = &ctx.attribute_key_map {
        put_key_value_array(&mut out, 2, KEY_MAP_KEY, keys);
    }
    debug_assert_eq!(out.len(), out.capacity());
    Ok(out)
}

// ---- protobuf decoding (general varints; unknown fields skipped) ----

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.buf.split_first()?;
            self.buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    /// The next field: (number, LEN body); other wire types are skipped and given as `None` body.
    fn field(&mut self) -> Option<(u64, Option<&'a [u8]>)> {
        let tag = self.varint()?;
        let body = match tag & 7 {
            0 => {
                self.varint()?;
                None
            }
            1 => {
                self.buf = self.buf.get(8..)?;
                None
            }
            2 => {
                let len = usize::try_from(self.varint()?).ok()?;
                let body = self.buf.get(..len)?;
                self.buf = &self.buf[len..];
                Some(body)
            }
            5 => {
                self.buf = self.buf.get(4..)?;
                None
            }
            _ => return None,
        };
        Some((tag >> 3, body))
    }

    fn done(&self) -> bool {
        self.buf.is_empty()
    }
}

enum Value {
    Str(String),
    Array(Vec<String>),
    Other,
}

fn utf8(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

/// `AnyValue`: a string, an array of strings, or something else.
fn any_value(body: &[u8]) -> Option<Value> {
    let mut r = Reader { buf: body };
    let mut value = Value::Other;
    while !r.done() {
        match r.field()? {
            (1, Some(s)) => value = Value::Str(utf8(s)?),
            (5, Some(array)) => {
                let mut items = Vec::new();
                let mut a = Reader { buf: array };
                while !a.done() {
                    if let (1, Some(item)) = a.field()? {
                        match any_value(item)? {
                            Value::Str(s) => items.push(s),
                            _ => return None,
                        }
                    }
                }
                value = Value::Array(items);
            }
            _ => {}
        }
    }
    Some(value)
}

fn key_value(body: &[u8]) -> Option<(String, Value)> {
    let mut r = Reader { buf: body };
    let mut key = None;
    let mut value = Value::Other;
    while !r.done() {
        match r.field()? {
            (1, Some(k)) => key = Some(utf8(k)?),
            (2, Some(v)) => value = any_value(v)?,
            _ => {}
        }
    }
    Some((key?, value))
}

/// Reads a payload back. Every one of the seven named resource attributes must be there, once
/// (as upstream's reader requires); `host.name` is taken out of the further attributes.
pub fn decode(payload: &[u8]) -> Option<ProcessContext> {
    let mut ctx = ProcessContext::default();
    let mut seen = [false; 7];
    let mut r = Reader { buf: payload };
    while !r.done() {
        match r.field()? {
            (1, Some(resource)) => {
                let mut res = Reader { buf: resource };
                while !res.done() {
                    let (1, Some(kv)) = res.field()? else {
                        continue;
                    };
                    let (k, v) = key_value(kv)?;
                    let Value::Str(v) = v else { continue };
                    let named = match k.as_str() {
                        ENV_KEY => Some((0, &mut ctx.deployment_environment_name)),
                        INSTANCE_KEY => Some((1, &mut ctx.service_instance_id)),
                        SERVICE_KEY => Some((2, &mut ctx.service_name)),
                        VERSION_KEY => Some((3, &mut ctx.service_version)),
                        SDK_LANGUAGE_KEY => Some((4, &mut ctx.telemetry_sdk_language)),
                        SDK_VERSION_KEY => Some((5, &mut ctx.telemetry_sdk_version)),
                        SDK_NAME_KEY => Some((6, &mut ctx.telemetry_sdk_name)),
                        _ => None,
                    };
                    match named {
                        Some((i, field)) => {
                            if std::mem::replace(&mut seen[i], true) {
                                return None;
                            }
                            *field = v;
                        }
                        None if k == HOST_KEY && ctx.host_name.is_empty() => ctx.host_name = v,
                        None => ctx.resource_attributes.push((k, v)),
                    }
                }
            }
            (2, Some(kv)) => match key_value(kv)? {
                (k, Value::Str(v)) if k == SCHEMA_KEY => ctx.schema_version = Some(v),
                // A second key map is malformed: the whole payload is refused.
                (k, Value::Array(items)) if k == KEY_MAP_KEY => ctx
                    .attribute_key_map
                    .replace(items)
                    .is_none()
                    .then_some(())?,
                _ => {}
            },
            _ => {}
        }
    }
    seen.iter().all(|&s| s).then_some(ctx)
}

// ---- the mapping ----

/// The first 32 bytes of the mapping, as external readers parse them (native byte order).
#[repr(C)]
pub struct Header {
    pub signature: [u8; 8],
    pub version: AtomicU32,
    pub payload_size: AtomicU32,
    /// CLOCK_BOOTTIME ns of the publication; 0 while an update is being written.
    pub published_at_ns: AtomicU64,
    /// Address of the payload in this process.
    pub payload: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Header>() == 32);

struct Published {
    pid: libc::pid_t,
    header: *mut Header,
    len: usize,
    payload: Box<[u8]>,
    /// The payload before the last update, freed at the next one: a reader that raced the
    /// update is told so by the timestamp, and reads freed memory one update later at worst.
    previous: Option<Box<[u8]>>,
}

// SAFETY: the mapping is ours and only touched under STATE's lock.
unsafe impl Send for Published {}

static STATE: Mutex<Option<Published>> = Mutex::new(None);

fn boottime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

const MFD_CLOEXEC: libc::c_uint = 1;
const MFD_ALLOW_SEALING: libc::c_uint = 2;
const MFD_NOEXEC_SEAL: libc::c_uint = 8;
const PR_SET_VMA: libc::c_int = 0x53564d41;
const PR_SET_VMA_ANON_NAME: libc::c_ulong = 0;

fn memfd(flags: libc::c_uint) -> libc::c_int {
    // SAFETY: a NUL-terminated name and plain flags; the kernel checks both.
    unsafe { libc::syscall(libc::SYS_memfd_create, c"OTEL_CTX".as_ptr(), flags) as libc::c_int }
}

/// A new read-write, non-executable page: a private mapping of a memfd named `OTEL_CTX` (so
/// `/proc/<pid>/maps` names it on any kernel), else an anonymous one. Not inherited by forks.
fn map_page(len: usize) -> Result<*mut Header, &'static str> {
    let mut fd = memfd(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
    if fd < 0 {
        // Kernels before 6.3 refuse MFD_NOEXEC_SEAL.
        fd = memfd(MFD_CLOEXEC | MFD_ALLOW_SEALING);
    }
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let addr = if fd >= 0 {
        // SAFETY: fd is ours; ftruncate, mmap and close take plain arguments.
        unsafe {
            if libc::ftruncate(fd, len as libc::off_t) != 0 {
                libc::close(fd);
                return Err("failed to size the memfd");
            }
            let a = libc::mmap(ptr::null_mut(), len, prot, libc::MAP_PRIVATE, fd, 0);
            libc::close(fd);
            a
        }
    } else {
        // SAFETY: a fresh anonymous mapping.
        unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                prot,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        }
    };
    if addr == libc::MAP_FAILED {
        return Err("failed to map the process context");
    }
    // SAFETY: addr..addr+len is the mapping just made.
    if unsafe { libc::madvise(addr, len, libc::MADV_DONTFORK) } != 0 {
        // SAFETY: as above; nobody has seen it yet.
        unsafe { libc::munmap(addr, len) };
        return Err("failed to set MADV_DONTFORK on the process context");
    }
    Ok(addr.cast())
}

/// Names the mapping `[anon:OTEL_CTX]` where the kernel can (5.17+, anonymous mappings). Done
/// at every publication, failing or not, as upstream: readers hooking prctl see each update.
fn name_mapping(header: *mut Header, len: usize) {
    // SAFETY: a range of our own mapping and a NUL-terminated name; failure is harmless.
    unsafe {
        libc::prctl(
            PR_SET_VMA,
            PR_SET_VMA_ANON_NAME,
            header as libc::c_ulong,
            len as libc::c_ulong,
            c"OTEL_CTX".as_ptr() as libc::c_ulong,
        );
    }
}

/// Publishes `ctx`, replacing what this process published before. On an error (a value over
/// the limits, no mapping) the previous context stays as it was.
pub fn publish(ctx: &ProcessContext) -> Result<(), &'static str> {
    let payload = encode(ctx)?.into_boxed_slice();
    let size = u32::try_from(payload.len()).map_err(|_| "payload too large")?;
    let mut now = boottime_ns();
    if now == 0 {
        return Err("failed to read CLOCK_BOOTTIME");
    }
    let mut state = STATE.lock();
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    if state.as_ref().is_some_and(|p| p.pid != pid) {
        // Inherited from the process we were forked from: the mapping was not (MADV_DONTFORK).
        *state = None;
    }
    match state.as_mut() {
        Some(p) => {
            // SAFETY: p.header is our live mapping; all writes are atomic stores.
            let h = unsafe { &*p.header };
            if now <= h.published_at_ns.load(Ordering::Relaxed) {
                now = h.published_at_ns.load(Ordering::Relaxed) + 1;
            }
            h.published_at_ns.store(0, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            h.payload_size.store(size, Ordering::Relaxed);
            h.payload.store(payload.as_ptr() as u64, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            h.published_at_ns.store(now, Ordering::Relaxed);
            name_mapping(p.header, p.len);
            let old = std::mem::replace(&mut p.payload, payload);
            p.previous = Some(old);
        }
        None => {
            let len = crate::footprint::page_size();
            let header = map_page(len)?;
            // SAFETY: a fresh zeroed page of ours, large enough for the header; nobody reads
            // it before published_at_ns is non-zero.
            unsafe {
                ptr::addr_of_mut!((*header).signature).write(SIGNATURE);
                let h = &*header;
                h.version.store(VERSION, Ordering::Relaxed);
                h.payload_size.store(size, Ordering::Relaxed);
                h.payload.store(payload.as_ptr() as u64, Ordering::Relaxed);
                fence(Ordering::SeqCst);
                h.published_at_ns.store(now, Ordering::Relaxed);
            }
            name_mapping(header, len);
            *state = Some(Published {
                pid,
                header,
                len,
                payload,
                previous: None,
            });
        }
    }
    Ok(())
}

/// Reads the published context back through the mapping, as an outside reader would (header
/// fields, the payload it points to, the timestamp checked before and after); `None` when
/// nothing is published or the bytes do not decode.
pub fn read() -> Option<ProcessContext> {
    let state = STATE.lock();
    let p = state.as_ref()?;
    // SAFETY: getpid has no preconditions.
    if p.pid != unsafe { libc::getpid() } {
        return None;
    }
    // SAFETY: our live mapping.
    let h = unsafe { &*p.header };
    let before = h.published_at_ns.load(Ordering::Acquire);
    if before == 0 || h.signature != SIGNATURE || h.version.load(Ordering::Relaxed) != VERSION {
        return None;
    }
    let size = h.payload_size.load(Ordering::Relaxed) as usize;
    let addr = h.payload.load(Ordering::Relaxed);
    // Only ever follow the pointer into the buffer we own (the lock keeps it alive).
    if addr != p.payload.as_ptr() as u64 || size != p.payload.len() {
        return None;
    }
    let bytes = p.payload.to_vec();
    fence(Ordering::SeqCst);
    if h.published_at_ns.load(Ordering::Relaxed) != before {
        return None;
    }
    decode(&bytes)
}

/// The mapping's address, if this process published a context (for tests and diagnostics).
pub fn mapping_address() -> Option<usize> {
    STATE.lock().as_ref().map(|p| p.header as usize)
}

/// Unmaps the mapping and frees the payloads; nothing is published afterwards.
pub fn drop_current() {
    let Some(p) = STATE.lock().take() else {
        return;
    };
    // SAFETY: getpid has no preconditions.
    if p.pid == unsafe { libc::getpid() } {
        // SAFETY: our mapping, no longer reachable through STATE.
        unsafe {
            (*p.header).published_at_ns.store(0, Ordering::SeqCst);
            libc::munmap(p.header.cast(), p.len);
        }
    }
}

/// `publish`, logging instead of failing: what the Java API wants.
pub fn publish_or_warn(ctx: &ProcessContext) {
    if let Err(e) = publish(ctx) {
        log::warn(&format!("Failed to publish process context: {e}"));
    }
}

#[cfg(test)]
#[path = "process_tests.rs"]
mod tests;
