//! Naming Java frames at dump time (jmethodID, raw `Method*` and error frames) into Method pool
//! keys and line numbers: the JVMTI/VM-metadata [`Resolver`] and this dump's caches in front of
//! it, one pool entry per method. Lives as long as [`super::namer::DumpNamer`].

use crate::jfr::{self, ChunkBuilder};
use crate::sample::frame::{frame_type, kind, Frame};
use crate::sample::tags;
use crate::word_map::WordMap;

use super::info::MethodInfo;
use super::resolve::Resolver;

/// What a Java frame names: (method pool key, line, whether the method is a thread entry
/// point, whether the frame is named).
pub type JavaFrame = (u32, i32, bool, bool);

/// One dump's Java frame names.
pub struct JavaNames {
    resolver: Resolver,
    /// Method pool key by (frame kind, method word) after `Resolver::key_of`.
    keys: WordMap<(u8, u64), u32>,
    frames: JavaFrames,
    /// The pool key of `unknown` (a frame the walk could not name), made on first use.
    unknown: Option<u32>,
}

/// What [`JavaNames::name`] made of each lazily tagged Java frame of a dump whose answer holds
/// in every trace (`Resolver::key_of`'s last field), by the frame's own words (method word, bci
/// word with its tag bits, idnum, frame type: [`java_frame_key`]): a frame repeats in many
/// traces (the Kotlin compiler's first dump: 180,000 Java frames of 6,000 methods at 8,000
/// distinct frames), and one lookup here replaces the lazy checks' cache, the method cache, the
/// method pool key's and the line table's searches. jmethodID frames go without it: in the
/// default mode the map's own fresh pages cost what it saved (docs/benchmarks.md).
#[derive(Default)]
struct JavaFrames {
    by_words: WordMap<(u64, u64), JavaFrame>,
    hits: i64,
}

/// [`JavaFrames`]' key of a tagged frame.
fn java_frame_key(f: &Frame) -> (u64, u64) {
    let rest = u64::from(f.bci as u32) | u64::from(f.idnum) << 32 | u64::from(f.frame_type) << 48;
    (f.method, rest)
}

impl JavaNames {
    pub fn new(resolver: Resolver) -> JavaNames {
        JavaNames {
            resolver,
            keys: WordMap::default(),
            frames: JavaFrames::default(),
            unknown: None,
        }
    }

    /// Sizes the caches for the dump's frames (all of them, Java or not) and warms what the
    /// lazy checks read; returns how many distinct Java methods they hold.
    pub fn prepare<'f>(&mut self, frames: impl Iterator<Item = &'f Frame>) -> usize {
        let (methods, tagged) = self.resolver.prepare(frames);
        self.keys = WordMap::with_capacity_and_hasher(methods, Default::default());
        // Sized for the usual distinct frames per method (the Kotlin compiler's first dump: 1.3)
        // instead of doubling from empty (each doubling fresh pages).
        self.frames.by_words.reserve(tagged + tagged / 2);
        methods
    }

    /// How many tagged frames were answered from [`JavaFrames`] (`raw_frame_resolve_cache_hits`).
    pub fn cache_hits(&self) -> i64 {
        self.frames.hits
    }

    /// One Java or error frame, in a trace whose earliest sample was taken at `since`.
    pub fn name(&mut self, chunk: &mut ChunkBuilder, f: &Frame, since: i64) -> JavaFrame {
        let at = tags::is_tagged(f).then(|| java_frame_key(f));
        if let Some(r) = at.and_then(|a| self.frames.by_words.get(&a)) {
            self.frames.hits += 1;
            return *r;
        }
        let (key_kind, key_value, lines, any_since) = self.resolver.key_of(f, since);
        let r = self.name_new(chunk, f, since, (key_kind, key_value, lines));
        if let Some(a) = at.filter(|_| any_since) {
            self.frames.by_words.insert(a, r);
        }
        r
    }

    /// [`Self::name`] for a frame not seen before in this dump, with its `key_of`.
    fn name_new(
        &mut self,
        chunk: &mut ChunkBuilder,
        f: &Frame,
        since: i64,
        (key_kind, key_value, lines): (u8, u64, bool),
    ) -> JavaFrame {
        let mut pool_key = (key_kind, key_value);
        let info: &MethodInfo = match pool_key.0 {
            kind::JAVA_METHOD_ID => self.resolver.resolve(pool_key.1),
            kind::RAW_METHOD => {
                // A tagged frame that is still raw was refused by the lazy checks: it is named
                // `<unloaded>` or `unknown`, one pool entry per name, not one per `Method*`.
                if tags::is_tagged(f) {
                    pool_key = (kind::ERROR, 0);
                }
                let info = self.resolver.resolve_raw(f, since);
                if tags::is_tagged(f) && info.name != "unknown" {
                    pool_key = (kind::ERROR, 1);
                }
                info
            }
            _ => {
                let key = *self.unknown.get_or_insert_with(|| {
                    chunk.intern_method("", "unknown", "()L;", 0x100, false)
                });
                return (key, 0, false, false);
            }
        };
        let named = !info.class_name.is_empty();
        let line = if f.frame_type == frame_type::NATIVE || !lines {
            0
        } else {
            info.line_of(tags::bci(f).max(0)) // AGCT reports bci -1 at method entry: use bci 0
        };
        let entry = info.is_entry_point;
        let key = match self.keys.get(&pool_key) {
            Some(k) => *k,
            None => {
                let (class, name, desc) =
                    jfr::names::normalize(&info.class_name, &info.name, &info.descriptor);
                let hidden = class.contains("/0x") || class.contains("LambdaForm$");
                let k = chunk.intern_method(&class, &name, &desc, info.modifiers, hidden);
                self.keys.insert(pool_key, k);
                k
            }
        };
        (key, line, entry, named)
    }
}
